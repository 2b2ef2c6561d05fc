/*
 * The deterministic mode (--deterministic): cfg->threads logical workers
 * stepped one operation at a time by a seeded scheduler, on a virtual clock,
 * in one OS thread, with every fault of the catalogue. The workers run the
 * cycle of bench/run.c against the real lease table, stores and checkers;
 * only time and interleaving are simulated. The same configuration and seed
 * give the same history byte for byte, so a seed that shows a violation
 * replays it exactly, and a sweep of seeds is a search for one.
 */
#ifndef FB_SIM_H
#define FB_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"
#include "fault.h"
#include "options.h"
#include "witness.h"
#include "store.h"

/* One discipline's totals over a seed (the numbers of DESIGN section 3). */
typedef struct fb_sim_mode {
	bool on;
	uint64_t writes, accepted, rejected_stale, reads_refused, zombie_writes;
	uint64_t store_stale;    /* stale writes accepted, by the store's own flag */
	uint64_t stale_accepted; /* ... by the checker walking the history */
	uint64_t checked;        /* accepted writes the checker walked */
	uint64_t chain_breaks;
	int64_t lost_updates; /* ledger: (final - (initial - accepted * amount)) / amount */
	int64_t lost_history; /* the same, summed write by write by the checker */
	bool checker_agrees;
	char disagreement[160]; /* the first reason it does not */
} fb_sim_mode;

/* What one fault type did. A fault that never led to a stale write proves
 * nothing about the stores: the summary calls it vacuous. */
typedef struct fb_sim_fault {
	uint64_t injected;   /* faults that took effect */
	uint64_t hit;        /* ... on a worker holding a lease */
	uint64_t over_ttl;   /* ... that lasted (or lied) by more than the TTL */
	uint64_t taken_over; /* leases another worker took over during the fault */
	uint64_t stale;      /* faulted cycles that attempted a stale write */
} fb_sim_fault;

typedef struct fb_sim_result {
	uint64_t seed;
	uint64_t hash;       /* 64-bit FNV-1a of the history's bytes */
	uint64_t steps;      /* scheduler steps run */
	uint64_t idle_steps; /* ... in which every live worker was asleep */
	uint64_t lines;      /* history lines */
	uint64_t virtual_ns; /* virtual time the seed covered */
	uint64_t cycles, acquired, contended, checks_failed;
	/* Cycles in which some store saw a stale operation: a write rejected or
	 * accepted as stale, or a read the fenced store refused. 0: vacuous. */
	uint64_t stale_cycles;
	fb_sim_mode mode[FB_DISCIPLINES];
	fb_sim_fault fault[FB_FAULTS];
	uint64_t pause_trapped;  /* takers held by a takeover trap */
	uint64_t skew_service;   /* steps of a realtime lease clock */
	uint64_t local_fooled;   /* local checks that passed on an expired lease */
	uint64_t renew_failed;   /* renewals that failed, believed by the client */
	uint64_t delayed_writes; /* writes delivered late */
	uint64_t crash_taken;    /* dead workers' leases taken over */
	uint64_t crash_latency_max_ns, crash_latency_sum_ns;
	uint64_t crash_pending;        /* dead workers' leases still held at the end */
	uint64_t crash_pending_age_ns; /* ... the oldest of them, since its crash */
	fb_witness_counts lease;       /* the lease witness's violations */
	bool violation; /* a fenced discipline failed, a checker disagreed, or the lease broke */
	bool corrupted; /* write-fenced or unfenced accepted a stale write or lost updates */
	bool vacuous;   /* no stale operation was attempted at all */
} fb_sim_result;

/*
 * Run one seed of cfg (cfg->seed is ignored) for cfg->steps steps, writing
 * every history line to cfg->history_path when set (the file is replaced).
 * Returns FB_OK with *out filled, or FB_ENOMEM / FB_EINVAL / FB_ESYS /
 * FB_EFENCE with a one-line message already printed on stderr.
 */
fb_err fb_sim_run(const fb_config *cfg, uint64_t seed, fb_sim_result *out);

/*
 * `fencebench --deterministic`: one seed (seed_lo == seed_hi) with its full
 * summary, or a sweep of seed_lo..seed_hi, one line a seed, stopping at the
 * first fenced violation. Prints the replay command of every corruption or
 * violation found. Returns the exit code: 0, 1 (a fenced violation), 3.
 */
int fb_sim_main(const fb_config *cfg);

#endif
