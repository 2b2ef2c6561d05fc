#include "verdict.h"

#include <stdarg.h>
#include <stdio.h>

void fb_disagree(bool *agrees, char *why, size_t len, const char *fmt, ...)
{
	if (!*agrees)
		return;
	*agrees = false;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

void fb_key_disagree(bool *agrees, char *why, size_t len, uint32_t key, bool fenced, int64_t ledger,
                     int64_t lost, int64_t history_balance, int64_t balance, uint64_t history_fence,
                     uint64_t last_fence)
{
	/* Every accepted write leaves the balance at most one amount below some
	 * earlier balance, so no store that applies only what it accepted
	 * ends below initial - accepted * amount: one that does applied more. */
	if (ledger < 0)
		fb_disagree(agrees, why, len,
		            "key %u: the store holds %lld less than its accepted writes can leave: "
		            "it applied a write it reported refused (or one from outside this run)",
		            key, (long long)-ledger);
	else if (ledger != lost)
		fb_disagree(agrees, why, len, "key %u: the ledger lost %lld, the history %lld", key,
		            (long long)ledger, (long long)lost);
	if (history_balance != balance)
		fb_disagree(agrees, why, len,
		            "key %u: the history ends at balance %lld, the store holds %lld", key,
		            (long long)history_balance, (long long)balance);
	if (fenced && history_fence != last_fence)
		fb_disagree(agrees, why, len,
		            "key %u: the history's highest fence is %llu, the store's last "
		            "accepted %llu",
		            key, (unsigned long long)history_fence, (unsigned long long)last_fence);
}
