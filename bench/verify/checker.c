#include "checker.h"
#include "judge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * One thread at a time walks: the state is plain memory. Per key the walk
 * (the version it waits for, the highest fence, the balance), its tallies,
 * the record that carried the highest fence (the story's newer write), and
 * a ring of early records, where version v waits in slot v mod ring; a tag
 * per slot says which version is there (0: none).
 */
#define TAG_PRESENT (UINT32_C(1) << 16)

typedef struct ckey {
	/* the walk: what every record reads */
	uint16_t next;
	uint32_t parked;
	uint64_t max_fence;
	int64_t balance;
	uint64_t walked;
	/* what a violation writes */
	uint64_t stale, breaks, dups;
	int64_t lost_amount;
	uint64_t waited;  /* records parked: the feed's merge keeps them few */
	fb_check_rec top; /* the record that carried max_fence */
	/* ordered: the records taken and not walked yet, in arrival order,
	 * every record ever taken, and the last version walked */
	fb_check_rec *staged;
	uint32_t nstaged, capstaged;
	bool dirty;
	uint64_t taken, last_version;
} ckey;

struct fb_checker {
	ckey *k;
	fb_check_rec *rings;
	uint32_t *tags;
	uint32_t keys;
	uint32_t ring; /* records per key, a power of two */
	/* ring + ahead: no legitimate version is this far ahead of the walk
	 * (mod 2^16), so one that is, is behind it: a duplicate */
	uint32_t window;
	bool dup_found;
	uint32_t dup_key;
	uint64_t dup_version;
	/* ordered (calls != NULL): the store's versions are its own, walked
	 * in their order once every write sent is in hand */
	const _Atomic uint64_t *calls;
	uint32_t *dirty, ndirty;
	uint64_t staged_total;
	/* the walks' positions (dense), for producers that must not run
	 * further ahead than the window: the consumer's, read by anyone */
	_Atomic uint32_t *walk_at;
	/* written by the consumer only, read by the time series */
	_Atomic uint64_t stale_total;
	_Atomic int64_t lost_total;
	fb_check_story first;
	fb_check_watch *watch[4];
	int nwatch;
};

/* Written now, every page, so that the resident set does not grow through
 * the run as early records find untouched pages (the soak's leak check).
 * The volatile stores: a memset of fresh memory may become a calloc, which
 * touches nothing. */
static void touch(void *p, size_t bytes)
{
	memset(p, 0, bytes);
	for (size_t b = 0; b < bytes; b += 4096)
		((volatile char *)p)[b] = 0;
}

static fb_err alloc_checker(uint32_t keys, uint32_t ring, int64_t initial_balance, fb_checker **out)
{
	fb_checker *c = calloc(1, sizeof *c);
	if (!c)
		return FB_ENOMEM;
	size_t n = (size_t)keys * ring;
	c->k = calloc(keys, sizeof *c->k);
	c->rings = malloc(n * sizeof *c->rings);
	c->tags = malloc(n * sizeof *c->tags);
	if (!c->k || !c->rings || !c->tags) {
		fb_checker_destroy(c);
		return FB_ENOMEM;
	}
	touch(c->rings, n * sizeof *c->rings);
	touch(c->tags, n * sizeof *c->tags);
	c->keys = keys;
	c->ring = ring;
	atomic_init(&c->stale_total, 0);
	atomic_init(&c->lost_total, 0);
	for (uint32_t i = 0; i < keys; i++) {
		c->k[i].next = 1;
		c->k[i].balance = initial_balance;
	}
	*out = c;
	return FB_OK;
}

fb_err fb_checker_create(uint32_t keys, uint32_t ahead, int64_t initial_balance, fb_checker **out)
{
	if (!keys)
		return FB_EINVAL;
	/* 2^16 early records in all (4.25 MiB) where keys allow, at most 2^14
	 * and at least 4 a key: a key among many sees few writes while one
	 * writer sleeps. Versions are 16-bit: a record waits in the ring only
	 * within `ring` of the walk, and at most `ahead` more are not walked
	 * yet, so a legitimate version is less than ring + ahead ahead of the
	 * walk. Whatever lies beyond is behind it: keep FB_CHECKER_BEHIND of
	 * the 2^16 for that judgement. */
	uint32_t ring = 1u << 14;
	while (ring > 4 && (uint64_t)ring * keys > (1u << 16))
		ring >>= 1;
	while (ring > 4 && (uint64_t)ring + ahead + FB_CHECKER_BEHIND > (1u << 16))
		ring >>= 1;
	if ((uint64_t)ring + ahead + FB_CHECKER_BEHIND > (1u << 16))
		return FB_EINVAL;
	fb_err r = alloc_checker(keys, ring, initial_balance, out);
	if (r)
		return r;
	(*out)->window = ring + ahead;
	if (!((*out)->walk_at = malloc((size_t)keys * sizeof *(*out)->walk_at))) {
		fb_checker_destroy(*out);
		return FB_ENOMEM;
	}
	for (uint32_t i = 0; i < keys; i++)
		atomic_init(&(*out)->walk_at[i], 1);
	return FB_OK;
}

fb_err fb_checker_create_ordered(uint32_t keys, int64_t initial_balance,
                                 const _Atomic uint64_t *calls, fb_checker **out)
{
	if (!keys || !calls)
		return FB_EINVAL;
	fb_err r = alloc_checker(keys, 1, initial_balance, out);
	if (r)
		return r;
	(*out)->calls = calls;
	if (!((*out)->dirty = malloc((size_t)keys * sizeof *(*out)->dirty))) {
		fb_checker_destroy(*out);
		return FB_ENOMEM;
	}
	return FB_OK;
}

void fb_checker_destroy(fb_checker *c)
{
	if (!c)
		return;
	if (c->k)
		for (uint32_t i = 0; i < c->keys; i++)
			free(c->k[i].staged);
	free(c->dirty);
	free(c->walk_at);
	free(c->k);
	free(c->rings);
	free(c->tags);
	free(c);
}

void fb_checker_watch(fb_checker *c, fb_check_watch *const *watches, int n)
{
	c->nwatch = n < 4 ? n : 4;
	for (int i = 0; i < c->nwatch; i++)
		c->watch[i] = watches[i];
}

/* A stale write: keep it, and the write it went behind, for the story. */
static __attribute__((noinline)) void story(fb_checker *c, const ckey *k, const fb_check_rec *r)
{
	if (!c->first.found)
		c->first = (fb_check_story){true, *r, k->top};
	for (int i = 0; i < c->nwatch; i++) {
		fb_check_watch *w = c->watch[i];
		/* acquire: pairs with the claimer's release of key and fence */
		if (!atomic_load_explicit(&w->armed, memory_order_acquire) || w->key != r->key ||
		    w->fence != r->fence || w->seen[r->d])
			continue;
		w->seen[r->d] = true;
		w->stale[r->d] = *r;
		w->newer[r->d] = k->top;
	}
}

/* The record the walk waits for: its tallies, and the walk past it. */
static inline __attribute__((always_inline)) void walk(fb_checker *c, ckey *k,
                                                       const fb_check_rec *r)
{
	if (__builtin_expect(fb_judge_stale(r->fence, true, k->max_fence), 0)) {
		k->stale++;
		/* relaxed: a count for the progress line; the join orders the rest */
		atomic_store_explicit(&c->stale_total,
		                      atomic_load_explicit(&c->stale_total, memory_order_relaxed) +
		                              1,
		                      memory_order_relaxed);
		story(c, k, r);
	} else {
		k->max_fence = r->fence;
		k->top = *r;
	}
	if (__builtin_expect(fb_judge_chain_break(r->replaced, k->balance), 0))
		k->breaks++;
	int64_t erased = fb_judge_erased(r->read, r->replaced);
	if (__builtin_expect(erased != 0, 0)) {
		k->lost_amount = fb_judge_add(k->lost_amount, erased);
		atomic_store_explicit(
		        &c->lost_total,
		        fb_judge_add(atomic_load_explicit(&c->lost_total, memory_order_relaxed),
		                     erased),
		        memory_order_relaxed);
	}
	k->balance = r->written;
	k->walked++;
	k->next++;
	if (c->walk_at) /* relaxed: a producer reading it late only waits longer */
		atomic_store_explicit(&c->walk_at[r->key], k->next, memory_order_relaxed);
}

/* Two writes with one version: count it, name the run's first. */
static void duplicate(fb_checker *c, ckey *k, uint32_t key, uint64_t version)
{
	k->dups++;
	if (c->dup_found)
		return;
	c->dup_found = true;
	c->dup_key = key;
	c->dup_version = version;
}

/* Ordered: the record waits with its key's others until the store has no
 * write of the key in flight and every one it accepted is in hand. */
static fb_check_place stage(fb_checker *c, ckey *k, const fb_check_rec *r)
{
	if (k->nstaged == k->capstaged) {
		uint32_t cap = k->capstaged ? 2 * k->capstaged : 8;
		fb_check_rec *m;
		if (cap <= k->capstaged ||
		    c->staged_total + cap - k->capstaged > FB_CHECKER_STAGED_MAX ||
		    !(m = realloc(k->staged, (size_t)cap * sizeof *m)))
			return FB_CHECK_LATER; /* its producer waits: back-pressure */
		c->staged_total += cap - k->capstaged;
		k->staged = m;
		k->capstaged = cap;
	}
	k->staged[k->nstaged++] = *r;
	k->taken++;
	if (!k->dirty) {
		k->dirty = true;
		c->dirty[c->ndirty++] = r->key;
	}
	return FB_CHECK_TAKEN;
}

fb_check_place fb_checker_place(fb_checker *c, const fb_check_rec *r)
{
	ckey *k = &c->k[r->key];
	if (c->calls)
		return stage(c, k, r);
	uint16_t version = (uint16_t)r->version;
	uint16_t ahead = fb_judge_ahead(version, k->next);
	if (__builtin_expect(ahead == 0, 1)) {
		walk(c, k, r);
		if (__builtin_expect(!k->parked, 1))
			return FB_CHECK_TAKEN;
		/* then whatever waited right behind it */
		size_t base = (size_t)r->key * c->ring;
		while (k->parked) {
			uint32_t slot = k->next & (c->ring - 1);
			if (c->tags[base + slot] != (k->next | TAG_PRESENT))
				break;
			c->tags[base + slot] = 0;
			k->parked--;
			walk(c, k, &c->rings[base + slot]);
		}
		return FB_CHECK_TAKEN;
	}
	if (fb_judge_behind(ahead, c->window)) { /* it took this version already */
		duplicate(c, k, r->key, version);
		return FB_CHECK_TAKEN;
	}
	if (ahead >= c->ring)
		return FB_CHECK_LATER;
	/* The slot's last record, ring versions back, was walked: the walk is
	 * past it. A tag of this version means it is here twice. */
	size_t at = (size_t)r->key * c->ring + (version & (c->ring - 1));
	if (c->tags[at] == (version | TAG_PRESENT)) {
		duplicate(c, k, r->key, version);
		return FB_CHECK_TAKEN;
	}
	c->rings[at] = *r;
	c->tags[at] = version | TAG_PRESENT;
	k->parked++;
	k->waited++;
	return FB_CHECK_TAKEN;
}

bool fb_checker_take_behind(fb_checker *c, const fb_check_rec *r, uint64_t elsewhere)
{
	ckey *k = &c->k[r->key];
	if (c->calls)
		return false; /* never held back for its place */
	uint16_t ahead = fb_judge_ahead(r->version, k->next);
	/* versions next .. version - 1 are all unwalked if it is ahead */
	if (ahead < c->ring || !fb_judge_cannot_come(ahead, elsewhere + k->parked))
		return false;
	duplicate(c, k, r->key, (uint16_t)r->version);
	return true;
}

static int by_version(const void *a, const void *b)
{
	uint64_t x = ((const fb_check_rec *)a)->version, y = ((const fb_check_rec *)b)->version;
	return (x > y) - (x < y);
}

/* Walk key's staged records in version order: a version at or below one
 * walked already was committed twice (a duplicate); gaps are the store's. */
static void walk_staged(fb_checker *c, uint32_t key)
{
	ckey *k = &c->k[key];
	qsort(k->staged, k->nstaged, sizeof *k->staged, by_version);
	for (uint32_t i = 0; i < k->nstaged; i++) {
		const fb_check_rec *r = &k->staged[i];
		if (fb_judge_version(r->version, k->walked + k->dups, k->last_version, true) ==
		    FB_JUDGE_TWICE) {
			duplicate(c, k, key, r->version);
			continue;
		}
		walk(c, k, r);
		k->last_version = r->version;
	}
	k->nstaged = 0;
}

uint64_t fb_checker_settle(fb_checker *c, bool all)
{
	if (!c || !c->calls)
		return 0;
	uint32_t kept = 0;
	uint64_t n = 0;
	for (uint32_t i = 0; i < c->ndirty; i++) {
		uint32_t key = c->dirty[i];
		ckey *k = &c->k[key];
		/* seq_cst: a write committed before a staged one was counted in
		 * flight before it was sent, so before that one's reply (the
		 * writers' seq_cst counts) */
		uint64_t w = atomic_load_explicit(&c->calls[key], memory_order_seq_cst);
		if (!all && (FB_CALLS_IN_FLIGHT(w) || FB_CALLS_ACCEPTED(w) != k->taken)) {
			c->dirty[kept++] = key;
			continue;
		}
		n += k->nstaged;
		walk_staged(c, key);
		k->dirty = false;
	}
	c->ndirty = kept;
	return n;
}

uint32_t fb_checker_window(const fb_checker *c)
{
	return c->calls ? 0 : c->window;
}

bool fb_checker_near(const fb_checker *c, const fb_check_rec *r, uint32_t limit)
{
	if (!c->walk_at)
		return true;
	uint16_t ahead =
	        fb_judge_ahead(r->version, (uint16_t)atomic_load_explicit(&c->walk_at[r->key],
	                                                                  memory_order_relaxed));
	/* behind the walk: a duplicate for the walk to count, not to wait for */
	return ahead < limit || fb_judge_behind(ahead, c->window);
}

uint16_t fb_checker_next(const fb_checker *c, uint32_t key)
{
	return c->calls ? (uint16_t)c->k[key].walked : c->k[key].next;
}

bool fb_checker_wait_expired(fb_checker_wait *wt, uint16_t walk, uint64_t now, uint64_t max_wait)
{
	if (!wt->waiting || walk != wt->walk) {
		/* the walk moved: what holds it back now is a later writer,
		 * whose own hold starts counting here */
		wt->waiting = true;
		wt->walk = walk;
		wt->since = now;
		return false;
	}
	return now - wt->since > max_wait;
}

void fb_checker_first_stale(const fb_checker *c, fb_check_story *out)
{
	*out = c->first;
}

void fb_checker_key(const fb_checker *c, uint32_t key, fb_check_key *out)
{
	const ckey *k = &c->k[key];
	*out = (fb_check_key){.checked = k->walked,
	                      .stale_accepted = k->stale,
	                      .lost_amount = k->lost_amount,
	                      .chain_breaks = k->breaks,
	                      .duplicates = k->dups,
	                      .max_fence = k->max_fence,
	                      .balance = k->balance,
	                      .waited = k->waited,
	                      .next_version = k->next};
}

void fb_checker_so_far(fb_checker *c, uint64_t *stale, int64_t *lost_amount)
{
	*stale = atomic_load_explicit(&c->stale_total, memory_order_relaxed);
	*lost_amount = atomic_load_explicit(&c->lost_total, memory_order_relaxed);
}

/* The first reason the history and the store disagree (fb_disagree). */
#define disagree(v, ...)                                                                           \
	fb_disagree(&(v)->agrees, (v)->disagreement, sizeof(v)->disagreement, __VA_ARGS__)

void fb_checker_verdict(const fb_checker *c, bool fenced, const int64_t *balance,
                        const uint64_t *last_fence, int64_t initial_balance, int64_t amount,
                        uint64_t accepted, uint64_t store_stale, fb_check_verdict *v,
                        fb_check_key_fn per_key, void *ctx)
{
	*v = (fb_check_verdict){.agrees = true};
	/* A shared version first: the chain break and the count that follow
	 * from it are its consequences. */
	if (c->dup_found) {
		v->dup_key = c->dup_key;
		v->dup_version = c->dup_version;
		disagree(v,
		         "key %u: two accepted writes share version %llu (the store's "
		         "check-and-apply "
		         "is not one atomic step)",
		         v->dup_key, (unsigned long long)v->dup_version);
	}
	/* A broken chain first: a write applied outside the commit order is
	 * the cause of the ledger's and the balance's differences after it. */
	uint64_t breaks = 0;
	for (uint32_t k = 0; k < c->keys; k++)
		breaks += c->k[k].breaks;
	if (breaks)
		disagree(v,
		         "%llu writes did not replace the balance the previous one left (a write "
		         "applied outside the commit order: one the store reported refused?)",
		         (unsigned long long)breaks);
	fb_judge_sums sums = {0, 0};
	for (uint32_t k = 0; k < c->keys; k++) {
		fb_check_key ck;
		fb_checker_key(c, k, &ck);
		/* Duplicates were accepted too. */
		fb_judge_walked walked = {ck.checked + ck.duplicates, ck.lost_amount, ck.balance,
		                          ck.max_fence};
		int64_t ledger = fb_judge_close_key(
		        &v->agrees, v->disagreement, sizeof v->disagreement, k, fenced,
		        initial_balance, amount, &walked, balance[k], last_fence[k], &sums);
		if (per_key)
			per_key(ctx, k, &ck, balance[k], ledger, last_fence[k]);
		v->checked += ck.checked;
		v->stale_accepted += ck.stale_accepted;
		v->chain_breaks += ck.chain_breaks;
		v->duplicates += ck.duplicates;
	}
	v->lost_updates = sums.lost / amount;
	v->lost_history = sums.erased / amount;
	if (v->checked + v->duplicates != accepted)
		disagree(v, "the history holds %llu accepted writes, the store reported %llu",
		         (unsigned long long)(v->checked + v->duplicates),
		         (unsigned long long)accepted);
	if (v->stale_accepted != store_stale)
		disagree(v, "the checker found %llu stale writes accepted, the store %llu",
		         (unsigned long long)v->stale_accepted, (unsigned long long)store_stale);
}
