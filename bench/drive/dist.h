/*
 * How a worker picks the key of a cycle (--dist), shared by the real-thread
 * run and the deterministic simulator so both draw keys alike.
 */
#ifndef FB_DIST_H
#define FB_DIST_H

#include <stdint.h>

#include "options.h"
#include "prng.h"

/* zipf_cdf: the cumulative weights of keys 0..k (for FB_DIST_ZIPF only);
 * worker: 1..threads. */
static inline uint32_t fb_dist_pick(const fb_config *cfg, const double *zipf_cdf, uint16_t worker,
                                    fb_prng *rng)
{
	switch (cfg->dist.kind) {
	case FB_DIST_ZIPF: {
		/* inverse transform: the first key whose cumulative weight
		 * reaches a uniform draw */
		double u = fb_prng_unit(rng);
		uint32_t lo = 0, hi = cfg->keys - 1;
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;
			if (zipf_cdf[mid] < u)
				lo = mid + 1;
			else
				hi = mid;
		}
		return lo;
	}
	case FB_DIST_PARTITIONED: {
		/* worker i owns keys [i * keys / threads, (i + 1) * keys / threads);
		 * with more workers than keys, workers share key i % keys */
		uint64_t i = worker - 1u, lo = i * cfg->keys / cfg->threads,
		         hi = (i + 1) * cfg->keys / cfg->threads;
		if (hi == lo)
			return (uint32_t)(i % cfg->keys);
		return (uint32_t)(lo + fb_prng_below(rng, (uint32_t)(hi - lo)));
	}
	default:
		return fb_prng_below(rng, cfg->keys);
	}
}

#endif
