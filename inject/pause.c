#define _GNU_SOURCE
#include "pause.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "prng.h"

/* Initial-exec TLS in the executable: reading it is async-signal-safe. */
static _Thread_local fb_fault_port *self;

/* Async-signal-safe: runs inside the SIGUSR1 handler too. */
void fb_pause_now(fb_fault_port *p, bool at_point)
{
	atomic_signal_fence(memory_order_acquire);
	uint64_t d = atomic_load_explicit(&p->pause_ns, memory_order_relaxed);
	bool holding = atomic_load_explicit(&p->phase, memory_order_relaxed) == FB_PHASE_HOLDING;
	uint32_t key = atomic_load_explicit(&p->held_key, memory_order_relaxed);
	uint64_t fence = atomic_load_explicit(&p->held_fence, memory_order_relaxed);
	const fb_clock *clk = fb_lease_clock(p->leases);
	uint64_t t0 = fb_clock_now(clk);
	if (at_point && holding &&
	    atomic_exchange_explicit(&p->armed, 0, memory_order_relaxed) == FB_AT_TAKEOVER) {
		/* Leave a trap for whoever takes this lease over while we sleep:
		 * fields first, then the fence that arms it (release). */
		fb_pause_trap *t = &p->traps[key];
		atomic_store_explicit(&t->wake_at, t0 + d, memory_order_relaxed);
		atomic_store_explicit(&t->extra_ns,
		                      atomic_load_explicit(&p->extra_ns, memory_order_relaxed),
		                      memory_order_relaxed);
		atomic_store_explicit(&t->fence, fence, memory_order_release);
	}
	fb_sleep_ns(d);
	uint64_t slept = fb_clock_now(clk) - t0;

	fb_counter_add(&p->pauses, 1);
	fb_counter_add(&p->paused_ns, slept);
	if (at_point)
		fb_counter_add(&p->aimed, 1);
	if (slept > fb_lease_ttl(p->leases))
		fb_counter_add(&p->over_ttl, 1);
	if (holding)
		fb_counter_add(&p->hit, 1);
	/* release: the injector may aim at this worker again */
	atomic_store_explicit(&p->pending, 0, memory_order_release);
}

static void on_pause(int sig)
{
	(void)sig;
	int saved = errno;
	if (self)
		fb_pause_now(self, false);
	errno = saved;
}

fb_err fb_pause_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_pause;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGUSR1, &sa, NULL) ? FB_ESYS : FB_OK;
}

void fb_pause_bind(fb_fault_port *port)
{
	self = port;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

struct fb_injector {
	fb_injector_config cfg;
	fb_fault_port **ports;
	uint32_t n;
	pthread_t tid;
	_Atomic int stop;
	fb_injector_stats st;
	fb_prng rng;
};

/* A worker holding a lease, not already being paused; else any free one. */
static fb_fault_port *pick(fb_injector *inj, bool *holder)
{
	uint32_t start = fb_prng_below(&inj->rng, inj->n);
	fb_fault_port *fallback = NULL;
	for (uint32_t i = 0; i < inj->n; i++) {
		fb_fault_port *p = inj->ports[(start + i) % inj->n];
		if (atomic_load_explicit(&p->pending, memory_order_acquire))
			continue;
		if (atomic_load_explicit(&p->phase, memory_order_relaxed) == FB_PHASE_HOLDING) {
			*holder = true;
			return p;
		}
		if (!fallback)
			fallback = p;
	}
	*holder = false;
	return fallback;
}

static void *injector_main(void *arg)
{
	fb_injector *inj = arg;
	while (!atomic_load_explicit(&inj->stop, memory_order_relaxed)) {
		/* exponential inter-arrival: a Poisson stream of pauses */
		double gap = -log(1.0 - fb_prng_unit(&inj->rng)) / inj->cfg.rate;
		uint64_t wait = (uint64_t)(gap * 1e9);
		while (wait && !atomic_load_explicit(&inj->stop, memory_order_relaxed)) {
			uint64_t step = wait < 20000000 ? wait : 20000000;
			fb_sleep_ns(step);
			wait -= step;
		}
		if (atomic_load_explicit(&inj->stop, memory_order_relaxed))
			break;
		uint64_t span = inj->cfg.max_ns - inj->cfg.min_ns;
		uint64_t d = inj->cfg.min_ns + (span ? fb_prng_next(&inj->rng) % (span + 1) : 0);
		/* Aim: a few scans for a holder before settling for anyone. */
		bool holder = false;
		fb_fault_port *p = NULL;
		for (int tries = 0; tries < 64 && !holder; tries++)
			p = pick(inj, &holder);
		if (!p)
			continue;
		uint32_t zero = 0;
		if (!atomic_compare_exchange_strong_explicit(
		            &p->pending, &zero, 1, memory_order_acquire, memory_order_relaxed))
			continue;
		fb_fault_at at = inj->cfg.at;
		if (at == FB_AT_MIX)
			at = (fb_fault_at)fb_prng_below(&inj->rng, FB_AT_MIX);
		atomic_store_explicit(&p->pause_ns, d, memory_order_relaxed);
		/* the taker wakes up to half a TTL after the trapped holder */
		atomic_store_explicit(&p->extra_ns,
		                      fb_prng_next(&inj->rng) % (inj->cfg.ttl_ns / 2 + 1),
		                      memory_order_relaxed);
		if (at != FB_AT_ANY) {
			/* The worker takes it at its next pause point; release
			 * publishes pause_ns and extra_ns with it. */
			atomic_store_explicit(&p->armed, at, memory_order_release);
			holder = true;
		} else if (pthread_kill(p->tid, SIGUSR1) != 0) {
			/* pthread_kill orders the stores above before the handler */
			atomic_store_explicit(&p->pending, 0, memory_order_relaxed);
			continue;
		}
		inj->st.sent++;
		if (!holder)
			inj->st.missed++;
	}
	return NULL;
}

fb_err fb_injector_start(const fb_injector_config *cfg, fb_fault_port **ports, uint32_t n,
                         fb_injector **out)
{
	if (!n || cfg->rate <= 0 || cfg->min_ns > cfg->max_ns)
		return FB_EINVAL;
	fb_injector *inj = calloc(1, sizeof *inj);
	if (!inj)
		return FB_ENOMEM;
	inj->cfg = *cfg;
	inj->ports = ports;
	inj->n = n;
	fb_prng_init(&inj->rng, cfg->seed, 0);
	atomic_init(&inj->stop, 0);
	int e = pthread_create(&inj->tid, NULL, injector_main, inj);
	if (e) {
		free(inj);
		errno = e;
		return FB_ESYS;
	}
	*out = inj;
	return FB_OK;
}

void fb_injector_stop(fb_injector *inj, fb_injector_stats *st)
{
	if (!inj)
		return;
	atomic_store_explicit(&inj->stop, 1, memory_order_relaxed);
	pthread_join(inj->tid, NULL);
	if (st)
		*st = inj->st;
	free(inj);
}
