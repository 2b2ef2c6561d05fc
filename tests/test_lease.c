/* The lease table under real threads: exclusion, fence order, release. */
#include <pthread.h>
#include <stdlib.h>

#include "clock.h"
#include "fbtest.h"
#include "lease.h"

enum { THREADS = 8 };

/* A table of `keys` with a TTL of 10 ms, fences from src, and bug planted. */
static fb_lease_table *planted(const fb_clock *c, uint32_t keys, fb_fence_source src, fb_bug bug)
{
	fb_lease_table *t;
	fb_lease_config cfg = {.keys = keys,
	                       .ttl_ns = 10 * MS,
	                       .source = src,
	                       .first_fence = 1,
	                       .clock = c,
	                       .bug = bug};
	check_eq(fb_lease_table_create(&cfg, &t), FB_OK, "lease table creation");
	return t;
}

static fb_lease_table *table(const fb_clock *c, uint32_t keys, fb_fence_source src)
{
	return planted(c, keys, src, FB_BUG_NONE);
}

static void test_first_fence_is_configurable_for_both_sources(void **state)
{
	(void)state;
	fb_clock_manual m;
	fb_clock_manual_init(&m, 0);
	fb_fence_source src[] = {FB_FENCE_GLOBAL, FB_FENCE_PER_KEY};
	for (int i = 0; i < 2; i++) {
		fb_lease_config cfg = {.keys = 2,
		                       .ttl_ns = MS,
		                       .source = src[i],
		                       .first_fence = 33,
		                       .clock = &m.base};
		fb_lease_table *t;
		check_eq(fb_lease_table_create(&cfg, &t), FB_OK, "create");
		fb_lease l;
		fb_lease_stats st = {0};
		check_eq(fb_lease_acquire(t, 1, 7, &l, &st), FB_ACQUIRED, "first acquire");
		check_eq(l.fence, 33, fb_fence_source_name(src[i]));
		check_eq(fb_lease_acquire(t, 0, 7, &l, &st), FB_ACQUIRED, "other key");
		check_eq(l.fence, src[i] == FB_FENCE_GLOBAL ? 34 : 33,
		         "second key: global continues the count, per-key starts its own");
		fb_lease_table_destroy(t);
	}
}

/* Issue 27, item 3: the table's mint across 2^32, for both sources: from
 * 2^32 - 1 a key's fences run 2^32 - 1, 2^32, 2^32 + 1 exactly, and each
 * is above the one its acquire replaced (the slot word keeps 48 bits). */
static void test_the_mint_crosses_2_to_the_32_exactly(void **state)
{
	(void)state;
	const uint64_t two32 = UINT64_C(1) << 32;
	fb_clock_manual m;
	fb_clock_manual_init(&m, 0);
	fb_fence_source src[] = {FB_FENCE_GLOBAL, FB_FENCE_PER_KEY};
	for (int i = 0; i < 2; i++) {
		fb_lease_config cfg = {.keys = 1,
		                       .ttl_ns = MS,
		                       .source = src[i],
		                       .first_fence = two32 - 1,
		                       .clock = &m.base};
		fb_lease_table *t;
		check_eq(fb_lease_table_create(&cfg, &t), FB_OK, "create");
		fb_lease_stats st = {0};
		for (uint64_t want = two32 - 1; want <= two32 + 1; want++) {
			fb_lease l;
			check_eq(fb_lease_acquire(t, 0, 7, &l, &st), FB_ACQUIRED, "acquire");
			check_eq(l.fence, want, fb_fence_source_name(src[i]));
			if (want > two32 - 1)
				check_eq(l.replaced, want - 1, "the fence it replaced, exactly");
			check(fb_lease_release_lease(t, 0, &l, NULL), "release");
		}
		fb_lease_table_destroy(t);
	}
}

static void test_acquire_from_a_wrong_guess_still_decides_on_the_slot(void **state)
{
	(void)state;
	fb_clock_manual m;
	fb_clock_manual_init(&m, 0);
	fb_lease_table *t = table(&m.base, 1, FB_FENCE_PER_KEY);
	fb_lease a, b, held;
	fb_lease_stats st = {0};
	check_eq(fb_lease_acquire(t, 0, 1, &a, &st), FB_ACQUIRED, "A acquires");
	check(fb_lease_release_lease(t, 0, &a, NULL), "A releases with its lease word");
	fb_lease guess = {.fence = a.fence};
	check_eq(fb_lease_acquire(t, 0, 2, &b, &st), FB_ACQUIRED, "B acquires in between");
	/* A's guess (what its release left) is out of date: B holds the key */
	check_eq(fb_lease_acquire_from(t, 0, 1, &guess, &held, &st), FB_HELD,
	         "a stale guess must not win a held slot");
	check_eq(held.owner, 2, "the refusal names the real holder");
	check(fb_lease_release_lease(t, 0, &b, NULL), "B releases");
	guess = (fb_lease){.fence = a.fence};
	check_eq(fb_lease_acquire_from(t, 0, 1, &guess, &a, &st), FB_ACQUIRED,
	         "A acquires again from an out-of-date guess");
	check_eq(a.fence, b.fence + 1, "and its fence is above B's, not above the guess's");
	fb_lease_table_destroy(t);
}

static void test_bad_configuration_is_refused(void **state)
{
	(void)state;
	fb_lease_table *t = NULL;
	fb_lease_config cfg = {
	        .keys = 0, .ttl_ns = MS, .first_fence = 1, .clock = fb_clock_monotonic()};
	check_eq(fb_lease_table_create(&cfg, &t), FB_EINVAL, "zero keys");
	cfg.keys = 1;
	cfg.ttl_ns = 0;
	check_eq(fb_lease_table_create(&cfg, &t), FB_EINVAL, "zero TTL");
	cfg.ttl_ns = MS;
	cfg.first_fence = 0;
	check_eq(fb_lease_table_create(&cfg, &t), FB_EINVAL, "first fence 0 (0 means no fence)");
}

/* ---- exactly one winner with the clock frozen ---- */

typedef struct race {
	fb_lease_table *t;
	pthread_barrier_t go;
	_Atomic int winners;
	_Atomic int held_replies_naming_winner;
	_Atomic int winner_owner;
	_Atomic uint64_t winner_fence;
} race;

typedef struct racer {
	race *r;
	uint16_t owner;
} racer;

static void *race_one(void *p)
{
	racer *me = p;
	fb_lease l;
	fb_lease_stats st = {0};
	pthread_barrier_wait(&me->r->go);
	fb_acquire a = fb_lease_acquire(me->r->t, 0, me->owner, &l, &st);
	if (a == FB_ACQUIRED) {
		atomic_fetch_add(&me->r->winners, 1);
		atomic_store(&me->r->winner_owner, me->owner);
		atomic_store(&me->r->winner_fence, l.fence);
	}
	return NULL;
}

static void test_frozen_clock_many_threads_one_winner(void **state)
{
	(void)state;
	fb_clock_manual m;
	fb_clock_manual_init(&m, 1000 * MS);
	for (int round = 0; round < 50; round++) {
		race r = {.t = table(&m.base, 1, round % 2 ? FB_FENCE_PER_KEY : FB_FENCE_GLOBAL)};
		pthread_barrier_init(&r.go, NULL, THREADS);
		pthread_t th[THREADS];
		racer rc[THREADS];
		for (int i = 0; i < THREADS; i++) {
			rc[i] = (racer){&r, (uint16_t)(i + 1)};
			pthread_create(&th[i], NULL, race_one, &rc[i]);
		}
		for (int i = 0; i < THREADS; i++)
			pthread_join(th[i], NULL);
		check_eq(atomic_load(&r.winners), 1,
		         "threads that acquired one key at one instant");
		fb_lease now = fb_lease_peek(r.t, 0);
		check_eq(now.owner, atomic_load(&r.winner_owner), "the slot names the winner");
		check_eq(now.fence, atomic_load(&r.winner_fence),
		         "the slot carries the winner's fence");
		if (round % 2) /* per-key: losers mint nothing */
			check_eq(now.fence, 1, "per-key: one acquire, the first fence");
		else /* global: losers may have minted and wasted fences first */
			check(now.fence >= 1 && now.fence <= THREADS, "global fence %llu",
			      (unsigned long long)now.fence);
		pthread_barrier_destroy(&r.go);
		fb_lease_table_destroy(r.t);
	}
}

/* ---- fences strictly increase in the slot's order ---- */

/*
 * Each acquire is bracketed by two tickets from one counter. If X's call
 * ended before Y's began, X's CAS came first in the slot's order, so
 * X.fence < Y.fence must hold: that is linearizability of the fence, seen
 * from outside the table.
 */
typedef struct op {
	uint64_t fence, start, end;
	uint32_t key;
} op;

enum { KEYS = 3, OPS_PER_THREAD = 4000 };

typedef struct order_run {
	fb_lease_table *t;
	fb_clock_manual *clock;
	_Atomic uint64_t ticket;
	op *ops;          /* THREADS * OPS_PER_THREAD */
	_Atomic size_t n; /* successful acquires recorded */
	pthread_barrier_t go;
} order_run;

typedef struct orderer {
	order_run *r;
	uint16_t owner;
	uint64_t seed;
} orderer;

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *order_worker(void *p)
{
	orderer *me = p;
	order_run *r = me->r;
	fb_lease_stats st = {0};
	pthread_barrier_wait(&r->go);
	for (int i = 0; i < OPS_PER_THREAD; i++) {
		uint32_t key = (uint32_t)(xorshift(&me->seed) % KEYS);
		fb_lease l;
		uint64_t s = atomic_fetch_add(&r->ticket, 1);
		fb_acquire a = fb_lease_acquire(r->t, key, me->owner, &l, &st);
		uint64_t e = atomic_fetch_add(&r->ticket, 1);
		if (a == FB_ACQUIRED) {
			size_t at = atomic_fetch_add(&r->n, 1);
			r->ops[at] = (op){l.fence, s, e, key};
			uint64_t roll = xorshift(&me->seed) % 4;
			if (roll == 0) /* let it expire: someone takes over */
				fb_clock_manual_advance(r->clock, 11 * MS);
			else if (roll ==
			         1) /* fails if another thread's clock move let a taker in */
				fb_lease_release(r->t, key, me->owner, l.fence);
		} else {
			fb_clock_manual_advance(r->clock, MS);
		}
	}
	return NULL;
}

static int by_fence_desc(const void *a, const void *b)
{
	const op *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->fence < y->fence ? 1 : x->fence > y->fence ? -1 : 0;
}

static void check_fence_order(order_run *r, const char *src)
{
	size_t n = atomic_load(&r->n);
	check(n > 100, "%s: only %zu acquires succeeded; the test proves nothing", src, n);
	qsort(r->ops, n, sizeof *r->ops, by_fence_desc);
	size_t i = 0;
	while (i < n) {
		uint32_t key = r->ops[i].key;
		uint64_t min_end = UINT64_MAX, prev = UINT64_MAX;
		for (; i < n && r->ops[i].key == key; i++) {
			op *o = &r->ops[i];
			check(o->fence != prev, "%s: key %u: fence %llu handed out twice", src, key,
			      (unsigned long long)o->fence);
			/* every op already scanned has a larger fence */
			check(min_end > o->start,
			      "%s: key %u: fence %llu was acquired after an acquire of a larger "
			      "fence "
			      "had completed (ticket %llu < %llu): fences went backwards",
			      src, key, (unsigned long long)o->fence, (unsigned long long)min_end,
			      (unsigned long long)o->start);
			if (o->end < min_end)
				min_end = o->end;
			prev = o->fence;
		}
	}
}

static void test_fences_strictly_increase_in_slot_order(void **state)
{
	(void)state;
	fb_fence_source src[] = {FB_FENCE_GLOBAL, FB_FENCE_PER_KEY};
	for (int s = 0; s < 2; s++) {
		fb_clock_manual m;
		fb_clock_manual_init(&m, 0);
		order_run r = {.t = table(&m.base, KEYS, src[s]), .clock = &m};
		r.ops = calloc(THREADS * OPS_PER_THREAD, sizeof *r.ops);
		pthread_barrier_init(&r.go, NULL, THREADS);
		pthread_t th[THREADS];
		orderer w[THREADS];
		for (int i = 0; i < THREADS; i++) {
			w[i] = (orderer){&r, (uint16_t)(i + 1),
			                 0x9e3779b97f4a7c15u * (uint64_t)(i + 1)};
			pthread_create(&th[i], NULL, order_worker, &w[i]);
		}
		for (int i = 0; i < THREADS; i++)
			pthread_join(th[i], NULL);
		check_fence_order(&r, fb_fence_source_name(src[s]));
		pthread_barrier_destroy(&r.go);
		free(r.ops);
		fb_lease_table_destroy(r.t);
	}
}

/* ---- release is compare-and-delete ---- */

static void test_release_by_wrong_owner_or_old_fence_fails(void **state)
{
	(void)state;
	fb_clock_manual m;
	fb_clock_manual_init(&m, 0);
	fb_lease_table *t = table(&m.base, 1, FB_FENCE_PER_KEY);
	fb_lease a, b;
	fb_lease_stats st = {0};
	check_eq(fb_lease_acquire(t, 0, 1, &a, &st), FB_ACQUIRED, "A acquires");
	check(!fb_lease_release(t, 0, 2, a.fence), "B cannot release A's lease");
	check(!fb_lease_release(t, 0, 1, a.fence + 1),
	      "A cannot release with a fence it never got");
	check(fb_lease_is_held(t, 0, 1), "A still holds after the failed releases");
	fb_clock_manual_advance(&m, 11 * MS);
	check_eq(fb_lease_acquire(t, 0, 2, &b, &st), FB_ACQUIRED, "B takes over the expired lease");
	check(!fb_lease_release(t, 0, 1, a.fence), "A's late release must not free B's lease");
	check(fb_lease_is_held(t, 0, 2), "B still holds after A's late release");
	check_eq(fb_lease_acquire(t, 0, 1, &a, &st), FB_HELD, "and A cannot re-acquire");
	/* The same owner, an old fence: A re-acquires later, then releases with
	 * the fence of its first lease. */
	check(fb_lease_release(t, 0, 2, b.fence), "B's own release succeeds");
	check_eq(fb_lease_acquire(t, 0, 1, &a, &st), FB_ACQUIRED, "A acquires again");
	check(!fb_lease_release(t, 0, 1, a.fence - 2), "A's release with its first fence fails");
	check(fb_lease_is_held(t, 0, 1), "A's current lease is untouched");
	fb_lease_table_destroy(t);
}

static void test_is_held_only_while_live_and_renew_only_while_live(void **state)
{
	(void)state;
	fb_clock_manual m;
	fb_clock_manual_init(&m, 0);
	fb_lease_table *t = table(&m.base, 1, FB_FENCE_GLOBAL);
	fb_lease a, r;
	fb_lease_stats st = {0};
	check_eq(fb_lease_acquire(t, 0, 1, &a, &st), FB_ACQUIRED, "A acquires");
	fb_clock_manual_set(&m, 9 * MS);
	check(!fb_lease_renew(t, 0, 2, a.fence, &r), "B cannot renew A's live lease");
	check(!fb_lease_renew(t, 0, 1, a.fence + 1, &r), "nor A with a fence it never got");
	check(fb_lease_renew(t, 0, 1, a.fence, &r), "renew of a live lease succeeds");
	check_eq(r.expires_at, 19 * MS, "renewed expiry is now + TTL");
	check_eq(r.fence, a.fence, "renew keeps the fence");
	fb_clock_manual_set(&m, 19 * MS);
	check(!fb_lease_is_held(t, 0, 1), "at expires_at the lease is over");
	check(!fb_lease_renew(t, 0, 1, a.fence, &r), "a heartbeat after expiry must not revive it");
	fb_lease_table_destroy(t);
}

/* Issue 27: the table states its instant with every answer, the lease
 * witness's evidence for liveness: a refusal at an instant before the
 * expiry it names, a grant for exactly the TTL. */
static void test_every_answer_states_the_tables_instant(void **state)
{
	(void)state;
	fb_clock_manual m;
	fb_clock_manual_init(&m, 5 * MS);
	fb_lease_table *t = table(&m.base, 1, FB_FENCE_GLOBAL);
	fb_lease a, b, r;
	fb_lease_stats st = {0};
	check_eq(fb_lease_acquire(t, 0, 1, &a, &st), FB_ACQUIRED, "A acquires");
	check_eq(a.judged_at, 5 * MS, "granted at the table's now");
	check_eq(a.expires_at - a.judged_at, 10 * MS, "for exactly the TTL");
	fb_clock_manual_set(&m, 15 * MS - 1);
	check_eq(fb_lease_acquire(t, 0, 2, &b, &st), FB_HELD, "B is refused 1 ns before expiry");
	check(b.judged_at == 15 * MS - 1 && b.judged_at < b.expires_at,
	      "the refusal names an instant before the expiry it names (%llu < %llu)",
	      (unsigned long long)b.judged_at, (unsigned long long)b.expires_at);
	fb_clock_manual_set(&m, 12 * MS);
	check(fb_lease_renew(t, 0, 1, a.fence, &r), "A renews");
	check_eq(r.judged_at, 12 * MS, "renewed at the table's now");
	check_eq(r.expires_at, 22 * MS, "for exactly the TTL");
	fb_lease_table_destroy(t);
}

/* The planted long-lease bug holds a key past the expiry it states: its
 * refusal is the witness's evidence. */
static void test_a_slot_held_past_its_stated_expiry_says_so(void **state)
{
	(void)state;
	fb_clock_manual m;
	fb_clock_manual_init(&m, 0);
	fb_lease_table *t = planted(&m.base, 1, FB_FENCE_GLOBAL, FB_BUG_LONG_LEASE);
	fb_lease a, b;
	fb_lease_stats st = {0};
	check_eq(fb_lease_acquire(t, 0, 1, &a, &st), FB_ACQUIRED, "A acquires");
	fb_clock_manual_set(&m, 15 * MS);
	check_eq(fb_lease_acquire(t, 0, 2, &b, &st), FB_HELD, "the bug refuses B after expiry");
	check(b.judged_at > b.expires_at, "and its own answer shows it (%llu > %llu)",
	      (unsigned long long)b.judged_at, (unsigned long long)b.expires_at);
	fb_lease_table_destroy(t);
}

/* A renewal says which slot word it replaced: its caller's own in a
 * correct table, at every age of the lease; the planted renew-any names
 * the newer holder's word it took, held or released, so the witness
 * judges it with no timing. */
static void test_a_renewal_says_which_word_it_replaced(void **state)
{
	(void)state;
	for (int bug = 0; bug <= 1; bug++) {
		fb_clock_manual m;
		fb_clock_manual_init(&m, 0);
		fb_lease_table *t =
		        planted(&m.base, 1, FB_FENCE_PER_KEY, bug ? FB_BUG_RENEW_ANY : FB_BUG_NONE);
		fb_lease a, b, r;
		fb_lease_stats st = {0};
		check_eq(fb_lease_acquire(t, 0, 1, &a, &st), FB_ACQUIRED, "A acquires");
		for (uint64_t at = 1 * MS; at <= 9 * MS; at += 4 * MS) {
			fb_clock_manual_set(&m, at);
			r.replaced = 0;
			check(fb_lease_renew(t, 0, 1, a.fence, &r), "bug %d: A renews at %llu ns",
			      bug, (unsigned long long)at);
			check(r.replaced == a.fence && r.replaced_owner == 1,
			      "its own word: %llu of %u, not %llu of 1",
			      (unsigned long long)r.replaced, r.replaced_owner,
			      (unsigned long long)a.fence);
		}
		fb_clock_manual_set(&m, 30 * MS);
		check_eq(fb_lease_acquire(t, 0, 2, &b, &st), FB_ACQUIRED, "B after A's expiry");
		check(b.fence > a.fence, "B's fence is newer");
		r.replaced = 0;
		check(fb_lease_renew(t, 0, 1, a.fence, &r) == (bool)bug,
		      "bug %d: A's renewal over B's live lease %s", bug,
		      bug ? "succeeds" : "fails");
		if (bug) {
			check(r.replaced == b.fence && r.replaced_owner == 2,
			      "and names B's word, which it took");
			/* B's word released: the fence stays, the owner goes */
			fb_clock_manual_set(&m, 60 * MS);
			check_eq(fb_lease_acquire(t, 0, 2, &b, &st), FB_ACQUIRED, "B again");
			check(fb_lease_release_lease(t, 0, &b, NULL), "B releases");
			check(fb_lease_renew(t, 0, 1, a.fence, &r), "A renews over the freed word");
			check(r.replaced == b.fence && r.replaced_owner == 0,
			      "and names the word B's release left");
		}
		fb_lease_table_destroy(t);
	}
}

/*
 * An acquire names the owner of the word it replaced (0: released), and a
 * release the word its CAS freed: the caller's own in a correct table; under
 * blind-release, a newer holder's live word. The lease chain (issue 26) links
 * each lease to the word it replaced by these, and judges a release by them.
 */
static void test_an_acquire_and_a_release_say_which_word_they_replaced(void **state)
{
	(void)state;
	for (int src = 0; src <= 1; src++)
		for (int bug = 0; bug <= 1; bug++) {
			fb_clock_manual m;
			fb_clock_manual_init(&m, 0);
			fb_fence_source fs = src ? FB_FENCE_PER_KEY : FB_FENCE_GLOBAL;
			fb_lease_table *t =
			        planted(&m.base, 1, fs, bug ? FB_BUG_BLIND_RELEASE : FB_BUG_NONE);
			fb_lease a, b, c, freed;
			fb_lease_stats st = {0};
			check_eq(fb_lease_acquire(t, 0, 1, &a, &st), FB_ACQUIRED, "A acquires");
			check(a.replaced_owner == 0, "the first word had no owner: %u",
			      a.replaced_owner);
			fb_clock_manual_set(&m, 20 * MS); /* A's lease expires, unreleased */
			check_eq(fb_lease_acquire(t, 0, 2, &b, &st), FB_ACQUIRED, "B after expiry");
			check(b.replaced == a.fence && b.replaced_owner == 1,
			      "B replaced A's word: %llu of %u, not %llu of 1",
			      (unsigned long long)b.replaced, b.replaced_owner,
			      (unsigned long long)a.fence);
			freed = (fb_lease){0};
			bool late = fb_lease_release_lease(t, 0, &a, &freed);
			check(late == (bool)bug, "src %d bug %d: A's late release %s", src, bug,
			      bug ? "frees B's word" : "is refused");
			if (bug) {
				check(freed.fence == b.fence && freed.owner == 2 &&
				              freed.expires_at == b.expires_at,
				      "and names it: %llu of %u", (unsigned long long)freed.fence,
				      freed.owner);
			} else {
				check(freed.fence == 0 && freed.owner == 0,
				      "a refused release frees nothing");
				freed = (fb_lease){0};
				check(fb_lease_release_lease(t, 0, &b, &freed), "B releases");
				check(freed.fence == b.fence && freed.owner == 2 &&
				              freed.expires_at == b.expires_at,
				      "its own word: %llu of %u", (unsigned long long)freed.fence,
				      freed.owner);
			}
			check_eq(fb_lease_acquire(t, 0, 3, &c, &st), FB_ACQUIRED, "C acquires");
			check(c.replaced == b.fence && c.replaced_owner == 0,
			      "C replaced the released word: %llu of %u",
			      (unsigned long long)c.replaced, c.replaced_owner);
			fb_lease_table_destroy(t);
		}
}

/* ---- wrong-owner releases racing a live holder ---- */

typedef struct rel_run {
	fb_lease_table *t;
	_Atomic int stop;
	_Atomic uint64_t wrongful;
} rel_run;

static void *bad_releaser(void *p)
{
	rel_run *r = p;
	while (!atomic_load(&r->stop)) {
		fb_lease cur = fb_lease_peek(r->t, 0);
		/* right fence, wrong owner; right owner, older fence */
		if (fb_lease_release(r->t, 0, (uint16_t)(cur.owner + 1), cur.fence) ||
		    (cur.fence > 1 && fb_lease_release(r->t, 0, cur.owner, cur.fence - 1)))
			atomic_fetch_add(&r->wrongful, 1);
	}
	return NULL;
}

static void test_concurrent_wrong_releases_never_free_the_holder(void **state)
{
	(void)state;
	fb_clock_manual m;
	fb_clock_manual_init(&m, 0);
	rel_run r = {.t = table(&m.base, 1, FB_FENCE_PER_KEY)};
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, bad_releaser, &r);
	fb_lease_stats st = {0};
	for (int i = 0; i < 20000; i++) {
		fb_lease l;
		uint16_t owner = (uint16_t)(1 + i % 2);
		check_eq(fb_lease_acquire(r.t, 0, owner, &l, &st), FB_ACQUIRED,
		         "the slot was released by its holder, so the next acquire wins");
		check(fb_lease_is_held(r.t, 0, owner), "holder lost its lease to a wrong release");
		check(fb_lease_release(r.t, 0, owner, l.fence), "the holder's own release");
	}
	atomic_store(&r.stop, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	check_eq(atomic_load(&r.wrongful), 0, "releases by a wrong owner or fence that succeeded");
	fb_lease_table_destroy(r.t);
}

/* Each key's room (fb_lease_table_side) is the caller's: every acquire,
 * renewal, release and takeover leaves it as the caller wrote it, and
 * whatever the caller writes there changes nothing the table answers. */
static void test_the_room_beside_each_word_is_the_callers(void **state)
{
	(void)state;
	enum { ROOMS = 5 };
	fb_fence_source src[] = {FB_FENCE_GLOBAL, FB_FENCE_PER_KEY};
	for (int s = 0; s < 2; s++) {
		fb_clock_manual m;
		fb_clock_manual_init(&m, 0);
		fb_lease_table *t = table(&m.base, ROOMS, src[s]);
		size_t stride = 0, room = 0;
		unsigned char *side = fb_lease_table_side(t, &stride, &room);
		/* what the marks' placement asks (fb_key_marks, open_checks): a pair
		 * of lines a key, less the 16-byte word, 16-byte aligned */
		check(stride == FB_PAD_LINE && room == FB_PAD_LINE - 16 &&
		              (uintptr_t)side % 16 == 0,
		      "the slot's pair of lines less its word (room %zu, stride %zu)", room,
		      stride);
		for (int fill = 0; fill < 2; fill++) {
			/* a pattern, then every byte set: the table must answer alike */
			for (uint32_t k = 0; k < ROOMS; k++)
				for (size_t i = 0; i < room; i++)
					side[k * stride + i] =
					        fill ? 0xff : (unsigned char)(k * 7 + i);
			fb_lease a, b, r;
			uint64_t held_by_b[ROOMS];
			fb_lease_stats st = {0};
			for (uint32_t k = 0; k < ROOMS; k++) {
				check_eq(fb_lease_acquire(t, k, 1, &a, &st), FB_ACQUIRED,
				         "A acquires");
				check_eq(fb_lease_acquire(t, k, 2, &b, &st), FB_HELD, "B waits");
				check(fb_lease_renew(t, k, 1, a.fence, &r), "A renews");
				check(fb_lease_release(t, k, 1, a.fence), "A releases");
				check_eq(fb_lease_acquire(t, k, 2, &b, &st), FB_ACQUIRED,
				         "B acquires");
				check(b.fence > a.fence, "key %u: fence %llu after %llu", k,
				      (unsigned long long)b.fence, (unsigned long long)a.fence);
				held_by_b[k] = b.fence;
			}
			fb_clock_manual_advance(&m, 11 * MS);
			for (uint32_t k = 0; k < ROOMS; k++) {
				check_eq(fb_lease_acquire(t, k, 3, &a, &st), FB_ACQUIRED,
				         "C takes the expired lease over");
				check(a.replaced == held_by_b[k], "the takeover replaced B's word");
				check(!fb_lease_release(t, k, 2, held_by_b[k]),
				      "B's late release fails");
				check(fb_lease_is_held(t, k, 3), "C holds");
				check(fb_lease_release(t, k, 3, a.fence), "C releases");
			}
			for (uint32_t k = 0; k < ROOMS; k++)
				for (size_t i = 0; i < room; i++)
					check(side[k * stride + i] ==
					              (fill ? 0xff : (unsigned char)(k * 7 + i)),
					      "key %u's room, byte %zu: the table wrote there", k,
					      i);
		}
		fb_lease_table_destroy(t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_first_fence_is_configurable_for_both_sources),
	        cmocka_unit_test(test_the_mint_crosses_2_to_the_32_exactly),
	        cmocka_unit_test(test_bad_configuration_is_refused),
	        cmocka_unit_test(test_acquire_from_a_wrong_guess_still_decides_on_the_slot),
	        cmocka_unit_test(test_frozen_clock_many_threads_one_winner),
	        cmocka_unit_test(test_fences_strictly_increase_in_slot_order),
	        cmocka_unit_test(test_release_by_wrong_owner_or_old_fence_fails),
	        cmocka_unit_test(test_every_answer_states_the_tables_instant),
	        cmocka_unit_test(test_a_slot_held_past_its_stated_expiry_says_so),
	        cmocka_unit_test(test_is_held_only_while_live_and_renew_only_while_live),
	        cmocka_unit_test(test_a_renewal_says_which_word_it_replaced),
	        cmocka_unit_test(test_an_acquire_and_a_release_say_which_word_they_replaced),
	        cmocka_unit_test(test_concurrent_wrong_releases_never_free_the_holder),
	        cmocka_unit_test(test_the_room_beside_each_word_is_the_callers),
	};
	return cmocka_run_group_tests_name("lease", tests, NULL, NULL);
}
