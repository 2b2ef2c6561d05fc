/* Per-thread deterministic PRNG: splitmix64 to seed, xoshiro256** to draw.
 * Each worker and the injector own one; nothing is shared. */
#ifndef FB_PRNG_H
#define FB_PRNG_H

#include <math.h>
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

/*
 * -ln(u) for u in (0, 1], from frexp and IEEE basic arithmetic only: libm's
 * log may round differently from one libc to the next, and a seed's
 * schedule must not. ln(m) by the atanh series, m in [0.5, 1).
 */
static inline double fb_neg_log(double u)
{
	int e;
	double m = frexp(u, &e);
	double z = (m - 1) / (m + 1), z2 = z * z, term = z, sum = 0;
	for (int k = 1; k < 64; k += 2) {
		sum += term / k;
		term *= z2;
	}
	return -(2 * sum + e * 0.69314718055994530942);
}

/* e^x for x <= 0, by the same rule: x = n ln2 + r, |r| <= ln2 / 2, e^r by
 * its Taylor series, and ldexp (exact) for the 2^n. */
static inline double fb_exp_neg(double x)
{
	const double ln2 = 0.69314718055994530942;
	double n = (double)(int64_t)(x / ln2 + (x < 0 ? -0.5 : 0.5));
	double r = x - n * ln2, term = 1, sum = 1;
	if (n < -1070)
		return 0;
	for (int k = 1; k < 24; k++) {
		term *= r / k;
		sum += term;
	}
	return ldexp(sum, (int)n);
}

/* An exponential gap of mean `mean` (a Poisson stream's), at least 1. */
static inline uint64_t fb_prng_exp(fb_prng *p, double mean)
{
	double t = mean * fb_neg_log(1.0 - fb_prng_unit(p));
	return t < 1 ? 1 : t > 1e18 ? UINT64_C(1000000000000000000) : (uint64_t)t;
}

#endif
