/*
 * The pause injector: a thread that really suspends lease holders. Each
 * worker owns a fault port where it publishes its phase; the injector picks
 * a worker that holds a lease (a random worker is mostly waiting for one,
 * and a pause there proves nothing), and sends it SIGUSR1. The handler
 * blocks in nanosleep for the chosen length, async-signal-safe calls only,
 * then counts what the pause did: whether it hit a holder, whether it
 * outlasted the TTL, and whether the lease was taken over meanwhile.
 */
#ifndef FB_PAUSE_H
#define FB_PAUSE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "clock.h"
#include "common.h"
#include "fault.h"
#include "lease.h"

enum fb_phase {
	FB_PHASE_IDLE,      /* between cycles */
	FB_PHASE_ACQUIRING, /* asking for a lease */
	FB_PHASE_HOLDING,   /* holds key/fence: reads, writes, releases */
};

/*
 * A trap set on a key by a worker taking a takeover pause: the first later
 * holder of that key (a fence above `fence`) to reach its pause point is
 * held there until `wake_at` + `extra_ns`. One per key, on its own line.
 */
typedef struct fb_pause_trap {
	alignas(FB_CACHE_LINE) _Atomic uint64_t fence; /* 0: unarmed */
	_Atomic uint64_t wake_at, extra_ns;
} fb_pause_trap;

typedef struct fb_fault_port {
	/* written by the worker, read by the injector and the handler */
	_Atomic uint32_t phase;
	_Atomic uint32_t held_key;
	_Atomic uint64_t held_fence;
	/* written by the injector, cleared when the pause ends */
	_Atomic uint32_t pending;
	_Atomic uint32_t armed; /* an fb_fault_at: pause at that point of the cycle */
	_Atomic uint64_t pause_ns, extra_ns;
	pthread_t tid;
	fb_lease_table *leases;
	fb_pause_trap *traps; /* one per key */
	/* written only by the handler, on the worker's own thread */
	fb_counter pauses;    /* pauses taken */
	fb_counter hit;       /* ... that found the worker holding a lease */
	fb_counter over_ttl;  /* ... that lasted longer than the TTL */
	fb_counter takeovers; /* held leases another worker took over during a pause
	                         (counted by the worker when its release fails) */
	fb_counter paused_ns; /* total time suspended */
	fb_counter aimed;     /* ... taken at the pause point */
	fb_counter trapped;   /* ... of them as the taker caught by a takeover trap */
} fb_fault_port;

/* Publish the phase: what the injector aims at. Relaxed: the injector only
 * needs a recent value; the signal fence keeps the compiler from moving the
 * held key/fence stores past the phase store, which the handler (on this
 * same thread) relies on. */
static inline void fb_port_hold(fb_fault_port *p, uint32_t key, uint64_t fence)
{
	atomic_store_explicit(&p->held_key, key, memory_order_relaxed);
	atomic_store_explicit(&p->held_fence, fence, memory_order_relaxed);
	atomic_signal_fence(memory_order_release);
	atomic_store_explicit(&p->phase, FB_PHASE_HOLDING, memory_order_relaxed);
}

static inline void fb_port_phase(fb_fault_port *p, uint32_t phase)
{
	atomic_store_explicit(&p->phase, phase, memory_order_relaxed);
}

/* Suspend the calling worker for p->pause_ns and count what it did. */
void fb_pause_now(fb_fault_port *p, bool at_point);

/*
 * The pause point, between a holder's read and its write: take an aimed
 * pause if the injector armed one, or the trap a paused predecessor left on
 * this key. Two relaxed loads when nothing is armed.
 */
static inline void fb_pause_point(fb_fault_port *p, uint32_t key, uint64_t fence,
                                  const fb_clock *clk)
{
	/* acquire: pairs with the injector's release of `armed`, so pause_ns
	 * is the length it chose for this pause */
	if (atomic_load_explicit(&p->armed, memory_order_acquire))
		fb_pause_now(p, true);
	fb_pause_trap *t = &p->traps[key];
	uint64_t tf = atomic_load_explicit(&t->fence, memory_order_relaxed);
	if (!tf || fence <= tf)
		return;
	/* Take this worker out of the injector's choices first (it owns the
	 * pause while `pending`), then claim the trap; acquire on the claim:
	 * wake_at and extra_ns were stored before the fence. */
	uint32_t idle = 0;
	if (!atomic_compare_exchange_strong_explicit(&p->pending, &idle, 1, memory_order_acquire,
	                                             memory_order_relaxed))
		return;
	if (!atomic_compare_exchange_strong_explicit(&t->fence, &tf, 0, memory_order_acquire,
	                                             memory_order_relaxed)) {
		atomic_store_explicit(&p->pending, 0, memory_order_release);
		return;
	}
	uint64_t now = fb_clock_now(clk);
	uint64_t wake = atomic_load_explicit(&t->wake_at, memory_order_relaxed);
	uint64_t d = (wake > now ? wake - now : 0) +
	             atomic_load_explicit(&t->extra_ns, memory_order_relaxed);
	atomic_store_explicit(&p->pause_ns, d, memory_order_relaxed);
	fb_counter_add(&p->trapped, 1);
	fb_pause_now(p, true);
}

/* Install the SIGUSR1 handler (once per process). */
fb_err fb_pause_install(void);

/* Called by each worker thread at start: binds the handler to its port and
 * unblocks SIGUSR1 for this thread. */
void fb_pause_bind(fb_fault_port *port);

typedef struct fb_injector_config {
	double rate; /* pauses per second */
	uint64_t min_ns, max_ns;
	uint64_t seed;
	uint64_t ttl_ns;
	fb_fault_at at;
} fb_injector_config;

typedef struct fb_injector fb_injector;

typedef struct fb_injector_stats {
	uint64_t sent;   /* signals sent */
	uint64_t missed; /* sent to a worker not holding a lease: none held one */
} fb_injector_stats;

fb_err fb_injector_start(const fb_injector_config *cfg, fb_fault_port **ports, uint32_t n,
                         fb_injector **out);
/* Stop and join; *st gets the totals. */
void fb_injector_stop(fb_injector *inj, fb_injector_stats *st);

#endif
