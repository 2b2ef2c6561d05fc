/*
 * The six contracts of the fencing-token article, with its numbers: first
 * fence 33, TTL 30ms, B acquires at t=31ms with 34, balance 100 debited by
 * 10. Then the step the article leaves out: a read-modify-write needs its
 * read fenced too. Every test runs on the manual clock; none sleeps.
 */
#include "clock.h"
#include "fbtest.h"
#include "lease.h"
#include "store.h"

enum { A = 1, B = 2, ACCT = 0 };

typedef struct world {
	fb_clock_manual clock;
	fb_lease_table *lock;
	fb_store *store[FB_DISCIPLINES];
} world;

static int setup(void **state)
{
	world *w = calloc(1, sizeof *w);
	fb_clock_manual_init(&w->clock, 0);
	fb_lease_config cfg = {.keys = 1,
	                       .ttl_ns = 30 * MS,
	                       .source = FB_FENCE_GLOBAL,
	                       .first_fence = 33,
	                       .clock = &w->clock.base};
	if (fb_lease_table_create(&cfg, &w->lock) != FB_OK)
		return -1;
	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (fb_store_create((fb_discipline)d, 1, 100, &w->store[d]) != FB_OK)
			return -1;
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	world *w = *state;
	fb_lease_table_destroy(w->lock);
	for (int d = 0; d < FB_DISCIPLINES; d++)
		fb_store_destroy(w->store[d]);
	free(w);
	return 0;
}

static fb_lease take(world *w, uint16_t owner, fb_acquire want, const char *what)
{
	fb_lease l;
	fb_lease_stats st = {0};
	fb_acquire got = fb_lease_acquire(w->lock, ACCT, owner, &l, &st);
	check_eq(got, want, what);
	return l;
}

static void test_contract_1_live_lease_excludes_second_client(void **state)
{
	world *w = *state;
	fb_lease a = take(w, A, FB_ACQUIRED, "A's acquire of a free key (1 = held, 0 = acquired)");
	check_eq(a.fence, 33, "A's fence: the article's first fence");
	fb_lease b = take(w, B, FB_HELD, "B's acquire while A's lease is live must fail (NX)");
	check_eq(b.owner, A, "a refused acquire must name the live holder");
	check_eq(b.fence, 33, "... and its fence");
	check(fb_lease_is_held(w->lock, ACCT, A), "A must hold the lease at t=0");
	check(!fb_lease_is_held(w->lock, ACCT, B), "B must not hold the lease it was refused");
}

static void test_contract_2_ttl_expiry_gives_liveness_and_next_fence(void **state)
{
	world *w = *state;
	take(w, A, FB_ACQUIRED, "A acquires at t=0");
	fb_clock_manual_set(&w->clock, 30 * MS);
	check(!fb_lease_is_held(w->lock, ACCT, A), "at t=30ms (== expires_at) A's lease is over");
	fb_clock_manual_set(&w->clock, 31 * MS);
	check(!fb_lease_is_held(w->lock, ACCT, A), "after 31ms A must no longer be the holder");
	fb_lease b = take(w, B, FB_ACQUIRED, "B acquires the expired lease at t=31ms");
	check_eq(b.fence, 34, "B's fence must be 34, strictly greater than A's 33");
	check_eq(b.expires_at, 61 * MS, "B's lease runs to t=31ms + TTL");
}

static void test_contract_3_unfenced_store_accepts_stale_debit(void **state)
{
	world *w = *state;
	fb_store *s = w->store[FB_UNFENCED];
	fb_store_result r;
	check(fb_store_debit(s, ACCT, 10, 34, &r), "unfenced: B's debit with 34 is accepted");
	check(fb_store_debit(s, ACCT, 10, 33, &r),
	      "unfenced: A's late debit with 33 is accepted too: that is the bug");
	check(r.stale, "the store itself knows 33 <= 34 was stale, even though it accepted it");
	check_eq(fb_store_balance(s, ACCT), 80, "unfenced balance after both debits");
	check_eq(fb_store_last_fence(s, ACCT), 33, "unfenced: the last write carried token 33");
}

static void test_contract_4_fenced_store_rejects_stale_debit(void **state)
{
	world *w = *state;
	fb_lease a = take(w, A, FB_ACQUIRED, "A acquires at t=0");
	fb_clock_manual_set(&w->clock, 31 * MS);
	fb_lease b = take(w, B, FB_ACQUIRED, "B acquires at t=31ms");
	fb_discipline fenced[] = {FB_WRITE_FENCED, FB_FENCED};
	for (int i = 0; i < 2; i++) {
		fb_store *s = w->store[fenced[i]];
		const char *n = fb_discipline_name(fenced[i]);
		fb_store_result r;
		check(fb_store_debit(s, ACCT, 10, b.fence, &r), "%s: B's debit with 34 is accepted",
		      n);
		check(!fb_store_debit(s, ACCT, 10, a.fence, &r),
		      "%s: A's debit with 33 must be stale", n);
		check(r.stale, "%s: the refusal must say stale", n);
		check_eq(r.highest, 34, "the refusal reports the fence it compared against");
		check_eq(fb_store_balance(s, ACCT), 90, "fenced balance: only B's debit applied");
		check_eq(fb_store_last_fence(s, ACCT), 34, "fenced last fence");
	}
}

static void test_contract_5_equal_token_is_stale(void **state)
{
	world *w = *state;
	fb_discipline fenced[] = {FB_WRITE_FENCED, FB_FENCED};
	for (int i = 0; i < 2; i++) {
		fb_store *s = w->store[fenced[i]];
		const char *n = fb_discipline_name(fenced[i]);
		fb_store_result r;
		check(fb_store_debit(s, ACCT, 5, 40, &r), "%s: first debit with 40 accepted", n);
		check(!fb_store_debit(s, ACCT, 5, 40, &r),
		      "%s: a second debit with the same token 40 must be stale (> not >=)", n);
		check_eq(fb_store_balance(s, ACCT), 95, "only one of the two debits applied");
	}
}

static void test_contract_6_is_held_check_before_write_is_theater(void **state)
{
	world *w = *state;
	fb_lease a = take(w, A, FB_ACQUIRED, "A acquires at t=0");
	check(fb_lease_is_held(w->lock, ACCT, A), "A's check at t=0 says it holds the lease");
	/* A pauses between its check and its write. */
	fb_clock_manual_set(&w->clock, 31 * MS);
	fb_lease b = take(w, B, FB_ACQUIRED, "B acquires at t=31ms");
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		fb_store *s = w->store[d];
		fb_store_result r;
		check(fb_store_debit(s, ACCT, 10, b.fence, &r), "%s: B writes",
		      fb_discipline_name((fb_discipline)d));
		bool late = fb_store_debit(s, ACCT, 10, a.fence, &r);
		if (d == FB_UNFENCED)
			check(late, "unfenced: A's write after a passed is_held() check lands");
		else
			check(!late, "%s: A's write is refused although is_held() said yes",
			      fb_discipline_name((fb_discipline)d));
	}
	check_eq(fb_store_last_fence(w->store[FB_FENCED], ACCT), 34, "only B's token survives");
	check_eq(fb_store_balance(w->store[FB_FENCED], ACCT), 90, "fenced balance");
	check_eq(fb_store_balance(w->store[FB_UNFENCED], ACCT), 80, "unfenced balance");
}

/*
 * A (33) reads 100; the lease expires; B (34) reads 100; A writes 99;
 * B writes 99. write-fenced accepts both (33 > 0, then 34 > 33): nothing
 * went backwards, yet one debit is lost. fenced refuses A's write because
 * B's read registered 34.
 */
static void test_read_modify_write_needs_fenced_reads(void **state)
{
	world *w = *state;
	fb_lease a = take(w, A, FB_ACQUIRED, "A acquires at t=0");
	int64_t a_read[FB_DISCIPLINES], b_read[FB_DISCIPLINES];
	fb_store_result r;
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		check(fb_store_read(w->store[d], ACCT, a.fence, &r), "A's read under a live lease");
		a_read[d] = r.balance;
	}
	fb_clock_manual_set(&w->clock, 31 * MS);
	fb_lease b = take(w, B, FB_ACQUIRED, "B acquires at t=31ms");
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		check(fb_store_read(w->store[d], ACCT, b.fence, &r), "B's read");
		b_read[d] = r.balance;
		check_eq(b_read[d], 100, "B reads 100: A has not written yet");
	}
	bool a_ok[FB_DISCIPLINES], b_ok[FB_DISCIPLINES];
	for (int d = 0; d < FB_DISCIPLINES; d++)
		a_ok[d] = fb_store_write(w->store[d], ACCT, a_read[d] - 1, a.fence, &r);
	for (int d = 0; d < FB_DISCIPLINES; d++)
		b_ok[d] = fb_store_write(w->store[d], ACCT, b_read[d] - 1, b.fence, &r);

	check(a_ok[FB_WRITE_FENCED] && b_ok[FB_WRITE_FENCED],
	      "write-fenced accepts A (33 > 0) then B (34 > 33)");
	check_eq(fb_store_balance(w->store[FB_WRITE_FENCED], ACCT), 99,
	         "write-fenced: two accepted debits of 1 left 99: one update lost");
	check(a_ok[FB_UNFENCED] && b_ok[FB_UNFENCED], "unfenced accepts both");
	check_eq(fb_store_balance(w->store[FB_UNFENCED], ACCT), 99, "unfenced loses one too");
	check(!a_ok[FB_FENCED], "fenced must refuse A's write: B's read registered 34 > 33");
	check(b_ok[FB_FENCED], "fenced accepts B's write with 34");
	check_eq(fb_store_balance(w->store[FB_FENCED], ACCT), 99,
	         "fenced: one accepted debit of 1, none lost");
	check(!fb_store_read(w->store[FB_FENCED], ACCT, a.fence, &r),
	      "fenced: A's later read with 33 is refused as well");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test_setup_teardown(test_contract_1_live_lease_excludes_second_client,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(
	                test_contract_2_ttl_expiry_gives_liveness_and_next_fence, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_contract_3_unfenced_store_accepts_stale_debit,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_contract_4_fenced_store_rejects_stale_debit,
	                                        setup, teardown),
	        cmocka_unit_test_setup_teardown(test_contract_5_equal_token_is_stale, setup,
	                                        teardown),
	        cmocka_unit_test_setup_teardown(
	                test_contract_6_is_held_check_before_write_is_theater, setup, teardown),
	        cmocka_unit_test_setup_teardown(test_read_modify_write_needs_fenced_reads, setup,
	                                        teardown),
	};
	return cmocka_run_group_tests_name("contracts", tests, NULL, NULL);
}
