/* Durations as the options read and print them (duration.h): in a file of
 * their own, so that a fuzzer of the parser links it alone. */
#include "duration.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fb_parse_duration(const char *s, bool bare_seconds, uint64_t *ns)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};
	const char *p = s;
	if (!(*p >= '0' && *p <= '9'))
		return FB_DURATION_MALFORMED;
	while ((*p >= '0' && *p <= '9') || *p == '.')
		p++;
	/* an exponent: 1e30, 2.5e-3 (not the "e" of no unit at all) */
	const char *x = p + (*p == 'e' || *p == 'E');
	x += x > p && (*x == '+' || *x == '-');
	if (x > p && *x >= '0' && *x <= '9')
		for (p = x; *p >= '0' && *p <= '9'; p++)
			;
	char num[64];
	size_t n = (size_t)(p - s);
	if (n >= sizeof num)
		return FB_DURATION_MALFORMED;
	memcpy(num, s, n);
	num[n] = 0;
	char *end;
	double v = strtod(num, &end);
	if (*end || !isfinite(v))
		return FB_DURATION_MALFORMED;
	double unit = 0;
	if (!*p) {
		if (!bare_seconds)
			return FB_DURATION_NO_UNIT;
		unit = 1e9;
	}
	for (size_t i = 0; !unit && i < sizeof units / sizeof units[0]; i++)
		if (!strcmp(p, units[i].unit))
			unit = units[i].ns;
	if (!unit)
		return FB_DURATION_MALFORMED;
	double t = v * unit;
	if (t < 0.5)
		return FB_DURATION_ZERO;
	if (t > 365 * 24 * 3600e9) /* a year is more than any run needs, far below 2^64 ns */
		return FB_DURATION_TOO_LARGE;
	*ns = (uint64_t)llround(t);
	return 0;
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
