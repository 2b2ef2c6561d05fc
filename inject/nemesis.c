#define _GNU_SOURCE
#include "nemesis.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

extern char **environ;

#define NAMELEN 64

struct fb_nemesis {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t tid;
	char *cmd;
	uint64_t deadline_ns;
	fb_nemesis_fail_fn fail;
	fb_nemesis_healed_fn healed_fn;
	void *ctx;
	bool stop, busy, failed, go;
	char name[NAMELEN]; /* the fault asked for, while busy */
	uint64_t heal_at;
	uint64_t started, healed;
};

static uint64_t now_ns(void)
{
	return fb_clock_now(fb_clock_monotonic());
}

/* The last line of what the command said on stderr, trimmed. */
static void last_line(char *buf, size_t n, char *out, size_t len)
{
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		n--;
	buf[n] = 0;
	char *l = strrchr(buf, '\n');
	const char *from = l ? l + 1 : buf;
	size_t m = strlen(from);
	if (m >= len)
		m = len - 1;
	memcpy(out, from, m);
	out[m] = 0;
}

int fb_nemesis_run(const char *cmd, const char *verb, const char *name, uint64_t deadline_ns,
                   char *why, size_t len)
{
	size_t sl = strlen(cmd) + 8;
	char *script = malloc(sl);
	int pfd[2] = {-1, -1};
	if (!script || pipe2(pfd, O_CLOEXEC) != 0) {
		snprintf(why, len, "--nemesis: cannot run '%s %s %s': %s", cmd, verb, name,
		         script ? strerror(errno) : "out of memory");
		free(script);
		return -1;
	}
	snprintf(script, sl, "%s \"$@\"", cmd);
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&at, 0); /* its own group: a deadline kills all of it */
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
	char *argv[] = {"sh", "-c", script, "sh", (char *)verb, (char *)name, NULL};
	pid_t pid;
	int e = posix_spawn(&pid, "/bin/sh", &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	free(script);
	close(pfd[1]);
	if (e) {
		close(pfd[0]);
		snprintf(why, len,
		         "--nemesis: cannot run '%s %s %s': posix_spawn failed, errno=%d (%s)", cmd,
		         verb, name, e, strerror(e));
		return -1;
	}
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	char out[2048];
	size_t n = 0;
	uint64_t until = now_ns() + deadline_ns;
	int status = 0;
	bool late = false;
	for (;;) {
		ssize_t r = read(pfd[0], out + n, sizeof out - 1 - n);
		if (r > 0) {
			n += (size_t)r;
			if (n > sizeof out / 2) { /* keep the tail: the last line is the reason */
				memmove(out, out + n - sizeof out / 4, sizeof out / 4);
				n = sizeof out / 4;
			}
		}
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (now_ns() >= until) {
			kill(-pid, SIGKILL);
			waitpid(pid, &status, 0);
			late = true;
			break;
		}
		fb_sleep_ns(2000000); /* a command is a process start at least: ms apart */
	}
	ssize_t r;
	while (n < sizeof out - 1 && (r = read(pfd[0], out + n, sizeof out - 1 - n)) > 0)
		n += (size_t)r;
	close(pfd[0]);
	char said[300];
	last_line(out, n, said, sizeof said);
	char dl[32];
	snprintf(dl, sizeof dl, "%.0f ms", (double)deadline_ns / 1e6);
	if (late)
		snprintf(why, len,
		         "--nemesis: '%s %s %s' did not finish within its deadline of %s (its "
		         "processes were killed)%s%s",
		         cmd, verb, name, dl, said[0] ? ": " : "", said);
	else if (WIFSIGNALED(status))
		snprintf(why, len, "--nemesis: '%s %s %s' was killed by signal %d%s%s", cmd, verb,
		         name, WTERMSIG(status), said[0] ? ": " : "", said);
	else if (WEXITSTATUS(status))
		snprintf(why, len, "--nemesis: '%s %s %s' exited %d%s%s", cmd, verb, name,
		         WEXITSTATUS(status), said[0] ? ": " : "", said);
	else
		return 0;
	return -1;
}

/* Run verb on the thread, the lock released meanwhile; a failure is told
 * once and stops every later fault. */
static bool call(fb_nemesis *n, const char *verb, const char *name)
{
	char why[1024];
	pthread_mutex_unlock(&n->mu);
	int r = fb_nemesis_run(n->cmd, verb, name, n->deadline_ns, why, sizeof why);
	pthread_mutex_lock(&n->mu);
	if (r == 0)
		return true;
	if (!n->failed && n->fail)
		n->fail(n->ctx, why);
	n->failed = true;
	return false;
}

static void *nemesis_main(void *arg)
{
	fb_nemesis *n = arg;
	pthread_mutex_lock(&n->mu);
	for (;;) {
		while (!n->busy && !n->stop)
			pthread_cond_wait(&n->cv, &n->mu);
		if (!n->busy)
			break;
		char name[NAMELEN];
		memcpy(name, n->name, sizeof name);
		bool ok = call(n, "start", name);
		n->started += ok;
		/* its length, unless the run ends first; a failed start is healed
		 * at once (whatever half of it happened) */
		while (ok && !n->stop) {
			uint64_t now = now_ns();
			if (now >= n->heal_at)
				break;
			uint64_t w = n->heal_at - now;
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += (time_t)(w / 1000000000u);
			ts.tv_nsec += (long)(w % 1000000000u);
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&n->cv, &n->mu, &ts);
		}
		n->healed += call(n, "heal", name) && ok;
		if (n->healed_fn) { /* unlocked: it takes its own locks, and a
			             * strike holds those while it takes ours */
			pthread_mutex_unlock(&n->mu);
			n->healed_fn(n->ctx);
			pthread_mutex_lock(&n->mu);
		}
		n->busy = false;
	}
	pthread_mutex_unlock(&n->mu);
	return NULL;
}

fb_err fb_nemesis_start(const char *cmd, uint64_t deadline_ns, fb_nemesis_fail_fn fail, void *ctx,
                        fb_nemesis **out)
{
	fb_nemesis *n = calloc(1, sizeof *n);
	if (!n || !(n->cmd = strdup(cmd))) {
		free(n);
		return FB_ENOMEM;
	}
	n->deadline_ns = deadline_ns;
	n->fail = fail;
	n->ctx = ctx;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&n->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&n->mu, NULL);
	int e = pthread_create(&n->tid, NULL, nemesis_main, n);
	if (e) {
		pthread_cond_destroy(&n->cv);
		pthread_mutex_destroy(&n->mu);
		free(n->cmd);
		free(n);
		errno = e;
		return FB_ESYS;
	}
	*out = n;
	return FB_OK;
}

void fb_nemesis_on_heal(fb_nemesis *n, fb_nemesis_healed_fn healed)
{
	pthread_mutex_lock(&n->mu);
	n->healed_fn = healed;
	pthread_mutex_unlock(&n->mu);
}

void fb_nemesis_go(fb_nemesis *n)
{
	pthread_mutex_lock(&n->mu); /* what was written before is seen by its calls */
	n->go = true;
	pthread_mutex_unlock(&n->mu);
}

bool fb_nemesis_strike(fb_nemesis *n, const char *name, uint64_t ns)
{
	pthread_mutex_lock(&n->mu);
	bool go = n->go && !n->busy && !n->failed && !n->stop;
	if (go) {
		snprintf(n->name, sizeof n->name, "%s", name);
		n->heal_at = now_ns() + ns;
		n->busy = true;
		pthread_cond_signal(&n->cv);
	}
	pthread_mutex_unlock(&n->mu);
	return go;
}

void fb_nemesis_stop(fb_nemesis *n, uint64_t *started, uint64_t *healed)
{
	pthread_mutex_lock(&n->mu);
	n->stop = true;
	pthread_cond_signal(&n->cv);
	pthread_mutex_unlock(&n->mu);
	pthread_join(n->tid, NULL);
	*started = n->started;
	*healed = n->healed;
	pthread_cond_destroy(&n->cv);
	pthread_mutex_destroy(&n->mu);
	free(n->cmd);
	free(n);
}
