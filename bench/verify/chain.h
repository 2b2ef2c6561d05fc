/*
 * The lease chain (issue 26): the lease witness judged from what each
 * holder logs, in any order, with no shared word on the holders' path.
 *
 * A table that changes a key's slot word with one CAS replaces each lease's
 * word with exactly one later acquire, and every acquire says which word it
 * replaced (fence, and owner: 0 where it had been released). So each lease
 * links to the one before it, and the links order a key's leases with no
 * clock and no report race. Each holder logs one record a lease, at its end
 * (released, refused, died, or still held when the run ended): its fence,
 * the word its acquire replaced, when it was acquired and the last expiry
 * the table gave its own word, and how it ended. The chain judges a link
 * once both its records are in, whichever came first:
 *
 *   - two live holders: the new lease was acquired before the old one's
 *     expiry, and the old holder had not released its own word (the table's
 *     own instants: exact, with no slack, even on a stepped clock, since a
 *     correct table decides by the same numbers);
 *   - a fork: a word replaced by two acquires, or a word that carried a
 *     lease's fence under another owner (a slot taken without minting:
 *     the two-step trap, DESIGN section 2). Judged at the end, and only
 *     when every record is in (fb_chain_finish's complete): an acquire
 *     whose replaced word no lease's record claims. Never on absence
 *     before then: a holder paused past its TTL logs its lease late.
 *
 * A fence at or below the one it replaced is its holder's to count (the
 * witness's regression, judged on the acquire alone). Memory: an end waits
 * only until the other comes, so a key holds its last lease and the leases
 * whose holders have not logged yet.
 *
 * Only where the table says which word each change replaced (the in-process
 * table): a remote service keeps the CAS witness (witness.h). One thread's
 * at a time.
 */
#ifndef FB_CHAIN_H
#define FB_CHAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"

typedef enum fb_chain_end {
	FB_CHAIN_HELD,      /* never released its own word: died, refused, or the run ended */
	FB_CHAIN_RELEASED,  /* its release freed its own word */
	FB_CHAIN_FREED_ANY, /* its release freed a word that was not its own */
} fb_chain_end;

/* One lease, from its acquire to its end, as its holder logs it. */
typedef struct fb_chain_rec {
	uint64_t fence;
	uint64_t replaced;   /* the fence of the word its acquire replaced */
	uint64_t at;         /* acquired, on the table's clock */
	uint64_t expires_at; /* the last expiry the table gave its own word */
	uint32_t key;
	uint16_t owner;
	uint16_t replaced_owner; /* the replaced word's owner; 0: released */
	uint8_t end;             /* fb_chain_end */
} fb_chain_rec;

typedef enum fb_chain_kind {
	FB_CHAIN_OVERLAP,
	FB_CHAIN_FORK,     /* any fork */
	FB_CHAIN_TWICE,    /* a fence handed out twice: a link, or a fork, of equal fences */
	FB_CHAIN_INVERTED, /* an older acquisition with the newer fence */
	FB_CHAIN_UNNAMED,  /* a fork neither names */
	FB_CHAIN_KINDS
} fb_chain_kind;

/*
 * What the links say of the fences, in slot order (no clock): a lease whose
 * fence equals the one it replaced is a fence handed out twice; below it,
 * the older acquisition carries the newer fence. A fork is named by the
 * lease that put the forked word in the slot, where its record is in: the
 * word's owner's lease that replaced the same word before it (the two-step
 * trap: the slot taken under the old fence, minted after). Its fence equal
 * to the fork's: handed out twice; above it, acquired no later: out of
 * acquisition order. The rest stay forks: a word replaced twice (a renewal
 * or a store over a newer holder's word, a compare-and-swap split in two),
 * or one its owner never minted under a fence that orders them.
 */
typedef struct fb_chain_counts {
	uint64_t records, links;
	uint64_t overlaps, forks;
	uint64_t twice, inverted;             /* links (below) and forks so named */
	uint64_t forks_twice, forks_inverted; /* ... of which forks */
	uint64_t waiting; /* ends of links waiting for the other: the chain's memory */
} fb_chain_counts;

/* The forks no fence order names. */
static inline uint64_t fb_chain_unnamed_forks(const fb_chain_counts *k)
{
	return k->forks - k->forks_twice - k->forks_inverted;
}

/* The first violation of a kind: key, the lease's fence, the other's. */
typedef struct fb_chain_example {
	bool found;
	uint32_t key;
	uint64_t fence, other;
} fb_chain_example;

typedef struct fb_chain fb_chain;

/* start: the fence of every key's first word (0 for a global fence source,
 * first_fence - 1 per key); slack: an overlap shorter than this is not
 * one (0 in process: expiry is the table's own number). */
fb_err fb_chain_create(uint32_t keys, uint64_t start, uint64_t slack, fb_chain **out);
void fb_chain_destroy(fb_chain *c);

/* One lease's record, in any order. FB_ENOMEM: it could not be kept (the
 * chain then judges nothing more: fb_chain_finish says so). */
fb_err fb_chain_take(fb_chain *c, const fb_chain_rec *r);

/* The run is over. complete: every lease's record was taken; then a record
 * whose predecessor never came is a fork. False: the chain could not judge
 * (a record lost, or no memory). */
bool fb_chain_finish(fb_chain *c, bool complete);

const fb_chain_counts *fb_chain_counts_of(const fb_chain *c);
void fb_chain_example_of(const fb_chain *c, fb_chain_kind k, fb_chain_example *out);

#endif
