/*
 * libFuzzer: fb_parse_duration on any bytes, read as one NUL-terminated
 * string (an embedded NUL ends it, as it would end an argv word). A value
 * it accepts is above zero and at most a year, and fb_format_duration
 * prints it as a duration that parses back to within the printed
 * precision (four significant digits: half a unit in the fourth digit is
 * 1/2000 of the value; the bound allows twice that, plus the nanosecond
 * llround may add).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"

#define YEAR_NS (UINT64_C(365) * 24 * 3600 * 1000000000)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* exactly size + 1 bytes, so ASan sees any read past the NUL */
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	uint64_t ns = 0;
	if (fb_parse_duration(s, size & 1, &ns) == 0) {
		if (ns == 0 || ns > YEAR_NS)
			__builtin_trap();
		char text[64];
		uint64_t back = 0;
		fb_format_duration(text, sizeof text, ns);
		if (fb_parse_duration(text, false, &back) != 0)
			__builtin_trap();
		uint64_t diff = back > ns ? back - ns : ns - back;
		if (diff > ns / 1000 + 1)
			__builtin_trap();
	}
	free(s);
	return 0;
}
