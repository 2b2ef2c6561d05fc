/*
 * The checker: an independent witness of every accepted write, one per
 * storage discipline. It never calls the store's comparison code. The store
 * gives each accepted write its place in the key's commit order (the
 * version); the writer hands the checker (version, fence, balance read,
 * balance replaced, balance written), and the checker walks each key's
 * history in that order:
 *
 *   - a write whose fence is <= the highest fence accepted before it is a
 *     stale write the store accepted (the corruption count);
 *   - a write computed from a balance other than the one it replaced erased
 *     (read - replaced) / amount debits (lost updates, from the history);
 *   - a write whose "replaced" balance is not the previous write's result
 *     means the history itself is broken (chain breaks).
 *
 * History is a ring per key, bounded, so memory does not grow with the run.
 * Any thread may advance a key's walk (one 16-byte CAS per record), so a
 * paused thread never stalls the checking of records already published.
 */
#ifndef FB_CHECKER_H
#define FB_CHECKER_H

#include <stdbool.h>
#include <stdint.h>

#include "clock.h"
#include "common.h"
#include "store.h"

typedef struct fb_checker fb_checker;

typedef struct fb_check_key {
	uint64_t checked;        /* accepted writes walked */
	uint64_t stale_accepted; /* ... whose fence was not above every earlier one */
	int64_t lost_amount;     /* sum of (read - replaced) over them */
	uint64_t chain_breaks;   /* records that did not follow the previous one */
	uint64_t duplicates;     /* accepted writes with a version another one had */
	uint64_t max_fence;      /* highest fence accepted */
	int64_t balance;         /* the balance after the last walked write */
	uint16_t next_version;   /* version the walk waits for next */
} fb_check_key;

/* A commit's versions are the store's, mod 2^16. Of those, the checker
 * keeps at least this many behind the walk, to tell a version it took
 * already (a duplicate) from one still to come. */
#define FB_CHECKER_BEHIND 4096

/* How long a parked commit sleeps before it looks at its bound again (a
 * step of the walk, or fb_checker_wake, wakes it sooner). */
#define FB_CHECKER_NAP_NS (UINT64_C(50) * 1000000)

/* The most accepted writes of one key that can be held by their writers,
 * not yet committed, at once: a worker holds at most two (a write and its
 * resent copy, committed after its release), the delay line one. */
static inline uint32_t fb_checker_in_flight(uint32_t threads)
{
	return 2 * threads + 1;
}

/* in_flight: fb_checker_in_flight of the run's writers. Versions are 16-bit,
 * so ring + in_flight + FB_CHECKER_BEHIND must fit in 2^16 (the ring
 * shrinks to 4 records to make room; FB_EINVAL beyond). */
fb_err fb_checker_create(uint32_t keys, uint32_t in_flight, int64_t initial_balance,
                         fb_checker **out);
void fb_checker_destroy(fb_checker *c);

/*
 * Record an accepted write and walk what can be walked. Called by the writer
 * after the store accepted it (and after releasing the lease). A version
 * the walk has already taken (behind it, or parked twice) is a duplicate:
 * two writers shared one commit version, counted at once and named by the
 * verdict, never waited for. If the key's ring is full (a paused writer
 * holds back the walk) the commit parks on a futex until a step makes
 * room; *stalls counts such waits. False: the wait was given up
 * (fb_checker_bound) and the record dropped. prev_max: the highest fence
 * the store reported before this write (result.highest), a guess that
 * spares a load; any value is correct, a good one is faster.
 */
bool fb_checker_commit(fb_checker *c, uint32_t key, uint16_t version, uint64_t fence, int64_t read,
                       int64_t replaced, int64_t written, uint64_t prev_max, uint64_t *stalls);

/* The same without waiting: false if the ring is full (nothing recorded;
 * try again once the walk has moved), true otherwise. For a driver that
 * cannot block (the simulator). */
bool fb_checker_try_commit(fb_checker *c, uint32_t key, uint16_t version, uint64_t fence,
                           int64_t read, int64_t replaced, int64_t written, uint64_t prev_max);

/*
 * Bound a commit's wait for the walk. A version that never arrives (another
 * writer on the same store, a write whose reply was lost) would hold every
 * later commit of its key forever: such a wait gives up, and commit returns
 * false, once *abort is non-zero or when the walk has not moved for
 * max_wait_ns on clk (one writer's longest hold: a chain of holders, each
 * freeing the walk up to the next, is progress). Unbounded by default.
 */
void fb_checker_bound(fb_checker *c, const _Atomic int *abort, const fb_clock *clk,
                      uint64_t max_wait_ns);

/* How many commits are parked on key's ring now, waiting for room. */
uint32_t fb_checker_waiting(fb_checker *c, uint32_t key);

/* Wake every parked commit to look at its abort flag now. */
void fb_checker_wake(fb_checker *c);

/* A commit's wait, as the bound judges it. */
typedef struct fb_checker_wait {
	bool waiting;
	uint16_t walk;  /* the walk's position when last seen moving */
	uint64_t since; /* ... and when, on the bound's clock */
} fb_checker_wait;

/* The bound's rule, alone: true once the walk (its next version, `walk`)
 * has stood still for more than max_wait at `now`. Any move restarts it. */
bool fb_checker_wait_expired(fb_checker_wait *wt, uint16_t walk, uint64_t now, uint64_t max_wait);

/* Walk everything published. Call after every writer has stopped. */
void fb_checker_drain(fb_checker *c);

/* A key's tallies (exact once drained). */
void fb_checker_key(fb_checker *c, uint32_t key, fb_check_key *out);

/* The checker's verdict on one store, after every writer stopped. */
typedef struct fb_check_verdict {
	uint64_t checked, stale_accepted, chain_breaks;
	uint64_t duplicates; /* accepted writes that shared a version with another */
	uint32_t dup_key;    /* the first of them: its key and version */
	uint16_t dup_version;
	int64_t lost_updates; /* ledger: (final - (initial - accepted debits)) / amount */
	int64_t lost_history; /* the same, summed write by write from the history */
	bool agrees;
	char disagreement[160]; /* the first difference, when it does not */
} fb_check_verdict;

/* One key's numbers, for callers that report per key. */
typedef void (*fb_check_key_fn)(void *ctx, uint32_t key, const fb_check_key *ck, int64_t balance,
                                int64_t ledger, uint64_t last_fence);

/*
 * Walk to the end and compare the history with the store it watched: per
 * key the ledger (the final balance against the accepted debits) with the
 * history's lost amount, the history's last balance with the store's and,
 * for the fenced disciplines, its last fence (balance[k] and last_fence[k]:
 * the store's, read after the run); overall the writes walked
 * with the `accepted` the store reported, the stale ones with the store's
 * own `store_stale`, and no chain break. Reads the store, never calls its
 * comparison code.
 */
void fb_checker_verdict(fb_checker *c, bool fenced, const int64_t *balance,
                        const uint64_t *last_fence, int64_t initial_balance, int64_t amount,
                        uint64_t accepted, uint64_t store_stale, fb_check_verdict *v,
                        fb_check_key_fn per_key, void *ctx);

/* What the walks found so far, summed over keys, readable while the run
 * goes on (the time series): the stale writes accepted, and the amount the
 * walked writes erased (the sum of read - replaced: / amount, the updates
 * lost, net: a stale write that raised a balance counts against it). */
void fb_checker_so_far(fb_checker *c, uint64_t *stale, int64_t *lost_amount);

#endif
