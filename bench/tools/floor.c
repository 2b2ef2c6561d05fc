#define _GNU_SOURCE
#include "floor.h"
#include "outfile.h"
#include "output.h"

#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "clock.h"
#include "feed.h"
#include "options.h"
#include "prng.h"

#if defined(__GNUC__)
#define FLOOR_INLINE static inline __attribute__((always_inline))
#else
#define FLOOR_INLINE static inline
#endif

/* fetch_adds between two looks at the stop flag */
#define FLOOR_BATCH 8
/* pauses on a held slot before a yield */
#define FLOOR_SPINS 16
/* the CLI's bounds (the stress run's) */
#define FLOOR_MAX_KEYS   1000000
#define FLOOR_MAX_COUNTS 32
#define FLOOR_SEED       1

static const char *const prim_names[FB_FLOOR_PRIMS] = {"fetch_add", "pipeline-global",
                                                       "pipeline-per-key", "mutex"};
/* The JSON row's key of each primitive. */
static const char *const prim_keys[FB_FLOOR_PRIMS] = {"fetch_add_ops_s", "pipeline_global_ops_s",
                                                      "pipeline_per_key_ops_s", "mutex_ops_s"};

const char *fb_floor_name(fb_floor_prim p)
{
	return (unsigned)p < FB_FLOOR_PRIMS ? prim_names[p] : "?";
}

double fb_floor_rate(const fb_floor_result *r, fb_floor_prim p)
{
	switch (p) {
	case FB_FLOOR_FETCH_ADD:
		return r->fetch_add_ops_s;
	case FB_FLOOR_PIPELINE_GLOBAL:
		return r->pipeline_global_ops_s;
	case FB_FLOOR_PIPELINE_PER_KEY:
		return r->pipeline_per_key_ops_s;
	case FB_FLOOR_MUTEX:
		return r->mutex_ops_s;
	default:
		return 0;
	}
}

static void set_rate(fb_floor_result *r, fb_floor_prim p, double v)
{
	double *f[FB_FLOOR_PRIMS] = {&r->fetch_add_ops_s, &r->pipeline_global_ops_s,
	                             &r->pipeline_per_key_ops_s, &r->mutex_ops_s};
	*f[p] = v;
}

/*
 * A key of the pipelines: the lease slot's word (lo = fence << 16 | owner,
 * hi = 0: no expiry, the floor reads no clock) and the store record's word
 * (lo = balance, hi = last accepted fence), each on its own pair of lines
 * as in lease.c and store.c. The fence stays in the slot after a release,
 * so the per-key source needs no other memory.
 */
typedef struct floor_key {
	alignas(FB_PAD_LINE) fb_atomic_u128 slot;
	alignas(FB_PAD_LINE) fb_atomic_u128 rec;
} floor_key;

/* A key of the mutex row: plain fields under the key's lock. */
typedef struct floor_lock {
	alignas(FB_PAD_LINE) pthread_mutex_t m;
	uint64_t gen;
	int64_t balance;
	uint64_t last_fence;
} floor_lock;

enum { GO_WAIT, GO_RUN, GO_ABORT };

typedef struct floor_shared {
	/* the fence counter of the global pipeline, the only word of the
	 * fetch_add row: every op writes it, so it is alone on its lines */
	alignas(FB_PAD_LINE) _Atomic uint64_t counter;
	/* read by every thread on every op, written once: its own lines */
	alignas(FB_PAD_LINE) atomic_bool stop;
	/* the start gate, touched only before the clock starts */
	alignas(FB_PAD_LINE) _Atomic uint32_t ready;
	atomic_int go;
	fb_floor_prim prim;
	uint32_t keys;
	floor_key *key;
	floor_lock *lock;
} floor_shared;

/* Each thread's own, padded: only it writes here until it is joined. */
typedef struct floor_thread {
	alignas(FB_PAD_LINE) fb_counter ops; /* stored once, when the thread stops */
	uint64_t sink;                       /* fetch_add results, so none is dead */
	fb_prng prng;
	uint16_t owner; /* 1..threads */
	floor_shared *sh;
	uint64_t *done, *max_fence; /* tally: per key */
} floor_thread;

static inline bool stopped(floor_shared *sh)
{
	return atomic_load_explicit(&sh->stop, memory_order_relaxed);
}

static void fetch_add_loop(floor_thread *t)
{
	floor_shared *sh = t->sh;
	uint64_t n = 0, acc = 0;
	while (!stopped(sh)) {
		for (int i = 0; i < FLOOR_BATCH; i++)
			acc += atomic_fetch_add_explicit(&sh->counter, 1, memory_order_relaxed);
		n += FLOOR_BATCH;
	}
	t->sink = acc;
	fb_counter_add(&t->ops, n);
}

static inline void backoff(unsigned *spins)
{
	if (++*spins < FLOOR_SPINS) {
		fb_cpu_relax();
	} else {
		*spins = 0;
		sched_yield();
	}
}

/*
 * The bare pipeline, one source for the four loops that instantiate it
 * (global or per-key fences, with or without the tallies): with constant
 * flags the compiler keeps only one path, so the measured loop holds the
 * PRNG draw, three loads, three CASes (plus the mint's fetch_add) and the
 * stop flag. The memory orders are those lease.c and store.c use, so the
 * floor prices what the core pays.
 */
FLOOR_INLINE void pipeline_loop(floor_thread *t, bool global, bool tally)
{
	floor_shared *sh = t->sh;
	const uint64_t me = t->owner;
	uint64_t n = 0;
	while (!stopped(sh)) {
		uint32_t k = fb_prng_below(&t->prng, sh->keys);
		floor_key *key = &sh->key[k];
		/* acquire: as in lease.c, the global mint below relies on the CAS
		 * that installed this word happening-before our fetch_add. */
		fb_u128 cur = atomic_load_explicit(&key->slot, memory_order_acquire);
		fb_u128 held;
		uint64_t fence;
		unsigned spins = 0;
		for (;;) {
			if ((cur.lo & 0xffff) == 0) {
				uint64_t prev = cur.lo >> 16;
				if (global) {
					fence = atomic_fetch_add_explicit(&sh->counter, 1,
					                                  memory_order_relaxed);
					if (fence <= prev)
						continue; /* lease.c's guard; never taken */
				} else {
					fence = prev + 1;
				}
				held = (fb_u128){fence << 16 | me, 0};
				/* acq_rel: release publishes the lease; acquire (also on
				 * failure) keeps the mint's ordering for the retry. */
				if (atomic_compare_exchange_strong_explicit(&key->slot, &cur, held,
				                                            memory_order_acq_rel,
				                                            memory_order_acquire))
					break;
				continue;
			}
			if (stopped(sh))
				goto out; /* nothing held: leave */
			backoff(&spins);
			/* acquire: for the mint, as above */
			cur = atomic_load_explicit(&key->slot, memory_order_acquire);
		}
		/* acquire: the fenced write decides on the previous holder's
		 * record, as store.c's does. */
		fb_u128 rec = atomic_load_explicit(&key->rec, memory_order_acquire);
		while (fence > rec.hi) {
			fb_u128 next = {rec.lo - 1, fence};
			/* acq_rel: published to the next holder, decided on what we
			 * acquired (store.c's write). */
			if (atomic_compare_exchange_weak_explicit(&key->rec, &rec, next,
			                                          memory_order_acq_rel,
			                                          memory_order_acquire))
				break;
		}
		/* release: the write above is ordered before the next acquire
		 * that sees the slot free. Only the holder moves a held slot, so
		 * this cannot fail; if it did, the slot stays held and the
		 * invariant tests see it. */
		(void)atomic_compare_exchange_strong_explicit(
		        &key->slot, &held, ((fb_u128){fence << 16, 0}), memory_order_release,
		        memory_order_relaxed);
		n++;
		if (tally) {
			t->done[k]++;
			if (fence > t->max_fence[k])
				t->max_fence[k] = fence;
		}
	}
out:
	fb_counter_add(&t->ops, n);
}

FLOOR_INLINE void mutex_loop(floor_thread *t, bool tally)
{
	floor_shared *sh = t->sh;
	uint64_t n = 0;
	while (!stopped(sh)) {
		uint32_t k = fb_prng_below(&t->prng, sh->keys);
		floor_lock *l = &sh->lock[k];
		pthread_mutex_lock(&l->m);
		uint64_t fence = ++l->gen;
		if (fence > l->last_fence) {
			l->balance--;
			l->last_fence = fence;
		}
		pthread_mutex_unlock(&l->m);
		n++;
		if (tally) {
			t->done[k]++;
			if (fence > t->max_fence[k])
				t->max_fence[k] = fence;
		}
	}
	fb_counter_add(&t->ops, n);
}

static void *floor_thread_main(void *arg)
{
	floor_thread *t = arg;
	floor_shared *sh = t->sh;
	/* Relaxed throughout the gate: everything a thread reads was written
	 * before pthread_create, and the main thread reads results after
	 * pthread_join; the flags only say when. */
	atomic_fetch_add_explicit(&sh->ready, 1, memory_order_relaxed);
	int go;
	while ((go = atomic_load_explicit(&sh->go, memory_order_relaxed)) == GO_WAIT)
		sched_yield();
	if (go != GO_RUN)
		return NULL;
	bool tally = t->done != NULL;
	switch (sh->prim) {
	case FB_FLOOR_FETCH_ADD:
		fetch_add_loop(t);
		break;
	case FB_FLOOR_PIPELINE_GLOBAL:
		tally ? pipeline_loop(t, true, true) : pipeline_loop(t, true, false);
		break;
	case FB_FLOOR_PIPELINE_PER_KEY:
		tally ? pipeline_loop(t, false, true) : pipeline_loop(t, false, false);
		break;
	default:
		tally ? mutex_loop(t, true) : mutex_loop(t, false);
		break;
	}
	return NULL;
}

static void free_parts(floor_shared *sh, floor_thread *th, uint32_t threads)
{
	if (th)
		for (uint32_t i = 0; i < threads; i++) {
			free(th[i].done);
			free(th[i].max_fence);
		}
	if (sh && sh->lock)
		for (uint32_t k = 0; k < sh->keys; k++)
			pthread_mutex_destroy(&sh->lock[k].m);
	if (sh) {
		free(sh->key);
		free(sh->lock);
	}
	free(sh);
	free(th);
}

void fb_floor_run_free(fb_floor_run *r)
{
	if (!r)
		return;
	free(r->thread_ops);
	free(r->key);
	r->thread_ops = NULL;
	r->key = NULL;
}

/* The state the run left behind, read after every thread was joined. */
static void collect(floor_shared *sh, floor_thread *th, fb_floor_run *out)
{
	const fb_floor_spec *s = &out->spec;
	for (uint32_t i = 0; i < s->threads; i++) {
		out->thread_ops[i] = fb_counter_get(&th[i].ops);
		out->ops += out->thread_ops[i];
	}
	out->counter = atomic_load_explicit(&sh->counter, memory_order_relaxed);
	for (uint32_t k = 0; k < s->keys && s->prim != FB_FLOOR_FETCH_ADD; k++) {
		fb_floor_key *o = &out->key[k];
		if (sh->lock) {
			o->balance = sh->lock[k].balance;
			o->last_fence = sh->lock[k].last_fence;
			o->slot_fence = sh->lock[k].gen;
		} else {
			fb_u128 w = atomic_load_explicit(&sh->key[k].slot, memory_order_relaxed);
			fb_u128 r = atomic_load_explicit(&sh->key[k].rec, memory_order_relaxed);
			o->slot_fence = w.lo >> 16;
			o->slot_owner = (uint16_t)(w.lo & 0xffff);
			o->balance = (int64_t)r.lo;
			o->last_fence = r.hi;
		}
		for (uint32_t i = 0; i < s->threads && s->tally; i++) {
			o->completed += th[i].done[k];
			if (th[i].max_fence[k] > o->max_fence)
				o->max_fence = th[i].max_fence[k];
		}
	}
	double secs = (double)out->elapsed_ns / 1e9;
	out->ops_s = secs > 0 ? (double)out->ops / secs : 0;
}

fb_err fb_floor_run_one(const fb_floor_spec *spec, fb_floor_run *out)
{
	const fb_floor_spec s = *spec;
	if ((unsigned)s.prim >= FB_FLOOR_PRIMS || !s.threads || s.threads > FB_MAX_THREADS ||
	    !s.keys || s.keys > UINT32_MAX / 2 / sizeof(floor_key) || !s.duration_ns)
		return FB_EINVAL;
	*out = (fb_floor_run){.spec = s};
	floor_shared *sh = aligned_alloc(FB_PAD_LINE, sizeof *sh);
	floor_thread *th = aligned_alloc(FB_PAD_LINE, (size_t)s.threads * sizeof *th);
	out->thread_ops = calloc(s.threads, sizeof *out->thread_ops);
	out->key = calloc(s.keys, sizeof *out->key);
	if (sh)
		*sh = (floor_shared){.prim = s.prim, .keys = s.keys};
	if (th)
		memset(th, 0, (size_t)s.threads * sizeof *th);
	if (!sh || !th || !out->thread_ops || !out->key)
		goto nomem;
	atomic_init(&sh->counter, 1); /* fences start at 1, above the slots' 0 */
	atomic_init(&sh->stop, false);
	atomic_init(&sh->ready, 0);
	atomic_init(&sh->go, GO_WAIT);
	if (s.prim == FB_FLOOR_MUTEX) {
		sh->lock = aligned_alloc(FB_PAD_LINE, (size_t)s.keys * sizeof *sh->lock);
		if (!sh->lock)
			goto nomem;
		for (uint32_t k = 0; k < s.keys; k++) {
			sh->lock[k] = (floor_lock){.balance = FB_FLOOR_INITIAL_BALANCE};
			pthread_mutex_init(&sh->lock[k].m, NULL);
		}
	} else if (s.prim != FB_FLOOR_FETCH_ADD) {
		sh->key = aligned_alloc(FB_PAD_LINE, (size_t)s.keys * sizeof *sh->key);
		if (!sh->key)
			goto nomem;
		for (uint32_t k = 0; k < s.keys; k++) {
			atomic_init(&sh->key[k].slot, ((fb_u128){0, 0}));
			atomic_init(&sh->key[k].rec,
			            ((fb_u128){(uint64_t)FB_FLOOR_INITIAL_BALANCE, 0}));
		}
	}
	for (uint32_t i = 0; i < s.threads; i++) {
		floor_thread *t = &th[i];
		atomic_init(&t->ops, 0);
		fb_prng_init(&t->prng, FLOOR_SEED, i + 1);
		t->owner = (uint16_t)(i + 1);
		t->sh = sh;
		if (s.tally && s.prim != FB_FLOOR_FETCH_ADD) {
			t->done = calloc(s.keys, sizeof *t->done);
			t->max_fence = calloc(s.keys, sizeof *t->max_fence);
			if (!t->done || !t->max_fence)
				goto nomem;
		}
	}

	pthread_attr_t attr;
	pthread_attr_init(&attr);
	/* The loops need little stack; thousands of 8 MiB stacks would not fit. */
	pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN > 262144 ? PTHREAD_STACK_MIN : 262144);
	pthread_t *tid = calloc(s.threads, sizeof *tid);
	if (!tid) {
		pthread_attr_destroy(&attr);
		goto nomem;
	}
	uint32_t started = 0;
	int err = 0;
	for (; started < s.threads; started++) {
		fb_placement_apply(s.place, started, &attr);
		err = pthread_create(&tid[started], &attr, floor_thread_main, &th[started]);
		if (err)
			break;
	}
	pthread_attr_destroy(&attr);
	if (err) {
		atomic_store_explicit(&sh->go, GO_ABORT, memory_order_relaxed);
		for (uint32_t i = 0; i < started; i++)
			pthread_join(tid[i], NULL);
		free(tid);
		free_parts(sh, th, s.threads);
		fb_floor_run_free(out);
		errno = err;
		return FB_ESYS;
	}
	/* The clock starts when every thread is waiting at the gate, so thread
	 * creation is not part of the time measured. */
	while (atomic_load_explicit(&sh->ready, memory_order_relaxed) < s.threads)
		sched_yield();
	const fb_clock *mono = fb_clock_monotonic();
	uint64_t t0 = fb_clock_now(mono);
	atomic_store_explicit(&sh->go, GO_RUN, memory_order_relaxed);
	fb_sleep_ns(s.duration_ns);
	atomic_store_explicit(&sh->stop, true, memory_order_relaxed);
	out->elapsed_ns = fb_clock_now(mono) - t0;
	for (uint32_t i = 0; i < s.threads; i++)
		pthread_join(tid[i], NULL);
	free(tid);
	collect(sh, th, out);
	free_parts(sh, th, s.threads);
	return FB_OK;
nomem:
	free_parts(sh, th, s.threads);
	fb_floor_run_free(out);
	return FB_ENOMEM;
}

fb_err fb_floor_measure(uint32_t threads, uint32_t keys, uint64_t duration_ns, unsigned which,
                        fb_floor_result *out)
{
	return fb_floor_measure_on(threads, keys, duration_ns, which, NULL, out);
}

fb_err fb_floor_measure_on(uint32_t threads, uint32_t keys, uint64_t duration_ns, unsigned which,
                           const fb_placement *place, fb_floor_result *out)
{
	*out = (fb_floor_result){0};
	if (!which || (which & ~FB_FLOOR_ALL))
		return FB_EINVAL;
	for (int p = 0; p < FB_FLOOR_PRIMS; p++) {
		if (!(which & (1u << p)))
			continue;
		fb_floor_spec spec = {(fb_floor_prim)p, threads, keys, duration_ns, false, place};
		fb_floor_run r;
		fb_err e = fb_floor_run_one(&spec, &r);
		if (e != FB_OK)
			return e;
		set_rate(out, (fb_floor_prim)p, r.ops_s);
		fb_floor_run_free(&r);
	}
	return FB_OK;
}

/* ---- the command line ---- */

typedef struct floor_cli {
	uint32_t counts[FLOOR_MAX_COUNTS];
	uint32_t ncounts;
	uint64_t duration_ns;
	uint32_t keys;
	unsigned which;
	const char *json_path;
} floor_cli;

static int bad(const char *name, const char *v, const char *why)
{
	fprintf(stderr, "fencebench floor: --%s: '%s' %s\n", name, v, why);
	return -1;
}

static int parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;
	if (fb_parse_u64(s, min, max, &v))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int parse_threads(floor_cli *c, const char *v)
{
	char items[FLOOR_MAX_COUNTS][FB_LIST_ITEM], why[96];
	int n;
	if (fb_list_split(v, items, FLOOR_MAX_COUNTS, &n, why, sizeof why))
		return bad("threads", v, why);
	snprintf(why, sizeof why, "is not a whole number or a comma list of them in 1..%u",
	         (unsigned)FB_MAX_THREADS);
	c->ncounts = 0;
	for (int i = 0; i < n; i++)
		if (parse_u32(items[i], 1, FB_MAX_THREADS, &c->counts[c->ncounts++]))
			return bad("threads", v, why);
	return 0;
}

/* "pipeline_global" and "pipeline-global" name the same primitive. */
static bool same_name(const char *a, const char *b)
{
	for (; *a && *b; a++, b++)
		if (*a != *b && !((*a == '-' || *a == '_') && (*b == '-' || *b == '_')))
			return false;
	return *a == *b;
}

static int parse_only(floor_cli *c, const char *v)
{
	char items[FB_FLOOR_PRIMS + 1][FB_LIST_ITEM], why[96];
	int n;
	if (fb_list_split(v, items, FB_FLOOR_PRIMS + 1, &n, why, sizeof why))
		return bad("only", v, why);
	unsigned m = 0;
	for (int i = 0; i < n; i++) {
		const char *t = items[i];
		int found = -1;
		for (int p = 0; p < FB_FLOOR_PRIMS && found < 0; p++)
			if (same_name(t, prim_names[p]))
				found = p;
		if (found < 0) {
			fprintf(stderr,
			        "fencebench floor: --only: unknown name '%s' in '%s' (valid: "
			        "fetch_add, pipeline-global, pipeline-per-key, mutex)\n",
			        t, v);
			return -1;
		}
		if (m & (1u << found))
			return bad("only", v, "names one primitive twice");
		m |= 1u << found;
	}
	c->which = m;
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
	        "Usage: fencebench floor [options]\n"
	        "\n"
	        "The machine's own limit: the raw primitives of a stress run, each with N\n"
	        "threads in parallel and nothing around them, in total ops/s.\n"
	        "\n"
	        "  fetch_add          relaxed fetch_add on one shared counter (the global fence\n"
	        "                     source's ceiling)\n"
	        "  pipeline-global    on a uniformly drawn key: slot CAS (fence from one shared\n"
	        "                     counter), fenced record CAS, release CAS\n"
	        "  pipeline-per-key   the same, the fence being the slot's generation + 1\n"
	        "  mutex              the same step under a pthread_mutex per key (plain fields)\n"
	        "\n"
	        "Options:\n"
	        "  -t, --threads N[,N...]  thread counts, measured in turn (default: online CPUs)\n"
	        "  -d, --duration D        each measurement; units us ms s m h, bare number =\n"
	        "                          seconds (default 1s)\n"
	        "  -k, --keys N            keys (slot + record pairs, or mutexes) (default 16)\n"
	        "      --only LIST         primitives to measure: fetch_add, pipeline-global,\n"
	        "                          pipeline-per-key, mutex (default all)\n"
	        "      --json FILE         also write the results to FILE as JSON\n"
	        "  -h, --help              this help\n"
	        "\n"
	        "ns/op is the wall time of one operation on one thread: threads / (ops/s).\n"
	        "Exit status: 0 measured, 2 bad option or value, 3 runtime error.\n"
	        "\n"
	        "Example: fencebench floor -t 1,2,4,8 -d 2s --json floor.json\n");
}

/* 0 run, 1 --help printed, -1 bad input (one line printed). */
static int parse_cli(floor_cli *c, int argc, char **argv)
{
	enum { OPT_ONLY = 256, OPT_JSON };
	static const struct option lo[] = {{"threads", required_argument, NULL, 't'},
	                                   {"duration", required_argument, NULL, 'd'},
	                                   {"keys", required_argument, NULL, 'k'},
	                                   {"only", required_argument, NULL, OPT_ONLY},
	                                   {"json", required_argument, NULL, OPT_JSON},
	                                   {"help", no_argument, NULL, 'h'},
	                                   {NULL, 0, NULL, 0}};
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	*c = (floor_cli){.ncounts = 1,
	                 .counts = {cpus > 0 && cpus <= FB_MAX_THREADS ? (uint32_t)cpus : 1},
	                 .duration_ns = UINT64_C(1000000000),
	                 .keys = 16,
	                 .which = FB_FLOOR_ALL};
	opterr = 0;
	optind = 0; /* 0, not 1: glibc then also forgets a half-read option cluster */
	int ch;
	char why[64];
	while ((ch = getopt_long(argc, argv, ":t:d:k:h", lo, NULL)) != -1) {
		switch (ch) {
		case 't':
			if (parse_threads(c, optarg))
				return -1;
			break;
		case 'd':
			if (fb_parse_duration(optarg, true, &c->duration_ns))
				return bad(
				        "duration", optarg,
				        "is not a duration above zero (e.g. 250ms, 10s, 5m; units "
				        "us ms s m h)");
			break;
		case 'k':
			snprintf(why, sizeof why, "is not a whole number in 1..%u", FLOOR_MAX_KEYS);
			if (parse_u32(optarg, 1, FLOOR_MAX_KEYS, &c->keys))
				return bad("keys", optarg, why);
			break;
		case OPT_ONLY:
			if (parse_only(c, optarg))
				return -1;
			break;
		case OPT_JSON:
			c->json_path = optarg;
			break;
		case 'h':
			usage(stdout);
			return 1;
		case ':':
			fprintf(stderr,
			        "fencebench floor: option '%s' needs a value (see --help)\n",
			        argv[optind - 1]);
			return -1;
		default:
			if (optopt)
				fprintf(stderr,
				        "fencebench floor: unknown option '-%c' (see --help)\n",
				        optopt);
			else
				fprintf(stderr,
				        "fencebench floor: unknown option '%s' (see --help)\n",
				        argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "fencebench floor: unexpected argument '%s' (see --help)\n",
		        argv[optind]);
		return -1;
	}
	return 0;
}

/* load_1m: the load average before the run, < 0 if unknown */
static json_object *j_machine(double load_1m)
{
	json_object *o = fb_json_machine();
	if (load_1m >= 0)
		json_object_object_add(o, "loadavg_1m", json_object_new_double(load_1m));
	return o;
}

#define COL_OPS 15
#define COL_NS  8

int fb_floor_main(int argc, char **argv)
{
	floor_cli c;
	int p = parse_cli(&c, argc, argv);
	if (p)
		return p > 0 ? 0 : 2;

	/* The floor is the machine's only when nothing else runs on it: the
	 * load before we add ours says whether something did. */
	double load[1] = {-1};
	if (getloadavg(load, 1) != 1)
		load[0] = -1;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	char dur[32], cpu[256];
	fb_format_duration(dur, sizeof dur, c.duration_ns);
	fb_cpu_model(cpu, sizeof cpu);
	printf("fencebench %s floor  %s per measurement  %u keys  %ld CPUs online  %s\n\n",
	       FB_VERSION, dur, c.keys, cpus, cpu);
	printf("%-7s", "");
	for (int k = 0; k < FB_FLOOR_PRIMS; k++)
		if (c.which & (1u << k))
			printf("  %*s", COL_OPS + 1 + COL_NS, prim_names[k]);
	printf("\n%-7s", "threads");
	for (int k = 0; k < FB_FLOOR_PRIMS; k++)
		if (c.which & (1u << k))
			printf("  %*s %*s", COL_OPS, "ops/s", COL_NS, "ns/op");
	printf("\n");
	fflush(stdout);

	json_object *rows = json_object_new_array();
	int code = 0;
	for (uint32_t i = 0; i < c.ncounts && !code; i++) {
		uint32_t n = c.counts[i];
		json_object *row = json_object_new_object();
		json_object_object_add(row, "threads", json_object_new_uint64(n));
		json_object_object_add(row, "keys", json_object_new_uint64(c.keys));
		printf("%7u", n);
		fflush(stdout);
		for (int k = 0; k < FB_FLOOR_PRIMS; k++) {
			if (!(c.which & (1u << k))) {
				json_object_object_add(row, prim_keys[k], NULL);
				continue;
			}
			fb_floor_result r;
			fb_err e = fb_floor_measure(n, c.keys, c.duration_ns, 1u << k, &r);
			if (e != FB_OK) {
				printf("\n");
				if (e == FB_ESYS)
					fprintf(stderr,
					        "fencebench floor: cannot start %u threads: "
					        "pthread_create failed, errno=%d (%s)\n",
					        n, errno, strerror(errno));
				else
					fprintf(stderr, "fencebench floor: %s: %s\n", prim_names[k],
					        fb_strerror(e));
				code = 3;
				break;
			}
			double rate = fb_floor_rate(&r, (fb_floor_prim)k);
			char g[32];
			double ns = rate > 0 ? (double)n * 1e9 / rate : 0.0;
			int digits = ns < 100 ? 2 : ns < 10000 ? 1 : 0;
			printf("  %*s %*.*f", COL_OPS, fb_grouped(g, sizeof g, rate), COL_NS,
			       digits, ns);
			fflush(stdout);
			json_object_object_add(row, prim_keys[k], json_object_new_double(rate));
		}
		if (!code)
			printf("\n");
		json_object_array_add(rows, row);
	}

	/* The checker's consumer, alone: a stress run's verification keeps up
	 * while its workers make fewer records a second than this (one a
	 * store an op: 3 an op with the three default modes). */
	double consumer = 0;
	if (!code) {
		uint32_t most = 0;
		for (uint32_t i = 0; i < c.ncounts; i++)
			most = c.counts[i] > most ? c.counts[i] : most;
		uint64_t lost = 0;
		fb_err e = fb_feed_capacity(most + 1, c.keys, c.duration_ns, &consumer, &lost);
		if (e == FB_OK && !lost) {
			char g[32], o[32];
			printf("\nconsumer: %s records/s alone (the checker's walk on one "
			       "thread, fed by %u logs over %u keys): keeps up with %s ops/s of "
			       "a 3-mode run\n",
			       fb_grouped(g, sizeof g, consumer), most + 1, c.keys,
			       fb_grouped(o, sizeof o, consumer / 3));
		} else {
			fprintf(stderr, "fencebench floor: consumer: %s\n",
			        e ? fb_strerror(e) : "a record put was not walked");
			code = 3;
		}
	}
	if (!code && load[0] > (double)cpus / 2)
		printf("\nnote: load average %.2f on %ld CPUs before the run: other work shares "
		       "them, so these rates are low and noisy\n",
		       load[0], cpus);
	if (c.json_path && !code) {
		json_object *doc = json_object_new_object();
		json_object_object_add(doc, "schema", json_object_new_uint64(1));
		json_object_object_add(doc, "tool", json_object_new_string("fencebench"));
		json_object_object_add(doc, "kind", json_object_new_string("floor"));
		json_object_object_add(doc, "version", json_object_new_string(FB_VERSION));
		json_object_object_add(doc, "duration_s",
		                       json_object_new_double((double)c.duration_ns / 1e9));
		json_object_object_add(doc, "machine", j_machine(load[0]));
		json_object_object_add(doc, "rows", json_object_get(rows));
		json_object_object_add(doc, "consumer_records_s", json_object_new_double(consumer));
		const char *text = json_object_to_json_string_ext(
		        doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
		if (fb_outfile_put(c.json_path, text)) {
			fprintf(stderr,
			        "fencebench floor: --json: cannot write '%s': errno=%d (%s)\n",
			        c.json_path, errno, strerror(errno));
			code = 3;
		}
		json_object_put(doc);
	}
	json_object_put(rows);
	return code;
}
