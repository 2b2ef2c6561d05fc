#define _GNU_SOURCE
#include "stop.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>

static const int stop_signals[] = {SIGTERM, SIGINT, SIGHUP};
#define N_STOP ((int)(sizeof stop_signals / sizeof stop_signals[0]))

void fb_stop_block(void)
{
	sigset_t set;
	sigemptyset(&set);
	for (int i = 0; i < N_STOP; i++) {
		struct sigaction old;
		if (stop_signals[i] != SIGTERM && sigaction(stop_signals[i], NULL, &old) == 0 &&
		    old.sa_handler == SIG_IGN)
			continue; /* blocked, Linux would keep it pending: leave it ignored */
		sigaddset(&set, stop_signals[i]);
	}
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

void fb_stop_set(sigset_t *set)
{
	sigset_t blocked;
	pthread_sigmask(SIG_BLOCK, NULL, &blocked);
	sigemptyset(set);
	for (int i = 0; i < N_STOP; i++)
		if (sigismember(&blocked, stop_signals[i]) == 1)
			sigaddset(set, stop_signals[i]);
}

int fb_stop_wait(uint64_t ns)
{
	sigset_t set;
	fb_stop_set(&set);
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
	int sig = sigtimedwait(&set, NULL, &ts);
	return sig > 0 ? sig : 0;
}

int fb_stop_take(void)
{
	return fb_stop_wait(0);
}

int fb_stop_pending(void)
{
	sigset_t set, pending;
	fb_stop_set(&set);
	if (sigpending(&pending))
		return 0;
	for (int i = 0; i < N_STOP; i++)
		if (sigismember(&set, stop_signals[i]) == 1 &&
		    sigismember(&pending, stop_signals[i]) == 1)
			return stop_signals[i];
	return 0;
}

int fb_stop_poll(int fd, short events, int timeout_ms)
{
	/* short slices: a blocked signal does not interrupt poll, so it is
	 * looked for between them (20 ms is well below a person's patience) */
	enum { SLICE_MS = 20 };
	for (int waited = 0;;) {
		if (fb_stop_pending()) {
			errno = EINTR;
			return -1;
		}
		if (timeout_ms >= 0 && waited >= timeout_ms)
			return 0;
		int slice = timeout_ms >= 0 && timeout_ms - waited < SLICE_MS ? timeout_ms - waited
		                                                              : SLICE_MS;
		struct pollfd p = {.fd = fd, .events = events};
		int r = poll(&p, 1, slice);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
		waited += slice;
	}
}
