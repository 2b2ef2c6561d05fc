/*
 * corebench: what one uncontended core cycle costs on one thread, set beside
 * the atomic floors it is built from, so a regression in lease.c or store.c
 * shows up as a ratio rather than a guess.
 *
 * The floors climb one step at a time: a relaxed fetch_add, a 64-bit
 * load + CAS, a 16-byte load + CAS (through libatomic, as the lease slot and
 * the store record use it), then the bare pipeline of three 16-byte CASes on
 * two words that an acquire, a fenced write and a release cannot do without.
 * The clock rows price the reads the core adds. The core rows are the real
 * calls: acquire, read + write (a client's read-modify-write) or debit,
 * release, on one key with a 10 ms TTL on the fast clock. The chain rows
 * are what the lease chain (bench/verify/chain.h) takes a lease's record
 * for, a correct table's on 16 keys: in the keys' slot order, and as a
 * feed's passes bring two workers' records, each's batch of 4 leases a key
 * in turn (every record then comes before the one it replaced, or after
 * the one that replaced it). Everything is
 * timed with the monotonic clock; each row is the median and the minimum of
 * CB_REPS repetitions after one untimed warm-up.
 *
 *   corebench [iterations per repetition]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "chain.h"
#include "clock.h"
#include "common.h"
#include "lease.h"
#include "store.h"

#define CB_REPS          7
#define CB_ITERS_DEFAULT UINT64_C(2000000)
#define CB_TTL_NS        UINT64_C(10000000)
#define CB_OWNER         1
#define CB_DEBIT         2

typedef struct cb_ctx {
	alignas(FB_PAD_LINE) _Atomic uint64_t counter;
	alignas(FB_PAD_LINE) _Atomic uint64_t word64;
	alignas(FB_PAD_LINE) fb_atomic_u128 word128;
	alignas(FB_PAD_LINE) fb_atomic_u128 slot;
	alignas(FB_PAD_LINE) fb_atomic_u128 record;
	fb_lease_table *lease[2]; /* indexed by fb_fence_source */
	fb_store *store[2];       /* one per source: their fence sequences differ */
	const fb_clock *fast;
	uint64_t failures; /* core steps that did not do what one thread must see */
} cb_ctx;

typedef struct cb_case {
	const char *name;
	uint64_t (*run)(cb_ctx *c, int arg, uint64_t n);
	int arg; /* the clock, or the core's fence source | CB_DEBIT */
	double median, min;
} cb_case;

/* Every result lands here, so no loop is dead code. */
static volatile uint64_t cb_sink;

static uint64_t cb_atomic(cb_ctx *c, int arg, uint64_t n)
{
	(void)arg;
	uint64_t acc = 0;
	for (uint64_t i = 0; i < n; i++)
		acc += atomic_fetch_add_explicit(&c->counter, 1, memory_order_relaxed);
	return acc;
}

static uint64_t cb_cas64(cb_ctx *c, int arg, uint64_t n)
{
	(void)arg;
	uint64_t acc = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t cur = atomic_load_explicit(&c->word64, memory_order_acquire);
		acc += atomic_compare_exchange_strong_explicit(
		        &c->word64, &cur, cur + 1, memory_order_acq_rel, memory_order_acquire);
	}
	return acc;
}

static uint64_t cb_cas128(cb_ctx *c, int arg, uint64_t n)
{
	(void)arg;
	uint64_t acc = 0;
	for (uint64_t i = 0; i < n; i++) {
		fb_u128 cur = atomic_load_explicit(&c->word128, memory_order_acquire);
		fb_u128 next = {cur.lo + 1, cur.hi};
		acc += atomic_compare_exchange_strong_explicit(
		        &c->word128, &cur, next, memory_order_acq_rel, memory_order_acquire);
	}
	return acc;
}

/* The words' values are carried from one CAS to the next, so the loop holds
 * only the three CASes, with the orders lease.c and store.c give them. */
static uint64_t cb_pipeline(cb_ctx *c, int arg, uint64_t n)
{
	(void)arg;
	fb_u128 slot = atomic_load_explicit(&c->slot, memory_order_acquire);
	fb_u128 rec = atomic_load_explicit(&c->record, memory_order_acquire);
	uint64_t acc = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t fence = (slot.lo >> 16) + 1;
		fb_u128 held = {fence << 16 | CB_OWNER, CB_TTL_NS};
		acc += atomic_compare_exchange_strong_explicit(
		        &c->slot, &slot, held, memory_order_acq_rel, memory_order_acquire);
		fb_u128 wrote = {rec.lo - 1, fence};
		acc += atomic_compare_exchange_strong_explicit(
		        &c->record, &rec, wrote, memory_order_acq_rel, memory_order_acquire);
		rec = wrote;
		fb_u128 freed = {fence << 16, 0};
		acc += atomic_compare_exchange_strong_explicit(
		        &c->slot, &held, freed, memory_order_release, memory_order_relaxed);
		slot = freed;
	}
	return acc;
}

static uint64_t cb_clock(cb_ctx *c, int arg, uint64_t n)
{
	const fb_clock *clk = arg ? c->fast : fb_clock_monotonic();
	uint64_t acc = 0;
	for (uint64_t i = 0; i < n; i++)
		acc += fb_clock_now(clk);
	return acc;
}

static uint64_t cb_core(cb_ctx *c, int arg, uint64_t n)
{
	fb_lease_table *t = c->lease[arg & 1];
	fb_store *s = c->store[arg & 1];
	bool debit = arg & CB_DEBIT;
	fb_lease_stats st = {0};
	uint64_t acc = 0;
	for (uint64_t i = 0; i < n; i++) {
		fb_lease l;
		fb_store_result r;
		if (fb_lease_acquire(t, 0, CB_OWNER, &l, &st) != FB_ACQUIRED) {
			c->failures++;
			continue;
		}
		bool ok = debit ? fb_store_debit(s, 0, 1, l.fence, &r)
		                : fb_store_read(s, 0, l.fence, &r) &&
		                          fb_store_write(s, 0, r.balance - 1, l.fence, &r);
		c->failures += !ok + !fb_lease_release(t, 0, CB_OWNER, l.fence);
		acc += (uint64_t)r.balance;
	}
	c->failures += st.cas_retries + st.wasted_fences;
	return acc;
}

/* The chain's case: n leases of a correct table, made as they come. */
#define CB_CHAIN_KEYS  16
#define CB_CHAIN_BATCH 4
#define CB_BATCHED     1

static uint64_t cb_chain(cb_ctx *c, int arg, uint64_t n)
{
	enum { K = CB_CHAIN_KEYS, R = CB_CHAIN_BATCH };
	fb_chain *ch;
	if (fb_chain_create(K, 0, 0, &ch) != FB_OK) {
		c->failures++;
		return 0;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t key, idx; /* the key, and the lease's place in the key's slot order */
		if (arg == CB_BATCHED) {
			/* a round: worker 1's leases of every key, then worker 2's */
			uint64_t round = i / (2 * K * R), j = i % (2 * K * R);
			uint64_t half = j / (K * R), m = j % (K * R);
			key = m % K;
			idx = round * 2 * R + 2 * (m / K) + half;
		} else {
			key = i % K;
			idx = i / K;
		}
		fb_chain_rec r = {.fence = idx * K + key + 1,
		                  .replaced = idx ? (idx - 1) * K + key + 1 : 0,
		                  .at = idx * 100,
		                  .expires_at = idx * 100 + 50,
		                  .key = (uint32_t)key,
		                  .owner = (uint16_t)(idx % 2 + 1),
		                  .end = FB_CHAIN_RELEASED};
		if (fb_chain_take(ch, &r) != FB_OK)
			c->failures++;
	}
	bool whole = n % (2 * K * R) == 0; /* a round cut short leaves leases waiting */
	bool judged = fb_chain_finish(ch, true);
	const fb_chain_counts *k = fb_chain_counts_of(ch);
	if (!judged || k->overlaps || k->twice || k->inverted ||
	    (whole && (k->forks || k->links != k->records)))
		c->failures++;
	uint64_t links = k->links;
	fb_chain_destroy(ch);
	return links;
}

static void cb_measure(cb_ctx *c, cb_case *k, uint64_t n)
{
	const fb_clock *mono = fb_clock_monotonic();
	double ns[CB_REPS];
	cb_sink += k->run(c, k->arg, n / 10 + 1);
	for (int r = 0; r < CB_REPS; r++) {
		uint64_t t0 = fb_clock_now(mono);
		cb_sink += k->run(c, k->arg, n);
		ns[r] = (double)(fb_clock_now(mono) - t0) / (double)n;
		for (int j = r; j > 0 && ns[j - 1] > ns[j]; j--) {
			double tmp = ns[j];
			ns[j] = ns[j - 1];
			ns[j - 1] = tmp;
		}
	}
	k->median = ns[CB_REPS / 2];
	k->min = ns[0];
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : CB_ITERS_DEFAULT;
	if (n == 0) {
		fprintf(stderr, "usage: %s [iterations per repetition > 0]\n", argv[0]);
		return 2;
	}
	static cb_ctx c;
	c.fast = fb_clock_fast();
	atomic_init(&c.record, ((fb_u128){UINT64_C(1) << 62, 0}));
	fb_err e = FB_OK;
	for (int src = 0; src < 2 && e == FB_OK; src++) {
		fb_lease_config cfg = {.keys = 1,
		                       .ttl_ns = CB_TTL_NS,
		                       .source = (fb_fence_source)src,
		                       .first_fence = 1,
		                       .clock = c.fast};
		e = fb_lease_table_create(&cfg, &c.lease[src]);
		if (e == FB_OK)
			e = fb_store_create(FB_FENCED, 1, INT64_C(1) << 62, &c.store[src]);
	}
	if (e != FB_OK) {
		fprintf(stderr, "corebench: setup failed: %s\n", fb_strerror(e));
		goto out;
	}
	cb_case cases[] = {
	        {"atomic floor (fetch_add relaxed)", cb_atomic, 0, 0, 0},
	        {"cas64 floor (load + CAS)", cb_cas64, 0, 0, 0},
	        {"cas128 floor (load + CAS)", cb_cas128, 0, 0, 0},
	        {"floor pipeline (3 x CAS128)", cb_pipeline, 0, 0, 0},
	        {"clock monotonic", cb_clock, 0, 0, 0},
	        {"clock fast", cb_clock, 1, 0, 0},
	        {"core per-key: read + write", cb_core, FB_FENCE_PER_KEY, 0, 0},
	        {"core global:  read + write", cb_core, FB_FENCE_GLOBAL, 0, 0},
	        {"core per-key: debit", cb_core, FB_FENCE_PER_KEY | CB_DEBIT, 0, 0},
	        {"core global:  debit", cb_core, FB_FENCE_GLOBAL | CB_DEBIT, 0, 0},
	        {"lease chain: slot order", cb_chain, 0, 0, 0},
	        {"lease chain: 2 workers' batches", cb_chain, CB_BATCHED, 0, 0},
	};
	enum { CB_CASES = sizeof cases / sizeof cases[0] };
	double pipe_ns = 0;
	for (int i = 0; i < CB_CASES; i++) {
		cb_measure(&c, &cases[i], n);
		pipe_ns = cases[i].run == cb_pipeline ? cases[i].median : pipe_ns;
	}

	printf("corebench %s: 1 thread, %d reps x %" PRIu64 " iterations, fast clock = %s,"
	       " fenced store, 1 key, TTL %" PRIu64 " ms\n\n",
	       FB_VERSION, CB_REPS, n, c.fast->name, CB_TTL_NS / 1000000);
	printf("%-34s %10s %10s %10s\n", "operation", "median ns", "min ns", "x pipeline");
	for (int i = 0; i < CB_CASES; i++)
		printf("%-34s %10.2f %10.2f %10.2f\n", cases[i].name, cases[i].median, cases[i].min,
		       cases[i].median / pipe_ns);
	printf("\ncore failures: %" PRIu64 "%s\n", c.failures, c.failures ? "  !!!" : "");
	if (c.failures)
		e = FB_EINVAL;
out:
	for (int src = 0; src < 2; src++) {
		fb_store_destroy(c.store[src]);
		fb_lease_table_destroy(c.lease[src]);
	}
	return e == FB_OK ? 0 : 1;
}
