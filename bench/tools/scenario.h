/*
 * Scenarios: `fencebench scenario NAME|FILE`, a scripted timeline on a
 * manual clock. One lease table and three stores side by side (fenced,
 * write-fenced, unfenced); every store action goes to all three with the
 * same lease and fence, so the columns differ by the storage check alone.
 *
 * The parser (scenario_parse.c) turns text into steps and does no I/O: it
 * takes any bytes and either returns a scenario or one message
 * "NAME:LINE:COL: what is wrong", so a fuzzer can drive it directly. The
 * runner (scenario.c) executes the steps through the public APIs of
 * core/ only, printing the timeline and a verdict per store.
 */
#ifndef FB_SCENARIO_H
#define FB_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "lease.h"
#include "store.h"

/* Bounds, so that no input can make the parser or the runner overflow. */
#define FB_SCENARIO_LINE_MAX    255  /* bytes on one line, newline excluded */
#define FB_SCENARIO_WORDS_MAX   24   /* words on one line */
#define FB_SCENARIO_STEPS_MAX   4096 /* statements in one scenario */
#define FB_SCENARIO_CLIENTS_MAX 16
#define FB_SCENARIO_KEYS_MAX    16
#define FB_SCENARIO_NAME_MAX    23 /* characters in a client or key name */
/* Balances, written values and debit amounts: |v| <= 10^12, so sums over
 * every statement stay far inside int64_t. */
#define FB_SCENARIO_VALUE_MAX INT64_C(1000000000000)
/* Times and durations: at most a year (2^63 ns is 292 years). */
#define FB_SCENARIO_TIME_MAX (UINT64_C(365) * 24 * 3600 * 1000000000)

typedef enum fb_scenario_op {
	/* the clock */
	FB_SCENARIO_AT,      /* ns: set the clock (never backwards) */
	FB_SCENARIO_ADVANCE, /* ns: move it forward */
	FB_SCENARIO_PAUSE,   /* client sleeps ns: the clock moves forward */
	/* the lease table */
	FB_SCENARIO_ACQUIRE,
	FB_SCENARIO_IS_HELD,
	FB_SCENARIO_RENEW,
	FB_SCENARIO_RELEASE,
	/* the three stores */
	FB_SCENARIO_READ,
	FB_SCENARIO_WRITE,
	FB_SCENARIO_DEBIT,
	/* expectations */
	FB_SCENARIO_EXPECT_FENCE,      /* client's fence (for key, if has_key) == value */
	FB_SCENARIO_EXPECT_RESULT,     /* the outcome of the previous action (`of`) */
	FB_SCENARIO_EXPECT_BALANCE,    /* per store, for key */
	FB_SCENARIO_EXPECT_LAST_FENCE, /* per store: fence of the last accepted write */
	FB_SCENARIO_EXPECT_HIGHEST,    /* per store: highest fence seen */
	FB_SCENARIO_EXPECT_VERDICT,    /* per store: safe, lost, corrupted so far */
} fb_scenario_op;

/* How a write names its value. */
typedef enum fb_scenario_value {
	FB_SCENARIO_VALUE,     /* the number in `value` */
	FB_SCENARIO_FROM_READ, /* the client's last read of the key in that store, plus `value` */
} fb_scenario_value;

/* What an expectation wants of one store (or of the lease table). */
typedef enum fb_scenario_want {
	FB_SCENARIO_ANY = 0, /* nothing expected of this store */
	FB_SCENARIO_OK,      /* acquire/renew/release succeeded, is-held said yes, read served */
	FB_SCENARIO_NOT_OK,  /* ... refused, said no, read refused */
	FB_SCENARIO_ACCEPTED,
	FB_SCENARIO_REJECTED,
	FB_SCENARIO_SKIPPED, /* a write from a read the store had refused */
	FB_SCENARIO_NUMBER,  /* the value in want_value */
	FB_SCENARIO_SAFE,
	FB_SCENARIO_LOST,
	FB_SCENARIO_CORRUPTED,
} fb_scenario_want;

typedef struct fb_scenario_step {
	fb_scenario_op op;
	uint32_t line, col; /* where it was written (col of its first word) */
	uint8_t client;     /* index into clients[] */
	uint8_t key;        /* index into keys[] */
	bool has_key;       /* EXPECT_FENCE: a key was named */
	bool has_token;     /* READ, WRITE, DEBIT: "fence N" overrides the lease's */
	uint64_t token;
	uint64_t ns;              /* AT, ADVANCE, PAUSE */
	fb_scenario_value source; /* WRITE */
	int64_t value;            /* WRITE: the value or the offset; DEBIT: the amount;
	                             EXPECT_FENCE: the fence */
	fb_scenario_op of;        /* EXPECT_RESULT: the verb it checks */
	uint32_t of_step;         /* EXPECT_RESULT: the index of the action it checks */
	/* EXPECT_RESULT of acquire, is-held, renew, release: want[0] alone;
	 * the other expectations: one per store, by fb_discipline. */
	fb_scenario_want want[FB_DISCIPLINES];
	int64_t want_value[FB_DISCIPLINES];
} fb_scenario_step;

typedef struct fb_scenario {
	char *name; /* as given to the parser: a file name or a built-in's name */
	/* settings */
	uint64_t ttl_ns;
	uint64_t first_fence;
	int64_t balance;
	fb_fence_source source;
	/* names, in order of first appearance; client i is lease owner i + 1 */
	uint32_t nclients, nkeys;
	char clients[FB_SCENARIO_CLIENTS_MAX][FB_SCENARIO_NAME_MAX + 1];
	char keys[FB_SCENARIO_KEYS_MAX][FB_SCENARIO_NAME_MAX + 1];
	fb_scenario_step *steps;
	size_t nsteps, cap;
} fb_scenario;

/*
 * Parse len bytes of text (any bytes; no terminating NUL needed) into a new
 * scenario. name (NULL: "scenario") prefixes messages. On FB_EINVAL err
 * holds one line "NAME:LINE:COL: what is wrong" and *out is NULL; on
 * FB_ENOMEM err says so. Never reads past len, never leaks.
 */
fb_err fb_scenario_parse(const char *text, size_t len, const char *name, fb_scenario **out,
                         char *err, size_t errlen);
void fb_scenario_free(fb_scenario *s);

/* A step as a statement of the format, normalized ("debit acct 10 fence
 * 40"); the client's name is not included for client actions. */
void fb_scenario_step_format(const fb_scenario *s, const fb_scenario_step *st, char *buf,
                             size_t len);

/* Durations as the format writes them: the largest unit that divides
 * exactly (31ms, 1500us, 90s, 0). */
void fb_scenario_format_ns(char *buf, size_t len, uint64_t ns);

/*
 * Run the scenario on a fresh manual clock, lease table and three stores:
 * the timeline and the verdicts go to out, one line per failed expectation
 * or runtime error to err. Returns the exit code: 0 every expectation held,
 * 1 one failed (or a fenced discipline was not safe), 2 the script asked
 * for something impossible (a store action by a client that holds no
 * fence), 3 resources could not be had.
 */
int fb_scenario_run(const fb_scenario *s, FILE *out, FILE *err);

/* A built-in scenario: its text is in the format, like any file. */
typedef struct fb_scenario_builtin {
	const char *name;
	const char *summary;
	const char *text;
} fb_scenario_builtin;

/* The built-ins, NULL-name terminated. */
extern const fb_scenario_builtin fb_scenario_builtins[];

/* `fencebench scenario NAME|FILE | --list | --show NAME | --help` */
/* An expectation's word for `w` about an operation `of` ("ok", "refused",
 * "yes", "accepted"...); "?" for a number, which has no word. */
const char *fb_scenario_want_word(fb_scenario_op of, fb_scenario_want w);

/* Append printf-formatted text to buf at *at, never past len. */
__attribute__((format(printf, 4, 5))) void fb_scenario_append(char *buf, size_t len, size_t *at,
                                                              const char *fmt, ...);

int fb_scenario_main(int argc, char **argv);

#endif
