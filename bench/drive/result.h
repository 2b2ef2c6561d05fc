/*
 * The one result type (DESIGN.md section 8): what a run measured, filled by
 * either driver (the threaded one, run.c; the simulator, sim.c) and read by
 * the report. Its own module, so that the cycle, the simulator and the
 * report need not include the threaded driver's header for it.
 */
#ifndef FB_RESULT_H
#define FB_RESULT_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "hist.h"
#include "inject.h"
#include "chain.h"
#include "options.h"
#include "witness.h"

/* Totals of one discipline, after the run. */
typedef struct fb_mode_result {
	bool on;
	uint64_t writes, accepted, rejected_stale, reads_refused, zombie_writes;
	uint64_t refused_other;  /* writes and reads refused for a reason the store gave */
	uint64_t unjudged;       /* ... refused where fencebench does not see every call */
	uint64_t indeterminate;  /* writes whose outcome is unknown: the engine fell silent */
	uint64_t store_stale;    /* stale writes accepted, as the store itself saw them */
	uint64_t stale_accepted; /* ... as the checker found them in the history */
	int64_t lost_updates;    /* ledger: (final - (initial - accepted debits)) / amount */
	int64_t lost_history;    /* the same, summed write by write from the history */
	uint64_t chain_breaks;
	uint64_t duplicates;       /* accepted writes that shared a commit version */
	uint64_t false_rejections; /* writes and reads refused to their rightful holder */
	uint64_t stale_reads;      /* fenced reads served after a higher fence was admitted */
	uint64_t control_chances;  /* write-fenced, rmw: updates it had to lose (control.h) */
	uint64_t checked;
	bool checker_agrees;
	bool unchecked;         /* no history checker ran: lost updates unknown */
	char disagreement[160]; /* why not, when it does not */
} fb_mode_result;

typedef struct fb_key_result {
	int64_t balance[FB_DISCIPLINES];
	uint64_t accepted[FB_DISCIPLINES], stale[FB_DISCIPLINES];
	int64_t lost[FB_DISCIPLINES];
	uint64_t last_fence[FB_DISCIPLINES];
} fb_key_result;

/* The first refusal of a rightful holder: a store said no to a call when no
 * call with a higher fence (nor the caller's own, accepted) had been sent to
 * it before the reply came. */
typedef struct fb_false_rejection {
	bool found;
	fb_discipline d;
	bool read; /* a fenced read, else a write */
	uint32_t key;
	uint16_t worker;
	uint64_t fence;   /* the caller's */
	uint64_t highest; /* the highest fence the store said it had seen (0: not said) */
	uint64_t sent;    /* the highest fence any call had carried to it by the reply */
} fb_false_rejection;

/* The first stale read a fenced store served (issue 27): a read whose fence
 * was below one the same store had admitted (a read served, a write
 * accepted) and answered before this read was sent. */
typedef struct fb_stale_read {
	bool found;
	uint32_t key;
	uint16_t worker;
	uint64_t fence;    /* the reader's */
	uint64_t admitted; /* the higher fence the store had admitted before it */
} fb_stale_read;

/* One fault type's vacuity proof: did it bite? */
typedef struct fb_fault_result {
	uint64_t sent;           /* armed or signalled by the injector (or the plan) */
	uint64_t taken;          /* taken by a worker */
	uint64_t over_ttl;       /* ... that lasted longer than the TTL */
	uint64_t takeovers;      /* cycles under it whose lease another worker took */
	uint64_t stale_attempts; /* cycles under it that wrote stale (refused or not) */
} fb_fault_result;

/* What a write did to one store, for the first corruption's timeline. */
typedef enum fb_outcome {
	FB_OUT_NONE,         /* not written (not selected, read refused, check failed) */
	FB_OUT_ACCEPTED,     /* accepted, in order */
	FB_OUT_STALE,        /* accepted although its fence was stale: corruption */
	FB_OUT_REJECTED,     /* refused as stale: a newer fence had reached the store */
	FB_OUT_READ_REFUSED, /* the read was refused as stale, so no write */
	/* refusals that were not staleness (a write's, or the read's: no write) */
	FB_OUT_REFUSED_HOLDER, /* no newer fence had been sent: its rightful holder */
	FB_OUT_REFUSED_OTHER,  /* for a reason the store gave */
	FB_OUT_REFUSED,        /* not judged: fencebench does not see every call */
} fb_outcome_t;

#define FB_STORY_BEFORE 8 /* nemesis faults a story keeps from before its acquire */

/* A stale write a store accepted, as a short timeline: the first of the
 * run, or the first of the article's shape (the unfenced store took it,
 * the fenced one refused it). Times are on the lease service's clock; t0
 * is the run's start on it. */
typedef struct fb_first_corruption {
	bool found;
	uint32_t key;
	uint16_t writer;
	int fault; /* the fb_fault that hit the writer's cycle, or -1 */
	uint32_t fault_where;
	uint64_t fence, acquired_at, expires_at, wrote_at;
	uint64_t fault_at, fault_ns;
	int64_t erased; /* debits the unfenced store lost to it */
	uint8_t outcome[FB_DISCIPLINES];
	uint64_t highest[FB_DISCIPLINES]; /* the fence each store had seen as it answered */
	uint8_t order[FB_DISCIPLINES];    /* the disciplines in the order the cycle wrote them */
	/* the newer holder it went behind: from the checker that walked the
	 * stale write (the write that carried the store's highest fence) */
	uint64_t newer_fence;
	uint16_t newer_owner; /* 0: not known */
	bool newer_written;   /* its write, as the checker walked it: the rest are known */
	bool newer_delayed;   /* ... delivered late by the network */
	bool resent;          /* the stale write is the writer's own resent copy */
	uint8_t newer_store;  /* the store whose history named it */
	uint64_t newer_acquired_at, newer_wrote_at;
	uint8_t newer_outcome[FB_DISCIPLINES];
	uint64_t t0;
	/* issue 24: the nemesis faults struck before the writer's acquire (the
	 * latest FB_STORY_BEFORE, oldest first): a failover that re-minted its
	 * fence struck before it, and the story names one only if it was under
	 * way between the newer holder's acquire and this writer's */
	struct {
		uint64_t at, end; /* end: its heal done, or 0: not healed when told */
		uint32_t name;    /* an index into --nemesis-names */
	} before[FB_STORY_BEFORE];
	uint8_t nbefore;
} fb_first_corruption;

/* One second of the time series (CSV rows, the JSON's series and the
 * progress line). */
typedef struct fb_sample {
	double t_s;
	uint64_t ops, faults;
	uint64_t ops_min, ops_max; /* per live worker: fairness */
	uint64_t writes[FB_DISCIPLINES], accepted[FB_DISCIPLINES], rejected[FB_DISCIPLINES],
	        reads_refused[FB_DISCIPLINES], store_stale[FB_DISCIPLINES];
	/* stale writes accepted as the run's totals count them (the checker's
	 * walk so far; the store's own count when nothing checks), and, when
	 * `checked`, the updates lost so far (net) by the checker's walk */
	bool checked;
	uint64_t stale[FB_DISCIPLINES];
	int64_t lost[FB_DISCIPLINES];
} fb_sample;

typedef struct fb_results {
	const fb_config *cfg;
	const char *clock_name;
	double elapsed_s;
	/* a stop signal in the --warmup: no measured window at all (its
	 * throughput and latency mean nothing; the checks still cover it) */
	bool unmeasured;
	double warmed_s; /* how long the warm-up ran */
	/* around the measured window: from fb_run's start until the workers
	 * were released (thread start-up), and from the stop until the last
	 * worker was joined (elapsed_s counts the latter) */
	double startup_s, stopping_s;
	bool interrupted;
	int signal;
	uint64_t ops, acquired, contended, cas_retries, wasted_fences, checker_stalls;
	uint64_t pause_hit, pause_at_point, pause_trapped, paused_ns;
	uint64_t pause_cut_short; /* pauses (and other sleeps) the run's end cut short */
	uint64_t injector_missed, service_steps;
	uint64_t abandoned, local_fooled, renew_ok, renew_believed;
	uint64_t crashes, crash_takeovers, delayed;
	uint64_t crash_pending;        /* dead workers' leases not yet taken over at the end */
	uint64_t crash_pending_age_ns; /* ... the oldest of them, since its crash */
	uint64_t plan_recorded, plan_dropped, plan_slipped;
	bool plan_unwritten; /* --plan-out could not be written: exit 3 */
	fb_fault_result fault[FB_FAULTS];
	uint64_t *per_thread_ops;
	bool *dead; /* crashed workers: left out of fairness */
	fb_hist acquire, write, cycle, takeover;
	fb_hist eop[FB_EOPS];                    /* the engines' round trips */
	char lease_engine[96], store_engine[96]; /* "Redis 7.0.15" */
	bool remote;                             /* an engine with round trips drove the run */
	bool batched;        /* the store took each phase's operations in one round trip */
	bool check_deferred; /* a shared run: the global history is `fencebench check`'s */
	char failure[2560];  /* an engine that stopped answering: which, when, and why */
	fb_mode_result mode[FB_DISCIPLINES];
	char column[FB_DISCIPLINES][16]; /* each one's heading: its name, or an adapter's */
	uint32_t unfenced_reads;         /* bit (1 << d): a store whose reads carry no token */
	fb_key_result *keys;
	fb_first_corruption first;  /* the run's first corruption */
	fb_first_corruption shaped; /* the first of the article's shape (may be the same) */
	fb_witness_counts lease;    /* the lease witness's violations */
	/* Issue 27: the in-process clock read up to core_skew_ns apart on two
	 * cores, beyond the witness's slack: the lease's timing judgements
	 * (moved here from `lease`) are the clock's, not the table's. */
	uint64_t core_skew_ns, clock_slack_ns;
	fb_witness_counts clock_blamed;
	fb_witness_example lease_example[FB_WIT_KINDS]; /* the first of each */
	char lease_unjudged[400]; /* what the witness could not judge of this engine, or "" */
	/* The lease chain's (chain.h): in process, the simulator's only, judged
	 * beside the witness and not reported yet (issue 26). chain_judged:
	 * every lease's record was in, and kept. */
	bool chain_judged;
	fb_chain_counts chain;
	fb_false_rejection false_rejection; /* the first */
	fb_stale_read stale_read;           /* the first */
	char other_reason[160]; /* the first refusal for a reason the store gave: its words */
	double floor_ops_s;     /* the matching floor pipeline's throughput, 0: not measured */
	bool exhausted;         /* the fence space ran out: the run stopped */
	/* the deterministic driver's own figures (deterministic: true) */
	struct {
		bool deterministic;
		uint64_t seed;
		uint64_t steps, idle_steps; /* scheduler steps, ... in which all slept */
		uint64_t virtual_ns;        /* virtual time covered */
		uint64_t hash, lines;       /* the history: FNV-1a of its bytes, its lines */
	} sim;
} fb_results;

/* Called once a second from the main thread with the cumulative sample. */
typedef void (*fb_tick_fn)(void *ctx, const fb_sample *s);

/* The injector's statistics into *res, copied here once for both drivers:
 * each fault's sent, the misses, the service's clock steps (taken as skew),
 * and what the service and the wire took (nemesis: its over-TTL only; what
 * started is the driver's to say). */
void fb_results_injected(fb_results *res, const fb_injector_stats *st);

/* Free what a driver allocated in *res (per-thread counts, keys). */
void fb_results_free(fb_results *res);

/* Discipline d's column heading: the store's own name for it (an adapter's
 * column), else the discipline's. */
static inline const char *fb_column(const fb_results *res, fb_discipline d)
{
	return res->column[d][0] ? res->column[d] : fb_discipline_name(d);
}

#endif
