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
	fb_worker w[4];                                   /* A, B, C, D */
	alignas(FB_PAD_LINE) char marks[2 * FB_PAD_LINE]; /* two keys' (fb_env_marks) */
	fb_mode_counters mc;
} fixture;

static fixture *fresh(void)
{
	fixture *f = aligned_alloc(alignof(fixture), sizeof *f);
	check(f != NULL, "aligned_alloc");
	memset(f, 0, sizeof *f);
	f->e.wf_judged = true;
	f->e.judging = true;
	f->e.marks = f->marks;
	for (int i = 0; i < 4; i++) {
		f->w[i].env = &f->e;
		f->w[i].key = 0;
	}
	return f;
}

/* The worker holds fence n: a lease of its own, which has sent nothing. */
static fb_worker *holding(fixture *f, int who, uint64_t n)
{
	f->w[who].l.fence = n;
	f->w[who].reg = 0;
	return &f->w[who];
}

static void read_served(fixture *f, int who)
{
	control_read(&f->w[who], FB_WRITE_FENCED);
}

/* control_send, then the cycle's own record of what it sends
 * (fb_env_sending), in that order, as write_one does. */
static void send(fixture *f, int who)
{
	fb_worker *w = &f->w[who];
	control_send(w, FB_WRITE_FENCED);
	fb_env_sending(&f->e, FB_WRITE_FENCED, w->key, w->l.fence, &w->reg);
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

/* B's fence was handed out twice: its twin D sent it first, before B's
 * reply (D's call may have reached the store first, and a correct store
 * then refused B's equal one). None, whoever recorded the fence first. */
static void test_a_twin_sent_before_b_reply_makes_it_none(void **state)
{
	(void)state;
	for (int twin_first = 0; twin_first <= 1; twin_first++) {
		fixture *f = fresh();
		holding(f, 3, 6);
		if (twin_first)
			send(f, 3);
		b_after(f);
		if (!twin_first)
			send(f, 3);
		replied(f, 1);
		check(chances(f) == 0, "twin first %d: B could have been refused", twin_first);
		free(f);
	}
}

/* The twin sent only after B's reply: B's write was above every one sent
 * before it and came back with none equal or higher: a chance still. So
 * is one beside a fence handed out twice on another key. */
static void test_a_twin_after_b_reply_or_on_another_key_leaves_the_chance(void **state)
{
	(void)state;
	fixture *f = fresh();
	b_after(f);
	replied(f, 1);
	holding(f, 3, 6);
	send(f, 3);
	check_eq(chances(f), 1, "the twin came after B's reply");

	fixture *g = fresh();
	holding(g, 2, 9)->key = 1;
	holding(g, 3, 9)->key = 1;
	send(g, 2);
	send(g, 3);
	check(fb_env_sent_twice(&g->e, 1, FB_WRITE_FENCED, 9), "fence 9 twice on key 1");
	b_after(g);
	replied(g, 1);
	check_eq(chances(g), 1, "a fence twice on key 1 says nothing of key 0");
	free(f);
	free(g);
}

/* The record itself (fb_env_sending): a fence is sent twice when two leases
 * send it to one store, never when one lease sends it twice (a read and
 * its write, a write and its resent copy, a delayed write after its
 * read); on that store and key only; a lower or higher fence is no twin. */
static void test_the_record_tells_a_twin_from_a_lease_sending_again(void **state)
{
	(void)state;
	fixture *f = fresh();
	fb_env *e = &f->e;
	fb_worker *a = holding(f, 0, 7);
	fb_env_sending(e, FB_FENCED, 0, 7, &a->reg); /* its read */
	fb_env_sending(e, FB_FENCED, 0, 7, &a->reg); /* its write */
	fb_env_sending(e, FB_FENCED, 0, 7, &a->reg); /* its resent copy */
	fb_env_sending(e, FB_WRITE_FENCED, 0, 7, &a->reg);
	check(!fb_env_sent_twice(e, 0, FB_FENCED, 7) &&
	              !fb_env_sent_twice(e, 0, FB_WRITE_FENCED, 7),
	      "one lease sending again is no twin");
	uint8_t delayed = 1u << FB_FENCED; /* a delayed write of a lease that read */
	fb_env_sending(e, FB_FENCED, 0, 7, &delayed);
	check(!fb_env_sent_twice(e, 0, FB_FENCED, 7), "its own delayed write is no twin");

	fb_worker *b = holding(f, 1, 6); /* older */
	fb_env_sending(e, FB_FENCED, 0, 6, &b->reg);
	fb_worker *c = holding(f, 2, 8); /* newer */
	fb_env_sending(e, FB_WRITE_FENCED, 0, 8, &c->reg);
	check(!fb_env_sent_twice(e, 0, FB_FENCED, 6) && !fb_env_sent_twice(e, 0, FB_FENCED, 7) &&
	              !fb_env_sent_twice(e, 0, FB_WRITE_FENCED, 8),
	      "a lower or a higher fence is no twin");
	check_eq(atomic_load(fb_env_sent(e, 0, FB_FENCED)), 7, "the highest sent to fenced");

	fb_worker *d = holding(f, 3, 7); /* 7 handed out again */
	fb_env_sending(e, FB_FENCED, 0, 7, &d->reg);
	check(fb_env_sent_twice(e, 0, FB_FENCED, 7), "another lease sent 7 to fenced");
	check(!fb_env_sent_twice(e, 0, FB_WRITE_FENCED, 7) &&
	              !fb_env_sent_twice(e, 1, FB_FENCED, 7),
	      "on that store and that key only");
	uint8_t other = 0; /* a delayed write of a lease that never read there */
	fb_env_sending(e, FB_WRITE_FENCED, 0, 8, &other);
	check(fb_env_sent_twice(e, 0, FB_WRITE_FENCED, 8), "a delayed twin is a twin");
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
	        cmocka_unit_test(test_a_twin_sent_before_b_reply_makes_it_none),
	        cmocka_unit_test(test_a_twin_after_b_reply_or_on_another_key_leaves_the_chance),
	        cmocka_unit_test(test_the_record_tells_a_twin_from_a_lease_sending_again),
	        cmocka_unit_test(test_a_write_b_read_after_is_none),
	        cmocka_unit_test(test_a_reply_after_b_sent_is_none),
	        cmocka_unit_test(test_a_refusable_first_write_makes_none),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
