/*
 * The feed: how accepted writes reach the checkers without a locked
 * instruction on the writer's path. Each producer (a worker, the delay
 * line) appends its records to a log of its own with plain stores and
 * publishes them with one release store a cycle. One consumer at a time,
 * under the feed's lock, merges the logs into the checkers: the feed's
 * thread, napping between passes as the logs fill, or a producer that
 * found its log full and helps. A record too far ahead of its key's walk
 * stays at the head of its log until the walk comes closer; its log then
 * fills, and its producer waits for room, like a writer held up by a
 * paused one. Such a wait is bounded: a walk that stands still longer
 * than any writer may hold it ends the run. Once the run stops, a
 * producer waits no more: what its log has no room for stays in the
 * log's spill, in its hands as it were, and the last pass (fb_feed_stop,
 * every producer done) walks it after the log.
 *
 * Records of one producer are logged in the order the store accepted them,
 * and a key's versions follow acceptance: so a record held at the head of
 * a log waits only for records accepted before it, which are logged, or
 * will be, ahead of anything that waits for it. No cycle of waits.
 */
#ifndef FB_FEED_H
#define FB_FEED_H

#include <stdbool.h>
#include <stdint.h>

#include "checker.h"
#include "clock.h"
#include "common.h"

typedef struct fb_feed fb_feed;

typedef struct fb_feed_log {
	/* the producer's own */
	alignas(FB_PAD_LINE) uint64_t head; /* records put */
	uint64_t limit;                     /* put may go this far: the tail seen + cap */
	uint32_t slot;                      /* head mod cap */
	uint32_t cap;
	fb_check_rec *ring;
	fb_feed *feed;
	bool wide;                    /* fb_feed_window: records wait for their walk */
	const _Atomic uint32_t *gate; /* ... and cycles for the walks' holes */
	/* the run stopped while the log was full: the rest, after it */
	bool spilling;
	bool spill_own; /* spill is the log's own malloc (it outgrew its first) */
	uint32_t nspill, capspill;
	fb_check_rec *spill;
	_Atomic uint8_t *news;  /* its byte of the feed's news (many producers), or NULL */
	_Atomic uint8_t *group; /* ... and its group's: some log of 64 has news */
	/* producer to consumer */
	alignas(FB_PAD_LINE) _Atomic uint64_t published;
	/* consumer to producer */
	alignas(FB_PAD_LINE) _Atomic uint64_t tail;
	_Atomic uint32_t waiting, seq; /* a producer waiting for room, its futex */
	_Atomic uint64_t want;         /* ... or for a walk: FB_FEED_WANT, 0: none */
	/* the consumer's, under the feed's lock */
	const fb_check_rec *cring; /* ring, read from here: the producer's line is its own */
	uint64_t taken;
	uint64_t held;    /* unstick: what was published before it counted */
	uint64_t counted; /* ... and its records it counted as still to come */
	uint32_t cslot;
	uint64_t pass_pub;     /* a pass takes at most what was published as it began */
	uint64_t pass_taken;   /* ... and what it took so far */
	uint32_t spilled;      /* the spill's records taken (the last pass only) */
	fb_checker_wait wait;  /* its head held back by a walk: since when */
	fb_checker_wait wwait; /* its producer held back by one (wide logs) */
} fb_feed_log;

/*
 * How big the logs may be for a run of `producers` writing `keys` keys,
 * with `in_flight` writes of a key held unlogged (fb_checker_in_flight):
 * every record not yet walked must fit in the checker's 16-bit window.
 * *cap: records a log; *ahead: for fb_checker_create. FB_EINVAL: no room.
 */
fb_err fb_feed_plan(uint32_t producers, uint32_t in_flight, uint32_t *cap, uint32_t *ahead);

/*
 * Logs wider than the window, for runs of thousands of producers on few
 * keys, where fb_feed_plan's share of 2^16 is a few records a log and every
 * few records a producer sleeps and is woken. The window is then shared
 * as it is used, per key: a record more than window - in_flight ahead of
 * its walk (fb_feed_window) waits in its producer's hands, before its log,
 * until the walk comes closer; each producer holds at most in_flight's
 * share beyond that, so no record is ever further ahead than the window.
 * FB_EINVAL: fb_feed_plan's logs are as wide already.
 */
fb_err fb_feed_plan_wide(uint32_t producers, uint32_t in_flight, uint32_t *cap, uint32_t *ahead);

/* The feed's logs are wide (fb_feed_plan_wide): records wait for their
 * walk before they are put. After fb_feed_create, before any record. */
void fb_feed_window(fb_feed *f, uint32_t in_flight);

/* r may be put in l now (wide logs: it is near enough to its walk). No
 * wait, no pass. */
bool fb_feed_near_now(const fb_feed_log *l, const fb_check_rec *r);

/* Wide logs: wait (if wait) until r is near enough to its walk to be put in
 * l. True: it may be put now; false: as fb_feed_room's. Narrow: true. */
bool fb_feed_near_wait(fb_feed_log *l, const fb_check_rec *r, bool wait, uint64_t *stalls);
/*
 * Wide logs: a producer about to begin a cycle (holding no lease, no record)
 * waits while the gate is closed: a walk waits for a record its writer
 * holds, preempted, and its ring is full. Thousands of threads contending
 * for the cores keep that writer off them for as long as they run, while
 * the records they add can only wait; with them parked, it runs at once.
 * *stop or *abort (fb_feed_bound's) open it. *stalls counts the waits.
 */
void fb_feed_gate_wait(fb_feed_log *l, uint64_t *stalls);
static inline void fb_feed_gate(fb_feed_log *l, uint64_t *stalls)
{
	/* relaxed: a hint; the wait itself is a futex on the word */
	if (l->gate && atomic_load_explicit(l->gate, memory_order_relaxed))
		fb_feed_gate_wait(l, stalls);
}

static inline bool fb_feed_near(fb_feed_log *l, const fb_check_rec *r, bool wait, uint64_t *stalls)
{
	return !l->wide || fb_feed_near_wait(l, r, wait, stalls);
}

/* checkers[d]: the checker of discipline d, NULL for none (its records are
 * dropped). signals: block SIGUSR1 (the pause) while a producer helps, so
 * that a pause cannot fall while it holds the feed's lock. */
fb_err fb_feed_create(uint32_t producers, uint32_t cap, fb_checker *const *checkers, bool signals,
                      fb_feed **out);
void fb_feed_destroy(fb_feed *f);

/* The stuck bound: a log whose head waits for a walk that has not moved
 * for max_wait_ns on clk calls stuck(ctx, key, d) once. Producers waiting
 * for room give up once *abort is set (the run failed), and spill once
 * *stop is (the run ends; NULL: never). Whoever sets either calls
 * fb_feed_wake. Before fb_feed_start. */
void fb_feed_bound(fb_feed *f, const _Atomic int *abort, const _Atomic int *stop,
                   const fb_clock *clk, uint64_t max_wait_ns,
                   void (*stuck)(void *ctx, uint32_t key, int d), void *ctx);

/* The run's end on the bound's clock (NULL: none), set before the
 * producers begin: a wait ends there as at the stop, said or not (the
 * producers that would say it may all be waiting). Before fb_feed_start. */
void fb_feed_end(fb_feed *f, const _Atomic uint64_t *end_at);

/*
 * The producers keep busy every core the feed's thread could run on (a
 * worker a core or more, on in-process engines): a pass of the thread's
 * own then preempts one of them, often a lease's holder, whose contenders
 * wait for it. The thread naps its longest between passes instead of
 * keeping the logs a quarter full, and a producer that finds its log full
 * takes the pass itself (fb_feed_room), on its own time slice. Measured
 * at -t 2 on 2 cores: the checked rate's median 13-20% higher. Before
 * fb_feed_start.
 */
void fb_feed_crowded(fb_feed *f);

fb_feed_log *fb_feed_log_of(fb_feed *f, uint32_t producer);

/* The feed's thread. FB_ESYS: it could not be started. */
fb_err fb_feed_start(fb_feed *f);

/* Every producer has stopped: walk all that can be walked, stop the thread. */
void fb_feed_stop(fb_feed *f);

/* One consumer's pass over every log (the feed's lock is taken; false: it
 * was held by another). *n: records taken. */
bool fb_feed_pass(fb_feed *f, uint64_t *n);

/* Wake every producer waiting for room, to look at the abort and stop
 * flags (set before the call). */
void fb_feed_wake(fb_feed *f);

/* Room for one record at the head of l, or NULL: the log is full. */
static inline fb_check_rec *fb_feed_slot(fb_feed_log *l)
{
	if (l->head == l->limit) {
		if (l->spilling)
			return NULL; /* what comes after a spilled record follows it */
		/* acquire: the consumer is done with the slots it released */
		l->limit = atomic_load_explicit(&l->tail, memory_order_acquire) + l->cap;
		if (l->head == l->limit)
			return NULL;
	}
	return &l->ring[l->slot];
}

/* The slot fb_feed_slot gave is filled: it is the log's next record. */
static inline void fb_feed_put(fb_feed_log *l)
{
	l->head++;
	if (++l->slot == l->cap)
		l->slot = 0;
}

/*
 * The next n slots of l, asked for now to be written: the consumer's core
 * read them last, so each of a commit's stores into them would wait for its
 * line to come back. Asked for as the cycle begins, the lines are here by
 * its commit. Only slots the consumer gave back, as last seen: one it may
 * still be reading would be taken from under it. A hint: nothing waits.
 * Inlined by force: gcc 12 judges a function of prefetches alone free of
 * effects, and drops its calls unless it is inlined first.
 */
static inline __attribute__((always_inline)) void fb_feed_prefetch(const fb_feed_log *l, uint32_t n)
{
	if (l->head + n <= l->limit && l->slot + n <= l->cap) { /* n in a row, given back */
		for (uint32_t i = 0; i < n; i++)
			__builtin_prefetch(&l->ring[l->slot + i], 1, 3);
		return;
	}
	for (uint32_t i = 0; i < n && l->head + i < l->limit; i++) {
		uint32_t s = l->slot + i; /* < 2 cap: head + i < limit <= tail + cap */
		__builtin_prefetch(&l->ring[s < l->cap ? s : s - l->cap], 1, 3);
	}
}

/* The records put so far are the consumer's. */
static inline void fb_feed_publish(fb_feed_log *l)
{
	/* release: the records' fields before the count that shows them */
	atomic_store_explicit(&l->published, l->head, memory_order_release);
	/* release: the count before the news, which a pass takes with an
	 * acquiring exchange. A plain store: a load first, to spare it,
	 * could see news that a pass was just taking, and the count would
	 * wait unseen. */
	if (l->news) {
		atomic_store_explicit(l->news, 1, memory_order_release);
		atomic_store_explicit(l->group, 1, memory_order_release);
	}
}

/*
 * l is full: publish what was put, help the consumer (a pass, if the lock
 * is free) and, if wait, wait until there is room. True: there is room now. False: still full and
 * !wait, or the wait was given up (*abort) or ended by the run's stop (the
 * log spills: fb_feed_spill). *stalls counts the waits.
 */
bool fb_feed_room(fb_feed_log *l, bool wait, uint64_t *stalls);

/*
 * l's wait for room, for a walk or at the gate ended at the run's end
 * (said or only due): its producer must begin no cycle after it. Waits
 * keep every record within the window; past the end they end, and a
 * producer cycling on would spill records as far ahead as it went.
 */
static inline bool fb_feed_spilling(const fb_feed_log *l)
{
	return l->spilling;
}

/* The run stopped while l was full: a slot in its spill for the next
 * record, already counted (no fb_feed_put). NULL: l does not spill (the
 * wait was given up), or no memory. */
fb_check_rec *fb_feed_spill(fb_feed_log *l);

/*
 * The consumer's capacity, measured alone (fencebench floor): one thread
 * fills a feed of `producers` logs with a correct store's records over
 * `keys` keys, a record a log in turn, and times only the passes that walk
 * them into a checker, for about duration_ns of passes. *records_s: records
 * walked a second of passes; *unwalked: records put that the checker did
 * not walk once the feed stopped (0 unless the feed lost one). FB_EINVAL: no
 * plan for these.
 */
fb_err fb_feed_capacity(uint32_t producers, uint32_t keys, uint64_t duration_ns, double *records_s,
                        uint64_t *unwalked);

#endif
