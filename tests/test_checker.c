/* The checker on hand-made histories, and under threads that publish out of order. */
#include <pthread.h>

#include "checker.h"
#include "clock.h"
#include "witness.h"
#include "fbtest.h"

static fb_checker *checker(uint32_t keys, int64_t bal)
{
	fb_checker *c;
	check_eq(fb_checker_create(keys, 64, bal, &c), FB_OK, "checker creation");
	return c;
}

static void test_stale_write_and_lost_update_are_counted(void **state)
{
	(void)state;
	fb_checker *c = checker(1, 100);
	uint64_t stalls = 0;
	fb_check_key k;
	/* B (34) reads 100, writes 99; A (33) read 100 earlier, writes 99 over it */
	fb_checker_commit(c, 0, 1, 34, 100, 100, 99, 0, &stalls);
	fb_checker_commit(c, 0, 2, 33, 100, 99, 99, 0, &stalls);
	fb_checker_key(c, 0, &k);
	check_eq(k.checked, 2, "records walked");
	check_eq(k.stale_accepted, 1, "33 after 34 is a stale write accepted");
	check_eq(k.lost_amount, 1, "A's write from 100 over 99 erased one debit");
	check_eq(k.chain_breaks, 0, "each write replaced what the previous one left");
	check_eq(k.max_fence, 34, "highest fence accepted");
	check_eq(k.balance, 99, "balance after the walk");
	fb_checker_destroy(c);
}

static void test_equal_fence_is_stale(void **state)
{
	(void)state;
	fb_checker *c = checker(1, 10);
	uint64_t stalls = 0;
	fb_check_key k;
	fb_checker_commit(c, 0, 1, 40, 10, 10, 5, 0, &stalls);
	fb_checker_commit(c, 0, 2, 40, 5, 5, 0, 0, &stalls);
	fb_checker_key(c, 0, &k);
	check_eq(k.stale_accepted, 1, "a second write with fence 40 is stale (> not >=)");
	check_eq(k.lost_amount, 0, "but it lost nothing: it read what it replaced");
	fb_checker_destroy(c);
}

static void test_walk_waits_for_an_unpublished_version(void **state)
{
	(void)state;
	fb_checker *c = checker(2, 50);
	uint64_t stalls = 0;
	fb_check_key k;
	fb_checker_commit(c, 1, 2, 8, 49, 49, 48, 0, &stalls);
	fb_checker_key(c, 1, &k);
	check_eq(k.checked, 0, "version 2 cannot be walked before version 1 arrives");
	check_eq(k.next_version, 1, "the walk waits at version 1");
	fb_checker_commit(c, 1, 1, 7, 50, 50, 49, 0, &stalls);
	fb_checker_key(c, 1, &k);
	check_eq(k.checked, 2, "version 1's arrival lets the walk take both");
	check_eq(k.stale_accepted, 0, "7 then 8: in order");
	fb_checker_key(c, 0, &k);
	check_eq(k.checked, 0, "the other key saw nothing");
	fb_checker_destroy(c);
}

static void test_a_history_out_of_step_with_the_store_is_a_chain_break(void **state)
{
	(void)state;
	fb_checker *c = checker(1, 100);
	uint64_t stalls = 0;
	fb_check_key k;
	fb_checker_commit(c, 0, 1, 1, 100, 100, 99, 0, &stalls);
	fb_checker_commit(c, 0, 2, 2, 97, 97, 96, 0, &stalls); /* the store said it replaced 97 */
	fb_checker_key(c, 0, &k);
	check_eq(k.chain_breaks, 1, "a write that replaced a balance nobody left");
	fb_checker_destroy(c);
}

/* Threads take versions from a counter standing in for the store, publish
 * out of order, and lap the ring many times. */
enum { THREADS = 6, PER_THREAD = 20000 };

typedef struct lap {
	fb_checker *c;
	_Atomic uint64_t next; /* the store's commit counter */
} lap;

static void *lapper(void *p)
{
	lap *l = p;
	uint64_t stalls = 0;
	for (int i = 0; i < PER_THREAD; i++) {
		uint64_t v = atomic_fetch_add(&l->next, 1) + 1;
		/* fence = version: strictly increasing in commit order;
		 * balance chain: version v replaces 1000000 - (v - 1) */
		int64_t replaced = 1000000 - (int64_t)(v - 1);
		fb_checker_commit(l->c, 0, (uint16_t)v, v, replaced, replaced, replaced - 1, 0,
		                  &stalls);
	}
	return NULL;
}

static void test_threads_lapping_a_small_ring_count_each_record_once(void **state)
{
	(void)state;
	/* 2^16 keys give the smallest ring, 4 records a key */
	lap l = {.c = checker(1u << 16, 1000000)};
	pthread_t th[THREADS];
	for (int i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, lapper, &l);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	fb_checker_drain(l.c);
	fb_check_key k;
	fb_checker_key(l.c, 0, &k);
	check_eq(k.checked, THREADS * PER_THREAD, "every record walked exactly once");
	check_eq(k.stale_accepted, 0, "fences followed commit order");
	check_eq(k.chain_breaks, 0, "the balance chain held across ring laps");
	check_eq(k.lost_amount, 0, "nothing lost");
	check_eq(k.balance, 1000000 - THREADS * PER_THREAD, "final balance");
	fb_checker_destroy(l.c);
}

static void test_too_many_writers_for_16_bit_versions_is_refused(void **state)
{
	(void)state;
	fb_checker *c = NULL;
	check_eq(fb_checker_create(1, 65535, 0, &c), FB_EINVAL,
	         "65535 writers could lap the walk's 16-bit version");
	check_eq(fb_checker_create(1, 32768, 0, &c), FB_OK, "32768 writers fit");
	fb_checker_destroy(c);
}

/* A clock that moves a millisecond each time it is read: the wait below
 * sees time pass without anything sleeping. */
typedef struct ticking {
	fb_clock base;
	uint64_t t;
} ticking;

static uint64_t tick_now(const fb_clock *c)
{
	ticking *k = (ticking *)(uintptr_t)c;
	return k->t += MS;
}

/* A commit waiting for a version that never comes gives up at its bound, or
 * at once when told to abort, and says so. */
static void test_a_wait_for_a_missing_version_is_bounded(void **state)
{
	(void)state;
	fb_checker *c;
	check_eq(fb_checker_create(1, 1, 100, &c), FB_OK, "checker creation");
	ticking clk = {{"ticking", tick_now}, 0};
	_Atomic int abort_flag = 0;
	fb_checker_bound(c, &abort_flag, &clk.base, 50 * MS);
	uint64_t stalls = 0;
	/* version 1 never arrives: the later ones fill the ring, then wait */
	uint16_t gave_up = 0;
	for (uint32_t v = 2; v < 65536 && !gave_up; v++)
		if (!fb_checker_commit(c, 0, (uint16_t)v, v, 100, 100, 100, 0, &stalls))
			gave_up = (uint16_t)v;
	check(gave_up > 2, "commits that fit the ring are taken (gave up at %u)", gave_up);
	check_eq(stalls, 1, "the first that did not fit waited, once");
	check(clk.t >= 50 * MS && clk.t < 60 * MS, "... for its bound, not longer: %llu ns",
	      (unsigned long long)clk.t);
	atomic_store(&abort_flag, 1);
	uint64_t t = clk.t;
	check(!fb_checker_commit(c, 0, gave_up, 1, 100, 100, 100, 0, &stalls),
	      "an abort gives the wait up");
	check(clk.t - t <= 2 * MS, "at once");
	fb_check_key ck;
	fb_checker_key(c, 0, &ck);
	check_eq(ck.checked, 0, "nothing walked past the missing version");
	fb_checker_destroy(c);
}

/* The witness: each contradiction counted once, a clean history none. */
static void test_witness_counts_each_contradiction_once(void **state)
{
	(void)state;
	fb_witness *w;
	const uint64_t ttl = 10 * MS;
	check_eq(fb_witness_create(1, ttl, 0, &w), FB_OK, "witness creation");
	fb_witness_counts c = {0};
	fb_witness_acquired(w, 0, 1, ttl, &c); /* fence 1 at 0, released */
	fb_witness_releasing(w, 0, 1, ttl);
	fb_witness_acquired(w, 0, 2, 2 * MS + ttl, &c);  /* 2 at 2 ms, expires at 12 */
	fb_witness_acquired(w, 0, 3, 12 * MS + ttl, &c); /* 3 at 12 ms: 2 expired */
	check(!c.duplicates && !c.inversions && !c.overlaps, "a clean history counts nothing");
	fb_witness_acquired(w, 0, 4, 13 * MS + ttl, &c); /* 4 at 13 ms: 3 still live */
	check_eq(c.overlaps, 1, "fence 3's live lease overlapped by 4, once");
	fb_witness_acquired(w, 0, 4, 13 * MS + ttl, &c);
	check_eq(c.duplicates, 1, "fence 4 reported twice");
	fb_witness_acquired(w, 0, 5, 1 * MS + ttl, &c); /* 5 acquired at 1 ms: before 4 */
	check_eq(c.inversions, 1, "a newer fence for an older acquisition");
	check_eq(c.overlaps, 1, "... is an inversion, not also an overlap");
	fb_witness_destroy(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_stale_write_and_lost_update_are_counted),
	        cmocka_unit_test(test_equal_fence_is_stale),
	        cmocka_unit_test(test_walk_waits_for_an_unpublished_version),
	        cmocka_unit_test(test_a_history_out_of_step_with_the_store_is_a_chain_break),
	        cmocka_unit_test(test_threads_lapping_a_small_ring_count_each_record_once),
	        cmocka_unit_test(test_too_many_writers_for_16_bit_versions_is_refused),
	        cmocka_unit_test(test_a_wait_for_a_missing_version_is_bounded),
	        cmocka_unit_test(test_witness_counts_each_contradiction_once),
	};
	return cmocka_run_group_tests_name("checker", tests, NULL, NULL);
}
