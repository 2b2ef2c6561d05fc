#include "witness.h"
#include "judge.h"

#include <stdlib.h>

/*
 * Per key (fb_witness_slot) one 16-byte word: lo = fence, hi = expires_at
 * of the newest lease reported; and beside it the highest fence whose
 * holder said it was releasing it. Acquisition time is expires_at - ttl
 * (the table sets expiry at the acquire), on the lease service's clock.
 *
 * The released fence is a max of its own, not a bit in the word: a
 * release is then an 8-byte CAS (a 16-byte one costs twice as much here,
 * and the word is the acquires' alone). The newest lease is released
 * exactly when the max is its fence: a fence above it would be released
 * by a holder who reported its acquire first, and a report above the
 * newest always becomes the newest; a late release of an older fence
 * stays below it. A max, not a store: a late release of an older fence
 * must not set back the newest one's, or the next acquire would be judged
 * an overlap of a lease that was given back.
 */
/*
 * Acquisition times come from rdtsc on different cores, and rdtsc is not
 * ordered with the loads around it: two acquires in slot order can read
 * times a few nanoseconds out of order. A real inversion (the trap) is a
 * fault long, a TTL or more; anything within the slack is the clock's.
 * A remote service's times are its own clock's, but it expires keys on a
 * millisecond grid: its slack is wider, and applies to overlaps too.
 */

typedef struct wkey {
	alignas(FB_PAD_LINE) fb_witness_slot slot;
} wkey;

/* The first violation of a kind, written once by the thread that claims it. */
typedef struct example {
	_Atomic int claimed;
	uint32_t key;
	uint64_t fence, other;
} example;

struct fb_witness {
	char *slots; /* key 0's slot; key k's is stride bytes on per key */
	size_t stride;
	wkey *own; /* the slots, where the witness placed them itself */
	example first[FB_WIT_KINDS];
	uint32_t keys;
	uint64_t ttl;
	uint64_t slack;         /* inversions */
	uint64_t overlap_slack; /* overlaps: 0 in process, where expiry is exact */
	bool answers;           /* overlaps judged on the reply (fb_witness_judge_answers) */
	uint64_t answer_slack;  /* then: the stated validity's shortfall + 50 us */
};

static inline fb_witness_slot *slot_of(fb_witness *w, uint32_t key)
{
	return (fb_witness_slot *)(w->slots + (size_t)key * w->stride);
}

fb_err fb_witness_create(uint32_t keys, uint64_t ttl_ns, uint64_t slack_ns, fb_witness **out)
{
	wkey *own = aligned_alloc(FB_PAD_LINE, (size_t)keys * sizeof *own);
	if (!own)
		return FB_ENOMEM;
	fb_err e = fb_witness_create_at(keys, ttl_ns, slack_ns, &own->slot, sizeof *own, out);
	if (e)
		free(own);
	else
		(*out)->own = own;
	return e;
}

fb_err fb_witness_create_at(uint32_t keys, uint64_t ttl_ns, uint64_t slack_ns,
                            fb_witness_slot *slots, size_t stride, fb_witness **out)
{
	fb_witness *w = malloc(sizeof *w);
	if (!w)
		return FB_ENOMEM;
	w->slots = (char *)slots;
	w->stride = stride;
	w->own = NULL;
	for (uint32_t i = 0; i < keys; i++) { /* fence 0, released */
		atomic_init(&slot_of(w, i)->word, ((fb_u128){0, 0}));
		atomic_init(&slot_of(w, i)->released, 0);
	}
	for (int i = 0; i < FB_WIT_KINDS; i++)
		atomic_init(&w->first[i].claimed, 0);
	w->keys = keys;
	w->ttl = ttl_ns;
	w->slack = slack_ns;
	w->overlap_slack = slack_ns > 50000 ? slack_ns : 0;
	w->answers = false;
	w->answer_slack = 0;
	*out = w;
	return FB_OK;
}

void fb_witness_judge_answers(fb_witness *w, uint64_t short_ns)
{
	w->answers = true;
	w->answer_slack = short_ns + 50000;
}

void fb_witness_destroy(fb_witness *w)
{
	if (!w)
		return;
	free(w->own);
	free(w);
}

/* Keep the first violation of kind k as the report's example. */
static void note(fb_witness *w, fb_witness_kind k, uint32_t key, uint64_t fence, uint64_t other)
{
	example *e = &w->first[k];
	int no = 0;
	if (atomic_load_explicit(&e->claimed, memory_order_relaxed) ||
	    !atomic_compare_exchange_strong_explicit(&e->claimed, &no, 1, memory_order_relaxed,
	                                             memory_order_relaxed))
		return;
	/* read after the reporters are joined: the join orders these */
	e->key = key;
	e->fence = fence;
	e->other = other;
}

void fb_witness_example_of(fb_witness *w, fb_witness_kind k, fb_witness_example *out)
{
	example *e = &w->first[k];
	*out = (fb_witness_example){0};
	if (!atomic_load_explicit(&e->claimed, memory_order_relaxed))
		return;
	*out = (fb_witness_example){true, e->key, e->fence, e->other};
}

void fb_witness_acquired(fb_witness *w, uint32_t key, uint64_t fence, uint64_t replaced,
                         uint64_t expires_at, fb_witness_counts *c)
{
	fb_witness_acquired_memo(w, key, fence, replaced, expires_at, c, NULL);
}

void fb_witness_acquired_memo(fb_witness *w, uint32_t key, uint64_t fence, uint64_t replaced,
                              uint64_t expires_at, fb_witness_counts *c, fb_witness_memo *memo)
{
	fb_witness_acquired_answered(w, key, fence, replaced, expires_at, 0, c, memo);
}

void fb_witness_acquired_answered(fb_witness *w, uint32_t key, uint64_t fence, uint64_t replaced,
                                  uint64_t expires_at, uint64_t answered_at, fb_witness_counts *c,
                                  fb_witness_memo *memo)
{
	/* By construction: each acquire replaces exactly the slot word before
	 * it, so if every fence is above the one it replaced, a key's fences
	 * rise strictly in slot order. One compare, no shared state, no
	 * clock: a lower (or equal) fence is caught every time it happens. */
	if (fb_judge_regression(fence, replaced)) {
		c->regressions++;
		note(w, FB_WIT_REGRESSION, key, fence, replaced);
	}
	fb_witness_slot *ws = slot_of(w, key);
	fb_atomic_u128 *word = &ws->word;
	uint64_t at = expires_at - w->ttl;
	uint32_t slot = key % FB_WITNESS_MEMO;
	bool guessed = memo && memo->key1[slot] == key + 1;
	/* acquire: pairs with the release of the reports before this one (a
	 * guess gets the same from the CAS that checks it) */
	fb_u128 cur = guessed ? memo->word[slot] : atomic_load_explicit(word, memory_order_acquire);
	if (memo)
		memo->key1[slot] = 0; /* used or wrong: either way spent */
	for (;;) {
		uint64_t f = cur.lo, cur_at = cur.hi - w->ttl;
		if (guessed && fence <= f) { /* a verdict without a CAS: not on a guess */
			guessed = false;
			cur = atomic_load_explicit(word, memory_order_acquire);
			continue;
		}
		if (fb_judge_fence_twice(fence, f)) {
			c->duplicates++;
			note(w, FB_WIT_DUPLICATE, key, fence, f);
			return;
		}
		if (fence < f) {
			/* A late report of an older lease: it must have begun no
			 * later than the newer one did. */
			if (f && fb_judge_inversion(at, cur_at, w->slack)) {
				c->inversions++;
				note(w, FB_WIT_INVERSION, key, fence, f);
			}
			return;
		}
		/* Its holder's release was reported before the table's, so before
		 * this acquire: seen here unless the acquire came first (acquire:
		 * pairs with the releasing CAS; read after cur, a guess included,
		 * so the CAS below confirms what it is about). */
		bool released = atomic_load_explicit(&ws->released, memory_order_acquire) >= f;
		/* a newer fence for an older acquisition; or the previous lease was
		 * live and still held. Counted once the report is in: a CAS that
		 * fails goes round again and must not count twice. */
		bool inverted = f && fb_judge_inversion(cur_at, at, w->slack);
		/* On the reply too, where asked: the previous holder was told its
		 * lease is valid until cur.hi - shortfall; a correct service
		 * cannot have given the key to another, and answered, before that
		 * (a node expires the key no sooner than the previous holder's
		 * send + TTL, and the shortfall covers the servers' rounding). */
		bool overlap = !inverted && f &&
		               fb_judge_overlap(released, cur.hi, at, w->overlap_slack, w->answers,
		                                answered_at, w->answer_slack);
		fb_u128 next = {fence, expires_at};
		/* acq_rel: this report is the newest; later reports compare with it */
		if (atomic_compare_exchange_weak_explicit(word, &cur, next, memory_order_acq_rel,
		                                          memory_order_acquire)) {
			c->inversions += inverted;
			c->overlaps += overlap;
			if (inverted)
				note(w, FB_WIT_INVERSION, key, fence, f);
			if (overlap)
				note(w, FB_WIT_OVERLAP, key, fence, f);
			if (memo) { /* the word as this report left it: the next one's guess */
				memo->key1[slot] = key + 1;
				memo->word[slot] = next;
			}
			return;
		}
		guessed = false; /* cur is the truth now */
	}
}

void fb_witness_refused(fb_witness *w, uint32_t key, uint64_t fence, uint64_t expires_at,
                        uint64_t judged_at, fb_witness_counts *c)
{
	if (judged_at && judged_at > expires_at + w->slack) {
		c->held_past_ttl++;
		note(w, FB_WIT_HELD_PAST_TTL, key, fence, judged_at - expires_at);
	}
}

void fb_witness_granted(fb_witness *w, uint32_t key, uint64_t fence, uint64_t expires_at,
                        uint64_t judged_at, fb_witness_counts *c)
{
	if (judged_at && expires_at > judged_at + w->ttl + w->slack) {
		c->held_past_ttl++;
		note(w, FB_WIT_HELD_PAST_TTL, key, fence, expires_at - judged_at - w->ttl);
	}
}

uint64_t fb_witness_newest(fb_witness *w, uint32_t key, uint64_t *at)
{
	/* acquire: pairs with the release of the report it reads */
	fb_u128 cur = atomic_load_explicit(&slot_of(w, key)->word, memory_order_acquire);
	*at = cur.hi - w->ttl;
	return cur.lo;
}

/* Sent after the lease's expiry plus the slack (sent_at 0: not judged). */
static void renewed_late(fb_witness *w, uint32_t key, uint64_t fence, uint64_t sent_at,
                         uint64_t expires_at, fb_witness_counts *c)
{
	if (sent_at && sent_at > expires_at + w->slack) {
		c->renew_expired++;
		note(w, FB_WIT_RENEW_EXPIRED, key, fence, sent_at - expires_at);
	}
}

void fb_witness_renewed(fb_witness *w, uint32_t key, uint64_t fence, uint64_t acquired_at,
                        uint64_t newest, uint64_t newest_at, uint64_t sent_at, uint64_t expires_at,
                        fb_witness_counts *c)
{
	if (newest > fence && newest_at > acquired_at + w->slack) {
		c->renew_taken++;
		note(w, FB_WIT_RENEW_TAKEN, key, fence, newest);
	}
	renewed_late(w, key, fence, sent_at, expires_at, c);
}

void fb_witness_renewed_over(fb_witness *w, uint32_t key, uint64_t fence, uint16_t owner,
                             uint64_t replaced, uint16_t replaced_owner, uint64_t sent_at,
                             uint64_t expires_at, fb_witness_counts *c)
{
	if (replaced != fence || replaced_owner != owner) {
		c->renew_taken++;
		note(w, FB_WIT_RENEW_TAKEN, key, fence, replaced);
	}
	renewed_late(w, key, fence, sent_at, expires_at, c);
}

void fb_witness_releasing(fb_witness *w, uint32_t key, uint64_t fence)
{
	/* release: ordered before the table's release of the slot */
	fb_atomic_max(&slot_of(w, key)->released, fence, memory_order_release);
}
