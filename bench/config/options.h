/*
 * The run's configuration, built once from argv and read-only afterwards.
 * One table (options.c) drives parsing, --help and the JSON echo, so the
 * three never disagree.
 */
#ifndef FB_OPTIONS_H
#define FB_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lease.h"
#include "bug.h"
#include "duration.h"
#include "fault.h"
#include "store.h"

/* Owners are 16-bit, and the checker's 16-bit versions must hold, beside a
 * ring of at least 4 records and 4096 versions to judge duplicates by, two
 * uncommitted writes a worker (fb_checker_in_flight): 16384 threads. */
#define FB_MAX_THREADS 16384

typedef enum fb_op {
	FB_OP_RMW,   /* the client reads, computes balance - amount, writes it */
	FB_OP_DEBIT, /* the store subtracts: debit(amount, token) */
} fb_op;

/* How workers pick keys. */
typedef enum fb_dist_kind {
	FB_DIST_UNIFORM,     /* every key alike */
	FB_DIST_ZIPF,        /* key k with weight 1 / (k + 1)^s: hot keys */
	FB_DIST_PARTITIONED, /* each worker its own disjoint keys: no contention */
} fb_dist_kind;

typedef struct fb_dist {
	fb_dist_kind kind;
	double s; /* zipf exponent */
} fb_dist;

/* A sweep runs every combination of these lists, one run each. */
#define FB_SWEEP_MAX 32

/* What a worker does when the lease of the key it drew is held. */
typedef enum fb_on_held {
	FB_ON_HELD_WAIT, /* wait for it: a client that needs that account */
	FB_ON_HELD_SKIP, /* draw another key: a worker taking any job */
} fb_on_held;

typedef enum fb_progress { FB_PROGRESS_AUTO, FB_PROGRESS_ALWAYS, FB_PROGRESS_NEVER } fb_progress;

typedef struct fb_config {
	uint32_t threads; /* this run's; the sweep's list below */
	uint32_t threads_list[FB_SWEEP_MAX], n_threads;
	uint64_t duration_ns;
	uint64_t cycles; /* each worker stops after this many cycles; 0: no limit */
	uint32_t keys;
	uint64_t ttl_ns;
	uint32_t modes; /* bit (1 << fb_discipline) per selected discipline */
	fb_op op;
	fb_fence_source fence;
	uint32_t fences; /* bit per fb_fence_source swept */
	fb_dist dist;
	fb_on_held on_held;
	fb_dist dist_list[FB_SWEEP_MAX];
	uint32_t n_dist;
	uint64_t first_fence;
	uint64_t seed;
	/* faults */
	uint32_t faults; /* bit (1 << fb_fault) per selected fault */
	fb_fault_at fault_at;
	double pause_rate; /* per second, each fault its own */
	double pause_rate_list[FB_SWEEP_MAX];
	uint32_t n_pause_rate;
	uint64_t pause_min_ns, pause_max_ns;
	double skew_rate;
	uint64_t skew_ns;  /* size of a clock step */
	double skew_drift; /* a skewed worker clock runs at 1 - drift */
	double delay_rate;
	uint64_t delay_min_ns, delay_max_ns;
	double crash_rate;
	double renew_rate;
	double retry_rate;
	double server_pause_rate;
	double node_jump_rate; /* issue 14 */
	/* issue 24: the wire's faults, through a URL's ?proxy=1 */
	double partition_rate;
	uint64_t partition_min_ns, partition_max_ns;
	double wire_delay_rate;
	double wire_reset_rate; /* issue 24 */
	uint64_t wire_delay_min_ns, wire_delay_max_ns;
	const char *nemesis;       /* issue 24: "exec:COMMAND" */
	const char *nemesis_names; /* NAME[,NAME...] the command is given */
	double nemesis_rate;
	uint64_t nemesis_min_ns, nemesis_max_ns, nemesis_timeout_ns;
	fb_bug bug; /* a planted bug (tests of the checkers), or FB_BUG_NONE */
	fb_check_lease check_lease;
	fb_lease_clock_kind lease_clock;
	uint64_t work_min_ns, work_max_ns; /* time a holder works between read and write */
	const char *plan_path, *plan_out_path;
	/* engines */
	const char *lease_url, *store_url; /* NULL: the in-process engine */
	uint32_t client_id;                /* 0: alone; N: process N of a shared run */
	uint64_t adapter_timeout_ns;       /* --adapter-timeout, 0: the engine's default */
	bool prepare_only;                 /* reset the engines and exit */
	/* deterministic mode */
	bool deterministic;
	uint64_t seed_lo, seed_hi; /* --seeds A..B (both = seed otherwise) */
	bool seeds_given;
	bool swarm; /* --swarm: each seed draws the options not given */
	/* the command line, for --swarm's rows: parsed again with each seed's draw */
	int argc;
	char **argv;
	bool sample_given; /* --sample was given (else: 32, or 1 with a remote engine) */
	/* --faults was not given and the store is not the in-process one: every
	 * fault that tests a store's check (pause, retry, delay) by default */
	bool store_faults;
	uint64_t steps; /* scheduler steps per seed */
	const char *history_path;
	/* profiling */
	uint64_t warmup_ns;          /* run, but do not count throughput or latency */
	bool pin;                    /* one CPU per worker, round robin over `cpus` */
	uint32_t cpus[1024], n_cpus; /* --cpus: the CPUs workers may run on */
	double percentiles[16];      /* the table's latency percentiles, 0..100 */
	uint32_t n_percentiles;
	const char *hdr_prefix; /* --hdr-file: HdrHistogram percentile text files */
	bool no_floor;          /* skip measuring the floor pipeline after each run */
	bool no_check;          /* ablation: no history checker, no lease witness */
	/* output */
	uint32_t sample; /* time one cycle in `sample` */
	const char *json_path;
	const char *results_dir;
	fb_progress progress;
	bool quiet;
	/* fixed */
	int64_t initial_balance;
	int64_t amount;
} fb_config;

/* Fault f's rate per second as configured (selected or not). */
double fb_config_rate(const fb_config *cfg, fb_fault f);

/* Whether fault f is selected and has a rate above zero. */
static inline bool fb_config_fault(const fb_config *cfg, fb_fault f)
{
	return (cfg->faults & (1u << f)) && fb_config_rate(cfg, f) > 0;
}

typedef enum fb_parse {
	FB_PARSE_RUN,   /* run with *cfg */
	FB_PARSE_EXIT0, /* --help or --version printed */
	FB_PARSE_USAGE, /* bad input, one line printed on stderr: exit 2 */
} fb_parse;

void fb_config_defaults(fb_config *cfg);
fb_parse fb_config_parse(fb_config *cfg, int argc, char **argv);

/* --swarm: the configuration seed runs, as if each option base's command
 * line did not give had been given the value the seed draws for it (the
 * user's options stand). FB_PARSE_USAGE, a line said, when the draw makes
 * a combination the options refuse: a fencebench bug. */
fb_parse fb_config_swarm(const fb_config *base, uint64_t seed, fb_config *row);

/* Parse a whole number in min..max: digits only, no sign, no overflow.
 * 0 on success; -1 otherwise. */
int fb_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* The elements of a comma list, in order, each below FB_LIST_ITEM bytes: an
 * empty list, an empty element (",a", "a,,b", "a,") or an element given
 * twice is refused, -1 with the reason in why. One rule for every list of
 * every command. */
#define FB_LIST_ITEM 64
int fb_list_split(const char *v, char (*items)[FB_LIST_ITEM], int max, int *n, char *why,
                  size_t len);

/* Whether the config sweeps (any list has more than one value). */
bool fb_config_is_sweep(const fb_config *cfg);

/* "uniform", "zipf:0.99", "partitioned" */
void fb_dist_format(char *buf, size_t len, const fb_dist *d);

/* Every option with its value, as "--name value" words (the replay line). */
void fb_config_replay(const fb_config *cfg, char *buf, size_t len);

/* Visit each option for the JSON echo: key, and either a number, a string
 * or a list of strings. */
typedef struct fb_config_visitor {
	void (*number)(void *ctx, const char *key, double v);
	void (*integer)(void *ctx, const char *key, uint64_t v);
	void (*string)(void *ctx, const char *key, const char *v);
	void (*strings)(void *ctx, const char *key, const char *const *v, int n);
	void (*boolean)(void *ctx, const char *key, bool v);
	void (*numbers)(void *ctx, const char *key, const double *v, int n);
} fb_config_visitor;

void fb_config_visit(const fb_config *cfg, const fb_config_visitor *v, void *ctx);

#endif
