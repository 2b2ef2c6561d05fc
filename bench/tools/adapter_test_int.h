/*
 * What `fencebench adapter-test` shares between its store side
 * (adapter_test.c) and its lease side (adapter_test_lease.c): a contract's
 * session, transcript and verdict, and the tally the summary line reads.
 */
#ifndef FB_ADAPTER_TEST_INT_H
#define FB_ADAPTER_TEST_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "exec.h"
#include "exec_proto.h"

#define LOG_MAX   8192 /* a contract's transcript */
#define AT_OWNERS 8    /* a lease session's owners at most: 1..8, each its own process */

typedef struct at_opts {
	const char *url;
	uint32_t keys, procs, rounds;
	uint64_t timeout_ns;
	bool lease; /* --lease: a lease adapter (adapter_test_lease.c) */
} at_opts;

typedef enum verdict { V_PASS, V_FAIL, V_NA } verdict;

/*
 * One contract as it runs: its session with the adapter (an engine opened
 * and reset, and fencebench's own connection), the transcript of its calls,
 * its verdict and why. fatal: the adapter died, hung or answered an error
 * (exit 3), or cannot be run at all (exit 2): the test stops there.
 */
typedef struct at {
	const at_opts *o;
	uint32_t offers; /* the hello's operations */
	int op;          /* FB_OP_RMW or FB_OP_DEBIT: what reset announces */
	void *eng, *conn;
	void *owners[AT_OWNERS + 1]; /* a lease session's: owner w's connection */
	verdict v;
	int fatal; /* 0, or the exit code */
	char why[2700];
	char log[LOG_MAX];
	size_t loglen;
} at;

/* The contract failed / cannot be judged (an operation not offered, or
 * an earlier contract's failure in the way): the first verdict stands. */
void at_fail(at *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void at_na(at *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The test stops: exit code (2 or 3) and why. */
void at_fatal(at *t, int code, const char *msg);
bool at_has(const at *t, fb_exec_op op);
/* Whether the session's open or prepare failed (e): a reset reply of the
 * wrong shape fails the contract, with its exchange; anything else stops
 * the test (exit 2 for FB_EINVAL, else 3). */
bool at_setup_failed(at *t, fb_err e, const char *err);
/* After a call on an adapter connection (either side's): the exchange
 * logged; an error either fails the contract (the adapter broke the
 * protocol) or stops the test. False on an error. */
bool at_after(at *t, void *conn, fb_io io);
/* A contract's line (and on FAIL its transcript, on n/a why). */
void at_print(const at *t, const char *name, const char *says);
const char *at_verdict_name(verdict v);
/* A fresh verdict and transcript for the next contract. */
void at_begin(at *t);
/* The usage error line: "fencebench adapter-test: ...", and 2. */
int at_bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* An adapter's first process opened (open, with cfg) for its hello, and
 * closed: what it offers (t->offers), its name ("yours" if none) and
 * version; else the error line, and the exit code (2 or 3). */
typedef fb_err (*at_open_fn)(const fb_engine_config *cfg, const char *url, void **eng, char *err,
                             size_t errlen);
int at_probe(at *t, at_open_fn open, void (*version)(void *, char *, size_t), void (*close)(void *),
             const fb_engine_config *cfg, char *name, size_t nlen, char *ver, size_t vlen);

/* n threads of fn, thread i given (char *)args + i * size, joined (th: n
 * of them). One that cannot start leaves the others at their barrier for
 * ever: the test exits 3. */
void at_threads(uint32_t n, pthread_t *th, void *(*fn)(void *), void *args, size_t size);

/* Whether a race was stopped by a thread's failed call (err): a broken
 * reply fails the contract, anything else stops the test. */
bool at_race_stopped(at *t, bool stopped, bool broke, const char *err);

/* What the contracts came to, for the summary line. */
typedef struct at_tally {
	unsigned failed, ran, skipped;
	char names[256];
	uint64_t t0;
} at_tally;

/* Contract cname's verdict counted. */
void at_count(at_tally *y, const at *t, const char *cname);
/* The summary line, or the fatal error: the exit code. */
int at_finish(const at *t, const at_tally *y);

/* The lease side: fencebench adapter-test --lease exec:COMMAND. */
int fb_adapter_test_lease(const at_opts *o);

#endif
