/*
 * The lease witness: the checker's view of the lease table, independent of
 * the table's own code. Every acquire and release is reported to it, and
 * per key it keeps the newest lease it has heard of. A report that
 * contradicts it is a violation of the lease's own promises (the rules of
 * judge.h):
 *
 *   - a fence handed out twice for a key (duplicate);
 *   - a fence not above the one the acquire replaced in the key's slot (a
 *     regression): judged on what the acquire's own atomic step returned,
 *     with no timing in the judgement, so every one is caught;
 *   - a higher fence for an acquisition that began before a lower one's:
 *     the older lease carries the newer fence (the trap of DESIGN section 2);
 *   - an acquisition while the previous lease was live and not released:
 *     two holders at once (a lease that ignores expiry, a release that
 *     frees someone else's lease);
 *   - liveness (issue 27), on the service's own evidence: a takeover
 *     refused at an instant later than the expiry of the lease the service
 *     named, or a lease granted (acquired, renewed) for longer than the TTL,
 *     by the service's clock plus the slack; where the service gives no
 *     instant (a remote engine), not judged;
 *   - a renewal that succeeded over a slot word not its caller's (as the
 *     in-process table says), or for a lease a newer acquire had replaced
 *     (reported before the renewal was sent: a remote engine), or that was
 *     sent after the lease's expiry (plus the slack), on a clock the caller
 *     shares with the service (the in-process table's; else not judged).
 *
 * Reports can arrive late and out of order (a reporter may be preempted);
 * only contradictions count, never mere lateness.
 */
#ifndef FB_WITNESS_H
#define FB_WITNESS_H

#include <stdint.h>

#include "common.h"

typedef struct fb_witness fb_witness;

/* A key's words in the witness (witness.c): the newest lease reported,
 * and the highest fence whose holder reported releasing it. */
typedef struct fb_witness_slot {
	fb_atomic_u128 word;
	_Atomic uint64_t released;
} fb_witness_slot;

typedef struct fb_witness_counts {
	uint64_t duplicates;    /* a fence handed out twice for one key */
	uint64_t inversions;    /* fence order against acquisition order */
	uint64_t overlaps;      /* acquired while the previous lease was live */
	uint64_t regressions;   /* a fence not above the one its acquire replaced */
	uint64_t held_past_ttl; /* a takeover refused, or a lease granted, past the TTL */
	uint64_t renew_taken;   /* a renewal succeeded for a lease already replaced */
	uint64_t renew_expired; /* a renewal succeeded, sent after the lease expired */
} fb_witness_counts;

/* The kinds of violation, for the example the report names. */
typedef enum fb_witness_kind {
	FB_WIT_DUPLICATE,
	FB_WIT_INVERSION,
	FB_WIT_OVERLAP,
	FB_WIT_REGRESSION,
	FB_WIT_HELD_PAST_TTL,
	FB_WIT_RENEW_TAKEN,
	FB_WIT_RENEW_EXPIRED,
	FB_WIT_KINDS
} fb_witness_kind;

/* The first violation of a kind: its key, the fence reported and the one
 * it contradicts (the newest heard of, or the one it replaced). */
typedef struct fb_witness_example {
	bool found;
	uint32_t key;
	uint64_t fence, other;
} fb_witness_example;

static inline uint64_t fb_witness_total(const fb_witness_counts *c)
{
	return c->duplicates + c->inversions + c->overlaps + c->regressions + c->held_past_ttl +
	       c->renew_taken + c->renew_expired;
}

/*
 * A reporter's memory of the words it left in the witness: on its next
 * report of a key it tries the CAS from that word, sparing the load (a
 * locked cmpxchg16b here, as dear as the CAS). A wrong guess costs the
 * failed CAS, which returns the truth; a verdict is never drawn from a
 * guess. Direct-mapped, key + 1 (0: empty).
 */
#define FB_WITNESS_MEMO 64
typedef struct fb_witness_memo {
	uint32_t key1[FB_WITNESS_MEMO];
	fb_u128 word[FB_WITNESS_MEMO];
} fb_witness_memo;

/* slack_ns: how far apart two instants on the lease service's clock may
 * read and still be taken as equal (50 us for this process's TSC; a remote
 * service's clock rounds expiry to its own millisecond). */
fb_err fb_witness_create(uint32_t keys, uint64_t ttl_ns, uint64_t slack_ns, fb_witness **out);

/* The same, keeping key k's slot at (char *)slots + k * stride, in the
 * caller's memory (kept until the witness is destroyed; slots and stride
 * multiples of alignof(fb_witness_slot), for the 16-byte CAS): beside what
 * else the caller keeps of the key, on the line a reporter has just taken
 * for it. */
fb_err fb_witness_create_at(uint32_t keys, uint64_t ttl_ns, uint64_t slack_ns,
                            fb_witness_slot *slots, size_t stride, fb_witness **out);
void fb_witness_destroy(fb_witness *w);

/*
 * Judge overlaps on the new holder's reply, against the previous lease's
 * stated validity end (issue 27, item 7), for an engine that states a
 * validity short_ns shorter than the TTL (Redlock: its drift allowance)
 * and dates its acquires on the caller's own clock: an acquire whose
 * reply (answered_at) came more than the in-process slack (50 us) before
 * the live lease it replaced stopped being valid, as its holder was told,
 * is an overlap. Reports then give expires_at as the stated end plus
 * short_ns (the acquisition instant plus the TTL, for a correct engine).
 * Call before any report.
 */
void fb_witness_judge_answers(fb_witness *w, uint64_t short_ns);

/* A lease (fence, expires_at) was acquired on key, replacing a slot word
 * that carried `replaced` (fb_lease.replaced; 0: not known); *c counts
 * what it contradicts (the caller's private counters). */
void fb_witness_acquired(fb_witness *w, uint32_t key, uint64_t fence, uint64_t replaced,
                         uint64_t expires_at, fb_witness_counts *c);

/* The same, starting from the reporter's memo (NULL: none). */
void fb_witness_acquired_memo(fb_witness *w, uint32_t key, uint64_t fence, uint64_t replaced,
                              uint64_t expires_at, fb_witness_counts *c, fb_witness_memo *memo);

/* The same, with the instant the acquire's reply came back on the clock of
 * expires_at (0: not known; the acquisition instant is used), which
 * fb_witness_judge_answers judges overlaps on. */
void fb_witness_acquired_answered(fb_witness *w, uint32_t key, uint64_t fence, uint64_t replaced,
                                  uint64_t expires_at, uint64_t answered_at, fb_witness_counts *c,
                                  fb_witness_memo *memo);

/* The first violation of kind k seen (found false: none). Exact once the
 * reporters have stopped. */
void fb_witness_example_of(fb_witness *w, fb_witness_kind k, fb_witness_example *out);

/*
 * Liveness, on the service's evidence. refused: the service refused an
 * acquire of key at its own instant judged_at, naming the lease (fence,
 * expires_at) as live: past expires_at + slack, the key was held past its
 * TTL. granted: it granted (fence, expires_at) at judged_at: an expiry
 * beyond judged_at + TTL + slack is a lease longer than the TTL. judged_at
 * 0: the service did not say; nothing is judged.
 */
void fb_witness_refused(fb_witness *w, uint32_t key, uint64_t fence, uint64_t expires_at,
                        uint64_t judged_at, fb_witness_counts *c);
void fb_witness_granted(fb_witness *w, uint32_t key, uint64_t fence, uint64_t expires_at,
                        uint64_t judged_at, fb_witness_counts *c);

/* The newest fence reported acquired on key (0: none), and when it was
 * acquired (*at, on the service's clock as the reports date it). */
uint64_t fb_witness_newest(fb_witness *w, uint32_t key, uint64_t *at);

/*
 * A renewal of (key, fence), acquired at acquired_at, succeeded. newest,
 * newest_at: fb_witness_newest read before it was sent. A newer holder's
 * acquire had come back (a higher fence, acquired later than this lease by
 * more than the slack: fence order alone is not acquisition order where
 * the service mints fences in a second step), so the lease was no longer
 * the caller's to renew. sent_at: when it was
 * sent on the service's own clock, and expires_at the lease's expiry then
 * (sent_at 0: the clocks are not shared; not judged).
 */
void fb_witness_renewed(fb_witness *w, uint32_t key, uint64_t fence, uint64_t acquired_at,
                        uint64_t newest, uint64_t newest_at, uint64_t sent_at, uint64_t expires_at,
                        fb_witness_counts *c);

/*
 * The same, for a service that says which slot word the renewal replaced
 * (the in-process table: fb_lease_renew's out->replaced, replaced_owner):
 * a renewal by (fence, owner) whose CAS replaced any other word (another
 * fence: a newer holder's, held or released; or the same fence under
 * another owner, the twin of a fence handed out twice, or none: released)
 * renewed a lease that was not its caller's, at whatever instant. No
 * timing, no race with the newer holder's report, and nothing read of the
 * witness. Late renewals as fb_witness_renewed.
 */
void fb_witness_renewed_over(fb_witness *w, uint32_t key, uint64_t fence, uint16_t owner,
                             uint64_t replaced, uint16_t replaced_owner, uint64_t sent_at,
                             uint64_t expires_at, fb_witness_counts *c);

/* Its holder is about to release (key, fence): call before the table's
 * release, so the next acquire can never see the slot free and the
 * witness not told. */
void fb_witness_releasing(fb_witness *w, uint32_t key, uint64_t fence);

#endif
