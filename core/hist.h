/*
 * A small log-linear latency histogram (HdrHistogram's idea, our code):
 * values below 64 ns are exact, above that each power of two is split in 32
 * buckets, so any recorded value is known within 1/32 (3%). One writer; merged
 * after the join.
 */
#ifndef FB_HIST_H
#define FB_HIST_H

#include <stdint.h>

#define FB_HIST_SUB_BITS 5
#define FB_HIST_LINEAR   64
/* Values from 2^40 ns (18 minutes) up share the last power of two. */
#define FB_HIST_MAX_EXP 40
#define FB_HIST_BUCKETS (FB_HIST_LINEAR + (FB_HIST_MAX_EXP - 5) * (1 << FB_HIST_SUB_BITS))

typedef struct fb_hist {
	uint64_t count, max, min;
	uint64_t b[FB_HIST_BUCKETS];
} fb_hist;

void fb_hist_init(fb_hist *h);
void fb_hist_merge(fb_hist *dst, const fb_hist *src);
/* The value at quantile q (0..1): the highest value of the bucket holding
 * it, or the exact max for q == 1. 0 for an empty histogram. */
uint64_t fb_hist_quantile(const fb_hist *h, double q);

/* The largest value bucket i holds; how many values lie at or below v. */
uint64_t fb_hist_bucket_top(unsigned i);
uint64_t fb_hist_count_upto(const fb_hist *h, uint64_t v);

static inline unsigned fb_hist_bucket(uint64_t v)
{
	if (v < FB_HIST_LINEAR)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= 6 */
	if (e > FB_HIST_MAX_EXP)
		return FB_HIST_BUCKETS - 1;
	unsigned sub = (unsigned)(v >> (e - FB_HIST_SUB_BITS)) & ((1u << FB_HIST_SUB_BITS) - 1);
	return FB_HIST_LINEAR + (e - 6) * (1u << FB_HIST_SUB_BITS) + sub;
}

static inline void fb_hist_record(fb_hist *h, uint64_t v)
{
	h->b[fb_hist_bucket(v)]++;
	h->count++;
	if (v > h->max)
		h->max = v;
	if (v < h->min)
		h->min = v;
}

#endif
