#include "judge.h"

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

int64_t fb_judge_close_key(bool *agrees, char *why, size_t len, uint32_t key, bool fenced,
                           int64_t initial, int64_t amount, const fb_judge_walked *k,
                           int64_t final_balance, uint64_t last_fence, fb_judge_sums *sums)
{
	int64_t ledger =
	        fb_judge_ledger(final_balance, fb_judge_expected(initial, k->accepted, amount));
	sums->lost = fb_judge_add(sums->lost, fb_judge_lost(ledger));
	sums->erased = fb_judge_add(sums->erased, k->erased);
	/* Every accepted write leaves the balance at most one amount below some
	 * earlier balance, so no store that applies only what it accepted
	 * ends below initial - accepted * amount: one that does applied more. */
	if (fb_judge_books_of(ledger) == FB_JUDGE_OVERSPENT)
		fb_disagree(agrees, why, len,
		            "key %u: the store holds %lld less than its accepted writes can leave: "
		            "it applied a write it reported refused (or one from outside this run)",
		            key, (long long)-ledger);
	else if (ledger != k->erased)
		fb_disagree(agrees, why, len, "key %u: the ledger lost %lld, the history %lld", key,
		            (long long)ledger, (long long)k->erased);
	if (k->balance != final_balance)
		fb_disagree(agrees, why, len,
		            "key %u: the history ends at balance %lld, the store holds %lld", key,
		            (long long)k->balance, (long long)final_balance);
	if (fenced && k->highest != last_fence)
		fb_disagree(agrees, why, len,
		            "key %u: the history's highest fence is %llu, the store's last "
		            "accepted %llu",
		            key, (unsigned long long)k->highest, (unsigned long long)last_fence);
	return ledger;
}
