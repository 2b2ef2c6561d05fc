#define _GNU_SOURCE
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "common.h"
#include "prng.h"
#include "schemes.h"
#include "url.h"

static int check_nemesis(const struct fb_config *cfg);

typedef enum kind {
	K_U32,
	K_U64,
	K_DURATION,
	K_RATE,      /* a double in min..max */
	K_RANGE,     /* D or D-D into (off, off2) */
	K_ENUM,      /* one of names, into an int-sized enum */
	K_BITS,      /* comma list of names, into a uint32_t bit set */
	K_SEEDS,     /* A..B */
	K_U32_LIST,  /* N[,N...] into (off: uint32_t[FB_SWEEP_MAX], off2: count) */
	K_RATE_LIST, /* R[,R...] into (off: double[FB_SWEEP_MAX], off2: count) */
	K_DIST_LIST, /* uniform|zipf:S|partitioned[,...] */
	K_CPUS,      /* taskset list: 0-3,8,10-11 */
	K_PCTS,      /* percentiles: 50,99,99.9 */
	K_STRING,
	K_ENGINE, /* an engine URL: its scheme must be known */
	K_FLAG,
	K_HELP,
	K_VERSION,
} kind;

/*
 * An option's default, written once: fb_config_defaults (a list's: settle,
 * when none was given) parses it as if it had been given, and --help shows
 * it where the help text says {}. A default that follows another option is
 * written as such: {ttl} a multiple of the TTL (settle sizes what was left
 * unset), {if} the value a condition of the run selects (its code says
 * which). With v set, ttl is a condition's too (work: skew alone).
 */
typedef struct deflt {
	const char *v;          /* in the option's own syntax; NULL: none or computed */
	const char *v_if;       /* a condition's default, in the same syntax */
	uint8_t ttl_lo, ttl_hi; /* twentieths of the TTL; 0: none */
} deflt;

#define TWENTIETHS(x) ((uint8_t)((x)*20 + 0.5))
#define NODEF                                                                                      \
	{                                                                                          \
		NULL, NULL, 0, 0                                                                   \
	}
#define DEF(v)                                                                                     \
	{                                                                                          \
		v, NULL, 0, 0                                                                      \
	}
#define DEF_IF(v, w)                                                                               \
	{                                                                                          \
		v, w, 0, 0                                                                         \
	}
#define DEF_TTL(lo, hi)                                                                            \
	{                                                                                          \
		NULL, NULL, TWENTIETHS(lo), TWENTIETHS(hi)                                         \
	}
#define DEF_TTL_IF(v, lo, hi)                                                                      \
	{                                                                                          \
		v, NULL, TWENTIETHS(lo), TWENTIETHS(hi)                                            \
	}

typedef struct opt {
	const char *name;
	int short_name;  /* 0: long only */
	const char *arg; /* NULL: takes no value */
	kind k;
	size_t off, off2;
	uint64_t min, max; /* K_U32, K_U64, K_RATE */
	const char *const *names;
	int nnames;
	const char *json; /* key in the JSON "config" echo; NULL: not echoed */
	double json_unit; /* K_DURATION, K_RANGE: ns per unit of the JSON key */
	bool replay;      /* part of the replay command line */
	const char *help;
	int need;  /* replayed only when relevant: 0 always, 1 + fb_fault for that
	              fault's options, NEED_DETERMINISTIC */
	int where; /* the drivers that take it: 0 both, W_STRESS or W_DET alone */
	deflt def;
} opt;

/* The smallest -d and --ttl that measure anything. */
#define FB_MIN_DURATION_NS UINT64_C(1000000)
#define FB_MIN_TTL_NS      UINT64_C(1000)

/* Which driver an option applies to; given to the other, it is refused. */
#define W_STRESS 1 /* real threads only */
#define W_DET    2 /* --deterministic only */

#define NEED_FAULT(f)      (1 + (f))
#define NEED_DETERMINISTIC 100
#define NEED_SET           101 /* a uint64_t replayed only when not 0 */

#define OFF(f)   offsetof(fb_config, f)
#define NAMES(a) a, (int)(sizeof a / sizeof a[0])

static const char *const op_names[] = {"rmw", "debit"};
static const char *const progress_names[] = {"auto", "always", "never"};
static const char *const fence_names[] = {"global", "per-key"};
static const char *const mode_names[] = {"fenced", "write-fenced", "unfenced"};
static const char *const on_held_names[] = {"wait", "skip"};

static const opt opts[] = {
        {"threads", 't', "N[,N...]", K_U32_LIST, OFF(threads_list), OFF(n_threads), 1,
         FB_MAX_THREADS, NULL, 0, "threads", 0, true,
         "worker threads; a list sweeps them in turn (default: online CPUs)", 0, 0, NODEF},
        {"duration", 'd', "D", K_DURATION, OFF(duration_ns), 0, FB_MIN_DURATION_NS, 0, NULL, 0,
         "duration_s", 1e9, true,
         "how long to run; units us ms s m h, bare number = seconds (default {}, at least 1ms)", 0,
         W_STRESS, DEF("10s")},
        {"cycles", 0, "N", K_U64, OFF(cycles), 0, 1, UINT64_MAX, NULL, 0, "cycles", 0, true,
         "each worker stops after N cycles; the run ends when all have (default: no limit)",
         NEED_SET, 0, NODEF},
        {"keys", 'k', "N", K_U32, OFF(keys), 0, 1, 1000000, NULL, 0, "keys", 0, true,
         "leases (accounts) the workers contend for (default {})", 0, 0, DEF("16")},
        {"ttl", 0, "D", K_DURATION, OFF(ttl_ns), 0, FB_MIN_TTL_NS, 0, NULL, 0, "ttl_ms", 1e6, true,
         "lease time to live (default {}, at least 1us)", 0, 0, DEF("10ms")},
        {"mode", 0, "LIST", K_BITS, OFF(modes), 0, 0, 0, NAMES(mode_names), "modes", 0, true,
         "storage disciplines side by side: fenced,write-fenced,unfenced (default {})", 0, 0,
         DEF("all")},
        {"op", 0, "OP", K_ENUM, OFF(op), 0, 0, 0, NAMES(op_names), "op", 0, true,
         "rmw: the client reads and writes balance-1; debit: the store subtracts (default {})", 0,
         0, DEF("rmw")},
        {"fence", 0, "SRC[,SRC]", K_BITS, OFF(fences), 0, 0, 0, NAMES(fence_names), "fence", 0,
         true, "fence source: global (one counter) or per-key; both sweeps them (default {})", 0, 0,
         DEF("global")},
        {"dist", 0, "D[,D...]", K_DIST_LIST, OFF(dist_list), OFF(n_dist), 0, 0, NULL, 0, "dist", 0,
         true,
         "key choice: uniform, zipf:S (hot keys), partitioned (disjoint per worker); a list "
         "sweeps (default {})",
         0, 0, DEF("uniform")},
        {"on-held", 0, "WHAT", K_ENUM, OFF(on_held), 0, 0, 0, NAMES(on_held_names), "on_held", 0,
         true,
         "when the drawn key's lease is held: {} for it (default; with few keys one paused "
         "holder stalls everyone) or skip to another key",
         0, 0, DEF("wait")},
        {"first-fence", 0, "N", K_U64, OFF(first_fence), 0, 1, FB_FENCE_MAX / 2, NULL, 0,
         "first_fence", 0, true, "the first fence minted (default {}; the article uses 33)", 0, 0,
         DEF("1")},
        {"seed", 0, "N", K_U64, OFF(seed), 0, 0, UINT64_MAX, NULL, 0, "seed", 0, true,
         "seed of every random choice (default {}; always printed)", 0, 0, DEF("1")},
        {"faults", 0, "LIST", K_BITS, OFF(faults), 0, 0, 0, NAMES(fb_fault_names), "faults", 0,
         true,
         "faults to inject: pause,skew,delay,crash,renew,retry,server-pause,node-jump,partition,"
         "wire-delay,wire-reset,nemesis (default {}; {if} with a --store other "
         "than inproc). partition, wire-delay and wire-reset strike the wire through "
         "fencebench's own TCP proxy: add proxy=1 to any TCP engine's --lease or --store URL",
         0, 0, DEF_IF("pause", "pause,retry,delay")},
        {"fault-at", 0, "WHERE", K_ENUM, OFF(fault_at), 0, 0, 0, NAMES(fb_fault_at_names),
         "fault_at", 0, true,
         "where pauses strike: any (a signal anywhere), after-read, after-check, takeover (the "
         "next holder is caught after its read too), takeover-read (before the read: the stale "
         "read falls between the next holder's read and write), {} (default: half its "
         "takeovers are takeover-read)",
         NEED_FAULT(FB_FAULT_PAUSE), 0, DEF("mix")},
        {"pause-rate", 0, "R[,R...]", K_RATE_LIST, OFF(pause_rate_list), OFF(n_pause_rate), 0,
         1000000, NULL, 0, "pause_rate", 0, true,
         "pauses per second, 0 for none; a list sweeps (default {})", NEED_FAULT(FB_FAULT_PAUSE), 0,
         DEF("50")},
        {"pause", 0, "D[-D]", K_RANGE, OFF(pause_min_ns), OFF(pause_max_ns), 0, 0, NULL, 0, "pause",
         1e6, true, "pause length or range (default {ttl})", NEED_FAULT(FB_FAULT_PAUSE), 0,
         DEF_TTL(1.5, 3)},
        {"skew-rate", 0, "R", K_RATE, OFF(skew_rate), 0, 0, 1000000, NULL, 0, "skew_rate", 0, true,
         "clock faults per second (default {}); they step the lease service's wall clock "
         "(--lease-clock realtime, the default with skew) or, with --check-lease local, each "
         "client's own",
         NEED_FAULT(FB_FAULT_SKEW), 0, DEF("20")},
        {"skew", 0, "D", K_DURATION, OFF(skew_ns), 0, 0, 0, NULL, 0, "skew_ms", 1e6, true,
         "size of a clock step (default {ttl})", NEED_FAULT(FB_FAULT_SKEW), 0, DEF_TTL(2, 2)},
        {"skew-drift", 0, "F", K_RATE, OFF(skew_drift), 0, 0, 1, NULL, 0, "skew_drift", 0, true,
         "a skewed worker clock runs at 1-F of real time (default {})", NEED_FAULT(FB_FAULT_SKEW),
         0, DEF("0.5")},
        {"delay-rate", 0, "R", K_RATE, OFF(delay_rate), 0, 0, 1000000, NULL, 0, "delay_rate", 0,
         true, "writes held in flight per second (default {})", NEED_FAULT(FB_FAULT_DELAY), 0,
         DEF("20")},
        {"delay", 0, "D[-D]", K_RANGE, OFF(delay_min_ns), OFF(delay_max_ns), 0, 0, NULL, 0, "delay",
         1e6, true, "how long a delayed write is in flight (default {ttl})",
         NEED_FAULT(FB_FAULT_DELAY), 0, DEF_TTL(2, 4)},
        {"crash-rate", 0, "R", K_RATE, OFF(crash_rate), 0, 0, 1000000, NULL, 0, "crash_rate", 0,
         true, "workers dying while holding a lease, per second (default {})",
         NEED_FAULT(FB_FAULT_CRASH), 0, DEF("2")},
        {"renew-rate", 0, "R", K_RATE, OFF(renew_rate), 0, 0, 1000000, NULL, 0, "renew_rate", 0,
         true, "late heartbeats per second (default {})", NEED_FAULT(FB_FAULT_RENEW), 0, DEF("20")},
        {"retry-rate", 0, "R", K_RATE, OFF(retry_rate), 0, 0, 1000000, NULL, 0, "retry_rate", 0,
         true, "lost acknowledgements per second: the write is sent again (default {})",
         NEED_FAULT(FB_FAULT_RETRY), 0, DEF("20")},
        {"server-pause-rate", 0, "R", K_RATE, OFF(server_pause_rate), 0, 0, 1000000, NULL, 0,
         "server_pause_rate", 0, true,
         "server-side pauses per second, each a --pause long (Redis CLIENT PAUSE; default {})",
         NEED_FAULT(FB_FAULT_SERVER_PAUSE), W_STRESS, DEF("2")},
        {"node-jump-rate", 0, "R", K_RATE, OFF(node_jump_rate), 0, 0, 1000000, NULL, 0,
         "node_jump_rate", 0, true,
         "node clock jumps per second, each --skew forward (a Redlock node under libfaketime; "
         "default {})",
         NEED_FAULT(FB_FAULT_NODE_JUMP), W_STRESS, DEF("2")},
        {"partition-rate", 0, "R", K_RATE, OFF(partition_rate), 0, 0, 1000000, NULL, 0,
         "partition_rate", 0, true,
         "partitions per second: one proxied connection (?proxy=1) carries nothing one way or "
         "both for --partition (default {})",
         NEED_FAULT(FB_FAULT_PARTITION), W_STRESS, DEF("5")},
        {"partition", 0, "D[-D]", K_RANGE, OFF(partition_min_ns), OFF(partition_max_ns), 0, 0, NULL,
         0, "partition", 1e6, true, "how long a partition lasts (default {ttl})",
         NEED_FAULT(FB_FAULT_PARTITION), W_STRESS, DEF_TTL(2, 3)},
        {"wire-delay-rate", 0, "R", K_RATE, OFF(wire_delay_rate), 0, 0, 1000000, NULL, 0,
         "wire_delay_rate", 0, true,
         "slow wires per second: for --wire-delay, every byte one proxied connection carries "
         "one way or both arrives that late (default {})",
         NEED_FAULT(FB_FAULT_WIRE_DELAY), W_STRESS, DEF("5")},
        {"wire-delay", 0, "D[-D]", K_RANGE, OFF(wire_delay_min_ns), OFF(wire_delay_max_ns), 0, 0,
         NULL, 0, "wire_delay", 1e6, true, "how late a slow wire's bytes arrive (default {ttl})",
         NEED_FAULT(FB_FAULT_WIRE_DELAY), W_STRESS, DEF_TTL(2, 2)},
        {"wire-reset-rate", 0, "R", K_RATE, OFF(wire_reset_rate), 0, 0, 1000000, NULL, 0,
         "wire_reset_rate", 0, true,
         "resets per second: one proxied connection is torn down with an RST both ways; the "
         "Redis engine and the PostgreSQL store connect again and settle the call in flight "
         "from the store, the others end the run (exit 3) (default {})",
         NEED_FAULT(FB_FAULT_WIRE_RESET), W_STRESS, DEF("5")},
        {"nemesis", 0, "exec:CMD", K_STRING, OFF(nemesis), 0, 0, 0, NULL, 0, "nemesis", 0, true,
         "the nemesis fault runs 'CMD start NAME' when it strikes and 'CMD heal NAME' its "
         "length later: a user's own cluster, faulted by the user's own command",
         NEED_FAULT(FB_FAULT_NEMESIS), W_STRESS, NODEF},
        {"nemesis-names", 0, "LIST", K_STRING, OFF(nemesis_names), 0, 0, 0, NULL, 0,
         "nemesis_names", 0, true,
         "the NAMEs given to --nemesis, one drawn per fault (letters, digits, '-', '_', '.'; "
         "default {})",
         NEED_FAULT(FB_FAULT_NEMESIS), W_STRESS, DEF("nemesis")},
        {"nemesis-rate", 0, "R", K_RATE, OFF(nemesis_rate), 0, 0, 1000000, NULL, 0, "nemesis_rate",
         0, true, "nemesis faults per second, one at a time (default {})",
         NEED_FAULT(FB_FAULT_NEMESIS), W_STRESS, DEF("1")},
        {"nemesis-length", 0, "D[-D]", K_RANGE, OFF(nemesis_min_ns), OFF(nemesis_max_ns), 0, 0,
         NULL, 0, "nemesis_length", 1e6, true,
         "from start to heal of a nemesis fault (default {ttl})", NEED_FAULT(FB_FAULT_NEMESIS),
         W_STRESS, DEF_TTL(2, 3)},
        {"nemesis-timeout", 0, "D", K_DURATION, OFF(nemesis_timeout_ns), 0, 0, 0, NULL, 0,
         "nemesis_timeout_s", 1e9, true,
         "how long each start or heal command may run before the run fails, exit 3 "
         "(default {})",
         NEED_FAULT(FB_FAULT_NEMESIS), W_STRESS, DEF("10s")},
        {"bug", 0, "NAME", K_ENUM, OFF(bug), 0, 0, 0, NAMES(fb_bug_names), "bug", 0, true,
         "plant a bug to prove the checkers catch it: ge-store, two-step, ignore-expiry, "
         "blind-release, trust-client, unregistered-reads, batch-fences, refuse-holder, "
         "apply-refused, stale-read, long-lease, renew-any, control-reads, slow-core, "
         "control-conflict (default "
         "{})",
         0, 0, DEF("none")},
        {"lease", 0, "URL", K_ENGINE, OFF(lease_url), 0, 0, 0, NULL, 0, "lease", 0, true,
         /* and the engines: fb_lease_engines_help */ "where the leases live: ", 0, W_STRESS,
         NODEF},
        {"store", 0, "URL", K_ENGINE, OFF(store_url), 0, 0, 0, NULL, 0, "store", 0, true,
         /* and the engines: fb_store_engines_help */ "where the balances are written: ", 0,
         W_STRESS, NODEF},
        {"adapter-timeout", 0, "D", K_DURATION, OFF(adapter_timeout_ns), 0, 0, 0, NULL, 0,
         "adapter_timeout_s", 1e9, true,
         "with --store exec: or --lease exec:: how long an adapter has to say hello and to "
         "answer each call, "
         "exactly (default 10s, 10s + 2 x the longest pause when pauses are injected)",
         NEED_SET, W_STRESS, NODEF},
        {"client-id", 0, "N", K_U32, OFF(client_id), 0, 1, 65535, NULL, 0, "client_id", 0, true,
         "process N of a shared run on real engines: unique owners, the engines are not reset, "
         "and `fencebench check` verifies the global history afterwards",
         0, W_STRESS, NODEF},
        {"prepare-only", 0, NULL, K_FLAG, OFF(prepare_only), 0, 0, 0, NULL, 0, NULL, 0, false,
         "reset the engines (leases, fences, balances, history) and exit: a shared run's first "
         "step",
         0, W_STRESS, NODEF},
        {"check-lease", 0, "HOW", K_ENUM, OFF(check_lease), 0, 0, 0, NAMES(fb_check_lease_names),
         "check_lease", 0, true,
         "check before writing: {} (default), is-held (ask the lease service), local (own clock "
         "against the TTL)",
         0, 0, DEF("none")},
        {"lease-clock", 0, "CLOCK", K_ENUM, OFF(lease_clock), 0, 0, 0, NAMES(fb_lease_clock_names),
         "lease_clock", 0, true,
         "the lease service's clock: {} (default) or realtime (a wall clock that steps)", 0, 0,
         DEF("monotonic")},
        {"work", 0, "D[-D]", K_RANGE, OFF(work_min_ns), OFF(work_max_ns), 0, 0, NULL, 0, "work",
         1e6, true,
         "time a holder works between its read and its write (default {}; {ttl} when "
         "--faults is skew alone: a clock step catches only a holder at work)",
         0, 0, DEF_TTL_IF("0", 0.05, 0.5)},
        {"plan", 0, "FILE", K_STRING, OFF(plan_path), 0, 0, 0, NULL, 0, "plan", 0, false,
         "replay the fault plan in FILE instead of drawing faults", 0, 0, NODEF},
        {"plan-out", 0, "FILE", K_STRING, OFF(plan_out_path), 0, 0, 0, NULL, 0, NULL, 0, false,
         "write the faults injected (the plan) to FILE", 0, 0, NODEF},
        {"deterministic", 0, NULL, K_FLAG, OFF(deterministic), 0, 0, 0, NULL, 0, "deterministic", 0,
         true, "logical workers on a virtual clock in one thread: same seed, same history", 0, 0,
         NODEF},
        {"seeds", 0, "A..B", K_SEEDS, OFF(seed_lo), OFF(seed_hi), 0, 0, NULL, 0, NULL, 0, false,
         "run seeds A to B, stop at the first fenced violation", 0, W_DET, NODEF},
        {"swarm", 0, NULL, K_FLAG, OFF(swarm), 0, 0, 0, NULL, 0, "swarm", 0, false,
         "with --seeds: each seed also draws its configuration (threads, keys, TTL, faults and "
         "their rates, op, fence, key choice, lease checks) for every option not given; its "
         "replay line gives the whole of it",
         0, W_DET, NODEF},
        {"steps", 0, "N", K_U64, OFF(steps), 0, 1, UINT64_C(1) << 40, NULL, 0, "steps", 0, true,
         "scheduler steps per seed (default {})", NEED_DETERMINISTIC, W_DET, DEF("200000")},
        {"history", 0, "FILE", K_STRING, OFF(history_path), 0, 0, 0, NULL, 0, NULL, 0, false,
         "write the history (every step) to FILE", 0, W_DET, NODEF},
        {"warmup", 0, "D", K_DURATION, OFF(warmup_ns), 0, 0, 0, NULL, 0, "warmup_s", 1e9, true,
         "run this long first without counting throughput or latency", 0, W_STRESS, NODEF},
        {"cpus", 0, "LIST", K_CPUS, OFF(cpus), OFF(n_cpus), 0, 0, NULL, 0, "cpus", 0, true,
         "run workers on these CPUs (taskset list syntax: 0-3,8)", 0, W_STRESS, NODEF},
        {"pin", 0, NULL, K_FLAG, OFF(pin), 0, 0, 0, NULL, 0, "pin", 0, true,
         "pin each worker to one CPU, round robin over --cpus (default: all online)", 0, W_STRESS,
         NODEF},
        {"percentiles", 0, "LIST", K_PCTS, OFF(percentiles), OFF(n_percentiles), 0, 0, NULL, 0,
         NULL, 0, false, "latency percentiles in the table (default {})", 0, 0,
         DEF("50,90,99,99.9,99.99")},
        {"hdr-file", 0, "PREFIX", K_STRING, OFF(hdr_prefix), 0, 0, 0, NULL, 0, NULL, 0, false,
         "write PREFIX.{acquire,write,cycle}.hdr, HdrHistogram percentile text", 0, 0, NODEF},
        {"no-check", 0, NULL, K_FLAG, OFF(no_check), 0, 0, 0, NULL, 0, "no_check", 0, true,
         "ablation: run without the history checker and the lease witness, to measure their "
         "cost (the verdict then says UNCHECKED)",
         0, 0, NODEF},
        {"no-floor", 0, NULL, K_FLAG, OFF(no_floor), 0, 0, 0, NULL, 0, NULL, 0, false,
         "do not measure the floor pipeline after each run", 0, W_STRESS, NODEF},
        {"sample", 0, "N", K_U32, OFF(sample), 0, 1, 1u << 20, NULL, 0, "latency_sample", 0, true,
         "time one cycle in N for the latency histograms (default {}; {if} with a "
         "remote engine)",
         0, 0, DEF_IF("32", "1")},
        {"json", 0, "FILE", K_STRING, OFF(json_path), 0, 0, 0, NULL, 0, NULL, 0, false,
         "also write the JSON document to FILE (a FIFO: last, after results/, waiting 10 s "
         "for a reader)",
         0, 0, NODEF},
        {"results-dir", 'o', "DIR", K_STRING, OFF(results_dir), 0, 0, 0, NULL, 0, "results_dir", 0,
         false, "where the JSON and CSV go (default {}/)", 0, 0, DEF("results")},
        {"progress", 0, "WHEN", K_ENUM, OFF(progress), 0, 0, 0, NAMES(progress_names), NULL, 0,
         false, "progress line on stderr: {} (on a terminal), always, never", 0, 0, DEF("auto")},
        {"quiet", 'q', NULL, K_FLAG, OFF(quiet), 0, 0, 0, NULL, 0, NULL, 0, false,
         "no progress line", 0, 0, NODEF},
        {"help", 'h', NULL, K_HELP, 0, 0, 0, 0, NULL, 0, NULL, 0, false, "this help", 0, 0, NODEF},
        {"version", 'V', NULL, K_VERSION, 0, 0, 0, 0, NULL, 0, NULL, 0, false, "print the version",
         0, 0, NODEF},
};

#define NOPTS (sizeof opts / sizeof opts[0])

/* The table's entry for the option called name (one the code names). */
static const opt *opt_named(const char *name)
{
	for (size_t i = 0; i < NOPTS; i++)
		if (!strcmp(opts[i].name, name))
			return &opts[i];
	abort();
}

static int parse_value(fb_config *cfg, const opt *o, const char *v);

/* A list whose count says whether it was given: a sweep's (settle fills
 * it when none was) */
static bool is_sweep_list(const opt *o)
{
	return o->k == K_U32_LIST || o->k == K_RATE_LIST || o->k == K_DIST_LIST;
}

/* An option's table default (or its condition's, v_if) parsed into cfg as
 * if given. A default the option refuses is the table's error: say it. */
static void apply_default(fb_config *cfg, const opt *o, const char *v)
{
	if (parse_value(cfg, o, v)) {
		fprintf(stderr, "fencebench: the default of --%s, '%s', is refused\n", o->name, v);
		abort();
	}
}

void fb_config_defaults(fb_config *cfg)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	*cfg = (fb_config){
	        .threads = cpus > 0 && cpus < FB_MAX_THREADS ? (uint32_t)cpus : 1,
	        .fence = FB_FENCE_GLOBAL,
	        .initial_balance = INT64_C(1000000000000),
	        .amount = 1,
	};
	for (size_t i = 0; i < NOPTS; i++)
		if (opts[i].def.v && !is_sweep_list(&opts[i]))
			apply_default(cfg, &opts[i], opts[i].def.v);
}

static void *field(fb_config *cfg, const opt *o)
{
	return (char *)cfg + o->off;
}

static const void *cfield(const fb_config *cfg, const opt *o)
{
	return (const char *)cfg + o->off;
}

static int bad(const opt *o, const char *v, const char *why)
{
	fprintf(stderr, "fencebench: --%s: '%s' %s\n", o->name, v, why);
	return -1;
}

int fb_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	if (!*s || *s == '-' || *s == '+')
		return -1;
	for (const char *p = s; *p; p++)
		if (*p < '0' || *p > '9')
			return -1;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_name(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

int fb_list_split(const char *v, char (*items)[FB_LIST_ITEM], int max, int *n, char *why,
                  size_t len)
{
	*n = 0;
	if (!*v) {
		snprintf(why, len, "is an empty list");
		return -1;
	}
	for (const char *p = v;;) {
		const char *comma = strchr(p, ',');
		size_t k = comma ? (size_t)(comma - p) : strlen(p);
		if (!k) {
			snprintf(why, len, "has an empty element (a list is A,B,C)");
			return -1;
		}
		if (k >= FB_LIST_ITEM) {
			snprintf(why, len, "has an element over %d characters", FB_LIST_ITEM - 1);
			return -1;
		}
		if (*n == max) {
			snprintf(why, len, "has too many values (%d at most)", max);
			return -1;
		}
		memcpy(items[*n], p, k);
		items[*n][k] = 0;
		for (int i = 0; i < *n; i++)
			if (!strcmp(items[i], items[*n])) {
				snprintf(why, len, "names '%s' twice", items[*n]);
				return -1;
			}
		(*n)++;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

/* The elements of an option's list, or -1 with its one line said. */
static int split(const opt *o, const char *v, char (*items)[FB_LIST_ITEM], int max, int *n)
{
	char why[160];
	return fb_list_split(v, items, max, n, why, sizeof why) ? bad(o, v, why) : 0;
}

/* A comma list of names into a bit set. "write_fenced" is accepted for
 * "write-fenced" (the JSON's spelling); "all" for every name. */
static int parse_bits(const opt *o, const char *v, uint32_t *out)
{
	uint32_t m = 0;
	char items[32][FB_LIST_ITEM];
	int n;
	if (!strcmp(v, "all")) {
		*out = (1u << o->nnames) - 1;
		return 0;
	}
	if (split(o, v, items, 32, &n))
		return -1;
	for (int j = 0; j < n; j++) {
		char *tok = items[j];
		for (char *c = tok; *c; c++)
			if (*c == '_')
				*c = '-';
		int i = parse_name(tok, o->names, o->nnames);
		if (i < 0) {
			char valid[160] = "";
			for (int k = 0; k < o->nnames; k++)
				snprintf(valid + strlen(valid), sizeof valid - strlen(valid),
				         "%s%s", k ? ", " : "", o->names[k]);
			fprintf(stderr, "fencebench: --%s: unknown name '%s' in '%s' (valid: %s)\n",
			        o->name, tok, v, valid);
			return -1;
		}
		if (m & (1u << i))
			return bad(o, v, "names one twice (write-fenced and write_fenced are one)");
		m |= 1u << i;
	}
	*out = m;
	return 0;
}

static int parse_dist(const char *t, fb_dist *d)
{
	char *end;
	if (!strcmp(t, "uniform")) {
		*d = (fb_dist){FB_DIST_UNIFORM, 0};
		return 0;
	}
	if (!strcmp(t, "partitioned")) {
		*d = (fb_dist){FB_DIST_PARTITIONED, 0};
		return 0;
	}
	if (strncmp(t, "zipf:", 5) || !t[5])
		return -1;
	errno = 0;
	double x = strtod(t + 5, &end);
	if (*end || errno || !isfinite(x) || x <= 0 || x > 10)
		return -1;
	*d = (fb_dist){FB_DIST_ZIPF, x};
	return 0;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Comma lists: sweeps, CPU sets, percentiles. One rule for all: no empty
 * element, none twice (by value too: 50,50.0; CPUs 0-2,1). */
static int parse_list(fb_config *cfg, const opt *o, const char *v)
{
	static char items[1024][FB_LIST_ITEM];
	void *f = field(cfg, o);
	uint32_t *count = (uint32_t *)((char *)cfg + o->off2), n = 0;
	int max = o->k == K_PCTS ? 16 : o->k == K_CPUS ? 1024 : FB_SWEEP_MAX, ni;
	if (split(o, v, items, max, &ni))
		return -1;
	char why[128];
	for (int j = 0; j < ni; j++) {
		char *t = items[j];
		uint64_t u, hi;
		double r;
		char *end;
		switch (o->k) {
		case K_U32_LIST:
			if (fb_parse_u64(t, o->min, o->max, &u)) {
				snprintf(why, sizeof why,
				         "is not a list of whole numbers in %llu..%llu",
				         (unsigned long long)o->min, (unsigned long long)o->max);
				return bad(o, v, why);
			}
			for (uint32_t i = 0; i < n; i++)
				if (((uint32_t *)f)[i] == u)
					return bad(o, v, "names a value twice");
			((uint32_t *)f)[n++] = (uint32_t)u;
			break;
		case K_RATE_LIST:
			errno = 0;
			r = strtod(t, &end);
			if (*end || errno || !isfinite(r) || r < (double)o->min ||
			    r > (double)o->max) {
				snprintf(why, sizeof why, "is not a list of numbers in %llu..%llu",
				         (unsigned long long)o->min, (unsigned long long)o->max);
				return bad(o, v, why);
			}
			for (uint32_t i = 0; i < n; i++)
				if (((double *)f)[i] == r)
					return bad(o, v, "names a value twice");
			((double *)f)[n++] = r;
			break;
		case K_DIST_LIST:
			if (parse_dist(t, &((fb_dist *)f)[n]))
				return bad(o, v,
				           "is not a list of uniform, zipf:S (0 < S <= 10), "
				           "partitioned");
			for (uint32_t i = 0; i < n; i++)
				if (((fb_dist *)f)[i].kind == ((fb_dist *)f)[n].kind &&
				    ((fb_dist *)f)[i].s == ((fb_dist *)f)[n].s)
					return bad(o, v, "names a distribution twice");
			n++;
			break;
		case K_PCTS:
			errno = 0;
			r = strtod(t, &end);
			if (*end || errno || !isfinite(r) || r <= 0 || r > 100)
				return bad(o, v, "is not a list of percentiles in (0, 100]");
			for (uint32_t i = 0; i < n; i++)
				if (((double *)f)[i] == r)
					return bad(o, v, "names a percentile twice");
			((double *)f)[n++] = r;
			break;
		case K_CPUS: {
			char *dash = strchr(t, '-');
			if (dash)
				*dash = 0;
			if (fb_parse_u64(t, 0, 1023, &u) ||
			    (dash && fb_parse_u64(dash + 1, 0, 1023, &hi)) || (dash && hi < u))
				return bad(o, v,
				           "is not a CPU list (e.g. 0-3,8,10-11; CPUs 0..1023)");
			if (!dash)
				hi = u;
			for (; u <= hi; u++) {
				for (uint32_t i = 0; i < n; i++)
					if (((uint32_t *)f)[i] == u)
						return bad(o, v, "names a CPU twice");
				if (n == 1024)
					return bad(o, v, "names too many CPUs");
				((uint32_t *)f)[n++] = (uint32_t)u;
			}
			break;
		}
		default:
			return -1;
		}
	}
	if (o->k == K_PCTS) /* the table's columns, in order */
		qsort(f, n, sizeof(double), by_value);
	*count = n;
	return 0;
}

static int parse_value(fb_config *cfg, const opt *o, const char *v)
{
	void *f = field(cfg, o);
	uint64_t u;
	char why[200];
	switch (o->k) {
	case K_U32:
	case K_U64:
		if (fb_parse_u64(v, o->min, o->max, &u)) {
			snprintf(why, sizeof why, "is not a whole number in %llu..%llu",
			         (unsigned long long)o->min, (unsigned long long)o->max);
			return bad(o, v, why);
		}
		if (o->k == K_U32)
			*(uint32_t *)f = (uint32_t)u;
		else
			*(uint64_t *)f = u;
		return 0;
	case K_DURATION: {
		bool bare = o->off == OFF(duration_ns); /* seconds, as wrk and stress-ng read -d */
		int e = fb_parse_duration(v, bare, (uint64_t *)f);
		if (e)
			return bad(o, v, fb_duration_error(e, bare));
		if (*(uint64_t *)f < o->min) { /* o->min: the smallest that means something */
			char m[32];
			fb_format_duration(m, sizeof m, o->min);
			snprintf(why, sizeof why, "is below %s, the %s", m,
			         o->off == OFF(ttl_ns)
			                 ? "shortest meaningful TTL (below it a lease expires "
			                   "within its own acquire's clock reads)"
			                 : "shortest meaningful run (below it the run is over "
			                   "before its workers have started)");
			return bad(o, v, why);
		}
		return 0;
	}
	case K_RATE: {
		char *end;
		errno = 0;
		double r = strtod(v, &end);
		if (!*v || *end || errno || !isfinite(r) || r < (double)o->min ||
		    r > (double)o->max) {
			snprintf(why, sizeof why, "is not a number in %llu..%llu",
			         (unsigned long long)o->min, (unsigned long long)o->max);
			return bad(o, v, why);
		}
		*(double *)f = r;
		return 0;
	}
	case K_RANGE: {
		char buf[128];
		uint64_t *lo = f, *hi = (uint64_t *)((char *)cfg + o->off2);
		if (strlen(v) >= sizeof buf)
			return bad(o, v, "is too long");
		strcpy(buf, v);
		if (o->off == OFF(work_min_ns) && !strcmp(v, "0")) { /* the default: no work */
			*lo = *hi = 0;
			return 0;
		}
		char *dash = strchr(buf, '-');
		if (dash)
			*dash = 0;
		int e = fb_parse_duration(buf, false, lo);
		if (!e && dash)
			e = fb_parse_duration(dash + 1, false, hi);
		if (e == FB_DURATION_MALFORMED)
			return bad(
			        o, v,
			        "is not a duration or range (e.g. 20ms or 15ms-30ms; units ns us "
			        "ms s m h)");
		if (e)
			return bad(o, v, fb_duration_error(e, false));
		if (!dash)
			*hi = *lo;
		if (*lo > *hi)
			return bad(o, v, "is a range whose minimum exceeds its maximum");
		return 0;
	}
	case K_ENUM: {
		int i = parse_name(v, o->names, o->nnames);
		if (i < 0) {
			snprintf(why, sizeof why, "is not one of");
			for (int k = 0; k < o->nnames; k++)
				snprintf(why + strlen(why), sizeof why - strlen(why), "%s %s",
				         k ? (k + 1 == o->nnames ? " or" : ",") : "", o->names[k]);
			return bad(o, v, why);
		}
		*(int *)f = i;
		return 0;
	}
	case K_BITS:
		return parse_bits(o, v, (uint32_t *)f);
	case K_SEEDS: {
		const char *dots = strstr(v, "..");
		char a[32];
		uint64_t *lo = f, *hi = (uint64_t *)((char *)cfg + o->off2);
		if (!dots || (size_t)(dots - v) >= sizeof a)
			return bad(o, v, "is not a seed range A..B");
		memcpy(a, v, (size_t)(dots - v));
		a[dots - v] = 0;
		if (fb_parse_u64(a, 0, UINT64_MAX, lo) ||
		    fb_parse_u64(dots + 2, 0, UINT64_MAX, hi) || *lo > *hi)
			return bad(o, v, "is not a seed range A..B with A <= B");
		cfg->seed = *lo;
		return 0;
	}
	case K_STRING:
		if (!*v)
			return bad(o, v, "is empty");
		*(const char **)f = v;
		return 0;
	case K_ENGINE: {
		bool lease = o->off == OFF(lease_url);
		if (!*v)
			return bad(o, v, "is empty (inproc, or an engine's URL)");
		/* the scheme only: the URL itself is its engine's to judge,
		 * before the run starts (fb_registry_check_urls) */
		if (lease ? !fb_lease_scheme(v) : !fb_store_scheme(v)) {
			char red[256], reason[320];
			fb_url_redact(v, red, sizeof red);
			snprintf(reason, sizeof reason, "is not an engine; valid: %s",
			         lease ? fb_lease_schemes() : fb_store_schemes());
			return bad(o, red, reason);
		}
		*(const char **)f = strcmp(v, "inproc") == 0 ? NULL : v;
		return 0;
	}
	case K_U32_LIST:
	case K_RATE_LIST:
	case K_DIST_LIST:
	case K_PCTS:
	case K_CPUS:
		return parse_list(cfg, o, v);
	default:
		return 0;
	}
}

/* An option's help with its defaults in their places: {} the default,
 * {if} a condition's, {ttl} the TTL multiple (D x TTL, or D-D x TTL). */
static void help_text(const opt *o, char *buf, size_t len)
{
	char ttl[48];
	if (o->def.ttl_lo == o->def.ttl_hi)
		snprintf(ttl, sizeof ttl, "%g x TTL", o->def.ttl_lo / 20.0);
	else
		snprintf(ttl, sizeof ttl, "%g-%g x TTL", o->def.ttl_lo / 20.0,
		         o->def.ttl_hi / 20.0);
	static const char *const marks[] = {"{}", "{if}", "{ttl}"};
	size_t n = 0;
	for (const char *h = o->help; *h && n + 1 < len;) {
		const char *put = NULL;
		size_t skip = 0;
		for (size_t m = 0; !put && m < sizeof marks / sizeof marks[0]; m++)
			if (!strncmp(h, marks[m], strlen(marks[m]))) {
				put = m == 0 ? o->def.v : m == 1 ? o->def.v_if : ttl;
				skip = strlen(marks[m]);
			}
		if (!put) {
			buf[n++] = *h++;
			continue;
		}
		n += (size_t)snprintf(buf + n, len - n, "%s", put);
		n = n < len ? n : len - 1;
		h += skip;
	}
	buf[n] = 0;
}

static void usage(FILE *out)
{
	fprintf(out,
	        "Usage: fencebench [OPTION]...\n"
	        "       fencebench scenario NAME|FILE   a scripted timeline (see: scenario "
	        "--help)\n"
	        "       fencebench floor [OPTION]...    the raw primitives: the machine's limit\n"
	        "       fencebench plot FILE.json       SVG charts of a run or a sweep\n"
	        "       fencebench compare A.json B.json  two runs side by side\n"
	        "       fencebench check --store URL    re-verify the history a store recorded\n"
	        "       fencebench adapter-test exec:COMMAND  a store adapter's conformance test\n"
	        "       fencebench adapter-test --lease exec:COMMAND  the same for a lease "
	        "adapter\n"
	        "Stress a lease table and three storage disciplines side by side: worker\n"
	        "threads take leases that mint fencing tokens, debit accounts under them while\n"
	        "an injector suspends lease holders past the TTL, and an independent checker\n"
	        "counts the stale writes each store accepted and the updates it lost.\n\n"
	        "Options:\n");
	for (size_t i = 0; i < NOPTS; i++) {
		const opt *o = &opts[i];
		char lhs[64], sh[8] = "    ";
		if (o->short_name)
			snprintf(sh, sizeof sh, "-%c, ", o->short_name);
		snprintf(lhs, sizeof lhs, "%s--%s%s%s", sh, o->name, o->arg ? " " : "",
		         o->arg ? o->arg : "");
		/* an engine option's list is the registry's */
		const char *engines = o->k != K_ENGINE           ? ""
		                      : o->off == OFF(lease_url) ? fb_lease_engines_help()
		                                                 : fb_store_engines_help();
		char help[1024];
		help_text(o, help, sizeof help);
		fprintf(out, "  %-26s %s%s%s\n", lhs,
		        o->where == W_STRESS ? "[threads] "
		        : o->where == W_DET  ? "[deterministic] "
		                             : "",
		        help, engines);
	}
	fprintf(out, "\nOptions marked [threads] apply to a run on real threads only, those "
	             "marked\n[deterministic] to --deterministic only; given to the other, "
	             "they are refused.\n");
	fprintf(out,
	        "\nExit status:\n"
	        "  0  every fenced discipline held: no stale write accepted, no update lost\n"
	        "  1  a fenced discipline accepted a stale write, lost an update or refused\n"
	        "     its rightful holder, the lease service broke its promises, or the\n"
	        "     checker disagreed with the store; wins over 3 when counted before an\n"
	        "     engine died\n"
	        "  2  bad option or value\n"
	        "  3  runtime error (threads, memory, results directory, an engine that\n"
	        "     cannot be reached or died mid-run)\n"
	        "  129, 130, 143  interrupted by SIGHUP, SIGINT, SIGTERM (results so far are\n"
	        "     written; a SIGINT or SIGHUP the process started ignoring stays ignored)\n\n"
	        "Example: fencebench -t 64 -d 60s --pause-rate 40 --pause 15ms-30ms\n");
}

/* Whether the option called name was given. */
static bool given_name(const bool *given, const char *name)
{
	for (size_t i = 0; i < NOPTS; i++)
		if (!strcmp(opts[i].name, name))
			return given[i];
	return false;
}

/* getopt over the table: each value parsed into cfg as it comes, each
 * option given marked in given[]. FB_PARSE_RUN when every one was good. */
static fb_parse read_args(fb_config *cfg, int argc, char **argv, bool *given)
{
	struct option lo[NOPTS + 1];
	char shorts[2 * NOPTS + 2], *sp = shorts;
	*sp++ = ':';
	for (size_t i = 0; i < NOPTS; i++) {
		lo[i] = (struct option){opts[i].name, opts[i].arg ? required_argument : no_argument,
		                        NULL,
		                        opts[i].short_name ? opts[i].short_name : 256 + (int)i};
		if (opts[i].short_name) {
			*sp++ = (char)opts[i].short_name;
			if (opts[i].arg)
				*sp++ = ':';
		}
	}
	*sp = 0;
	lo[NOPTS] = (struct option){0, 0, 0, 0};
	const char *prev[NOPTS];
	opterr = 0;
	optind = 0; /* 0, not 1: glibc then also forgets a half-read option cluster */
	int c;
	while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		if (c == '?' || c == ':') {
			const char *arg = argv[optind - 1];
			const char *eq = strchr(arg, '=');
			const opt *flag = NULL;
			/* --help=foo: a known option that takes no value was
			 * given one (getopt says only its short letter) */
			for (size_t i = 0; c == '?' && eq && !strncmp(arg, "--", 2) && i < NOPTS;
			     i++)
				if (!opts[i].arg &&
				    strlen(opts[i].name) == (size_t)(eq - arg - 2) &&
				    !strncmp(arg + 2, opts[i].name, (size_t)(eq - arg - 2)))
					flag = &opts[i];
			if (flag)
				fprintf(stderr, "fencebench: --%s: takes no value ('%s')\n",
				        flag->name, arg);
			else if (c == ':')
				fprintf(stderr,
				        "fencebench: option '%s' needs a value (see --help)\n",
				        arg);
			else if (optopt)
				fprintf(stderr, "fencebench: unknown option '-%c' (see --help)\n",
				        optopt);
			else
				fprintf(stderr, "fencebench: unknown option '%s' (see --help)\n",
				        arg);
			return FB_PARSE_USAGE;
		}
		const opt *o = NULL;
		for (size_t i = 0; i < NOPTS; i++)
			if ((opts[i].short_name && c == opts[i].short_name) || c == 256 + (int)i)
				o = &opts[i];
		if (!o)
			return FB_PARSE_USAGE;
		/* The last of two would win silently: a sweep is one list
		 * (-t 2,3), a value is given once. A flag twice says the same. */
		if (given[o - opts] && o->arg) {
			fprintf(stderr,
			        "fencebench: --%s: given twice ('%s', then '%s'); give it once%s\n",
			        o->name, prev[o - opts], optarg,
			        o->k >= K_U32_LIST && o->k <= K_DIST_LIST
			                ? " (a sweep is one comma list: A,B)"
			                : "");
			return FB_PARSE_USAGE;
		}
		given[o - opts] = true;
		prev[o - opts] = optarg;
		if (o->k == K_HELP) {
			usage(stdout);
			return FB_PARSE_EXIT0;
		}
		if (o->k == K_VERSION) {
			printf("fencebench %s\n", FB_VERSION);
			return FB_PARSE_EXIT0;
		}
		if (o->k == K_FLAG) {
			*(bool *)field(cfg, o) = true;
			continue;
		}
		if (parse_value(cfg, o, optarg))
			return FB_PARSE_USAGE;
		if (o->k == K_SEEDS)
			cfg->seeds_given = true;
		if (o->off == OFF(sample))
			cfg->sample_given = true;
	}
	if (optind < argc) {
		fprintf(stderr, "fencebench: unexpected argument '%s' (see --help)\n",
		        argv[optind]);
		return FB_PARSE_USAGE;
	}
	return FB_PARSE_RUN;
}

/* Whether option o, a fault's, serves a fault of the run: --pause sizes
 * server pauses too, --skew a node's jump. */
static bool serves_a_fault(const fb_config *cfg, const opt *o)
{
	fb_fault f = (fb_fault)(o->need - 1);
	if (cfg->faults & (1u << f))
		return true;
	if (o->off == OFF(pause_min_ns) && (cfg->faults & (1u << FB_FAULT_SERVER_PAUSE)))
		return true;
	return o->off == OFF(skew_ns) && (cfg->faults & (1u << FB_FAULT_NODE_JUMP));
}

/* An option the run would ignore is refused, never dropped: another
 * driver's, a fault's that is not selected, or one a combination makes
 * moot. 0, or -1 with the line said. */
static int check_scope(const fb_config *cfg, const bool *given)
{
	for (size_t i = 0; i < NOPTS; i++) {
		const opt *o = &opts[i];
		if (!given[i] || !o->need || o->need >= NEED_DETERMINISTIC ||
		    serves_a_fault(cfg, o))
			continue;
		if (cfg->swarm && !given_name(given, "faults"))
			continue; /* each seed's draw takes the option's fault in */
		fprintf(stderr,
		        "fencebench: --%s: its fault, %s, is not among --faults (add it, or "
		        "leave the option out)\n",
		        o->name, fb_fault_names[o->need - 1]);
		return -1;
	}
	if (cfg->swarm && !cfg->seeds_given) {
		fprintf(stderr, "fencebench: --swarm: draws each seed's configuration; give the "
		                "seeds (--seeds A..B)\n");
		return -1;
	}
	if (cfg->seeds_given && given_name(given, "seed")) {
		fprintf(stderr, "fencebench: --seed: --seeds names the seeds already; give one\n");
		return -1;
	}
	if (cfg->quiet && cfg->progress == FB_PROGRESS_ALWAYS) {
		fprintf(stderr, "fencebench: --progress: 'always' and -q (no progress line) "
		                "contradict each other; give one\n");
		return -1;
	}
	for (size_t i = 0; i < NOPTS; i++) {
		const opt *o = &opts[i];
		if (!given[i] || !o->where || o->where == (cfg->deterministic ? W_DET : W_STRESS))
			continue;
		if (o->where == W_STRESS)
			fprintf(stderr,
			        "fencebench: --%s: not for --deterministic, which runs simulated "
			        "workers on a virtual clock with the in-process engine (see "
			        "--help)\n",
			        o->name);
		else
			fprintf(stderr,
			        "fencebench: --%s: only with --deterministic (see --help)\n",
			        o->name);
		return -1;
	}
	return 0;
}

/* An option's default in TTLs, where it was left unset (0: a duration
 * none can give): D, or D-D for a range. */
static void ttl_default(fb_config *cfg, const opt *o)
{
	uint64_t *lo = field(cfg, o),
	         *hi = o->k == K_RANGE ? (uint64_t *)((char *)cfg + o->off2) : lo;
	if (*hi && !o->def.v)
		return;
	*lo = cfg->ttl_ns * o->def.ttl_lo / 20;
	*hi = cfg->ttl_ns * o->def.ttl_hi / 20;
}

/* What the options left unset come to: lists hold their default, the run's
 * scalars start at their first value (a sweep sets them per run), sizes
 * follow the TTL. */
static void settle(fb_config *cfg)
{
	if (!cfg->n_threads) {
		/* deterministic mode: a fixed default, so a bare --seed N gives the
		 * same history on any machine */
		cfg->threads_list[0] = cfg->deterministic ? 8 : cfg->threads;
		cfg->n_threads = 1;
	}
	for (size_t i = 0; i < NOPTS; i++) /* the sweeps none was given */
		if (is_sweep_list(&opts[i]) && opts[i].def.v &&
		    !*(const uint32_t *)((const char *)cfg + opts[i].off2))
			apply_default(cfg, &opts[i], opts[i].def.v);
	cfg->threads = cfg->threads_list[0];
	cfg->pause_rate = cfg->pause_rate_list[0];
	cfg->dist = cfg->dist_list[0];
	cfg->fence = (cfg->fences & (1u << FB_FENCE_GLOBAL)) ? FB_FENCE_GLOBAL : FB_FENCE_PER_KEY;
	/* Sizes left unset follow the TTL. */
	for (size_t i = 0; i < NOPTS; i++)
		if (opts[i].def.ttl_hi && !opts[i].def.v)
			ttl_default(cfg, &opts[i]);
	if (!cfg->seeds_given)
		cfg->seed_lo = cfg->seed_hi = cfg->seed;
	/* as the run decides it: an engine whose calls are round trips */
	bool remote =
	        fb_lease_scheme(cfg->lease_url)->remote || fb_store_scheme(cfg->store_url)->remote;
	/* Two clock reads are nothing beside a round trip: with a remote
	 * engine every cycle is timed unless --sample says otherwise. */
	if (remote && !cfg->sample_given)
		apply_default(cfg, opt_named("sample"), opt_named("sample")->def.v_if);
}

/*
 * Each fault alone bites with its defaults. A clock step matters only to
 * whoever reads the clock: skew acts on the in-process lease service's wall
 * clock (a Redis host's clock that NTP steps forward expires its leases
 * early) unless --lease-clock or --check-lease local says otherwise; with a
 * remote lease service, whose clock is its own, on each client's clock as
 * its local lease check reads it. A step catches a holder only while it is
 * at work under its lease: skew alone gives holders 0.05-0.5 x TTL of work,
 * the newer holder sometimes finishing first.
 */
/* A store that is not fencebench's own is tested where stores break: a
 * resend of an accepted write (an equal token), a write that lands late, a
 * holder paused past its lease. Before the options are scoped: their rates
 * and sizes apply. */
static void store_faults(fb_config *cfg, const bool *given)
{
	if (cfg->store_url && fb_store_scheme(cfg->store_url) &&
	    fb_store_scheme(cfg->store_url) != fb_store_scheme(NULL) &&
	    !given_name(given, "faults") && !cfg->plan_path && !cfg->deterministic) {
		apply_default(cfg, opt_named("faults"), opt_named("faults")->def.v_if);
		cfg->store_faults = true;
	}
}

static void settle_faults(fb_config *cfg, const bool *given)
{
	if (!fb_config_fault(cfg, FB_FAULT_SKEW))
		return;
	bool remote = fb_lease_scheme(cfg->lease_url)->remote;
	if (!given_name(given, "lease-clock") && !given_name(given, "check-lease")) {
		if (remote)
			cfg->check_lease = FB_CHECK_LOCAL;
		else
			cfg->lease_clock = FB_LEASE_CLOCK_REALTIME;
	}
	if (cfg->faults == 1u << FB_FAULT_SKEW && !given_name(given, "work") && !cfg->plan_path) {
		ttl_default(cfg, opt_named("work"));
	}
}

/* Every CPU of --cpus one this process may run on, judged before the run
 * header: a worker refused its CPU would stop the run after it began. */
static int check_cpus(const fb_config *cfg)
{
	cpu_set_t may;
	CPU_ZERO(&may);
	if (!cfg->n_cpus || sched_getaffinity(0, sizeof may, &may))
		return 0;
	for (uint32_t i = 0; i < cfg->n_cpus; i++) {
		uint32_t c = cfg->cpus[i];
		if (c < CPU_SETSIZE && CPU_ISSET(c, &may))
			continue;
		char list[256] = "";
		for (int a = 0; a < CPU_SETSIZE; a++) {
			if (!CPU_ISSET(a, &may) || (a && CPU_ISSET(a - 1, &may)))
				continue;
			int b = a;
			while (b + 1 < CPU_SETSIZE && CPU_ISSET(b + 1, &may))
				b++;
			size_t at = strlen(list);
			if (b > a)
				snprintf(list + at, sizeof list - at, "%s%d-%d", at ? "," : "", a,
				         b);
			else
				snprintf(list + at, sizeof list - at, "%s%d", at ? "," : "", a);
		}
		fprintf(stderr,
		        "fencebench: --cpus: CPU %u is not one this process may run on "
		        "(it may: %s)\n",
		        c, list);
		return -1;
	}
	return 0;
}

/* Combinations no run can honour. 0, or -1 with the line said. */
static int check_combinations(const fb_config *cfg)
{
	if (cfg->adapter_timeout_ns &&
	    (!cfg->store_url || fb_store_scheme(cfg->store_url) != fb_store_scheme("exec:x")) &&
	    (!cfg->lease_url || fb_lease_scheme(cfg->lease_url) != fb_lease_scheme("exec:x"))) {
		fprintf(stderr, "fencebench: --adapter-timeout: an adapter's deadline; this run's "
		                "store and lease service are no adapters (--store exec:COMMAND, "
		                "--lease exec:COMMAND)\n");
		return -1;
	}
	/* a paused worker's call is answered after its pause: a deadline
	 * shorter than that would call a live adapter hung */
	if (cfg->adapter_timeout_ns && fb_config_fault(cfg, FB_FAULT_PAUSE) &&
	    cfg->adapter_timeout_ns < 2 * cfg->pause_max_ns) {
		char d[32], p[32];
		fb_format_duration(d, sizeof d, cfg->adapter_timeout_ns);
		fb_format_duration(p, sizeof p, 2 * cfg->pause_max_ns);
		fprintf(stderr,
		        "fencebench: --adapter-timeout: '%s' is shorter than twice the longest "
		        "--pause (%s): a paused worker's call would read as a hung adapter\n",
		        d, p);
		return -1;
	}
	bool remote =
	        fb_lease_scheme(cfg->lease_url)->remote || fb_store_scheme(cfg->store_url)->remote;
	/* Partitioned means no two workers share a key: with fewer keys than
	 * workers that cannot be, and a run that shared them anyway would
	 * measure contention under a name that says there is none. */
	for (uint32_t d = 0; d < cfg->n_dist; d++) {
		if (cfg->dist_list[d].kind != FB_DIST_PARTITIONED)
			continue;
		for (uint32_t t = 0; t < cfg->n_threads; t++)
			if (cfg->threads_list[t] > cfg->keys) {
				fprintf(stderr,
				        "fencebench: --dist: 'partitioned' gives each of the %u "
				        "workers keys of its own, and -k %u is fewer keys than "
				        "workers (give -k %u or more)\n",
				        cfg->threads_list[t], cfg->keys, cfg->threads_list[t]);
				return -1;
			}
	}
	if (check_cpus(cfg))
		return -1;
	if (fb_config_is_sweep(cfg) && cfg->hdr_prefix) {
		fprintf(stderr, "fencebench: --hdr-file: a sweep has many runs, each with its own "
		                "histograms; run the row you want alone to write its files\n");
		return -1;
	}
	if (fb_config_is_sweep(cfg) && (cfg->plan_path || cfg->plan_out_path)) {
		fprintf(stderr,
		        "fencebench: %s: a plan is one run's faults, by worker and cycle; a sweep "
		        "has many runs (run each row alone to record or replay its plan)\n",
		        cfg->plan_path ? "--plan" : "--plan-out");
		return -1;
	}
	if (fb_config_is_sweep(cfg) && cfg->deterministic) {
		fprintf(stderr, "fencebench: --deterministic sweeps seeds (--seeds), not lists\n");
		return -1;
	}
	if ((cfg->faults & (1u << FB_FAULT_SERVER_PAUSE)) &&
	    (cfg->deterministic || !fb_lease_scheme(cfg->lease_url)->server_pause)) {
		fprintf(stderr,
		        "fencebench: --faults: 'server-pause' needs a lease service that can "
		        "pause: --lease redis://... or redlock://...\n");
		return -1;
	}
	if ((cfg->faults & (1u << FB_FAULT_NODE_JUMP)) &&
	    (cfg->deterministic || !fb_lease_scheme(cfg->lease_url)->node_jump)) {
		fprintf(stderr, "fencebench: --faults: 'node-jump' needs a lease service of "
		                "independent nodes: --lease redlock://...\n");
		return -1;
	}
	uint32_t wire = (1u << FB_FAULT_PARTITION) | (1u << FB_FAULT_WIRE_DELAY) |
	                (1u << FB_FAULT_WIRE_RESET); /* issue 24 */
	if ((cfg->faults & wire) && (cfg->deterministic || !(fb_url_proxied(cfg->lease_url) ||
	                                                     fb_url_proxied(cfg->store_url)))) {
		fprintf(stderr,
		        "fencebench: --faults: '%s' strikes the wire through fencebench's "
		        "proxy: add proxy=1 to a --lease or --store URL "
		        "(redis://127.0.0.1:6379/0?proxy=1)\n",
		        fb_fault_names[(cfg->faults & (1u << FB_FAULT_PARTITION))
		                               ? FB_FAULT_PARTITION
		                       : (cfg->faults & (1u << FB_FAULT_WIRE_DELAY))
		                               ? FB_FAULT_WIRE_DELAY
		                               : FB_FAULT_WIRE_RESET]);
		return -1;
	}
	if (check_nemesis(cfg))
		return -1;
	if (cfg->lease_url && cfg->lease_clock == FB_LEASE_CLOCK_REALTIME) {
		fprintf(stderr, "fencebench: --lease-clock: 'realtime' is the in-process lease "
		                "service's clock; a remote lease service keeps its own\n");
		return -1;
	}
	if (remote && cfg->bug != FB_BUG_NONE) {
		fprintf(stderr,
		        "fencebench: --bug: '%s' is planted in the in-process engine only, "
		        "not with --lease/--store\n",
		        fb_bug_names[cfg->bug]);
		return -1;
	}
	if (!remote && (cfg->client_id || cfg->prepare_only)) {
		fprintf(stderr,
		        "fencebench: %s: the in-process engine is not shared and keeps "
		        "nothing between runs; give --lease and/or --store URLs\n",
		        cfg->prepare_only ? "--prepare-only" : "--client-id");
		return -1;
	}
	return 0;
}

/* Issue 24: the nemesis fault and its command come together; the names
 * are words a shell passes through untouched. 0, or -1 with the line said. */
static int check_nemesis(const fb_config *cfg)
{
	bool on = cfg->faults & (1u << FB_FAULT_NEMESIS);
	if (on && !cfg->nemesis) {
		fprintf(stderr, "fencebench: --faults: 'nemesis' runs a command of yours: give it "
		                "as --nemesis exec:COMMAND\n");
		return -1;
	}
	if (cfg->nemesis && (strncmp(cfg->nemesis, "exec:", 5) || !cfg->nemesis[5])) {
		fprintf(stderr, "fencebench: --nemesis: '%s': expected exec:COMMAND\n",
		        cfg->nemesis);
		return -1;
	}
	const char *n = cfg->nemesis_names;
	size_t len = n ? strlen(n) : 0;
	bool ok = len > 0 && len < 1024 && n[0] != ',' && n[len - 1] != ',' && !strstr(n, ",,");
	for (size_t i = 0; ok && i < len; i++)
		ok = strchr("-_.,", n[i]) || (n[i] >= '0' && n[i] <= '9') ||
		     (n[i] >= 'a' && n[i] <= 'z') || (n[i] >= 'A' && n[i] <= 'Z');
	if (n && !ok) {
		fprintf(stderr,
		        "fencebench: --nemesis-names: '%s': expected NAME[,NAME...] of letters, "
		        "digits, '-', '_' and '.'\n",
		        n);
		return -1;
	}
	return 0;
}

/* What read_args left in cfg, made a run's configuration: the given[]
 * options scoped, the rest settled, the combination checked. */
static fb_parse finish(fb_config *cfg, const bool *given)
{
	store_faults(cfg, given);
	if (check_scope(cfg, given))
		return FB_PARSE_USAGE;
	settle(cfg);
	settle_faults(cfg, given);
	return check_combinations(cfg) ? FB_PARSE_USAGE : FB_PARSE_RUN;
}

fb_parse fb_config_parse(fb_config *cfg, int argc, char **argv)
{
	bool given[NOPTS] = {false};
	cfg->argc = argc;
	cfg->argv = argv;
	fb_parse p = read_args(cfg, argc, argv, given);
	return p == FB_PARSE_RUN ? finish(cfg, given) : p;
}

/* ---- --swarm: each seed draws its configuration ---------------------------------- */

/* What a swarm seed draws from, each menu a spread a user would try by hand:
 * one worker to many, one key to many (a hot key, then none), TTLs a
 * hundredfold apart, fences past 2^32, every fault the simulator runs. */
static const char *const sw_threads[] = {"1", "2", "3", "4", "6", "8", "16", "32", "64"};
static const char *const sw_keys[] = {"1", "2", "3", "4", "8", "16", "64", "1024"};
static const char *const sw_ttl[] = {"1ms", "3ms", "10ms", "30ms", "100ms"};
static const char *const sw_dist[] = {"uniform", "zipf:0.99", "zipf:1.5", "partitioned"};
static const char *const sw_first[] = {"1", "33", "4294967000"};
static const char *const sw_check[] = {"none", "none", "is-held", "local"};
static const char *const sw_rate[] = {"5", "20", "50", "200"};
static const char *const sw_crash[] = {"1", "2", "10"};
/* the faults the simulator runs, in fb_fault order */
static const fb_fault sw_faults[] = {FB_FAULT_PAUSE, FB_FAULT_SKEW,  FB_FAULT_DELAY,
                                     FB_FAULT_CRASH, FB_FAULT_RENEW, FB_FAULT_RETRY};
static const char *const sw_rate_opt[] = {"pause-rate", "skew-rate",  "delay-rate",
                                          "crash-rate", "renew-rate", "retry-rate"};

#define SW_N(a) (sizeof a / sizeof a[0])

/* One drawn value, parsed as if typed, unless the user typed the option:
 * the user's value stands. The draw is made either way, so pinning one
 * option leaves the others of a seed as they were. */
static int sw_set(fb_config *cfg, bool *given, const char *name, const char *v)
{
	for (size_t i = 0; i < NOPTS; i++) {
		if (strcmp(opts[i].name, name))
			continue;
		if (given[i] || !v)
			return 0;
		given[i] = true;
		return parse_value(cfg, &opts[i], v);
	}
	return -1;
}

static const char *sw_pick(uint64_t *x, const char *const *v, size_t n)
{
	return v[fb_splitmix64(x) % n];
}

/* Whether the user gave an option of fault f (its rate, its sizes): then
 * f is among the faults whatever the draw, so the option is not moot. */
static bool sw_fault_given(const bool *given, fb_fault f)
{
	for (size_t i = 0; i < NOPTS; i++)
		if (given[i] && opts[i].need == (int)NEED_FAULT(f))
			return true;
	return false;
}

static int swarm_draw(fb_config *cfg, bool *given, uint64_t seed)
{
	uint64_t x = seed ^ UINT64_C(0x5357415252554e53); /* apart from the schedule's */
	const char *threads = sw_pick(&x, sw_threads, SW_N(sw_threads));
	const char *keys = sw_pick(&x, sw_keys, SW_N(sw_keys));
	const char *ttl = sw_pick(&x, sw_ttl, SW_N(sw_ttl));
	const char *op = fb_splitmix64(&x) & 1 ? "debit" : "rmw";
	const char *fence = fb_splitmix64(&x) & 1 ? "per-key" : "global";
	const char *dist = sw_pick(&x, sw_dist, SW_N(sw_dist));
	const char *on_held = fb_splitmix64(&x) & 1 ? "skip" : "wait";
	const char *first = sw_pick(&x, sw_first, SW_N(sw_first));
	const char *check = sw_pick(&x, sw_check, SW_N(sw_check));
	const char *clock = fb_splitmix64(&x) & 1 ? "realtime" : "monotonic";
	const char *at = sw_pick(&x, fb_fault_at_names, FB_AT_COUNT);
	const char *rate[SW_N(sw_faults)];
	bool on[SW_N(sw_faults)];
	char faults[128] = "";
	for (size_t i = 0; i < SW_N(sw_faults); i++) {
		rate[i] = sw_faults[i] == FB_FAULT_CRASH ? sw_pick(&x, sw_crash, SW_N(sw_crash))
		                                         : sw_pick(&x, sw_rate, SW_N(sw_rate));
		on[i] = fb_splitmix64(&x) & 1;
	}
	size_t lone = fb_splitmix64(&x) % SW_N(sw_faults); /* when the coins chose none */
	bool any = false;
	for (size_t i = 0; i < SW_N(sw_faults); i++)
		any |= on[i];
	on[lone] |= !any;
	for (size_t i = 0; i < SW_N(sw_faults); i++) /* the user's fault options bring theirs */
		on[i] |= sw_fault_given(given, sw_faults[i]);
	for (size_t i = 0; i < SW_N(sw_faults); i++)
		if (on[i])
			snprintf(faults + strlen(faults), sizeof faults - strlen(faults), "%s%s",
			         faults[0] ? "," : "", fb_fault_names[sw_faults[i]]);
	if (sw_set(cfg, given, "threads", threads) || sw_set(cfg, given, "keys", keys) ||
	    sw_set(cfg, given, "ttl", ttl) || sw_set(cfg, given, "op", op) ||
	    sw_set(cfg, given, "fence", fence) || sw_set(cfg, given, "on-held", on_held) ||
	    sw_set(cfg, given, "first-fence", first) || sw_set(cfg, given, "check-lease", check) ||
	    sw_set(cfg, given, "lease-clock", clock) || sw_set(cfg, given, "faults", faults))
		return -1;
	/* disjoint keys need a key a worker at least */
	uint32_t workers = cfg->n_threads ? cfg->threads_list[0] : 8;
	if (!strcmp(dist, "partitioned") && cfg->keys < workers)
		dist = "uniform";
	if (sw_set(cfg, given, "dist", dist))
		return -1;
	for (size_t i = 0; i < SW_N(sw_faults); i++)
		if ((cfg->faults & (1u << sw_faults[i])) &&
		    sw_set(cfg, given, sw_rate_opt[i], rate[i]))
			return -1;
	if ((cfg->faults & (1u << FB_FAULT_PAUSE)) && sw_set(cfg, given, "fault-at", at))
		return -1;
	return 0;
}

fb_parse fb_config_swarm(const fb_config *base, uint64_t seed, fb_config *row)
{
	bool given[NOPTS] = {false};
	fb_config_defaults(row);
	if (read_args(row, base->argc, base->argv, given) != FB_PARSE_RUN)
		return FB_PARSE_USAGE;
	row->swarm = row->seeds_given = false;
	row->seed = seed;
	if (swarm_draw(row, given, seed))
		return FB_PARSE_USAGE;
	return finish(row, given);
}

double fb_config_rate(const fb_config *cfg, fb_fault f)
{
	switch (f) {
	case FB_FAULT_PAUSE:
		return cfg->pause_rate;
	case FB_FAULT_SKEW:
		return cfg->skew_rate;
	case FB_FAULT_DELAY:
		return cfg->delay_rate;
	case FB_FAULT_CRASH:
		return cfg->crash_rate;
	case FB_FAULT_RENEW:
		return cfg->renew_rate;
	case FB_FAULT_RETRY:
		return cfg->retry_rate;
	case FB_FAULT_SERVER_PAUSE:
		return cfg->server_pause_rate;
	case FB_FAULT_NODE_JUMP: /* issue 14 */
		return cfg->node_jump_rate;
	case FB_FAULT_PARTITION: /* issue 24 */
		return cfg->partition_rate;
	case FB_FAULT_WIRE_DELAY:
		return cfg->wire_delay_rate;
	case FB_FAULT_WIRE_RESET:
		return cfg->wire_reset_rate;
	case FB_FAULT_NEMESIS:
		return cfg->nemesis_rate;
	default:
		return 0;
	}
}

bool fb_config_is_sweep(const fb_config *cfg)
{
	return cfg->n_threads > 1 || cfg->n_pause_rate > 1 || cfg->n_dist > 1 ||
	       cfg->fences == ((1u << FB_FENCE_GLOBAL) | (1u << FB_FENCE_PER_KEY));
}

void fb_dist_format(char *buf, size_t len, const fb_dist *d)
{
	if (d->kind == FB_DIST_ZIPF)
		snprintf(buf, len, "zipf:%g", d->s);
	else
		snprintf(buf, len, "%s",
		         d->kind == FB_DIST_PARTITIONED ? "partitioned" : "uniform");
}

/* An option's value as the command line spells it; false if it has none
 * to show (flags that are off, unset strings). */
static bool value_text(const fb_config *cfg, const opt *o, char *v, size_t len)
{
	const void *f = cfield(cfg, o);
	char a[32], b[32];
	switch (o->k) {
	case K_U32:
		snprintf(v, len, "%u", *(const uint32_t *)f);
		return o->off != OFF(client_id) || cfg->client_id; /* 0: alone, not replayed */
	case K_U64:
		snprintf(v, len, "%llu", (unsigned long long)*(const uint64_t *)f);
		return true;
	case K_DURATION:
		fb_format_duration(v, len, *(const uint64_t *)f);
		return *(const uint64_t *)f != 0; /* an unset --warmup is not replayed */
	case K_RATE:
		snprintf(v, len, "%g", *(const double *)f);
		return true;
	case K_RANGE: {
		uint64_t lo = *(const uint64_t *)f,
		         hi = *(const uint64_t *)((const char *)cfg + o->off2);
		if (!hi)
			return false;
		fb_format_duration(a, sizeof a, lo);
		fb_format_duration(b, sizeof b, hi);
		if (lo == hi)
			snprintf(v, len, "%s", a);
		else
			snprintf(v, len, "%s-%s", a, b);
		return true;
	}
	case K_ENUM:
		snprintf(v, len, "%s", o->names[*(const int *)f]);
		return o->off != OFF(bug) || cfg->bug != FB_BUG_NONE; /* no bug: not replayed */
	case K_BITS: {
		uint32_t m = *(const uint32_t *)f;
		v[0] = 0;
		for (int k = 0; k < o->nnames; k++)
			if (m & (1u << k))
				snprintf(v + strlen(v), len - strlen(v), "%s%s", v[0] ? "," : "",
				         o->names[k]);
		return true;
	}
	case K_STRING:
		if (!*(const char *const *)f)
			return false;
		snprintf(v, len, "%s", *(const char *const *)f);
		return true;
	case K_ENGINE: /* never a password in the output */
		if (!*(const char *const *)f)
			return false;
		fb_url_redact(*(const char *const *)f, v, len);
		return true;
	case K_FLAG:
		return *(const bool *)f;
	case K_U32_LIST:
	case K_RATE_LIST:
	case K_DIST_LIST:
	case K_CPUS: {
		uint32_t n = *(const uint32_t *)((const char *)cfg + o->off2);
		v[0] = 0;
		for (uint32_t i = 0; i < n; i++) {
			char one[64];
			if (o->k == K_U32_LIST || o->k == K_CPUS)
				snprintf(one, sizeof one, "%u", ((const uint32_t *)f)[i]);
			else if (o->k == K_RATE_LIST)
				snprintf(one, sizeof one, "%g", ((const double *)f)[i]);
			else
				fb_dist_format(one, sizeof one, &((const fb_dist *)f)[i]);
			snprintf(v + strlen(v), len - strlen(v), "%s%s", i ? "," : "", one);
		}
		return n > 0;
	}
	default:
		return false;
	}
}

/* v as one shell word: as it is if nothing in it is special to a shell,
 * else in single quotes (an exec:COMMAND, a libpq conninfo hold spaces). */
static void shell_word(const char *v, char *out, size_t len)
{
	if (!*v || strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	                     "_@%+=:,./-") != strlen(v)) {
		size_t o = 0;
		for (const char *p = v; o + 6 < len; p++) {
			if (p == v || !*p)
				out[o++] = '\'';
			if (!*p)
				break;
			if (*p == '\'') /* close, an escaped quote, reopen */
				o += (size_t)snprintf(out + o, len - o, "'\\''");
			else
				out[o++] = *p;
		}
		out[o] = 0;
		return;
	}
	snprintf(out, len, "%s", v);
}

void fb_config_replay(const fb_config *cfg, char *buf, size_t len)
{
	size_t at = (size_t)snprintf(buf, len, "fencebench");
	for (size_t i = 0; i < NOPTS && at < len; i++) {
		const opt *o = &opts[i];
		char v[200];
		if (!o->replay || !value_text(cfg, o, v, sizeof v))
			continue;
		if (o->need == NEED_DETERMINISTIC && !cfg->deterministic)
			continue;
		if (o->where && o->where != (cfg->deterministic ? W_DET : W_STRESS))
			continue; /* the other driver's: this one would refuse it */
		if (o->need == NEED_SET && !*(const uint64_t *)cfield(cfg, o))
			continue;
		uint32_t needs = o->need && o->need < NEED_DETERMINISTIC ? 1u << (o->need - 1) : 0;
		if (o->off == OFF(pause_min_ns)) /* a server pause is --pause long too */
			needs |= 1u << FB_FAULT_SERVER_PAUSE;
		if (o->off == OFF(skew_ns)) /* issue 14: a node jump is --skew long */
			needs |= 1u << FB_FAULT_NODE_JUMP;
		if (needs && !(cfg->faults & needs))
			continue;
		char w[420];
		shell_word(v, w, sizeof w);
		if (o->k == K_FLAG)
			at += (size_t)snprintf(buf + at, len - at, " --%s", o->name);
		else
			at += (size_t)snprintf(buf + at, len - at, " --%s %s", o->name, w);
	}
}

void fb_config_visit(const fb_config *cfg, const fb_config_visitor *vis, void *ctx)
{
	for (size_t i = 0; i < NOPTS; i++) {
		const opt *o = &opts[i];
		if (!o->json)
			continue;
		const void *f = cfield(cfg, o);
		char key[64];
		switch (o->k) {
		case K_U32:
			vis->integer(ctx, o->json, *(const uint32_t *)f);
			break;
		case K_U64:
			vis->integer(ctx, o->json, *(const uint64_t *)f);
			break;
		case K_DURATION:
			vis->number(ctx, o->json, (double)*(const uint64_t *)f / o->json_unit);
			break;
		case K_RATE:
			vis->number(ctx, o->json, *(const double *)f);
			break;
		case K_RANGE:
			snprintf(key, sizeof key, "%s_min_ms", o->json);
			vis->number(ctx, key, (double)*(const uint64_t *)f / o->json_unit);
			snprintf(key, sizeof key, "%s_max_ms", o->json);
			vis->number(ctx, key,
			            (double)*(const uint64_t *)((const char *)cfg + o->off2) /
			                    o->json_unit);
			break;
		case K_ENUM:
			vis->string(ctx, o->json, o->names[*(const int *)f]);
			break;
		case K_BITS: {
			const char *names[32];
			int n = 0;
			for (int k = 0; k < o->nnames; k++)
				if (*(const uint32_t *)f & (1u << k))
					names[n++] = o->names[k];
			if (o->off == OFF(fences) && n == 1) /* "fence": one source is a string */
				vis->string(ctx, o->json, names[0]);
			else
				vis->strings(ctx, o->json, names, n);
			break;
		}
		case K_STRING:
			vis->string(ctx, o->json, *(const char *const *)f);
			break;
		case K_ENGINE: {
			char red[512] = "inproc";
			if (*(const char *const *)f)
				fb_url_redact(*(const char *const *)f, red, sizeof red);
			vis->string(ctx, o->json, red);
			break;
		}
		case K_FLAG:
			vis->boolean(ctx, o->json, *(const bool *)f);
			break;
		case K_U32_LIST:
		case K_RATE_LIST: {
			/* one value: a number (the fixed names are numbers); more: a list */
			uint32_t n = *(const uint32_t *)((const char *)cfg + o->off2);
			double vals[FB_SWEEP_MAX];
			for (uint32_t j = 0; j < n; j++)
				vals[j] = o->k == K_U32_LIST ? ((const uint32_t *)f)[j]
				                             : ((const double *)f)[j];
			if (n == 1 && o->k == K_U32_LIST)
				vis->integer(ctx, o->json, (uint64_t)vals[0]);
			else if (n == 1)
				vis->number(ctx, o->json, vals[0]);
			else
				vis->numbers(ctx, o->json, vals, (int)n);
			break;
		}
		case K_CPUS: { /* the CPUs given; none: every online CPU */
			uint32_t n = *(const uint32_t *)((const char *)cfg + o->off2);
			double vals[1024];
			for (uint32_t j = 0; j < n; j++)
				vals[j] = ((const uint32_t *)f)[j];
			vis->numbers(ctx, o->json, vals, (int)n);
			break;
		}
		case K_DIST_LIST: {
			uint32_t n = *(const uint32_t *)((const char *)cfg + o->off2);
			char text[FB_SWEEP_MAX][64];
			const char *names[FB_SWEEP_MAX];
			for (uint32_t j = 0; j < n; j++) {
				fb_dist_format(text[j], sizeof text[j], &((const fb_dist *)f)[j]);
				names[j] = text[j];
			}
			if (n == 1)
				vis->string(ctx, o->json, names[0]);
			else
				vis->strings(ctx, o->json, names, (int)n);
			break;
		}
		default:
			break;
		}
	}
	vis->integer(ctx, "initial_balance", (uint64_t)cfg->initial_balance);
	vis->integer(ctx, "debit_amount", (uint64_t)cfg->amount);
}
