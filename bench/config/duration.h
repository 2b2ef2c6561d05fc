/*
 * Durations as every option reads them (a number and a unit, a bare
 * number as seconds where allowed) and as the report prints them. Its own
 * module: options.h includes it, and fuzz_duration links it alone.
 */
#ifndef FB_DURATION_H
#define FB_DURATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Parse a duration: a number and a unit ns, us, ms, s, m, h; a bare number
 * is seconds where bare_seconds allows it (--duration), else refused. 0 on
 * success, or one of these. */
#define FB_DURATION_MALFORMED -1
#define FB_DURATION_NO_UNIT   -2
#define FB_DURATION_ZERO      -3 /* below half a nanosecond */
#define FB_DURATION_TOO_LARGE -4 /* over a year */
int fb_parse_duration(const char *s, bool bare_seconds, uint64_t *ns);

/* What a duration error says, for "--opt: 'VALUE' ..." */
const char *fb_duration_error(int code, bool bare_seconds);

/* Print a duration compactly: 10ms, 1.5s, 250us. */
void fb_format_duration(char *buf, size_t len, uint64_t ns);

#endif
