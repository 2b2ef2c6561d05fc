/*
 * The fault injector (DESIGN section 4) under real threads. Each worker
 * owns a fault port: it publishes its phase and cycle there, and the
 * injector arms faults on it. A pause "anywhere" is a real suspension:
 * SIGUSR1, whose handler blocks in nanosleep (async-signal-safe calls
 * only). Every other fault, and pauses aimed at a named point of the cycle,
 * are armed on the port and taken by the worker when it reaches that point.
 *
 * One injector thread draws a Poisson stream of faults from the seed, each
 * fault type at its own rate, and aims at workers that hold a lease (a
 * random worker is mostly waiting for one, and a fault there proves
 * nothing).
 */
#ifndef FB_INJECT_H
#define FB_INJECT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "clock.h"
#include "common.h"
#include "fault.h"
#include "lease.h"
#include "plan.h"
#include "prng.h"

enum fb_phase {
	FB_PHASE_IDLE,      /* between cycles */
	FB_PHASE_ACQUIRING, /* asking for a lease */
	FB_PHASE_HOLDING,   /* holds key/fence: reads, writes, releases */
	FB_PHASE_DEAD,      /* crashed: holds its last lease forever */
};

/*
 * A trap set on a key by a worker taking a takeover pause: the first later
 * holder of that key (a fence above `fence`) to reach its after-read point
 * is held there until `wake_at` + `extra_ns`. One per key, on its own line.
 */
typedef struct fb_pause_trap {
	alignas(FB_CACHE_LINE) _Atomic uint64_t fence; /* 0: unarmed */
	_Atomic uint64_t wake_at, extra_ns;
} fb_pause_trap;

/* Where a trapped taker's pause struck: after its read, as a consequence. */
#define FB_AT_TRAPPED FB_AT_COUNT

/* An armed fault: fault << 8 | where. 0: nothing armed. */
#define FB_ARM(fault, at) (1u << 16 | (uint32_t)(fault) << 8 | (uint32_t)(at))
#define FB_ARM_FAULT(a)   ((fb_fault)(((a) >> 8) & 0xff))
#define FB_ARM_AT(a)      ((fb_fault_at)((a)&0xff))

typedef struct fb_fault_port {
	/* written by the worker, read by the injector and the handler */
	_Atomic uint32_t phase;
	_Atomic uint32_t held_key;
	_Atomic uint64_t held_fence;
	_Atomic uint64_t cycle;
	/* set by the injector (or a plan), cleared when the fault is over */
	_Atomic uint32_t pending;
	_Atomic uint32_t armed;
	_Atomic uint64_t arg_ns, extra_ns; /* length or size; a takeover trap's extra */
	/* fault types taken in the current cycle: set here and by the handler */
	_Atomic uint32_t faulted;
	/* the last pause: when (lease clock), how long, where (for the timeline) */
	_Atomic uint64_t last_at, last_ns;
	_Atomic uint32_t last_where;
	/* the pause under way, between its begin and its end (the owner's) */
	uint64_t pause_t0;
	bool pause_at_point, pause_holding;
	pthread_t tid;
	uint16_t worker;
	uint64_t ttl_ns;             /* the leases' TTL: what a fault must outlast */
	const fb_clock *lease_clock; /* the lease service's clock, as the caller reads it */
	fb_pause_trap *traps;        /* one per key */
	fb_plan_log *log;            /* where taken faults are recorded (--plan-out), or NULL */
	_Atomic int *stop;           /* the run's: set, every sleep of the run ends */
	/* counters written only on the worker's own thread (main flow or handler,
	 * never both at once: `pending` keeps them apart) */
	fb_counter taken[FB_FAULTS];
	fb_counter over_ttl[FB_FAULTS];  /* ... that lasted longer than the TTL (pauses: measured
	                                    on the lease clock from begin to end) */
	fb_counter hit;                       /* pauses that found the worker holding a lease */
	fb_counter at_point;                  /* pauses taken at a named point */
	fb_counter trapped;                   /* takers caught by a takeover trap */
	fb_counter paused_ns;                 /* total time suspended */
	fb_counter cut_short;                 /* pauses the run's end cut short */
} fb_fault_port;

/* Publish the phase: what the injector aims at. The signal fence keeps the
 * compiler from moving the held key/fence stores past the phase store,
 * which the handler (on this same thread) relies on. */
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

/* What is armed for this worker now (0: nothing). acquire: pairs with the
 * arming's release, so arg_ns and extra_ns are the ones chosen for it. */
static inline uint32_t fb_port_armed(fb_fault_port *p)
{
	return atomic_load_explicit(&p->armed, memory_order_acquire);
}

/* The armed fault is being taken: disarm it, note it in the cycle, count it. */
void fb_port_take(fb_fault_port *p, fb_fault f, uint64_t arg_ns);

/* The armed fault is over: the injector may aim at this worker again. */
static inline void fb_port_done(fb_fault_port *p)
{
	atomic_store_explicit(&p->pending, 0, memory_order_release);
}

/*
 * A pause in two halves, so that either driver can do the waiting: begin
 * does what comes before the suspension (the trap a takeover pause leaves,
 * the plan's record, the counts) and returns its length; end, once that
 * long has passed, what comes after (the time suspended, the port free for
 * the next fault). Both on the worker's own thread (or, for a simulated
 * worker, its driver). at_point: taken at a named point, not signalled.
 * The length is at least 1 ns: 0 is "no pause" at the points below.
 */
uint64_t fb_port_pause_begin(fb_fault_port *p, bool at_point);
void fb_port_pause_end(fb_fault_port *p);

/* Suspend the calling worker for arg_ns (the armed or signalled pause):
 * begin, sleep, end. Async-signal-safe: runs inside the SIGUSR1 handler. */
void fb_pause_now(fb_fault_port *p, bool at_point);

/*
 * The cycle's named points: the pause armed for `here` (after-read takes
 * a takeover pause too, and a takeover-read one a cycle with no read
 * missed: --op debit), begun, its length returned; 0 when none is. Two
 * relaxed loads when nothing is armed.
 */
static inline uint64_t fb_port_pause_due(fb_fault_port *p, fb_fault_at here)
{
	uint32_t a = fb_port_armed(p);
	if (a && FB_ARM_FAULT(a) == FB_FAULT_PAUSE &&
	    (FB_ARM_AT(a) == here ||
	     (here == FB_AT_AFTER_READ &&
	      (FB_ARM_AT(a) == FB_AT_TAKEOVER || FB_ARM_AT(a) == FB_AT_TAKEOVER_READ))))
		return fb_port_pause_begin(p, true);
	return 0;
}

/* The trap a paused predecessor left on key, if this holder (fence) is the
 * first after it to get here: the pause it owes, begun; 0 when none. */
uint64_t fb_port_trap_claim(fb_fault_port *p, uint32_t key, uint64_t fence, const fb_clock *clk);

static inline uint64_t fb_port_trap_due(fb_fault_port *p, uint32_t key, uint64_t fence,
                                        const fb_clock *clk)
{
	if (!atomic_load_explicit(&p->traps[key].fence, memory_order_relaxed))
		return 0;
	return fb_port_trap_claim(p, key, fence, clk);
}

/* Take the pause armed on the calling thread's port now, wherever it is
 * aimed (the planted two-step bug's window between its two steps). */
void fb_pause_armed_here(void *ctx);

/* Install the SIGUSR1 handler (once per process). */
fb_err fb_pause_install(void);

/* Called by each worker thread at start: binds the handler to its port and
 * unblocks SIGUSR1 for this thread. */
void fb_pause_bind(fb_fault_port *port);

typedef struct fb_injector_config {
	double rate[FB_FAULTS]; /* per second; 0 for faults not selected */
	uint64_t pause_min_ns, pause_max_ns;
	uint64_t delay_min_ns, delay_max_ns;
	uint64_t skew_ns;
	uint64_t ttl_ns;
	uint64_t seed;
	fb_fault_at at;
	fb_clock_skewed *service_clock; /* stepped by skew faults; NULL: cannot step */
	_Atomic uint64_t *steps;        /* counts the steps, for the workers to notice */
	fb_plan_log *log;
	const fb_plan *plan; /* replaying: only the service's steps are the injector's */
	/* server-pause: suspend the lease service for ns; 0 on success */
	int (*server_pause)(void *ctx, uint64_t ns);
	void *server_ctx;
	_Atomic uint64_t *server_pauses; /* counts them, for the workers to notice */
	/* node-jump: step one node's clock forward by skew_ns (ctx: server_ctx);
	 * 0 on success. NULL: the fault is not taken. */
	int (*node_jump)(void *ctx, uint64_t ns);
	_Atomic uint64_t *node_jumps; /* counts them, for the workers to notice */
	/* issue 24, partition and wire-delay ([0] and [1]) and wire-reset
	 * (no length, both ways): strike one proxied connection (drawn by
	 * pick, or exactly `target` when replaying) in direction dir (an
	 * fb_wire_dir) for ns (ctx: server_ctx). The target struck, or -1:
	 * none. NULL: no wire to strike. */
	int64_t (*wire)(void *ctx, fb_fault f, unsigned dir, uint64_t ns, uint64_t pick, bool exact,
	                uint64_t target);
	uint64_t wire_min_ns[2], wire_max_ns[2];
	/* issue 24, nemesis: start the user's fault `name` (an index into the
	 * run's names) for ns (ctx: server_ctx); 0 when it was started, -1
	 * when one is under way. NULL: no nemesis. */
	int (*nemesis)(void *ctx, unsigned name, uint64_t ns);
	unsigned nemesis_names;
	uint64_t nemesis_min_ns, nemesis_max_ns;
	const fb_clock *clock; /* the driver's time: real, or the simulator's virtual clock */
} fb_injector_config;

typedef struct fb_injector_stats {
	uint64_t sent[FB_FAULTS]; /* faults armed or signalled */
	uint64_t missed;          /* aimed at a worker holding no lease: none held one */
	uint64_t service_steps;   /* steps of the lease service's clock */
	uint64_t server_paused;   /* server pauses the service took */
	uint64_t server_over_ttl; /* ... longer than the TTL */
	uint64_t node_jumped;     /* issue 14: node clock jumps taken */
	uint64_t node_over_ttl;   /* ... by more than the TTL */
	uint64_t wire_taken[3];   /* issue 24: partitions, slow wires, resets struck */
	uint64_t wire_over_ttl[3];
	uint64_t nemesis_taken, nemesis_over_ttl; /* issue 24: the user's faults started */
} fb_injector_stats;

/* ---- what the injector decides: the same for both drivers ---- */

/* One fault, decided: what, at whom, where, how long. */
typedef struct fb_fault_decision {
	fb_fault fault;
	fb_fault_port *port; /* the worker aimed at; NULL: the lease service itself */
	fb_fault_at at;      /* pause: where; skew: an fb_skew_kind */
	uint64_t arg_ns, extra_ns;
	bool signal; /* a pause "anywhere": delivered at once, not armed at a point */
	bool holder; /* the worker held a lease when aimed at */
} fb_fault_decision;

/*
 * The injector's choices, from one seeded stream: when the next fault
 * comes (a Poisson stream of all the selected faults' rates together),
 * which it is (in proportion to the rates), and whom it is aimed at (a
 * worker holding a lease, not under a fault already; else any live one) and
 * its size. The threaded injector and the simulator's virtual-time events
 * both draw from it, so a seed means the same faults in either; only the
 * delivery differs (a signal or an armed port on threads, a worker taken
 * off the run list in the simulator).
 */
typedef struct fb_fault_gen {
	fb_injector_config cfg;
	fb_fault_port **ports;
	uint32_t n;
	uint32_t crashes; /* armed so far: at least one worker must live */
	double total;     /* the rates' sum */
	fb_prng rng;
	fb_injector_stats st;
	size_t plan_next; /* replaying: the next step of the service's clock */
	uint64_t t0;      /* the start, on cfg.clock: plans count from it */
} fb_fault_gen;

void fb_fault_gen_init(fb_fault_gen *g, const fb_injector_config *cfg, fb_fault_port **ports,
                       uint32_t n);

/* Nanoseconds from one fault to the next (UINT64_MAX: no fault at all). */
uint64_t fb_fault_gen_gap(fb_fault_gen *g);

/*
 * Decide the next fault and claim its target (the port's pending). False:
 * nothing to deliver this time (no worker to aim at, the last one alive
 * spared a crash). A step of the service's clock is done here, for both
 * drivers alike; the caller delivers the rest: a server pause
 * (d->port NULL, fault server-pause), a signal, or fb_fault_arm.
 */
bool fb_fault_gen_next(fb_fault_gen *g, fb_fault_decision *d);

/* Arm a decided fault on its port for the worker to take at its point. */
void fb_fault_arm(const fb_fault_decision *d);

/* Replaying a plan: when (on the gen's clock) the next step of the
 * service's clock is due, UINT64_MAX when none is left; and take it. */
uint64_t fb_fault_gen_plan_due(const fb_fault_gen *g);
void fb_fault_gen_plan_step(fb_fault_gen *g);

/* ---- the injector thread (the threaded driver's delivery) ---- */

typedef struct fb_injector fb_injector;

fb_err fb_injector_start(const fb_injector_config *cfg, fb_fault_port **ports, uint32_t n,
                         fb_injector **out);
/* Stop and join; *st gets the totals. */
void fb_injector_stop(fb_injector *inj, fb_injector_stats *st);

#endif
