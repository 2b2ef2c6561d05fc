/*
 * The offline checker: re-verifies the history of accepted writes a store
 * recorded in the same step as each write (fencebench check), by the
 * checker's rules and never with the store's comparison code.
 *
 * Rows arrive in the store's order, discipline by discipline, key by key,
 * version by version; the checker keeps one small state per (discipline,
 * key) and none of the rows, so a history of millions of writes costs what
 * the keys cost. Within a key, versions must run 1, 2, ... n (the rules are
 * judge.h's, as the run's checker applies them):
 *
 *   - a row whose fence is <= the highest fence of the key's earlier rows
 *     is a stale write the store accepted (stale_accepted); the store's own
 *     flag (store_stale) must say the same of every row;
 *   - a missing version is a write the history lost (version_gaps), a
 *     version at or below the previous one a row out of order or twice;
 *   - a row whose `before` is not the previous row's `after` (the first
 *     row's not the initial balance) breaks the chain (chain_breaks);
 *   - a client's read-modify-write computed `after` from a balance of
 *     after + amount; what it replaced was `before`, so it erased
 *     (after + amount - before) / amount debits (lost, from the history).
 *
 * Then each discipline's finals (the store's balance and last accepted
 * fence of every key) close the books as fb_checker_verdict does: per key
 * the ledger (final - (initial - rows * amount)) against the history's lost
 * amount, the history's last balance against the store's and, for the two
 * fenced disciplines, the highest fence against the last accepted one.
 *
 * One thread feeds a checker; nothing in it is shared.
 */
#ifndef FB_HISTORY_H
#define FB_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "common.h"
#include "store.h"

typedef struct fb_history fb_history;

/* The first stale write of a discipline's history: who wrote it, and whose
 * write (the one that carried the key's highest fence before it) it went
 * behind. The history has no times: identities, fences and order. */
typedef struct fb_history_story {
	bool found;
	uint32_t key;
	uint64_t version, fence;
	uint32_t client, worker;
	uint64_t newer_fence, newer_version;
	uint32_t newer_client, newer_worker;
	int64_t erased; /* debits it wrote over */
} fb_history_story;

/* One discipline's numbers (or the total's), exact after finish. */
typedef struct fb_history_verdict {
	bool on;                  /* a discipline of the run's meta */
	bool finished;            /* its finals were given */
	uint64_t rows;            /* accepted writes in the history */
	uint64_t stale_accepted;  /* by the checker: fence <= an earlier row's */
	uint64_t store_stale;     /* rows the store itself flagged stale */
	uint64_t flag_mismatches; /* rows where the checker and the store's flag differ */
	uint64_t version_gaps;    /* versions missing: writes the history lost */
	uint64_t out_of_order;    /* rows whose version did not follow the previous one */
	uint64_t chain_breaks;    /* rows whose `before` was not the previous `after` */
	uint64_t foreign;         /* rows of a key (or discipline) outside the run's meta */
	int64_t lost_history;     /* debits erased, summed row by row */
	int64_t lost_updates;     /* debits erased, from the ledger (the run's number) */
	uint64_t max_fence;       /* the highest fence in the history */
	uint32_t keys_written;    /* keys with at least one row */
	uint32_t clients;         /* distinct client ids among the rows */
	bool stale_agrees;        /* the checker and the store flagged the same rows */
	bool agrees;              /* the history and the store agree on everything */
	char disagreement[200];   /* the first difference, when they do not */
	fb_history_story first;   /* its first stale write */
} fb_history_verdict;

/* One key's numbers, for callers that report per key (at finish). */
typedef struct fb_history_key {
	uint64_t rows;
	uint64_t stale_accepted;
	uint64_t max_fence;
	int64_t balance;     /* after the key's last row (initial if none) */
	int64_t lost_amount; /* sum of (after + amount - before) */
} fb_history_key;

typedef void (*fb_history_key_fn)(void *ctx, fb_discipline d, uint32_t key,
                                  const fb_history_key *hk, int64_t final_balance, int64_t ledger,
                                  uint64_t last_fence);

/* A client id and its rows per discipline. */
typedef struct fb_history_client {
	uint32_t id;
	uint64_t writes[FB_DISCIPLINES];
} fb_history_client;

/* For meta's keys in each discipline of meta->modes. FB_EINVAL for no key,
 * no discipline, or an amount of 0; FB_ENOMEM. */
fb_err fb_history_create(const fb_store_meta *meta, fb_history **out);
void fb_history_destroy(fb_history *h);

/* Walk one row (rows in the order of discipline, key, version). A row of a
 * key or discipline outside the meta is counted as foreign and otherwise
 * ignored. FB_ENOMEM: the row was walked but its client could not be
 * counted (the per-client numbers are short from then on). */
fb_err fb_history_feed(fb_history *h, const fb_history_row *r);

/* Rows fed so far (for a progress line). */
uint64_t fb_history_rows(const fb_history *h);

/*
 * Close discipline d's books with the store's finals (meta->keys entries
 * each) and fill v. per_key (NULL: none) sees every key. Calling it twice
 * for d, or for a discipline not in the meta, only fills v.
 */
void fb_history_finish(fb_history *h, fb_discipline d, const int64_t *final_balance,
                       const uint64_t *last_fence, fb_history_verdict *v, fb_history_key_fn per_key,
                       void *ctx);

/* Discipline d's numbers as they stand (exact once finished). */
void fb_history_verdict_of(const fb_history *h, fb_discipline d, fb_history_verdict *v);

/* The sum over the finished disciplines, with the foreign rows of
 * disciplines outside the meta; agrees when every part does. */
void fb_history_total(const fb_history *h, fb_history_verdict *v);

/* The distinct client ids in ascending order: up to max into out (NULL
 * with max 0 to count); returns how many there are (0 when out of memory
 * to sort them). */
size_t fb_history_clients(const fb_history *h, fb_history_client *out, size_t max);

/* The verdict in one word for d: "safe", "violated" (a fenced discipline
 * broke: exit 1), "lost_updates" (write-fenced under read-modify-write, the
 * lesson), "corrupted" / "clean" (unfenced), "disagrees" (unfenced, the
 * history out of step with the store). */
const char *fb_history_outcome(fb_discipline d, const fb_history_verdict *v);

/* Whether d's numbers fail the check (exit 1), as the run's verdict does:
 * fenced with a stale write, a lost update or any disagreement;
 * write-fenced with a stale write or a disagreement; unfenced with a
 * disagreement (the store's history is broken, whatever it accepted). */
bool fb_history_failed(fb_discipline d, const fb_history_verdict *v);

#endif
