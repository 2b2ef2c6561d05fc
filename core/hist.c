#include "hist.h"

#include <string.h>

void fb_hist_init(fb_hist *h)
{
	memset(h, 0, sizeof *h);
	h->min = UINT64_MAX;
}

void fb_hist_merge(fb_hist *dst, const fb_hist *src)
{
	for (unsigned i = 0; i < FB_HIST_BUCKETS; i++)
		dst->b[i] += src->b[i];
	dst->count += src->count;
	if (src->max > dst->max)
		dst->max = src->max;
	if (src->min < dst->min)
		dst->min = src->min;
}

uint64_t fb_hist_bucket_top(unsigned i)
{
	if (i < FB_HIST_LINEAR)
		return i;
	unsigned e = (i - FB_HIST_LINEAR) / (1u << FB_HIST_SUB_BITS) + 6;
	uint64_t sub = (i - FB_HIST_LINEAR) % (1u << FB_HIST_SUB_BITS);
	uint64_t lo = (UINT64_C(1) << e) | (sub << (e - FB_HIST_SUB_BITS));
	return lo + (UINT64_C(1) << (e - FB_HIST_SUB_BITS)) - 1;
}

uint64_t fb_hist_quantile(const fb_hist *h, double q)
{
	if (!h->count)
		return 0;
	if (q >= 1.0)
		return h->max;
	/* rank of the q-quantile, 1-based: the smallest value with at least
	 * q * count values at or below it */
	uint64_t rank = (uint64_t)(q * (double)h->count);
	if ((double)rank < q * (double)h->count || rank == 0)
		rank++;
	uint64_t seen = 0;
	for (unsigned i = 0; i < FB_HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= rank) {
			uint64_t top = fb_hist_bucket_top(i);
			return top < h->max ? top : h->max;
		}
	}
	return h->max;
}

uint64_t fb_hist_count_upto(const fb_hist *h, uint64_t v)
{
	uint64_t n = 0;
	unsigned last = fb_hist_bucket(v);
	for (unsigned i = 0; i <= last && i < FB_HIST_BUCKETS; i++)
		n += h->b[i];
	return n;
}
