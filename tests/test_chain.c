/*
 * The lease chain (bench/verify/chain.h): the lease witness judged from the
 * holders' records, in any order. Histories come from the real lease table
 * (core/lease.c) on a manual clock, driven by a random schedule of holders
 * that acquire, renew, release, die and pause past the TTL, with each
 * planted lease bug: a correct table is never blamed in any arrival order,
 * and each broken one is caught in every order.
 */
#include <string.h>

#include "chain.h"
#include "clock.h"
#include "lease.h"
#include "prng.h"
#include "fbtest.h"

#define TTL   (10 * MS)
#define KEYS  3
#define OWN   6
#define RECS  4096
#define ORDER 40

typedef struct holder {
	bool holding;
	uint32_t key;
	fb_lease l;
	fb_chain_rec r;
} holder;

typedef struct hist {
	fb_clock_manual m;
	fb_lease_table *t;
	fb_prng p;
	holder h[OWN + 1]; /* by owner, from 1 */
	fb_chain_rec rec[RECS];
	uint32_t n;
	uint64_t start;   /* every key's first word's fence */
	uint16_t current; /* two-step: the owner between its steps */
	bool nested;
} hist;

static void logged(hist *s, holder *h, fb_chain_end end)
{
	h->r.end = (uint8_t)end;
	if (s->n < RECS)
		s->rec[s->n++] = h->r;
	h->holding = false;
}

static void acquire(hist *s, uint16_t o, uint32_t key)
{
	holder *h = &s->h[o];
	fb_lease_stats st = {0};
	s->current = o;
	fb_acquire a = fb_lease_acquire(s->t, key, o, &h->l, &st);
	if (a != FB_ACQUIRED)
		return;
	h->holding = true;
	h->key = key;
	h->r = (fb_chain_rec){.fence = h->l.fence,
	                      .replaced = h->l.replaced,
	                      .at = h->l.expires_at - TTL,
	                      .expires_at = h->l.expires_at,
	                      .key = key,
	                      .owner = o,
	                      .replaced_owner = h->l.replaced_owner};
}

/* two-step's fault point: now and then the holder pauses past the TTL
 * between its steps, and another takes the key meanwhile */
static void between(void *ctx)
{
	hist *s = ctx;
	if (s->nested || fb_prng_below(&s->p, 4))
		return;
	s->nested = true;
	uint16_t me = s->current;
	fb_clock_manual_advance(&s->m, TTL + 1 + fb_prng_below(&s->p, (uint32_t)MS));
	for (uint16_t o = 1; o <= OWN; o++)
		if (o != me && !s->h[o].holding) {
			acquire(s, o, s->h[me].key);
			break;
		}
	s->current = me;
	s->nested = false;
}

static void step(hist *s)
{
	uint16_t o = (uint16_t)(1 + fb_prng_below(&s->p, OWN));
	holder *h = &s->h[o];
	uint32_t dice = fb_prng_below(&s->p, 100);
	if (!h->holding) {
		uint32_t key = fb_prng_below(&s->p, KEYS);
		s->h[o].key = key; /* between() reads it */
		acquire(s, o, key);
	} else if (dice < 40) {
		fb_lease freed = {0};
		bool ok = fb_lease_release_lease(s->t, h->key, &h->l, &freed);
		logged(s, h,
		       !ok                                             ? FB_CHAIN_HELD
		       : freed.fence == h->l.fence && freed.owner == o ? FB_CHAIN_RELEASED
		                                                       : FB_CHAIN_FREED_ANY);
	} else if (dice < 60) {
		fb_lease out;
		if (fb_lease_renew(s->t, h->key, o, h->l.fence, &out) &&
		    out.replaced == h->l.fence && out.replaced_owner == o) {
			h->l = out;
			h->r.expires_at = out.expires_at;
		}
	} else if (dice < 65) {
		logged(s, h, FB_CHAIN_HELD); /* died holding it */
	}
	/* time goes on; now and then a pause past the TTL */
	uint64_t ns = fb_prng_below(&s->p, 100) < 8 ? TTL + fb_prng_below(&s->p, (uint32_t)TTL)
	                                            : fb_prng_below(&s->p, (uint32_t)(2 * MS));
	fb_clock_manual_advance(&s->m, ns);
}

/* A history of `steps` steps of the table with bug, into s->rec. */
static void history(hist *s, fb_bug bug, fb_fence_source src, uint64_t seed, int steps)
{
	memset(s, 0, sizeof *s);
	fb_clock_manual_init(&s->m, 1000 * MS);
	fb_prng_init(&s->p, seed, 1);
	fb_lease_config cfg = {.keys = KEYS,
	                       .ttl_ns = TTL,
	                       .source = src,
	                       .first_fence = 1,
	                       .clock = &s->m.base,
	                       .bug = bug,
	                       .between = between,
	                       .between_ctx = s};
	check_eq(fb_lease_table_create(&cfg, &s->t), FB_OK, "lease table");
	s->start = fb_lease_start_fence(src, cfg.first_fence);
	for (int i = 0; i < steps && s->n < RECS - OWN; i++)
		step(s);
	for (uint16_t o = 1; o <= OWN; o++) /* the run ends: still held */
		if (s->h[o].holding)
			logged(s, &s->h[o], FB_CHAIN_HELD);
	fb_lease_table_destroy(s->t);
}

/* The chain's counts for s's records in the order ord. */
static fb_chain_counts judged(const hist *s, const uint32_t *ord, bool *finished)
{
	fb_chain *c;
	check_eq(fb_chain_create(KEYS, s->start, 0, &c), FB_OK, "chain");
	for (uint32_t i = 0; i < s->n; i++)
		check_eq(fb_chain_take(c, &s->rec[ord[i]]), FB_OK, "a record taken");
	*finished = fb_chain_finish(c, true);
	fb_chain_counts k = *fb_chain_counts_of(c);
	fb_chain_destroy(c);
	return k;
}

/* Orders: as logged, reversed, then shuffled. */
static void order(const hist *s, int i, fb_prng *p, uint32_t *ord)
{
	for (uint32_t j = 0; j < s->n; j++)
		ord[j] = i == 1 ? s->n - 1 - j : j;
	if (i < 2)
		return;
	for (uint32_t j = s->n; j > 1; j--) {
		uint32_t k = fb_prng_below(p, j), t = ord[j - 1];
		ord[j - 1] = ord[k];
		ord[k] = t;
	}
}

static void test_a_correct_table_is_never_blamed_in_any_order(void **state)
{
	(void)state;
	static hist s;
	static uint32_t ord[RECS];
	for (int src = 0; src <= 1; src++)
		for (uint64_t seed = 1; seed <= 6; seed++) {
			fb_fence_source fs = src ? FB_FENCE_PER_KEY : FB_FENCE_GLOBAL;
			history(&s, FB_BUG_NONE, fs, seed, 3000);
			uint32_t expired = 0, released = 0;
			for (uint32_t q = 0; q < s.n; q++) {
				expired += s.rec[q].replaced_owner != 0;
				released += s.rec[q].end == FB_CHAIN_RELEASED;
			}
			check(s.n > 300 && expired > s.n / 8 && released > s.n / 8,
			      "a history of %u leases, %u taken over once expired, %u released",
			      s.n, expired, released);
			fb_prng p;
			fb_prng_init(&p, seed, 2);
			for (int i = 0; i < ORDER; i++) {
				order(&s, i, &p, ord);
				bool done;
				fb_chain_counts k = judged(&s, ord, &done);
				check(done, "judged to the end");
				check(k.overlaps == 0 && k.forks == 0 && k.twice == 0 &&
				              k.inverted == 0,
				      "src %d seed %llu order %d: a correct table blamed: %llu "
				      "overlaps, %llu forks, %llu twice, %llu inverted",
				      src, (unsigned long long)seed, i,
				      (unsigned long long)k.overlaps, (unsigned long long)k.forks,
				      (unsigned long long)k.twice, (unsigned long long)k.inverted);
				/* every lease linked back: to its predecessor or a start word */
				check(k.links == k.records, "%llu of %llu records linked",
				      (unsigned long long)k.links, (unsigned long long)k.records);
			}
		}
}

typedef struct planted {
	fb_bug bug;
	fb_fence_source src;
	int kind; /* fb_chain_kind that must count */
} planted;

static uint64_t count_of(const fb_chain_counts *k, int kind)
{
	switch (kind) {
	case FB_CHAIN_OVERLAP:
		return k->overlaps;
	case FB_CHAIN_TWICE:
		return k->twice;
	case FB_CHAIN_INVERTED:
		return k->inverted;
	case FB_CHAIN_UNNAMED:
		return fb_chain_unnamed_forks(k);
	default:
		return k->forks;
	}
}

static void test_each_broken_table_is_caught_in_every_order(void **state)
{
	(void)state;
	static const planted bugs[] = {
	        {FB_BUG_IGNORE_EXPIRY, FB_FENCE_GLOBAL, FB_CHAIN_OVERLAP},
	        {FB_BUG_IGNORE_EXPIRY, FB_FENCE_PER_KEY, FB_CHAIN_OVERLAP},
	        {FB_BUG_BLIND_RELEASE, FB_FENCE_GLOBAL, FB_CHAIN_OVERLAP},
	        {FB_BUG_BLIND_RELEASE, FB_FENCE_PER_KEY, FB_CHAIN_OVERLAP},
	        /* the fork named by the lease that took the slot under the old
	         * fence: it minted after (global), or the same generation */
	        {FB_BUG_TWO_STEP, FB_FENCE_GLOBAL, FB_CHAIN_INVERTED},
	        {FB_BUG_TWO_STEP, FB_FENCE_PER_KEY, FB_CHAIN_TWICE},
	        {FB_BUG_RENEW_ANY, FB_FENCE_GLOBAL, FB_CHAIN_UNNAMED},
	        {FB_BUG_RENEW_ANY, FB_FENCE_PER_KEY, FB_CHAIN_UNNAMED},
	        /* a lower fence over a higher one, in slot order */
	        {FB_BUG_BATCH_FENCES, FB_FENCE_GLOBAL, FB_CHAIN_INVERTED},
	};
	static hist s;
	static uint32_t ord[RECS];
	for (size_t b = 0; b < sizeof bugs / sizeof *bugs; b++) {
		history(&s, bugs[b].bug, bugs[b].src, 1, 3000);
		fb_prng p;
		fb_prng_init(&p, 99 + b, 2);
		for (int i = 0; i < ORDER; i++) {
			order(&s, i, &p, ord);
			bool done;
			fb_chain_counts k = judged(&s, ord, &done);
			check(done, "judged to the end");
			check(count_of(&k, bugs[b].kind) > 0,
			      "%s (%s) order %d: not caught: %llu overlaps, %llu forks, %llu "
			      "twice, %llu inverted",
			      fb_bug_names[bugs[b].bug], fb_fence_source_name(bugs[b].src), i,
			      (unsigned long long)k.overlaps, (unsigned long long)k.forks,
			      (unsigned long long)k.twice, (unsigned long long)k.inverted);
		}
	}
}

static fb_chain_rec lease(uint32_t key, uint64_t fence, uint16_t owner, uint64_t replaced,
                          uint16_t replaced_owner, uint64_t at_ms, uint64_t exp_ms,
                          fb_chain_end end)
{
	return (fb_chain_rec){.fence = fence,
	                      .replaced = replaced,
	                      .at = at_ms * MS,
	                      .expires_at = exp_ms * MS,
	                      .key = key,
	                      .owner = owner,
	                      .replaced_owner = replaced_owner,
	                      .end = (uint8_t)end};
}

/* Each of n records (n <= 4) in every order: the counts and the example of
 * kind are the same in all of them. */
static void every_order_of(uint32_t keys, const fb_chain_rec *r, int n, bool complete,
                           fb_chain_counts want, int kind, uint64_t fence, uint64_t other)
{
	int idx[4] = {0, 1, 2, 3}, perms = 0;
	for (;;) {
		fb_chain *c;
		check_eq(fb_chain_create(keys, 0, 0, &c), FB_OK, "chain");
		for (int i = 0; i < n; i++)
			check_eq(fb_chain_take(c, &r[idx[i]]), FB_OK, "taken");
		check(fb_chain_finish(c, complete) == complete, "judged only if complete");
		const fb_chain_counts *k = fb_chain_counts_of(c);
		check(k->overlaps == want.overlaps && k->forks == want.forks &&
		              k->twice == want.twice && k->inverted == want.inverted &&
		              k->forks_twice == want.forks_twice &&
		              k->forks_inverted == want.forks_inverted,
		      "order %d%d%d%d: %llu overlaps, %llu forks (%llu, %llu named), %llu twice, "
		      "%llu inverted; want %llu, %llu (%llu, %llu), %llu, %llu",
		      idx[0], idx[1], idx[2], idx[3], (unsigned long long)k->overlaps,
		      (unsigned long long)k->forks, (unsigned long long)k->forks_twice,
		      (unsigned long long)k->forks_inverted, (unsigned long long)k->twice,
		      (unsigned long long)k->inverted, (unsigned long long)want.overlaps,
		      (unsigned long long)want.forks, (unsigned long long)want.forks_twice,
		      (unsigned long long)want.forks_inverted, (unsigned long long)want.twice,
		      (unsigned long long)want.inverted);
		if (kind >= 0) {
			fb_chain_example x;
			fb_chain_example_of(c, (fb_chain_kind)kind, &x);
			check(x.found && x.fence == fence && x.other == other,
			      "the example names %llu against %llu, not %llu against %llu",
			      (unsigned long long)fence, (unsigned long long)other,
			      (unsigned long long)x.fence, (unsigned long long)x.other);
		}
		fb_chain_destroy(c);
		perms++;
		/* the next permutation of idx[0..n) (lexicographic) */
		int i = n - 2;
		while (i >= 0 && idx[i] > idx[i + 1])
			i--;
		if (i < 0)
			break;
		int j = n - 1;
		while (idx[j] < idx[i])
			j--;
		int t = idx[i];
		idx[i] = idx[j];
		idx[j] = t;
		for (int a = i + 1, b = n - 1; a < b; a++, b--) {
			t = idx[a];
			idx[a] = idx[b];
			idx[b] = t;
		}
	}
	check(perms >= 1, "orders tried");
}

static void every_order(const fb_chain_rec *r, int n, bool complete, fb_chain_counts want, int kind,
                        uint64_t fence, uint64_t other)
{
	every_order_of(4, r, n, complete, want, kind, fence, other);
}

static void test_each_kind_is_named_in_every_order(void **state)
{
	(void)state;
	/* A correct chain: released; expired, and taken at its expiry to the
	 * nanosecond; released. */
	fb_chain_rec ok[] = {
	        lease(0, 5, 1, 0, 0, 0, 10, FB_CHAIN_RELEASED),
	        lease(0, 8, 2, 5, 0, 3, 13, FB_CHAIN_HELD),
	        lease(0, 9, 3, 8, 2, 13, 23, FB_CHAIN_RELEASED),
	        lease(0, 12, 1, 9, 0, 15, 25, FB_CHAIN_HELD),
	};
	every_order(ok, 4, true, (fb_chain_counts){0}, -1, 0, 0);
	/* taken one nanosecond before its expiry: an overlap */
	fb_chain_rec just[] = {
	        lease(0, 5, 1, 0, 0, 0, 20, FB_CHAIN_HELD),
	        lease(0, 8, 2, 5, 1, 20, 30, FB_CHAIN_RELEASED),
	};
	just[1].at -= 1;
	every_order(just, 2, true, (fb_chain_counts){.overlaps = 1}, FB_CHAIN_OVERLAP, 8, 5);
	/* Two keys with one fence (per-key fences), in one bucket of the
	 * chain's 1024 ((0, 1) and (1496, 1)): each links within its own key */
	fb_chain_rec keyed[] = {
	        lease(0, 1, 1, 0, 0, 0, 10, FB_CHAIN_HELD),
	        lease(1496, 1, 2, 0, 0, 0, 10, FB_CHAIN_RELEASED),
	        lease(1496, 2, 3, 1, 0, 5, 15, FB_CHAIN_HELD),
	};
	every_order_of(2000, keyed, 3, true, (fb_chain_counts){0}, -1, 0, 0);
	/* the start word under an owner, who never acquired it: a fork */
	fb_chain_rec owned_start[] = {lease(0, 1, 1, 0, 7, 0, 10, FB_CHAIN_HELD)};
	every_order(owned_start, 1, true, (fb_chain_counts){.forks = 1}, FB_CHAIN_FORK, 1, 0);
	/* 8 acquired at 12 ms, while 5 was live to 20 and never given back */
	fb_chain_rec over[] = {
	        lease(0, 5, 1, 0, 0, 10, 20, FB_CHAIN_HELD),
	        lease(0, 8, 2, 5, 1, 12, 22, FB_CHAIN_RELEASED),
	        lease(0, 9, 3, 8, 0, 13, 23, FB_CHAIN_RELEASED),
	};
	every_order(over, 3, true, (fb_chain_counts){.overlaps = 1}, FB_CHAIN_OVERLAP, 8, 5);
	/* released, but by another's release (blind): still live to 20 */
	over[0].end = FB_CHAIN_FREED_ANY;
	over[1].replaced_owner = 0;
	every_order(over, 3, true, (fb_chain_counts){.overlaps = 1}, FB_CHAIN_OVERLAP, 8, 5);
	/* 5's word replaced by 8 and by 9: a fork, named at the end (which of
	 * the two depends on the order they came in) */
	fb_chain_rec forked[] = {
	        lease(0, 5, 1, 0, 0, 0, 10, FB_CHAIN_RELEASED),
	        lease(0, 8, 2, 5, 0, 11, 21, FB_CHAIN_RELEASED),
	        lease(0, 9, 3, 5, 0, 22, 32, FB_CHAIN_RELEASED),
	};
	/* (a released word names no owner: the fork stays unnamed) */
	every_order(forked, 3, true, (fb_chain_counts){.forks = 1}, -1, 0, 0);
	/* the two-step's word: 5's fence under owner 3, who never acquired 5 */
	fb_chain_rec trap[] = {
	        lease(0, 5, 1, 0, 0, 0, 10, FB_CHAIN_RELEASED),
	        lease(0, 9, 3, 5, 0, 11, 21, FB_CHAIN_HELD),
	        lease(0, 8, 2, 5, 3, 22, 32, FB_CHAIN_RELEASED),
	};
	every_order(trap, 3, true,
	            (fb_chain_counts){.forks = 1, .forks_inverted = 1, .inverted = 1},
	            FB_CHAIN_FORK, 8, 5);
	/* ... named by owner 3's lease, which took 5's word and minted 9 after:
	 * the older acquisition carries the newer fence */
	every_order(trap, 3, true,
	            (fb_chain_counts){.forks = 1, .forks_inverted = 1, .inverted = 1},
	            FB_CHAIN_INVERTED, 8, 9);
	/* ... by the word's owner's lease only: owner 4 has none, and 9's
	 * lease (owner 3, which replaced 5's word too) names nothing of it */
	trap[2].replaced_owner = 4;
	every_order(trap, 3, true, (fb_chain_counts){.forks = 1}, FB_CHAIN_UNNAMED, 8, 5);
	trap[2].replaced_owner = 3;
	/* ... unless it was acquired later: then no order is broken, and the
	 * fork stays a fork */
	trap[1].at = 30 * MS;
	every_order(trap, 3, true, (fb_chain_counts){.forks = 1}, FB_CHAIN_UNNAMED, 8, 5);
	/* one fence, two leases of a key */
	fb_chain_rec twins[] = {
	        lease(1, 5, 1, 0, 0, 0, 10, FB_CHAIN_RELEASED),
	        lease(1, 6, 2, 5, 0, 11, 21, FB_CHAIN_HELD),
	        lease(1, 6, 3, 5, 2, 22, 32, FB_CHAIN_HELD),
	};
	every_order(twins, 3, true, (fb_chain_counts){.forks = 1, .forks_twice = 1, .twice = 1},
	            FB_CHAIN_TWICE, 6, 6);
	/* a fence at the one it replaced (a regression, its holder's count too):
	 * two leases with fence 5, each linked to its own, not to itself */
	fb_chain_rec again[] = {
	        lease(3, 5, 1, 0, 0, 0, 10, FB_CHAIN_RELEASED),
	        lease(3, 5, 2, 5, 0, 11, 21, FB_CHAIN_HELD),
	};
	every_order(again, 2, true, (fb_chain_counts){.twice = 1}, FB_CHAIN_TWICE, 5, 5);
	/* ... and below it: out of acquisition order, in slot order, no clock
	 * (6 granted by a clock reading earlier than 7's: still after it) */
	fb_chain_rec below[] = {
	        lease(3, 7, 1, 0, 0, 5, 15, FB_CHAIN_RELEASED),
	        lease(3, 6, 2, 7, 0, 4, 14, FB_CHAIN_HELD),
	};
	every_order(below, 2, true, (fb_chain_counts){.inverted = 1}, FB_CHAIN_INVERTED, 6, 7);
	/* the key's first word replaced twice */
	fb_chain_rec first[] = {
	        lease(2, 5, 1, 0, 0, 0, 10, FB_CHAIN_RELEASED),
	        lease(2, 6, 2, 0, 0, 1, 11, FB_CHAIN_RELEASED),
	};
	every_order(first, 2, true, (fb_chain_counts){.forks = 1}, -1, 0, 0);
	/* Both replacers of a word in before its lease: the first acquired
	 * links (its CAS came first; the other is the fork), whichever came
	 * first, so the overlap it made is counted. */
	fb_chain_rec two_first[] = {
	        lease(4, 9, 3, 5, 1, 20, 30, FB_CHAIN_RELEASED), /* the later */
	        lease(4, 8, 2, 5, 1, 5, 15, FB_CHAIN_RELEASED),  /* in the lease's time */
	        lease(4, 5, 1, 0, 0, 0, 10, FB_CHAIN_HELD),
	};
	for (int later_first = 0; later_first <= 1; later_first++) {
		fb_chain *c;
		check_eq(fb_chain_create(8, 0, 0, &c), FB_OK, "chain");
		check_eq(fb_chain_take(c, &two_first[later_first ? 0 : 1]), FB_OK, "taken");
		check_eq(fb_chain_take(c, &two_first[later_first ? 1 : 0]), FB_OK, "taken");
		check_eq(fb_chain_take(c, &two_first[2]), FB_OK, "taken");
		check(fb_chain_finish(c, true), "judged");
		const fb_chain_counts *k = fb_chain_counts_of(c);
		check(k->overlaps == 1 && k->forks == 1,
		      "the later replacer in first (%d): %llu overlaps, %llu forks", later_first,
		      (unsigned long long)k->overlaps, (unsigned long long)k->forks);
		fb_chain_destroy(c);
	}
	/* a predecessor not in: nothing judged unless every record is */
	fb_chain_rec alone[] = {lease(3, 9, 1, 7, 0, 0, 10, FB_CHAIN_RELEASED)};
	every_order(alone, 1, false, (fb_chain_counts){0}, -1, 0, 0);
	every_order(alone, 1, true, (fb_chain_counts){.forks = 1}, FB_CHAIN_FORK, 9, 7);
}

/* A fork is named only by a lease that replaced that very word: the word's
 * owner's other leases, however many, however they hash, name nothing. */
static void test_a_fork_is_named_by_its_own_word_only(void **state)
{
	(void)state;
	enum { N = 100 };
	fb_chain *c;
	check_eq(fb_chain_create(1, 0, 0, &c), FB_OK, "chain");
	for (uint64_t i = 0; i < N; i++) {
		/* owner 7's leases, held to the end: each replaced a word of
		 * its own, none of the forked ones */
		fb_chain_rec y = lease(0, 1000 + i, 7, 2000 + i, 0, 0, 10, FB_CHAIN_HELD);
		/* an acquire over a word of owner 7's that no lease holds */
		fb_chain_rec x = lease(0, 10 + i, 8, 3000 + i, 7, 50, 60, FB_CHAIN_RELEASED);
		check_eq(fb_chain_take(c, &y), FB_OK, "taken");
		check_eq(fb_chain_take(c, &x), FB_OK, "taken");
	}
	check(fb_chain_finish(c, true), "finished");
	const fb_chain_counts *k = fb_chain_counts_of(c);
	check(k->forks >= N && !k->forks_twice && !k->forks_inverted && !k->twice && !k->inverted,
	      "%llu forks, %llu named twice, %llu named out of order", (unsigned long long)k->forks,
	      (unsigned long long)k->forks_twice, (unsigned long long)k->forks_inverted);
	fb_chain_destroy(c);
}

/* Many keys and leases, each link's later end first: the chain's memory
 * is what waits, not the run. */
static void test_memory_is_what_waits(void **state)
{
	(void)state;
	enum { K = 1 << 12, ROUNDS = 40 };
	fb_chain *c;
	check_eq(fb_chain_create(K, 0, 0, &c), FB_OK, "chain");
	/* round r's lease of key k: fence r * K + k + 1, replacing round r-1's */
	for (uint64_t r = 0; r < ROUNDS; r += 2)
		for (int half = 1; half >= 0; half--)
			for (uint32_t k = 0; k < K; k++) {
				uint64_t q = r + (uint64_t)half;
				uint64_t f = q * K + k + 1, prev = q ? f - K : 0;
				fb_chain_rec x = lease(k, f, 1, prev, 0, q * 20, q * 20 + 10,
				                       FB_CHAIN_RELEASED);
				check_eq(fb_chain_take(c, &x), FB_OK, "taken");
				check(fb_chain_counts_of(c)->waiting <= 3 * K,
				      "%llu ends waiting, for %u keys",
				      (unsigned long long)fb_chain_counts_of(c)->waiting, K);
			}
	check(fb_chain_finish(c, true), "finished");
	const fb_chain_counts *k = fb_chain_counts_of(c);
	check(k->links == k->records && !k->forks && !k->overlaps && k->waiting == K,
	      "%llu links of %llu records, %llu forks, %llu overlaps, %llu waiting",
	      (unsigned long long)k->links, (unsigned long long)k->records,
	      (unsigned long long)k->forks, (unsigned long long)k->overlaps,
	      (unsigned long long)k->waiting);
	fb_chain_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_a_correct_table_is_never_blamed_in_any_order),
	        cmocka_unit_test(test_each_broken_table_is_caught_in_every_order),
	        cmocka_unit_test(test_each_kind_is_named_in_every_order),
	        cmocka_unit_test(test_a_fork_is_named_by_its_own_word_only),
	        cmocka_unit_test(test_memory_is_what_waits),
	};
	return cmocka_run_group_tests_name("chain", tests, NULL, NULL);
}
