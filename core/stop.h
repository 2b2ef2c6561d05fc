/*
 * The signals that stop a run, and waits that they end.
 *
 * SIGTERM, SIGINT and SIGHUP (a terminal or an ssh session that goes away)
 * stop a run the same way: it winds down and writes what it measured,
 * marked interrupted. main blocks them in its thread before any other
 * thread exists (every thread inherits the mask), and the drivers take them
 * with sigtimedwait: no handler runs in the middle of a cycle.
 *
 * A signal the process was started with ignored stays ignored: a shell's
 * `cmd &` ignores SIGINT so that Ctrl-C at the terminal leaves background
 * jobs alone, and nohup ignores SIGHUP so that a dropped session does not
 * end the job. Both were asked for. SIGTERM is always honoured: it is how
 * a script, a supervisor or `timeout` asks a process to stop.
 *
 * The stop set is "those three, as blocked in the calling thread": a thread
 * that unblocked them (main after the run, with a handler that exits at
 * once) waits on none, and a signal ends its waits by its handler.
 */
#ifndef FB_STOP_H
#define FB_STOP_H

#include <signal.h>
#include <stdint.h>

/* Block the stop signals in the calling thread, less SIGINT and SIGHUP if
 * they are ignored now (inherited so). Call before creating threads. */
void fb_stop_block(void);

/* The stop signals blocked in the calling thread, into *set. */
void fb_stop_set(sigset_t *set);

/* A stop signal pending, taken: its number, or 0. Never waits. */
int fb_stop_take(void);

/* Wait up to ns for a stop signal: taken, its number; 0 when the time ran
 * out first. */
int fb_stop_wait(uint64_t ns);

/* A stop signal pending, left pending for the caller's caller to take: its
 * number, or 0. */
int fb_stop_pending(void);

/*
 * Wait until fd is ready for events (poll's POLLIN, POLLOUT), for at most
 * timeout_ms (< 0: no limit), ending early on a pending stop signal (left
 * pending). 1 ready, 0 timed out, -1 with errno EINTR on a stop signal (or
 * poll's errno).
 */
int fb_stop_poll(int fd, short events, int timeout_ms);

#endif
