/*
 * The lease witness: the checker's view of the lease table, independent of
 * the table's own code. Every acquire and release is reported to it, and
 * per key it keeps the newest lease it has heard of. A report that
 * contradicts it is a violation of the lease's own promises:
 *
 *   - a fence handed out twice for a key (duplicate);
 *   - a higher fence for an acquisition that began before a lower one's:
 *     the older lease carries the newer fence (the trap of DESIGN section 2);
 *   - an acquisition while the previous lease was live and not released:
 *     two holders at once (a lease that ignores expiry, a release that
 *     frees someone else's lease).
 *
 * Reports can arrive late and out of order (a reporter may be preempted);
 * only contradictions count, never mere lateness.
 */
#ifndef FB_WITNESS_H
#define FB_WITNESS_H

#include <stdint.h>

#include "common.h"

typedef struct fb_witness fb_witness;

typedef struct fb_witness_counts {
	uint64_t duplicates; /* a fence handed out twice for one key */
	uint64_t inversions; /* fence order against acquisition order */
	uint64_t overlaps;   /* acquired while the previous lease was live */
} fb_witness_counts;

/* slack_ns: how far apart two instants on the lease service's clock may
 * read and still be taken as equal (50 us for this process's TSC; a remote
 * service's clock rounds expiry to its own millisecond). */
fb_err fb_witness_create(uint32_t keys, uint64_t ttl_ns, uint64_t slack_ns, fb_witness **out);
void fb_witness_destroy(fb_witness *w);

/* A lease (fence, expires_at) was acquired on key; *c counts what it
 * contradicts (the caller's private counters). */
void fb_witness_acquired(fb_witness *w, uint32_t key, uint64_t fence, uint64_t expires_at,
                         fb_witness_counts *c);

/* Its holder is about to release it: call before the table's release, so
 * the next acquire can never see the slot free and the witness not told. */
void fb_witness_releasing(fb_witness *w, uint32_t key, uint64_t fence, uint64_t expires_at);

#endif
