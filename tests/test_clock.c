#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>

#include "clock.h"
#include "fbtest.h"

static void test_manual_clock_moves_only_when_told(void **state)
{
	(void)state;
	fb_clock_manual m;
	fb_clock_manual_init(&m, 5 * MS);
	check_eq(fb_clock_now(&m.base), 5 * MS, "manual clock after init");
	check_eq(fb_clock_now(&m.base), 5 * MS, "manual clock must not move by itself");
	fb_clock_manual_advance(&m, 26 * MS);
	check_eq(fb_clock_now(&m.base), 31 * MS, "manual clock after advance(26ms)");
	fb_clock_manual_set(&m, 2 * MS);
	check_eq(fb_clock_now(&m.base), 2 * MS, "manual clock after set(2ms)");
}

static void test_skewed_clock_runs_at_its_rate_and_jumps(void **state)
{
	(void)state;
	fb_clock_manual m;
	fb_clock_manual_init(&m, 100 * MS);
	fb_clock_skewed slow;
	fb_clock_skewed_init(&slow, &m.base, 0.5, 0);
	check_eq(fb_clock_now(&slow.base), 100 * MS,
	         "a skewed clock starts where its inner clock is");
	fb_clock_manual_advance(&m, 20 * MS);
	check_eq(fb_clock_now(&slow.base), 110 * MS,
	         "rate 0.5: 20ms of real time must read as 10ms");
	fb_clock_skewed_jump(&slow, 7 * (int64_t)MS);
	check_eq(fb_clock_now(&slow.base), 117 * MS, "a +7ms jump must show at once");
	fb_clock_skewed_jump(&slow, -200 * (int64_t)MS);
	check_eq(fb_clock_now(&slow.base), 0, "a jump below zero must read as 0, not wrap");

	fb_clock_skewed fast;
	fb_clock_skewed_init(&fast, &m.base, 2.0, 3 * (int64_t)MS);
	fb_clock_manual_advance(&m, 10 * MS);
	check_eq(fb_clock_now(&fast.base), 120 * MS + 20 * MS + 3 * MS,
	         "rate 2.0 with +3ms offset after 10ms of real time");
}

static void test_real_clocks_never_go_backwards(void **state)
{
	(void)state;
	const fb_clock *clocks[] = {fb_clock_monotonic(), fb_clock_fast()};
	for (size_t c = 0; c < 2; c++) {
		uint64_t prev = fb_clock_now(clocks[c]);
		for (int i = 0; i < 100000; i++) {
			uint64_t t = fb_clock_now(clocks[c]);
			check(t >= prev, "%s clock went backwards: %llu after %llu",
			      clocks[c]->name, (unsigned long long)t, (unsigned long long)prev);
			prev = t;
		}
	}
}

static void test_fast_clock_agrees_with_monotonic(void **state)
{
	(void)state;
	/* Both count nanoseconds since the same boot: a bracketed reading of
	 * the fast clock must fall between two monotonic readings, give or
	 * take the calibration error (well under 1ms). */
	const fb_clock *fast = fb_clock_fast(), *mono = fb_clock_monotonic();
	uint64_t a = fb_clock_now(mono), f = fb_clock_now(fast), b = fb_clock_now(mono);
	check(f + MS >= a && f <= b + MS,
	      "%s clock reads %llu, outside monotonic [%llu, %llu] by more than 1ms", fast->name,
	      (unsigned long long)f, (unsigned long long)a, (unsigned long long)b);
}

/* Issue 27, item 9: a clock behind on one core is found, by how much, and
 * a sound one is not (the witness's 50 us slack is far above what the
 * hand-off itself costs). Needs two CPUs; with one there is nothing to
 * compare. No sleeping: the cores hand readings back and forth. */
static void test_a_clock_behind_on_one_core_is_measured(void **state)
{
	(void)state;
	cpu_set_t set;
	check_eq(sched_getaffinity(0, sizeof set, &set), 0, "sched_getaffinity");
	if (CPU_COUNT(&set) < 2) {
		fprintf(stderr, "one CPU: skipped\n");
		return;
	}
	uint64_t sound = fb_clock_core_skew(fb_clock_fast(), 2000);
	check(sound < 50000, "the fast clock's cores agree within 50 us (%llu ns apart)",
	      (unsigned long long)sound);
	fb_clock_core_behind b;
	fb_clock_core_behind_init(&b, fb_clock_monotonic(), 2 * MS);
	uint64_t skew = fb_clock_core_skew(&b.base, 2000);
	check(skew >= 2 * MS - 100000 && skew <= 3 * MS,
	      "a core 2 ms behind is measured 2 ms behind (%llu ns)", (unsigned long long)skew);
	cpu_set_t after;
	sched_getaffinity(0, sizeof after, &after);
	check(CPU_EQUAL(&set, &after), "the caller's affinity is as it was");
}

/*
 * Made-up reads for the calibration: a 3 GHz TSC and a monotonic clock
 * that agree, except that the reader is preempted for `stall` cycles
 * between the monotonic read and the second TSC read on every try but
 * `tight` (-1: on every try).
 */
typedef struct scripted {
	uint64_t cycles; /* the TSC now */
	int reads, tight;
	uint64_t stall;
} scripted;

static uint64_t scripted_tsc(void *ctx)
{
	scripted *s = ctx;
	int read = s->reads++; /* 3 a try: TSC, monotonic, TSC */
	if (read % 3 == 2 && read / 3 != s->tight)
		s->cycles += s->stall;
	return s->cycles += 30; /* 10 ns between reads */
}

static uint64_t scripted_ns(void *ctx)
{
	scripted *s = ctx;
	s->reads++;
	return s->cycles / 3; /* 3 cycles a ns */
}

static void test_a_preempted_instant_is_not_paired(void **state)
{
	(void)state;
	for (int tight = 0; tight < 16; tight += 5) {
		scripted s = {.cycles = 3000000000u, .tight = tight, .stall = 30000000};
		fb_tsc_reads r = {scripted_tsc, scripted_ns, &s};
		uint64_t ns = 0, t = 0;
		check(fb_tsc_instant(&r, &ns, &t), "try %d was tight", tight);
		/* the tight try's instant: its monotonic read and the middle of
		 * its bracket, 10 ns apart at most on a 3 GHz clock */
		uint64_t as_ns = t / 3;
		check(as_ns + 20 >= ns && as_ns <= ns + 20,
		      "try %d: paired %llu ns with %llu cycles (%llu ns)", tight,
		      (unsigned long long)ns, (unsigned long long)t, (unsigned long long)as_ns);
	}
	scripted all = {.cycles = 3000000000u, .tight = -1, .stall = 30000000};
	fb_tsc_reads r = {scripted_tsc, scripted_ns, &all};
	uint64_t ns, t;
	check(!fb_tsc_instant(&r, &ns, &t), "every try preempted: no instant");
	scripted near = {.cycles = 3000000000u, .tight = -1, .stall = 19000};
	r.ctx = &near;
	check(fb_tsc_instant(&r, &ns, &t), "a bracket under 20,000 cycles is an instant");
}

static void test_a_rate_no_tsc_has_is_refused(void **state)
{
	(void)state;
	uint64_t mult = 0;
	const uint64_t ns0 = 1000000000, t0 = 5000000000, win = 10000000;
	check(fb_tsc_rate(ns0, t0, ns0 + win, t0 + 3 * win, &mult), "3 GHz");
	/* 3 cycles a ns: mult is 2^32 / 3 */
	check_eq(mult, (UINT64_C(1) << 32) / 3, "32.32 ns a cycle");
	check(fb_tsc_rate(ns0, t0, ns0 + win, t0 + win / 10, &mult), "0.1 GHz, the lowest");
	check(!fb_tsc_rate(ns0, t0, ns0 + win, t0 + win / 10 - 1, &mult), "below 0.1 GHz");
	check(fb_tsc_rate(ns0, t0, ns0 + win, t0 + 20 * win - 1, &mult), "just under 20 GHz");
	check(!fb_tsc_rate(ns0, t0, ns0 + win, t0 + 20 * win, &mult), "20 GHz");
	check(!fb_tsc_rate(ns0, t0, ns0 + win, t0, &mult), "a TSC that did not move");
	check(!fb_tsc_rate(ns0, t0, ns0, t0 + win, &mult), "a monotonic clock that did not");
	/* the bug this guards: the first instant's TSC read 15 ms after its
	 * monotonic one, in a 10 ms window: time ran backwards on the TSC */
	check(!fb_tsc_rate(ns0, t0 + 45000000, ns0 + win, t0 + 3 * win, &mult),
	      "a pairing 15 ms off");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_manual_clock_moves_only_when_told),
	        cmocka_unit_test(test_skewed_clock_runs_at_its_rate_and_jumps),
	        cmocka_unit_test(test_real_clocks_never_go_backwards),
	        cmocka_unit_test(test_fast_clock_agrees_with_monotonic),
	        cmocka_unit_test(test_a_clock_behind_on_one_core_is_measured),
	        cmocka_unit_test(test_a_preempted_instant_is_not_paired),
	        cmocka_unit_test(test_a_rate_no_tsc_has_is_refused),
	};
	return cmocka_run_group_tests_name("clock", tests, NULL, NULL);
}
