/*
 * Shared definitions: cache-line geometry, error codes, the 128-bit atomic
 * word that the lease table and the store linearize on.
 */
#ifndef FB_COMMON_H
#define FB_COMMON_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FB_VERSION "0.3.0"

/*
 * 64-byte lines, but the adjacent-line prefetcher on x86 pulls lines in
 * pairs, so anything written often by one thread and read by others is
 * padded to 128 bytes to keep false sharing off the pair.
 */
#define FB_CACHE_LINE 64
#define FB_PAD_LINE   128

/* Fences live in 47 bits everywhere (lease slot and store record share the
 * packing); 1.4e14 acquires is days at any rate this tool reaches. */
#define FB_FENCE_BITS 47
#define FB_FENCE_MAX  ((UINT64_C(1) << FB_FENCE_BITS) - 1)

/* Owners are 16-bit so a lease slot is two 64-bit words; 0 means "none". */
#define FB_OWNER_MAX UINT16_MAX

typedef enum fb_err {
	FB_OK = 0,
	FB_ENOMEM, /* allocation failed */
	FB_EINVAL, /* argument out of range */
	FB_EFENCE, /* the fence space is exhausted */
	FB_ESYS,   /* a system call failed; errno says which */
	FB_EENGINE, /* a remote engine stopped answering mid-run */
} fb_err;

const char *fb_strerror(fb_err e);

/*
 * A 16-byte value updated by one double-width compare-and-swap
 * (cmpxchg16b on x86-64). gcc routes it through libatomic, which picks the
 * lock-free instruction at load time; clang with -mcx16 inlines it.
 */
typedef struct fb_u128 {
	uint64_t lo;
	uint64_t hi;
} fb_u128;

typedef _Atomic(fb_u128) fb_atomic_u128;

/* Single-writer counter: a plain load and store, no lock prefix, but still
 * an atomic object so a reader thread sampling it is not a data race. */
typedef _Atomic uint64_t fb_counter;

static inline void fb_counter_add(fb_counter *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
	                      memory_order_relaxed);
}

static inline void fb_counter_reset(fb_counter *c)
{
	atomic_store_explicit(c, 0, memory_order_relaxed);
}

static inline uint64_t fb_counter_get(fb_counter *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

/* Raise *p to v if it is below (a CAS, with order on success; nothing
 * locked if it is not below). Returns what *p held before: below v when
 * this call raised it, else the value (>= v) that stood. */
static inline uint64_t fb_atomic_max(_Atomic uint64_t *p, uint64_t v, memory_order order)
{
	uint64_t cur = atomic_load_explicit(p, memory_order_relaxed);
	while (cur < v &&
	       !atomic_compare_exchange_weak_explicit(p, &cur, v, order, memory_order_relaxed))
		;
	return cur;
}

static inline void fb_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

#endif
