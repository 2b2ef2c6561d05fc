#include "lease.h"

#include <stdlib.h>

/*
 * Slot word: lo = fence << 16 | owner, hi = expires_at. The fence stays in
 * the slot after a release, so with per-key fences the slot's own
 * generation is the fence source and needs no other memory.
 */
typedef struct fb_lease_slot {
	alignas(FB_PAD_LINE) fb_atomic_u128 word;
} fb_lease_slot;

/* batch-fences only: an owner's batch, written by that owner alone */
typedef struct fb_lease_batch {
	uint64_t next, end;
} fb_lease_batch;

struct fb_lease_table {
	fb_lease_slot *slots;
	uint32_t keys;
	fb_fence_source source;
	uint64_t ttl_ns;
	const fb_clock *clock;
	fb_bug bug;
	void (*between)(void *ctx);
	void *between_ctx;
	fb_lease_batch *batch; /* batch-fences: one per owner id, else NULL */
	/* The global source's counter, alone on its pair of lines: every
	 * acquire in global mode writes it. */
	alignas(FB_PAD_LINE) _Atomic uint64_t next_fence;
};

static inline uint64_t word_fence(fb_u128 w)
{
	return w.lo >> 16;
}

static inline uint16_t word_owner(fb_u128 w)
{
	return (uint16_t)(w.lo & 0xffff);
}

static inline fb_u128 word_make(uint64_t fence, uint16_t owner, uint64_t expires_at)
{
	return (fb_u128){fence << 16 | owner, expires_at};
}

static inline fb_lease word_lease(fb_u128 w)
{
	return (fb_lease){.fence = word_fence(w), .expires_at = w.hi, .owner = word_owner(w)};
}

const char *fb_fence_source_name(fb_fence_source s)
{
	return s == FB_FENCE_PER_KEY ? "per-key" : "global";
}

fb_err fb_lease_table_create(const fb_lease_config *cfg, fb_lease_table **out)
{
	if (!cfg->keys || !cfg->ttl_ns || !cfg->clock || cfg->first_fence == 0 ||
	    cfg->first_fence > FB_FENCE_MAX)
		return FB_EINVAL;
	fb_lease_table *t = aligned_alloc(FB_PAD_LINE, sizeof *t);
	if (!t)
		return FB_ENOMEM;
	t->slots = aligned_alloc(FB_PAD_LINE, (size_t)cfg->keys * sizeof *t->slots);
	if (!t->slots) {
		free(t);
		return FB_ENOMEM;
	}
	t->batch = NULL;
	if (cfg->bug == FB_BUG_BATCH_FENCES &&
	    !(t->batch = calloc((size_t)FB_OWNER_MAX + 1, sizeof *t->batch))) {
		free(t->slots);
		free(t);
		return FB_ENOMEM;
	}
	t->keys = cfg->keys;
	t->source = cfg->source;
	t->ttl_ns = cfg->ttl_ns;
	t->clock = cfg->clock;
	t->bug = cfg->bug;
	t->between = cfg->between;
	t->between_ctx = cfg->between_ctx;
	atomic_init(&t->next_fence, cfg->first_fence);
	uint64_t start = fb_lease_start_fence(cfg->source, cfg->first_fence);
	for (uint32_t k = 0; k < cfg->keys; k++)
		atomic_init(&t->slots[k].word, word_make(start, 0, 0));
	*out = t;
	return FB_OK;
}

void fb_lease_table_destroy(fb_lease_table *t)
{
	if (!t)
		return;
	free(t->batch);
	free(t->slots);
	free(t);
}

/*
 * PLANTED BUGS. Each breaks one promise of the table on purpose, for the
 * tests to prove the checkers notice. None is reachable without --bug.
 */

/* Fences handed out in batches: each owner takes 64 from the counter at a
 * time, so two owners' fences interleave out of order. The batch is the
 * owner's, kept in the table (a simulated worker is not a thread, and a
 * table is one run's: nothing carries over to the next). */
static uint64_t bug_mint(fb_lease_table *t, uint16_t owner, uint64_t prev)
{
	if (t->bug == FB_BUG_BATCH_FENCES) {
		fb_lease_batch *b = &t->batch[owner];
		if (b->next == b->end) {
			b->next =
			        atomic_fetch_add_explicit(&t->next_fence, 64, memory_order_relaxed);
			b->end = b->next + 64;
		}
		return b->next++;
	}
	if (t->source == FB_FENCE_PER_KEY)
		return prev + 1;
	return atomic_fetch_add_explicit(&t->next_fence, 1, memory_order_relaxed);
}

static fb_acquire bug_acquire(fb_lease_table *t, uint32_t key, uint16_t owner, fb_lease *out,
                              fb_lease_stats *st)
{
	fb_lease_slot *s = &t->slots[key];
	fb_u128 cur = atomic_load_explicit(&s->word, memory_order_acquire);
	for (;;) {
		uint64_t now = fb_clock_now(t->clock);
		/* PLANTED (long-lease): the slot holds the key for twice the TTL
		 * it grants (and reports) */
		uint64_t held_until = cur.hi + (t->bug == FB_BUG_LONG_LEASE ? t->ttl_ns : 0);
		if (t->bug != FB_BUG_IGNORE_EXPIRY && word_owner(cur) != 0 && held_until > now) {
			*out = word_lease(cur);
			out->judged_at = now;
			return FB_HELD;
		}
		uint64_t prev = word_fence(cur);
		if (t->bug == FB_BUG_TWO_STEP) {
			/* Step one takes the slot under the old fence... */
			fb_u128 mine = word_make(prev, owner, now + t->ttl_ns);
			if (!atomic_compare_exchange_strong_explicit(&s->word, &cur, mine,
			                                             memory_order_acq_rel,
			                                             memory_order_acquire)) {
				st->cas_retries++;
				continue;
			}
			if (t->between)
				t->between(t->between_ctx);
			/* ...step two mints, and trusts the slot to still be ours. */
			uint64_t fence = bug_mint(t, owner, prev);
			fb_u128 next = word_make(fence, owner, now + t->ttl_ns);
			atomic_compare_exchange_strong_explicit(
			        &s->word, &mine, next, memory_order_acq_rel, memory_order_acquire);
			*out = word_lease(next);
			out->replaced = prev;
			out->replaced_owner = word_owner(cur);
			out->judged_at = now;
			return FB_ACQUIRED;
		}
		uint64_t fence = bug_mint(t, owner, prev);
		if (fence > FB_FENCE_MAX)
			return FB_EXHAUSTED;
		fb_u128 next = word_make(fence, owner, now + t->ttl_ns);
		if (atomic_compare_exchange_strong_explicit(
		            &s->word, &cur, next, memory_order_acq_rel, memory_order_acquire)) {
			*out = word_lease(next);
			out->replaced = prev;
			out->replaced_owner = word_owner(cur);
			out->judged_at = now;
			return FB_ACQUIRED;
		}
		st->cas_retries++;
	}
}

fb_acquire fb_lease_acquire(fb_lease_table *t, uint32_t key, uint16_t owner, fb_lease *out,
                            fb_lease_stats *st)
{
	return fb_lease_acquire_from(t, key, owner, NULL, out, st);
}

fb_acquire fb_lease_acquire_from(fb_lease_table *t, uint32_t key, uint16_t owner,
                                 const fb_lease *guess, fb_lease *out, fb_lease_stats *st)
{
	if (t->bug != FB_BUG_NONE && t->bug != FB_BUG_BLIND_RELEASE)
		return bug_acquire(t, key, owner, out, st);
	fb_lease_slot *s = &t->slots[key];
	/* acquire: the global source's argument below needs the CAS that
	 * installed this word to happen-before our mint. A guess is only taken
	 * with per-key fences, where the CAS alone checks the fence's base; a
	 * wrong one costs the failed CAS, which returns the truth. */
	fb_u128 cur = guess && t->source == FB_FENCE_PER_KEY
	                      ? word_make(guess->fence, guess->owner, guess->expires_at)
	                      : atomic_load_explicit(&s->word, memory_order_acquire);
	for (;;) {
		uint64_t now = fb_clock_now(t->clock);
		if (word_owner(cur) != 0 && cur.hi > now) {
			*out = word_lease(cur);
			out->judged_at = now;
			return FB_HELD;
		}
		uint64_t prev = word_fence(cur), fence;
		if (t->source == FB_FENCE_PER_KEY) {
			fence = prev + 1;
		} else {
			/*
			 * Minted after observing `cur`: the fence in `cur` was minted
			 * by a fetch_add that happens-before our load (the installing
			 * CAS released it, our load acquired it), so coherence puts our
			 * fetch_add later in the counter's order and fence > prev.
			 * Relaxed is enough for that. A fence at or below prev is
			 * therefore a broken mint (a counter cut to 32 bits, one that
			 * went backwards): it is installed and reported as minted, so
			 * the witness names the regression (the acquire's `replaced`)
			 * at once. Minting again would hide it, or, for a counter
			 * that wrapped, spin until the test's timeout (issue 27).
			 */
			fence = atomic_fetch_add_explicit(&t->next_fence, 1, memory_order_relaxed);
		}
		if (fence > FB_FENCE_MAX)
			return FB_EXHAUSTED;
		fb_u128 next = word_make(fence, owner, now + t->ttl_ns);
		/* acq_rel: release publishes the new lease; acquire on failure
		 * re-establishes the ordering the mint relies on. */
		if (atomic_compare_exchange_strong_explicit(
		            &s->word, &cur, next, memory_order_acq_rel, memory_order_acquire)) {
			*out = word_lease(next);
			/* what the CAS swapped out: the witness's */
			out->replaced = prev;
			out->replaced_owner = word_owner(cur);
			out->judged_at = now;
			return FB_ACQUIRED;
		}
		st->cas_retries++;
		if (t->source == FB_FENCE_GLOBAL)
			st->wasted_fences++;
	}
}

static bool release_from(fb_lease_table *t, fb_lease_slot *s, fb_u128 cur, uint16_t owner,
                         uint64_t fence, fb_lease *freed);

bool fb_lease_release(fb_lease_table *t, uint32_t key, uint16_t owner, uint64_t fence)
{
	fb_lease_slot *s = &t->slots[key];
	fb_u128 cur = atomic_load_explicit(&s->word, memory_order_relaxed);
	return release_from(t, s, cur, owner, fence, NULL);
}

/* Release by a holder that knows its whole lease: try the CAS from that word
 * straight away. A 16-byte load costs a locked cmpxchg16b here (libatomic on
 * this CPU), as much as the CAS itself; the guess is right unless the lease
 * was renewed or taken. */
bool fb_lease_release_lease(fb_lease_table *t, uint32_t key, const fb_lease *l, fb_lease *freed)
{
	fb_lease_slot *s = &t->slots[key];
	fb_u128 cur = word_make(l->fence, l->owner, l->expires_at);
	return release_from(t, s, cur, l->owner, l->fence, freed);
}

/* The word a release's CAS freed (cur), to *freed where asked. */
static bool freed_word(fb_u128 cur, fb_lease *freed)
{
	if (freed)
		*freed = word_lease(cur);
	return true;
}

static bool release_from(fb_lease_table *t, fb_lease_slot *s, fb_u128 cur, uint16_t owner,
                         uint64_t fence, fb_lease *freed)
{
	if (t->bug == FB_BUG_BLIND_RELEASE) { /* PLANTED: frees whoever holds it */
		while (word_owner(cur) != 0)
			if (atomic_compare_exchange_weak_explicit(
			            &s->word, &cur, word_make(word_fence(cur), 0, 0),
			            memory_order_release, memory_order_relaxed))
				return freed_word(cur, freed);
		return false;
	}
	while (word_owner(cur) == owner && word_fence(cur) == fence) {
		/* release: whatever the holder did under the lease is ordered
		 * before the next acquire that sees the slot free. */
		if (atomic_compare_exchange_weak_explicit(&s->word, &cur, word_make(fence, 0, 0),
		                                          memory_order_release,
		                                          memory_order_relaxed))
			return freed_word(cur, freed);
	}
	return false;
}

bool fb_lease_is_held(fb_lease_table *t, uint32_t key, uint16_t owner)
{
	fb_u128 cur = atomic_load_explicit(&t->slots[key].word, memory_order_acquire);
	return word_owner(cur) == owner && cur.hi > fb_clock_now(t->clock);
}

bool fb_lease_renew(fb_lease_table *t, uint32_t key, uint16_t owner, uint64_t fence, fb_lease *out)
{
	fb_lease_slot *s = &t->slots[key];
	fb_u128 cur = atomic_load_explicit(&s->word, memory_order_acquire);
	for (;;) {
		uint64_t now = fb_clock_now(t->clock);
		/* PLANTED (renew-any): the renewal takes the slot for its caller,
		 * whoever holds it now and whether or not the lease expired */
		if (t->bug != FB_BUG_RENEW_ANY &&
		    (word_owner(cur) != owner || word_fence(cur) != fence || cur.hi <= now))
			return false;
		fb_u128 next = word_make(fence, owner, now + t->ttl_ns);
		if (atomic_compare_exchange_weak_explicit(
		            &s->word, &cur, next, memory_order_acq_rel, memory_order_acquire)) {
			*out = word_lease(next);
			/* the caller's own, unless planted */
			out->replaced = word_fence(cur);
			out->replaced_owner = word_owner(cur);
			out->judged_at = now;
			return true;
		}
	}
}

fb_lease fb_lease_peek(fb_lease_table *t, uint32_t key)
{
	return word_lease(atomic_load_explicit(&t->slots[key].word, memory_order_acquire));
}

uint64_t fb_lease_ttl(const fb_lease_table *t)
{
	return t->ttl_ns;
}

const fb_clock *fb_lease_clock(const fb_lease_table *t)
{
	return t->clock;
}

void *fb_lease_table_side(fb_lease_table *t, size_t *stride, size_t *room)
{
	*stride = sizeof *t->slots;
	*room = sizeof *t->slots - sizeof t->slots->word;
	return (char *)t->slots + sizeof t->slots->word;
}
