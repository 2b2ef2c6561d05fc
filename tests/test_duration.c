/*
 * The one duration reader (bench/config/duration.c) in its two readings:
 * the options' (rounding, above zero, a bare number as seconds only where
 * allowed, exponents) and a scenario's (exact to the nanosecond, "0" and
 * zero with a unit accepted, no exponent, no "1."). Each case is an input
 * where the two readings part, or an edge of one: what each accepts, the
 * value, and the code of each refusal (the callers' messages hang on it).
 */
#include <string.h>

#include "duration.h"
#include "fbtest.h"
#include "scenario.h"

#define OPT   0u
#define BARE  FB_DURATION_BARE_SECONDS
#define EXACT (FB_DURATION_EXACT | FB_DURATION_ZERO_OK)

typedef struct dcase {
	const char *in;
	unsigned flags;
	int code; /* 0: accepted with value ns */
	uint64_t ns;
} dcase;

static void run_cases(const dcase *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t max =
		        c[i].flags & FB_DURATION_EXACT ? FB_SCENARIO_TIME_MAX : FB_DURATION_YEAR;
		uint64_t ns = 12345;
		int e = fb_duration_read(c[i].in, c[i].flags, max, &ns);
		check(e == c[i].code, "'%s' (flags %u): code %d, expected %d", c[i].in, c[i].flags,
		      e, c[i].code);
		if (!c[i].code)
			check(ns == c[i].ns, "'%s' (flags %u): %llu ns, expected %llu", c[i].in,
			      c[i].flags, (unsigned long long)ns, (unsigned long long)c[i].ns);
		else
			check(ns == 12345, "'%s' (flags %u): a refusal wrote the value", c[i].in,
			      c[i].flags);
	}
}

static void test_zero_is_a_time_for_a_scenario_and_no_duration_for_an_option(void **state)
{
	(void)state;
	static const dcase c[] = {
	        {"0", EXACT, 0, 0},
	        {"0s", EXACT, 0, 0},
	        {"0.0ms", EXACT, 0, 0},
	        {"00", EXACT, FB_DURATION_NO_UNIT, 0}, /* only "0" itself goes without a unit */
	        {"0", OPT, FB_DURATION_NO_UNIT, 0},
	        {"0", BARE, FB_DURATION_ZERO, 0},
	        {"0s", OPT, FB_DURATION_ZERO, 0},
	        {"0.4ns", OPT, FB_DURATION_ZERO, 0},   /* rounds to nothing */
	        {"0.5ns", OPT, 0, 1},                  /* rounds half away from zero */
	        {"1e-999s", OPT, FB_DURATION_ZERO, 0}, /* underflows to zero */
	};
	run_cases(c, sizeof c / sizeof c[0]);
}

static void
test_an_option_rounds_where_a_scenario_refuses_what_a_nanosecond_cannot_hold(void **state)
{
	(void)state;
	static const dcase c[] = {
	        {"1.5ns", OPT, 0, 2},
	        {"1.5ns", EXACT, FB_DURATION_INEXACT, 0},
	        {"1.4ns", OPT, 0, 1},
	        {"0.0000000015s", OPT, 0, 2},
	        {"1.000000001s", EXACT, 0, 1000000001},
	        {"1.0000000010s", EXACT, FB_DURATION_INEXACT, 0}, /* a tenth digit, even a 0 */
	        {"1.0000000010x", EXACT, FB_DURATION_INEXACT, 0}, /* before the unit is read */
	        {"1.000000s", EXACT, 0, 1000000000},
	        {"1.0000000ms", EXACT, FB_DURATION_INEXACT, 0}, /* written finer than 1 ns */
	        {"1.000000ms", EXACT, 0, 1000000},
	        {"1.000ms", EXACT, 0, 1000000},
	        {"2.5us", EXACT, 0, 2500},
	        {"0.3s", OPT, 0, 300000000},
	        {"0.3s", EXACT, 0, 300000000},
	};
	run_cases(c, sizeof c / sizeof c[0]);
}

static void test_an_option_takes_exponents_and_a_trailing_point_a_scenario_does_not(void **state)
{
	(void)state;
	static const dcase c[] = {
	        {"1e3ms", OPT, 0, 1000000000},
	        {"1e3ms", EXACT, FB_DURATION_MALFORMED, 0},
	        {"2.5e-3s", OPT, 0, 2500000},
	        {"1.e5ns", OPT, 0, 100000},
	        {"1.s", OPT, 0, 1000000000},
	        {"1.s", EXACT, FB_DURATION_MALFORMED, 0},
	        {"1.", OPT, FB_DURATION_NO_UNIT, 0},
	        {"1e", OPT, FB_DURATION_MALFORMED, 0},     /* "e" is no exponent and no unit */
	        {"1e400", BARE, FB_DURATION_MALFORMED, 0}, /* infinite */
	        {"1.2.3s", OPT, FB_DURATION_MALFORMED, 0},
	        {"1.2.3s", EXACT, FB_DURATION_MALFORMED, 0},
	        {".5s", OPT, FB_DURATION_MALFORMED, 0},
	        {".5s", EXACT, FB_DURATION_MALFORMED, 0},
	        {"-5s", OPT, FB_DURATION_MALFORMED, 0},
	        {"5d", EXACT, FB_DURATION_MALFORMED, 0},
	        {"", EXACT, FB_DURATION_MALFORMED, 0},
	        {"", BARE, FB_DURATION_MALFORMED, 0},
	};
	run_cases(c, sizeof c / sizeof c[0]);
}

static void test_a_bare_number_is_seconds_only_where_allowed(void **state)
{
	(void)state;
	static const dcase c[] = {
	        {"10", BARE, 0, 10000000000},
	        {"1.5", BARE, 0, 1500000000},
	        {"10", OPT, FB_DURATION_NO_UNIT, 0},
	        {"10", EXACT, FB_DURATION_NO_UNIT, 0},
	};
	run_cases(c, sizeof c / sizeof c[0]);
}

static void test_a_year_is_the_bound_and_long_numbers_do_not_overflow(void **state)
{
	(void)state;
	static const dcase c[] = {
	        {"8760h", OPT, 0, FB_DURATION_YEAR},
	        {"8760h", EXACT, 0, FB_SCENARIO_TIME_MAX},
	        {"8760.000000001h", EXACT, FB_DURATION_TOO_LARGE, 0},
	        {"0.0000000001h", EXACT, FB_DURATION_INEXACT, 0},
	        {"31536000.000000001s", EXACT, FB_DURATION_TOO_LARGE, 0},
	        {"31536000.000000001s", OPT, 0, FB_DURATION_YEAR}, /* rounds to a year */
	        {"8761h", OPT, FB_DURATION_TOO_LARGE, 0},
	        {"9999999999h", EXACT, FB_DURATION_TOO_LARGE, 0},
	        {"99999999999999999999999999ms", EXACT, FB_DURATION_TOO_LARGE, 0},
	        {"99999999999999999999999999ms", OPT, FB_DURATION_TOO_LARGE, 0},
	        /* the options' number is at most 63 characters (this one 64); a scenario's is not
	           bounded */
	        {"0000000000000000000000000000000000000000000000000000000000000001s", OPT,
	         FB_DURATION_MALFORMED, 0},
	        {"0000000000000000000000000000000000000000000000000000000000000001s", EXACT, 0,
	         1000000000},
	};
	run_cases(c, sizeof c / sizeof c[0]);
}

/* The options' wrapper is the rounding reading, bounded by a year. */
static void test_fb_parse_duration_is_the_options_reading(void **state)
{
	(void)state;
	uint64_t ns = 0;
	check_eq(fb_parse_duration("1.5ns", false, &ns), 0, "1.5ns rounds");
	check_eq(ns, 2, "1.5ns rounds to 2 ns");
	check_eq(fb_parse_duration("2", true, &ns), 0, "a bare 2 with bare seconds");
	check_eq(ns, 2000000000, "a bare 2 is 2 s");
	check_eq(fb_parse_duration("2", false, &ns), FB_DURATION_NO_UNIT, "a bare 2 without");
	check_eq(fb_parse_duration("0", true, &ns), FB_DURATION_ZERO, "0 is no duration");
	check_eq(fb_parse_duration("8761h", false, &ns), FB_DURATION_TOO_LARGE, "over a year");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_zero_is_a_time_for_a_scenario_and_no_duration_for_an_option),
	        cmocka_unit_test(
	                test_an_option_rounds_where_a_scenario_refuses_what_a_nanosecond_cannot_hold),
	        cmocka_unit_test(
	                test_an_option_takes_exponents_and_a_trailing_point_a_scenario_does_not),
	        cmocka_unit_test(test_a_bare_number_is_seconds_only_where_allowed),
	        cmocka_unit_test(test_a_year_is_the_bound_and_long_numbers_do_not_overflow),
	        cmocka_unit_test(test_fb_parse_duration_is_the_options_reading),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
