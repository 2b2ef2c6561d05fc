/*
 * The lease table: `keys` slots, each alone on a 128-byte line, each one
 * 16-byte word (fence, owner, expires_at) changed only by a double-width
 * CAS. Acquire is that single CAS: the slot's move to (owner, fence,
 * expires_at) and the minting of the fence cannot be separated, so no
 * holder can ever carry a fence older than the slot's previous one.
 */
#ifndef FB_LEASE_H
#define FB_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "bug.h"
#include "clock.h"
#include "common.h"

typedef enum fb_fence_source {
	FB_FENCE_GLOBAL,  /* one counter for the table, fetch_add (etcd revision, zxid) */
	FB_FENCE_PER_KEY, /* the slot's own generation: no shared hot line */
} fb_fence_source;

const char *fb_fence_source_name(fb_fence_source s);

typedef struct fb_lease_config {
	uint32_t keys;
	uint64_t ttl_ns;
	fb_fence_source source;
	uint64_t first_fence;  /* 1 in production, 33 in Kleppmann's diagram */
	const fb_clock *clock; /* the lease service's clock */
	fb_bug bug;            /* FB_BUG_NONE, or a planted lease bug */
	/* two-step only: called between taking the slot and minting the fence,
	 * where a fault can strike (the trap of DESIGN section 2) */
	void (*between)(void *ctx);
	void *between_ctx;
} fb_lease_config;

/* One lease as the slot held it. owner 0: the slot is free. */
typedef struct fb_lease {
	uint64_t fence;
	uint64_t expires_at;
	uint16_t owner;
	/* For an acquire or a renewal by the in-process table, the owner of
	 * the word its CAS replaced (see replaced): for an acquire, the
	 * previous holder's, or 0 where it had released; for a renewal, the
	 * caller, in a correct table. */
	uint16_t replaced_owner;
	/* When it was acquired on the lease service's own clock: for a remote
	 * service, its clock, not the caller's. Filled by remote engines only
	 * (the in-process table's is expires_at - ttl). */
	uint64_t service_at;
	/* The fence of the slot word this acquire replaced (the previous
	 * lease's, or the one a release left behind), as the service itself
	 * reports it: a correct service always mints above it, so the lease
	 * witness judges `fence <= replaced` a regression with no timing in
	 * the judgement. 0: none before, or the service cannot say. For a
	 * renewal by the in-process table (fb_lease_renew), the fence of the
	 * word it replaced: always the caller's, in a correct table. */
	uint64_t replaced;
	/* The instant, on the service's own clock, at which it granted this
	 * lease (acquire, renew) or found it live (FB_HELD): the service's
	 * evidence for the lease witness's liveness judgements (issue 27).
	 * 0: the service does not say (then they are not judged). */
	uint64_t judged_at;
	/* When the acquire's reply came back, on service_at's clock (issue
	 * 27): filled by an engine that states a validity shorter than the
	 * TTL (fb_lease_ops.validity_short_ns). 0: not given. */
	uint64_t answered_at;
} fb_lease;

typedef enum fb_acquire {
	FB_ACQUIRED,  /* *out is the new lease */
	FB_HELD,      /* a live lease stands; *out is it */
	FB_EXHAUSTED, /* no fence left below FB_FENCE_MAX */
	FB_ACQ_ERROR, /* a remote lease service did not answer */
} fb_acquire;

/* The caller's private contention counters; the table never shares them. */
typedef struct fb_lease_stats {
	uint64_t cas_retries;   /* acquire CASes that lost a race and went round again */
	uint64_t wasted_fences; /* fences minted by the global source and never installed */
} fb_lease_stats;

typedef struct fb_lease_table fb_lease_table;

fb_err fb_lease_table_create(const fb_lease_config *cfg, fb_lease_table **out);

/* The fence every slot starts with: one below the first fence per key (its
 * first acquire mints exactly first_fence), 0 for the global source (below
 * anything the counter hands out). */
static inline uint64_t fb_lease_start_fence(fb_fence_source s, uint64_t first_fence)
{
	return s == FB_FENCE_PER_KEY ? first_fence - 1 : 0;
}
void fb_lease_table_destroy(fb_lease_table *t);

/* Take `key` for `owner` if it is free or expired (expires_at <= now),
 * minting a fence greater than every fence this slot ever carried. */
fb_acquire fb_lease_acquire(fb_lease_table *t, uint32_t key, uint16_t owner, fb_lease *out,
                            fb_lease_stats *st);

/* The same, first trying the slot word `guess` (what this caller's last
 * release of the key left: fence, owner 0, expiry 0) without a load; used
 * only with per-key fences. Same result as fb_lease_acquire. */
fb_acquire fb_lease_acquire_from(fb_lease_table *t, uint32_t key, uint16_t owner,
                                 const fb_lease *guess, fb_lease *out, fb_lease_stats *st);

/* Compare-and-delete: frees the slot only if it still carries (owner, fence).
 * A late release by an old holder never frees a newer holder's lease. */
bool fb_lease_release(fb_lease_table *t, uint32_t key, uint16_t owner, uint64_t fence);

/* The same, by a holder passing the lease its acquire returned: the CAS is
 * tried from that word first, without a load. Released, *freed (NULL: not
 * asked) is the word the CAS freed: fence, owner and expiry, the caller's
 * own lease in a correct table. */
bool fb_lease_release_lease(fb_lease_table *t, uint32_t key, const fb_lease *l, fb_lease *freed);

/* True only while the slot carries owner's lease and it has not expired. */
bool fb_lease_is_held(fb_lease_table *t, uint32_t key, uint16_t owner);

/* Heartbeat: push (owner, fence)'s expiry to now + ttl, only if that lease
 * is still the slot's and still live. On success *out is the renewed lease,
 * out->replaced and out->replaced_owner the fence and owner of the word its
 * CAS replaced (fence and owner themselves, in a correct table). */
bool fb_lease_renew(fb_lease_table *t, uint32_t key, uint16_t owner, uint64_t fence, fb_lease *out);

/* The slot as it is now (a snapshot; async-signal-safe). */
fb_lease fb_lease_peek(fb_lease_table *t, uint32_t key);

/*
 * Room the table lends beside each key's word, on the key's own pair of
 * lines: a caller's per-key words there move between the cores with the
 * lease, which carries the line anyway. Key k's room is *room bytes at
 * the returned address + k * *stride, 16-byte aligned; the table never
 * reads or writes it.
 */
void *fb_lease_table_side(fb_lease_table *t, size_t *stride, size_t *room);

uint64_t fb_lease_ttl(const fb_lease_table *t);
const fb_clock *fb_lease_clock(const fb_lease_table *t);

#endif
