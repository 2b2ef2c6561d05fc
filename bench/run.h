/*
 * The stress run: worker threads contend for leases, and every cycle's read
 * and write go to one store per selected discipline with the same lease and
 * fence, under one fault schedule, so the difference between the columns is
 * the storage check and nothing else.
 */
#ifndef FB_RUN_H
#define FB_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "checker.h"
#include "hist.h"
#include "options.h"
#include "pause.h"

typedef struct fb_mode_counters {
	fb_counter writes, accepted, rejected, reads_refused, store_stale, zombie;
} fb_mode_counters;

/* One worker's state: written by that worker only (and its pause handler),
 * sampled by the progress thread, summed after the join. */
typedef struct fb_worker {
	alignas(FB_PAD_LINE) fb_fault_port port;
	struct fb_run_state *run;
	uint16_t id;
	fb_counter ops, acquired, contended, cas_retries, wasted_fences, checker_stalls;
	fb_mode_counters m[FB_DISCIPLINES];
	fb_hist acquire, write, cycle;
} fb_worker;

/* Totals of one discipline, after the run. */
typedef struct fb_mode_result {
	bool on;
	uint64_t writes, accepted, rejected_stale, reads_refused, zombie_writes;
	uint64_t store_stale;    /* stale writes accepted, as the store itself saw them */
	uint64_t stale_accepted; /* ... as the checker found them in the history */
	int64_t lost_updates;    /* ledger: (initial - debits - final) / amount */
	int64_t lost_history;    /* the same, summed write by write from the history */
	uint64_t chain_breaks;
	uint64_t checked;
	bool checker_agrees;
	char disagreement[160]; /* why not, when it does not */
} fb_mode_result;

typedef struct fb_key_result {
	int64_t balance[FB_DISCIPLINES];
	uint64_t accepted[FB_DISCIPLINES], stale[FB_DISCIPLINES];
	int64_t lost[FB_DISCIPLINES];
	uint64_t last_fence[FB_DISCIPLINES];
} fb_key_result;

/* One second of the time series (CSV rows and the progress line). */
typedef struct fb_sample {
	double t_s;
	uint64_t ops, pauses;
	uint64_t writes[FB_DISCIPLINES], accepted[FB_DISCIPLINES], rejected[FB_DISCIPLINES],
	        reads_refused[FB_DISCIPLINES], store_stale[FB_DISCIPLINES];
} fb_sample;

typedef struct fb_results {
	const fb_config *cfg;
	const char *clock_name;
	double elapsed_s;
	bool interrupted;
	int signal;
	uint64_t ops, acquired, contended, cas_retries, wasted_fences, checker_stalls;
	uint64_t pauses, pause_hit, pause_over_ttl, takeovers, paused_ns;
	uint64_t pause_aimed, pause_trapped;
	uint64_t injector_sent, injector_missed;
	uint64_t *per_thread_ops;
	fb_hist acquire, write, cycle;
	fb_mode_result mode[FB_DISCIPLINES];
	fb_key_result *keys;
} fb_results;

/* Called once a second from the main thread with the cumulative sample. */
typedef void (*fb_tick_fn)(void *ctx, const fb_sample *s);

/*
 * Run the benchmark described by cfg until its duration elapses or SIGINT /
 * SIGTERM arrives (the caller must have blocked both in every thread).
 * Fills *res; returns FB_OK, or FB_ESYS / FB_ENOMEM with a message already
 * printed (threads could not be created, ...).
 */
fb_err fb_run(const fb_config *cfg, fb_tick_fn tick, void *ctx, fb_results *res);
void fb_results_free(fb_results *res);

#endif
