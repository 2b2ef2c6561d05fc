/*
 * The offline checker (bench/verify/history.c) on hand-built row streams, and
 * `fencebench check` (bench/tools/check.c) on a fake store engine that serves a
 * hand-built history, then on the command line: usage errors exit 2 with
 * one line, an unreachable server exits 3 with the URL redacted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fbproc.h"
#include "fbtest.h"
#include "history.h"
#include "options.h"

#define BIT(d) (1u << (d))
#define ROW(D, K, V, F, B, A, S, C)                                                                \
	((fb_history_row){.d = (D),                                                                \
	                  .key = (K),                                                              \
	                  .version = (V),                                                          \
	                  .fence = (F),                                                            \
	                  .before = (B),                                                           \
	                  .after = (A),                                                            \
	                  .store_stale = (S),                                                      \
	                  .client = (C)})
#define N(a) (sizeof(a) / sizeof((a)[0]))

static fb_store_meta meta(uint32_t modes, uint32_t keys)
{
	return (fb_store_meta){
	        .initial_balance = 100, .amount = 1, .keys = keys, .op = FB_OP_RMW, .modes = modes};
}

static fb_history *history(uint32_t modes, uint32_t keys, const fb_history_row *rows, size_t n)
{
	fb_store_meta m = meta(modes, keys);
	fb_history *h = NULL;
	check_eq(fb_history_create(&m, &h), FB_OK, "checker creation");
	for (size_t i = 0; i < n; i++)
		check_eq(fb_history_feed(h, &rows[i]), FB_OK, "feeding a row");
	return h;
}

static void check_has(const char *text, const char *needle, const char *what)
{
	check(text && strstr(text, needle), "%s: expected \"%s\" in:\n%s", what, needle,
	      text ? text : "(null)");
}

static void check_lacks(const char *text, const char *needle, const char *what)
{
	check(text && !strstr(text, needle), "%s: did not expect \"%s\" in:\n%s", what, needle,
	      text ? text : "(null)");
}

/* ---- the offline checker ---- */

static void test_a_clean_fenced_history_is_safe(void **state)
{
	(void)state;
	const fb_history_row rows[] = {
	        ROW(FB_FENCED, 0, 1, 1, 100, 99, false, 1),
	        ROW(FB_FENCED, 0, 2, 3, 99, 98, false, 2),
	        ROW(FB_FENCED, 0, 3, 4, 98, 97, false, 1),
	        ROW(FB_FENCED, 1, 1, 2, 100, 99, false, 2),
	};
	fb_history *h = history(BIT(FB_FENCED), 2, rows, N(rows));
	const int64_t bal[] = {97, 99};
	const uint64_t last[] = {4, 2};
	fb_history_verdict v;
	fb_history_finish(h, FB_FENCED, bal, last, &v, NULL, NULL);
	check_eq(v.rows, 4, "rows walked");
	check_eq(v.stale_accepted, 0, "fences 1 3 4 and 2 only go up per key");
	check_eq(v.store_stale, 0, "the store flagged none");
	check_eq(v.version_gaps, 0, "versions 1..3 and 1");
	check_eq(v.chain_breaks, 0, "every write replaced what the previous one left");
	check_eq(v.lost_history, 0, "nothing lost, write by write");
	check_eq(v.lost_updates, 0, "nothing lost by the ledger");
	check_eq(v.keys_written, 2, "both keys written");
	check_eq(v.max_fence, 4, "highest fence");
	check_eq(v.clients, 2, "clients 1 and 2");
	check(v.agrees && v.stale_agrees, "a clean history agrees: %s", v.disagreement);
	check(!fb_history_failed(FB_FENCED, &v), "a clean fenced history does not fail");
	check(!strcmp(fb_history_outcome(FB_FENCED, &v), "safe"), "verdict %s",
	      fb_history_outcome(FB_FENCED, &v));
	fb_history_destroy(h);
}

static void test_a_stale_row_is_counted_with_the_debits_it_erased(void **state)
{
	(void)state;
	/* B (5) reads 100, writes 99; A (3) read 100 before its pause and
	 * writes 99 over B's 99: stale, and B's debit is gone */
	const fb_history_row rows[] = {
	        ROW(FB_UNFENCED, 0, 1, 5, 100, 99, false, 2),
	        ROW(FB_UNFENCED, 0, 2, 3, 99, 99, true, 1),
	};
	fb_history *h = history(BIT(FB_UNFENCED), 1, rows, N(rows));
	const int64_t bal[] = {99};
	const uint64_t last[] = {3}; /* unfenced: the last fence written, not compared */
	fb_history_verdict v;
	fb_history_finish(h, FB_UNFENCED, bal, last, &v, NULL, NULL);
	check_eq(v.stale_accepted, 1, "3 after 5 is a stale write accepted");
	check_eq(v.store_stale, 1, "the store flagged it too");
	check_eq(v.lost_history, 1, "A wrote 99 from 100 over 99: one debit erased");
	check_eq(v.lost_updates, 1, "the ledger: 99 is one above 100 - 2");
	check(v.agrees && v.stale_agrees, "the store and the checker agree: %s", v.disagreement);
	check(!fb_history_failed(FB_UNFENCED, &v),
	      "unfenced corruption is the lesson, not a failure");
	check(!strcmp(fb_history_outcome(FB_UNFENCED, &v), "corrupted"), "verdict %s",
	      fb_history_outcome(FB_UNFENCED, &v));
	fb_history_destroy(h);
}

static void test_an_equal_fence_is_stale(void **state)
{
	(void)state;
	const fb_history_row rows[] = {
	        ROW(FB_WRITE_FENCED, 0, 1, 7, 100, 99, false, 1),
	        ROW(FB_WRITE_FENCED, 0, 2, 7, 99, 98, true, 1),
	};
	fb_history *h = history(BIT(FB_WRITE_FENCED), 1, rows, N(rows));
	const int64_t bal[] = {98};
	const uint64_t last[] = {7};
	fb_history_verdict v;
	fb_history_finish(h, FB_WRITE_FENCED, bal, last, &v, NULL, NULL);
	check_eq(v.stale_accepted, 1, "a second write with fence 7 is stale (> not >=)");
	check_eq(v.lost_updates, 0, "it read what it replaced: nothing lost");
	check(fb_history_failed(FB_WRITE_FENCED, &v),
	      "write-fenced accepting a stale write fails the check");
	check(!strcmp(fb_history_outcome(FB_WRITE_FENCED, &v), "violated"), "verdict %s",
	      fb_history_outcome(FB_WRITE_FENCED, &v));
	fb_history_destroy(h);
}

static void test_a_missing_version_is_a_write_the_history_lost(void **state)
{
	(void)state;
	/* version 3 (98 -> 97) is not in the history */
	const fb_history_row rows[] = {
	        ROW(FB_FENCED, 0, 1, 1, 100, 99, false, 1),
	        ROW(FB_FENCED, 0, 2, 2, 99, 98, false, 1),
	        ROW(FB_FENCED, 0, 4, 4, 97, 96, false, 1),
	};
	fb_history *h = history(BIT(FB_FENCED), 1, rows, N(rows));
	const int64_t bal[] = {96};
	const uint64_t last[] = {4};
	fb_history_verdict v;
	fb_history_finish(h, FB_FENCED, bal, last, &v, NULL, NULL);
	check_eq(v.version_gaps, 1, "one version missing");
	check_eq(v.out_of_order, 0, "nothing went backwards");
	check_eq(v.chain_breaks, 1, "version 4 replaced 97, which no row left");
	check(!v.agrees, "a history with a hole disagrees with the store");
	check_has(v.disagreement, "version 4 follows version 2: the history lost 1 writes",
	          "the first disagreement names the gap");
	check(fb_history_failed(FB_FENCED, &v), "a gap fails the fenced discipline");
	fb_history_destroy(h);
}

static void test_a_version_recorded_twice_is_out_of_order(void **state)
{
	(void)state;
	const fb_history_row rows[] = {
	        ROW(FB_FENCED, 0, 1, 1, 100, 99, false, 1),
	        ROW(FB_FENCED, 0, 1, 2, 99, 98, false, 1),
	};
	fb_history *h = history(BIT(FB_FENCED), 1, rows, N(rows));
	fb_history_verdict v;
	fb_history_verdict_of(h, FB_FENCED, &v);
	check_eq(v.out_of_order, 1, "version 1 after version 1");
	check_eq(v.version_gaps, 0, "not a gap");
	check_has(v.disagreement, "out of order or recorded twice", "the disagreement says so");
	fb_history_destroy(h);
	/* rows 2 and 3 again after 3: each is behind the highest version seen,
	 * not behind the row before it (the walk's place never goes back) */
	const fb_history_row again[] = {
	        ROW(FB_FENCED, 0, 1, 1, 100, 99, false, 1),
	        ROW(FB_FENCED, 0, 2, 2, 99, 98, false, 1),
	        ROW(FB_FENCED, 0, 3, 3, 98, 97, false, 1),
	        ROW(FB_FENCED, 0, 2, 2, 99, 98, false, 1),
	        ROW(FB_FENCED, 0, 3, 3, 98, 97, false, 1),
	        ROW(FB_FENCED, 0, 4, 4, 97, 96, false, 1),
	};
	h = history(BIT(FB_FENCED), 1, again, N(again));
	fb_history_verdict_of(h, FB_FENCED, &v);
	check_eq(v.out_of_order, 2, "versions 2 and 3 again after 3");
	check_eq(v.version_gaps, 0, "not a gap");
	fb_history_destroy(h);
}

static void test_a_chain_break_is_counted(void **state)
{
	(void)state;
	/* key 0 starts from 101, not the initial 100; key 1's second write
	 * replaced 97 where the first left 99 */
	const fb_history_row rows[] = {
	        ROW(FB_FENCED, 0, 1, 1, 101, 100, false, 1),
	        ROW(FB_FENCED, 1, 1, 2, 100, 99, false, 1),
	        ROW(FB_FENCED, 1, 2, 3, 97, 96, false, 1),
	};
	fb_history *h = history(BIT(FB_FENCED), 2, rows, N(rows));
	const int64_t bal[] = {100, 96};
	const uint64_t last[] = {1, 3};
	fb_history_verdict v;
	fb_history_finish(h, FB_FENCED, bal, last, &v, NULL, NULL);
	check_eq(v.chain_breaks, 2, "the first row against the initial balance, then 97 vs 99");
	check_eq(v.version_gaps, 0, "versions are whole");
	check(!v.agrees, "a broken chain disagrees");
	check_has(v.disagreement, "replaced balance 101, but every key started at 100",
	          "the first break is key 0's first row");
	check(fb_history_failed(FB_FENCED, &v), "a chain break fails the fenced discipline");
	fb_history_destroy(h);
}

/*
 * The article's gap: A reads 100 and pauses; B (fence 10) reads 100 and
 * writes 99; A wakes and writes 99 with fence 11 > 10. No write went
 * backwards, but B's debit is lost: write-fenced passes (the lesson),
 * the same history in the fenced discipline fails.
 */
static void test_the_write_fenced_lost_update_is_no_stale_write_but_one_lost(void **state)
{
	(void)state;
	const fb_history_row rows[] = {
	        ROW(FB_FENCED, 0, 1, 10, 100, 99, false, 2),
	        ROW(FB_FENCED, 0, 2, 11, 99, 99, false, 1),
	        ROW(FB_WRITE_FENCED, 0, 1, 10, 100, 99, false, 2),
	        ROW(FB_WRITE_FENCED, 0, 2, 11, 99, 99, false, 1),
	};
	fb_history *h = history(BIT(FB_FENCED) | BIT(FB_WRITE_FENCED), 1, rows, N(rows));
	const int64_t bal[] = {99};
	const uint64_t last[] = {11};
	fb_history_verdict w, f;
	fb_history_finish(h, FB_WRITE_FENCED, bal, last, &w, NULL, NULL);
	check_eq(w.stale_accepted, 0, "11 after 10: no stale write");
	check_eq(w.lost_history, 1, "A wrote 99 from 100 over B's 99");
	check_eq(w.lost_updates, 1, "the ledger: 99 is one above 100 - 2");
	check(w.agrees, "the history agrees with the store: %s", w.disagreement);
	check(!fb_history_failed(FB_WRITE_FENCED, &w), "write-fenced lost updates are the lesson");
	check(!strcmp(fb_history_outcome(FB_WRITE_FENCED, &w), "lost_updates"), "verdict %s",
	      fb_history_outcome(FB_WRITE_FENCED, &w));
	fb_history_finish(h, FB_FENCED, bal, last, &f, NULL, NULL);
	check_eq(f.lost_updates, 1, "the fenced discipline's own books");
	check(fb_history_failed(FB_FENCED, &f), "a lost update in the fenced discipline fails");
	check(!strcmp(fb_history_outcome(FB_FENCED, &f), "violated"), "verdict %s",
	      fb_history_outcome(FB_FENCED, &f));
	fb_history_destroy(h);
}

static void test_store_flags_that_differ_row_by_row_disagree_even_when_counts_match(void **state)
{
	(void)state;
	/* the store flags the first (fresh) row and not the stale second one:
	 * one flag each side, the wrong rows */
	const fb_history_row rows[] = {
	        ROW(FB_UNFENCED, 0, 1, 5, 100, 99, true, 1),
	        ROW(FB_UNFENCED, 0, 2, 3, 99, 98, false, 2),
	};
	fb_history *h = history(BIT(FB_UNFENCED), 1, rows, N(rows));
	const int64_t bal[] = {98};
	const uint64_t last[] = {3};
	fb_history_verdict v;
	fb_history_finish(h, FB_UNFENCED, bal, last, &v, NULL, NULL);
	check_eq(v.stale_accepted, 1, "the checker: the second row");
	check_eq(v.store_stale, 1, "the store: the first row");
	check_eq(v.flag_mismatches, 2, "both rows differ");
	check(!v.stale_agrees && !v.agrees, "the flags disagree");
	check_has(v.disagreement, "key 0 version 1 (fence 5, client 1): flagged stale by the store",
	          "the first mismatch");
	check(fb_history_failed(FB_UNFENCED, &v), "a store out of step with its history fails");
	check(!strcmp(fb_history_outcome(FB_UNFENCED, &v), "disagrees"), "verdict %s",
	      fb_history_outcome(FB_UNFENCED, &v));
	fb_history_destroy(h);
}

static void test_an_unflagged_stale_row_is_named(void **state)
{
	(void)state;
	const fb_history_row rows[] = {
	        ROW(FB_WRITE_FENCED, 0, 1, 5, 100, 99, false, 1),
	        ROW(FB_WRITE_FENCED, 0, 2, 4, 99, 98, false, 2),
	};
	fb_history *h = history(BIT(FB_WRITE_FENCED), 1, rows, N(rows));
	const int64_t bal[] = {98};
	const uint64_t last[] = {5};
	fb_history_verdict v;
	fb_history_finish(h, FB_WRITE_FENCED, bal, last, &v, NULL, NULL);
	check_eq(v.stale_accepted, 1, "4 after 5");
	check_eq(v.store_stale, 0, "the store flagged nothing");
	check_has(v.disagreement,
	          "key 0 version 2 (fence 4, client 2): stale, an earlier write had fence 5, but "
	          "the store did not flag it",
	          "the disagreement");
	fb_history_destroy(h);
}

static void test_a_final_balance_out_of_step_disagrees(void **state)
{
	(void)state;
	const fb_history_row rows[] = {
	        ROW(FB_FENCED, 0, 1, 1, 100, 99, false, 1),
	        ROW(FB_FENCED, 0, 2, 2, 99, 98, false, 1),
	};
	fb_history *h = history(BIT(FB_FENCED), 1, rows, N(rows));
	const int64_t bal[] = {95}; /* three debits the history never saw */
	const uint64_t last[] = {2};
	fb_history_verdict v;
	fb_history_finish(h, FB_FENCED, bal, last, &v, NULL, NULL);
	/* 95 is three below 100 - 2: more was applied than accepted, named so,
	 * never a negative count */
	check_eq(v.lost_updates, 0, "no update lost, and no negative figure");
	check_eq(v.lost_history, 0, "the history lost nothing");
	check(!v.agrees, "the ledger and the history differ");
	check_has(v.disagreement,
	          "key 0: the store holds 3 less than its accepted writes can leave: it applied a "
	          "write it reported refused",
	          "the first difference");
	check(fb_history_failed(FB_FENCED, &v), "fails the fenced discipline");
	fb_history_destroy(h);
}

static void test_a_last_fence_out_of_step_disagrees_in_fenced_disciplines_only(void **state)
{
	(void)state;
	const fb_history_row rows[] = {
	        ROW(FB_FENCED, 0, 1, 4, 100, 99, false, 1),
	        ROW(FB_UNFENCED, 0, 1, 4, 100, 99, false, 1),
	};
	fb_history *h = history(BIT(FB_FENCED) | BIT(FB_UNFENCED), 1, rows, N(rows));
	const int64_t bal[] = {99};
	const uint64_t last[] = {9};
	fb_history_verdict f, u;
	fb_history_finish(h, FB_FENCED, bal, last, &f, NULL, NULL);
	fb_history_finish(h, FB_UNFENCED, bal, last, &u, NULL, NULL);
	check(!f.agrees, "fenced: the store's last fence must be the history's highest");
	check_has(f.disagreement, "the history's highest fence is 4, the store's last accepted 9",
	          "the difference");
	check(u.agrees, "unfenced keeps no fence to compare: %s", u.disagreement);
	fb_history_destroy(h);
}

static void test_several_clients_are_counted_per_discipline(void **state)
{
	(void)state;
	const fb_history_row rows[] = {
	        ROW(FB_FENCED, 0, 1, 1, 100, 99, false, 7),
	        ROW(FB_FENCED, 0, 2, 2, 99, 98, false, 3),
	        ROW(FB_FENCED, 0, 3, 3, 98, 97, false, 7),
	        ROW(FB_UNFENCED, 0, 1, 1, 100, 99, false, 5),
	        ROW(FB_UNFENCED, 0, 2, 2, 99, 98, false, 7),
	};
	fb_history *h = history(BIT(FB_FENCED) | BIT(FB_UNFENCED), 1, rows, N(rows));
	fb_history_verdict f, u, t;
	const int64_t bf[] = {97}, bu[] = {98};
	const uint64_t lf[] = {3}, lu[] = {2};
	fb_history_finish(h, FB_FENCED, bf, lf, &f, NULL, NULL);
	fb_history_finish(h, FB_UNFENCED, bu, lu, &u, NULL, NULL);
	fb_history_total(h, &t);
	check_eq(f.clients, 2, "fenced: clients 3 and 7");
	check_eq(u.clients, 2, "unfenced: clients 5 and 7");
	check_eq(t.clients, 3, "in all: 3, 5, 7");
	check_eq(t.rows, 5, "total rows");
	fb_history_client c[4];
	check_eq(fb_history_clients(h, NULL, 0), 3, "count");
	check_eq(fb_history_clients(h, c, 4), 3, "listed");
	check_eq(c[0].id, 3, "ascending: 3 first");
	check_eq(c[1].id, 5, "then 5");
	check_eq(c[2].id, 7, "then 7");
	check_eq(c[2].writes[FB_FENCED], 2, "client 7's fenced writes");
	check_eq(c[2].writes[FB_UNFENCED], 1, "client 7's unfenced writes");
	check_eq(c[0].writes[FB_UNFENCED], 0, "client 3 wrote no unfenced key");
	check_eq(fb_history_clients(h, c, 1), 3, "a short buffer still counts all");
	check_eq(c[0].id, 3, "and holds the lowest");
	fb_history_destroy(h);
}

static void test_rows_outside_the_run_are_foreign(void **state)
{
	(void)state;
	const fb_history_row rows[] = {
	        ROW(FB_FENCED, 0, 1, 1, 100, 99, false, 1),
	        ROW(FB_FENCED, 5, 1, 2, 100, 99, false, 1),   /* only 2 keys */
	        ROW(FB_UNFENCED, 0, 1, 1, 100, 99, false, 1), /* not selected */
	};
	fb_history *h = history(BIT(FB_FENCED), 2, rows, N(rows));
	const int64_t bal[] = {99, 100};
	const uint64_t last[] = {1, 0};
	fb_history_verdict f, t;
	fb_history_finish(h, FB_FENCED, bal, last, &f, NULL, NULL);
	fb_history_total(h, &t);
	check_eq(f.rows, 1, "the foreign key is not walked");
	check_eq(f.foreign, 1, "key 5 of 2");
	check_has(f.disagreement, "a row for key 5, beyond the run's 2 keys", "the disagreement");
	check_eq(t.foreign, 2, "and the unselected discipline's row");
	check(!t.agrees, "the total disagrees");
	check_eq(fb_history_rows(h), 3, "every row was fed");
	fb_history_destroy(h);
}

static void test_meta_without_keys_modes_or_amount_is_refused(void **state)
{
	(void)state;
	fb_history *h = NULL;
	fb_store_meta m = meta(BIT(FB_FENCED), 0);
	check_eq(fb_history_create(&m, &h), FB_EINVAL, "no key");
	m = meta(0, 4);
	check_eq(fb_history_create(&m, &h), FB_EINVAL, "no discipline");
	m = meta(1u << 7, 4);
	check_eq(fb_history_create(&m, &h), FB_EINVAL, "no known discipline");
	m = meta(BIT(FB_FENCED), 4);
	m.amount = 0;
	check_eq(fb_history_create(&m, &h), FB_EINVAL, "an amount of 0 divides nothing");
	check(h == NULL, "nothing created");
}

typedef struct keys_seen {
	uint32_t n;
	int64_t ledger[4];
	int64_t lost[4];
} keys_seen;

static void see_key(void *ctx, fb_discipline d, uint32_t key, const fb_history_key *hk,
                    int64_t final_balance, int64_t ledger, uint64_t last_fence)
{
	keys_seen *s = ctx;
	(void)d;
	(void)final_balance;
	(void)last_fence;
	s->n++;
	if (key < 4) {
		s->ledger[key] = ledger;
		s->lost[key] = hk->lost_amount;
	}
}

static void test_per_key_numbers_and_a_second_finish(void **state)
{
	(void)state;
	const fb_history_row rows[] = {
	        ROW(FB_WRITE_FENCED, 1, 1, 1, 100, 99, false, 1),
	        ROW(FB_WRITE_FENCED, 1, 2, 2, 99, 99, false, 2),
	};
	fb_history *h = history(BIT(FB_WRITE_FENCED), 3, rows, N(rows));
	const int64_t bal[] = {100, 99, 100};
	const uint64_t last[] = {0, 2, 0};
	keys_seen s = {0};
	fb_history_verdict v, again;
	fb_history_finish(h, FB_WRITE_FENCED, bal, last, &v, see_key, &s);
	check_eq(s.n, 3, "every key seen");
	check_eq(s.ledger[1], 1, "key 1's ledger: 99 above 100 - 2");
	check_eq(s.lost[1], 1, "key 1's history");
	check_eq(s.ledger[0], 0, "key 0 untouched");
	const int64_t wrong[] = {0, 0, 0};
	fb_history_finish(h, FB_WRITE_FENCED, wrong, last, &again, see_key, &s);
	check_eq(s.n, 3, "a second finish walks no key");
	check_eq(again.lost_updates, v.lost_updates, "and keeps the first books");
	check(again.agrees, "the second finals are ignored");
	fb_history_destroy(h);
}

/* A million rows over 4 keys and 3 clients: the state is per key, the
 * walk is exact. */
static void test_a_long_stream_is_walked_exactly(void **state)
{
	(void)state;
	enum { KEYS = 4, PER_KEY = 250000 };
	fb_store_meta m = meta(BIT(FB_FENCED), KEYS);
	m.initial_balance = 1000000;
	fb_history *h = NULL;
	check_eq(fb_history_create(&m, &h), FB_OK, "creation");
	uint64_t fence = 0;
	for (uint32_t k = 0; k < KEYS; k++)
		for (uint64_t v = 1; v <= PER_KEY; v++) {
			int64_t before = 1000000 - (int64_t)(v - 1);
			fb_history_row r = ROW(FB_FENCED, k, v, ++fence, before, before - 1, false,
			                       (uint32_t)(v % 3) + 1);
			fb_history_feed(h, &r);
		}
	int64_t bal[KEYS];
	uint64_t last[KEYS];
	for (uint32_t k = 0; k < KEYS; k++) {
		bal[k] = 1000000 - PER_KEY;
		last[k] = (uint64_t)(k + 1) * PER_KEY;
	}
	fb_history_verdict v;
	fb_history_finish(h, FB_FENCED, bal, last, &v, NULL, NULL);
	check_eq(v.rows, KEYS * PER_KEY, "every row walked");
	check_eq(v.stale_accepted + v.version_gaps + v.chain_breaks, 0, "clean");
	check_eq(v.clients, 3, "three clients");
	check(v.agrees, "agrees: %s", v.disagreement);
	fb_history_destroy(h);
}

/* ---- fencebench check on a fake engine ---- */

static struct fake {
	fb_store_meta meta;
	fb_io meta_io;
	const fb_history_row *rows;
	size_t nrows;
	int64_t bal[FB_DISCIPLINES][2];
	uint64_t last[FB_DISCIPLINES][2];
	fb_err open_err;
	bool connect_fails, history_fails;
	int opened, prepared, closed, connected, disconnected;
	uint32_t client_id_seen;
	char error[128];
} fk;

static fb_err fake_open(const fb_engine_config *cfg, const char *url, void **eng, char *err,
                        size_t errlen)
{
	fk.client_id_seen = cfg->client_id;
	if (fk.open_err != FB_OK) {
		char red[256];
		fb_url_redact(url, red, sizeof red);
		snprintf(err, errlen, "%s: Connection refused", red);
		return fk.open_err;
	}
	fk.opened++;
	*eng = &fk;
	return FB_OK;
}
static void fake_version(void *eng, char *buf, size_t len)
{
	(void)eng;
	snprintf(buf, len, "9.9.9");
}
static fb_err fake_prepare(void *eng, bool fresh, char *err, size_t errlen)
{
	(void)eng, (void)fresh, (void)err, (void)errlen;
	fk.prepared++;
	return FB_OK;
}
static void fake_close(void *eng)
{
	(void)eng;
	fk.closed++;
}
static fb_err fake_connect(void *eng, uint16_t worker, void **conn, char *err, size_t errlen)
{
	(void)eng, (void)worker;
	if (fk.connect_fails) {
		snprintf(err, errlen, "timed out");
		return FB_ESYS;
	}
	fk.connected++;
	*conn = &fk;
	return FB_OK;
}
static void fake_disconnect(void *conn)
{
	(void)conn;
	fk.disconnected++;
}
static const char *fake_error(void *conn)
{
	(void)conn;
	return fk.error;
}
static fb_io fake_final(void *conn, fb_discipline d, uint32_t keys, int64_t *balance,
                        uint64_t *last_fence)
{
	(void)conn;
	for (uint32_t k = 0; k < keys && k < 2; k++) {
		balance[k] = fk.bal[d][k];
		last_fence[k] = fk.last[d][k];
	}
	return FB_IO_OK;
}
static fb_io fake_history(void *conn, void (*row)(void *ctx, const fb_history_row *h), void *ctx)
{
	(void)conn;
	if (fk.history_fails) {
		snprintf(fk.error, sizeof fk.error, "server went away");
		return FB_IO_ERROR;
	}
	for (size_t i = 0; i < fk.nrows; i++)
		row(ctx, &fk.rows[i]);
	return FB_IO_OK;
}
static fb_io fake_meta(void *conn, fb_store_meta *out)
{
	(void)conn;
	*out = fk.meta;
	return fk.meta_io;
}

static const fb_store_ops fake_ops = {
        .scheme = "fake",
        .name = "Fake",
        .open = fake_open,
        .version = fake_version,
        .prepare = fake_prepare,
        .close = fake_close,
        .connect = fake_connect,
        .disconnect = fake_disconnect,
        .error = fake_error,
        .final = fake_final,
        .history = fake_history,
        .meta = fake_meta,
};

/*
 * The store every fake check starts from, two keys in all three
 * disciplines: fenced clean; write-fenced with the lost update (B 10 writes
 * 99, A 11 writes 99 from 100); unfenced with a stale write (A 3 after B
 * 5) that erased a debit. Clients 1 and 2.
 */
static const fb_history_row base_rows[] = {
        ROW(FB_FENCED, 0, 1, 1, 100, 99, false, 1),
        ROW(FB_FENCED, 0, 2, 4, 99, 98, false, 2),
        ROW(FB_FENCED, 1, 1, 2, 100, 99, false, 2),
        ROW(FB_WRITE_FENCED, 0, 1, 10, 100, 99, false, 2),
        ROW(FB_WRITE_FENCED, 0, 2, 11, 99, 99, false, 1),
        ROW(FB_UNFENCED, 1, 1, 5, 100, 99, false, 2),
        ROW(FB_UNFENCED, 1, 2, 3, 99, 99, true, 1),
};

static void fake_reset(void)
{
	memset(&fk, 0, sizeof fk);
	fk.meta = meta(BIT(FB_FENCED) | BIT(FB_WRITE_FENCED) | BIT(FB_UNFENCED), 2);
	fk.meta_io = FB_IO_OK;
	fk.rows = base_rows;
	fk.nrows = N(base_rows);
	fk.bal[FB_FENCED][0] = 98, fk.bal[FB_FENCED][1] = 99;
	fk.last[FB_FENCED][0] = 4, fk.last[FB_FENCED][1] = 2;
	fk.bal[FB_WRITE_FENCED][0] = 99, fk.bal[FB_WRITE_FENCED][1] = 100;
	fk.last[FB_WRITE_FENCED][0] = 11, fk.last[FB_WRITE_FENCED][1] = 0;
	fk.bal[FB_UNFENCED][0] = 100, fk.bal[FB_UNFENCED][1] = 99;
	fk.last[FB_UNFENCED][0] = 0, fk.last[FB_UNFENCED][1] = 3;
}

typedef struct result {
	int code;
	char *out, *err;
} result;

static result check_fake(const char *url, const char *json, bool quiet)
{
	result r = {0};
	size_t no, ne;
	FILE *out = open_memstream(&r.out, &no), *err = open_memstream(&r.err, &ne);
	check(out && err, "open_memstream failed: %s", strerror(errno));
	fb_check_opts o = {.url = url, .json = json, .quiet = quiet, .out = out, .err = err};
	r.code = fb_check_store(&fake_ops, &o);
	fclose(out);
	fclose(err);
	return r;
}

static void release(result *r)
{
	free(r->out);
	free(r->err);
}

static void test_check_reports_each_discipline_and_never_prepares(void **state)
{
	(void)state;
	fake_reset();
	result r = check_fake("fake://h/0", NULL, false);
	if (getenv("FB_SHOW"))
		printf("%s", r.out);
	check_eq(r.code, 0, "clean fenced disciplines exit 0");
	check_eq(fk.prepared, 0, "prepare would reset the store: never called");
	check_eq(fk.opened, 1, "opened once");
	check_eq(fk.connected, 1, "one connection");
	check_eq(fk.disconnected, 1, "disconnected");
	check_eq(fk.closed, 1, "closed");
	check_eq(fk.client_id_seen, 0, "client id 0");
	check_has(r.out, "fenced: SAFE (3 writes re-verified", "fenced verdict");
	check_has(r.out, "write-fenced: no stale write, but 1 update lost (reads were not fenced",
	          "write-fenced verdict");
	check_has(r.out, "unfenced: CORRUPTED (1 stale write accepted, 1 debit erased)",
	          "unfenced verdict");
	char line[160];
	snprintf(line, sizeof line, "%-28s %13s %13s %13s\n", "writes in history", "3", "2", "2");
	check_has(r.out, line, "the table's first row: fenced, write-fenced, unfenced");
	snprintf(line, sizeof line, "%-28s %13s %13s %13s\n", "  client 2", "2", "1", "1");
	check_has(r.out, line, "client 2's writes");
	check_has(r.out, "PASS: fenced writes=3 stale=0 lost=0 agree=yes;", "the summary line");
	check_lacks(r.out, "DISAGREES", "nothing disagrees");
	check(r.err[0] == 0, "nothing on stderr: %s", r.err);
	release(&r);
}

static void test_check_exits_1_when_the_fenced_discipline_accepted_a_stale_write(void **state)
{
	(void)state;
	fake_reset();
	fb_history_row rows[N(base_rows)];
	memcpy(rows, base_rows, sizeof rows);
	rows[1].fence = 1; /* fenced key 0 version 2 with fence 1 after 1 */
	rows[1].store_stale = true;
	fk.rows = rows;
	fk.last[FB_FENCED][0] = 1;
	result r = check_fake("fake://h/0", NULL, false);
	check_eq(r.code, 1, "a stale write in the fenced discipline exits 1");
	check_has(r.out, "fenced: VIOLATED !!! (1 stale writes accepted)", "the verdict");
	check_has(r.out, "FAIL !!!:", "the summary line");
	release(&r);
}

static void test_check_names_the_first_disagreement(void **state)
{
	(void)state;
	fake_reset();
	fk.bal[FB_UNFENCED][1] = 97; /* the store holds what the history never wrote */
	result r = check_fake("fake://h/0", NULL, false);
	check_eq(r.code, 1, "the history out of step with the store exits 1");
	check_has(r.out,
	          "unfenced: CHECKER DISAGREES: key 1: the store holds 1 less than its accepted "
	          "writes can leave",
	          "the first disagreement");
	check_has(r.out, "agree=NO;", "the summary line");
	release(&r);
}

/* Each row of check's table and each key of its document carries its own
 * number: a history whose counts all differ where two could be swapped
 * (the checker's stale count and the store's flags; the updates lost by
 * the history and by the final balances). */
static void test_check_names_each_number_once(void **state)
{
	(void)state;
	fake_reset();
	fb_history_row rows[N(base_rows)];
	memcpy(rows, base_rows, sizeof rows);
	rows[6].store_stale = false; /* the store did not flag unfenced's stale row */
	fk.rows = rows;
	fk.bal[FB_UNFENCED][1] = 100; /* one more than the history leaves */
	char *dir = fb_test_tmpdir();
	char path[512], line[160];
	snprintf(path, sizeof path, "%s/check.json", dir);
	result r = check_fake("fake://h/0", path, false);
	if (getenv("FB_SHOW"))
		printf("%s", r.out);
	static const struct {
		const char *label, *key;
		int wf, unfenced; /* fenced: 0 */
	} rows_of[] = {
	        {"stale accepted (checker)", "stale_accepted", 0, 1},
	        {"  ... flagged by the store", "store_stale", 0, 0},
	        {"lost updates (history)", "lost_history", 1, 1},
	        {"lost updates (ledger)", "lost_updates", 1, 2},
	};
	json_object *doc = json_object_from_file(path), *u = NULL, *x = NULL;
	check(doc && json_object_object_get_ex(doc, "modes", &x) &&
	              json_object_object_get_ex(x, "unfenced", &u),
	      "%s holds modes.unfenced", path);
	for (size_t i = 0; i < N(rows_of); i++) {
		snprintf(line, sizeof line, "%-28s %13s %13d %13d", rows_of[i].label, "0",
		         rows_of[i].wf, rows_of[i].unfenced);
		check_has(r.out, line, rows_of[i].label);
		check(json_object_object_get_ex(u, rows_of[i].key, &x) &&
		              json_object_get_int(x) == rows_of[i].unfenced,
		      "modes.unfenced.%s is %d", rows_of[i].key, rows_of[i].unfenced);
	}
	check_lacks(r.out, "versions out of order", "a row for none, shown only when some");
	check_lacks(r.out, "rows outside the run", "a row for none, shown only when some");
	json_object_put(doc);
	release(&r);
	fb_test_rmtree(dir);
	free(dir);
}

static void test_check_quiet_prints_the_verdicts_only(void **state)
{
	(void)state;
	fake_reset();
	result r = check_fake("fake://h/0", NULL, true);
	check_eq(r.code, 0, "exit 0");
	check_lacks(r.out, "writes in history", "no table with -q");
	check_has(r.out, "fenced: SAFE", "the verdict lines stay");
	release(&r);
}

static void test_check_without_a_recorded_run_exits_3(void **state)
{
	(void)state;
	fake_reset();
	fk.meta_io = FB_IO_REFUSED;
	result r = check_fake("fake://h/0", NULL, false);
	check_eq(r.code, 3, "no run recorded: runtime error");
	check(!strcmp(r.err, "fencebench: check: fake://h/0: no fencebench run recorded here\n"),
	      "the error line: %s", r.err);
	check_eq(fk.disconnected + fk.closed, 2, "the connection and the engine are closed");
	release(&r);
}

static void test_check_unreachable_server_exits_3_with_the_url_redacted_once(void **state)
{
	(void)state;
	fake_reset();
	fk.open_err = FB_ESYS;
	result r = check_fake("fake://u:hunter2@h/0", NULL, false);
	check_eq(r.code, 3, "unreachable: runtime error");
	check(!strcmp(r.err, "fencebench: check: fake://u:***@h/0: Connection refused\n"),
	      "one line, the URL once and redacted: %s", r.err);
	release(&r);
	fake_reset();
	fk.connect_fails = true;
	r = check_fake("fake://h/0", NULL, false);
	check_eq(r.code, 3, "connect failure: runtime error");
	check(!strcmp(r.err, "fencebench: check: fake://h/0: timed out\n"), "the line: %s", r.err);
	check_eq(fk.closed, 1, "the engine is closed");
	release(&r);
	fake_reset();
	fk.history_fails = true;
	r = check_fake("fake://h/0", NULL, false);
	check_eq(r.code, 3, "a failure reading the history: runtime error");
	check_has(r.err, "fencebench: check: fake://h/0: reading the history: server went away",
	          "the line");
	release(&r);
	fake_reset();
	fk.open_err = FB_EINVAL;
	r = check_fake("fake://h/0?bogus=1", NULL, false);
	check_eq(r.code, 2, "a malformed URL is a usage error");
	check_has(r.err, "fencebench check: --store 'fake://h/0?bogus=1': ", "names the option");
	release(&r);
}

static void test_check_writes_the_json_document(void **state)
{
	(void)state;
	fake_reset();
	char *dir = fb_test_tmpdir();
	char path[512];
	snprintf(path, sizeof path, "%s/check.json", dir);
	result r = check_fake("fake://u:hunter2@h/0", path, true);
	check_eq(r.code, 0, "exit 0");
	json_object *doc = json_object_from_file(path);
	check(doc != NULL, "%s is JSON", path);
	const char *text = json_object_to_json_string(doc);
	check_lacks(text, "hunter2", "the password is not in the document");
	json_object *x;
#define GET(o, k) (json_object_object_get_ex((o), (k), &x) ? x : NULL)
	check_eq(json_object_get_int(GET(doc, "schema")), 2, "schema");
	check(!strcmp(json_object_get_string(GET(doc, "kind")), "check"), "kind");
	json_object *st = GET(doc, "store");
	check(!strcmp(json_object_get_string(GET(st, "url")), "fake://u:***@h/0"), "url redacted");
	check(!strcmp(json_object_get_string(GET(st, "engine")), "Fake"), "engine name");
	check(!strcmp(json_object_get_string(GET(st, "server_version")), "9.9.9"), "version");
	json_object *m = GET(doc, "meta");
	check_eq(json_object_get_int(GET(m, "keys")), 2, "meta keys");
	check_eq(json_object_get_int(GET(m, "initial_balance")), 100, "meta balance");
	check_eq(json_object_array_length(GET(m, "modes")), 3, "three disciplines");
	json_object *modes = GET(doc, "modes");
	json_object *f = GET(modes, "fenced"), *w = GET(modes, "write_fenced"),
	            *u = GET(modes, "unfenced");
	check(f && w && u, "every discipline present");
	check(!strcmp(json_object_get_string(GET(f, "verdict")), "safe"), "fenced verdict");
	check(!strcmp(json_object_get_string(GET(w, "verdict")), "lost_updates"), "wf verdict");
	check(!strcmp(json_object_get_string(GET(u, "verdict")), "corrupted"), "unfenced verdict");
	check_eq(json_object_get_int(GET(w, "lost_updates")), 1, "write-fenced lost");
	check_eq(json_object_get_int(GET(u, "stale_accepted")), 1, "unfenced stale");
	check_eq(json_object_get_int(GET(u, "store_stale")), 1, "unfenced flagged");
	check(json_object_get_boolean(GET(u, "checker_agrees")), "unfenced agrees");
	check_eq(json_object_get_int(GET(GET(f, "writes_per_client"), "2")), 2,
	         "client 2's fenced writes");
	check_eq(json_object_get_int(GET(GET(doc, "total"), "rows")), 7, "total rows");
	check_eq(json_object_get_int(GET(doc, "exit_code")), 0, "exit code");
#undef GET
	json_object_put(doc);
	release(&r);
	fb_test_rmtree(dir);
	free(dir);
}

/* ---- the command line ---- */

/* fb_check_main in a child, its stdout and stderr read back. */
static result check_main(const char *const *args)
{
	const char *argv[16] = {"check"};
	int argc = 1;
	for (; args[argc - 1] && argc < 15; argc++)
		argv[argc] = args[argc - 1];
	argv[argc] = NULL;
	int o[2], e[2];
	check(pipe(o) == 0 && pipe(e) == 0, "pipe failed: %s", strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	check(pid >= 0, "fork failed: %s", strerror(errno));
	if (pid == 0) {
		dup2(o[1], 1);
		dup2(e[1], 2);
		close(o[0]);
		close(e[0]);
		int code = fb_check_main(argc, (char **)argv);
		fflush(NULL);
		_exit(code);
	}
	close(o[1]);
	close(e[1]);
	result r;
	r.out = fb_test_slurp(o[0]);
	r.err = fb_test_slurp(e[0]);
	int st;
	waitpid(pid, &st, 0);
	r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return r;
}

/* Exactly one line on stderr. */
static void check_one_line(const char *err, const char *what)
{
	const char *nl = strchr(err, '\n');
	check(nl && nl[1] == 0, "%s: one line on stderr, got:\n%s", what, err);
}

static void test_check_usage_errors_exit_2_with_one_line(void **state)
{
	(void)state;
	static const struct {
		const char *args[4];
		const char *says;
	} cases[] = {
	        {{NULL}, "fencebench check: --store URL is required"},
	        {{"--store", NULL}, "fencebench check: --store needs a URL"},
	        {{"--bogus", NULL}, "fencebench check: unknown option '--bogus'"},
	        {{"somewhere", NULL}, "fencebench check: 'somewhere': unexpected argument"},
	        {{"--store", "foo://x", NULL},
	         "fencebench check: --store 'foo://x': unknown scheme"},
	        {{"--store", "inproc", NULL},
	         "fencebench check: --store 'inproc': the in-process store keeps no history"},
	        {{"--store=", NULL}, "keeps no history"},
	        {{"--store", "redis://h/0", "--json", NULL}, "--json needs a FILE"},
	};
	for (size_t i = 0; i < N(cases); i++) {
		result r = check_main(cases[i].args);
		check(r.code == 2, "case %zu (%s): expected exit 2, got %d: %s", i, cases[i].says,
		      r.code, r.err);
		check_has(r.err, cases[i].says, "the usage line");
		check_one_line(r.err, cases[i].says);
		check(r.out[0] == 0, "nothing on stdout: %s", r.out);
		release(&r);
	}
	result r = check_main((const char *const[]){"--store", "foo://x", NULL});
	check_has(r.err, "postgres://", "an unknown scheme lists the valid ones");
	release(&r);
}

static void test_check_help_exits_0(void **state)
{
	(void)state;
	result r = check_main((const char *const[]){"--help", NULL});
	check_eq(r.code, 0, "--help");
	check_has(r.out, "usage: fencebench check --store URL", "the usage");
	release(&r);
}

static void test_check_of_an_unreachable_redis_exits_3(void **state)
{
	(void)state;
	/* port 1: nothing listens there */
	result r = check_main(
	        (const char *const[]){"--store", "redis://u:hunter2@127.0.0.1:1/0", NULL});
	check(r.code == 3,
	      "an unreachable server is a runtime error: expected exit 3, got %d (exit 2 with "
	      "\"unknown scheme\" means the Redis engine is not linked in): %s",
	      r.code, r.err);
	check_has(r.err, "fencebench: check: redis://u:***@127.0.0.1:1/0: ", "the error line");
	check_lacks(r.err, "hunter2", "the password is redacted");
	check_one_line(r.err, "the error");
	release(&r);
}

/* The subcommand is registered: the real binary answers `check --help`. */
static void test_the_binary_knows_the_check_command(void **state)
{
	(void)state;
	fb_test_proc p;
	int code = fb_test_run(&p, (const char *const[]){"check", "--help", NULL});
	check(code != 127, "could not exec %s (set FB_BIN)", fb_test_bin());
	check_eq(code, 0, "fencebench check --help");
	check_has(p.out, "usage: fencebench check --store URL", "the check usage");
	fb_test_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_a_clean_fenced_history_is_safe),
	        cmocka_unit_test(test_a_stale_row_is_counted_with_the_debits_it_erased),
	        cmocka_unit_test(test_an_equal_fence_is_stale),
	        cmocka_unit_test(test_a_missing_version_is_a_write_the_history_lost),
	        cmocka_unit_test(test_a_version_recorded_twice_is_out_of_order),
	        cmocka_unit_test(test_a_chain_break_is_counted),
	        cmocka_unit_test(test_the_write_fenced_lost_update_is_no_stale_write_but_one_lost),
	        cmocka_unit_test(
	                test_store_flags_that_differ_row_by_row_disagree_even_when_counts_match),
	        cmocka_unit_test(test_an_unflagged_stale_row_is_named),
	        cmocka_unit_test(test_a_final_balance_out_of_step_disagrees),
	        cmocka_unit_test(
	                test_a_last_fence_out_of_step_disagrees_in_fenced_disciplines_only),
	        cmocka_unit_test(test_several_clients_are_counted_per_discipline),
	        cmocka_unit_test(test_rows_outside_the_run_are_foreign),
	        cmocka_unit_test(test_meta_without_keys_modes_or_amount_is_refused),
	        cmocka_unit_test(test_per_key_numbers_and_a_second_finish),
	        cmocka_unit_test(test_a_long_stream_is_walked_exactly),
	        cmocka_unit_test(test_check_reports_each_discipline_and_never_prepares),
	        cmocka_unit_test(
	                test_check_exits_1_when_the_fenced_discipline_accepted_a_stale_write),
	        cmocka_unit_test(test_check_names_the_first_disagreement),
	        cmocka_unit_test(test_check_quiet_prints_the_verdicts_only),
	        cmocka_unit_test(test_check_without_a_recorded_run_exits_3),
	        cmocka_unit_test(test_check_unreachable_server_exits_3_with_the_url_redacted_once),
	        cmocka_unit_test(test_check_writes_the_json_document),
	        cmocka_unit_test(test_check_names_each_number_once),
	        cmocka_unit_test(test_check_usage_errors_exit_2_with_one_line),
	        cmocka_unit_test(test_check_help_exits_0),
	        cmocka_unit_test(test_check_of_an_unreachable_redis_exits_3),
	        cmocka_unit_test(test_the_binary_knows_the_check_command),
	};
	return cmocka_run_group_tests_name("history", tests, NULL, NULL);
}
