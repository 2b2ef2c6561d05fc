/*
 * The checker: an independent witness of every accepted write, one per
 * storage discipline. It never calls the store's comparison code. The store
 * gives each accepted write its place in the key's commit order (the
 * version); the writer logs what it wrote (version, fence, balance read,
 * balance replaced, balance written) and the checker walks each key's
 * history in that order, by the rules of judge.h:
 *
 *   - a write whose fence is <= the highest fence accepted before it is a
 *     stale write the store accepted (the corruption count);
 *   - a write computed from a balance other than the one it replaced erased
 *     (read - replaced) / amount debits (lost updates, from the history);
 *   - a write whose "replaced" balance is not the previous write's result
 *     means the history itself is broken (chain breaks);
 *   - a version the walk took already is a duplicate: two writers shared
 *     one commit version (a check-and-apply split in two steps).
 *
 * The checker is one thread's at a time: records reach it through the feed
 * (feed.h), whose consumer holds the feed's lock. A record ahead of the
 * walk waits in its key's ring (bounded: memory does not grow with the
 * run); one beyond the ring is handed back and offered again later.
 */
#ifndef FB_CHECKER_H
#define FB_CHECKER_H

#include <stdbool.h>
#include <stdint.h>

#include "clock.h"
#include "common.h"
#include "store.h"

typedef struct fb_checker fb_checker;

/* One accepted write as its writer logs it: one cache line. */
typedef struct fb_check_rec {
	uint64_t fence;
	int64_t read;      /* the balance the write was computed from */
	int64_t replaced;  /* the balance the store replaced */
	int64_t written;   /* the balance the store holds after it */
	uint64_t wrote_at; /* when it was sent, on the lease service's clock */
	uint64_t version;  /* the store's commit order: mod 2^16 (dense), or whole (ordered) */
	uint32_t key;
	uint32_t held;   /* how long its writer's lease had been held: fb_check_held */
	uint16_t writer; /* the worker (1-based) */
	uint8_t d;       /* fb_discipline */
	/* what its cycle's write did at each store (the driver's fb_outcome) */
	uint8_t outcome[FB_DISCIPLINES];
	uint8_t delayed; /* the network held it: it landed late */
	uint8_t resent;  /* the second copy of a write whose acknowledgement was lost */
} fb_check_rec;

/* A lease's age at a write, in 32 bits for the record: nanoseconds below
 * 2^31, microseconds (rounded up, the top bit set) above, so the story's
 * acquire never lands after the write it made. */
static inline uint32_t fb_check_held(uint64_t wrote_at, uint64_t acquired_at)
{
	uint64_t ns = wrote_at > acquired_at ? wrote_at - acquired_at : 0;
	if (ns < (UINT64_C(1) << 31))
		return (uint32_t)ns;
	uint64_t us = (ns + 999) / 1000;
	return (uint32_t)((us < (UINT64_C(1) << 31) ? us : (UINT64_C(1) << 31) - 1) |
	                  (UINT64_C(1) << 31));
}

/* When r's writer acquired its lease, on the lease service's clock. */
static inline uint64_t fb_check_acquired_at(const fb_check_rec *r)
{
	uint64_t ns = r->held >> 31 ? (uint64_t)(r->held & 0x7fffffffu) * 1000 : r->held;
	return r->wrote_at > ns ? r->wrote_at - ns : 0;
}

_Static_assert(sizeof(fb_check_rec) == 64, "a record is one cache line");

typedef struct fb_check_key {
	uint64_t checked;        /* accepted writes walked */
	uint64_t stale_accepted; /* ... whose fence was not above every earlier one */
	int64_t lost_amount;     /* sum of (read - replaced) over them */
	uint64_t chain_breaks;   /* records that did not follow the previous one */
	uint64_t duplicates;     /* accepted writes with a version another one had */
	uint64_t max_fence;      /* highest fence accepted */
	int64_t balance;         /* the balance after the last walked write */
	uint64_t waited;         /* records that waited in the ring for an earlier one */
	uint16_t next_version;   /* version the walk waits for next */
} fb_check_key;

/* A commit's versions are the store's, mod 2^16. Of those, the checker
 * keeps at least this many behind the walk, to tell a version it took
 * already (a duplicate) from one still to come. */
#define FB_CHECKER_BEHIND 4096

/* The most accepted writes of one key per discipline that can be held by
 * their writers, not yet logged, at once: a worker holds at most two (a
 * write and its resent copy, logged after its release), the delay line
 * one. */
static inline uint32_t fb_checker_in_flight(uint32_t threads)
{
	return 2 * threads + 1;
}

/*
 * ahead: how many accepted writes of a key can exist, not yet walked,
 * beyond those waiting in its ring (in the feed's logs, and in flight).
 * Versions are 16-bit, so ring + ahead + FB_CHECKER_BEHIND must fit in
 * 2^16: the ring shrinks to 4 records to make room; FB_EINVAL beyond.
 */
fb_err fb_checker_create(uint32_t keys, uint32_t ahead, int64_t initial_balance, fb_checker **out);
void fb_checker_destroy(fb_checker *c);

/*
 * A checker for a store whose versions are its own (any strictly increasing
 * number per key: gapped, a global revision, a timestamp): the walk cannot
 * know which version comes next, so it holds each key's records until
 * calls[key], the writers' count of that store's write calls on the key
 * (FB_CALLS_*), says none is in flight and every accepted one is in hand
 * (fb_checker_settle), then walks them in version order. Every write
 * committed before a held one was counted in flight before it was sent, so
 * before the held one's reply: none is missed. Memory: what one key
 * accepts while a writer holds one of its writes unlogged (a pause), up to
 * FB_CHECKER_STAGED_MAX records in all, beyond which producers wait.
 */
#define FB_CALLS_ONE_ACCEPTED (UINT64_C(1) << 16)
#define FB_CALLS_IN_FLIGHT(w) ((w)&0xffffu)
#define FB_CALLS_ACCEPTED(w)  ((w) >> 16)
#define FB_CHECKER_STAGED_MAX (UINT64_C(1) << 24)
fb_err fb_checker_create_ordered(uint32_t keys, int64_t initial_balance,
                                 const _Atomic uint64_t *calls, fb_checker **out);

/* Ordered: walk every key whose writes are all in hand (all: every key, the
 * producers having stopped); the records walked. Dense checkers: 0. */
uint64_t fb_checker_settle(fb_checker *c, bool all);

typedef enum fb_check_place {
	FB_CHECK_TAKEN, /* walked, waiting in the ring, or counted as a duplicate */
	FB_CHECK_LATER, /* too far ahead of the walk for the ring: offer it again */
} fb_check_place;

/* Take one record (its key < keys): walk what can be walked. */
fb_check_place fb_checker_place(fb_checker *c, const fb_check_rec *r);

/*
 * A record offered LATER while the walk stands still: if fewer than its
 * distance ahead of the walk could be anywhere else (`elsewhere`: at most
 * that many accepted writes not yet walked outside the ring: logged, in
 * a writer's hands, in flight), the versions between cannot all come, so
 * it is behind the walk by more than the window can tell: a duplicate that
 * came very late. Counted, and true: the record is taken.
 */
bool fb_checker_take_behind(fb_checker *c, const fb_check_rec *r, uint64_t elsewhere);

/* The window: no legitimate record is this far ahead of its walk (mod
 * 2^16); 0 for an ordered checker, which has none. */
uint32_t fb_checker_window(const fb_checker *c);

/* Any thread: r is less than limit ahead of its key's walk as last seen,
 * or so far that it is behind it (a duplicate). An ordered checker: true.
 * The walk seen may be late: never later than the walk. */
bool fb_checker_near(const fb_checker *c, const fb_check_rec *r, uint32_t limit);

/* The version key's walk waits for. */
uint16_t fb_checker_next(const fb_checker *c, uint32_t key);

/* A commit's wait, as a bound judges it. */
typedef struct fb_checker_wait {
	bool waiting;
	uint16_t walk;  /* the walk's position when last seen moving */
	uint64_t since; /* ... and when, on the bound's clock */
} fb_checker_wait;

/* The bound's rule, alone: true once the walk (its next version, `walk`)
 * has stood still for more than max_wait at `now`. Any move restarts it. */
bool fb_checker_wait_expired(fb_checker_wait *wt, uint16_t walk, uint64_t now, uint64_t max_wait);

/*
 * The story of a stale write, for the first corruption's timeline: the
 * write, and the record that carried the highest fence before it (the
 * newer holder's write it went behind). A watch names the write to keep:
 * armed by its claimer (release) before the write is logged, so the
 * consumer that walks it sees the claim.
 */
typedef struct fb_check_watch {
	_Atomic int armed;
	uint32_t key;
	uint64_t fence;
	/* the consumer's, per discipline where that write was accepted stale */
	bool seen[FB_DISCIPLINES];
	fb_check_rec stale[FB_DISCIPLINES], newer[FB_DISCIPLINES];
} fb_check_watch;

/* Stale writes matching any of the n watches are kept in them (n <= 4). */
void fb_checker_watch(fb_checker *c, fb_check_watch *const *watches, int n);

/* The first stale write walked, whatever its key, and the newer write it
 * went behind (found false: none). */
typedef struct fb_check_story {
	bool found;
	fb_check_rec stale, newer;
} fb_check_story;
void fb_checker_first_stale(const fb_checker *c, fb_check_story *out);

/* A key's tallies (exact once the consumer is done). */
void fb_checker_key(const fb_checker *c, uint32_t key, fb_check_key *out);

/* The checker's verdict on one store, after every writer stopped. */
typedef struct fb_check_verdict {
	uint64_t checked, stale_accepted, chain_breaks;
	uint64_t duplicates; /* accepted writes that shared a version with another */
	uint32_t dup_key;    /* the first of them: its key and version */
	uint64_t dup_version;
	int64_t lost_updates; /* ledger: (final - (initial - accepted debits)) / amount */
	int64_t lost_history; /* the same, summed write by write from the history */
	bool agrees;
	char disagreement[160]; /* the first difference, when it does not */
} fb_check_verdict;

/* One key's numbers, for callers that report per key. */
typedef void (*fb_check_key_fn)(void *ctx, uint32_t key, const fb_check_key *ck, int64_t balance,
                                int64_t ledger, uint64_t last_fence);

/*
 * Compare the history walked with the store it watched: per key the ledger
 * (the final balance against the accepted debits) with the history's lost
 * amount, the history's last balance with the store's and, for the fenced
 * disciplines, its last fence (balance[k] and last_fence[k]: the store's,
 * read after the run); overall the writes walked with the `accepted` the
 * store reported, the stale ones with the store's own `store_stale`, and
 * no chain break. Reads the store, never calls its comparison code. Call
 * once the feed is drained.
 */
void fb_checker_verdict(const fb_checker *c, bool fenced, const int64_t *balance,
                        const uint64_t *last_fence, int64_t initial_balance, int64_t amount,
                        uint64_t accepted, uint64_t store_stale, fb_check_verdict *v,
                        fb_check_key_fn per_key, void *ctx);

/* What the walks found so far, summed over keys, readable while the run
 * goes on (the time series): the stale writes accepted, and the amount the
 * walked writes erased (the sum of read - replaced: / amount, the updates
 * lost, net: a stale write that raised a balance counts against it). */
void fb_checker_so_far(fb_checker *c, uint64_t *stale, int64_t *lost_amount);

#endif
