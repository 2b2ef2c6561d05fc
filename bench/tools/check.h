/*
 * `fencebench check --store URL`: after a run, or after every process of a
 * shared run has finished, read the history of accepted writes that a real
 * store (Redis, PostgreSQL) recorded in the same step as each write, walk
 * it with the offline checker (history.h) and close the books against the
 * store's final balances and fences. It never prepares the store (that
 * would reset it): it only reads.
 *
 * Exit codes: 0 the fenced disciplines are clean and the history agrees
 * with the store, 1 a fenced discipline was violated (or the history
 * disagrees with the store), 2 usage, 3 runtime (the server cannot be
 * reached, no run recorded there).
 */
#ifndef FB_CHECK_H
#define FB_CHECK_H

#include <stdbool.h>
#include <stdio.h>

#include "backend.h"

int fb_check_main(int argc, char **argv);

typedef struct fb_check_opts {
	const char *url;  /* the store's URL (printed redacted) */
	const char *json; /* NULL: no document */
	bool quiet;       /* verdict lines only: no table, no progress */
	FILE *out, *err;  /* NULL: stdout, stderr */
} fb_check_opts;

/* What fb_check_main does once its options are parsed, with the engine
 * given (ops NULL: the one o->url names). Returns the exit code. */
int fb_check_store(const fb_store_ops *ops, const fb_check_opts *o);

#endif
