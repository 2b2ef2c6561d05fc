/*
 * libFuzzer: fb_plan_read, which takes a path. Each input is written over
 * one temporary file this process made at start (removed at a normal exit;
 * a crash leaves it behind), then
 * read back as a plan for 64 workers. A plan that reads is sorted by
 * worker, then cycle, and fb_plan_for finds each worker's entries; written
 * out again with fb_plan_write it reads back the same, entry for entry.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan.h"

#define THREADS 64

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[4096], again[4200];

static void remove_files(void)
{
	unlink(path);
	unlink(again);
}

/* In $TMPDIR if set, else on tmpfs (ten times the executions of an ext4
 * /tmp), else in /tmp. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	const char *dirs[] = {getenv("TMPDIR"), "/dev/shm", "/tmp"};
	int fd = -1;
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0] && fd < 0; i++) {
		if (!dirs[i] || !*dirs[i])
			continue;
		snprintf(path, sizeof path, "%s/fuzz_plan.XXXXXX", dirs[i]);
		fd = mkstemp(path);
	}
	if (fd < 0) {
		perror("fuzz_plan: mkstemp");
		exit(1);
	}
	close(fd);
	snprintf(again, sizeof again, "%s.again", path);
	atexit(remove_files);
	return 0;
}

/* A total order on entries: qsort need not be stable, so entries of one
 * worker and cycle may come back in another order. */
static int by_everything(const void *x, const void *y)
{
	const fb_plan_entry *a = x, *b = y;
	const uint64_t ka[] = {a->worker, a->cycle, a->fault, a->at, a->phase, a->arg_ns, a->extra};
	const uint64_t kb[] = {b->worker, b->cycle, b->fault, b->at, b->phase, b->arg_ns, b->extra};
	for (size_t i = 0; i < sizeof ka / sizeof ka[0]; i++)
		if (ka[i] != kb[i])
			return ka[i] < kb[i] ? -1 : 1;
	return 0;
}

/* Sorted, every entry found by its worker, and the same after a write
 * and a read. */
static void check(const fb_plan *p)
{
	for (size_t i = 1; i < p->n; i++) {
		const fb_plan_entry *a = &p->e[i - 1], *b = &p->e[i];
		if (a->worker > b->worker || (a->worker == b->worker && a->cycle > b->cycle))
			__builtin_trap();
	}
	size_t seen = 0;
	for (uint16_t w = 0; w <= THREADS; w++) {
		const fb_plan_entry *first;
		size_t n = fb_plan_for(p, w, &first);
		for (size_t i = 0; i < n; i++)
			if (first[i].worker != w)
				__builtin_trap();
		seen += n;
	}
	if (seen != p->n)
		__builtin_trap();

	fb_plan_log *log;
	if (fb_plan_log_create(p->n, &log) != FB_OK)
		return;
	for (size_t i = 0; i < p->n; i++)
		fb_plan_log_add(log, &p->e[i]);
	char err[256];
	fb_plan back;
	if (fb_plan_write(log, again, "fuzz") == 0) {
		fb_err rc =
		        fb_plan_read(again, THREADS, FB_PLAN_SERVICE_CLOCK, &back, err, sizeof err);
		unlink(again);
		if (rc != FB_OK || back.n != p->n)
			__builtin_trap();
		/* the log's own copy of the entries, in the same total order */
		qsort(log->e, p->n, sizeof *log->e, by_everything);
		qsort(back.e, back.n, sizeof *back.e, by_everything);
		for (size_t i = 0; i < p->n; i++)
			if (by_everything(&log->e[i], &back.e[i]) != 0)
				__builtin_trap();
		fb_plan_free(&back);
	}
	fb_plan_log_destroy(log);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return 0;
	size_t put = fwrite(data, 1, size, f);
	if (fclose(f) != 0 || put != size)
		return 0;
	fb_plan p;
	char err[256];
	if (fb_plan_read(path, THREADS, FB_PLAN_SERVICE_CLOCK, &p, err, sizeof err) == FB_OK) {
		check(&p);
		fb_plan_free(&p);
	}
	return 0;
}
