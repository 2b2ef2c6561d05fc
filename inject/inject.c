#define _GNU_SOURCE
#include "inject.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "prng.h"

/* Initial-exec TLS in the executable: reading it is async-signal-safe. */
static _Thread_local fb_fault_port *self;

void fb_port_take(fb_fault_port *p, fb_fault f, uint64_t arg_ns)
{
	atomic_store_explicit(&p->armed, 0, memory_order_relaxed);
	atomic_fetch_or_explicit(&p->faulted, 1u << f, memory_order_relaxed);
	fb_counter_add(&p->taken[f], 1);
	if (arg_ns > p->ttl_ns)
		fb_counter_add(&p->over_ttl[f], 1);
}

void fb_pause_now(fb_fault_port *p, bool at_point)
{
	atomic_signal_fence(memory_order_acquire);
	uint32_t armed = atomic_load_explicit(&p->armed, memory_order_relaxed);
	uint64_t d = atomic_load_explicit(&p->arg_ns, memory_order_relaxed);
	uint32_t phase = atomic_load_explicit(&p->phase, memory_order_relaxed);
	bool holding = phase == FB_PHASE_HOLDING;
	uint32_t key = atomic_load_explicit(&p->held_key, memory_order_relaxed);
	uint64_t fence = atomic_load_explicit(&p->held_fence, memory_order_relaxed);
	const fb_clock *clk = p->lease_clock;
	uint64_t t0 = fb_clock_now(clk);
	fb_fault_at at = at_point ? FB_ARM_AT(armed) : FB_AT_ANY;
	if (at_point && holding && at == FB_AT_TAKEOVER) {
		/* Leave a trap for whoever takes this lease over while we sleep:
		 * fields first, then the fence that arms it (release). */
		fb_pause_trap *t = &p->traps[key];
		atomic_store_explicit(&t->wake_at, t0 + d, memory_order_relaxed);
		atomic_store_explicit(&t->extra_ns,
		                      atomic_load_explicit(&p->extra_ns, memory_order_relaxed),
		                      memory_order_relaxed);
		atomic_store_explicit(&t->fence, fence, memory_order_release);
	}
	/* A trapped taker's pause follows from the takeover pause that set the
	 * trap: replaying that one sets the trap again, so it is not planned. */
	if (at != FB_AT_TRAPPED) {
		fb_plan_entry e = {atomic_load_explicit(&p->cycle, memory_order_relaxed),
		                   d,
		                   atomic_load_explicit(&p->extra_ns, memory_order_relaxed),
		                   p->worker,
		                   FB_FAULT_PAUSE,
		                   (uint8_t)at,
		                   (uint8_t)(phase < 3 ? phase : 0)};
		fb_plan_log_add(p->log, &e);
	}
	fb_port_take(p, FB_FAULT_PAUSE, d);
	atomic_store_explicit(&p->last_at, t0, memory_order_relaxed);
	atomic_store_explicit(&p->last_ns, d, memory_order_relaxed);
	atomic_store_explicit(&p->last_where, at, memory_order_relaxed);
	fb_sleep_ns(d);
	fb_counter_add(&p->paused_ns, fb_clock_now(clk) - t0);
	if (at_point)
		fb_counter_add(&p->at_point, 1);
	if (holding)
		fb_counter_add(&p->hit, 1);
	fb_port_done(p);
}

void fb_pause_trapped(fb_fault_port *p, uint32_t key, uint64_t fence, const fb_clock *clk)
{
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
		fb_port_done(p);
		return;
	}
	uint64_t now = fb_clock_now(clk);
	uint64_t wake = atomic_load_explicit(&t->wake_at, memory_order_relaxed);
	uint64_t d = (wake > now ? wake - now : 0) +
	             atomic_load_explicit(&t->extra_ns, memory_order_relaxed);
	atomic_store_explicit(&p->arg_ns, d, memory_order_relaxed);
	atomic_store_explicit(&p->armed, FB_ARM(FB_FAULT_PAUSE, FB_AT_TRAPPED),
	                      memory_order_relaxed);
	fb_counter_add(&p->trapped, 1);
	fb_pause_now(p, true);
}

void fb_pause_armed_here(void)
{
	fb_fault_port *p = self;
	if (!p)
		return;
	uint32_t a = fb_port_armed(p);
	if (a && FB_ARM_FAULT(a) == FB_FAULT_PAUSE)
		fb_pause_now(p, true);
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
	uint32_t crashes; /* armed so far: at least one worker must live */
	pthread_t tid;
	_Atomic int stop;
	fb_injector_stats st;
	fb_prng rng;
	uint64_t t0;
};

/* A live worker holding a lease, not already under a fault; else any free
 * live one. */
static fb_fault_port *pick(fb_injector *inj, bool *holder)
{
	uint32_t start = fb_prng_below(&inj->rng, inj->n);
	fb_fault_port *fallback = NULL;
	for (uint32_t i = 0; i < inj->n; i++) {
		fb_fault_port *p = inj->ports[(start + i) % inj->n];
		if (atomic_load_explicit(&p->pending, memory_order_acquire))
			continue;
		uint32_t phase = atomic_load_explicit(&p->phase, memory_order_relaxed);
		if (phase == FB_PHASE_HOLDING) {
			*holder = true;
			return p;
		}
		if (phase != FB_PHASE_DEAD && !fallback)
			fallback = p;
	}
	*holder = false;
	return fallback;
}

static uint64_t draw(fb_injector *inj, uint64_t lo, uint64_t hi)
{
	return lo + (hi > lo ? fb_prng_next(&inj->rng) % (hi - lo + 1) : 0);
}

/* Step the lease service's clock forward: every live lease loses arg_ns. */
static void step_service(fb_injector *inj)
{
	fb_clock_skewed_jump(inj->cfg.service_clock, (int64_t)inj->cfg.skew_ns);
	inj->st.service_steps++;
	if (inj->cfg.steps) /* relaxed: workers only compare it across a cycle */
		atomic_fetch_add_explicit(inj->cfg.steps, 1, memory_order_relaxed);
	fb_plan_entry e = {(fb_clock_now(fb_clock_monotonic()) - inj->t0) / 1000,
	                   inj->cfg.skew_ns,
	                   0,
	                   0,
	                   FB_FAULT_SKEW,
	                   FB_SKEW_SERVICE,
	                   0};
	fb_plan_log_add(inj->cfg.log, &e);
}

/* One fault of type f, aimed at a holder. */
static void inject(fb_injector *inj, fb_fault f)
{
	const fb_injector_config *c = &inj->cfg;
	if (f == FB_FAULT_SKEW && c->service_clock && fb_prng_below(&inj->rng, 2)) {
		step_service(inj);
		return;
	}
	if (f == FB_FAULT_SERVER_PAUSE) { /* the service, not a worker */
		uint64_t d = draw(inj, c->pause_min_ns, c->pause_max_ns);
		inj->st.sent[f]++;
		if (!c->server_pause || c->server_pause(c->server_ctx, d) != 0)
			return;
		inj->st.server_paused++;
		if (d > c->ttl_ns)
			inj->st.server_over_ttl++;
		if (c->server_pauses) /* relaxed: workers only compare it across a cycle */
			atomic_fetch_add_explicit(c->server_pauses, 1, memory_order_relaxed);
		return;
	}
	if (f == FB_FAULT_NODE_JUMP) { /* issue 14: a node of the service, not a worker */
		inj->st.sent[f]++;
		if (!c->node_jump || c->node_jump(c->server_ctx, c->skew_ns) != 0)
			return;
		inj->st.node_jumped++;
		inj->st.node_over_ttl += c->skew_ns > c->ttl_ns;
		if (c->node_jumps) /* relaxed: workers only compare it across a cycle */
			atomic_fetch_add_explicit(c->node_jumps, 1, memory_order_relaxed);
		return;
	}
	if (f == FB_FAULT_CRASH && inj->crashes + 1 >= inj->n)
		return; /* someone must live to take the leases over */
	bool holder = false;
	fb_fault_port *p = NULL;
	for (int tries = 0; tries < 64 && !holder; tries++)
		p = pick(inj, &holder);
	if (!p)
		return;
	uint32_t idle = 0;
	if (!atomic_compare_exchange_strong_explicit(&p->pending, &idle, 1, memory_order_acquire,
	                                             memory_order_relaxed))
		return;
	fb_fault_at at = FB_AT_AFTER_READ;
	uint64_t arg = 0, extra = 0;
	switch (f) {
	case FB_FAULT_PAUSE:
		arg = draw(inj, c->pause_min_ns, c->pause_max_ns);
		/* a trapped taker wakes up to half a TTL after the first holder */
		extra = fb_prng_next(&inj->rng) % (c->ttl_ns / 2 + 1);
		at = c->at == FB_AT_MIX ? (fb_fault_at)fb_prng_below(&inj->rng, FB_AT_MIX) : c->at;
		break;
	case FB_FAULT_SKEW: /* the worker's own clock: slow, or a jump back */
		at = fb_prng_below(&inj->rng, 2) ? (fb_fault_at)FB_SKEW_SLOW
		                                 : (fb_fault_at)FB_SKEW_BACK;
		arg = c->skew_ns;
		break;
	case FB_FAULT_DELAY:
		arg = draw(inj, c->delay_min_ns, c->delay_max_ns);
		break;
	case FB_FAULT_RENEW: /* the stall before the heartbeat: racing the expiry */
		arg = draw(inj, c->ttl_ns / 2, c->ttl_ns * 3 / 2);
		break;
	case FB_FAULT_CRASH:
		inj->crashes++;
		break;
	case FB_FAULT_RETRY: /* taken at the write */
		at = FB_AT_AFTER_CHECK;
		break;
	default:
		break;
	}
	atomic_store_explicit(&p->arg_ns, arg, memory_order_relaxed);
	atomic_store_explicit(&p->extra_ns, extra, memory_order_relaxed);
	if (f == FB_FAULT_PAUSE && at == FB_AT_ANY) {
		/* pthread_kill orders the stores above before the handler */
		if (pthread_kill(p->tid, SIGUSR1) != 0) {
			fb_port_done(p);
			return;
		}
	} else {
		/* the worker takes it at the named point; release publishes
		 * arg_ns and extra_ns with it */
		atomic_store_explicit(&p->armed, FB_ARM(f, at), memory_order_release);
		holder = true;
	}
	inj->st.sent[f]++;
	if (!holder)
		inj->st.missed++;
}

/* Replay the plan's steps of the service clock at their times. */
static void replay_service(fb_injector *inj)
{
	const fb_plan_entry *e;
	size_t n = fb_plan_for(inj->cfg.plan, 0, &e);
	for (size_t i = 0; i < n && !atomic_load_explicit(&inj->stop, memory_order_relaxed);) {
		uint64_t now_us = (fb_clock_now(fb_clock_monotonic()) - inj->t0) / 1000;
		if (now_us < e[i].cycle) {
			uint64_t d = (e[i].cycle - now_us) * 1000;
			fb_sleep_ns(d < 20000000 ? d : 20000000);
			continue;
		}
		if (inj->cfg.service_clock) {
			fb_clock_skewed_jump(inj->cfg.service_clock, (int64_t)e[i].arg_ns);
			inj->st.service_steps++;
			if (inj->cfg.steps)
				atomic_fetch_add_explicit(inj->cfg.steps, 1, memory_order_relaxed);
		}
		i++;
	}
}

static void *injector_main(void *arg)
{
	fb_injector *inj = arg;
	if (inj->cfg.plan) {
		replay_service(inj);
		return NULL;
	}
	double total = 0;
	for (int f = 0; f < FB_FAULTS; f++)
		total += inj->cfg.rate[f];
	while (!atomic_load_explicit(&inj->stop, memory_order_relaxed)) {
		/* exponential inter-arrival: a Poisson stream of faults */
		double gap = -log(1.0 - fb_prng_unit(&inj->rng)) / total;
		uint64_t wait = (uint64_t)(gap * 1e9);
		while (wait && !atomic_load_explicit(&inj->stop, memory_order_relaxed)) {
			uint64_t step = wait < 20000000 ? wait : 20000000;
			fb_sleep_ns(step);
			wait -= step;
		}
		if (atomic_load_explicit(&inj->stop, memory_order_relaxed))
			break;
		/* which fault: in proportion to the rates */
		double x = fb_prng_unit(&inj->rng) * total;
		int f = 0;
		while (f < FB_FAULTS - 1 && (x -= inj->cfg.rate[f]) >= 0)
			f++;
		while (inj->cfg.rate[f] <= 0) /* rounding: the last fault with a rate */
			f--;
		inject(inj, (fb_fault)f);
	}
	return NULL;
}

fb_err fb_injector_start(const fb_injector_config *cfg, fb_fault_port **ports, uint32_t n,
                         fb_injector **out)
{
	double total = 0;
	for (int f = 0; f < FB_FAULTS; f++)
		total += cfg->rate[f] > 0 ? cfg->rate[f] : 0;
	if (!n || (total <= 0 && !cfg->plan) || cfg->pause_min_ns > cfg->pause_max_ns)
		return FB_EINVAL;
	fb_injector *inj = calloc(1, sizeof *inj);
	if (!inj)
		return FB_ENOMEM;
	inj->cfg = *cfg;
	inj->ports = ports;
	inj->n = n;
	inj->t0 = fb_clock_now(fb_clock_monotonic());
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
