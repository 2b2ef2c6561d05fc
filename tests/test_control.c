/*
 * The write-fenced control's chances (bench/drive/control.h), judged on
 * interleavings written out by hand: each test is the order in which the
 * cycle calls the three steps for workers reading, sending and hearing back
 * from one write-fenced store on one key. A chance is a write B that a
 * correct write-fenced store had to accept after replacing a balance newer
 * than the one B read; anything a correct store could have refused, or
 * that B's read already saw, is none. Counting a chance that is not one is
 * a false "not a control" verdict; the end-to-end runs (test_cli) show the
 * count rises, these show what it must not count.
 */
#include <stdlib.h>
#include <string.h>

#include "control.h"
#include "fbtest.h"

typedef struct fixture {
	fb_env e;
	fb_worker w[3]; /* A, B, C */
	fb_key_marks marks[1];
	fb_mode_counters mc;
} fixture;

static fixture *fresh(void)
{
	fixture *f = aligned_alloc(alignof(fixture), sizeof *f); /* the marks' line */
	check(f != NULL, "aligned_alloc");
	memset(f, 0, sizeof *f);
	f->e.wf_judged = true;
	f->e.marks = f->marks;
	for (int i = 0; i < 3; i++) {
		f->w[i].env = &f->e;
		f->w[i].key = 0;
	}
	return f;
}

/* The worker holds fence n. */
static fb_worker *holding(fixture *f, int who, uint64_t n)
{
	f->w[who].l.fence = n;
	return &f->w[who];
}

static void read_served(fixture *f, int who)
{
	control_read(&f->w[who], FB_WRITE_FENCED);
}

/* control_send, then the cycle's own record of the highest fence sent
 * (cycle.c's sending, a max), in that order. */
static void send(fixture *f, int who)
{
	fb_worker *w = &f->w[who];
	control_send(w, FB_WRITE_FENCED);
	_Atomic uint64_t *s = &f->marks[0].sent[FB_WRITE_FENCED];
	if (atomic_load(s) < w->l.fence)
		atomic_store(s, w->l.fence);
}

static void replied(fixture *f, int who)
{
	control_reply(&f->w[who], FB_WRITE_FENCED, &f->mc);
}

static uint64_t chances(fixture *f)
{
	return atomic_load(&f->mc.control_chances);
}

/* B reads; A's write (fence 5) is sent and accepted; B's (6) is sent and
 * replied: B replaced a balance newer than its read. One chance. */
static void b_after(fixture *f)
{
	holding(f, 0, 5);
	holding(f, 1, 6);
	read_served(f, 1);
	send(f, 0);
	replied(f, 0);
	send(f, 1);
}

static void test_a_write_accepted_between_b_read_and_b_write_is_a_chance(void **state)
{
	(void)state;
	fixture *f = fresh();
	b_after(f);
	replied(f, 1);
	check_eq(chances(f), 1, "the one chance");
	free(f);
}

/* The same, but C's higher fence (7) is sent before B's reply: a correct
 * store may have taken C before B and refused B, so B is no chance. */
static void test_a_higher_fence_sent_before_b_reply_makes_it_none(void **state)
{
	(void)state;
	fixture *f = fresh();
	b_after(f);
	holding(f, 2, 7);
	send(f, 2);
	replied(f, 1);
	check_eq(chances(f), 0, "B could have been refused");
	free(f);
}

/* B carries no fence above every one sent before: the one A sent (equal:
 * a fence handed out twice; lower: B's is older), so it could be refused. */
static void test_a_fence_not_above_every_one_sent_is_none(void **state)
{
	(void)state;
	for (uint64_t b = 4; b <= 5; b++) {
		fixture *f = fresh();
		holding(f, 0, 5);
		holding(f, 1, b);
		read_served(f, 1);
		send(f, 0);
		replied(f, 0);
		send(f, 1);
		replied(f, 1);
		check(chances(f) == 0, "B's fence %llu, A's 5: no chance", (unsigned long long)b);
		free(f);
	}
}

/* The witness saw a fence handed out twice: no fence is sure to be above
 * the ones before it. */
static void test_duplicate_fences_anywhere_make_none(void **state)
{
	(void)state;
	fixture *f = fresh();
	atomic_store(&f->e.dup_fences, 1);
	b_after(f);
	replied(f, 1);
	check_eq(chances(f), 0, "not judged once fences repeat");
	free(f);
}

/* B's read came after A's reply: B read the balance A left, no chance. */
static void test_a_write_b_read_after_is_none(void **state)
{
	(void)state;
	fixture *f = fresh();
	holding(f, 0, 5);
	holding(f, 1, 6);
	send(f, 0);
	replied(f, 0);
	read_served(f, 1);
	send(f, 1);
	replied(f, 1);
	check_eq(chances(f), 0, "B read what A wrote");
	free(f);
}

/* A's reply came back only after B's write was sent: the store may have
 * taken B first (then A, above B? no: A is lower, refused), so nothing
 * says B replaced A's balance. */
static void test_a_reply_after_b_sent_is_none(void **state)
{
	(void)state;
	fixture *f = fresh();
	holding(f, 0, 5);
	holding(f, 1, 6);
	read_served(f, 1);
	send(f, 0);
	send(f, 1);
	replied(f, 0);
	replied(f, 1);
	check_eq(chances(f), 0, "A not known accepted when B was sent");
	free(f);
}

/* A write a correct store could refuse (A's fence 5, already sent by C,
 * whose write B's read saw) is no evidence that B replaced anything. */
static void test_a_refusable_first_write_makes_none(void **state)
{
	(void)state;
	fixture *f = fresh();
	holding(f, 2, 5);
	send(f, 2);
	replied(f, 2); /* C: 5, accepted before B's read */
	holding(f, 0, 5);
	holding(f, 1, 6);
	read_served(f, 1);
	send(f, 0); /* A: 5 again, which a correct store refuses */
	replied(f, 0);
	send(f, 1);
	replied(f, 1);
	check_eq(chances(f), 0, "only A, refusable, came between B's read and write");
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_a_write_accepted_between_b_read_and_b_write_is_a_chance),
	        cmocka_unit_test(test_a_higher_fence_sent_before_b_reply_makes_it_none),
	        cmocka_unit_test(test_a_fence_not_above_every_one_sent_is_none),
	        cmocka_unit_test(test_duplicate_fences_anywhere_make_none),
	        cmocka_unit_test(test_a_write_b_read_after_is_none),
	        cmocka_unit_test(test_a_reply_after_b_sent_is_none),
	        cmocka_unit_test(test_a_refusable_first_write_makes_none),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
