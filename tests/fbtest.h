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
			fb_test_fail_at(__FILE__, __LINE__, __VA_ARGS__);                          \
	} while (0)

/*
 * Fail the running test at file:line with the message. cmocka cuts a
 * message at 1 KB, which is where a quoted run's table ends and its
 * reason would begin: a longer one goes to stderr whole, after its first
 * line and the run's verdict lines (a verdict, a violation's example, an
 * error) picked out of it, so the reason comes first.
 */
void fb_test_fail_at(const char *file, int line, const char *fmt, ...)
        __attribute__((format(printf, 3, 4), noreturn));

/* check_eq(actual, expected, "what"): prints both values on failure. */
#define check_eq(actual, expected, what)                                                           \
	do {                                                                                       \
		long long a_ = (long long)(actual), e_ = (long long)(expected);                    \
		if (a_ != e_)                                                                      \
			fail_msg("%s: expected %lld, got %lld", (what), e_, a_);                   \
	} while (0)

#define MS (UINT64_C(1000000))

/*
 * Tell the runner (scripts/run-tests.sh, which names a file in $FB_SKIPS)
 * that n tests were skipped, why, and which Debian packages would run them
 * (NULL or "": nothing to install). It appends "N<TAB>PACKAGES<TAB>WHY";
 * without $FB_SKIPS it does nothing. The closing line of make test counts
 * these: a test that skips any other way is not counted.
 */
void fb_test_skipped(unsigned n, const char *packages, const char *why);

/* Skip the running test, counted: the only way a test here skips. */
#define fb_skip(packages, why)                                                                     \
	do {                                                                                       \
		fb_test_skipped(1, (packages), (why));                                             \
		skip();                                                                            \
	} while (0)

#endif
