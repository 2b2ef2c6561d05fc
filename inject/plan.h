/*
 * Fault plans: which worker, at which of its cycles, which fault, where,
 * how long. A run records the faults it injected (--plan-out) and a later
 * run replays them (--plan) instead of drawing its own: the same faults hit
 * the same workers at the same cycles. Faults of the lease service itself
 * (worker 0) are indexed by microseconds since the start instead.
 */
#ifndef FB_PLAN_H
#define FB_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "fault.h"

/* Skew faults' kinds, in the `at` field of a skew entry. */
enum fb_skew_kind {
	FB_SKEW_SLOW,    /* the worker's clock runs at 1 - drift from now on */
	FB_SKEW_BACK,    /* the worker's clock jumps back by arg_ns */
	FB_SKEW_SERVICE, /* the lease service's clock steps forward by arg_ns */
};

typedef struct fb_plan_entry {
	uint64_t cycle;  /* the worker's cycle; for worker 0, microseconds since start */
	uint64_t arg_ns; /* length, or a clock step's size */
	uint64_t extra;  /* takeover pauses: the taker's extra ns; slow skew: drift in ppm */
	uint16_t worker; /* 1..threads; 0: the lease service */
	uint8_t fault;   /* fb_fault */
	uint8_t at;      /* pause: fb_fault_at; skew: fb_skew_kind */
	uint8_t phase;   /* pauses "anywhere": the phase the signal landed in */
} fb_plan_entry;

/* Faults as they are taken, appended from any thread and from the pause
 * handler (async-signal-safe: one fetch_add and plain stores to an owned
 * slot). Read only after the workers are joined. */
typedef struct fb_plan_log {
	fb_plan_entry *e;
	uint64_t cap;
	_Atomic uint64_t n;
} fb_plan_log;

fb_err fb_plan_log_create(uint64_t cap, fb_plan_log **out);
void fb_plan_log_destroy(fb_plan_log *l);

static inline void fb_plan_log_add(fb_plan_log *l, const fb_plan_entry *e)
{
	if (!l)
		return;
	uint64_t i = atomic_fetch_add_explicit(&l->n, 1, memory_order_relaxed);
	if (i < l->cap)
		l->e[i] = *e;
}

/* Entries recorded beyond the capacity (lost). */
uint64_t fb_plan_log_dropped(const fb_plan_log *l);

/* Write the log as a plan file (sorted by worker, then cycle); `comment`
 * goes in the header. 0, or -1 with errno set. */
int fb_plan_write(const fb_plan_log *l, const char *path, const char *comment);

/* A plan read back: entries sorted by worker, then cycle. */
typedef struct fb_plan {
	fb_plan_entry *e;
	size_t n;
} fb_plan;

/* The format a plan's first line names ("# fencebench fault plan 1"). */
#define FB_PLAN_FORMAT 1

/* The run replaying it has a lease service whose clock a skew steps. */
#define FB_PLAN_SERVICE_CLOCK 1u
/* ... and a wire through fencebench's proxy (issue 24: partition, wire-delay, wire-reset) */
#define FB_PLAN_WIRE 2u

/* Parse a plan file: judged as input. On error, FB_EINVAL with "FILE:LINE:
 * what" in err (not a plan, another format, no fault at all, a line the
 * run cannot replay: a worker it has not, a server pause, a step of a
 * service clock it has not), or FB_ESYS if it cannot be read. */
fb_err fb_plan_read(const char *path, uint32_t threads, unsigned flags, fb_plan *out, char *err,
                    size_t errlen);
void fb_plan_free(fb_plan *p);

/* The entries of one worker: *first and the count. */
size_t fb_plan_for(const fb_plan *p, uint16_t worker, const fb_plan_entry **first);

#endif
