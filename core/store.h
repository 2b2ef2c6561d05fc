/*
 * The store: one record per key (balance, highest fence seen, last accepted
 * fence) under one of three disciplines. Each check-and-apply is one
 * double-width CAS, the in-process equivalent of
 *   UPDATE acct SET balance = $b, last_fence = $t WHERE id = $k AND last_fence < $t
 * so no lock is ever held across a caller's pause, and the store never asks
 * the lease table anything.
 */
#ifndef FB_STORE_H
#define FB_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "bug.h"
#include "common.h"

typedef enum fb_discipline {
	FB_FENCED,       /* reads and writes checked: the fix */
	FB_WRITE_FENCED, /* the article's check: a write needs token > last accepted */
	FB_UNFENCED,     /* everything succeeds: what a bare lease gives you */
	FB_DISCIPLINES
} fb_discipline;

/* "fenced", "write-fenced", "unfenced" (the command line's spelling). */
const char *fb_discipline_name(fb_discipline d);
/* "fenced", "write_fenced", "unfenced" (the JSON's spelling). */
const char *fb_discipline_key(fb_discipline d);

/* What one operation did and what it compared. */
typedef struct fb_store_result {
	bool ok;              /* read served / write accepted */
	bool stale;           /* write: token <= the highest fence accepted before it */
	uint64_t version;     /* accepted write: its place in the key's commit order (the
	                       * in-process store's mod 2^16; a remote store's whole) */
	int64_t balance;      /* read: the balance; write: the balance the store now holds */
	int64_t before;       /* write: the balance it replaced (or would have) */
	uint64_t token;       /* the caller's fence */
	uint64_t highest;     /* the highest fence the store had seen before this operation */
	bool highest_written; /* ... and whether that fence was also the last accepted write's */
	bool other;           /* refused for a reason of the store's own, not the token */
	uint64_t word_hi;     /* the record's fence word as this operation left it */
} fb_store_result;

typedef struct fb_store fb_store;

/* Tokens above FB_FENCE_MAX are refused by every operation (ok = false,
 * stale = false): no lease table can mint one. */
fb_err fb_store_create(fb_discipline d, uint32_t keys, int64_t initial_balance, fb_store **out);
void fb_store_destroy(fb_store *s);

/* Plant a store bug (FB_BUG_GE_STORE, _TRUST_CLIENT, _UNREGISTERED_READS);
 * others are ignored. Before any operation only. */
void fb_store_plant(fb_store *s, fb_bug bug);
fb_discipline fb_store_discipline(const fb_store *s);

/* fenced: refused if token < highest seen, otherwise registers token.
 * The other disciplines serve every read. */
bool fb_store_read(fb_store *s, uint32_t key, uint64_t token, fb_store_result *r);

/* Set the balance (a client's read-modify-write). fenced: accepted iff
 * token >= highest seen and token > last accepted; write-fenced: iff
 * token > last accepted; unfenced: always. */
bool fb_store_write(fb_store *s, uint32_t key, int64_t balance, uint64_t token, fb_store_result *r);

/* fb_store_write after a read of the same key by the same client: the CAS
 * is tried from the word the read left, without a load (a 16-byte load is a
 * locked cmpxchg16b with this machine's libatomic). Same result: a refusal
 * is decided on the record as it is, not on the word the read left. */
bool fb_store_write_after(fb_store *s, uint32_t key, int64_t balance, uint64_t token,
                          const fb_store_result *read, fb_store_result *r);

/* Subtract in the store (the article's debit(amount, token)); same checks. */
bool fb_store_debit(fb_store *s, uint32_t key, int64_t amount, uint64_t token, fb_store_result *r);

/* fb_store_debit by a client that remembers an earlier result on this key
 * (its balance and word_hi): the CAS is tried from that word. Same result:
 * a refusal is never decided on a remembered word. */
bool fb_store_debit_after(fb_store *s, uint32_t key, int64_t amount, uint64_t token,
                          const fb_store_result *earlier, fb_store_result *r);

int64_t fb_store_balance(fb_store *s, uint32_t key);
/* Keys 0..keys-1: each one's balance and last accepted fence, once the
 * writers are quiescent (what a checker's verdict compares with). */
void fb_store_final(fb_store *s, uint32_t keys, int64_t *balance, uint64_t *last_fence);
uint64_t fb_store_highest(fb_store *s, uint32_t key);
/* The fence of the last accepted write. Exact once writers are quiescent
 * (and always, in the two fenced disciplines, where accepted fences only
 * grow); 0 before any write. */
uint64_t fb_store_last_fence(fb_store *s, uint32_t key);

#endif
