#define _GNU_SOURCE
#include "clock.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * One instant on both clocks: a monotonic read bracketed by two TSC reads,
 * the tightest bracket of a few tries. A thread preempted between the two
 * clocks' reads (a loaded machine, a sanitizer's slow calls) would
 * otherwise pair a monotonic instant with a TSC count milliseconds later,
 * and the rate calibrated from it be off by as much: a run timed on it
 * lasted 7 times its -d under TSan at load 15. False when no try came
 * within BRACKET_MAX cycles (the TSC is then not used).
 */
#define BRACKET_TRIES 16
#define BRACKET_MAX   UINT64_C(20000) /* cycles: microseconds; 0.1% of the 10 ms window */

bool fb_tsc_instant(const fb_tsc_reads *r, uint64_t *ns, uint64_t *t)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < BRACKET_TRIES; i++) {
		uint64_t a = r->tsc(r->ctx);
		uint64_t n = r->ns(r->ctx);
		uint64_t b = r->tsc(r->ctx);
		if (b > a && b - a < best) {
			best = b - a;
			*ns = n;
			*t = a + (b - a) / 2;
		}
	}
	return best <= BRACKET_MAX;
}

bool fb_tsc_rate(uint64_t ns0, uint64_t t0, uint64_t ns1, uint64_t t1, uint64_t *mult)
{
	/* a rate no TSC has (outside 0.1-20 GHz): not trusted */
	if (ns1 <= ns0 || t1 <= t0 || (t1 - t0) / (ns1 - ns0) >= 20 || (t1 - t0) * 10 < ns1 - ns0)
		return false;
	*mult = (uint64_t)(((unsigned __int128)(ns1 - ns0) << 32) / (t1 - t0));
	return true;
}

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

static uint64_t timespec_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * UINT64_C(1000000000) + (uint64_t)ts->tv_nsec;
}

static uint64_t posix_now(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return timespec_ns(&ts);
}

static uint64_t monotonic_now(const fb_clock *c)
{
	(void)c;
	return posix_now(CLOCK_MONOTONIC);
}

static uint64_t realtime_now(const fb_clock *c)
{
	(void)c;
	return posix_now(CLOCK_REALTIME);
}

static const fb_clock monotonic_clock = {"monotonic", monotonic_now};
static const fb_clock realtime_clock = {"realtime", realtime_now};

const fb_clock *fb_clock_monotonic(void)
{
	return &monotonic_clock;
}

const fb_clock *fb_clock_realtime(void)
{
	return &realtime_clock;
}

/*
 * TSC clock. ns = base_ns + (tsc - base_tsc) * mult >> 32. The parameters
 * are written once under pthread_once and only read afterwards, so plain
 * fields are fine: pthread_once orders the writes before every reader.
 */
static struct {
	uint64_t base_tsc;
	uint64_t base_ns;
	uint64_t mult; /* ns per tick, 32.32 fixed point */
	const fb_clock *chosen;
} tsc;

#if defined(__x86_64__)
static uint64_t tsc_now(const fb_clock *c)
{
	(void)c;
	uint64_t d = __rdtsc() - tsc.base_tsc;
	return tsc.base_ns + (uint64_t)(((unsigned __int128)d * tsc.mult) >> 32);
}

static const fb_clock tsc_clock = {"tsc", tsc_now};

/* Invariant TSC (CPUID 0x80000007 EDX bit 8) and the kernel's own choice of
 * it as clocksource, which it makes only after checking the cores agree. */
static int tsc_trustworthy(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000007, &a, &b, &c, &d) || !(d & (1u << 8)))
		return 0;
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
	if (!f)
		return 0;
	char name[32] = "";
	int ok = fgets(name, sizeof name, f) && strncmp(name, "tsc", 3) == 0;
	fclose(f);
	return ok;
}

static uint64_t read_tsc(void *ctx)
{
	(void)ctx;
	return __rdtsc();
}

static uint64_t read_monotonic(void *ctx)
{
	(void)ctx;
	return posix_now(CLOCK_MONOTONIC);
}

static void tsc_calibrate(void)
{
	tsc.chosen = &monotonic_clock;
	if (!tsc_trustworthy())
		return;
	const fb_tsc_reads reads = {read_tsc, read_monotonic, NULL};
	uint64_t ns0, t0, ns1, t1;
	if (!fb_tsc_instant(&reads, &ns0, &t0))
		return;
	do {
		if (!fb_tsc_instant(&reads, &ns1, &t1))
			return;
	} while (ns1 - ns0 < 10000000);
	if (!fb_tsc_rate(ns0, t0, ns1, t1, &tsc.mult))
		return;
	tsc.base_tsc = t1;
	tsc.base_ns = ns1;
	tsc.chosen = &tsc_clock;
}
#else
static void tsc_calibrate(void)
{
	tsc.chosen = &monotonic_clock;
}
#endif

/* The two sides of one CPU pair's hand-offs. */
typedef struct skew_pair {
	const fb_clock *c;
	int rounds, cpu[2];
	/* seq_cst: a reading is taken after the hand-off it follows is seen */
	_Atomic uint64_t reading;
	_Atomic int turn, given_up;
	uint64_t behind[2]; /* each side's worst, written by that side */
	uint64_t deadline;  /* on the monotonic clock */
} skew_pair;

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void skew_side(skew_pair *p, int me)
{
	pin(p->cpu[me]);
	for (int r = 0; r < p->rounds; r++) {
		unsigned spins = 0;
		while (atomic_load(&p->turn) != me) {
			if (atomic_load(&p->given_up))
				return;
			fb_cpu_relax();
			if (++spins % 4096 == 0 && posix_now(CLOCK_MONOTONIC) > p->deadline) {
				atomic_store(&p->given_up, 1);
				return;
			}
		}
		uint64_t theirs = atomic_load(&p->reading), mine = fb_clock_now(p->c);
		if (theirs > mine && theirs - mine > p->behind[me])
			p->behind[me] = theirs - mine;
		atomic_store(&p->reading, fb_clock_now(p->c));
		atomic_store(&p->turn, !me);
	}
}

static void *skew_other(void *arg)
{
	skew_side(arg, 1);
	return NULL;
}

uint64_t fb_clock_core_skew(const fb_clock *c, int rounds)
{
	cpu_set_t mine;
	if (sched_getaffinity(0, sizeof mine, &mine))
		return 0;
	int first = -1;
	uint64_t worst = 0;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &mine))
			continue;
		if (first < 0) {
			first = cpu;
			continue;
		}
		skew_pair p = {.c = c, .rounds = rounds, .cpu = {first, cpu}};
		atomic_init(&p.reading, 0);
		atomic_init(&p.turn, 0);
		atomic_init(&p.given_up, 0);
		p.deadline = posix_now(CLOCK_MONOTONIC) + 1000000000;
		pthread_t th;
		if (pthread_create(&th, NULL, skew_other, &p))
			break;
		skew_side(&p, 0);
		atomic_store(&p.given_up, 1); /* done: the other side's last wait ends */
		pthread_join(th, NULL);
		for (int s = 0; s < 2; s++)
			if (p.behind[s] > worst)
				worst = p.behind[s];
	}
	/* the caller's own affinity, as it was */
	pthread_setaffinity_np(pthread_self(), sizeof mine, &mine);
	return worst;
}

static uint64_t core_behind_now(const fb_clock *c)
{
	const fb_clock_core_behind *b = (const fb_clock_core_behind *)c;
	uint64_t t = fb_clock_now(b->inner);
	return b->cpu >= 0 && sched_getcpu() == b->cpu && t > b->behind ? t - b->behind : t;
}

void fb_clock_core_behind_init(fb_clock_core_behind *c, const fb_clock *inner, uint64_t behind)
{
	c->base = (fb_clock){"core-behind", core_behind_now};
	c->inner = inner;
	c->behind = behind;
	c->cpu = -1;
	cpu_set_t set;
	int seen = 0;
	if (sched_getaffinity(0, sizeof set, &set))
		return;
	for (int cpu = 0; cpu < CPU_SETSIZE && c->cpu < 0; cpu++)
		if (CPU_ISSET(cpu, &set) && seen++ == 1)
			c->cpu = cpu;
}

const fb_clock *fb_clock_fast(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, tsc_calibrate);
	return tsc.chosen;
}

static uint64_t manual_now(const fb_clock *c)
{
	const fb_clock_manual *m = (const fb_clock_manual *)c;
	/* relaxed: a test that moves the clock and then signals another thread
	 * publishes the move through that signal's own synchronization. */
	return atomic_load_explicit(&((fb_clock_manual *)m)->t, memory_order_relaxed);
}

void fb_clock_manual_init(fb_clock_manual *c, uint64_t start_ns)
{
	c->base.name = "manual";
	c->base.now = manual_now;
	atomic_init(&c->t, start_ns);
}

void fb_clock_manual_set(fb_clock_manual *c, uint64_t t_ns)
{
	atomic_store_explicit(&c->t, t_ns, memory_order_relaxed);
}

void fb_clock_manual_advance(fb_clock_manual *c, uint64_t d_ns)
{
	atomic_fetch_add_explicit(&c->t, d_ns, memory_order_relaxed);
}

static uint64_t skewed_now(const fb_clock *c)
{
	fb_clock_skewed *s = (fb_clock_skewed *)c;
	uint64_t in = fb_clock_now(s->inner);
	double el = (double)(int64_t)(in - s->origin) * s->rate;
	int64_t off = atomic_load_explicit(&s->offset, memory_order_relaxed);
	double t = (double)s->origin + el + (double)off;
	return t <= 0 ? 0 : (uint64_t)t;
}

void fb_clock_skewed_init(fb_clock_skewed *c, const fb_clock *inner, double rate, int64_t offset_ns)
{
	c->base.name = "skewed";
	c->base.now = skewed_now;
	c->inner = inner;
	c->origin = fb_clock_now(inner);
	c->rate = rate;
	atomic_init(&c->offset, offset_ns);
}

void fb_clock_skewed_jump(fb_clock_skewed *c, int64_t delta_ns)
{
	atomic_fetch_add_explicit(&c->offset, delta_ns, memory_order_relaxed);
}

void fb_sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

bool fb_sleep_unless(_Atomic int *stop, uint64_t ns)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	uint64_t start = (uint64_t)t0.tv_sec * 1000000000u + (uint64_t)t0.tv_nsec;
	for (;;) {
		if (atomic_load_explicit(stop, memory_order_acquire))
			return false;
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		uint64_t t = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
		if (t - start >= ns)
			return true;
		uint64_t left = ns - (t - start);
		struct timespec ts = {(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
		/* EAGAIN (stop moved), EINTR, ETIMEDOUT: look again */
		syscall(SYS_futex, (int *)stop, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
	}
}

void fb_sleep_wake(_Atomic int *stop)
{
	syscall(SYS_futex, (int *)stop, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

void fb_clock_wall_stamp(char *compact, size_t compact_len, char *iso, size_t iso_len)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	if (compact)
		strftime(compact, compact_len, "%Y%m%d-%H%M%S", &tm);
	if (iso)
		strftime(iso, iso_len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}
