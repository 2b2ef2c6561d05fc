/*
 * Clocks. Every time read in fencebench goes through an fb_clock: the real
 * monotonic clock, a manual clock that tests set and advance, and a skewed
 * wrapper (rate and offset) for the clock faults. Nothing else calls
 * clock_gettime(), time() or rdtsc.
 *
 * Times are nanoseconds on the clock's own axis; only differences and
 * comparisons between readings of one clock mean anything.
 */
#ifndef FB_CLOCK_H
#define FB_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"

typedef struct fb_clock fb_clock;

struct fb_clock {
	const char *name;
	uint64_t (*now)(const fb_clock *c);
};

static inline uint64_t fb_clock_now(const fb_clock *c)
{
	return c->now(c);
}

/* clock_gettime(CLOCK_MONOTONIC): about 23 ns a read on this machine. */
const fb_clock *fb_clock_monotonic(void);

/* clock_gettime(CLOCK_REALTIME): the wall clock, which can jump. Exists
 * for the ablation the Redis documentation warns about, never the default. */
const fb_clock *fb_clock_realtime(void);

/*
 * The hot-path clock: the invariant TSC scaled to nanoseconds (about 10 ns a
 * read here) when the CPU has one and the kernel itself trusts it as its
 * clocksource; otherwise the monotonic clock. Calibrated once, on first use,
 * against CLOCK_MONOTONIC over about 10 ms.
 */
const fb_clock *fb_clock_fast(void);

/* The fast clock's calibration, in pieces its tests drive with made-up
 * reads. fb_tsc_instant: one instant on both clocks, a monotonic read
 * bracketed by two TSC reads, the tightest of 16 tries; false when none
 * came within 20,000 cycles (a preempted thread pairs instants far apart).
 * fb_tsc_rate: mult (ns a cycle, 32.32 fixed point) from two instants;
 * false for a rate no TSC has (outside 0.1-20 GHz) or time not moving. */
typedef struct fb_tsc_reads {
	uint64_t (*tsc)(void *ctx);
	uint64_t (*ns)(void *ctx);
	void *ctx;
} fb_tsc_reads;
bool fb_tsc_instant(const fb_tsc_reads *r, uint64_t *ns, uint64_t *t);
bool fb_tsc_rate(uint64_t ns0, uint64_t t0, uint64_t ns1, uint64_t t1, uint64_t *mult);

/*
 * How far behind one core's readings of c can be another's (issue 27): a
 * thread pinned to the first CPU this process may use and one pinned to
 * each other CPU in turn hand a reading back and forth `rounds` times; a
 * reading taken after seeing the other core's, yet lower, shows this core
 * behind by at least the difference. The most seen, in ns (0: one CPU, or
 * the cores agree). Gives up a pair after 1 s of the monotonic clock (a
 * busy machine preempts the waiters): a bound from fewer rounds (one is
 * enough to see a core that lags throughout).
 */
uint64_t fb_clock_core_skew(const fb_clock *c, int rounds);

/* A clock that reads `behind` ns behind `inner` on one CPU (the second this
 * process may use) and as inner everywhere else: a core whose clock lags,
 * for the tests and the planted slow-core bug. */
typedef struct fb_clock_core_behind {
	fb_clock base;
	const fb_clock *inner;
	int cpu; /* -1: one CPU only, never behind */
	uint64_t behind;
} fb_clock_core_behind;

void fb_clock_core_behind_init(fb_clock_core_behind *c, const fb_clock *inner, uint64_t behind);

/* A clock that moves only when told to. Safe to read and move from any
 * thread (readers see a value some mover stored). */
typedef struct fb_clock_manual {
	fb_clock base;
	_Atomic uint64_t t;
} fb_clock_manual;

void fb_clock_manual_init(fb_clock_manual *c, uint64_t start_ns);
void fb_clock_manual_set(fb_clock_manual *c, uint64_t t_ns);
void fb_clock_manual_advance(fb_clock_manual *c, uint64_t d_ns);

/*
 * inner, seen through a rate error and an offset:
 *   now = origin + (inner_now - origin) * rate + offset
 * where origin is inner's time at init. rate < 1 runs slow (the holder thinks
 * less time has passed, so it believes a dead lease is live); offset can be
 * jumped at any moment from any thread. A reading below 0 reads as 0.
 */
typedef struct fb_clock_skewed {
	fb_clock base;
	const fb_clock *inner;
	uint64_t origin;
	double rate;
	_Atomic int64_t offset;
} fb_clock_skewed;

void fb_clock_skewed_init(fb_clock_skewed *c, const fb_clock *inner, double rate,
                          int64_t offset_ns);
void fb_clock_skewed_jump(fb_clock_skewed *c, int64_t delta_ns);

/* Block the calling thread for ns of real time. Async-signal-safe. */
void fb_sleep_ns(uint64_t ns);

/*
 * The same, unless *stop is (or becomes) non-zero: then it returns at once,
 * false (cut short); true when the whole time was slept. A run's every
 * sleep goes through it, so the run ends on time whatever its TTL, pauses
 * and work say: the stopper sets *stop and calls fb_sleep_wake. A futex on
 * the word itself; async-signal-safe (the pause handler sleeps with it).
 */
bool fb_sleep_unless(_Atomic int *stop, uint64_t ns);
void fb_sleep_wake(_Atomic int *stop);

/* UTC wall time as "YYYYmmdd-HHMMSS" (names results) and as ISO 8601
 * "YYYY-mm-ddTHH:MM:SSZ" (recorded in them). */
void fb_clock_wall_stamp(char *compact, size_t compact_len, char *iso, size_t iso_len);

#endif
