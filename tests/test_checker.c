/* The checker on hand-made histories, and the feed under threads that log out of order. */
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "checker.h"
#include "clock.h"
#include "feed.h"
#include "witness.h"
#include "fbtest.h"

static fb_checker *checker(uint32_t keys, int64_t bal)
{
	fb_checker *c;
	check_eq(fb_checker_create(keys, 64, bal, &c), FB_OK, "checker creation");
	return c;
}

/* An accepted write of the fenced store: key, version, fence and balances. */
static fb_check_rec rec(uint32_t key, uint16_t version, uint64_t fence, int64_t read,
                        int64_t replaced, int64_t written)
{
	return (fb_check_rec){.fence = fence,
	                      .read = read,
	                      .replaced = replaced,
	                      .written = written,
	                      .key = key,
	                      .version = version,
	                      .writer = 1,
	                      .d = FB_FENCED};
}

static fb_check_place put(fb_checker *c, uint32_t key, uint16_t version, uint64_t fence,
                          int64_t read, int64_t replaced, int64_t written)
{
	fb_check_rec r = rec(key, version, fence, read, replaced, written);
	return fb_checker_place(c, &r);
}

static void test_stale_write_and_lost_update_are_counted(void **state)
{
	(void)state;
	fb_checker *c = checker(1, 100);
	fb_check_key k;
	/* B (34) reads 100, writes 99; A (33) read 100 earlier, writes 99 over it */
	put(c, 0, 1, 34, 100, 100, 99);
	put(c, 0, 2, 33, 100, 99, 99);
	fb_checker_key(c, 0, &k);
	check_eq(k.checked, 2, "records walked");
	check_eq(k.stale_accepted, 1, "33 after 34 is a stale write accepted");
	uint64_t live;
	int64_t live_lost;
	fb_checker_so_far(c, &live, &live_lost);
	check_eq(live, 1, "... and the live count says so");
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
	fb_check_key k;
	put(c, 0, 1, 40, 10, 10, 5);
	put(c, 0, 2, 40, 5, 5, 0);
	fb_checker_key(c, 0, &k);
	check_eq(k.stale_accepted, 1, "a second write with fence 40 is stale (> not >=)");
	check_eq(k.lost_amount, 0, "but it lost nothing: it read what it replaced");
	fb_checker_destroy(c);
}

/* Issue 27: fences above 2^32 are whole 64-bit numbers to the checker. A
 * fence that differs from the newest only above bit 31 is stale or not by
 * all its bits: 2^32 + 5 then 6 (6 < 2^32 + 5) is stale; 5 then 2^32 + 4 is
 * in order, though 2^32 + 4 kept in 32 bits would be 4 < 5. */
static void test_fences_above_2_32_are_compared_whole(void **state)
{
	(void)state;
	const uint64_t G = UINT64_C(1) << 32;
	fb_checker *c = checker(2, 10);
	fb_check_key k;
	put(c, 0, 1, G + 5, 10, 10, 9);
	put(c, 0, 2, 6, 9, 9, 8);
	fb_checker_key(c, 0, &k);
	check_eq(k.stale_accepted, 1, "fence 6 after fence 2^32 + 5 is stale");
	check(k.max_fence == G + 5, "the highest fence accepted is 2^32 + 5, whole: %llu",
	      (unsigned long long)k.max_fence);
	put(c, 1, 1, 5, 10, 10, 9);
	put(c, 1, 2, G + 4, 9, 9, 8);
	put(c, 1, 3, G + 3, 8, 8, 7);
	fb_checker_key(c, 1, &k);
	check_eq(k.stale_accepted, 1, "5, 2^32 + 4 in order; 2^32 + 3 after it is stale");
	check(k.max_fence == G + 4, "the highest: 2^32 + 4 (%llu)",
	      (unsigned long long)k.max_fence);
	fb_checker_destroy(c);
}

static void test_walk_waits_for_an_unpublished_version(void **state)
{
	(void)state;
	fb_checker *c = checker(2, 50);
	fb_check_key k;
	check_eq(put(c, 1, 2, 8, 49, 49, 48), FB_CHECK_TAKEN, "version 2 waits in the ring");
	fb_checker_key(c, 1, &k);
	check_eq(k.checked, 0, "version 2 cannot be walked before version 1 arrives");
	check_eq(k.next_version, 1, "the walk waits at version 1");
	put(c, 1, 1, 7, 50, 50, 49);
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
	fb_check_key k;
	put(c, 0, 1, 1, 100, 100, 99);
	put(c, 0, 2, 2, 97, 97, 96); /* the store said it replaced 97 */
	fb_checker_key(c, 0, &k);
	check_eq(k.chain_breaks, 1, "a write that replaced a balance nobody left");
	fb_checker_destroy(c);
}

/* A record beyond its key's ring is handed back, not lost and not counted:
 * offered again once the walk is closer, it is walked in its place. */
static void test_a_record_beyond_the_ring_is_handed_back(void **state)
{
	(void)state;
	fb_checker *c; /* 2^16 keys: a ring of 4 */
	check_eq(fb_checker_create(1u << 16, 8, 0, &c), FB_OK, "checker");
	for (uint16_t v = 2; v <= 4; v++)
		check_eq(put(c, 0, v, v, -(v - 1), -(v - 1), -v), FB_CHECK_TAKEN,
		         "an early one waits");
	check_eq(put(c, 0, 5, 5, -4, -4, -5), FB_CHECK_LATER, "5 is beyond a ring of 4");
	fb_check_key k;
	fb_checker_key(c, 0, &k);
	check_eq(k.checked + k.duplicates, 0, "nothing walked or counted yet");
	put(c, 0, 1, 1, 0, 0, -1);
	check_eq(put(c, 0, 5, 5, -4, -4, -5), FB_CHECK_TAKEN, "offered again, 5 is walked");
	fb_checker_key(c, 0, &k);
	check_eq(k.checked, 5, "all five, in order");
	check_eq(k.chain_breaks + k.duplicates + k.stale_accepted, 0, "a clean history");
	fb_checker_destroy(c);
}

static void test_too_many_writers_for_16_bit_versions_is_refused(void **state)
{
	(void)state;
	fb_checker *c = NULL;
	check_eq(fb_checker_create(1, 65535, 0, &c), FB_EINVAL,
	         "65535 writes not yet walked could lap the walk's 16-bit version");
	check_eq(fb_checker_create(1, 65536 - 4 - FB_CHECKER_BEHIND, 0, &c), FB_OK,
	         "a ring of 4 and the versions kept behind the walk still fit");
	fb_checker_destroy(c);
	uint32_t cap, ahead;
	check_eq(fb_feed_plan(16385, fb_checker_in_flight(16384), &cap, &ahead), FB_OK,
	         "the most threads a run takes get logs");
	check(cap >= 1, "of at least one record");
	check_eq(fb_checker_create(1, ahead, 0, &c), FB_OK, "... and a checker beside them");
	fb_checker_destroy(c);
	check_eq(fb_feed_plan(2, fb_checker_in_flight(1), &cap, &ahead), FB_OK, "one worker");
	check(cap >= 4096, "gets a long log (%u records)", cap);
	check(ahead >= 2 * cap, "and the checker's window covers it (%u)", ahead);
}

/* Two accepted writes that share a version (a check-and-apply split in two
 * steps) are a duplicate, counted at once and named, never waited for:
 * whether the second arrives after the walk took the first, while the first
 * is parked, or after a parked first was walked. */
static void test_a_shared_version_is_a_duplicate_not_a_wait(void **state)
{
	(void)state;
	fb_checker *c = checker(1, 100);
	fb_check_key k;
	put(c, 0, 1, 5, 100, 100, 99);
	check_eq(put(c, 0, 1, 6, 100, 100, 99), FB_CHECK_TAKEN,
	         "version 1 again: taken, not waited for");
	fb_checker_key(c, 0, &k);
	check_eq(k.duplicates, 1, "behind the walk: a duplicate");
	check_eq(k.checked, 1, "walked once");
	put(c, 0, 3, 8, 98, 98, 97);
	put(c, 0, 3, 9, 98, 98, 97);
	fb_checker_key(c, 0, &k);
	check_eq(k.duplicates, 2, "parked twice: a duplicate");
	put(c, 0, 2, 7, 99, 99, 98);
	fb_checker_key(c, 0, &k);
	check_eq(k.checked, 3, "2, then the parked 3");
	put(c, 0, 3, 10, 98, 98, 97);
	fb_checker_key(c, 0, &k);
	check_eq(k.duplicates, 3, "after the walk took the parked one: a duplicate");
	check_eq(k.next_version, 4, "the walk waits at 4, not for a version that never comes");
	check_eq(put(c, 0, 2, 11, 99, 99, 98), FB_CHECK_TAKEN,
	         "version 2 again, two behind the walk: taken at once, not offered later");
	fb_checker_key(c, 0, &k);
	check_eq(k.duplicates, 4, "a duplicate however far behind, within the window");
	int64_t bal[1] = {97};
	uint64_t last[1] = {8};
	fb_check_verdict v;
	fb_checker_verdict(c, true, bal, last, 100, 1, 6, 0, &v, NULL, NULL);
	check(!v.agrees, "a shared version is a disagreement");
	check_eq(v.duplicates, 4, "the verdict counts them");
	check_eq(v.dup_key, 0, "... names the key");
	check_eq(v.dup_version, 1, "... and the first shared version");
	check(strstr(v.disagreement, "key 0: two accepted writes share version 1"),
	      "the first reason is the duplicate: %s", v.disagreement);
	fb_checker_destroy(c);
}

/* A debit of 1 for the i-th write of a key that started at 0, fence i. */
static void debit_one(fb_checker *c, uint64_t i)
{
	int64_t before = -(int64_t)(i - 1);
	check_eq(put(c, 0, (uint16_t)i, i, before, before, before - 1), FB_CHECK_TAKEN,
	         "write taken");
}

/* In-order records step the walk without the ring, so a ring slot filled by
 * an early record once keeps its contents while 2^16 versions go by; when
 * that version number comes round, the walk must not take it again. */
static void test_a_parked_record_is_walked_once_across_a_version_wrap(void **state)
{
	(void)state;
	fb_checker *c = checker(1, 0);
	fb_check_key k;
	debit_one(c, 2); /* early: parked in the ring */
	debit_one(c, 1); /* in order: steps the walk, then takes 2 */
	fb_checker_key(c, 0, &k);
	check_eq(k.checked, 2, "the parked record walked behind the in-order one");
	for (uint64_t i = 3; i <= 65537; i++)
		debit_one(c, i);
	fb_checker_key(c, 0, &k);
	check_eq(k.checked, 65537, "every in-order write walked");
	check_eq(k.next_version, 2, "the walk waits at version 2 again (65538 mod 2^16)");
	debit_one(c, 65539); /* early again: the walk looks at slot 2 */
	fb_checker_key(c, 0, &k);
	check_eq(k.checked, 65537, "the old record of version 2 was not walked a second time");
	check_eq(k.stale_accepted, 0, "... nor counted as a stale write");
	check_eq(k.chain_breaks, 0, "... nor as a break in the chain");
	debit_one(c, 65538);
	fb_checker_key(c, 0, &k);
	check_eq(k.checked, 65539, "the real version 65538, then the parked 65539");
	check_eq(k.balance, -65539, "balance after every debit");
	check_eq(k.stale_accepted + (uint64_t)k.chain_breaks + (uint64_t)k.lost_amount, 0,
	         "a clean history");
	fb_checker_destroy(c);
}

/* The story: a stale write a watch names keeps the newer write it went
 * behind (the record that carried the highest fence before it), whoever
 * wrote in between; a watch for another write keeps nothing. */
static void test_a_watched_stale_write_keeps_the_newer_write(void **state)
{
	(void)state;
	fb_checker *c = checker(2, 100);
	fb_check_watch a = {.key = 1, .fence = 5}, other = {.key = 1, .fence = 6};
	atomic_init(&a.armed, 1);
	atomic_init(&other.armed, 1);
	fb_check_watch *ws[] = {&a, &other};
	fb_checker_watch(c, ws, 2);
	fb_check_rec b = rec(1, 1, 9, 100, 100, 99);
	b.writer = 2, b.held = fb_check_held(1500, 1000), b.wrote_at = 1500,
	b.outcome[FB_FENCED] = 1;
	fb_checker_place(c, &b);
	fb_check_rec mid = rec(1, 2, 7, 99, 99, 98); /* stale too, not watched */
	mid.writer = 3;
	fb_checker_place(c, &mid);
	fb_check_rec s = rec(1, 3, 5, 100, 98, 99);
	s.wrote_at = 2000;
	fb_checker_place(c, &s);
	check(a.seen[FB_FENCED], "the watched stale write was seen");
	check_eq(a.newer[FB_FENCED].writer, 2, "the newer write is fence 9's, by writer 2");
	check_eq(a.newer[FB_FENCED].fence, 9, "... with its fence");
	check_eq(fb_check_acquired_at(&a.newer[FB_FENCED]), 1000, "... its lease's start");
	check_eq(a.newer[FB_FENCED].wrote_at, 1500, "... and its write's time");
	check_eq(a.stale[FB_FENCED].wrote_at, 2000, "the stale write itself is kept");
	check(!a.seen[FB_UNFENCED], "only in the store that took it");
	check(!other.seen[FB_FENCED], "a watch for another write keeps nothing");
	fb_check_story first;
	fb_checker_first_stale(c, &first);
	check(first.found && first.stale.writer == 3 && first.newer.writer == 2,
	      "the first stale write walked (writer 3), behind writer 2's");
	fb_checker_destroy(c);
}

/* ---- the feed ---- */

/* Producers take versions from a counter standing in for the store and log
 * them, out of order across logs, across many keys; the feed's thread and
 * the producers that find their logs full merge them. Small logs and
 * rings: most records wait somewhere. Every record is walked exactly once,
 * and nothing waits forever (records of one log follow acceptance). */
enum { THREADS = 6, PER_THREAD = 40000, LAP_KEYS = 3 };

typedef struct lap {
	fb_feed *feed;
	_Atomic uint64_t next[LAP_KEYS]; /* each key's commit counter */
	_Atomic uint32_t id;
	_Atomic uint64_t clock; /* when a record was written */
	bool skewed;            /* ... odd producers' clocks far ahead */
	uint64_t stalls[THREADS];
} lap;

static void *lapper(void *p)
{
	lap *l = p;
	uint32_t me = atomic_fetch_add(&l->id, 1);
	fb_feed_log *log = fb_feed_log_of(l->feed, me);
	uint64_t x = 0x9e3779b97f4a7c15u * (me + 1);
	for (int i = 0; i < PER_THREAD; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint32_t key = (uint32_t)(x % LAP_KEYS);
		uint64_t v = atomic_fetch_add(&l->next[key], 1) + 1;
		/* fence = version: strictly increasing in commit order;
		 * balance chain: version v replaces 1000000 - (v - 1) */
		int64_t replaced = 1000000 - (int64_t)(v - 1);
		if (!fb_feed_slot(log) && !fb_feed_room(log, true, &l->stalls[me]))
			fail_msg("a wait for room was given up");
		uint64_t at = atomic_fetch_add(&l->clock, 1) +
		              (l->skewed && me % 2 ? UINT64_C(1) << 40 : 0);
		*fb_feed_slot(log) = rec(key, (uint16_t)v, v, replaced, replaced, replaced - 1);
		fb_feed_slot(log)->wrote_at = at;
		fb_feed_put(log);
		if (x % 3 == 0)
			fb_feed_publish(log);
	}
	fb_feed_publish(log);
	return NULL;
}

/* One lap: every record walked exactly once; how many times producers
 * waited for room. skewed: the merge's order (the records' clocks) is
 * far from their commit order. crowded: the feed's thread naps its
 * longest (fb_feed_crowded), and with logs of 8 records the producers
 * take most passes. */
static uint64_t one_lap(bool skewed, bool crowded)
{
	fb_checker *c; /* 2^16 keys: a ring of 4 */
	check_eq(fb_checker_create(1u << 16, THREADS * 8 + 64, 1000000, &c), FB_OK, "checker");
	fb_checker *cs[FB_DISCIPLINES] = {[FB_FENCED] = c};
	lap l = {.skewed = skewed};
	check_eq(fb_feed_create(THREADS, 8, cs, false, &l.feed), FB_OK, "a feed of 8-record logs");
	if (crowded)
		fb_feed_crowded(l.feed);
	check_eq(fb_feed_start(l.feed), FB_OK, "its thread");
	pthread_t th[THREADS];
	for (int i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, lapper, &l);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	fb_feed_stop(l.feed);
	uint64_t total = 0, stalls = 0;
	for (uint32_t key = 0; key < LAP_KEYS; key++) {
		fb_check_key k;
		fb_checker_key(c, key, &k);
		uint64_t n = atomic_load(&l.next[key]);
		check_eq(k.checked, n, "key's every record walked exactly once");
		check_eq(k.stale_accepted + k.chain_breaks + k.duplicates, 0,
		         "fences and balances followed commit order");
		check_eq(k.balance, 1000000 - (int64_t)n, "final balance");
		total += k.checked;
	}
	for (int i = 0; i < THREADS; i++)
		stalls += l.stalls[i];
	check_eq(total, THREADS * PER_THREAD, "all of them");
	fb_feed_destroy(l.feed);
	fb_checker_destroy(c);
	return stalls;
}

/* The waits for room must have happened for the lap to test them; on a
 * loaded machine the feed's thread can keep up with producers the
 * scheduler starves, so a lap with none is run again, 3 laps at most. */
static void test_logs_merged_out_of_order_walk_each_record_once(void **state)
{
	(void)state;
	for (int crowded = 0; crowded < 2; crowded++)
		for (int skewed = 0; skewed < 2; skewed++) {
			uint64_t stalls = 0;
			for (int lap_no = 1; lap_no <= 3 && !stalls; lap_no++)
				stalls = one_lap(skewed, crowded);
			check(stalls > 0,
			      "small logs made producers wait for room in one of 3 laps");
		}
}

/* Four producers' logs hold one key's writes, each version in a log drawn
 * at random, as workers that shared the cores would. Taken a log at a
 * time, each runs ahead of the others' versions by every record it holds,
 * past a ring of 8, and waits for the next pass; merged in the order they
 * were written, one pass walks them all and none waits in the ring.
 * Written on clocks an hour apart (the merge's order is only a guess), a
 * log held back is tried again as the others move, and one pass still
 * walks them all. */
static void test_a_pass_merges_logs_in_the_order_they_were_written(void **state)
{
	(void)state;
	for (int skewed = 0; skewed <= 1; skewed++) {
		fb_checker *c; /* a ring of 8: 8 + ahead + FB_CHECKER_BEHIND = 2^16 */
		check_eq(fb_checker_create(1, (1u << 16) - FB_CHECKER_BEHIND - 8, 0, &c), FB_OK,
		         "checker");
		fb_checker *cs[FB_DISCIPLINES] = {[FB_FENCED] = c};
		fb_feed *f;
		check_eq(fb_feed_create(4, 128, cs, false, &f), FB_OK, "a feed of four logs");
		uint64_t x = 1;
		for (uint32_t v = 1; v <= 128; v++) {
			x = x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
			fb_feed_log *l = fb_feed_log_of(f, (uint32_t)(x >> 62));
			fb_check_rec *r = fb_feed_slot(l);
			check(r != NULL, "room for version %u", v);
			*r = rec(0, (uint16_t)v, v, 1 - (int64_t)v, 1 - (int64_t)v, -(int64_t)v);
			r->wrote_at = 1000 * (uint64_t)v +
			              (skewed && v % 2 ? UINT64_C(3600000000000) : 0);
			fb_feed_put(l);
		}
		for (uint32_t i = 0; i < 4; i++)
			fb_feed_publish(fb_feed_log_of(f, i));
		uint64_t n;
		check(fb_feed_pass(f, &n), "a pass");
		check(n == 128, "one pass walks the logs whole (%s clocks): %llu of 128",
		      skewed ? "skewed" : "agreeing", (unsigned long long)n);
		fb_check_key k;
		fb_checker_key(c, 0, &k);
		check_eq(k.checked, 128, "every version walked");
		check_eq(k.duplicates + k.chain_breaks + k.stale_accepted, 0, "and nothing blamed");
		if (!skewed)
			check(k.waited == 0,
			      "in the order written, none waited in the ring: %llu did",
			      (unsigned long long)k.waited);
		fb_feed_stop(f);
		fb_feed_destroy(f);
		fb_checker_destroy(c);
	}
}

/* Producers log versions from a counter, and some versions are handed to
 * two of them (the split check-and-apply): every duplicate is counted,
 * once, and every other record walked, whatever the interleaving. 28,000
 * versions in all, below the checker's window (30,725 here): a duplicate
 * whose writer the scheduler held while 65,000 others were logged would
 * read, mod 2^16, as a record a few versions ahead, with the version the
 * walk waits for behind it in its own log (seen once on a machine loaded
 * to 30), so the interleavings stay within the window; a duplicate from
 * farther behind than that has its own test below. */
enum { DUP_THREADS = 4, DUP_PER_THREAD = 7000 };

typedef struct dupper {
	fb_feed *feed;
	_Atomic uint64_t next;
	_Atomic uint64_t dups; /* versions handed out twice */
	_Atomic uint32_t id;
} dupper;

static void *dup_writer(void *p)
{
	dupper *d = p;
	uint32_t me = atomic_fetch_add(&d->id, 1);
	fb_feed_log *log = fb_feed_log_of(d->feed, me);
	uint64_t x = 0x2545f4914f6cdd1du * (me + 1), stalls = 0;
	for (int i = 0; i < DUP_PER_THREAD; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint64_t v;
		if (x % 50 == 0) { /* take the version the last writer took */
			v = atomic_load(&d->next);
			if (!v)
				continue;
			atomic_fetch_add(&d->dups, 1);
		} else {
			v = atomic_fetch_add(&d->next, 1) + 1;
		}
		int64_t replaced = -(int64_t)(v - 1);
		if (!fb_feed_slot(log) && !fb_feed_room(log, true, &stalls))
			fail_msg("a wait for room was given up");
		*fb_feed_slot(log) = rec(0, (uint16_t)v, v, replaced, replaced, replaced - 1);
		fb_feed_put(log);
		fb_feed_publish(log);
	}
	return NULL;
}

/* A duplicate that comes tens of thousands of versions late looks, mod
 * 2^16, like a record far ahead of the walk. Nothing else could still come
 * to fill the gap, so a pass that stands still takes it as the duplicate it
 * is, at once, instead of holding its log forever. */
static void test_a_duplicate_from_far_behind_is_counted_not_waited_for(void **state)
{
	(void)state;
	fb_checker *c;
	check_eq(fb_checker_create(1, 30000, 0, &c), FB_OK, "checker");
	fb_checker *cs[FB_DISCIPLINES] = {[FB_FENCED] = c};
	fb_feed *f;
	check_eq(fb_feed_create(2, 8, cs, false, &f), FB_OK, "a feed of two logs");
	fb_feed_log *a = fb_feed_log_of(f, 0), *b = fb_feed_log_of(f, 1);
	uint64_t n, stalls = 0;
	for (uint32_t v = 1; v <= 60000; v++) {
		if (!fb_feed_slot(a))
			check(fb_feed_room(a, false, &stalls), "the walk makes room at %u", v);
		*fb_feed_slot(a) =
		        rec(0, (uint16_t)v, v, -(int64_t)v + 1, -(int64_t)v + 1, -(int64_t)v);
		fb_feed_put(a);
		fb_feed_publish(a);
	}
	check(fb_feed_pass(f, &n), "a pass");
	/* version 20,000 again: 40,000 behind, 25,535 "ahead" mod 2^16, past
	 * the ring (16,384 records) and within the window (+30,000) */
	*fb_feed_slot(b) = rec(0, 20000, 20000, 0, 0, 0);
	fb_feed_put(b);
	fb_feed_publish(b);
	check(fb_feed_pass(f, &n), "a pass");
	fb_check_key k;
	fb_checker_key(c, 0, &k);
	check_eq(k.checked, 60000, "every version walked once");
	check_eq(k.duplicates, 1, "the late copy is a duplicate");
	check_eq(n, 1, "taken in that pass");
	for (int i = 0; i < 8; i++) { /* its log is free again */
		check(fb_feed_slot(b) != NULL, "room in the late writer's log");
		*fb_feed_slot(b) = rec(0, (uint16_t)(60001 + i), 60001 + i, -60000 - i, -60000 - i,
		                       -60001 - i);
		fb_feed_put(b);
		fb_feed_publish(b);
	}
	fb_feed_stop(f);
	fb_checker_key(c, 0, &k);
	check_eq(k.checked, 60008, "and what it logs next is walked");
	check_eq(k.stale_accepted, 0, "nothing stale");
	fb_feed_destroy(f);
	fb_checker_destroy(c);
}

/* The same, with the version the walk waits for behind the late copy in
 * its own log: a producer's log is in its commit order, so nothing later
 * in the blocked log can fill the gap before its head. A copy 65,508
 * versions late reads, mod 2^16, as 28 ahead: fewer than the blocked log's
 * own 40 later records, more than anything else that could come (issue
 * 27). Counting its own log as able to fill the gap held it for ever. */
static void test_a_far_behind_duplicate_ahead_of_its_own_log_is_counted(void **state)
{
	(void)state;
	fb_checker *c; /* many keys: a ring of 4, so 28 ahead is held back */
	check_eq(fb_checker_create(1u << 14, 30000, 0, &c), FB_OK, "checker");
	fb_checker *cs[FB_DISCIPLINES] = {[FB_FENCED] = c};
	fb_feed *f;
	check_eq(fb_feed_create(2, 64, cs, false, &f), FB_OK, "a feed of two logs");
	fb_feed_log *a = fb_feed_log_of(f, 0), *b = fb_feed_log_of(f, 1);
	uint64_t n, stalls = 0;
	for (uint32_t v = 1; v < 65600; v++) {
		if (!fb_feed_slot(a))
			check(fb_feed_room(a, false, &stalls), "the walk makes room at %u", v);
		*fb_feed_slot(a) =
		        rec(0, (uint16_t)v, v, -(int64_t)v + 1, -(int64_t)v + 1, -(int64_t)v);
		fb_feed_put(a);
		fb_feed_publish(a);
	}
	check(fb_feed_pass(f, &n), "a pass");
	*fb_feed_slot(b) = rec(0, 92, 92, 0, 0, 0); /* version 92 again */
	fb_feed_put(b);
	for (uint32_t v = 65600; v < 65640; v++) { /* then its writer's next writes */
		*fb_feed_slot(b) =
		        rec(0, (uint16_t)v, v, -(int64_t)v + 1, -(int64_t)v + 1, -(int64_t)v);
		fb_feed_put(b);
	}
	fb_feed_publish(b);
	check(fb_feed_pass(f, &n), "a pass");
	check(fb_feed_pass(f, &n), "a pass");
	fb_check_key k;
	fb_checker_key(c, 0, &k);
	check_eq(k.duplicates, 1, "the late copy is a duplicate, not a record ahead");
	check_eq(k.checked, 65639, "and its log's later records are walked");
	fb_feed_stop(f);
	fb_feed_destroy(f);
	fb_checker_destroy(c);
}

static void test_threads_sharing_versions_count_every_duplicate_once(void **state)
{
	(void)state;
	for (int round = 0; round < 3; round++) {
		uint32_t cap, ahead;
		check_eq(fb_feed_plan(DUP_THREADS, fb_checker_in_flight(DUP_THREADS), &cap, &ahead),
		         FB_OK, "plan");
		fb_checker *c; /* a small ring (many keys): parked records are common */
		check_eq(fb_checker_create(1u << 15, ahead, 0, &c), FB_OK, "checker");
		fb_checker *cs[FB_DISCIPLINES] = {[FB_FENCED] = c};
		dupper d = {0};
		check_eq(fb_feed_create(DUP_THREADS, cap < 64 ? cap : 64, cs, false, &d.feed),
		         FB_OK, "feed");
		check_eq(fb_feed_start(d.feed), FB_OK, "its thread");
		pthread_t th[DUP_THREADS];
		for (int i = 0; i < DUP_THREADS; i++)
			pthread_create(&th[i], NULL, dup_writer, &d);
		for (int i = 0; i < DUP_THREADS; i++)
			pthread_join(th[i], NULL);
		fb_feed_stop(d.feed);
		fb_check_key k;
		fb_checker_key(c, 0, &k);
		uint64_t n = atomic_load(&d.next), dups = atomic_load(&d.dups);
		check(dups > 100, "the writers shared versions (%llu times)",
		      (unsigned long long)dups);
		check_eq(k.duplicates, dups, "every shared version counted once");
		check_eq(k.checked, n, "every version walked once");
		fb_feed_destroy(d.feed);
		fb_checker_destroy(c);
	}
}

/* A clock that moves a millisecond each time it is read: the bound below
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

typedef struct stuck_seen {
	int calls;
	uint32_t key;
	int d;
	_Atomic int abort;
} stuck_seen;

static void on_stuck(void *ctx, uint32_t key, int d)
{
	stuck_seen *s = ctx;
	s->calls++;
	s->key = key;
	s->d = d;
	atomic_store(&s->abort, 1);
}

/* A log held by a version that never comes: the bound names the key and
 * store once the walk has stood still for max_wait, and then a producer
 * waiting for room gives up at once. */
static void test_a_log_held_by_a_missing_version_is_bounded(void **state)
{
	(void)state;
	fb_checker *c; /* 2^16 keys: a ring of 4 */
	check_eq(fb_checker_create(1u << 16, 16, 100, &c), FB_OK, "checker");
	fb_checker *cs[FB_DISCIPLINES] = {[FB_WRITE_FENCED] = c};
	fb_feed *f;
	check_eq(fb_feed_create(1, 4, cs, false, &f), FB_OK, "a feed of one 4-record log");
	ticking clk = {{"ticking", tick_now}, 0};
	stuck_seen seen = {0};
	fb_feed_bound(f, &seen.abort, NULL, &clk.base, 5 * MS, on_stuck, &seen);
	fb_feed_log *log = fb_feed_log_of(f, 0);
	uint64_t stalls = 0;
	uint16_t v = 2; /* version 1 never arrives */
	int full = 0;
	while (!seen.calls && full < 100) {
		fb_check_rec *slot = fb_feed_slot(log);
		if (!slot) { /* a pass parks what the ring holds, then the log stays full */
			full++;
			fb_feed_room(log, false, &stalls);
			continue;
		}
		*slot = rec(7, v, v, 100, 100, 100);
		slot->d = FB_WRITE_FENCED;
		v++;
		fb_feed_put(log);
		fb_feed_publish(log);
	}
	check_eq(seen.calls, 1, "the bound was reached");
	check(!fb_feed_room(log, false, &stalls), "no room while version 1 is missing");
	check_eq(v, 2 + 3 + 4, "the ring took three early versions, the log four more");
	check_eq(seen.key, 7, "on the held key");
	check_eq(seen.d, FB_WRITE_FENCED, "of the held store");
	check(clk.t > 5 * MS && clk.t <= 8 * MS, "after its bound, not much later: %llu ns",
	      (unsigned long long)clk.t);
	check(!fb_feed_room(log, true, &stalls), "an abort gives a wait for room up at once");
	for (int i = 0; i < 10; i++)
		fb_feed_room(log, false, &stalls);
	check_eq(seen.calls, 1, "said once");
	fb_check_key k;
	fb_checker_key(c, 7, &k);
	check_eq(k.checked, 0, "nothing walked past the missing version");
	check_eq(k.duplicates, 0, "and a version still to come is no duplicate");
	fb_feed_destroy(f);
	fb_checker_destroy(c);
}

/* Put one record in producer i's log of f and publish it. */
static void put_one(fb_feed *f, uint32_t i, fb_check_rec r)
{
	fb_feed_log *log = fb_feed_log_of(f, i);
	fb_check_rec *slot = fb_feed_slot(log);
	check(slot, "room in log %u", i);
	*slot = r;
	fb_feed_put(log);
	fb_feed_publish(log);
}

/* A log whose held head was taken as a far-behind duplicate is empty, and
 * no longer held: a later hold of the same walk counts from its own start.
 * Counted from the first, the bound ended a run whose walk had waited a
 * moment. */
static void test_a_hold_ended_by_a_late_duplicate_leaves_no_timer(void **state)
{
	(void)state;
	fb_checker *c; /* 2^16 keys: a ring of 4, a window of 20 */
	check_eq(fb_checker_create(1u << 16, 16, 0, &c), FB_OK, "checker");
	fb_checker *cs[FB_DISCIPLINES] = {[FB_FENCED] = c};
	fb_feed *f;
	check_eq(fb_feed_create(2, 8, cs, false, &f), FB_OK, "a feed of two logs");
	ticking clk = {{"ticking", tick_now}, 0};
	stuck_seen seen = {0};
	fb_feed_bound(f, &seen.abort, NULL, &clk.base, 5 * MS, on_stuck, &seen);
	uint64_t n;
	for (uint16_t v = 1; v <= 10; v++) {
		put_one(f, 0, rec(7, v, v, 1 - v, 1 - v, -v));
		check(fb_feed_pass(f, &n), "a pass");
	}
	/* 19 ahead of the walk's 11: past the ring, and more than the 17
	 * writes that could still come (2 producers' hands, in flight) */
	put_one(f, 1, rec(7, 30, 30, 0, 0, 0));
	for (int i = 0; i < 3; i++)
		check(fb_feed_pass(f, &n), "a pass");
	fb_check_key k;
	fb_checker_key(c, 7, &k);
	check_eq(k.duplicates, 1, "held, then taken as a duplicate from far behind");
	check_eq(k.checked, 10, "the walk waits for 11");
	clk.t += 60 * MS;                       /* it waits a minute, and then: */
	put_one(f, 1, rec(7, 16, 16, 0, 0, 0)); /* 5 ahead: held, and could come */
	check(fb_feed_pass(f, &n), "a pass");
	check_eq(seen.calls, 0, "a new hold is not bounded by the last one's start");
	for (int i = 0; i < 8; i++)
		check(fb_feed_pass(f, &n), "a pass");
	check_eq(seen.calls, 1, "and its own hold is, past the bound");
	check_eq(seen.key, 7, "on its key");
	fb_feed_destroy(f);
	fb_checker_destroy(c);
}

/*
 * Thousands of producers: wide logs hold more records than the versions'
 * window (issue 27: 256 a log), so only the wait for the walk keeps a record
 * within it. A record limit or more ahead of its walk is not near, and a
 * producer that does not wait keeps it; one just below is near; once the
 * walk moves on, the far one is too.
 */
static void test_wide_logs_keep_each_record_within_the_window(void **state)
{
	(void)state;
	const uint32_t threads = 4096, producers = threads + 1;
	uint32_t in_flight = fb_checker_in_flight(threads), cap, ahead;
	check_eq(fb_feed_plan_wide(producers, in_flight, &cap, &ahead), FB_OK, "wide logs");
	check((uint64_t)cap * producers > (1u << 16),
	      "the logs alone could hold records past the window (%u a log)", cap);
	fb_checker *c;
	check_eq(fb_checker_create(1, ahead, 100, &c), FB_OK, "checker");
	fb_checker *cs[FB_DISCIPLINES] = {[FB_FENCED] = c};
	fb_feed *f;
	check_eq(fb_feed_create(producers, cap, cs, false, &f), FB_OK, "a feed of wide logs");
	fb_feed_window(f, in_flight);
	uint32_t limit = fb_checker_window(c) - in_flight;
	uint16_t next = fb_checker_next(c, 0);
	fb_check_rec near = rec(0, (uint16_t)(next + limit - 1), 5, 100, 100, 99),
	             far = rec(0, (uint16_t)(next + limit), 6, 100, 100, 99);
	fb_feed_log *log = fb_feed_log_of(f, 0);
	uint64_t stalls = 0;
	check(fb_feed_near_now(log, &near), "a record just inside the window may be put");
	check(!fb_feed_near_now(log, &far), "one at the limit may not");
	check(!fb_feed_near_wait(log, &far, false, &stalls), "nor without a wait");
	put_one(f, 1, rec(0, next, 1, 100, 100, 99)); /* the walk's next version */
	uint64_t n = 0;
	check(fb_feed_pass(f, &n) && n == 1, "a pass walks it (%llu)", (unsigned long long)n);
	check(fb_feed_near_now(log, &far), "the walk moved on: now it may");
	fb_feed_stop(f);
	fb_feed_destroy(f);
	fb_checker_destroy(c);
}

/*
 * Hundreds of producers: a pass visits only the logs with news (published
 * since the last look, or a head held by its walk), found through their
 * groups of 64. One pass takes what every log published, and a log whose
 * head was held is looked at again by the pass that moves its walk, its
 * producer having published nothing since.
 */
static void test_a_pass_over_many_logs_visits_each_with_news(void **state)
{
	(void)state;
	enum { LOGS = 300 };
	fb_checker *c; /* 2^16 keys: a ring of 4 */
	check_eq(fb_checker_create(1u << 16, 16, 100, &c), FB_OK, "checker");
	fb_checker *cs[FB_DISCIPLINES] = {[FB_FENCED] = c};
	fb_feed *f;
	check_eq(fb_feed_create(LOGS, 16, cs, false, &f), FB_OK, "300 logs");
	for (uint32_t i = 0; i < LOGS; i++) /* key i's first version, in log i */
		put_one(f, i, rec(100 + i, 1, 1, 100, 100, 100));
	uint64_t n = 0;
	check(fb_feed_pass(f, &n), "a pass");
	check_eq(n, LOGS, "one pass took every log's record");
	/* key 7: versions 2..10 in the last log; too far ahead for the ring */
	for (uint16_t v = 2; v <= 10; v++)
		put_one(f, LOGS - 1, rec(7, v, v, 100, 100, 100));
	check(fb_feed_pass(f, &n), "a pass");
	fb_check_key k;
	fb_checker_key(c, 7, &k);
	check_eq(k.checked, 0, "nothing walked before version 1");
	check(n < 9, "the last log's head is held (%llu taken)", (unsigned long long)n);
	put_one(f, 5, rec(7, 1, 1, 100, 100, 100)); /* another group's log */
	check(fb_feed_pass(f, &n), "a pass");
	fb_checker_key(c, 7, &k);
	check_eq(k.checked, 10, "the one pass that brought version 1 walked the held log too");
	fb_feed_destroy(f);
	fb_checker_destroy(c);
}

/* The consumer's capacity (fencebench floor): a correct store's records
 * from many logs, every one walked, at some rate. */
static void test_the_consumer_alone_walks_every_record_it_is_fed(void **state)
{
	(void)state;
	double rate = 0;
	uint64_t unwalked = 1;
	check_eq(fb_feed_capacity(65, 16, 2 * MS, &rate, &unwalked), FB_OK, "measured");
	check_eq(unwalked, 0, "every record put was walked");
	check(rate > 0, "a rate: %f", rate);
	check_eq(fb_feed_capacity(65, 0, MS, &rate, &unwalked), FB_EINVAL, "no keys: refused");
}

/*
 * The run's end, said (the stop flag) or only due (its time passed while
 * the producers that would say it waited): a producer whose log is full
 * waits no more, not once; what it has no room for spills, and the last
 * pass walks it after the log. Nothing is dropped, nothing waits.
 */
static void test_a_full_log_spills_at_the_runs_end_said_or_due(void **state)
{
	(void)state;
	for (int said = 0; said < 2; said++) {
		const char *how = said ? "said" : "due";
		fb_checker *c; /* 2^16 keys: a ring of 4 */
		check_eq(fb_checker_create(1u << 16, 16, 100, &c), FB_OK, "checker");
		fb_checker *cs[FB_DISCIPLINES] = {[FB_FENCED] = c};
		fb_feed *f;
		check_eq(fb_feed_create(2, 4, cs, false, &f), FB_OK, "two 4-record logs");
		fb_clock_manual clk;
		fb_clock_manual_init(&clk, 1000 * MS);
		_Atomic int abort, stop;
		_Atomic uint64_t end;
		atomic_init(&abort, 0);
		atomic_init(&stop, 0);
		atomic_init(&end, UINT64_MAX);
		fb_feed_bound(f, &abort, &stop, &clk.base, UINT64_C(60000) * MS, NULL, NULL);
		fb_feed_end(f, &end);
		fb_feed_log *log = fb_feed_log_of(f, 0), *late = fb_feed_log_of(f, 1);
		uint64_t stalls = 0;
		uint16_t v = 2; /* version 1 comes last, from the other producer */
		for (;;) {
			fb_check_rec *slot = fb_feed_slot(log);
			if (!slot) {
				if (!fb_feed_room(log, false, &stalls))
					break;
				continue;
			}
			*slot = rec(7, v, v, 100, 100, 100);
			v++;
			fb_feed_put(log);
			fb_feed_publish(log);
		}
		check(v == 2 + 3 + 4, "%s: the ring took three early versions, the log four more",
		      how);
		if (said) {
			atomic_store(&stop, 1);
		} else {
			atomic_store(&end, 1500 * MS);
			fb_clock_manual_set(&clk, 2000 * MS);
		}
		for (int i = 0; i < 100; i++) {
			check(!fb_feed_room(log, true, &stalls), "%s: no room, and no wait for it",
			      how);
			fb_check_rec *kept = fb_feed_spill(log);
			check(kept != NULL, "%s: the spill takes record %d", how, i);
			*kept = rec(7, v, v, 100, 100, 100);
			v++;
		}
		check(stalls == 0, "%s: not one wait", how);
		check(fb_feed_spilling(log), "%s: its producer is told to begin no cycle", how);
		check(!fb_feed_spilling(late), "%s: a producer that never waited goes on", how);
		*fb_feed_slot(late) = rec(7, 1, 1, 100, 100, 100);
		fb_feed_put(late);
		fb_feed_publish(late);
		fb_feed_stop(f); /* every producer done: the last pass */
		fb_check_key k;
		fb_checker_key(c, 7, &k);
		check(k.checked == v - 1u, "%s: every version walked, the spilled ones too", how);
		check(k.duplicates == 0, "%s: none twice", how);
		check(k.chain_breaks == 0, "%s: in order", how);
		fb_feed_destroy(f);
		fb_checker_destroy(c);
	}
}

/* The bound's rule on an injected clock: it counts from the walk's last
 * move. A chain of holders, each freeing the walk after a hold just under
 * the bound, never adds up to a give-up; a walk that stands still for
 * longer than the bound does. */
static void test_the_wait_bound_counts_from_the_walks_last_move(void **state)
{
	(void)state;
	const uint64_t bound = 500 * MS; /* one holder's longest hold */
	fb_checker_wait wt = {0};
	uint64_t now = 1000 * MS;
	uint16_t walk = 65530;
	check(!fb_checker_wait_expired(&wt, walk, now, bound), "the wait begins");
	for (int holder = 0; holder < 20; holder++) { /* 20 holders, 9.8 s in all */
		now += bound - 10 * MS;
		check(!fb_checker_wait_expired(&wt, walk, now, bound),
		      "holder %d still within its own hold", holder);
		walk++; /* it commits: the walk moves (and wraps) to the next holder */
		check(!fb_checker_wait_expired(&wt, walk, now, bound),
		      "a move restarts the count (holder %d)", holder);
	}
	check(now - 1000 * MS > 19 * bound, "the chain waited far past one bound");
	now += bound;
	check(!fb_checker_wait_expired(&wt, walk, now, bound), "exactly the bound: still waiting");
	now += 1;
	check(fb_checker_wait_expired(&wt, walk, now, bound),
	      "a walk that stood still past the bound gives up");
}

/* A producer waiting for room is woken by the pass that makes it, and its
 * record is then walked: the futex wait neither loses a wake-up nor gives
 * up early. */
typedef struct waiter {
	fb_feed_log *log;
	bool ok;
	uint64_t stalls;
} waiter;

static void *log_far_ahead(void *p)
{
	waiter *w = p;
	for (uint16_t v = 2; v <= 9 && w->ok; v++) { /* 5..9 find the ring full */
		if (!fb_feed_slot(w->log) && !fb_feed_room(w->log, true, &w->stalls))
			w->ok = false;
		else {
			int64_t b = -(int64_t)(v - 1);
			*fb_feed_slot(w->log) = rec(0, v, v, b, b, b - 1);
			fb_feed_put(w->log);
			fb_feed_publish(w->log);
		}
	}
	return NULL;
}

static void test_a_producer_waiting_for_room_is_woken_and_walked(void **state)
{
	(void)state;
	for (int round = 0; round < 20; round++) {
		fb_checker *c; /* many keys: a ring of 4 */
		check_eq(fb_checker_create(1u << 16, 16, 0, &c), FB_OK, "checker");
		fb_checker *cs[FB_DISCIPLINES] = {[FB_FENCED] = c};
		fb_feed *f;
		check_eq(fb_feed_create(2, 2, cs, false, &f), FB_OK, "two logs of 2");
		_Atomic int never = 0;
		fb_feed_bound(f, &never, NULL, fb_clock_monotonic(), UINT64_C(60000) * MS, NULL,
		              NULL);
		check_eq(fb_feed_start(f), FB_OK, "its thread");
		waiter w = {fb_feed_log_of(f, 1), true, 0};
		pthread_t th;
		pthread_create(&th, NULL, log_far_ahead, &w); /* version 1 missing */
		while (!atomic_load(&w.log->waiting))
			sched_yield(); /* until it waits on the futex (or is about to) */
		fb_feed_log *mine = fb_feed_log_of(f, 0);
		*fb_feed_slot(mine) = rec(0, 1, 1, 0, 0, -1);
		fb_feed_put(mine);
		fb_feed_publish(mine);
		pthread_join(th, NULL);
		fb_feed_stop(f);
		check(w.ok, "the waiting producer went on once there was room");
		check(w.stalls >= 1, "it waited");
		fb_check_key k;
		fb_checker_key(c, 0, &k);
		check_eq(k.checked, 9, "all nine walked");
		check_eq(k.chain_breaks + k.duplicates + k.stale_accepted, 0, "a clean history");
		fb_feed_destroy(f);
		fb_checker_destroy(c);
	}
}

/* A store nobody checks: its records pass through the feed, dropped. */
static void test_records_of_an_unchecked_store_never_hold_a_log(void **state)
{
	(void)state;
	fb_checker *cs[FB_DISCIPLINES] = {0};
	fb_feed *f;
	check_eq(fb_feed_create(1, 2, cs, false, &f), FB_OK, "feed");
	fb_feed_log *log = fb_feed_log_of(f, 0);
	uint64_t stalls = 0;
	for (int i = 0; i < 10; i++) {
		if (!fb_feed_slot(log))
			check(fb_feed_room(log, false, &stalls), "room after a pass");
		*fb_feed_slot(log) = rec(0, (uint16_t)(100 + i), 1, 0, 0, 0);
		fb_feed_put(log);
		fb_feed_publish(log);
	}
	check_eq(stalls, 0, "no wait");
	fb_feed_destroy(f);
}

/* The witness: each contradiction counted once, a clean history none. */
static void test_witness_counts_each_contradiction_once(void **state)
{
	(void)state;
	fb_witness *w;
	const uint64_t ttl = 10 * MS;
	check_eq(fb_witness_create(1, ttl, 0, &w), FB_OK, "witness creation");
	fb_witness_counts c = {0};
	fb_witness_acquired(w, 0, 1, 0, ttl, &c); /* fence 1 at 0, released */
	fb_witness_releasing(w, 0, 1);
	fb_witness_acquired(w, 0, 2, 0, 2 * MS + ttl, &c);  /* 2 at 2 ms, expires at 12 */
	fb_witness_acquired(w, 0, 3, 0, 12 * MS + ttl, &c); /* 3 at 12 ms: 2 expired */
	check(!c.duplicates && !c.inversions && !c.overlaps, "a clean history counts nothing");
	fb_witness_acquired(w, 0, 4, 0, 13 * MS + ttl, &c); /* 4 at 13 ms: 3 still live */
	check_eq(c.overlaps, 1, "fence 3's live lease overlapped by 4, once");
	fb_witness_acquired(w, 0, 4, 0, 13 * MS + ttl, &c);
	check_eq(c.duplicates, 1, "fence 4 reported twice");
	fb_witness_acquired(w, 0, 5, 0, 1 * MS + ttl, &c); /* 5 acquired at 1 ms: before 4 */
	check_eq(c.inversions, 1, "a newer fence for an older acquisition");
	check_eq(c.overlaps, 1, "... is an inversion, not also an overlap");
	fb_witness_destroy(w);
}

/* A holder releasing late, its lease long taken over: the newest lease was
 * given back before it, and the next acquire within that lease's TTL is no
 * overlap. A release that set the record back (a store, not a max) would
 * make it one: a false alarm on a correct service. */
static void test_a_late_release_of_an_older_fence_takes_nothing_back(void **state)
{
	(void)state;
	fb_witness *w;
	const uint64_t ttl = 10 * MS;
	check_eq(fb_witness_create(1, ttl, 0, &w), FB_OK, "witness creation");
	fb_witness_counts c = {0};
	fb_witness_acquired(w, 0, 1, 0, ttl, &c);           /* 1 at 0, paused past its TTL */
	fb_witness_acquired(w, 0, 2, 1, 12 * MS + ttl, &c); /* 2 at 12 ms: 1 expired */
	fb_witness_releasing(w, 0, 2);                      /* ... and given back */
	fb_witness_releasing(w, 0, 1);                      /* 1's holder, late */
	fb_witness_acquired(w, 0, 3, 2, 13 * MS + ttl, &c); /* 3 at 13 ms, within 2's TTL */
	check_eq(c.overlaps, 0, "2 was given back before 3: no overlap");
	fb_witness_acquired(w, 0, 4, 3, 14 * MS + ttl, &c); /* 4 at 14 ms: 3 live, held */
	fb_witness_releasing(w, 0, 3);                      /* 3 gives it back after */
	check_eq(c.overlaps, 1, "3 was still held when 4 came: one overlap");
	check(!c.duplicates && !c.inversions && !c.regressions, "nothing else");
	fb_witness_destroy(w);
}

/* A fence not above the one its acquire replaced is a regression, however
 * close in time the two acquires were: no timing enters the judgement. */
static void test_witness_catches_every_fence_regression_by_construction(void **state)
{
	(void)state;
	fb_witness *w;
	const uint64_t ttl = 10 * MS;
	check_eq(fb_witness_create(2, ttl, 50000, &w), FB_OK, "witness creation");
	fb_witness_counts c = {0};
	fb_witness_acquired(w, 0, 5, 4, ttl, &c);
	fb_witness_releasing(w, 0, 5);
	fb_witness_acquired(w, 0, 6, 5, ttl + 1000, &c); /* a microsecond later */
	fb_witness_releasing(w, 0, 6);
	check_eq(c.regressions, 0, "5 over 4, 6 over 5: rising");
	/* a fence minted once and reused after a lost CAS: 3 over a slot of 6,
	 * 2 ns after the acquire of 6 (no timing window could see it) */
	fb_witness_acquired(w, 0, 3, 6, ttl + 1002, &c);
	check_eq(c.regressions, 1, "3 over 6 is a regression");
	fb_witness_acquired(w, 1, 7, 7, ttl, &c);
	check_eq(c.regressions, 2, "an equal fence is one too (> not >=)");
	fb_witness_releasing(w, 1, 7);
	fb_witness_acquired(w, 1, 9, 0, ttl, &c);
	check_eq(c.regressions, 2, "replaced 0: the service could not say; nothing judged");
	fb_witness_example e;
	fb_witness_example_of(w, FB_WIT_REGRESSION, &e);
	check(e.found && e.key == 0 && e.fence == 3 && e.other == 6,
	      "the first regression is the example: key %u fence %llu over %llu", e.key,
	      (unsigned long long)e.fence, (unsigned long long)e.other);
	fb_witness_example_of(w, FB_WIT_OVERLAP, &e);
	check(!e.found, "no overlap example without an overlap");
	fb_witness_destroy(w);
}

/*
 * Issue 27, liveness on the service's evidence: a takeover refused at an
 * instant past the stated expiry plus the slack, a grant longer than the
 * TTL plus the slack; just inside the slack, nothing. No clock is read:
 * every instant is the service's own.
 */
static void test_witness_judges_liveness_on_the_services_instants(void **state)
{
	(void)state;
	fb_witness *w;
	const uint64_t ttl = 10 * MS, slack = 50000;
	check_eq(fb_witness_create(1, ttl, slack, &w), FB_OK, "witness creation");
	fb_witness_counts c = {0};
	fb_witness_refused(w, 0, 7, 20 * MS, 20 * MS + slack, &c);
	check_eq(c.held_past_ttl, 0, "refused at expiry + slack: within the slack");
	fb_witness_refused(w, 0, 7, 20 * MS, 0, &c);
	check_eq(c.held_past_ttl, 0, "no instant stated: not judged");
	fb_witness_granted(w, 0, 7, 20 * MS + slack, 10 * MS, &c);
	check_eq(c.held_past_ttl, 0, "granted for the TTL + slack: within the slack");
	fb_witness_refused(w, 0, 7, 20 * MS, 20 * MS + slack + 1, &c);
	check_eq(c.held_past_ttl, 1, "refused 1 ns past expiry + slack: held past the TTL");
	fb_witness_granted(w, 0, 8, 20 * MS + slack + 1, 10 * MS, &c);
	check_eq(c.held_past_ttl, 2, "granted 1 ns longer than TTL + slack");
	fb_witness_example e;
	fb_witness_example_of(w, FB_WIT_HELD_PAST_TTL, &e);
	check(e.found && e.fence == 7 && e.other == slack + 1,
	      "the first is the example: lease %llu, %llu ns past", (unsigned long long)e.fence,
	      (unsigned long long)e.other);
	check_eq(fb_witness_total(&c), 2, "liveness violations count in the lease's verdict");
	fb_witness_destroy(w);
}

/* A renewal that succeeded for a lease a newer acquire had replaced, or
 * sent after its expiry plus the slack, is a violation; a renewal of the
 * newest lease inside its life is not. */
static void test_witness_judges_renewals_for_non_holders_and_after_expiry(void **state)
{
	(void)state;
	fb_witness *w;
	const uint64_t ttl = 10 * MS, slack = 50000;
	check_eq(fb_witness_create(1, ttl, slack, &w), FB_OK, "witness creation");
	fb_witness_counts c = {0};
	uint64_t at;
	fb_witness_acquired(w, 0, 3, 0, ttl, &c); /* 3 acquired at 0 */
	check_eq(fb_witness_newest(w, 0, &at), 3, "the newest fence heard of");
	check_eq(at, 0, "and when it was acquired");
	fb_witness_renewed(w, 0, 3, 0, 3, 0, 9 * MS, ttl, &c);
	fb_witness_renewed(w, 0, 3, 0, 3, 0, ttl + slack, ttl, &c);
	fb_witness_renewed(w, 0, 3, 0, 3, 0, 0, ttl, &c);
	check(!c.renew_taken && !c.renew_expired,
	      "the holder's renewals, live or within the slack, or not judged, are fine");
	fb_witness_renewed(w, 0, 3, 0, 3, 0, ttl + slack + 1, ttl, &c);
	check_eq(c.renew_expired, 1, "a renewal sent 1 ns past expiry + slack succeeded");
	fb_witness_acquired(w, 0, 4, 3, 12 * MS + ttl, &c); /* 4 acquired at 12 ms */
	uint64_t f = fb_witness_newest(w, 0, &at);
	fb_witness_renewed(w, 0, 3, 0, f, at, 0, ttl, &c);
	check_eq(c.renew_taken, 1, "fence 3 renewed after fence 4 acquired: a non-holder");
	fb_witness_example e;
	fb_witness_example_of(w, FB_WIT_RENEW_TAKEN, &e);
	check(e.found && e.fence == 3 && e.other == 4, "the example names both fences");
	/* a fence minted in a second step (SET, then INCR) can be higher and
	 * older: fence 4 acquired before 5 (at 12 ms + slack) is no newer holder */
	fb_witness_renewed(w, 0, 2, 12 * MS + slack, 4, 12 * MS, 0, ttl, &c);
	fb_witness_renewed(w, 0, 2, 12 * MS - slack, 4, 12 * MS, 0, ttl, &c);
	check_eq(c.renew_taken, 1,
	         "a higher fence acquired no later (+ slack) is not a newer holder");
	fb_witness_renewed(w, 0, 2, 12 * MS - slack - 1, 4, 12 * MS, 0, ttl, &c);
	check_eq(c.renew_taken, 2, "acquired 1 ns beyond the slack later: a newer holder");
	fb_witness_destroy(w);
}

/* Where the service says which word a renewal replaced (in process), a
 * renewal over any word but its caller's own (fence and owner) renewed a
 * lease that was not its caller's: at any instant, with nothing read of
 * the witness and no timing. Late renewals are judged as before. */
static void test_witness_judges_a_renewal_by_the_word_it_replaced(void **state)
{
	(void)state;
	fb_witness *w;
	const uint64_t ttl = 10 * MS, slack = 50000;
	check_eq(fb_witness_create(1, ttl, slack, &w), FB_OK, "witness creation");
	fb_witness_counts c = {0};
	fb_witness_renewed_over(w, 0, 3, 7, 3, 7, 9 * MS, ttl, &c);
	fb_witness_renewed_over(w, 0, 3, 7, 3, 7, 0, ttl, &c);
	check(!c.renew_taken && !c.renew_expired, "its own word, live or not judged: fine");
	fb_witness_renewed_over(w, 0, 3, 7, 3, 7, ttl + slack + 1, ttl, &c);
	check(c.renew_expired == 1 && !c.renew_taken, "its own word, sent past expiry + slack");
	/* no report of the newer holder reached the witness: it is not needed */
	fb_witness_renewed_over(w, 0, 3, 7, 4, 8, 0, ttl, &c);
	check_eq(c.renew_taken, 1, "fence 3 renewed over fence 4's word");
	fb_witness_renewed_over(w, 0, 5, 7, 4, 7, 0, ttl, &c);
	check_eq(c.renew_taken, 2, "or over an older one's: not its own either");
	fb_witness_renewed_over(w, 0, 3, 7, 3, 8, 0, ttl, &c);
	check_eq(c.renew_taken, 3, "or over its fence's twin, held by another owner");
	fb_witness_renewed_over(w, 0, 3, 7, 3, 0, 0, ttl, &c);
	check_eq(c.renew_taken, 4, "or over its own word once released");
	fb_witness_example e;
	fb_witness_example_of(w, FB_WIT_RENEW_TAKEN, &e);
	check(e.found && e.fence == 3 && e.other == 4, "the example names both fences");
	fb_witness_destroy(w);
}

/*
 * Issue 27, the witness's slack: an overlap is judged against the engine's
 * own bound, exactly. In process (slack 50 us, expiry exact) any overlap at
 * all is two holders; a remote engine's bound (2 ms: Redis's millisecond
 * grid) forgives an overlap up to it and not 1 ns more. The instants are
 * injected: no clock is read.
 */
static void overlap_at(uint64_t slack, uint64_t before_end, uint64_t want, const char *what)
{
	fb_witness *w;
	const uint64_t ttl = 10 * MS;
	check_eq(fb_witness_create(1, ttl, slack, &w), FB_OK, "witness creation");
	fb_witness_counts c = {0};
	fb_witness_acquired(w, 0, 1, 0, 100 * MS + ttl, &c); /* 1: 100 ms to 110 ms */
	/* 2 acquired `before_end` before 1's end, 1 never released */
	fb_witness_acquired(w, 0, 2, 1, 110 * MS - before_end + ttl, &c);
	check(c.overlaps == want,
	      "slack %llu ns, fence 2 acquired %llu ns before fence 1's end: "
	      "%llu overlaps, expected %llu (%s)",
	      (unsigned long long)slack, (unsigned long long)before_end,
	      (unsigned long long)c.overlaps, (unsigned long long)want, what);
	fb_witness_destroy(w);
}

static void test_witness_overlap_is_judged_at_the_engines_own_bound(void **state)
{
	(void)state;
	overlap_at(50000, 0, 0, "in process: at the expiry, the lease is over");
	overlap_at(50000, 1, 1, "in process: 1 ns before the expiry is two holders");
	overlap_at(2 * MS, 2 * MS, 0, "a 2 ms bound forgives 2 ms");
	overlap_at(2 * MS, 2 * MS + 1, 1, "and not 1 ns more");
	overlap_at(10 * MS / 2, 10 * MS / 2 + 1, 1, "a bound of TTL/2 forgives no more");
}

/*
 * Issue 27, item 7: Redlock by its own bound. Its client states each lock
 * valid until t0 + TTL - drift (t0: when it sent the round; drift: 1% of
 * the TTL + 2 ms), and a node expires the key no sooner than t0 + TTL (its
 * TTL is rounded up to whole ms, and all nodes run at this host's clock
 * rate), so a correct Redlock's next holder cannot have its reply before
 * the previous lock's t0 + TTL less Redis's rounding (1 ms), which is
 * after the stated end by the drift less that. The witness judges the
 * reply against the stated end with 50 us: an overlap at 50 us + 1 ns
 * before it, none at 50 us, none where a node's clock ran a little (less
 * than the drift) ahead, and one there for a client that forgot to
 * subtract the drift (it states t0 + TTL). Injected instants only; the
 * witness is made as the run makes it for Redlock (slack 10 ms, a round).
 */
static uint64_t redlock_overlaps(uint64_t stated_end, uint64_t t0_b, uint64_t answered_b,
                                 bool released)
{
	const uint64_t ttl = 100 * MS, drift = ttl / 100 + 2 * MS;
	fb_witness *w;
	check_eq(fb_witness_create(1, ttl, 10 * MS, &w), FB_OK, "witness creation");
	fb_witness_judge_answers(w, drift);
	fb_witness_counts c = {0};
	/* A: the run gives the stated end plus the drift */
	fb_witness_acquired_answered(w, 0, 1, 0, stated_end + drift, 100 * MS + 1 * MS, &c, NULL);
	if (released)
		fb_witness_releasing(w, 0, 1);
	fb_witness_acquired_answered(w, 0, 2, 1, t0_b + ttl, answered_b, &c, NULL);
	fb_witness_destroy(w);
	return c.overlaps + c.inversions + c.duplicates + c.regressions;
}

static void test_witness_judges_redlock_on_its_drift_allowance(void **state)
{
	(void)state;
	const uint64_t us = 1000, t0_a = 100 * MS, ttl = 100 * MS, drift = 3 * MS;
	const uint64_t end = t0_a + ttl - drift; /* 197 ms: what A was told */
	/* B's round began 1 ms before its reply: the round bound (10 ms) alone
	 * would forgive all of these */
	check_eq(redlock_overlaps(end, end - 50 * us - MS, end - 50 * us, false), 0,
	         "a reply 50 us before the stated end: within the slack");
	check_eq(redlock_overlaps(end, end - 50 * us - 1 - MS, end - 50 * us - 1, false), 1,
	         "a reply 50 us + 1 ns before the stated end: two holders");
	check_eq(redlock_overlaps(end, end - 50 * us - 1 - MS, end - 50 * us - 1, true), 0,
	         "the same after A released: one holder");
	check_eq(redlock_overlaps(end, end - 50 * us - 1 - MS, 0, false), 0,
	         "no reply instant given: judged on the round's start, within 10 ms");
	/* the earliest a correct Redlock's next reply can come, Redis's 1 ms
	 * rounding included, and a node whose clock ran 1.9 ms ahead */
	uint64_t earliest = t0_a + ttl - MS, jumped = t0_a + ttl - 1900 * us;
	check_eq(redlock_overlaps(end, earliest - MS, earliest, false), 0,
	         "a correct Redlock, the next reply at A's send + TTL - 1 ms: no overlap");
	check_eq(redlock_overlaps(end, jumped - MS, jumped, false), 0,
	         "a node 1.9 ms ahead, under the drift: no overlap for a correct Redlock");
	/* a client that forgot to subtract the drift told A t0 + TTL */
	check_eq(redlock_overlaps(t0_a + ttl, jumped - MS, jumped, false), 1,
	         "the same for a Redlock that forgot the drift: two holders");
	check_eq(redlock_overlaps(t0_a + ttl, earliest - MS, earliest, false), 1,
	         "and at Redis's rounding alone");
}

/* A reporter's memo spares loads; it must never change a verdict. The same
 * random reports (three reporters, out of order, late, doubled, some never
 * released) to a witness through memos and to one without. */
static void test_a_witness_memo_never_changes_a_verdict(void **state)
{
	(void)state;
	const uint64_t ttl = 10 * MS;
	fb_witness *a, *b;
	check_eq(fb_witness_create(4, ttl, 50000, &a), FB_OK, "witness creation");
	check_eq(fb_witness_create(4, ttl, 50000, &b), FB_OK, "witness creation");
	static fb_witness_memo memo[3];
	memset(memo, 0, sizeof memo);
	fb_witness_counts ca[3] = {{0}}, cb[3] = {{0}};
	uint64_t fence[4] = {0}, held[3] = {0}, now = 0;
	uint32_t key[3] = {0};
	uint64_t x = 88172645463325252u; /* xorshift64 */
	for (int i = 0; i < 200000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		int who = (int)(x % 3);
		now += (x >> 8) % (2 * MS);
		if (held[who] && (x >> 20) % 4) { /* release, mostly */
			fb_witness_releasing(a, key[who], held[who]);
			fb_witness_releasing(b, key[who], held[who]);
			held[who] = 0;
			continue;
		}
		uint32_t k = (uint32_t)((x >> 24) % 4);
		/* mostly the next fence, sometimes a repeat or an older one */
		uint64_t f = fence[k] + 1, r = (x >> 30) % 16;
		if (r == 0 && fence[k])
			f = fence[k];
		else if (r == 1 && fence[k] > 3)
			f = fence[k] - 3;
		if (f > fence[k])
			fence[k] = f;
		uint64_t at = r == 2 && now > 5 * MS ? now - 5 * MS : now; /* a late one */
		fb_witness_acquired_memo(a, k, f, 0, at + ttl, &ca[who], &memo[who]);
		fb_witness_acquired(b, k, f, 0, at + ttl, &cb[who]);
		held[who] = f, key[who] = k;
	}
	uint64_t total = 0;
	for (int r = 0; r < 3; r++) {
		check(ca[r].duplicates == cb[r].duplicates,
		      "reporter %d: duplicates %llu through a memo, %llu without", r,
		      (unsigned long long)ca[r].duplicates, (unsigned long long)cb[r].duplicates);
		check(ca[r].inversions == cb[r].inversions,
		      "reporter %d: inversions %llu through a memo, %llu without", r,
		      (unsigned long long)ca[r].inversions, (unsigned long long)cb[r].inversions);
		check(ca[r].overlaps == cb[r].overlaps,
		      "reporter %d: overlaps %llu through a memo, %llu without", r,
		      (unsigned long long)ca[r].overlaps, (unsigned long long)cb[r].overlaps);
		total += cb[r].duplicates + cb[r].inversions + cb[r].overlaps;
	}
	check(total > 100, "the reports contradicted each other (%llu times)",
	      (unsigned long long)total);
	fb_witness_destroy(a);
	fb_witness_destroy(b);
}

/* The window's edge (judge.h, fb_judge_behind): a version exactly the
 * window ahead of the walk is behind it, a duplicate taken at once; one
 * less is a record too far ahead for the ring, handed back. */
static void test_the_windows_edge_is_behind_the_walk(void **state)
{
	(void)state;
	fb_checker *c = checker(1, 100);
	uint32_t window = fb_checker_window(c);
	check(window > 1 && window < (1u << 16), "a window within 16-bit versions: %u", window);
	check_eq(put(c, 0, (uint16_t)window, 9, 100, 100, 99), FB_CHECK_LATER,
	         "window - 1 ahead of the walk at 1: ahead, beyond the ring");
	check_eq(put(c, 0, (uint16_t)(1 + window), 9, 100, 100, 99), FB_CHECK_TAKEN,
	         "exactly the window ahead: behind the walk");
	fb_check_key k;
	fb_checker_key(c, 0, &k);
	check_eq(k.duplicates, 1, "a duplicate");
	check_eq(k.checked, 0, "nothing walked");
	fb_checker_destroy(c);
}

/* A record held back far ahead of a walk that stands still (judge.h,
 * fb_judge_cannot_come): behind the walk only when the versions between
 * cannot all come from elsewhere, and not when exactly enough can. */
static void test_a_far_record_is_behind_only_when_the_gap_cannot_fill(void **state)
{
	(void)state;
	fb_checker *c;
	check_eq(fb_checker_create(1u << 14, 30000, 0, &c), FB_OK, "a checker with rings of 4");
	fb_check_rec r = rec(0, 1 + 100, 7, 0, 0, -1); /* 100 ahead of the walk at 1 */
	check_eq(fb_checker_place(c, &r), FB_CHECK_LATER, "beyond the ring: handed back");
	check(!fb_checker_take_behind(c, &r, 99),
	      "versions 1..100, 99 of them elsewhere besides the one the walk waits for: "
	      "it may be ahead");
	check(fb_checker_take_behind(c, &r, 98), "one fewer elsewhere: it cannot be ahead");
	fb_check_key k;
	fb_checker_key(c, 0, &k);
	check_eq(k.duplicates, 1, "counted once, as a duplicate");
	fb_checker_destroy(c);
}

/* A store that numbers its own writes (gapped versions): a version the
 * ordered walk took already, equal included, was committed twice
 * (fb_judge_version); gaps are the store's and legal. */
static void test_an_ordered_walk_counts_an_equal_version_as_a_duplicate(void **state)
{
	(void)state;
	_Atomic uint64_t calls[1];
	atomic_init(&calls[0], 0);
	fb_checker *c;
	check_eq(fb_checker_create_ordered(1, 100, calls, &c), FB_OK, "an ordered checker");
	fb_check_rec r[] = {rec(0, 0, 1, 100, 100, 99), rec(0, 0, 2, 99, 99, 98),
	                    rec(0, 0, 3, 98, 98, 97), rec(0, 0, 4, 97, 97, 96)};
	uint64_t versions[] = {1000, 3000, 3000, 4000};
	for (int i = 0; i < 4; i++) {
		r[i].version = versions[i];
		check_eq(fb_checker_place(c, &r[i]), FB_CHECK_TAKEN, "staged");
	}
	check_eq(fb_checker_settle(c, true), 4, "all walked at the end");
	fb_check_key k;
	fb_checker_key(c, 0, &k);
	check_eq(k.duplicates, 1, "version 3000 twice: one duplicate");
	check_eq(k.checked, 3, "1000, 3000, 4000 walked: a gap is no duplicate");
	check_eq(k.stale_accepted, 0, "fences rising");
	fb_checker_destroy(c);
}

/* A write computed from a balance below the one it replaced (the balance
 * was raised under it, as a stale write can) erased a negative amount:
 * the history's sum counts it against the debits lost (fb_judge_erased). */
static void test_a_write_below_what_it_replaced_counts_against_the_lost(void **state)
{
	(void)state;
	fb_checker *c = checker(1, 100);
	put(c, 0, 1, 1, 100, 100, 99);
	put(c, 0, 2, 2, 97, 99, 96); /* read 97 (a newer, lower balance), replaced 99 */
	fb_check_key k;
	fb_checker_key(c, 0, &k);
	check_eq(k.lost_amount, -2, "97 - 99: two against the lost");
	uint64_t stale;
	int64_t lost;
	fb_checker_so_far(c, &stale, &lost);
	check_eq(lost, -2, "... and the live sum says so");
	fb_checker_destroy(c);
}

/* An inversion is judged at the clocks' slack exactly, both ways a report
 * can come (fb_judge_inversion): the newer fence's acquisition before the
 * older one's by the slack is the clock's, by 1 ns more the trap. */
static void test_witness_inversion_is_judged_at_the_slack_exactly(void **state)
{
	(void)state;
	const uint64_t ttl = 10 * MS, slack = 50000;
	for (int late = 0; late < 2; late++) {
		for (uint64_t beyond = 0; beyond < 2; beyond++) {
			fb_witness *w;
			check_eq(fb_witness_create(1, ttl, slack, &w), FB_OK, "witness creation");
			fb_witness_counts c = {0};
			uint64_t older = 20 * MS, newer = older - slack - beyond;
			/* fence 1 acquired at `older`, fence 2 at `newer`, released at
			 * once: reported in fence order, or the older fence late */
			uint64_t f[2] = {1, 2}, at[2] = {older, newer};
			for (int i = 0; i < 2; i++) {
				int j = late ? 1 - i : i;
				fb_witness_acquired(w, 0, f[j], 0, at[j] + ttl, &c);
				fb_witness_releasing(w, 0, f[j]);
			}
			check(c.inversions == beyond,
			      "%s report, %llu ns beyond the slack: %llu inversions",
			      late ? "a late" : "an in-order", (unsigned long long)beyond,
			      (unsigned long long)c.inversions);
			check_eq(c.overlaps, 0, "released: no overlap");
			fb_witness_destroy(w);
		}
	}
}

/* Closing one key's books (judge.c, fb_judge_close_key): each difference
 * between the history and the store is named first when it is the only
 * one. A write that took 2 where the run debits 1, leaving 98, and a store
 * that holds 99: its ledger balances, its last balance does not. A store
 * that holds 100 after one write of 99: the ledger lost 1, the history 0. */
static void test_each_difference_in_a_keys_books_is_named(void **state)
{
	(void)state;
	static const struct {
		int64_t written, final_balance;
		const char *says;
	} cases[] = {
	        {98, 99, "key 0: the history ends at balance 98, the store holds 99"},
	        {99, 100, "key 0: the ledger lost 1, the history 0"},
	        {99, 97, "key 0: the store holds 2 less than its accepted writes can leave"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		fb_checker *c = checker(1, 100);
		put(c, 0, 1, 1, 100, 100, cases[i].written);
		int64_t bal[1] = {cases[i].final_balance};
		uint64_t last[1] = {1};
		fb_check_verdict v;
		fb_checker_verdict(c, true, bal, last, 100, 1, 1, 0, &v, NULL, NULL);
		check(!v.agrees && strstr(v.disagreement, cases[i].says),
		      "case %zu: '%s' first, got: %s", i, cases[i].says,
		      v.agrees ? "agrees" : v.disagreement);
		fb_checker_destroy(c);
	}
	fb_checker *c = checker(1, 100);
	put(c, 0, 1, 1, 100, 100, 99);
	int64_t bal[1] = {99};
	uint64_t last[1] = {2};
	fb_check_verdict v;
	fb_checker_verdict(c, true, bal, last, 100, 1, 1, 0, &v, NULL, NULL);
	check(!v.agrees && strstr(v.disagreement,
	                          "key 0: the history's highest fence is 1, the store's last "
	                          "accepted 2"),
	      "a fenced store's last fence: %s", v.agrees ? "agrees" : v.disagreement);
	fb_checker_verdict(c, false, bal, last, 100, 1, 1, 0, &v, NULL, NULL);
	check(v.agrees, "... which the unfenced store's books do not hold");
	fb_checker_destroy(c);
	/* the other way: the history saw a fence the store says it never took */
	c = checker(1, 100);
	put(c, 0, 1, 2, 100, 100, 99);
	last[0] = 1;
	fb_checker_verdict(c, true, bal, last, 100, 1, 1, 0, &v, NULL, NULL);
	check(!v.agrees && strstr(v.disagreement,
	                          "key 0: the history's highest fence is 2, the store's last "
	                          "accepted 1"),
	      "a fenced store's last fence below the history's: %s",
	      v.agrees ? "agrees" : v.disagreement);
	fb_checker_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_stale_write_and_lost_update_are_counted),
	        cmocka_unit_test(test_equal_fence_is_stale),
	        cmocka_unit_test(test_fences_above_2_32_are_compared_whole),
	        cmocka_unit_test(test_walk_waits_for_an_unpublished_version),
	        cmocka_unit_test(test_a_history_out_of_step_with_the_store_is_a_chain_break),
	        cmocka_unit_test(test_a_record_beyond_the_ring_is_handed_back),
	        cmocka_unit_test(test_too_many_writers_for_16_bit_versions_is_refused),
	        cmocka_unit_test(test_a_shared_version_is_a_duplicate_not_a_wait),
	        cmocka_unit_test(test_the_windows_edge_is_behind_the_walk),
	        cmocka_unit_test(test_a_far_record_is_behind_only_when_the_gap_cannot_fill),
	        cmocka_unit_test(test_an_ordered_walk_counts_an_equal_version_as_a_duplicate),
	        cmocka_unit_test(test_a_write_below_what_it_replaced_counts_against_the_lost),
	        cmocka_unit_test(test_each_difference_in_a_keys_books_is_named),
	        cmocka_unit_test(test_a_parked_record_is_walked_once_across_a_version_wrap),
	        cmocka_unit_test(test_a_watched_stale_write_keeps_the_newer_write),
	        cmocka_unit_test(test_logs_merged_out_of_order_walk_each_record_once),
	        cmocka_unit_test(test_a_pass_merges_logs_in_the_order_they_were_written),
	        cmocka_unit_test(test_a_duplicate_from_far_behind_is_counted_not_waited_for),
	        cmocka_unit_test(test_a_far_behind_duplicate_ahead_of_its_own_log_is_counted),
	        cmocka_unit_test(test_threads_sharing_versions_count_every_duplicate_once),
	        cmocka_unit_test(test_a_log_held_by_a_missing_version_is_bounded),
	        cmocka_unit_test(test_a_hold_ended_by_a_late_duplicate_leaves_no_timer),
	        cmocka_unit_test(test_wide_logs_keep_each_record_within_the_window),
	        cmocka_unit_test(test_a_full_log_spills_at_the_runs_end_said_or_due),
	        cmocka_unit_test(test_a_pass_over_many_logs_visits_each_with_news),
	        cmocka_unit_test(test_the_consumer_alone_walks_every_record_it_is_fed),
	        cmocka_unit_test(test_the_wait_bound_counts_from_the_walks_last_move),
	        cmocka_unit_test(test_a_producer_waiting_for_room_is_woken_and_walked),
	        cmocka_unit_test(test_records_of_an_unchecked_store_never_hold_a_log),
	        cmocka_unit_test(test_witness_counts_each_contradiction_once),
	        cmocka_unit_test(test_a_late_release_of_an_older_fence_takes_nothing_back),
	        cmocka_unit_test(test_a_witness_memo_never_changes_a_verdict),
	        cmocka_unit_test(test_witness_inversion_is_judged_at_the_slack_exactly),
	        cmocka_unit_test(test_witness_catches_every_fence_regression_by_construction),
	        cmocka_unit_test(test_witness_judges_liveness_on_the_services_instants),
	        cmocka_unit_test(test_witness_overlap_is_judged_at_the_engines_own_bound),
	        cmocka_unit_test(test_witness_judges_redlock_on_its_drift_allowance),
	        cmocka_unit_test(test_witness_judges_renewals_for_non_holders_and_after_expiry),
	        cmocka_unit_test(test_witness_judges_a_renewal_by_the_word_it_replaced),
	};
	return cmocka_run_group_tests_name("checker", tests, NULL, NULL);
}
