/*
 * What the two adapter engines (exec.c: --store exec:, exec_lease.c:
 * --lease exec:) share: one adapter process per connection, started with
 * /bin/sh -c COMMAND, one JSON line each way (exec_proto.h), a deadline on
 * every call, and the failures that name the adapter and the call. For
 * those two files only.
 */
#ifndef FB_EXEC_IMPL_H
#define FB_EXEC_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend.h"
#include "exec_proto.h"

typedef struct xengine xengine;

/*
 * One adapter process: a socket pair as its standard input and output
 * (send with MSG_NOSIGNAL: a dead adapter is an error, never a SIGPIPE),
 * the line buffer, and the last failure. dead: the process is gone or out
 * of step, and every later call fails at once with err. hung: it did not
 * answer in time, so it is killed without grace.
 */
typedef struct xconn {
	xengine *e;
	pid_t pid;
	int fd, pidfd;
	uint16_t worker;
	int status; /* how it exited: its status, 128 + a signal, -1 not yet */
	bool dead, hung;
	bool broke;        /* it failed by breaking the protocol (fb_exec_last) */
	uint64_t started;  /* when it was spawned, for a late hello's message */
	char req[256];     /* the last request line, its newline left out */
	size_t have, used; /* bytes in `in`; of them, the last reply line's */
	const char *line;  /* the last reply line (in `in`), for messages */
	size_t len;
	void *inner;      /* the store side: the in-process controls' context */
	uint64_t *fences; /* the lease side: per key, the highest fence it was given */
	fb_reply reply;
	char err[2400];
	char in[FB_EXEC_LINE_MAX + 1];      /* a longest line and its newline */
	char scratch[FB_EXEC_LINE_MAX + 2]; /* the parser's decoded strings */
} xconn;

struct xengine {
	fb_engine_config cfg;
	bool lease; /* a lease adapter (exec_lease.c), else a store adapter */
	uint64_t timeout_ns;
	char *cmd;
	char shown[96];      /* "exec:CMD", shortened: how messages name the adapter */
	fb_exec_hello hello; /* the first process's: every other must say the same */
	void *inner;         /* the in-process engine of the controls, or NULL */
	xconn *admin;        /* open's process, until connect hands it out */
	xconn **pool;        /* the workers' processes, started together */
	uint32_t npool, taken;
	uint32_t hellos; /* ... of them, those that said hello */
	/* Per key, the highest version a reply has given. A reply to a call
	 * sent after another call's reply must give a higher one (the store
	 * committed it later): relaxed loads can only see a lower value, so
	 * the check can miss, never falsely accuse. */
	_Atomic uint64_t *top;
	/* The lease side: acquires withdrawn, their reply too late to date */
	_Atomic uint64_t withdrawn;
	_Atomic bool replaced_unsaid; /* an acquire that did not say what it replaced */
};

/* The monotonic clock, for deadlines. */
uint64_t fb_x_now(void);

/* A failure of c during `call`: "adapter 'NAME' exec:CMD, worker N: CALL:
 * WHAT" (the name once a hello gave one). The connection is out of step
 * from now on. False, for `return fb_x_failed(...)`. */
bool fb_x_failed(xconn *c, const char *call, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* A reply that broke the protocol: why, and the reply itself quoted. */
bool fb_x_bad_reply(xconn *c, const char *call, const char *why);

/* Send req (n bytes, its newline included), read its reply into c->reply
 * by the engine's deadline; an {"error": ...} reply is a failure. */
bool fb_x_call(xconn *c, const char *req, size_t n, const char *what);

/* The reset request req (n bytes) on open's process, before connect
 * hands it out: {"ok": true} or FB_ESYS, and why in err. */
fb_err fb_x_reset(xengine *e, const char *req, size_t n, char *err, size_t errlen);

/* Whether the adapter's hello offered op; else c fails, saying so. */
bool fb_x_offers(xconn *c, fb_exec_op op);

/* A new engine for "exec:COMMAND" (lease: the lease side), its first
 * process started and greeted as e->admin; else FB_EINVAL (no command, a
 * shared run, a command the shell cannot find or run) or FB_ESYS, and why
 * in err. */
fb_err fb_x_open(const fb_engine_config *cfg, const char *url, bool lease, xengine **out, char *err,
                 size_t errlen);

/* Worker's process: open's for worker 0 (once), else one of the pool that
 * the first worker's connect starts at once for them all. */
fb_err fb_x_take(xengine *e, uint16_t worker, xconn **out, char *err, size_t errlen);

/* Close a process (its input first: its cue to exit) and free it. */
void fb_x_reap(xconn *c);

/* Both engines' version, disconnect and error ops: the version the
 * adapter's hello gave, else the protocol's. */
void fb_x_version(void *eng, char *buf, size_t len);
void fb_x_disconnect(void *conn);
const char *fb_x_error(void *conn);

/* Every process not handed out, and the engine (not e->inner). */
void fb_x_close_engine(xengine *e);

#endif
