/* Per-thread deterministic PRNG: splitmix64 to seed, xoshiro256** to draw.
 * Each worker and the injector own one; nothing is shared. */
#ifndef FB_PRNG_H
#define FB_PRNG_H

#include <stdint.h>

typedef struct fb_prng {
	uint64_t s[4];
} fb_prng;

static inline uint64_t fb_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* Stream `stream` of seed `seed`: workers use their id, the injector 0. */
static inline void fb_prng_init(fb_prng *p, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ (stream * UINT64_C(0xd1b54a32d192ed03));
	for (int i = 0; i < 4; i++)
		p->s[i] = fb_splitmix64(&x);
}

static inline uint64_t fb_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t fb_prng_next(fb_prng *p)
{
	uint64_t *s = p->s;
	uint64_t r = fb_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = fb_rotl(s[3], 45);
	return r;
}

/* Uniform in [0, n) by multiply-shift (Lemire), bias below 2^-32. */
static inline uint32_t fb_prng_below(fb_prng *p, uint32_t n)
{
	return (uint32_t)(((fb_prng_next(p) >> 32) * (uint64_t)n) >> 32);
}

/* Uniform in [0, 1). */
static inline double fb_prng_unit(fb_prng *p)
{
	return (double)(fb_prng_next(p) >> 11) * 0x1.0p-53;
}

#endif
