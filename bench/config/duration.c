/* Durations as the options and the scenario read them and the report
 * prints them (duration.h): in a file of their own, so that a fuzzer of
 * either parser links it alone. */
#include "duration.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * One grammar for both readers: digits, an optional fraction, then a unit.
 * The options (rounding) also take "1." and an exponent (1e3ms, 2.5e-3s),
 * read the number with strtod and round to the nearest nanosecond; the
 * scenario (exact) reads it digit by digit and refuses what a nanosecond
 * cannot hold, so a timeline's instants are exactly what was written.
 * The order of the checks is each reader's own and part of its contract:
 * an exact reader refuses a tenth fraction digit as finer than a
 * nanosecond before it looks at the unit.
 */
int fb_duration_read(const char *s, unsigned flags, uint64_t max_ns, uint64_t *ns)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = {{"ns", 1},
	             {"us", 1000},
	             {"ms", 1000000},
	             {"s", 1000000000},
	             {"m", UINT64_C(60000000000)},
	             {"h", UINT64_C(3600000000000)}};
	const bool exact = flags & FB_DURATION_EXACT;
	if ((flags & FB_DURATION_ZERO_OK) && !strcmp(s, "0")) {
		*ns = 0;
		return 0;
	}
	const char *p = s;
	if (!is_digit(*p))
		return FB_DURATION_MALFORMED;
	/* the exact reader's integer part, saturating at the bound */
	uint64_t ip = 0, frac = 0, pw = 1;
	bool over = false;
	for (; is_digit(*p); p++) {
		if (ip > max_ns)
			over = true;
		else
			ip = ip * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		const char *f = ++p;
		for (; is_digit(*p); p++) {
			if (exact && p - f >= 9)
				return FB_DURATION_INEXACT;
			frac = frac * 10 + (uint64_t)(*p - '0');
			pw *= 10;
		}
		if (exact && p == f)
			return FB_DURATION_MALFORMED;
	}
	/* an exponent: 1e30, 2.5e-3 (not the "e" of no unit at all) */
	const char *x = p + (!exact && (*p == 'e' || *p == 'E'));
	x += x > p && (*x == '+' || *x == '-');
	if (x > p && is_digit(*x))
		for (p = x; is_digit(*p); p++)
			;
	double v = 0;
	if (!exact) {
		char num[64];
		size_t n = (size_t)(p - s);
		if (n >= sizeof num)
			return FB_DURATION_MALFORMED;
		memcpy(num, s, n);
		num[n] = 0;
		char *end;
		v = strtod(num, &end);
		if (*end || !isfinite(v))
			return FB_DURATION_MALFORMED;
	}
	uint64_t unit = 0;
	if (!*p) {
		if (!(flags & FB_DURATION_BARE_SECONDS))
			return FB_DURATION_NO_UNIT;
		unit = 1000000000;
	}
	for (size_t i = 0; !unit && i < sizeof units / sizeof units[0]; i++)
		if (!strcmp(p, units[i].unit))
			unit = units[i].ns;
	if (!unit)
		return FB_DURATION_MALFORMED;
	if (exact) {
		if (unit % pw)
			return FB_DURATION_INEXACT;
		if (over || ip > max_ns / unit)
			return FB_DURATION_TOO_LARGE;
		uint64_t t = ip * unit + frac * (unit / pw);
		if (t > max_ns)
			return FB_DURATION_TOO_LARGE;
		if (!t && !(flags & FB_DURATION_ZERO_OK))
			return FB_DURATION_ZERO;
		*ns = t;
		return 0;
	}
	double t = v * (double)unit;
	if (t < 0.5 && !(flags & FB_DURATION_ZERO_OK))
		return FB_DURATION_ZERO;
	if (t > (double)max_ns)
		return FB_DURATION_TOO_LARGE;
	*ns = (uint64_t)llround(t);
	return 0;
}

int fb_parse_duration(const char *s, bool bare_seconds, uint64_t *ns)
{
	return fb_duration_read(s, bare_seconds ? FB_DURATION_BARE_SECONDS : 0, FB_DURATION_YEAR,
	                        ns);
}

const char *fb_duration_error(int code, bool bare_seconds)
{
	switch (code) {
	case FB_DURATION_NO_UNIT:
		return "has no unit (units: ns us ms s m h; a bare number means seconds for "
		       "--duration only)";
	case FB_DURATION_ZERO:
		return "is not a duration above zero";
	case FB_DURATION_TOO_LARGE:
		return "is too large (a year at most)";
	default:
		return bare_seconds
		               ? "is not a duration (e.g. 250ms, 10s, 5m; units ns us ms s m h; "
		                 "a bare number is seconds)"
		               : "is not a duration (e.g. 250ms, 10s, 5m; units ns us ms s m h)";
	}
}

void fb_format_duration(char *buf, size_t len, uint64_t ns)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = {{"h", 3600000000000u},
	             {"m", 60000000000u},
	             {"s", 1000000000u},
	             {"ms", 1000000u},
	             {"us", 1000u}};
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (ns >= units[i].ns || i + 1 == sizeof units / sizeof units[0]) {
			snprintf(buf, len, "%.4g%s", (double)ns / (double)units[i].ns,
			         units[i].unit);
			return;
		}
	}
}
