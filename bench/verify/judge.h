/*
 * The rules of judgement, each once (DESIGN section 3). The online checker
 * (checker.c, fed by feed.c), the offline history checker (history.c, for
 * `fencebench check`), the scenario runner's books (scenario.c), the lease
 * witness (witness.c) and the cycle's judgement of a refusal decide here;
 * each keeps only how its records reach a rule (its own layout) and how it
 * words the result.
 *
 *   stale write accepted   fb_judge_stale
 *   lost update            fb_judge_erased (write by write), fb_judge_ledger
 *                          and fb_judge_books (the final balance's account),
 *                          fb_judge_lost (what a key's ledger counts)
 *   duplicate              fb_judge_version (whole versions), fb_judge_behind
 *                          and fb_judge_cannot_come (16-bit versions)
 *   chain break            fb_judge_chain_break
 *   false rejection        fb_judge_refusal, fb_judge_refusal_by_sent
 *   fence regression       fb_judge_regression (and fb_judge_fence_twice)
 *   two live holders       fb_judge_overlap (and fb_judge_inversion)
 *   a discipline's verdict fb_judge_fails
 *
 * None of them is the stores' comparison code (core/store.c): an
 * independent check cannot reuse the code it checks. Static inline: the
 * checker's consumer and the witness call them on their hot paths.
 * Balances come from stores that may be broken: the arithmetic wraps
 * rather than overflows (the two's complement result a reader computes).
 */
#ifndef FB_JUDGE_H
#define FB_JUDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "store.h"

static inline int64_t fb_judge_add(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}
static inline int64_t fb_judge_sub(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a - (uint64_t)b);
}

/* ---- stale write accepted ---- */

/*
 * A write accepted on a key is stale when its fence is not above the
 * highest fence accepted on that key before it: an equal fence is stale.
 * any: a fence was accepted before it, or the key starts at a floor. The
 * checker and the history start every key at fence 0 (the stores' own
 * start: a fenced store refuses a fence 0, an unfenced one flags it
 * stale); the scenario's books start with none, so that a scripted fence
 * 0 written first is not stale. A write that is not stale carries the
 * key's new highest fence.
 */
static inline bool fb_judge_stale(uint64_t fence, bool any, uint64_t highest)
{
	return any && fence <= highest;
}

/* ---- lost update ---- */

/* What one accepted write erased: the balance it was computed from less
 * the one it replaced (positive: debits written over; a stale write that
 * raised the balance counts against them). */
static inline int64_t fb_judge_erased(int64_t read, int64_t replaced)
{
	return fb_judge_sub(read, replaced);
}

/* The balance a key's accepted debits leave when each took `amount`. */
static inline int64_t fb_judge_expected(int64_t initial, uint64_t accepted, int64_t amount)
{
	return fb_judge_sub(initial, (int64_t)(accepted * (uint64_t)amount));
}

/* A key's ledger: its final balance above the one its accepted writes'
 * intent leads to (positive: the effect of debits is missing). */
static inline int64_t fb_judge_ledger(int64_t final_balance, int64_t expected)
{
	return fb_judge_sub(final_balance, expected);
}

typedef enum fb_judge_books {
	FB_JUDGE_BALANCED,  /* the final balance is what the accepted writes leave */
	FB_JUDGE_LOST,      /* above it: updates were lost */
	FB_JUDGE_OVERSPENT, /* below it: the store applied more than it accepted */
} fb_judge_books;

static inline fb_judge_books fb_judge_books_of(int64_t ledger)
{
	return !ledger ? FB_JUDGE_BALANCED : ledger > 0 ? FB_JUDGE_LOST : FB_JUDGE_OVERSPENT;
}

/* What a key's ledger adds to the updates lost (times the amount): below
 * zero the books do not balance, which is named (fb_judge_close_key),
 * never counted. */
static inline int64_t fb_judge_lost(int64_t ledger)
{
	return fb_judge_books_of(ledger) == FB_JUDGE_LOST ? ledger : 0;
}

/* ---- chain break ---- */

/* A write whose replaced balance is not the one the previous write of its
 * key left (the initial balance before the first) breaks the chain. */
static inline bool fb_judge_chain_break(int64_t replaced, int64_t left)
{
	return replaced != left;
}

/* ---- duplicate ---- */

typedef enum fb_judge_order {
	FB_JUDGE_IN_ORDER, /* the next version (or a legal gap) */
	FB_JUDGE_GAP,      /* versions missing before it: writes the history lost */
	FB_JUDGE_TWICE,    /* at or below one taken already: committed twice */
} fb_judge_order;

/*
 * A key's version against the last one taken (any: one was, or the key's
 * versions start above 0, as a dense history's run 1, 2, ...). gaps:
 * the store numbers its writes itself (a revision, a timestamp), so a gap
 * is legal.
 */
static inline fb_judge_order fb_judge_version(uint64_t version, bool any, uint64_t last, bool gaps)
{
	if (any && version <= last)
		return FB_JUDGE_TWICE;
	if (!gaps && version > last + 1)
		return FB_JUDGE_GAP;
	return FB_JUDGE_IN_ORDER;
}

/* Dense versions are kept mod 2^16: how far v is ahead of the walk's next. */
static inline uint16_t fb_judge_ahead(uint64_t version, uint16_t next)
{
	return (uint16_t)((uint16_t)version - next);
}

/* No legitimate version is `window` or more ahead of the walk (mod 2^16):
 * one that is, is behind it, a version the walk took already. */
static inline bool fb_judge_behind(uint16_t ahead, uint32_t window)
{
	return ahead >= window;
}

/* A version `ahead` of a walk that stands still, with at most `elsewhere`
 * accepted writes of its key not yet walked anywhere else: the ahead - 1
 * versions between cannot all come, so it is behind the walk by more than
 * the window tells, a duplicate that came very late. */
static inline bool fb_judge_cannot_come(uint16_t ahead, uint64_t elsewhere)
{
	return (uint64_t)ahead - 1 > elsewhere;
}

/* ---- false rejection ---- */

typedef enum fb_judge_refusal {
	FB_JUDGE_REFUSED_OTHER, /* for the store's own reason, or by the unfenced store */
	FB_JUDGE_REJECTED,      /* stale: a newer fence (or the caller's own) had reached it */
	FB_JUDGE_UNJUDGED,      /* fencebench does not see every call (a shared run) */
	FB_JUDGE_FALSE,         /* no newer fence had been sent: its rightful holder */
	FB_JUDGE_BY_SENT,       /* fb_judge_refusal_by_sent decides */
} fb_judge_refusal;

/*
 * A refusal (DESIGN section 3), before the record of what was sent is
 * read: a reason the store gave, or the unfenced store's (it has none to
 * refuse for), is that; the caller's own fence already accepted (own: a
 * resent copy) is stale; where fencebench does not see every call
 * (judging false) it is not judged; else the record decides.
 */
static inline fb_judge_refusal fb_judge_refusal_of(bool other, bool fenced, bool own, bool judging)
{
	if (other || !fenced)
		return FB_JUDGE_REFUSED_OTHER;
	if (own)
		return FB_JUDGE_REJECTED;
	return judging ? FB_JUDGE_BY_SENT : FB_JUDGE_UNJUDGED;
}

/* The record: stale if a call carrying a higher fence had been sent to that
 * store before the reply came back (sent: the highest sent), or an equal
 * one where the lease service handed a fence out twice (twice); otherwise
 * the store refused its rightful holder: a false rejection. Never the
 * lease's promise: a service that let a newer holder in makes the refusal
 * right, and the broken promise is the witness's. */
static inline fb_judge_refusal fb_judge_refusal_by_sent(uint64_t fence, uint64_t sent, bool twice)
{
	return sent > fence || (sent == fence && twice) ? FB_JUDGE_REJECTED : FB_JUDGE_FALSE;
}

/* ---- the lease's promises: fence regression, two live holders ---- */

/* An acquire whose fence is not above the one in the slot word it replaced
 * (replaced 0: not known). */
static inline bool fb_judge_regression(uint64_t fence, uint64_t replaced)
{
	return replaced && fence <= replaced;
}

/* A fence reported acquired that the newest acquire of its key carried
 * already: handed out twice. */
static inline bool fb_judge_fence_twice(uint64_t fence, uint64_t newest)
{
	return fence == newest;
}

/* The lease with the higher fence was acquired (higher_at) before the one
 * with the lower fence (lower_at), by more than the clocks' slack: the
 * older lease carries the newer fence (DESIGN section 2's trap). */
static inline bool fb_judge_inversion(uint64_t lower_at, uint64_t higher_at, uint64_t slack)
{
	return higher_at + slack < lower_at;
}

/*
 * Two live holders: a key acquired at `at` while the previous lease, not
 * released, was live until prev_expires (by more than slack); or, where
 * replies are judged (answers) and this one's instant is known
 * (answered_at, 0: not), answered more than answer_slack before the
 * previous holder was told its lease ends.
 */
static inline bool fb_judge_overlap(bool released, uint64_t prev_expires, uint64_t at,
                                    uint64_t slack, bool answers, uint64_t answered_at,
                                    uint64_t answer_slack)
{
	return !released && (at + slack < prev_expires ||
	                     (answers && answered_at && answered_at + answer_slack < prev_expires));
}

/* ---- a discipline's verdict ---- */

/*
 * Whether discipline d's numbers fail (exit 1): fenced with a stale write
 * accepted, an update lost or any disagreement; write-fenced with a stale
 * write or a disagreement (its lost updates under read-modify-write are
 * the lesson); unfenced only on a disagreement (its history is broken,
 * whatever it accepted).
 */
static inline bool fb_judge_fails(fb_discipline d, bool stale, bool lost, bool agrees)
{
	switch (d) {
	case FB_FENCED:
		return stale || lost || !agrees;
	case FB_WRITE_FENCED:
		return stale || !agrees;
	default:
		return !agrees;
	}
}

/* ---- closing the books, in words (judge.c) ---- */

/* The first reason a history and its store disagree (later ones are
 * usually its consequences): written into why once, *agrees cleared. */
void fb_disagree(bool *agrees, char *why, size_t len, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* What a key's walk left, against the store's finals. */
typedef struct fb_judge_walked {
	uint64_t accepted; /* accepted writes (duplicates included) */
	int64_t erased;    /* the sum of fb_judge_erased over them */
	int64_t balance;   /* the balance the last one left */
	uint64_t highest;  /* the highest fence among them */
} fb_judge_walked;

/* The run's sums over the keys closed: the positive ledgers and the
 * history's erased amounts (each / amount: the updates lost). */
typedef struct fb_judge_sums {
	int64_t lost, erased;
} fb_judge_sums;

/*
 * Close one key's books against the store it watched: its ledger (the
 * final balance against the accepted debits, returned) with the history's
 * erased amount, the history's last balance with the store's and, in a
 * fenced discipline, the highest fence walked with the store's last
 * accepted one; the first difference into why. The sums grow by its lost
 * and erased amounts.
 */
int64_t fb_judge_close_key(bool *agrees, char *why, size_t len, uint32_t key, bool fenced,
                           int64_t initial, int64_t amount, const fb_judge_walked *k,
                           int64_t final_balance, uint64_t last_fence, fb_judge_sums *sums);

#endif
