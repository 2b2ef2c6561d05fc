/* cmocka with a message on every assertion: what was expected and why. */
#ifndef FB_TEST_H
#define FB_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
/* cmocka.h needs the three headers above first. */
#include <cmocka.h>

#define check(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			fail_msg(__VA_ARGS__);                                                     \
	} while (0)

/* check_eq(actual, expected, "what"): prints both values on failure. */
#define check_eq(actual, expected, what)                                                           \
	do {                                                                                       \
		long long a_ = (long long)(actual), e_ = (long long)(expected);                    \
		if (a_ != e_)                                                                      \
			fail_msg("%s: expected %lld, got %lld", (what), e_, a_);                   \
	} while (0)

#define MS (UINT64_C(1000000))

#endif
