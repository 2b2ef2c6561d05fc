#include "checker.h"
#include "util.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Walk state of a key, one 16-byte word: lo = next_version << 48 | max
 * fence, hi = balance after the last walked write. A thread walks record v
 * by CAS from (v, max, bal) to (v + 1, max', bal'); the winner alone adds
 * to the tallies, so each record counts exactly once.
 */
#define WALK_FENCE_MASK FB_FENCE_MAX
#define TAG_PUBLISHED   (UINT64_C(1) << 16)

typedef struct rec {
	_Atomic uint64_t tag; /* version | TAG_PUBLISHED once the fields are in */
	_Atomic uint64_t fence;
	_Atomic int64_t read, replaced, written;
} rec;

typedef struct ckey {
	alignas(FB_PAD_LINE) fb_atomic_u128 walk;
	/* Records in the ring not yet walked. A write committed in order steps
	 * the walk itself and never touches the ring; it looks here for
	 * records that arrived early and wait behind it. */
	_Atomic uint64_t parked;
	/* Records walked = wraps * 2^16 + next_version - 1: the walk's own
	 * 16-bit position counts them, and the winner of the step past version
	 * 65535 counts the wrap (a locked add once in 65536, not every time). */
	_Atomic uint64_t wraps, stale, breaks;
	_Atomic int64_t lost_amount;
	rec *ring;
} ckey;

struct fb_checker {
	ckey *k;
	rec *rings;
	uint32_t keys;
	uint32_t ring; /* records per key, a power of two <= 2^15 */
	/* a commit's wait: given up when *abort is set or after max_wait */
	const _Atomic int *abort;
	const fb_clock *clk;
	uint64_t max_wait;
};

fb_err fb_checker_create(uint32_t keys, uint32_t writers, int64_t initial_balance, fb_checker **out)
{
	if (!keys)
		return FB_EINVAL;
	/* 2^18 records in all (10 MiB) where keys allow, at most 2^14 and at
	 * least 4 a key: a key among many sees few commits while one writer
	 * sleeps. */
	uint32_t ring = 1u << 14;
	while (ring > 4 && (uint64_t)ring * keys > (1u << 18))
		ring >>= 1;
	/* Every waiting writer holds one version past the ring: a version may
	 * not lap the walk's 16-bit cursor. */
	while (ring > 1 && (uint64_t)ring + writers >= (1u << 16))
		ring >>= 1;
	if ((uint64_t)ring + writers >= (1u << 16))
		return FB_EINVAL;
	fb_checker *c = calloc(1, sizeof *c);
	if (!c)
		return FB_ENOMEM;
	c->k = aligned_alloc(FB_PAD_LINE, (size_t)keys * sizeof *c->k);
	c->rings = malloc((size_t)keys * ring * sizeof *c->rings);
	if (!c->k || !c->rings) {
		fb_checker_destroy(c);
		return FB_ENOMEM;
	}
	/* Written now, every page: only records that arrive early land in the
	 * ring, so its pages would otherwise fault in one by one through the
	 * run (a page fault inside a measured cycle, and a resident set that
	 * grows for minutes: the soak's leak check saw it). The volatile
	 * stores: the compiler may turn a memset of fresh memory into a calloc,
	 * which touches nothing. */
	size_t bytes = (size_t)keys * ring * sizeof *c->rings;
	memset(c->rings, 0, bytes);
	for (size_t b = 0; b < bytes; b += 4096)
		((volatile char *)c->rings)[b] = 0;
	c->keys = keys;
	c->ring = ring;
	for (uint32_t i = 0; i < keys; i++) {
		ckey *k = &c->k[i];
		atomic_init(&k->walk, ((fb_u128){UINT64_C(1) << 48, (uint64_t)initial_balance}));
		atomic_init(&k->parked, 0);
		atomic_init(&k->wraps, 0);
		atomic_init(&k->stale, 0);
		atomic_init(&k->breaks, 0);
		atomic_init(&k->lost_amount, 0);
		k->ring = &c->rings[(size_t)i * ring];
	}
	*out = c;
	return FB_OK;
}

void fb_checker_destroy(fb_checker *c)
{
	if (!c)
		return;
	free(c->k);
	free(c->rings);
	free(c);
}

static inline uint16_t walk_next(fb_u128 w)
{
	return (uint16_t)(w.lo >> 48);
}

/* Walk key k as far as published records go. */
static void advance_from(fb_checker *c, ckey *k, fb_u128 w);

/* Where the walk goes from w by a record of fence and written. */
static inline fb_u128 step(fb_u128 w, uint64_t fence, int64_t written)
{
	uint64_t max = w.lo & WALK_FENCE_MASK;
	return (fb_u128){(uint64_t)(uint16_t)(walk_next(w) + 1) << 48 | (fence > max ? fence : max),
	                 (uint64_t)written};
}

/* The tallies of one record, by the thread whose CAS stepped the walk past
 * it from w: each record counts exactly once. */
static void tally(ckey *k, fb_u128 w, uint64_t fence, int64_t read, int64_t replaced)
{
	if (walk_next(w) == UINT16_MAX)
		atomic_fetch_add_explicit(&k->wraps, 1, memory_order_relaxed);
	if (fence <= (w.lo & WALK_FENCE_MASK))
		atomic_fetch_add_explicit(&k->stale, 1, memory_order_relaxed);
	if (replaced != (int64_t)w.hi)
		atomic_fetch_add_explicit(&k->breaks, 1, memory_order_relaxed);
	if (replaced != read)
		atomic_fetch_add_explicit(&k->lost_amount, read - replaced, memory_order_relaxed);
}

/* Walk key k as far as published records go. */
static void advance(fb_checker *c, ckey *k)
{
	advance_from(c, k, atomic_load_explicit(&k->walk, memory_order_acquire));
}

/*
 * Walk key k as far as published records go, starting from a guess of the
 * walk word (a wrong guess costs one failed CAS, which returns the truth).
 *
 * A parked record is claimed before the walk steps past it: the one thread
 * that clears its tag owns it, reads it and steps. So no tag outlives its
 * record: in-order commits never write their slot, and a tag left behind
 * would match again when its 16-bit version comes round, 2^16 commits on
 * (a walker paused between stepping and clearing saw exactly that). While
 * claimed the walk cannot pass the record (nobody else can step it), so no
 * writer refills the slot; a claim on a stale guess of the walk (the walk
 * is not at that version) is handed back.
 */
static void advance_from(fb_checker *c, ckey *k, fb_u128 w)
{
	for (;;) {
		uint16_t v = walk_next(w);
		rec *r = &k->ring[v & (c->ring - 1)];
		uint64_t tag = v | TAG_PUBLISHED;
		/* seq_cst (the load, and the claim's CAS): pairs with a parker's
		 * seq_cst tag store and walk load, so either this walker sees
		 * the record or its parker sees this walker's step; acquire
		 * makes the fields below the ones the parker wrote */
		if (atomic_load_explicit(&r->tag, memory_order_seq_cst) != tag ||
		    !atomic_compare_exchange_strong_explicit(&r->tag, &tag, 0, memory_order_seq_cst,
		                                             memory_order_seq_cst))
			return; /* not there yet, or another walker has it */
		uint64_t fence = atomic_load_explicit(&r->fence, memory_order_relaxed);
		int64_t read = atomic_load_explicit(&r->read, memory_order_relaxed);
		int64_t replaced = atomic_load_explicit(&r->replaced, memory_order_relaxed);
		int64_t written = atomic_load_explicit(&r->written, memory_order_relaxed);
		bool stepped = false;
		while (walk_next(w) == v) {
			fb_u128 next = step(w, fence, written);
			if (atomic_compare_exchange_weak_explicit(&k->walk, &w, next,
			                                          memory_order_seq_cst,
			                                          memory_order_seq_cst)) {
				tally(k, w, fence, read, replaced);
				atomic_fetch_sub_explicit(&k->parked, 1, memory_order_relaxed);
				w = next;
				stepped = true;
				break;
			}
		}
		if (!stepped) { /* w was stale: the record waits for the walk, tagged again */
			atomic_store_explicit(&r->tag, v | TAG_PUBLISHED, memory_order_seq_cst);
			return;
		}
	}
}

void fb_checker_bound(fb_checker *c, const _Atomic int *abort, const fb_clock *clk,
                      uint64_t max_wait_ns)
{
	c->abort = abort;
	c->clk = clk;
	c->max_wait = max_wait_ns;
}

bool fb_checker_commit(fb_checker *c, uint32_t key, uint16_t version, uint64_t fence, int64_t read,
                       int64_t replaced, int64_t written, uint64_t prev_max, uint64_t *stalls)
{
	ckey *k = &c->k[key];
	/*
	 * In order (the common case): the walk waits right at this version, the
	 * previous write having left the balance this one replaced and, where
	 * it carried the store's highest fence (write-fenced, unfenced), that
	 * fence: guess that word and step it with this record, sparing the load
	 * and the ring. A wrong guess costs the failed CAS, which returns the
	 * truth (a fenced read registers a higher token: there it misses).
	 */
	fb_u128 w = {(uint64_t)version << 48 | (prev_max & FB_FENCE_MAX), (uint64_t)replaced};
	while (walk_next(w) == version) {
		fb_u128 next = step(w, fence, written);
		/* seq_cst, and the load of parked after it: a record parked
		 * meanwhile is seen here, or its writer's walk sees this step */
		if (atomic_compare_exchange_weak_explicit(&k->walk, &w, next, memory_order_seq_cst,
		                                          memory_order_seq_cst)) {
			tally(k, w, fence, read, replaced);
			if (atomic_load_explicit(&k->parked, memory_order_seq_cst))
				advance_from(c, k, next);
			return true;
		}
	}
	/* Early: earlier versions are still to come. Park the record in the
	 * ring, where version v reuses the slot of v - ring: wait until the
	 * walk is past that one. */
	uint64_t since = 0;
	for (bool waited = false;; waited = true) {
		w = atomic_load_explicit(&k->walk, memory_order_acquire);
		if ((uint16_t)(version - walk_next(w)) < c->ring)
			break;
		advance(c, k);
		w = atomic_load_explicit(&k->walk, memory_order_acquire);
		if ((uint16_t)(version - walk_next(w)) < c->ring)
			break;
		if (!waited) {
			(*stalls)++;
			since = c->clk ? fb_clock_now(c->clk) : 0;
		} else if ((c->abort && atomic_load_explicit(c->abort, memory_order_relaxed)) ||
		           (c->clk && fb_clock_now(c->clk) - since > c->max_wait)) {
			return false; /* a version that never comes: the caller says why */
		}
		sched_yield();
	}
	rec *r = &k->ring[version & (c->ring - 1)];
	atomic_store_explicit(&r->fence, fence, memory_order_relaxed);
	atomic_store_explicit(&r->read, read, memory_order_relaxed);
	atomic_store_explicit(&r->replaced, replaced, memory_order_relaxed);
	atomic_store_explicit(&r->written, written, memory_order_relaxed);
	/* seq_cst (release at least): publishes the four fields with the tag */
	atomic_store_explicit(&r->tag, version | TAG_PUBLISHED, memory_order_seq_cst);
	atomic_fetch_add_explicit(&k->parked, 1, memory_order_seq_cst);
	/* seq_cst: pairs with the in-order path's CAS and its load of parked */
	advance_from(c, k, atomic_load_explicit(&k->walk, memory_order_seq_cst));
	return true;
}

void fb_checker_drain(fb_checker *c)
{
	for (uint32_t i = 0; i < c->keys; i++)
		advance(c, &c->k[i]);
}

void fb_checker_key(fb_checker *c, uint32_t key, fb_check_key *out)
{
	ckey *k = &c->k[key];
	fb_u128 w = atomic_load_explicit(&k->walk, memory_order_acquire);
	/* exact once the walkers are done (the wrap is counted after its step) */
	out->checked =
	        (atomic_load_explicit(&k->wraps, memory_order_relaxed) << 16) + walk_next(w) - 1;
	out->stale_accepted = atomic_load_explicit(&k->stale, memory_order_relaxed);
	out->lost_amount = atomic_load_explicit(&k->lost_amount, memory_order_relaxed);
	out->chain_breaks = atomic_load_explicit(&k->breaks, memory_order_relaxed);
	out->max_fence = w.lo & WALK_FENCE_MASK;
	out->balance = (int64_t)w.hi;
	out->next_version = walk_next(w);
}

uint64_t fb_checker_stale(fb_checker *c)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < c->keys; i++)
		n += atomic_load_explicit(&c->k[i].stale, memory_order_relaxed);
	return n;
}

/* The first reason the history and the store disagree (fb_disagree). */
#define disagree(v, ...)                                                                           \
	fb_disagree(&(v)->agrees, (v)->disagreement, sizeof(v)->disagreement, __VA_ARGS__)

void fb_checker_verdict(fb_checker *c, bool fenced, const int64_t *balance,
                        const uint64_t *last_fence, int64_t initial_balance, int64_t amount,
                        uint64_t accepted, uint64_t store_stale, fb_check_verdict *v,
                        fb_check_key_fn per_key, void *ctx)
{
	*v = (fb_check_verdict){.agrees = true};
	fb_checker_drain(c);
	int64_t ledger_sum = 0, hist_sum = 0;
	for (uint32_t k = 0; k < c->keys; k++) {
		fb_check_key ck;
		fb_checker_key(c, k, &ck);
		int64_t bal = balance[k];
		/* What the balance is above what the accepted debits left: the
		 * debits whose effect is missing. */
		int64_t ledger = bal - (initial_balance - (int64_t)ck.checked * amount);
		uint64_t last = last_fence[k];
		if (per_key)
			per_key(ctx, k, &ck, bal, ledger, last);
		v->checked += ck.checked;
		v->stale_accepted += ck.stale_accepted;
		v->chain_breaks += ck.chain_breaks;
		ledger_sum += ledger;
		hist_sum += ck.lost_amount;
		fb_key_disagree(&v->agrees, v->disagreement, sizeof v->disagreement, k, fenced,
		                ledger, ck.lost_amount, ck.balance, bal, ck.max_fence, last);
	}
	v->lost_updates = ledger_sum / amount;
	v->lost_history = hist_sum / amount;
	if (v->checked != accepted)
		disagree(v, "the history holds %llu accepted writes, the store reported %llu",
		         (unsigned long long)v->checked, (unsigned long long)accepted);
	if (v->stale_accepted != store_stale)
		disagree(v, "the checker found %llu stale writes accepted, the store %llu",
		         (unsigned long long)v->stale_accepted, (unsigned long long)store_stale);
	if (v->chain_breaks)
		disagree(v, "%llu writes did not replace the balance the previous one left",
		         (unsigned long long)v->chain_breaks);
}
