/* How a checker words its verdict: the first reason a history and its store
 * disagree (the checker of the run and the offline one of `check`). */
#ifndef FB_VERDICT_H
#define FB_VERDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The first reason a history and its store disagree (later ones are
 * usually its consequences): written into why once, *agrees cleared. */
void fb_disagree(bool *agrees, char *why, size_t len, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* One key's history against its store after the run: the debits the
 * ledger misses against those the history lost, the final balances and,
 * in a fenced discipline, the highest fence walked against the store's
 * last accepted one. */
void fb_key_disagree(bool *agrees, char *why, size_t len, uint32_t key, bool fenced, int64_t ledger,
                     int64_t lost, int64_t history_balance, int64_t balance, uint64_t history_fence,
                     uint64_t last_fence);

#endif
