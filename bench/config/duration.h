/*
 * Durations as every option and a scenario's timeline read them (a number
 * and a unit; for an option a bare number as seconds where allowed,
 * rounded to the nanosecond; for a scenario "0" too, exact) and as the
 * report prints them. Its own module: options.h includes it, and
 * fuzz_duration links it alone.
 */
#ifndef FB_DURATION_H
#define FB_DURATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Read a duration: a number and a unit ns, us, ms, s, m, h, at most
 * max_ns. 0 on success, or one of these. */
#define FB_DURATION_MALFORMED -1
#define FB_DURATION_NO_UNIT   -2
#define FB_DURATION_ZERO      -3 /* below half a nanosecond (exact: zero) */
#define FB_DURATION_TOO_LARGE -4 /* over max_ns */
#define FB_DURATION_INEXACT   -5 /* finer than a nanosecond (exact only) */
/* How: */
#define FB_DURATION_BARE_SECONDS 1u /* a bare number is seconds (--duration) */
#define FB_DURATION_EXACT        2u /* no rounding, no exponent, no "1.": a scenario's times */
#define FB_DURATION_ZERO_OK      4u /* "0", and zero with a unit, are durations */
#define FB_DURATION_YEAR         (UINT64_C(365) * 24 * 3600 * 1000000000) /* the options' bound */
int fb_duration_read(const char *s, unsigned flags, uint64_t max_ns, uint64_t *ns);

/* The options' reading: rounding, above zero, at most a year; a bare
 * number is seconds where bare_seconds allows it, else refused. */
int fb_parse_duration(const char *s, bool bare_seconds, uint64_t *ns);

/* What a duration error says, for "--opt: 'VALUE' ..." */
const char *fb_duration_error(int code, bool bare_seconds);

/* Print a duration compactly: 10ms, 1.5s, 250us. */
void fb_format_duration(char *buf, size_t len, uint64_t ns);

#endif
