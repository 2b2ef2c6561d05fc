#define _GNU_SOURCE
#include "feed.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* A pass over this many logs with records or fewer takes them merged in
 * the order of their writes (merge()); over more, a log at a time. Where
 * many logs are written at once, the merge's runs shrink to a record, and
 * its heap costs more than the parking it saves: fencebench floor's
 * consumer, fed 65 logs a record each in turn, walked 14-16 M records/s
 * merged against 27-38 M a log at a time; 17 logs, 18-22 M against 22-25
 * M; 9 logs, 24-26 M against 14-25 M; 3 logs, 30-32 M against 22-31 M. */
#define MERGE_MAX 16

/* The most records a log holds: 1 MiB. */
#define CAP_MAX 16384

/* The feed thread's nap between passes: it halves while logs come back a
 * quarter full, doubles while they come back nearly empty. */
#define NAP_MIN (20 * 1000)
#define NAP_MAX (2 * 1000 * 1000)
#define NAP_0   (200 * 1000)

/* A producer waiting for room is woken when its log gets some, or when
 * the run fails or stops (fb_feed_wake); it looks again this often all
 * the same. Not much more often: at thousands of waiters, every look is
 * a pass and a context switch. */
#define ROOM_NAP (100 * 1000 * 1000)

/* A cycle parked at the closed gate is woken as it opens, a few at a time
 * (gate()); it looks by itself this seldom: thousands of parked threads
 * looking every ROOM_NAP were 20k futex calls a second on one word, its
 * hash bucket's lock the busiest lock of the run. */
#define GATE_NAP (1000 * 1000 * 1000)

struct fb_feed {
	fb_feed_log *logs;
	fb_check_rec *rings;
	fb_check_rec *spills; /* SPILL_0 records a log, touched only when used */
	uint32_t n, cap;
	uint32_t *moved, nmoved; /* a pass's logs whose tails moved: the consumer's */
	uint32_t *active;        /* ... and those it has records to take from */
	uint32_t *heap;          /* merge(): the logs by their head's instant */
	uint64_t *heap_at;       /* ... and those instants */
	_Atomic uint64_t *kick;  /* a bit a log whose waiting producer has room */
	/* Many producers: a byte a log, set by its producer as it publishes
	 * and by the consumer for a log it left records in (held by a walk);
	 * a pass visits only the logs with news. At 16k producers a pass over
	 * every log took as long as a time slice, and a pass preempted holding
	 * the lock held the whole run's records for seconds. NULL: few
	 * producers, every pass looks at every log. */
	_Atomic uint8_t *news;
	_Atomic uint8_t *groups;     /* a byte 64 logs: one of them has news (a hint) */
	uint32_t passes_since_all;   /* the consumer's: passes since one looked at all news */
	_Atomic uint64_t *near_bits; /* a bit a log whose producer waits for a walk (many) */
	fb_checker *checker[4];      /* by discipline; NULL: not checked (and the 4th) */
	bool signals;
	uint32_t limit[FB_DISCIPLINES]; /* wide logs: how far ahead a record may be put */
	bool wide;
	/* producers waiting for a walk: the consumer looks for them */
	alignas(FB_PAD_LINE) _Atomic uint32_t walk_waiters;
	alignas(FB_PAD_LINE) _Atomic uint32_t gate; /* 1: closed (wide logs) */
	alignas(FB_PAD_LINE) _Atomic int busy;      /* the consumer's lock */
	_Atomic uint64_t passes;                    /* passes done, for waiters to see */
	/* the bound */
	const _Atomic int *abort, *stop_run;
	const _Atomic uint64_t *end_at; /* the run's end on clk: a stop no one has said yet */
	const fb_clock *clk;
	uint64_t max_wait;
	void (*stuck)(void *ctx, uint32_t key, int d);
	void *stuck_ctx;
	bool stuck_said;
	bool settle_all; /* the producers are done: every held record is walked */
	/* the thread */
	pthread_t tid;
	bool running;
	_Atomic int stop;
	uint64_t nap; /* the thread's own */
	bool crowded; /* fb_feed_crowded: it naps NAP_MAX */
};

fb_err fb_feed_plan(uint32_t producers, uint32_t in_flight, uint32_t *cap, uint32_t *ahead)
{
	/* Half of what the versions leave for records not yet walked goes to
	 * the logs, the rest to the checkers' rings. */
	uint64_t budget = (1u << 16) - FB_CHECKER_BEHIND;
	if (!producers || (uint64_t)in_flight + producers + 4 > budget)
		return FB_EINVAL;
	uint64_t c = (budget - in_flight) / 2 / producers;
	if (c > CAP_MAX)
		c = CAP_MAX;
	if (c < 1)
		c = 1;
	*cap = (uint32_t)c;
	*ahead = (uint32_t)(c * producers + in_flight);
	return FB_OK;
}

/* A log's spill to begin with: a cycle's records, without a malloc. At
 * 16k threads the stop's spills were as many first mallocs, each setting
 * up its thread's cache, just as the threads were to exit. */
#define SPILL_0 8

/* From this many producers on, passes visit only the logs with news: below
 * it a pass over every log is as quick, and no producer stores news. */
#define NEWS_MIN 256
/* ... and every this many passes one looks at every log's news */
#define ALL_NEWS 32

/* Logs are wide where 16 MiB of records, 8 to 64 a log, are more than
 * fb_feed_plan's share of the window (from 473 producers: 472 threads)... */
#define WIDE_FROM     (UINT32_C(1) << 18)
#define WIDE_FROM_MAX 64
/* ... and then hold 256 MiB of records in all, 8 to 256 a log. A log
 * holds a few cycles' records: where it fills before a pass comes round
 * (thousands of producers, one pass at a time, on a few cores), its
 * producer closes the gate, and every producer parks. At 16,384 producers
 * on 2 cores, logs of 16 records closed it about 5,000 times a second and
 * the checked run made 0.7-1.2 M cycles a second; of 256, about 800 times,
 * and 1.8-2.1 M (--no-check: 5.2 M; issue 27). */
#define WIDE_RECORDS (UINT32_C(1) << 22)
#define WIDE_MIN     8
#define WIDE_MAX     256

static uint32_t clamp(uint32_t c, uint32_t lo, uint32_t hi)
{
	return c < lo ? lo : c > hi ? hi : c;
}

fb_err fb_feed_plan_wide(uint32_t producers, uint32_t in_flight, uint32_t *cap, uint32_t *ahead)
{
	uint32_t narrow, a;
	if (fb_feed_plan(producers, in_flight, &narrow, &a))
		return FB_EINVAL;
	/* the window, less the largest ring: what is not in a ring may be
	 * anywhere, the producers see to it that it stays in the window */
	uint32_t rest = (1u << 16) - FB_CHECKER_BEHIND - (1u << 14);
	if (clamp(WIDE_FROM / producers, WIDE_MIN, WIDE_FROM_MAX) <= narrow ||
	    in_flight + 1 >= rest)
		return FB_EINVAL;
	*cap = clamp(WIDE_RECORDS / producers, WIDE_MIN, WIDE_MAX);
	*ahead = rest;
	return FB_OK;
}

void fb_feed_window(fb_feed *f, uint32_t in_flight)
{
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		uint32_t w = f->checker[d] ? fb_checker_window(f->checker[d]) : 0;
		f->limit[d] = w > in_flight ? w - in_flight : 1;
	}
	f->wide = true;
	for (uint32_t i = 0; i < f->n; i++) {
		f->logs[i].wide = true;
		f->logs[i].gate = &f->gate;
	}
}

fb_err fb_feed_create(uint32_t producers, uint32_t cap, fb_checker *const *checkers, bool signals,
                      fb_feed **out)
{
	if (!producers || !cap)
		return FB_EINVAL;
	fb_feed *f = calloc(1, sizeof *f);
	if (!f)
		return FB_ENOMEM;
	f->logs = aligned_alloc(FB_PAD_LINE, (size_t)producers * sizeof *f->logs);
	f->rings = aligned_alloc(FB_CACHE_LINE, (size_t)producers * cap * sizeof *f->rings);
	/* a log moves at most twice a pass: drained, then unstuck */
	f->moved = malloc((size_t)producers * 2 * sizeof *f->moved);
	f->active = malloc((size_t)producers * sizeof *f->active);
	f->heap = malloc(MERGE_MAX * sizeof *f->heap);
	f->heap_at = malloc(MERGE_MAX * sizeof *f->heap_at);
	f->kick = calloc((producers + 63) / 64, sizeof *f->kick);
	f->spills = malloc((size_t)producers * SPILL_0 * sizeof *f->spills);
	if (producers >= NEWS_MIN) {
		f->news = calloc(producers, sizeof *f->news);
		f->groups = calloc((producers + 63) / 64, sizeof *f->groups);
		f->near_bits = calloc((producers + 63) / 64, sizeof *f->near_bits);
	}
	if (!f->logs || !f->rings || !f->moved || !f->active || !f->heap || !f->heap_at ||
	    !f->kick || !f->spills ||
	    (producers >= NEWS_MIN && (!f->news || !f->groups || !f->near_bits))) {
		fb_feed_destroy(f);
		return FB_ENOMEM;
	}
	/* every page now: the resident set stays flat through the run */
	size_t bytes = (size_t)producers * cap * sizeof *f->rings;
	for (size_t b = 0; b < bytes; b += 4096)
		((volatile char *)f->rings)[b] = 0;
	f->n = producers;
	f->cap = cap;
	for (int d = 0; d < FB_DISCIPLINES; d++)
		f->checker[d] = checkers[d];
	f->signals = signals;
	f->nap = NAP_0;
	f->crowded = false;
	atomic_init(&f->busy, 0);
	atomic_init(&f->stop, 0);
	for (uint32_t i = 0; i < producers; i++) {
		fb_feed_log *l = &f->logs[i];
		*l = (fb_feed_log){.limit = cap,
		                   .cap = cap,
		                   .ring = &f->rings[(size_t)i * cap],
		                   .cring = &f->rings[(size_t)i * cap],
		                   .feed = f,
		                   .capspill = SPILL_0,
		                   .spill = &f->spills[(size_t)i * SPILL_0],
		                   .news = f->news ? &f->news[i] : NULL,
		                   .group = f->groups ? &f->groups[i / 64] : NULL};
		atomic_init(&l->published, 0);
		atomic_init(&l->tail, 0);
		atomic_init(&l->waiting, 0);
		atomic_init(&l->seq, 0);
		atomic_init(&l->want, 0);
	}
	atomic_init(&f->walk_waiters, 0);
	atomic_init(&f->gate, 0);
	*out = f;
	return FB_OK;
}

void fb_feed_destroy(fb_feed *f)
{
	if (!f)
		return;
	fb_feed_stop(f);
	if (f->logs)
		for (uint32_t i = 0; i < f->n; i++)
			if (f->logs[i].spill_own)
				free(f->logs[i].spill);
	free(f->spills);
	free(f->moved);
	free(f->active);
	free(f->heap);
	free(f->heap_at);
	free(f->kick);
	free(f->news);
	free(f->groups);
	free(f->near_bits);
	free(f->logs);
	free(f->rings);
	free(f);
}

void fb_feed_bound(fb_feed *f, const _Atomic int *abort, const _Atomic int *stop,
                   const fb_clock *clk, uint64_t max_wait_ns,
                   void (*stuck)(void *ctx, uint32_t key, int d), void *ctx)
{
	f->abort = abort;
	f->stop_run = stop;
	f->clk = clk;
	f->max_wait = max_wait_ns;
	f->stuck = stuck;
	f->stuck_ctx = ctx;
}

void fb_feed_end(fb_feed *f, const _Atomic uint64_t *end_at)
{
	f->end_at = end_at;
}

void fb_feed_crowded(fb_feed *f)
{
	f->crowded = true;
	f->nap = NAP_MAX;
}

fb_feed_log *fb_feed_log_of(fb_feed *f, uint32_t producer)
{
	return &f->logs[producer];
}

/* ---- the consumer ---- */

static void futex_wait(_Atomic uint32_t *word, uint32_t seen, uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
	/* EAGAIN (seq moved), EINTR, ETIMEDOUT: the caller looks again */
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
}

static void futex_wake_n(_Atomic uint32_t *word, int n)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word)
{
	futex_wake_n(word, INT_MAX);
}

static void wake(fb_feed_log *l)
{
	atomic_fetch_add_explicit(&l->seq, 1, memory_order_release);
	futex_wake(&l->seq);
}

/* Log i published since a pass last looked, or holds records (NULL news:
 * every log may). Taken: the next pass looks only if there is more. */
static bool take_news(fb_feed *f, uint32_t i)
{
	/* acquire: pairs with the producer's release of the news, after
	 * its count */
	return !f->news || (atomic_load_explicit(&f->news[i], memory_order_relaxed) &&
	                    atomic_exchange_explicit(&f->news[i], 0, memory_order_acquire));
}

/* Log i holds records still: the next pass looks at it again. */
static void keep_news(fb_feed *f, uint32_t i)
{
	if (!f->news)
		return;
	/* relaxed: the consumer's own marks, read under the lock */
	atomic_store_explicit(&f->news[i], 1, memory_order_relaxed);
	atomic_store_explicit(&f->groups[i / 64], 1, memory_order_relaxed);
}

/* A log's head is held back by key's walk: judge the hold by the bound. */
static void held(fb_feed *f, fb_feed_log *l, const fb_check_rec *r)
{
	if (!f->clk || f->stuck_said)
		return;
	uint16_t walk = fb_checker_next(f->checker[r->d], r->key);
	if (!fb_checker_wait_expired(&l->wait, walk, fb_clock_now(f->clk), f->max_wait))
		return;
	f->stuck_said = true;
	if (f->stuck)
		f->stuck(f->stuck_ctx, r->key, r->d);
}

/* The last pass (every producer done): what a log spilled follows it. */
static uint64_t drain_spill(fb_feed *f, fb_feed_log *l)
{
	uint32_t s0 = l->spilled;
	while (l->spilled < l->nspill) {
		const fb_check_rec *r = &l->spill[l->spilled];
		fb_checker *c = f->checker[r->d & 3];
		if (c && fb_checker_place(c, r) == FB_CHECK_LATER)
			break;
		l->spilled++;
	}
	return l->spilled - s0;
}

/* Take what one log had published as the pass began, in order, as far as
 * the walks let it and while its records were written at or before
 * `until` (the first one whenever). *blocked: a walk holds it back. */
static uint64_t drain_log(fb_feed *f, fb_feed_log *l, bool *blocked_out, uint64_t until)
{
	uint64_t pub = l->pass_pub, t = l->taken;
	uint32_t slot = l->cslot, cap = f->cap;
	bool blocked = false;
	while (t < pub) {
		const fb_check_rec *r = &l->cring[slot];
		if (r->wrote_at > until && t != l->taken)
			break;
		fb_checker *c = f->checker[r->d & 3];
		if (c && __builtin_expect(fb_checker_place(c, r) == FB_CHECK_LATER, 0)) {
			held(f, l, r);
			blocked = true;
			break;
		}
		t++;
		if (++slot == cap)
			slot = 0;
	}
	l->cslot = slot;
	if (!blocked)
		l->wait.waiting = false;
	uint64_t n = t - l->taken;
	if (n) {
		l->taken = t;
		/* release: the slots are read; the producer may fill them */
		atomic_store_explicit(&l->tail, t, memory_order_release);
	}
	if (t == pub && f->settle_all) {
		n += drain_spill(f, l);
		blocked = l->spilled < l->nspill;
	}
	*blocked_out = blocked;
	return n;
}

/* What the last pass has still to take from l's spill (0 before it). */
static uint32_t spill_left(const fb_feed *f, const fb_feed_log *l)
{
	return f->settle_all ? l->nspill - l->spilled : 0;
}

/*
 * A pass that moved nothing while heads were held: a head further ahead
 * of its walk than every record that could still come can never be
 * reached, so it is a duplicate from far behind (fb_checker_take_behind).
 * The count of what could come is taken now, after the heads were
 * published, and over-counts: every log's records, and what each producer
 * may hold unpublished or in its hands (a cycle's records, and the
 * checker's in-flight bound).
 */
static uint64_t unstick(fb_feed *f)
{
	/* The heads first: only a head published before the count began has
	 * every version below it accepted before the count, so in a log, in
	 * a producer's hands or in flight when it is taken; one published
	 * after could have come behind records the count did not see. */
	for (uint32_t i = 0; i < f->n; i++)
		f->logs[i].held = atomic_load_explicit(&f->logs[i].published, memory_order_acquire);
	uint64_t elsewhere = (uint64_t)f->n * (2 * FB_DISCIPLINES) + fb_checker_in_flight(f->n);
	for (uint32_t i = 0; i < f->n; i++) {
		fb_feed_log *l = &f->logs[i];
		l->counted = atomic_load_explicit(&l->published, memory_order_acquire) - l->taken +
		             spill_left(f, l);
		elsewhere += l->counted;
	}
	uint64_t n = 0;
	for (uint32_t i = 0; i < f->n; i++) {
		fb_feed_log *l = &f->logs[i];
		bool spilled = l->taken == l->held;
		if (spilled && !spill_left(f, l))
			continue;
		const fb_check_rec *r = spilled ? &l->spill[l->spilled] : &l->cring[l->cslot];
		fb_checker *c = f->checker[r->d & 3];
		/* A producer logs its records in its own commit order (a key's
		 * next write is sent after the last one's reply, and logged
		 * after it; the spill follows the ring): nothing after the head
		 * in its own log can fill a gap before it. Counting them let a
		 * copy 65,000 versions late, which reads as a few ahead, hold
		 * its log for ever (issue 27). */
		if (!c || !fb_checker_take_behind(c, r, elsewhere - l->counted))
			continue;
		n++;
		if (spilled) {
			l->spilled++;
			continue;
		}
		if (++l->cslot == f->cap)
			l->cslot = 0;
		l->taken++;
		/* release: the slot is read; the producer may fill it */
		atomic_store_explicit(&l->tail, l->taken, memory_order_release);
		f->moved[f->nmoved++] = i;
		keep_news(f, i); /* what follows it */
	}
	return n;
}

static void near_again(fb_feed *f);

/* Wide logs: close the gate while a head waits for its walk, open it once
 * none does (and wake who waits there). */
static void gate(fb_feed *f, bool close)
{
	/* relaxed: the gate orders nothing; a waiter's futex looks at it */
	if (close == (bool)atomic_load_explicit(&f->gate, memory_order_relaxed))
		return;
	atomic_store_explicit(&f->gate, close, memory_order_relaxed);
	/* A few at a time, each passing the wake on as it goes through
	 * (fb_feed_gate_wait): all at once, thousands of context switches
	 * would come before the first cycle, and the gate would be closed
	 * again before most of them began one. */
	if (!close)
		futex_wake_n(&f->gate, 2);
}

/* When l's next record was written (it has one). */
static uint64_t head_at(const fb_feed_log *l)
{
	return l->taken < l->pass_pub ? l->cring[l->cslot].wrote_at : l->spill[l->spilled].wrote_at;
}

/* The merge's heap, least instant on top: log i at `at`, in. */
static void heap_push(fb_feed *f, uint32_t *nh, uint32_t i, uint64_t at)
{
	uint32_t j = (*nh)++;
	while (j && f->heap_at[(j - 1) / 2] > at) {
		f->heap[j] = f->heap[(j - 1) / 2];
		f->heap_at[j] = f->heap_at[(j - 1) / 2];
		j = (j - 1) / 2;
	}
	f->heap[j] = i;
	f->heap_at[j] = at;
}

/* Entry j, at `at`, moved down to its place among the nh below it. */
static void heap_down(fb_feed *f, uint32_t nh, uint32_t j, uint32_t i, uint64_t at)
{
	for (;;) {
		uint32_t c = 2 * j + 1;
		if (c >= nh)
			break;
		if (c + 1 < nh && f->heap_at[c + 1] < f->heap_at[c])
			c++;
		if (f->heap_at[c] >= at)
			break;
		f->heap[j] = f->heap[c];
		f->heap_at[j] = f->heap_at[c];
		j = c;
	}
	f->heap[j] = i;
	f->heap_at[j] = at;
}

/*
 * Take the logs' records (f->active[0 .. *nact)) merged in the order they
 * were written, each log's run up to the next log's head. A log taken
 * whole before the next would be ahead of the others in every key's
 * history by what its producer wrote while they were off the cores (three
 * threads share two cores at -t 2: a time slice), and its records would
 * wait in the checkers' rings for theirs: a third of them at -t 2, each a
 * cache miss in and out. A log held back by a walk is tried again while
 * the others move. *nact: those still held back, first in f->active.
 */
static uint64_t merge(fb_feed *f, uint32_t *nact)
{
	uint64_t n = 0;
	uint32_t held_back = *nact;
	for (uint64_t n0 = 1; held_back && n != n0;) {
		n0 = n;
		uint32_t nh = 0;
		for (uint32_t j = 0; j < held_back; j++)
			heap_push(f, &nh, f->active[j], head_at(&f->logs[f->active[j]]));
		held_back = 0;
		while (nh) {
			/* the top's run: up to the earlier of its children's heads */
			uint32_t i = f->heap[0];
			uint64_t until = nh > 1 ? f->heap_at[1] : UINT64_MAX;
			if (nh > 2 && f->heap_at[2] < until)
				until = f->heap_at[2];
			fb_feed_log *l = &f->logs[i];
			bool blocked;
			uint64_t m = drain_log(f, l, &blocked, until);
			if (m && !l->pass_taken)
				f->moved[f->nmoved++] = i; /* its first move this pass */
			l->pass_taken += m;
			n += m;
			/* not blocked, its spill (the last pass) was taken whole */
			if (!blocked && l->taken < l->pass_pub) {
				heap_down(f, nh, 0, i, head_at(l)); /* its next run, in its place */
				continue;
			}
			if (blocked)
				f->active[held_back++] = i;
			if (--nh)
				heap_down(f, nh, 0, f->heap[nh], f->heap_at[nh]);
		}
	}
	*nact = held_back;
	return n;
}

/* One pass over every log; the caller holds the lock. *fullest: the most
 * records one log held as the pass began. */
static uint64_t pass_locked(fb_feed *f, uint64_t *fullest_out)
{
	uint64_t n = 0, fullest = 0;
	uint32_t nact = 0;
	bool later;
	/* A group's byte is a hint: taken, it synchronizes with the last
	 * producer that stored it, whose log's news it shows, not always with
	 * the others of its group, whose news can stay unseen under a group
	 * taken. Every ALL_NEWS passes, and after a pass that found nothing,
	 * one looks at every log's news. */
	bool all = !f->news || f->passes_since_all >= ALL_NEWS;
	f->passes_since_all = all ? 0 : f->passes_since_all + 1;
	for (uint32_t i = 0; i < f->n; i++) {
		/* acquire: pairs with the producers' release of the group's byte */
		if (!all && i % 64 == 0 &&
		    (!atomic_load_explicit(&f->groups[i / 64], memory_order_relaxed) ||
		     !atomic_exchange_explicit(&f->groups[i / 64], 0, memory_order_acquire))) {
			i += 63; /* no news in the group: the loop's ++ goes to the next */
			continue;
		}
		if (!take_news(f, i))
			continue; /* nothing since the last look left it empty */
		fb_feed_log *l = &f->logs[i];
		/* acquire: pairs with the producer's release of the count */
		l->pass_pub = atomic_load_explicit(&l->published, memory_order_acquire);
		uint64_t before = l->pass_pub - l->taken + spill_left(f, l);
		if (before > fullest)
			fullest = before;
		l->pass_taken = 0;
		if (before)
			f->active[nact++] = i;
		else
			l->wait.waiting = false; /* empty: no head held (unstick took it) */
	}
	if (nact <= MERGE_MAX) {
		n = merge(f, &nact);
	} else {
		/* many logs, a log at a time: a merge would spend on its heap
		 * more than it saves in the rings (MERGE_MAX) */
		uint32_t still = 0;
		for (uint32_t j = 0; j < nact; j++) {
			fb_feed_log *l = &f->logs[f->active[j]];
			bool blocked;
			uint64_t m = drain_log(f, l, &blocked, UINT64_MAX);
			if (m)
				f->moved[f->nmoved++] = f->active[j];
			n += m;
			if (blocked)
				f->active[still++] = f->active[j];
		}
		nact = still;
	}
	/* what is left is held back by walks: looked at again next pass */
	for (uint32_t j = 0; j < nact; j++)
		keep_news(f, f->active[j]);
	later = nact != 0;
	if (!n && !fullest)
		f->passes_since_all = ALL_NEWS; /* quiet: the next pass looks at all */
	*fullest_out = fullest;
	/* an ordered checker walks what it holds once its writes are in hand */
	uint64_t settled = 0;
	for (int d = 0; d < FB_DISCIPLINES; d++)
		settled += fb_checker_settle(f->checker[d], f->settle_all);
	if (!n && fullest)
		n = unstick(f);
	n += settled;
	if (f->wide)
		gate(f, later || atomic_load_explicit(&f->walk_waiters, memory_order_relaxed));
	/* Only a log whose tail moved has room its producer may wait for:
	 * waking every waiter on any progress is, at thousands of them, a
	 * herd of context switches that each find their log still full. A
	 * walk freed by settle moves tails on the next pass. The wakes
	 * themselves come after the lock (kicks): a consumer that wakes
	 * thousands under it is preempted by them, and the walk waits. */
	bool walkers = f->wide && n;
	if (!f->nmoved && !walkers)
		return n;
	/* seq_cst: the tails and walks stored before the waiting flags are
	 * read; pairs with a waiter's seq_cst flag and its load of the tail
	 * or the walk */
	atomic_thread_fence(memory_order_seq_cst);
	if (walkers && atomic_load_explicit(&f->walk_waiters, memory_order_relaxed))
		near_again(f);
	for (uint32_t j = 0; j < f->nmoved; j++) {
		uint32_t i = f->moved[j];
		if (atomic_load_explicit(&f->logs[i].waiting, memory_order_relaxed))
			/* relaxed: the bit names a log; wake()'s seq orders the rest */
			atomic_fetch_or_explicit(&f->kick[i / 64], UINT64_C(1) << (i % 64),
			                         memory_order_relaxed);
	}
	f->nmoved = 0;
	return n;
}

/* want: a record's discipline, key and version, for a walk's waiter */
static uint64_t want_of(const fb_check_rec *r)
{
	return UINT64_C(1) << 63 | (uint64_t)(r->d & 3) << 48 | (uint64_t)r->key << 16 |
	       (uint16_t)r->version;
}

static bool wanted_near(const fb_feed *f, uint64_t want, fb_check_rec *r)
{
	r->d = (uint8_t)(want >> 48 & 3);
	r->key = (uint32_t)(want >> 16);
	r->version = (uint16_t)want;
	return fb_checker_near(f->checker[r->d], r, f->limit[r->d]);
}

/* Wide logs, a pass whose walks moved: kick the producers whose record is
 * near enough now; judge the others' waits by the bound, as held heads. */
static void near_again(fb_feed *f)
{
	for (uint32_t i = 0; i < f->n; i++) {
		/* many producers: only the logs whose bit is set (set before the
		 * flag, cleared after it) may wait; the scan of every flag, a
		 * line each, took a millisecond at 16k */
		if (f->near_bits && i % 64 == 0 &&
		    !atomic_load_explicit(&f->near_bits[i / 64], memory_order_relaxed)) {
			i += 63;
			continue;
		}
		uint64_t bits = f->near_bits ? atomic_load_explicit(&f->near_bits[i / 64],
		                                                    memory_order_relaxed)
		                             : ~UINT64_C(0);
		if (!(bits >> (i % 64) & 1))
			continue;
		fb_feed_log *l = &f->logs[i];
		/* acquire: pairs with the waiter's seq_cst flag, stored after want */
		if (!atomic_load_explicit(&l->waiting, memory_order_acquire))
			continue;
		uint64_t want = atomic_load_explicit(&l->want, memory_order_relaxed);
		fb_check_rec r;
		if (!want)
			continue;
		if (!wanted_near(f, want, &r)) {
			if (f->clk && !f->stuck_said &&
			    fb_checker_wait_expired(&l->wwait,
			                            fb_checker_next(f->checker[r.d], r.key),
			                            fb_clock_now(f->clk), f->max_wait)) {
				f->stuck_said = true;
				if (f->stuck)
					f->stuck(f->stuck_ctx, r.key, r.d);
			}
			continue;
		}
		l->wwait.waiting = false;
		/* relaxed: the bit names a log; wake()'s seq orders the rest */
		atomic_fetch_or_explicit(&f->kick[i / 64], UINT64_C(1) << (i % 64),
		                         memory_order_relaxed);
	}
}

/* Wake the producers kicked: each bit taken by one waker, after the lock. */
static void kicks(fb_feed *f)
{
	for (uint32_t w = 0; w < (f->n + 63) / 64; w++) {
		if (!atomic_load_explicit(&f->kick[w], memory_order_relaxed))
			continue;
		uint64_t bits = atomic_exchange_explicit(&f->kick[w], 0, memory_order_relaxed);
		while (bits) {
			wake(&f->logs[w * 64 + (uint32_t)__builtin_ctzll(bits)]);
			bits &= bits - 1;
		}
	}
}

static bool trylock(fb_feed *f)
{
	return !atomic_load_explicit(&f->busy, memory_order_relaxed) &&
	       !atomic_exchange_explicit(&f->busy, 1, memory_order_acquire);
}

static void unlock(fb_feed *f)
{
	atomic_store_explicit(&f->busy, 0, memory_order_release);
}

static bool pass(fb_feed *f, uint64_t *n, uint64_t *fullest)
{
	*n = *fullest = 0;
	if (!trylock(f))
		return false;
	*n = pass_locked(f, fullest);
	/* relaxed: a hint for waiters whether to help (wait_for) */
	atomic_fetch_add_explicit(&f->passes, 1, memory_order_relaxed);
	unlock(f);
	kicks(f);
	return true;
}

bool fb_feed_pass(fb_feed *f, uint64_t *n)
{
	uint64_t fullest;
	return pass(f, n, &fullest);
}

/* A producer's pass: no pause may fall while it holds the lock. */
static void help(fb_feed *f)
{
	if (atomic_load_explicit(&f->busy, memory_order_relaxed))
		return; /* another consumer is at it */
	sigset_t pause, old;
	if (f->signals) {
		sigemptyset(&pause);
		sigaddset(&pause, SIGUSR1);
		pthread_sigmask(SIG_BLOCK, &pause, &old);
	}
	uint64_t n;
	fb_feed_pass(f, &n);
	if (f->signals)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static bool flagged(const _Atomic int *flag)
{
	/* relaxed: a flag to look at; fb_feed_wake's fence orders it against
	 * the waiting flag */
	return flag && atomic_load_explicit(flag, memory_order_relaxed);
}

/* The run's end is past, said or not: the workers that would say it may
 * all be waiting here. */
static bool over(const fb_feed *f)
{
	if (flagged(f->stop_run))
		return true;
	/* relaxed: set before the producers began */
	return f->end_at && f->clk &&
	       fb_clock_now(f->clk) >= atomic_load_explicit(f->end_at, memory_order_relaxed);
}

/* The run failed (abort) or stopped: a wait for room or for a walk ends;
 * stopped, l spills what comes next. */
static bool ended(fb_feed *f, fb_feed_log *l)
{
	if (flagged(f->abort))
		return true;
	if (!over(f))
		return false;
	l->spilling = true;
	return true;
}

/*
 * A waiter's sleep: until woken, ROOM_NAP at most, and never past the run's
 * end. It helps (a pass) again only if no pass was done while it slept
 * (*seen: the passes as it began): with thousands waiting, each
 * looking every ROOM_NAP, every look a pass over thousands of logs
 * would keep the cores from the writer the walks wait for.
 */
static void nap_on(fb_feed *f, _Atomic uint32_t *word, uint32_t val, uint64_t ns, uint64_t *seen)
{
	if (f->end_at && f->clk) {
		uint64_t now = fb_clock_now(f->clk),
		         end = atomic_load_explicit(f->end_at, memory_order_relaxed);
		if (end > now && end - now < ns)
			ns = end - now + 1;
	}
	*seen = atomic_load_explicit(&f->passes, memory_order_relaxed);
	futex_wait(word, val, ns);
}

static bool helps(const fb_feed *f, uint64_t seen)
{
	return atomic_load_explicit(&f->passes, memory_order_relaxed) == seen;
}

bool fb_feed_room(fb_feed_log *l, bool wait, uint64_t *stalls)
{
	fb_feed *f = l->feed;
	bool counted = false;
	uint64_t seen = atomic_load_explicit(&f->passes, memory_order_relaxed);
	fb_feed_publish(l); /* a record held back could be the one the walk waits for */
	for (bool first = true;; first = false) {
		/* the run is over: no wait for a walk that may need the other
		 * producers' last records (the last pass takes these), and no
		 * pass: thousands woken at once, each taking one, would hold
		 * the end of the run for seconds */
		if (wait && ended(f, l))
			return false;
		if (first || helps(f, seen))
			help(f);
		if (fb_feed_slot(l))
			return true;
		if (!wait || ended(f, l))
			return false;
		if (!counted) {
			(*stalls)++;
			counted = true;
		}
		/* Wide logs: a log full after a pass was tried waits for a
		 * consumer off the cores (the feed's thread, or a producer
		 * preempted while it helps), one thread among thousands that
		 * go on cycling until their logs fill too, seconds of 16k
		 * time slices. Close the gate: they park as their cycles end,
		 * and the consumer runs. The next pass opens it (gate()). */
		if (f->wide && !atomic_load_explicit(&f->gate, memory_order_relaxed))
			atomic_store_explicit(&f->gate, 1, memory_order_relaxed);
		uint32_t seq = atomic_load_explicit(&l->seq, memory_order_acquire);
		/* seq_cst: the flag before the tail is read again; pairs with the
		 * consumer's fence between its tail stores and the flags */
		atomic_store_explicit(&l->waiting, 1, memory_order_seq_cst);
		atomic_thread_fence(memory_order_seq_cst);
		if (!fb_feed_slot(l) && !flagged(f->abort) && !over(f))
			nap_on(f, &l->seq, seq, ROOM_NAP, &seen);
		atomic_store_explicit(&l->waiting, 0, memory_order_relaxed);
	}
}

bool fb_feed_near_now(const fb_feed_log *l, const fb_check_rec *r)
{
	const fb_feed *f = l->feed;
	const fb_checker *c = f->checker[r->d & 3];
	return !l->wide || !c || fb_checker_near(c, r, f->limit[r->d & 3]);
}

bool fb_feed_near_wait(fb_feed_log *l, const fb_check_rec *r, bool wait, uint64_t *stalls)
{
	fb_feed *f = l->feed;
	fb_checker *c = f->checker[r->d & 3];
	if (!c || fb_checker_near(c, r, f->limit[r->d & 3]))
		return true;
	fb_feed_publish(l); /* what was put before it may be what the walk waits for */
	uint64_t want = want_of(r), seen = atomic_load_explicit(&f->passes, memory_order_relaxed);
	bool counted = false, near = false;
	/* seq_cst: counted before the flag; the consumer reads the count after
	 * its fence, then the flags */
	atomic_fetch_add_explicit(&f->walk_waiters, 1, memory_order_seq_cst);
	uint32_t me = (uint32_t)(l - f->logs);
	/* seq_cst: the bit before the flag (near_again reads it first) */
	if (f->near_bits)
		atomic_fetch_or_explicit(&f->near_bits[me / 64], UINT64_C(1) << (me % 64),
		                         memory_order_seq_cst);
	for (bool first = true;; first = false) {
		if (wait && ended(f, l))
			break; /* the record and those after it spill, as in fb_feed_room */
		if (first || helps(f, seen))
			help(f);
		if ((near = fb_checker_near(c, r, f->limit[r->d & 3])))
			break;
		if (!wait || ended(f, l))
			break;
		if (!counted) {
			(*stalls)++;
			counted = true;
		}
		uint32_t seq = atomic_load_explicit(&l->seq, memory_order_acquire);
		atomic_store_explicit(&l->want, want, memory_order_relaxed);
		/* seq_cst: the flag (after want) before the walk is read again;
		 * pairs with the consumer's fence between its walks and the flags */
		atomic_store_explicit(&l->waiting, 1, memory_order_seq_cst);
		atomic_thread_fence(memory_order_seq_cst);
		if (!fb_checker_near(c, r, f->limit[r->d & 3]) && !flagged(f->abort) && !over(f))
			nap_on(f, &l->seq, seq, ROOM_NAP, &seen);
		atomic_store_explicit(&l->waiting, 0, memory_order_relaxed);
		atomic_store_explicit(&l->want, 0, memory_order_relaxed);
	}
	if (f->near_bits) /* relaxed: after the flag, which near_again reads after the bit */
		atomic_fetch_and_explicit(&f->near_bits[me / 64], ~(UINT64_C(1) << (me % 64)),
		                          memory_order_relaxed);
	atomic_fetch_sub_explicit(&f->walk_waiters, 1, memory_order_relaxed);
	return near;
}

void fb_feed_gate_wait(fb_feed_log *l, uint64_t *stalls)
{
	fb_feed *f = l->feed;
	bool counted = false;
	uint64_t seen = atomic_load_explicit(&f->passes, memory_order_relaxed);
	while (atomic_load_explicit(&f->gate, memory_order_relaxed) && !flagged(f->abort) &&
	       !over(f)) {
		if (!counted || helps(f, seen))
			help(f); /* the feed's thread may be off the cores too */
		if (!counted) {
			(*stalls)++;
			counted = true;
		}
		nap_on(f, &f->gate, 1, GATE_NAP, &seen);
	}
	if (over(f))
		l->spilling = true; /* no cycle after the end (fb_feed_spilling) */
	if (counted)
		futex_wake_n(&f->gate, 1); /* the next one */
}

fb_check_rec *fb_feed_spill(fb_feed_log *l)
{
	if (!l->spilling)
		return NULL;
	if (l->nspill == l->capspill) {
		uint32_t cap = 2 * l->capspill;
		fb_check_rec *m = cap > l->capspill ? malloc((size_t)cap * sizeof *m) : NULL;
		if (!m)
			return NULL;
		memcpy(m, l->spill, (size_t)l->nspill * sizeof *m);
		if (l->spill_own)
			free(l->spill);
		l->spill = m;
		l->capspill = cap;
		l->spill_own = true;
	}
	return &l->spill[l->nspill++];
}

void fb_feed_wake(fb_feed *f)
{
	futex_wake(&f->gate); /* its waiters look at the flags */
	/* seq_cst: the caller's flags stored before the waiting flags are
	 * read; pairs with a waiter's seq_cst flag and its look at the flags */
	atomic_thread_fence(memory_order_seq_cst);
	for (uint32_t i = 0; i < f->n; i++)
		if (atomic_load_explicit(&f->logs[i].waiting, memory_order_relaxed))
			wake(&f->logs[i]);
}

/* ---- the thread ---- */

static void *feed_main(void *arg)
{
	fb_feed *f = arg;
	while (!atomic_load_explicit(&f->stop, memory_order_acquire)) {
		/* The run is over: its producers wait no more, and the last
		 * pass (fb_feed_stop) walks the rest. A pass over 16k logs now
		 * would only keep a core from the workers on their way out. */
		if (over(f)) {
			fb_sleep_unless(&f->stop, NAP_MAX);
			continue;
		}
		uint64_t n, fullest;
		if (pass(f, &n, &fullest) && !f->crowded) {
			/* keep the fullest log near a quarter full at each pass */
			if (fullest > f->cap / 4 && f->nap > NAP_MIN)
				f->nap /= 2;
			else if (fullest < f->cap / 16 && f->nap < NAP_MAX)
				f->nap *= 2;
		}
		fb_sleep_unless(&f->stop, f->nap);
	}
	return NULL;
}

fb_err fb_feed_start(fb_feed *f)
{
	/* the pause is for workers: this thread never takes it */
	sigset_t pause, old;
	sigemptyset(&pause);
	sigaddset(&pause, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &pause, &old);
	int rc = pthread_create(&f->tid, NULL, feed_main, f);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return FB_ESYS;
	f->running = true;
	return FB_OK;
}

void fb_feed_stop(fb_feed *f)
{
	if (f->running) {
		atomic_store_explicit(&f->stop, 1, memory_order_release);
		fb_sleep_wake(&f->stop);
		pthread_join(f->tid, NULL);
		f->running = false;
	}
	/* The producers are done: nobody else holds the lock, and a record
	 * still held now waits for a write that never came (its reply was
	 * lost with its engine): the verdict counts it, the bound need not. */
	f->clk = NULL;
	f->settle_all = true;
	for (uint32_t i = 0; i < f->n; i++)
		keep_news(f, i); /* the spills: the producers stored no news for them */
	while (trylock(f)) {
		uint64_t fullest, n = pass_locked(f, &fullest);
		unlock(f);
		kicks(f);
		if (!n)
			break;
	}
}

/* ---- the consumer alone ---- */

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Fill every log of f, a record a log in turn, each key's versions, fences
 * and balances following one another as a correct store's would. */
static uint64_t capacity_fill(fb_feed *f, uint32_t keys, uint16_t *ver, uint64_t *fence,
                              int64_t *bal, uint32_t *next_key)
{
	uint64_t put = 0;
	for (bool room = true; room;) {
		room = false;
		for (uint32_t i = 0; i < f->n; i++) {
			fb_feed_log *l = &f->logs[i];
			fb_check_rec *r = fb_feed_slot(l);
			if (!r)
				continue;
			uint32_t k = (*next_key)++ % keys;
			*r = (fb_check_rec){.fence = ++fence[k],
			                    .read = bal[k],
			                    .replaced = bal[k],
			                    .written = bal[k] - 1,
			                    .wrote_at = put + 1, /* written in turn */
			                    .version = ver[k]++,
			                    .key = k,
			                    .writer = (uint16_t)(i + 1),
			                    .d = FB_FENCED};
			bal[k]--;
			fb_feed_put(l);
			put++;
			room = true;
		}
	}
	for (uint32_t i = 0; i < f->n; i++)
		fb_feed_publish(&f->logs[i]);
	return put;
}

fb_err fb_feed_capacity(uint32_t producers, uint32_t keys, uint64_t duration_ns, double *records_s,
                        uint64_t *unwalked)
{
	uint32_t cap, ahead;
	if (!keys || fb_feed_plan(producers, fb_checker_in_flight(producers), &cap, &ahead))
		return FB_EINVAL;
	fb_checker *c = NULL;
	fb_feed *f = NULL;
	uint16_t *ver = calloc(keys, sizeof *ver);
	uint64_t *fence = calloc(keys, sizeof *fence);
	int64_t *bal = malloc((size_t)keys * sizeof *bal);
	fb_err e = FB_ENOMEM;
	if (!ver || !fence || !bal)
		goto out;
	const int64_t initial = INT64_C(1) << 40;
	for (uint32_t k = 0; k < keys; k++) {
		ver[k] = 1;
		bal[k] = initial;
	}
	if ((e = fb_checker_create(keys, ahead, initial, &c)))
		goto out;
	fb_checker *cs[FB_DISCIPLINES] = {[FB_FENCED] = c};
	if ((e = fb_feed_create(producers, cap, cs, false, &f)))
		goto out;
	uint64_t spent = 0, taken = 0, put = 0, t_end = mono_ns() + 4 * duration_ns;
	uint32_t next_key = 0;
	/* only the passes are timed: the filling is the producers' work */
	while (spent < duration_ns && mono_ns() < t_end) {
		put += capacity_fill(f, keys, ver, fence, bal, &next_key);
		uint64_t n, t0 = mono_ns();
		fb_feed_pass(f, &n);
		spent += mono_ns() - t0;
		taken += n;
	}
	*records_s = spent ? (double)taken * 1e9 / (double)spent : 0;
	fb_feed_stop(f); /* the rest, walked */
	uint64_t sum = 0;
	for (uint32_t k = 0; k < keys; k++) {
		fb_check_key ck;
		fb_checker_key(c, k, &ck);
		sum += ck.checked;
	}
	*unwalked = put - sum;
	e = FB_OK;
out:
	fb_feed_destroy(f);
	fb_checker_destroy(c);
	free(ver);
	free(fence);
	free(bal);
	return e;
}
