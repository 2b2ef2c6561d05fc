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

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_manual_clock_moves_only_when_told),
	        cmocka_unit_test(test_skewed_clock_runs_at_its_rate_and_jumps),
	        cmocka_unit_test(test_real_clocks_never_go_backwards),
	        cmocka_unit_test(test_fast_clock_agrees_with_monotonic),
	        cmocka_unit_test(test_a_clock_behind_on_one_core_is_measured),
	};
	return cmocka_run_group_tests_name("clock", tests, NULL, NULL);
}
