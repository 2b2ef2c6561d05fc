#include "store.h"

#include <stdlib.h>

/*
 * Record word: lo = balance, hi = highest:47 | written:1 | version:16.
 *
 * Three fences describe a record (last accepted <= highest seen), but the
 * decisions need only two facts: the highest fence seen, and whether the
 * last accepted write carried it. With last <= highest:
 *   token > last && token >= highest   <=>   token > highest, or
 *                                            token == highest && !written
 * so the whole check-and-apply fits one 16-byte CAS beside the balance.
 * In write-fenced and unfenced records reads register nothing and
 * `highest` is the highest fence ever accepted. The exact last accepted
 * fence is kept beside the word for reporting only; no decision reads it.
 */
#define HI_FENCE_MASK    FB_FENCE_MAX
#define HI_WRITTEN       (UINT64_C(1) << FB_FENCE_BITS)
#define HI_VERSION_SHIFT 48

typedef struct fb_record {
	alignas(FB_PAD_LINE) fb_atomic_u128 word;
	_Atomic uint64_t last_fence;
} fb_record;

struct fb_store {
	fb_record *rec;
	uint32_t keys;
	fb_discipline d;
	fb_bug bug;
};

static const char *const names[FB_DISCIPLINES] = {"fenced", "write-fenced", "unfenced"};
static const char *const keys_json[FB_DISCIPLINES] = {"fenced", "write_fenced", "unfenced"};

const char *fb_discipline_name(fb_discipline d)
{
	return d < FB_DISCIPLINES ? names[d] : "?";
}

const char *fb_discipline_key(fb_discipline d)
{
	return d < FB_DISCIPLINES ? keys_json[d] : "?";
}

static inline uint64_t hi_fence(uint64_t hi)
{
	return hi & HI_FENCE_MASK;
}

static inline bool hi_written(uint64_t hi)
{
	return (hi & HI_WRITTEN) != 0;
}

static inline uint16_t hi_version(uint64_t hi)
{
	return (uint16_t)(hi >> HI_VERSION_SHIFT);
}

static inline uint64_t hi_make(uint64_t fence, bool written, uint16_t version)
{
	return fence | (written ? HI_WRITTEN : 0) | (uint64_t)version << HI_VERSION_SHIFT;
}

fb_err fb_store_create(fb_discipline d, uint32_t keys, int64_t initial_balance, fb_store **out)
{
	if (!keys || d >= FB_DISCIPLINES)
		return FB_EINVAL;
	fb_store *s = malloc(sizeof *s);
	if (!s)
		return FB_ENOMEM;
	s->rec = aligned_alloc(FB_PAD_LINE, (size_t)keys * sizeof *s->rec);
	if (!s->rec) {
		free(s);
		return FB_ENOMEM;
	}
	s->keys = keys;
	s->d = d;
	s->bug = FB_BUG_NONE;
	for (uint32_t k = 0; k < keys; k++) {
		/* "written" starts true: no fence has been seen or written, and a
		 * first write must still carry token > 0. */
		atomic_init(&s->rec[k].word,
		            ((fb_u128){(uint64_t)initial_balance, hi_make(0, true, 0)}));
		atomic_init(&s->rec[k].last_fence, 0);
	}
	*out = s;
	return FB_OK;
}

void fb_store_destroy(fb_store *s)
{
	if (!s)
		return;
	free(s->rec);
	free(s);
}

void fb_store_plant(fb_store *s, fb_bug bug)
{
	if (bug == FB_BUG_GE_STORE || bug == FB_BUG_TRUST_CLIENT ||
	    bug == FB_BUG_UNREGISTERED_READS || bug == FB_BUG_REFUSE_HOLDER ||
	    bug == FB_BUG_APPLY_REFUSED || bug == FB_BUG_STALE_READ ||
	    bug == FB_BUG_CONTROL_READS || bug == FB_BUG_CONTROL_CONFLICT)
		s->bug = bug;
}

/* One token in 2^bits, spread over fences (a Fibonacci hash). */
static bool one_in(uint64_t token, int bits)
{
	return (token * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - bits) == 0;
}

/* PLANTED (refuse-holder): the fenced store refuses a token for no reason
 * of the token's order. */
static bool refuses_anyway(const fb_store *s, uint64_t token)
{
	return s->bug == FB_BUG_REFUSE_HOLDER && s->d == FB_FENCED && one_in(token, 6);
}

fb_discipline fb_store_discipline(const fb_store *s)
{
	return s->d;
}

static void result_from(fb_store_result *r, fb_u128 w, uint64_t token)
{
	r->balance = r->before = (int64_t)w.lo;
	r->token = token;
	r->highest = hi_fence(w.hi);
	r->highest_written = hi_written(w.hi);
	r->version = hi_version(w.hi);
	r->word_hi = w.hi;
	r->stale = false;
	r->other = false;
}

bool fb_store_read(fb_store *s, uint32_t key, uint64_t token, fb_store_result *r)
{
	fb_record *rec = &s->rec[key];
	if (token > FB_FENCE_MAX) {
		r->ok = r->stale = false;
		return false;
	}
	/* acquire: a reader acts on the balance, so it must see the writes
	 * that produced it. */
	fb_u128 cur = atomic_load_explicit(&rec->word, memory_order_acquire);
	for (;;) {
		result_from(r, cur, token);
		if (refuses_anyway(s, token)) {
			r->ok = false;
			return false;
		}
		uint64_t high = hi_fence(cur.hi);
		/* PLANTED (trust-client, unregistered-reads): the read is served
		 * and registers nothing */
		bool planted = s->bug == FB_BUG_TRUST_CLIENT ||
		               (s->bug == FB_BUG_UNREGISTERED_READS && token >= high);
		/* PLANTED (control-reads): the write-fenced store registers a
		 * read's token as the fenced one does (refusing none), so its
		 * writes are checked against reads too: no update is lost */
		bool control =
		        (s->bug == FB_BUG_CONTROL_READS || s->bug == FB_BUG_CONTROL_CONFLICT) &&
		        s->d == FB_WRITE_FENCED;
		if ((s->d != FB_FENCED && !(control && token > high)) || token == high || planted) {
			r->ok = true;
			r->word_hi = cur.hi;
			return true;
		}
		/* PLANTED (stale-read): a read between the last accepted fence
		 * and the highest seen is served (it registers nothing: the
		 * highest is above it) */
		if (token < high && s->bug == FB_BUG_STALE_READ &&
		    token > atomic_load_explicit(&rec->last_fence, memory_order_relaxed)) {
			r->ok = true;
			return true;
		}
		if (token < high) {
			r->ok = false;
			return false;
		}
		/* Register the token: every later write below it is now stale.
		 * The balance served is the one in the word we replaced, so the
		 * read and the registration are one step. */
		fb_u128 next = {cur.lo, hi_make(token, false, hi_version(cur.hi))};
		if (atomic_compare_exchange_weak_explicit(
		            &rec->word, &cur, next, memory_order_acq_rel, memory_order_acquire)) {
			r->ok = true;
			r->word_hi = next.hi;
			return true;
		}
	}
}

/* The whole decision of the three disciplines, in one place. */
static bool admits(fb_discipline d, fb_bug bug, uint64_t hi, uint64_t token)
{
	uint64_t high = hi_fence(hi);
	if (d != FB_UNFENCED && bug == FB_BUG_GE_STORE) /* PLANTED: >= instead of > */
		return token >= high;
	if (d == FB_FENCED && bug == FB_BUG_TRUST_CLIENT) /* PLANTED: no check at all */
		return true;
	switch (d) {
	case FB_FENCED:
		return token > high || (token == high && !hi_written(hi));
	case FB_WRITE_FENCED: /* PLANTED (control-reads, control-conflict): as fenced */
		return token > high ||
		       ((bug == FB_BUG_CONTROL_READS || bug == FB_BUG_CONTROL_CONFLICT) &&
		        token == high && !hi_written(hi));
	default:
		return true;
	}
}

static void note_last(fb_store *s, fb_record *rec, uint64_t token)
{
	if (s->d == FB_UNFENCED) {
		atomic_store_explicit(&rec->last_fence, token, memory_order_relaxed);
		return;
	}
	/* Accepted fences grow in commit order, but two committers may reach
	 * this line out of order: keep the maximum. */
	uint64_t seen = atomic_load_explicit(&rec->last_fence, memory_order_relaxed);
	while (seen < token &&
	       !atomic_compare_exchange_weak_explicit(&rec->last_fence, &seen, token,
	                                              memory_order_relaxed, memory_order_relaxed))
		;
}

static bool apply(fb_store *s, uint32_t key, bool is_debit, int64_t value, uint64_t token,
                  const fb_u128 *guess, fb_store_result *r)
{
	fb_record *rec = &s->rec[key];
	if (token > FB_FENCE_MAX) { /* outside the packing: no fence can be this */
		r->ok = r->stale = false;
		return false;
	}
	/* acquire (load, or the CAS's failure): the decision is made on the
	 * state it read. A guess is checked by the CAS like any stale read. */
	fb_u128 cur = guess ? *guess : atomic_load_explicit(&rec->word, memory_order_acquire);
	for (;;) {
		result_from(r, cur, token);
		uint64_t high = hi_fence(cur.hi);
		if (refuses_anyway(s, token)) {
			r->ok = false;
			r->stale = true; /* as it claims */
			return false;
		}
		if (!admits(s->d, s->bug, cur.hi, token)) {
			if (guess) { /* a guess may be old: refuse on the truth only */
				guess = NULL;
				cur = atomic_load_explicit(&rec->word, memory_order_acquire);
				continue;
			}
			r->ok = false;
			r->stale = true;
			/* PLANTED (control-conflict): the refusal is called the
			 * store's own (a conflict), so no refusal is judged */
			if (s->bug == FB_BUG_CONTROL_CONFLICT && s->d == FB_WRITE_FENCED) {
				r->other = true;
				r->stale = false;
			}
			/* PLANTED (apply-refused): the balance changes all the same,
			 * outside the commit order (no version, no fence) */
			if (s->bug == FB_BUG_APPLY_REFUSED && s->d == FB_FENCED &&
			    one_in(token, 3)) {
				int64_t b = is_debit ? (int64_t)((uint64_t)cur.lo - (uint64_t)value)
				                     : value;
				fb_u128 next = {(uint64_t)b, cur.hi};
				if (!atomic_compare_exchange_weak_explicit(&rec->word, &cur, next,
				                                           memory_order_acq_rel,
				                                           memory_order_acquire))
					continue;
			}
			return false;
		}
		int64_t bal = is_debit ? (int64_t)((uint64_t)cur.lo - (uint64_t)value) : value;
		uint16_t ver = (uint16_t)(hi_version(cur.hi) + 1);
		/* In fenced and write-fenced records an admitted token is the new
		 * highest; an unfenced record keeps the highest it ever took. Either
		 * way the highest is now a written fence. */
		uint64_t nh = token > high ? token : high;
		fb_u128 next = {(uint64_t)bal, hi_make(nh, true, ver)};
		/* acq_rel: the write is published to later readers, and it was
		 * decided on the state we acquired. */
		if (atomic_compare_exchange_weak_explicit(
		            &rec->word, &cur, next, memory_order_acq_rel, memory_order_acquire)) {
			r->ok = true;
			/* The store's own view of staleness (token <= the highest
			 * fence accepted before): always false in the fenced
			 * disciplines, counted in unfenced. */
			r->stale = hi_written(cur.hi) ? token <= high : token < high;
			r->balance = bal;
			r->version = ver;
			r->word_hi = next.hi;
			note_last(s, rec, token);
			return true;
		}
		guess = NULL; /* cur is the truth now */
	}
}

bool fb_store_write(fb_store *s, uint32_t key, int64_t balance, uint64_t token, fb_store_result *r)
{
	return apply(s, key, false, balance, token, NULL, r);
}

bool fb_store_write_after(fb_store *s, uint32_t key, int64_t balance, uint64_t token,
                          const fb_store_result *read, fb_store_result *r)
{
	fb_u128 guess = {(uint64_t)read->balance, read->word_hi};
	return apply(s, key, false, balance, token, &guess, r);
}

bool fb_store_debit(fb_store *s, uint32_t key, int64_t amount, uint64_t token, fb_store_result *r)
{
	return apply(s, key, true, amount, token, NULL, r);
}

bool fb_store_debit_after(fb_store *s, uint32_t key, int64_t amount, uint64_t token,
                          const fb_store_result *earlier, fb_store_result *r)
{
	fb_u128 guess = {(uint64_t)earlier->balance, earlier->word_hi};
	return apply(s, key, true, amount, token, &guess, r);
}

int64_t fb_store_balance(fb_store *s, uint32_t key)
{
	fb_u128 w = atomic_load_explicit(&s->rec[key].word, memory_order_acquire);
	return (int64_t)w.lo;
}

void fb_store_final(fb_store *s, uint32_t keys, int64_t *balance, uint64_t *last_fence)
{
	for (uint32_t k = 0; k < keys; k++) {
		balance[k] = fb_store_balance(s, k);
		last_fence[k] = fb_store_last_fence(s, k);
	}
}

uint64_t fb_store_highest(fb_store *s, uint32_t key)
{
	fb_u128 w = atomic_load_explicit(&s->rec[key].word, memory_order_acquire);
	return hi_fence(w.hi);
}

uint64_t fb_store_last_fence(fb_store *s, uint32_t key)
{
	return atomic_load_explicit(&s->rec[key].last_fence, memory_order_relaxed);
}
