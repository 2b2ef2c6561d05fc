/*
 * The deterministic simulator. One OS thread plays every worker: each step
 * the seeded scheduler advances the virtual clock by 0.5-2 us, delivers the
 * delayed writes that are due, fires the faults that are due (each fault a
 * Poisson stream in virtual time), wakes the workers whose sleep is over,
 * and runs ONE operation of one runnable worker picked at random: an
 * acquire attempt, one store's read, a renewal, the lease check, one
 * store's write, or the release. Pauses, lease checks, delays and crashes
 * therefore interleave with the other workers' operations exactly where the
 * schedule puts them, and nothing depends on the machine: no real clock, no
 * threads, no addresses, all randomness from fb_prng streams of the seed.
 *
 * Every step appends a line to the history (step, virtual time in us,
 * worker, operation, key, fence, the store's outcome); the FNV-1a hash of
 * those bytes identifies the run.
 */
#include "sim.h"

#include "dist.h"
#include "util.h"
#include "witness.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checker.h"
#include "clock.h"
#include "lease.h"
#include "prng.h"

/* Virtual time starts at 1 s, so a worker clock jumped back stays above 0
 * for a while (a skewed clock reads below 0 as 0). */
#define SIM_T0           UINT64_C(1000000000)
#define STEP_MIN_NS      500
#define STEP_SPAN_NS     1501 /* a step takes 0.5 to 2 us */
#define BACKOFF_MAX_LOG2 6    /* a contended worker retries after 1 to 64 us */
#define HIST_LINE        320

/* PRNG streams: workers use their owner ids 1..N, as in bench/run.c. */
#define STREAM_SCHED (UINT64_C(1) << 32)
#define STREAM_FAULT (UINT64_C(2) << 32) /* + fb_fault */

#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME  UINT64_C(0x100000001b3)

#define BIT(f) (1u << (f))

typedef enum sim_pc {
	PC_START,   /* pick a key and try to acquire it */
	PC_ACQUIRE, /* retry the acquire after contention */
	PC_READ,    /* read from the cycle's next store */
	PC_RENEW,   /* the late heartbeat */
	PC_CHECK,   /* the lease check before writing */
	PC_WRITE,   /* write to the next store that served the read */
	PC_RELEASE,
} sim_pc;

typedef struct sim_worker {
	uint16_t id;
	uint8_t pc;
	bool alive, holding, sleeping;
	bool stale;     /* this cycle met a stale verdict */
	bool delaying;  /* this cycle's writes go in flight */
	bool arm_delay; /* the next cycle's writes will */
	bool arm_retry; /* the next cycle's writes lose their acknowledgement */
	bool retrying;  /* this cycle's writes are sent twice */
	bool arm_renew; /* the next after-read point stalls, then renews */
	uint8_t arm_at; /* 1 + fb_fault_at of an armed pause; 0: none */
	uint32_t key;
	uint32_t first, i; /* the cycle's rotation of stores, and the next one */
	uint32_t fails;    /* contended attempts in a row */
	uint32_t faults;   /* BIT(fb_fault) of every fault that touched this cycle */
	int32_t batch;     /* this cycle's in-flight batch, -1: none */
	uint64_t arm_ns, arm_delay_ns, renew_ns;
	uint64_t delay_ns;  /* this cycle's writes' time in flight */
	uint64_t local_acq; /* its own clock at the acquire (or the renewal) */
	uint64_t cycle;
	fb_lease lease;
	bool served[FB_DISCIPLINES];
	int64_t bal[FB_DISCIPLINES];
	fb_clock_skewed clock; /* its own clock: read only by the local check */
	fb_prng rng;
} sim_worker;

/* One cycle's delayed writes, delivered each at its issue time + delay. */
typedef struct sim_batch {
	bool used, closed, counted, judged;
	uint16_t owner;
	uint32_t key, faults;
	uint64_t fence, expires_at;
	int n, next;
	fb_discipline d[FB_DISCIPLINES];
	int64_t read[FB_DISCIPLINES];
	uint64_t due[FB_DISCIPLINES];
} sim_batch;

/* Left on a key by a takeover pause: its next holder with a higher fence
 * waits at its own after-read point until wake_at + extra_ns. */
typedef struct sim_trap {
	uint64_t fence, wake_at, extra_ns;
} sim_trap;

typedef struct sim_crash {
	uint64_t at;
	uint16_t owner;
	bool pending;
} sim_crash;

typedef struct sim_sleeper {
	uint64_t wake;
	uint32_t idx;
} sim_sleeper;

typedef struct sim {
	const fb_config *cfg;
	fb_sim_result *res;
	uint64_t now, step;
	uint64_t ttl, pause_lo, pause_hi, delay_lo, delay_hi, skew_ns;
	fb_clock_manual vclock;
	fb_witness *witness; /* the lease's own promises, checked as in run.c */
	fb_witness_counts lease;
	fb_clock_skewed service; /* the realtime lease clock that skew steps */
	const fb_clock *lease_clock;
	fb_lease_table *leases;
	fb_store *store[FB_DISCIPLINES];
	fb_checker *checker[FB_DISCIPLINES];
	fb_discipline active[FB_DISCIPLINES];
	uint32_t nactive;
	bool rmw;
	sim_worker *w;
	uint32_t n, alive;
	uint32_t *run, *runpos, nrun; /* the runnable workers, and where each is */
	sim_sleeper *heap;            /* the sleeping ones, earliest wake first */
	uint32_t nheap;
	uint32_t *cand;   /* fault targets being chosen */
	double *zipf_cdf; /* --dist zipf: cumulative weights of keys 0..k */
	sim_trap *traps;
	sim_crash *crash;
	sim_batch *batch;
	uint32_t nbatch, capbatch;
	uint64_t next_due; /* earliest undelivered write; UINT64_MAX: none */
	fb_prng sched;
	fb_prng fp[FB_FAULTS];
	uint64_t next_fault[FB_FAULTS];
	double mean_ns[FB_FAULTS];
	uint32_t faults; /* the faults that are on */
	/* history */
	uint64_t hash;
	FILE *hist;
	char line[HIST_LINE];
	size_t len;
} sim;

/* ---- randomness ---- */

/*
 * -ln(u) for u > 0, from frexp and IEEE basic arithmetic only: libm's
 * log may round differently from one libc to the next, and the schedule
 * (hence the history) must not. ln(m) by the atanh series, m in [0.5, 1).
 */
static double neg_log(double u)
{
	int e;
	double m = frexp(u, &e);
	double z = (m - 1) / (m + 1), z2 = z * z, term = z, sum = 0;
	for (int k = 1; k < 64; k += 2) {
		sum += term / k;
		term *= z2;
	}
	return -(2 * sum + e * 0.69314718055994530942);
}

/* e^x for x <= 0, by the same rule as neg_log: x = n ln2 + r, |r| <= ln2 / 2,
 * e^r by its Taylor series, and ldexp (exact) for the 2^n. */
static double exp_neg(double x)
{
	const double ln2 = 0.69314718055994530942;
	double n = (double)(int64_t)(x / ln2 + (x < 0 ? -0.5 : 0.5));
	double r = x - n * ln2, term = 1, sum = 1;
	if (n < -1070)
		return 0;
	for (int k = 1; k < 24; k++) {
		term *= r / k;
		sum += term;
	}
	return ldexp(sum, (int)n);
}

/* Uniform in [lo, hi]. */
static uint64_t draw(fb_prng *p, uint64_t lo, uint64_t hi)
{
	if (hi <= lo)
		return lo;
	uint64_t span = hi - lo + 1;
	return lo + (span ? fb_prng_next(p) % span : fb_prng_next(p));
}

/* Time to the next fault of a Poisson stream, at least 1 ns. */
static uint64_t interval(sim *s, fb_fault f)
{
	double t = s->mean_ns[f] * neg_log(1.0 - fb_prng_unit(&s->fp[f]));
	return t < 1 ? 1 : t > 1e18 ? UINT64_C(1000000000000000000) : (uint64_t)t;
}

/* ---- history ---- */

static void h_raw(sim *s, const char *p, size_t n)
{
	if (s->len + n > HIST_LINE - 2) /* never for the lines this module writes */
		n = s->len < HIST_LINE - 2 ? HIST_LINE - 2 - s->len : 0;
	memcpy(s->line + s->len, p, n);
	s->len += n;
}

static void h_str(sim *s, const char *p)
{
	h_raw(s, p, strlen(p));
}

static void h_u64(sim *s, uint64_t v)
{
	char b[24];
	int i = sizeof b;
	do {
		b[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	h_raw(s, b + i, sizeof b - (size_t)i);
}

static void h_i64(sim *s, int64_t v)
{
	if (v < 0) {
		h_raw(s, "-", 1);
		h_u64(s, (uint64_t)0 - (uint64_t)v);
	} else {
		h_u64(s, (uint64_t)v);
	}
}

/* A duration or a time as microseconds with three decimals. */
static void h_us(sim *s, uint64_t ns)
{
	char b[4] = {'.', (char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10),
	             (char)('0' + ns % 10)};
	h_u64(s, ns / 1000);
	h_raw(s, b, 4);
}

/* "STEP TIME wID " or "STEP TIME - " for events that belong to no worker. */
static void h_begin(sim *s, const sim_worker *w)
{
	s->len = 0;
	h_u64(s, s->step);
	h_raw(s, " ", 1);
	h_us(s, s->now - SIM_T0);
	if (w) {
		h_raw(s, " w", 2);
		h_u64(s, w->id);
		h_raw(s, " ", 1);
	} else {
		h_raw(s, " - ", 3);
	}
}

/* "... OP kKEY fFENCE" */
static void h_op(sim *s, const sim_worker *w, const char *op, uint32_t key, uint64_t fence)
{
	h_begin(s, w);
	h_str(s, op);
	h_raw(s, " k", 2);
	h_u64(s, key);
	h_raw(s, " f", 2);
	h_u64(s, fence);
}

/* Close the line: hash its bytes, and write them if a history file is open. */
static void h_end(sim *s)
{
	s->line[s->len++] = '\n';
	uint64_t h = s->hash;
	for (size_t i = 0; i < s->len; i++) {
		h ^= (unsigned char)s->line[i];
		h *= FNV_PRIME;
	}
	s->hash = h;
	s->res->lines++;
	if (s->hist)
		fwrite(s->line, 1, s->len, s->hist);
}

/* ---- the runnable set and the sleepers ---- */

static void run_add(sim *s, uint32_t idx)
{
	s->runpos[idx] = s->nrun;
	s->run[s->nrun++] = idx;
}

static void run_remove(sim *s, uint32_t idx)
{
	uint32_t at = s->runpos[idx], last = s->run[--s->nrun];
	s->run[at] = last;
	s->runpos[last] = at;
	s->runpos[idx] = UINT32_MAX;
}

static bool sleeper_before(sim_sleeper a, sim_sleeper b)
{
	return a.wake < b.wake || (a.wake == b.wake && a.idx < b.idx);
}

/* Take a runnable worker off the run list until `until`. */
static void sleep_worker(sim *s, sim_worker *w, uint64_t until)
{
	uint32_t idx = (uint32_t)(w - s->w);
	run_remove(s, idx);
	w->sleeping = true;
	uint32_t i = s->nheap++;
	s->heap[i] = (sim_sleeper){until, idx};
	while (i && sleeper_before(s->heap[i], s->heap[(i - 1) / 2])) {
		sim_sleeper t = s->heap[i];
		s->heap[i] = s->heap[(i - 1) / 2];
		s->heap[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static sim_sleeper heap_pop(sim *s)
{
	sim_sleeper top = s->heap[0];
	s->heap[0] = s->heap[--s->nheap];
	for (uint32_t i = 0;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < s->nheap && sleeper_before(s->heap[l], s->heap[m]))
			m = l;
		if (r < s->nheap && sleeper_before(s->heap[r], s->heap[m]))
			m = r;
		if (m == i)
			break;
		sim_sleeper t = s->heap[i];
		s->heap[i] = s->heap[m];
		s->heap[m] = t;
		i = m;
	}
	return top;
}

/* Wake every sleeper whose time has come, earliest first; the dead stay
 * down (a crash does not dig a sleeper out of the heap). */
static void wake_due(sim *s)
{
	while (s->nheap && s->heap[0].wake <= s->now) {
		sim_sleeper top = heap_pop(s);
		sim_worker *w = &s->w[top.idx];
		w->sleeping = false;
		if (w->alive)
			run_add(s, top.idx);
	}
}

static void set_now(sim *s, uint64_t t)
{
	s->now = t;
	fb_clock_manual_set(&s->vclock, t);
}

static fb_discipline store_at(const sim *s, const sim_worker *w, uint32_t i)
{
	return s->active[(w->first + i) % s->nactive];
}

static uint64_t own_now(sim_worker *w)
{
	return fb_clock_now(&w->clock.base);
}

/* ---- stores ---- */

static const char *const store_word[FB_DISCIPLINES] = {"fenced", "write-fenced", "unfenced"};

/*
 * Apply one write (or debit) to a store, as bench/run.c does, and append its
 * outcome to the line being built. An accepted write goes to the checker at
 * once: the simulator commits in version order, so the checker's walk never
 * waits. Returns whether the store judged the write stale (rejected it, or
 * accepted it over a higher fence).
 */
static bool apply_write(sim *s, uint32_t key, fb_discipline d, uint64_t fence, int64_t read,
                        uint64_t expires_at)
{
	fb_sim_mode *m = &s->res->mode[d];
	const fb_config *cfg = s->cfg;
	fb_store_result r;
	m->writes++;
	/* A zombie: the writer's lease is over when the write reaches the
	 * store (for a delayed write, when it lands). */
	if (fb_clock_now(s->lease_clock) >= expires_at)
		m->zombie_writes++;
	bool ok = s->rmw ? fb_store_write(s->store[d], key, read - cfg->amount, fence, &r)
	                 : fb_store_debit(s->store[d], key, cfg->amount, fence, &r);
	h_raw(s, " ", 1);
	h_str(s, store_word[d]);
	if (!ok) {
		m->rejected_stale++;
		h_str(s, " rejected highest ");
		h_u64(s, r.highest);
		return true;
	}
	m->accepted++;
	if (r.stale)
		m->store_stale++;
	uint64_t stalls = 0;
	fb_checker_commit(s->checker[d], key, r.version, fence, s->rmw ? read : r.before, r.before,
	                  r.balance, r.highest, &stalls);
	h_str(s, r.stale ? " accepted-stale " : " ok ");
	h_i64(s, r.balance);
	h_str(s, " v");
	h_u64(s, r.version);
	return r.stale;
}

/* ---- delayed writes ---- */

static void update_next_due(sim *s)
{
	uint64_t t = UINT64_MAX;
	for (uint32_t i = 0; i < s->nbatch; i++) {
		sim_batch *b = &s->batch[i];
		if (b->used && b->next < b->n && b->due[b->next] < t)
			t = b->due[b->next];
	}
	s->next_due = t;
}

static fb_err batch_open(sim *s, sim_worker *w)
{
	uint32_t i = 0;
	while (i < s->nbatch && s->batch[i].used)
		i++;
	if (i == s->capbatch) {
		uint32_t cap = s->capbatch ? 2 * s->capbatch : 16;
		sim_batch *nb = realloc(s->batch, (size_t)cap * sizeof *nb);
		if (!nb)
			return FB_ENOMEM;
		s->batch = nb;
		s->capbatch = cap;
	}
	if (i == s->nbatch)
		s->nbatch++;
	s->batch[i] = (sim_batch){.used = true,
	                          .owner = w->id,
	                          .key = w->key,
	                          .faults = w->faults,
	                          .fence = w->lease.fence,
	                          .expires_at = w->lease.expires_at};
	w->batch = (int32_t)i;
	return FB_OK;
}

/* The worker is done with its batch (released, or crashed): deliveries from
 * now on are judged on their own. */
static void batch_close(sim *s, sim_worker *w)
{
	if (w->batch < 0)
		return;
	sim_batch *b = &s->batch[w->batch];
	b->closed = true;
	b->faults = w->faults;
	b->counted = w->stale;
	if (b->next == b->n)
		b->used = false;
	w->batch = -1;
}

static void count_stale_cycle(sim *s, uint32_t faults)
{
	s->res->stale_cycles++;
	for (int f = 0; f < FB_FAULTS; f++)
		if (faults & BIT(f))
			s->res->fault[f].stale++;
}

/* Deliver every in-flight write whose time has come, earliest first. */
static void deliver_due(sim *s)
{
	while (s->next_due <= s->now) {
		sim_batch *b = NULL;
		for (uint32_t i = 0; i < s->nbatch; i++) {
			sim_batch *c = &s->batch[i];
			if (c->used && c->next < c->n && c->due[c->next] == s->next_due) {
				b = c;
				break;
			}
		}
		if (!b) { /* cannot happen: each batch's first due is its earliest */
			update_next_due(s);
			continue;
		}
		int j = b->next++;
		h_op(s, &s->w[b->owner - 1], "deliver", b->key, b->fence);
		bool stale = apply_write(s, b->key, b->d[j], b->fence, b->read[j], b->expires_at);
		h_end(s);
		s->res->delayed_writes++;
		if (!b->judged) {
			/* Taken over while in flight: the key has a newer lease. */
			b->judged = true;
			if (fb_lease_peek(s->leases, b->key).fence != b->fence)
				s->res->fault[FB_FAULT_DELAY].taken_over++;
		}
		if (stale) {
			if (!b->closed)
				s->w[b->owner - 1].stale = true; /* its release counts it */
			else if (!b->counted) {
				b->counted = true;
				count_stale_cycle(s, b->faults);
			}
		}
		if (b->closed && b->next == b->n)
			b->used = false;
		update_next_due(s);
	}
}

/* ---- the worker's cycle ---- */

static void after_check(sim *s, sim_worker *w, uint64_t *nap);

/* Move to the next store that served this cycle's read, or to the release. */
static void next_write(sim *s, sim_worker *w)
{
	while (w->i < s->nactive && !w->served[store_at(s, w, w->i)])
		w->i++;
	if (w->i == s->nactive)
		w->pc = PC_RELEASE;
}

static void to_check(sim *s, sim_worker *w, uint64_t *nap)
{
	if (s->cfg->check_lease != FB_CHECK_NONE)
		w->pc = PC_CHECK;
	else
		after_check(s, w, nap);
}

/* Take the armed pause now: a history line, the counts, the nap. */
static uint64_t take_pause(sim *s, sim_worker *w, const char *where)
{
	fb_sim_fault *f = &s->res->fault[FB_FAULT_PAUSE];
	uint64_t d = w->arm_ns;
	w->arm_at = 0;
	f->injected++;
	f->hit++;
	if (d > s->ttl)
		f->over_ttl++;
	w->faults |= BIT(FB_FAULT_PAUSE);
	h_op(s, w, "pause", w->key, w->lease.fence);
	h_raw(s, " ", 1);
	h_us(s, d);
	h_str(s, "us at ");
	h_str(s, where);
	h_end(s);
	return d;
}

/*
 * The after-read pause point (reached right after the acquire with --op
 * debit): a takeover trap left on the key, an armed after-read or takeover
 * pause, an armed late heartbeat, then the holder's work time. Their naps
 * add up: they happen one after the other.
 */
static void after_read(sim *s, sim_worker *w, uint64_t *nap)
{
	const fb_config *cfg = s->cfg;
	sim_trap *t = &s->traps[w->key];
	if (t->fence && w->lease.fence > t->fence) {
		uint64_t d = (t->wake_at > s->now ? t->wake_at - s->now : 0) + t->extra_ns;
		fb_sim_fault *f = &s->res->fault[FB_FAULT_PAUSE];
		t->fence = 0;
		s->res->pause_trapped++;
		f->injected++;
		f->hit++;
		if (d > s->ttl)
			f->over_ttl++;
		w->faults |= BIT(FB_FAULT_PAUSE);
		h_op(s, w, "trapped", w->key, w->lease.fence);
		h_raw(s, " ", 1);
		h_us(s, d);
		h_str(s, "us");
		h_end(s);
		*nap += d;
	}
	if (w->arm_at == 1 + FB_AT_AFTER_READ || w->arm_at == 1 + FB_AT_TAKEOVER) {
		bool takeover = w->arm_at == 1 + FB_AT_TAKEOVER;
		*nap += take_pause(s, w, takeover ? "takeover" : "after-read");
		if (takeover)
			*t = (sim_trap){w->lease.fence, s->now + *nap,
			                draw(&s->fp[FB_FAULT_PAUSE], 0, s->ttl / 2)};
	}
	if (w->arm_renew) {
		fb_sim_fault *f = &s->res->fault[FB_FAULT_RENEW];
		w->arm_renew = false;
		f->injected++;
		f->hit++;
		if (w->renew_ns > s->ttl)
			f->over_ttl++;
		w->faults |= BIT(FB_FAULT_RENEW);
		h_op(s, w, "heartbeat-late", w->key, w->lease.fence);
		h_raw(s, " ", 1);
		h_us(s, w->renew_ns);
		h_str(s, "us");
		h_end(s);
		*nap += w->renew_ns;
		w->pc = PC_RENEW;
	}
	if (cfg->work_max_ns)
		*nap += draw(&w->rng, cfg->work_min_ns, cfg->work_max_ns);
	if (w->pc != PC_RENEW)
		to_check(s, w, nap);
}

/* The after-check pause point, then the writes (in flight if delayed). */
static void after_check(sim *s, sim_worker *w, uint64_t *nap)
{
	if (w->arm_at == 1 + FB_AT_AFTER_CHECK)
		*nap += take_pause(s, w, "after-check");
	w->pc = PC_WRITE;
	w->i = 0;
	next_write(s, w);
	if (w->pc == PC_WRITE && w->arm_retry) {
		fb_sim_fault *f = &s->res->fault[FB_FAULT_RETRY];
		w->arm_retry = false;
		w->retrying = true;
		f->injected++;
		f->hit++;
		w->faults |= BIT(FB_FAULT_RETRY);
	}
	if (w->pc == PC_WRITE && w->arm_delay) {
		fb_sim_fault *f = &s->res->fault[FB_FAULT_DELAY];
		w->arm_delay = false;
		w->delaying = true;
		w->delay_ns = w->arm_delay_ns;
		f->injected++;
		f->hit++;
		if (w->delay_ns > s->ttl)
			f->over_ttl++;
		w->faults |= BIT(FB_FAULT_DELAY);
	}
}

static fb_err op_acquire(sim *s, sim_worker *w, uint64_t *nap)
{
	fb_lease l;
	fb_lease_stats ls = {0};
	fb_acquire a = fb_lease_acquire(s->leases, w->key, w->id, &l, &ls);
	if (a == FB_EXHAUSTED) {
		h_begin(s, w);
		h_str(s, "acquire k");
		h_u64(s, w->key);
		h_str(s, " exhausted");
		h_end(s);
		return FB_EFENCE;
	}
	if (a == FB_HELD) {
		s->res->contended++;
		h_begin(s, w);
		h_str(s, "acquire k");
		h_u64(s, w->key);
		h_str(s, " held w");
		h_u64(s, l.owner);
		h_str(s, " f");
		h_u64(s, l.fence);
		h_end(s);
		w->pc = PC_ACQUIRE;
		uint32_t lg = w->fails < BACKOFF_MAX_LOG2 ? w->fails : BACKOFF_MAX_LOG2;
		w->fails++;
		*nap = 1000 * (1 + (uint64_t)fb_prng_below(&w->rng, 1u << lg));
		return FB_OK;
	}
	s->res->acquired++;
	fb_witness_acquired(s->witness, w->key, l.fence, l.expires_at, &s->lease);
	w->lease = l;
	w->retrying = false;
	w->holding = true;
	w->faults = 0;
	w->stale = false;
	w->delaying = false;
	w->first = (uint32_t)(w->cycle % s->nactive);
	w->i = 0;
	if (s->cfg->check_lease == FB_CHECK_LOCAL)
		w->local_acq = own_now(w);
	h_op(s, w, "acquire", w->key, l.fence);
	h_str(s, " ok");
	sim_crash *c = &s->crash[w->key];
	if (c->pending) {
		uint64_t lat = s->now - c->at;
		c->pending = false;
		s->res->crash_taken++;
		s->res->fault[FB_FAULT_CRASH].taken_over++;
		s->res->crash_latency_sum_ns += lat;
		if (lat > s->res->crash_latency_max_ns)
			s->res->crash_latency_max_ns = lat;
		h_str(s, " from-crashed w");
		h_u64(s, c->owner);
		h_raw(s, " ", 1);
		h_us(s, lat);
		h_str(s, "us");
	}
	h_end(s);
	if (s->rmw) {
		w->pc = PC_READ;
	} else {
		for (uint32_t i = 0; i < s->nactive; i++)
			w->served[s->active[i]] = true;
		after_read(s, w, nap);
	}
	return FB_OK;
}

static void op_read(sim *s, sim_worker *w, uint64_t *nap)
{
	fb_discipline d = store_at(s, w, w->i);
	fb_store_result r;
	bool ok = fb_store_read(s->store[d], w->key, w->lease.fence, &r);
	w->served[d] = ok;
	w->bal[d] = r.balance;
	h_op(s, w, "read", w->key, w->lease.fence);
	h_raw(s, " ", 1);
	h_str(s, store_word[d]);
	if (ok) {
		h_str(s, " ok ");
		h_i64(s, r.balance);
	} else {
		s->res->mode[d].reads_refused++;
		w->stale = true;
		h_str(s, " refused highest ");
		h_u64(s, r.highest);
	}
	h_end(s);
	if (++w->i == s->nactive)
		after_read(s, w, nap);
}

/* The late heartbeat: a failed renewal is believed all the same. */
static void op_renew(sim *s, sim_worker *w, uint64_t *nap)
{
	fb_lease nl;
	bool ok = fb_lease_renew(s->leases, w->key, w->id, w->lease.fence, &nl);
	h_op(s, w, "renew", w->key, w->lease.fence);
	if (ok) {
		w->lease = nl;
		h_str(s, " ok");
	} else {
		fb_lease now = fb_lease_peek(s->leases, w->key);
		s->res->renew_failed++;
		h_str(s, " failed-believed");
		if (now.fence != w->lease.fence) {
			s->res->fault[FB_FAULT_RENEW].taken_over++;
			h_str(s, " taken f");
			h_u64(s, now.fence);
		}
	}
	h_end(s);
	if (s->cfg->check_lease == FB_CHECK_LOCAL)
		w->local_acq = own_now(w);
	to_check(s, w, nap);
}

static void op_check(sim *s, sim_worker *w, uint64_t *nap)
{
	bool ok;
	h_op(s, w, "check", w->key, w->lease.fence);
	if (s->cfg->check_lease == FB_CHECK_IS_HELD) {
		ok = fb_lease_is_held(s->leases, w->key, w->id);
		h_str(s, " is-held");
	} else {
		/* Signed: a clock jumped back makes the elapsed time negative. */
		int64_t el = (int64_t)(own_now(w) - w->local_acq);
		ok = el < (int64_t)s->ttl;
		if (ok && fb_clock_now(s->lease_clock) >= w->lease.expires_at)
			s->res->local_fooled++;
		h_str(s, " local");
	}
	h_str(s, ok ? " ok" : " failed");
	h_end(s);
	if (ok) {
		after_check(s, w, nap);
	} else {
		s->res->checks_failed++;
		w->pc = PC_RELEASE;
	}
}

static fb_err op_write(sim *s, sim_worker *w)
{
	fb_discipline d = store_at(s, w, w->i);
	if (w->delaying) {
		if (w->batch < 0 && batch_open(s, w) != FB_OK)
			return FB_ENOMEM;
		sim_batch *b = &s->batch[w->batch];
		b->d[b->n] = d;
		b->read[b->n] = w->bal[d];
		b->due[b->n] = s->now + w->delay_ns;
		if (b->next == b->n && b->due[b->n] < s->next_due)
			s->next_due = b->due[b->n];
		b->n++;
		h_op(s, w, "send", w->key, w->lease.fence);
		h_raw(s, " ", 1);
		h_str(s, store_word[d]);
		h_str(s, " in-flight ");
		h_us(s, w->delay_ns);
		h_str(s, "us");
		h_end(s);
	} else {
		h_op(s, w, "write", w->key, w->lease.fence);
		if (apply_write(s, w->key, d, w->lease.fence, w->bal[d], w->lease.expires_at))
			w->stale = true;
		h_end(s);
		if (w->retrying) {
			/* the acknowledgement was lost: the same write again */
			h_op(s, w, "resend", w->key, w->lease.fence);
			if (apply_write(s, w->key, d, w->lease.fence, w->bal[d],
			                w->lease.expires_at))
				w->stale = true;
			h_end(s);
		}
	}
	w->i++;
	next_write(s, w);
	return FB_OK;
}

/*
 * Release by compare-and-delete. A failed one means the lease was taken over
 * while this cycle ran late: the pause or skew that made it late caused it.
 * The cycle's stale verdicts count here, once per cycle.
 */
static void op_release(sim *s, sim_worker *w)
{
	fb_witness_releasing(s->witness, w->key, w->lease.fence, w->lease.expires_at);
	bool ok = fb_lease_release(s->leases, w->key, w->id, w->lease.fence);
	h_op(s, w, "release", w->key, w->lease.fence);
	h_str(s, ok ? " ok" : " taken-over");
	h_end(s);
	if (!ok) {
		if (w->faults & BIT(FB_FAULT_PAUSE))
			s->res->fault[FB_FAULT_PAUSE].taken_over++;
		if (w->faults & BIT(FB_FAULT_SKEW))
			s->res->fault[FB_FAULT_SKEW].taken_over++;
	}
	if (w->stale)
		count_stale_cycle(s, w->faults);
	batch_close(s, w);
	w->holding = false;
	w->delaying = false;
	w->pc = PC_START;
	w->cycle++;
	s->res->cycles++;
}

/* One operation of worker w; a nap it earned takes it off the run list. */
static fb_err worker_step(sim *s, sim_worker *w)
{
	uint64_t nap = 0;
	fb_err err = FB_OK;
	switch ((sim_pc)w->pc) {
	case PC_START:
		w->key = fb_dist_pick(s->cfg, s->zipf_cdf, w->id, &w->rng);
		w->fails = 0;
		err = op_acquire(s, w, &nap);
		break;
	case PC_ACQUIRE:
		err = op_acquire(s, w, &nap);
		break;
	case PC_READ:
		op_read(s, w, &nap);
		break;
	case PC_RENEW:
		op_renew(s, w, &nap);
		break;
	case PC_CHECK:
		op_check(s, w, &nap);
		break;
	case PC_WRITE:
		err = op_write(s, w);
		break;
	case PC_RELEASE:
		op_release(s, w);
		break;
	}
	if (nap)
		sleep_worker(s, w, s->now + nap);
	return err;
}

/* ---- faults ---- */

typedef enum aim {
	AIM_PAUSE_ANY,   /* running, not asleep already */
	AIM_AFTER_READ,  /* holding, before its after-read point */
	AIM_AFTER_CHECK, /* holding, before its after-check point */
	AIM_DELAY,       /* holding, before its writes */
	AIM_RENEW,       /* holding, before its after-read point */
	AIM_ANY,         /* holding */
} aim;

/* Whether w is a target for `a`; `holder` asks for the aimed choice, else
 * the fallback when no holder fits. */
static bool fits(const sim_worker *w, aim a, bool holder)
{
	if (!w->alive || (holder && !w->holding))
		return false;
	switch (a) {
	case AIM_PAUSE_ANY:
		return !w->sleeping;
	case AIM_AFTER_READ:
		return !w->arm_at && (!holder || w->pc == PC_READ);
	case AIM_AFTER_CHECK:
		return !w->arm_at && (!holder || w->pc < PC_WRITE);
	case AIM_DELAY:
		return !w->arm_delay && (!holder || (w->pc < PC_WRITE && !w->delaying));
	case AIM_RENEW:
		return !w->arm_renew && (!holder || w->pc == PC_READ);
	case AIM_ANY:
		return true;
	}
	return false;
}

/*
 * A fault's target: a worker holding a lease at the moment that matters (a
 * random worker is mostly waiting for a lease, and a fault there proves
 * nothing), else any live worker the fault can still reach (it strikes in
 * a later cycle), else none when holder_only.
 */
static sim_worker *pick(sim *s, fb_prng *p, aim a, bool holder_only)
{
	for (int pass = 0; pass < (holder_only ? 1 : 2); pass++) {
		uint32_t n = 0;
		for (uint32_t i = 0; i < s->n; i++)
			if (fits(&s->w[i], a, pass == 0))
				s->cand[n++] = i;
		if (n)
			return &s->w[s->cand[fb_prng_below(p, n)]];
	}
	return NULL;
}

static void h_fault(sim *s, const sim_worker *w, const char *what)
{
	h_begin(s, w);
	h_str(s, "fault ");
	h_str(s, what);
}

static void inject_pause(sim *s, fb_prng *p)
{
	const fb_config *cfg = s->cfg;
	fb_fault_at at = cfg->fault_at == FB_AT_MIX ? (fb_fault_at)fb_prng_below(p, FB_AT_MIX)
	                                            : cfg->fault_at;
	uint64_t d = draw(p, s->pause_lo, s->pause_hi);
	if (at != FB_AT_ANY) {
		sim_worker *w = pick(
		        s, p, at == FB_AT_AFTER_CHECK ? AIM_AFTER_CHECK : AIM_AFTER_READ, false);
		if (!w)
			return;
		w->arm_at = (uint8_t)(1 + at);
		w->arm_ns = d;
		h_fault(s, w, "pause armed ");
		h_us(s, d);
		h_str(s, "us at ");
		h_str(s, fb_fault_at_names[at]);
		h_end(s);
		return;
	}
	sim_worker *w = pick(s, p, AIM_PAUSE_ANY, false);
	if (!w)
		return; /* every live worker is asleep already */
	fb_sim_fault *f = &s->res->fault[FB_FAULT_PAUSE];
	f->injected++;
	if (d > s->ttl)
		f->over_ttl++;
	if (w->holding) {
		f->hit++;
		w->faults |= BIT(FB_FAULT_PAUSE);
	}
	h_fault(s, w, "pause ");
	h_us(s, d);
	h_str(s, w->holding ? "us at any holding k" : "us at any idle k");
	h_u64(s, w->key);
	h_end(s);
	sleep_worker(s, w, s->now + d);
}

/*
 * A clock lies. On a realtime lease service, half the time its clock steps
 * forward (every live lease loses skew_ns: holders work on, past their real
 * expiry). Otherwise one worker's own clock starts running at 1 - drift, or
 * jumps back by skew_ns: only its local lease check can notice.
 */
static void inject_skew(sim *s, fb_prng *p)
{
	const fb_config *cfg = s->cfg;
	fb_sim_fault *f = &s->res->fault[FB_FAULT_SKEW];
	if (cfg->lease_clock == FB_LEASE_CLOCK_REALTIME && fb_prng_below(p, 2) == 0) {
		fb_clock_skewed_jump(&s->service, (int64_t)s->skew_ns);
		f->injected++;
		s->res->skew_service++;
		if (s->skew_ns >= s->ttl)
			f->over_ttl++;
		bool hit = false;
		for (uint32_t i = 0; i < s->n; i++)
			if (s->w[i].alive && s->w[i].holding) {
				s->w[i].faults |= BIT(FB_FAULT_SKEW);
				hit = true;
			}
		if (hit)
			f->hit++;
		h_fault(s, NULL, "skew lease-clock +");
		h_us(s, s->skew_ns);
		h_str(s, "us");
		h_end(s);
		return;
	}
	sim_worker *w = pick(s, p, AIM_ANY, false);
	if (!w)
		return;
	f->injected++;
	if (w->holding) {
		f->hit++;
		w->faults |= BIT(FB_FAULT_SKEW);
	}
	if (fb_prng_below(p, 2) == 0) {
		/* Restart the clock at its current reading, running slow from
		 * here: a lease looks valid for ttl / (1 - drift). */
		uint64_t was = own_now(w);
		double rate = 1.0 - cfg->skew_drift;
		fb_clock_skewed_init(&w->clock, &s->vclock.base, rate, (int64_t)(was - s->now));
		if (cfg->skew_drift >= 0.5)
			f->over_ttl++;
		h_fault(s, w, "skew drift ");
		h_u64(s, (uint64_t)(rate * 1000000 + 0.5));
		h_str(s, "ppm");
	} else {
		fb_clock_skewed_jump(&w->clock, -(int64_t)s->skew_ns);
		if (s->skew_ns >= s->ttl)
			f->over_ttl++;
		h_fault(s, w, "skew jump -");
		h_us(s, s->skew_ns);
		h_str(s, "us");
	}
	h_end(s);
}

static void inject_delay(sim *s, fb_prng *p)
{
	sim_worker *w = pick(s, p, AIM_DELAY, false);
	if (!w)
		return;
	w->arm_delay = true;
	w->arm_delay_ns = draw(p, s->delay_lo, s->delay_hi);
	h_fault(s, w, "delay armed ");
	h_us(s, w->arm_delay_ns);
	h_str(s, "us");
	h_end(s);
}

static void inject_retry(sim *s, fb_prng *p)
{
	sim_worker *w = pick(s, p, AIM_DELAY, false);
	if (!w)
		return;
	w->arm_retry = true;
	h_fault(s, w, "retry armed");
	h_end(s);
}

static void inject_renew(sim *s, fb_prng *p)
{
	sim_worker *w = pick(s, p, AIM_RENEW, false);
	if (!w)
		return;
	w->arm_renew = true;
	/* as the real injector: a stall racing the expiry, 0.5 to 1.5 TTL */
	w->renew_ns = draw(p, s->ttl / 2, s->ttl * 3 / 2);
	h_fault(s, w, "heartbeat armed ");
	h_us(s, w->renew_ns);
	h_str(s, "us");
	h_end(s);
}

/* A holder dies: it never releases and never writes again (writes already
 * in flight still land). One worker always stays alive. */
static void inject_crash(sim *s, fb_prng *p)
{
	if (s->alive <= 1)
		return;
	sim_worker *w = pick(s, p, AIM_ANY, true);
	if (!w)
		return;
	fb_sim_fault *f = &s->res->fault[FB_FAULT_CRASH];
	f->injected++;
	f->hit++;
	f->over_ttl++; /* a crash outlasts any TTL */
	w->alive = false;
	s->alive--;
	if (!w->sleeping)
		run_remove(s, (uint32_t)(w - s->w));
	if (w->stale)
		count_stale_cycle(s, w->faults);
	batch_close(s, w);
	s->crash[w->key] = (sim_crash){s->now, w->id, true};
	h_fault(s, w, "crash holding k");
	h_u64(s, w->key);
	h_str(s, " f");
	h_u64(s, w->lease.fence);
	h_end(s);
}

static void fire_faults(sim *s)
{
	for (int f = 0; f < FB_FAULTS; f++) {
		if (!(s->faults & BIT(f)))
			continue;
		while (s->next_fault[f] <= s->now) {
			fb_prng *p = &s->fp[f];
			switch ((fb_fault)f) {
			case FB_FAULT_PAUSE:
				inject_pause(s, p);
				break;
			case FB_FAULT_SKEW:
				inject_skew(s, p);
				break;
			case FB_FAULT_DELAY:
				inject_delay(s, p);
				break;
			case FB_FAULT_CRASH:
				inject_crash(s, p);
				break;
			case FB_FAULT_RENEW:
				inject_renew(s, p);
				break;
			case FB_FAULT_RETRY:
				inject_retry(s, p);
				break;
			case FB_FAULT_SERVER_PAUSE: /* refused with --deterministic */
			case FB_FAULT_NODE_JUMP:    /* issue 14: likewise */
			case FB_FAULTS:
				break;
			}
			s->next_fault[f] += interval(s, (fb_fault)f);
		}
	}
}

/* When nobody can run: the earliest wake, delivery or fault. */
static uint64_t next_event(const sim *s)
{
	uint64_t t = s->next_due;
	if (s->nheap && s->heap[0].wake < t)
		t = s->heap[0].wake;
	for (int f = 0; f < FB_FAULTS; f++)
		if ((s->faults & BIT(f)) && s->next_fault[f] < t)
			t = s->next_fault[f];
	return t;
}

/* ---- setup, the loop, the verdict ---- */

/*
 * The checker against each store, as bench/run.c's summary: the checker's
 * stale count equals the store's own, every accepted write was walked, the
 * ledger equals the history's lost amount, the history is one chain, and it
 * ends at the store's balance and (fenced disciplines) last fence.
 */
static void summarize(sim *s)
{
	const fb_config *cfg = s->cfg;
	fb_sim_result *res = s->res;
	for (uint32_t i = 0; i < s->nactive; i++) {
		fb_discipline d = s->active[i];
		fb_sim_mode *m = &res->mode[d];
		fb_check_verdict v;
		int64_t *bal = malloc(cfg->keys * sizeof *bal);
		uint64_t *last = malloc(cfg->keys * sizeof *last);
		if (!bal || !last) {
			free(bal);
			free(last);
			snprintf(m->disagreement, sizeof m->disagreement, "out of memory");
			m->on = true;
			continue;
		}
		fb_store_final(s->store[d], cfg->keys, bal, last);
		fb_checker_verdict(s->checker[d], d != FB_UNFENCED, bal, last, cfg->initial_balance,
		                   cfg->amount, m->accepted, m->store_stale, &v, NULL, NULL);
		free(bal);
		free(last);
		m->on = true;
		m->checked = v.checked;
		m->stale_accepted = v.stale_accepted;
		m->chain_breaks = v.chain_breaks;
		m->lost_updates = v.lost_updates;
		m->lost_history = v.lost_history;
		m->checker_agrees = v.agrees;
		memcpy(m->disagreement, v.disagreement, sizeof m->disagreement);
	}
	const fb_sim_mode *f = &res->mode[FB_FENCED], *w = &res->mode[FB_WRITE_FENCED],
	                  *u = &res->mode[FB_UNFENCED];
	res->lease = s->lease;
	res->violation = s->lease.duplicates || s->lease.inversions || s->lease.overlaps ||
	                 (f->on && (f->stale_accepted || f->lost_updates || !f->checker_agrees)) ||
	                 (w->on && (w->stale_accepted || !w->checker_agrees)) ||
	                 (u->on && !u->checker_agrees);
	res->corrupted =
	        (w->on && w->lost_updates) || (u->on && (u->stale_accepted || u->lost_updates));
	res->vacuous = res->stale_cycles == 0;
	for (uint32_t k = 0; k < cfg->keys; k++) {
		const sim_crash *c = &s->crash[k];
		if (!c->pending)
			continue;
		res->crash_pending++;
		if (s->now - c->at > res->crash_pending_age_ns)
			res->crash_pending_age_ns = s->now - c->at;
	}
}

static void destroy(sim *s)
{
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		fb_store_destroy(s->store[d]);
		fb_checker_destroy(s->checker[d]);
	}
	fb_lease_table_destroy(s->leases);
	fb_witness_destroy(s->witness);
	free(s->w);
	free(s->run);
	free(s->runpos);
	free(s->heap);
	free(s->cand);
	free(s->zipf_cdf);
	free(s->traps);
	free(s->crash);
	free(s->batch);
	if (s->hist)
		fclose(s->hist);
}

/* Fault sizes left unset (a configuration built in code rather than parsed)
 * follow the TTL, as the option parser sets them. */
static void fill_sizes(fb_config *c)
{
	if (!c->pause_max_ns) {
		c->pause_min_ns = c->ttl_ns * 3 / 2;
		c->pause_max_ns = c->ttl_ns * 3;
	}
	if (!c->delay_max_ns) {
		c->delay_min_ns = c->ttl_ns * 2;
		c->delay_max_ns = c->ttl_ns * 4;
	}
	if (!c->skew_ns)
		c->skew_ns = c->ttl_ns * 2;
}

static fb_err setup(sim *s, const fb_config *cfg, uint64_t seed)
{
	s->ttl = cfg->ttl_ns;
	s->pause_lo = cfg->pause_min_ns;
	s->pause_hi = cfg->pause_max_ns;
	s->delay_lo = cfg->delay_min_ns;
	s->delay_hi = cfg->delay_max_ns;
	s->skew_ns = cfg->skew_ns;
	s->rmw = cfg->op == FB_OP_RMW;
	s->n = cfg->threads;
	s->alive = s->n;
	s->now = SIM_T0;
	s->next_due = UINT64_MAX;
	s->hash = FNV_OFFSET;
	fb_clock_manual_init(&s->vclock, SIM_T0);
	fb_clock_skewed_init(&s->service, &s->vclock.base, 1.0, 0);
	s->lease_clock =
	        cfg->lease_clock == FB_LEASE_CLOCK_REALTIME ? &s->service.base : &s->vclock.base;
	fb_lease_config lc = {.keys = cfg->keys,
	                      .ttl_ns = cfg->ttl_ns,
	                      .source = cfg->fence,
	                      .first_fence = cfg->first_fence,
	                      .clock = s->lease_clock,
	                      .bug = cfg->bug};
	fb_err e = fb_lease_table_create(&lc, &s->leases);
	if (!e)
		e = fb_witness_create(cfg->keys, cfg->ttl_ns, 50000, &s->witness);
	if (e)
		return e;
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		if (!(cfg->modes & BIT(d)))
			continue;
		s->active[s->nactive++] = (fb_discipline)d;
		if ((e = fb_store_create((fb_discipline)d, cfg->keys, cfg->initial_balance,
		                         &s->store[d])) ||
		    (e = fb_checker_create(cfg->keys, cfg->threads, cfg->initial_balance,
		                           &s->checker[d])))
			return e;
		fb_store_plant(s->store[d], cfg->bug);
	}
	s->w = calloc(s->n, sizeof *s->w);
	s->run = calloc(s->n, sizeof *s->run);
	s->runpos = calloc(s->n, sizeof *s->runpos);
	s->heap = calloc(s->n, sizeof *s->heap);
	s->cand = calloc(s->n, sizeof *s->cand);
	s->traps = calloc(cfg->keys, sizeof *s->traps);
	s->crash = calloc(cfg->keys, sizeof *s->crash);
	if (!s->w || !s->run || !s->runpos || !s->heap || !s->cand || !s->traps || !s->crash)
		return FB_ENOMEM;
	if (cfg->dist.kind == FB_DIST_ZIPF) {
		/* weights (k + 1)^-s from exp_neg and neg_log, not pow(): the
		 * key choices must not depend on the libm */
		if (!(s->zipf_cdf = malloc(cfg->keys * sizeof *s->zipf_cdf)))
			return FB_ENOMEM;
		double sum = 0;
		for (uint32_t k = 0; k < cfg->keys; k++)
			s->zipf_cdf[k] = sum += exp_neg(cfg->dist.s * neg_log(k + 1.0));
		for (uint32_t k = 0; k < cfg->keys; k++)
			s->zipf_cdf[k] /= sum;
		s->zipf_cdf[cfg->keys - 1] = 1.0;
	}
	for (uint32_t i = 0; i < s->n; i++) {
		sim_worker *w = &s->w[i];
		w->id = (uint16_t)(i + 1);
		w->alive = true;
		w->batch = -1;
		w->pc = PC_START;
		fb_clock_skewed_init(&w->clock, &s->vclock.base, 1.0, 0);
		fb_prng_init(&w->rng, seed, w->id);
		run_add(s, i);
	}
	fb_prng_init(&s->sched, seed, STREAM_SCHED);
	const double rate[FB_FAULTS] = {cfg->pause_rate, cfg->skew_rate,  cfg->delay_rate,
	                                cfg->crash_rate, cfg->renew_rate, cfg->retry_rate};
	for (int f = 0; f < FB_FAULTS; f++) {
		fb_prng_init(&s->fp[f], seed, STREAM_FAULT + (uint64_t)f);
		if (!fb_config_fault(cfg, (fb_fault)f))
			continue;
		s->faults |= BIT(f);
		s->mean_ns[f] = 1e9 / rate[f];
		s->next_fault[f] = SIM_T0 + interval(s, (fb_fault)f);
	}
	return FB_OK;
}

fb_err fb_sim_run(const fb_config *user, uint64_t seed, fb_sim_result *out)
{
	fb_config eff = *user;
	const fb_config *cfg = &eff;
	fill_sizes(&eff);
	memset(out, 0, sizeof *out);
	out->seed = seed;
	if (!cfg->threads || cfg->threads > FB_MAX_THREADS || !cfg->keys || !cfg->ttl_ns ||
	    !cfg->steps || !cfg->amount || !(cfg->modes & (BIT(FB_DISCIPLINES) - 1))) {
		fprintf(stderr, "fencebench: deterministic: threads, keys, ttl, steps and modes "
		                "must all be above zero\n");
		return FB_EINVAL;
	}
	sim s = {.cfg = cfg, .res = out};
	fb_err err = setup(&s, cfg, seed);
	if (err) {
		fprintf(stderr,
		        "fencebench: deterministic: cannot set up %u workers and %u keys: %s\n",
		        cfg->threads, cfg->keys, fb_strerror(err));
		destroy(&s);
		return err;
	}
	if (cfg->history_path && !(s.hist = fopen(cfg->history_path, "w"))) {
		fprintf(stderr, "fencebench: --history: cannot write '%s', errno=%d (%s)\n",
		        cfg->history_path, errno, strerror(errno));
		destroy(&s);
		return FB_ESYS;
	}
	for (s.step = 1; s.step <= cfg->steps && !err; s.step++) {
		if (s.nrun) {
			set_now(&s, s.now + STEP_MIN_NS + fb_prng_below(&s.sched, STEP_SPAN_NS));
		} else {
			uint64_t t = next_event(&s);
			if (t == UINT64_MAX) { /* a live worker is always somewhere */
				err = FB_EINVAL;
				break;
			}
			set_now(&s, t);
		}
		deliver_due(&s);
		fire_faults(&s);
		wake_due(&s);
		if (!s.nrun) {
			out->idle_steps++;
			h_begin(&s, NULL);
			h_str(&s, "idle");
			h_end(&s);
			continue;
		}
		sim_worker *w = &s.w[s.run[fb_prng_below(&s.sched, s.nrun)]];
		err = worker_step(&s, w);
	}
	out->steps = s.step - 1;
	/* Writes still in flight land after the last step, in order. */
	while (!err && s.next_due != UINT64_MAX) {
		if (s.next_due > s.now)
			set_now(&s, s.next_due);
		deliver_due(&s);
	}
	out->virtual_ns = s.now - SIM_T0;
	out->hash = s.hash;
	if (err == FB_EFENCE)
		fprintf(stderr,
		        "fencebench: deterministic seed %llu: the fence space (2^47) is "
		        "exhausted at step %llu\n",
		        (unsigned long long)seed, (unsigned long long)out->steps);
	else if (err)
		fprintf(stderr, "fencebench: deterministic seed %llu: %s\n",
		        (unsigned long long)seed, fb_strerror(err));
	if (!err)
		summarize(&s);
	if (s.hist && (fflush(s.hist) || ferror(s.hist)) && !err) {
		fprintf(stderr, "fencebench: --history: writing '%s' failed, errno=%d (%s)\n",
		        cfg->history_path, errno, strerror(errno));
		err = FB_ESYS;
	}
	destroy(&s);
	return err;
}

/* ---- output ---- */

static void print_header(FILE *out, const fb_config *user)
{
	char ttl[32], a[32], b[32];
	fb_config c = *user;
	const fb_config *cfg = &c;
	fill_sizes(&c);
	fb_format_duration(ttl, sizeof ttl, cfg->ttl_ns);
	fprintf(out, "fencebench %s  deterministic  %u workers  %u keys  ttl %s  %llu steps a seed",
	        FB_VERSION, cfg->threads, cfg->keys, ttl, (unsigned long long)cfg->steps);
	fb_dist_format(a, sizeof a, &cfg->dist);
	fprintf(out, "  op %s  fence %s  dist %s  check %s  lease clock %s\n",
	        cfg->op == FB_OP_RMW ? "rmw" : "debit", fb_fence_source_name(cfg->fence), a,
	        fb_check_lease_names[cfg->check_lease], fb_lease_clock_names[cfg->lease_clock]);
	const double rate[FB_FAULTS] = {cfg->pause_rate, cfg->skew_rate,  cfg->delay_rate,
	                                cfg->crash_rate, cfg->renew_rate, cfg->retry_rate};
	fprintf(out, "faults (per virtual second):");
	bool any = false;
	for (int f = 0; f < FB_FAULTS; f++) {
		if (!fb_config_fault(cfg, (fb_fault)f))
			continue;
		any = true;
		fprintf(out, "  %s %g/s", fb_fault_names[f], rate[f]);
		if (f == FB_FAULT_PAUSE || f == FB_FAULT_RENEW || f == FB_FAULT_DELAY) {
			bool delay = f == FB_FAULT_DELAY;
			fb_format_duration(a, sizeof a,
			                   delay ? cfg->delay_min_ns : cfg->pause_min_ns);
			fb_format_duration(b, sizeof b,
			                   delay ? cfg->delay_max_ns : cfg->pause_max_ns);
			fprintf(out, " x %s-%s", a, b);
		}
		if (f == FB_FAULT_PAUSE)
			fprintf(out, " at %s", fb_fault_at_names[cfg->fault_at]);
		if (f == FB_FAULT_SKEW) {
			fb_format_duration(a, sizeof a, cfg->skew_ns);
			fprintf(out, " (steps %s, drift %g)", a, cfg->skew_drift);
		}
	}
	fprintf(out, "%s\n", any ? "" : "  none");
}

/* One row of the table; "-" where the number has no meaning (reads are
 * refused by the fenced store only). */
static void row(FILE *out, const fb_sim_result *r, const char *label, const char *note,
                long long (*get)(const fb_sim_mode *m, fb_discipline d), bool fenced_only)
{
	fprintf(out, "%-22s", label);
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		if (!r->mode[d].on)
			continue;
		if (fenced_only && d != FB_FENCED)
			fprintf(out, " %13s", "-");
		else
			fprintf(out, " %13lld", get(&r->mode[d], (fb_discipline)d));
	}
	fprintf(out, "%s%s\n", note ? "   " : "", note ? note : "");
}

static long long g_accepted(const fb_sim_mode *m, fb_discipline d)
{
	(void)d;
	return (long long)m->accepted;
}

static long long g_refused(const fb_sim_mode *m, fb_discipline d)
{
	(void)d;
	return (long long)m->reads_refused;
}

static long long g_rejected(const fb_sim_mode *m, fb_discipline d)
{
	(void)d;
	return (long long)m->rejected_stale;
}

static long long g_stale(const fb_sim_mode *m, fb_discipline d)
{
	(void)d;
	return (long long)m->stale_accepted;
}

static long long g_lost(const fb_sim_mode *m, fb_discipline d)
{
	(void)d;
	return (long long)m->lost_updates;
}

static long long g_zombie(const fb_sim_mode *m, fb_discipline d)
{
	(void)d;
	return (long long)m->zombie_writes;
}

static void replay_line(FILE *out, const char *prefix, const fb_config *cfg, uint64_t seed)
{
	fb_config c = *cfg;
	char buf[2048];
	fill_sizes(&c);
	c.seed = seed;
	c.seed_lo = c.seed_hi = seed;
	c.seeds_given = false;
	c.deterministic = true;
	fb_config_replay(&c, buf, sizeof buf);
	fprintf(out, "%sreplay: %s\n", prefix, buf);
}

static void print_faults(FILE *out, const fb_config *cfg, const fb_sim_result *r)
{
	bool any = false;
	for (int f = 0; f < FB_FAULTS; f++)
		any |= fb_config_fault(cfg, (fb_fault)f);
	if (!any)
		return;
	fprintf(out, "\n%-10s %9s %11s %8s %11s %15s\n", "fault", "injected", "hit holder", "> ttl",
	        "taken over", "stale attempts");
	for (int f = 0; f < FB_FAULTS; f++) {
		if (!fb_config_fault(cfg, (fb_fault)f))
			continue;
		const fb_sim_fault *x = &r->fault[f];
		const char *note = "";
		if (f == FB_FAULT_CRASH)
			note = "   (liveness: a dead holder writes nothing)";
		else if (!x->stale)
			note = "   vacuous: no stale write attempted";
		fprintf(out, "%-10s %9llu %11llu %8llu %11llu %15llu%s\n", fb_fault_names[f],
		        (unsigned long long)x->injected, (unsigned long long)x->hit,
		        (unsigned long long)x->over_ttl, (unsigned long long)x->taken_over,
		        (unsigned long long)x->stale, note);
	}
	if (fb_config_fault(cfg, FB_FAULT_PAUSE))
		fprintf(out, "pause: %llu of them takers held by a takeover trap\n",
		        (unsigned long long)r->pause_trapped);
	if (fb_config_fault(cfg, FB_FAULT_SKEW))
		fprintf(out, "skew: lease-clock steps %llu, local checks fooled %llu\n",
		        (unsigned long long)r->skew_service, (unsigned long long)r->local_fooled);
	if (fb_config_fault(cfg, FB_FAULT_DELAY))
		fprintf(out, "delay: writes delivered late %llu\n",
		        (unsigned long long)r->delayed_writes);
	if (fb_config_fault(cfg, FB_FAULT_RENEW))
		fprintf(out, "renew: renewals that failed but were believed %llu\n",
		        (unsigned long long)r->renew_failed);
	if (fb_config_fault(cfg, FB_FAULT_CRASH)) {
		char mx[32] = "-", mean[32] = "-", age[32] = "-";
		if (r->crash_taken) {
			fb_format_duration(mx, sizeof mx, r->crash_latency_max_ns);
			fb_format_duration(mean, sizeof mean,
			                   r->crash_latency_sum_ns / r->crash_taken);
		}
		if (r->crash_pending)
			fb_format_duration(age, sizeof age, r->crash_pending_age_ns);
		fprintf(out,
		        "crash: leases taken over %llu, takeover latency max %s mean %s; still "
		        "held by the dead %llu (oldest %s)\n",
		        (unsigned long long)r->crash_taken, mx, mean,
		        (unsigned long long)r->crash_pending, age);
	}
}

/* The single seed's summary: the table, the faults, the verdict. */
static void print_summary(FILE *out, const fb_config *cfg, const fb_sim_result *r)
{
	fprintf(out, "\n%-22s", "");
	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (r->mode[d].on)
			fprintf(out, " %13s", fb_discipline_name((fb_discipline)d));
	fprintf(out, "   (same workers, leases and faults)\n");
	row(out, r, "writes accepted", NULL, g_accepted, false);
	row(out, r, "reads refused", NULL, g_refused, true);
	row(out, r, "rejected as stale", NULL, g_rejected, false);
	row(out, r, "stale accepted", "<- writes that went backwards", g_stale, false);
	row(out, r, "lost updates", "<- debits erased", g_lost, false);
	row(out, r, "zombie writes", "<- landed after the writer's lease expired", g_zombie, false);
	fprintf(out, "%-22s", "checker agrees");
	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (r->mode[d].on)
			fprintf(out, " %13s", r->mode[d].checker_agrees ? "yes" : "NO");
	fprintf(out, "\n");
	print_faults(out, cfg, r);
	if (r->lease.duplicates || r->lease.inversions || r->lease.overlaps)
		fprintf(out,
		        "lease: VIOLATED !!! %llu fences handed out twice, %llu out of acquisition "
		        "order, %llu acquired while the previous lease was live\n",
		        (unsigned long long)r->lease.duplicates,
		        (unsigned long long)r->lease.inversions,
		        (unsigned long long)r->lease.overlaps);
	char vt[32];
	fb_format_duration(vt, sizeof vt, r->virtual_ns ? r->virtual_ns : 1);
	fprintf(out,
	        "\n%llu steps (%llu idle), %s virtual: cycles %llu  acquired %llu  contended %llu  "
	        "checks failed %llu  stale attempts %llu\n",
	        (unsigned long long)r->steps, (unsigned long long)r->idle_steps, vt,
	        (unsigned long long)r->cycles, (unsigned long long)r->acquired,
	        (unsigned long long)r->contended, (unsigned long long)r->checks_failed,
	        (unsigned long long)r->stale_cycles);
	fprintf(out, "history hash: 0x%016llx (%llu lines)%s%s\n\n", (unsigned long long)r->hash,
	        (unsigned long long)r->lines, cfg->history_path ? " written to " : "",
	        cfg->history_path ? cfg->history_path : "");

	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (r->mode[d].on && !r->mode[d].checker_agrees)
			fprintf(out, "%s: CHECKER DISAGREES: %s\n",
			        fb_discipline_name((fb_discipline)d), r->mode[d].disagreement);
	const fb_sim_mode *f = &r->mode[FB_FENCED], *w = &r->mode[FB_WRITE_FENCED],
	                  *u = &r->mode[FB_UNFENCED];
	if (f->on) {
		if (f->stale_accepted || f->lost_updates)
			fprintf(out,
			        "fenced: VIOLATED !!! (%llu stale writes accepted, %lld updates "
			        "lost)\n",
			        (unsigned long long)f->stale_accepted, (long long)f->lost_updates);
		else if (!f->checker_agrees)
			fprintf(out, "fenced: FAIL !!! (its checker disagrees with it, above)\n");
		else if (r->vacuous)
			fprintf(out,
			        "fenced: no violation, but vacuous: no stale write attempted\n");
		else
			fprintf(out, "fenced: SAFE (%llu stale writes refused)\n",
			        (unsigned long long)(f->rejected_stale + f->reads_refused));
	}
	if (w->on) {
		if (w->stale_accepted)
			fprintf(out, "write-fenced: VIOLATED !!! (%llu stale writes accepted)\n",
			        (unsigned long long)w->stale_accepted);
		else if (!w->checker_agrees)
			fprintf(out,
			        "write-fenced: FAIL !!! (its checker disagrees with it, above)\n");
		else if (w->lost_updates)
			fb_say_write_fenced_lost(out, w->lost_updates);
		else
			fprintf(out, "write-fenced: no stale write, no update lost\n");
	}
	if (u->on) {
		if (u->stale_accepted || u->lost_updates)
			fb_say_unfenced_corrupted(out, u->stale_accepted, u->lost_updates);
		else
			fprintf(out, "unfenced: no corruption observed\n");
	}
	fprintf(out, "\n%s:", r->violation ? "FAIL !!!" : r->vacuous ? "VACUOUS" : "PASS");
	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (r->mode[d].on)
			fprintf(out, " %s stale=%llu lost=%lld agree=%s;",
			        fb_discipline_name((fb_discipline)d),
			        (unsigned long long)r->mode[d].stale_accepted,
			        (long long)r->mode[d].lost_updates,
			        r->mode[d].checker_agrees ? "yes" : "NO");
	if (r->vacuous)
		fprintf(out, " vacuous: no stale write attempted;");
	fprintf(out, "\n");
	if (r->violation || r->corrupted)
		replay_line(out, "", cfg, r->seed);
}

/* One line of a sweep: seed, hash, unfenced stale, fenced stale/lost. */
static void print_seed_line(FILE *out, const fb_sim_result *r)
{
	fprintf(out, "seed %-6llu hash 0x%016llx", (unsigned long long)r->seed,
	        (unsigned long long)r->hash);
	if (r->mode[FB_UNFENCED].on)
		fprintf(out, "  unfenced stale %-5llu lost %-7lld",
		        (unsigned long long)r->mode[FB_UNFENCED].stale_accepted,
		        (long long)r->mode[FB_UNFENCED].lost_updates);
	if (r->mode[FB_WRITE_FENCED].on)
		fprintf(out, "  write-fenced stale %llu lost %-5lld",
		        (unsigned long long)r->mode[FB_WRITE_FENCED].stale_accepted,
		        (long long)r->mode[FB_WRITE_FENCED].lost_updates);
	if (r->mode[FB_FENCED].on)
		fprintf(out, "  fenced stale %llu lost %lld",
		        (unsigned long long)r->mode[FB_FENCED].stale_accepted,
		        (long long)r->mode[FB_FENCED].lost_updates);
	fprintf(out, "%s\n",
	        r->violation ? "  FAIL !!!"
	        : r->vacuous ? "  vacuous: no stale write attempted"
	                     : "");
	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (r->mode[d].on && !r->mode[d].checker_agrees)
			fprintf(out, "  %s: CHECKER DISAGREES: %s\n",
			        fb_discipline_name((fb_discipline)d), r->mode[d].disagreement);
}

int fb_sim_main(const fb_config *cfg)
{
	const fb_clock *wall = fb_clock_monotonic();
	uint64_t t0 = fb_clock_now(wall), steps = 0;
	fb_sim_result r;
	if (cfg->seed_lo == cfg->seed_hi) {
		print_header(stdout, cfg);
		fflush(stdout);
		if (fb_sim_run(cfg, cfg->seed_lo, &r) != FB_OK)
			return 3;
		double el = (double)(fb_clock_now(wall) - t0) / 1e9;
		print_summary(stdout, cfg, &r);
		fflush(stdout);
		/* Wall time goes to stderr: stdout stays the same for the same seed. */
		if (!cfg->quiet)
			fprintf(stderr, "fencebench: %llu steps in %.3f s (%.0f steps/s)\n",
			        (unsigned long long)r.steps, el,
			        el > 0 ? (double)r.steps / el : 0.0);
		return r.violation ? 1 : 0;
	}
	print_header(stdout, cfg);
	fprintf(stdout, "seeds %llu..%llu, stopping at the first fenced violation\n\n",
	        (unsigned long long)cfg->seed_lo, (unsigned long long)cfg->seed_hi);
	uint64_t ran = 0, corrupted = 0, vacuous = 0;
	int code = 0;
	for (uint64_t seed = cfg->seed_lo;; seed++) {
		if (fb_sim_run(cfg, seed, &r) != FB_OK) {
			code = 3;
			break;
		}
		ran++;
		steps += r.steps;
		corrupted += r.corrupted;
		vacuous += r.vacuous;
		print_seed_line(stdout, &r);
		if (r.violation || r.corrupted)
			replay_line(stdout, "  ", cfg, seed);
		fflush(stdout);
		if (r.violation) {
			code = 1;
			break;
		}
		if (seed == cfg->seed_hi)
			break;
	}
	double el = (double)(fb_clock_now(wall) - t0) / 1e9;
	fprintf(stdout,
	        "\n%s: %llu seeds run, %s; write-fenced or unfenced corrupted in %llu, vacuous "
	        "%llu\n",
	        code == 1 ? "FAIL !!!"
	        : code    ? "ERROR"
	                  : "PASS",
	        (unsigned long long)ran,
	        code == 1 ? "a fenced violation (replay above)" : "no fenced violation",
	        (unsigned long long)corrupted, (unsigned long long)vacuous);
	fflush(stdout);
	if (!cfg->quiet)
		fprintf(stderr, "fencebench: %llu seeds, %llu steps in %.3f s (%.0f steps/s)\n",
		        (unsigned long long)ran, (unsigned long long)steps, el,
		        el > 0 ? (double)steps / el : 0.0);
	return code;
}
