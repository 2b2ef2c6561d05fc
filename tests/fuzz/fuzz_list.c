/*
 * libFuzzer: the one list splitter every command's lists go through
 * (fb_list_split). Each input, read as one NUL-terminated string in an
 * exact-size allocation (so ASan sees a read past the NUL), either splits
 * or is refused with a reason; what it splits into must join back to the
 * input exactly, with no element empty, none twice and each below the
 * bound.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	static char items[64][FB_LIST_ITEM];
	char why[200] = "";
	int n = -1;
	if (fb_list_split(s, items, 64, &n, why, sizeof why) == 0) {
		if (n < 1 || n > 64)
			__builtin_trap();
		char joined[64 * FB_LIST_ITEM + 64] = "";
		size_t at = 0;
		for (int i = 0; i < n; i++) {
			size_t k = strlen(items[i]);
			if (!k || k >= FB_LIST_ITEM || strchr(items[i], ','))
				__builtin_trap();
			for (int j = 0; j < i; j++)
				if (!strcmp(items[i], items[j]))
					__builtin_trap();
			if (i)
				joined[at++] = ',';
			memcpy(joined + at, items[i], k);
			at += k;
		}
		joined[at] = 0;
		if (strcmp(joined, s) != 0) /* nothing dropped, nothing invented */
			__builtin_trap();
	} else if (!why[0]) {
		__builtin_trap(); /* a refusal always says why */
	}
	free(s);
	return 0;
}
