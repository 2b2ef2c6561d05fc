#define _GNU_SOURCE
#include "inject.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

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

uint64_t fb_port_pause_begin(fb_fault_port *p, bool at_point)
{
	atomic_signal_fence(memory_order_acquire);
	uint32_t armed = atomic_load_explicit(&p->armed, memory_order_relaxed);
	uint64_t d = atomic_load_explicit(&p->arg_ns, memory_order_relaxed);
	uint32_t phase = atomic_load_explicit(&p->phase, memory_order_relaxed);
	bool holding = phase == FB_PHASE_HOLDING;
	uint32_t key = atomic_load_explicit(&p->held_key, memory_order_relaxed);
	uint64_t fence = atomic_load_explicit(&p->held_fence, memory_order_relaxed);
	uint64_t t0 = fb_clock_now(p->lease_clock);
	fb_fault_at at = at_point ? FB_ARM_AT(armed) : FB_AT_ANY;
	if (at_point && holding && (at == FB_AT_TAKEOVER || at == FB_AT_TAKEOVER_READ)) {
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
	/* its length against the TTL is counted at its end, measured: a pause
	 * asked for 20 ms that sleeps 5 has not outlasted a 10 ms lease */
	fb_port_take(p, FB_FAULT_PAUSE, 0);
	atomic_store_explicit(&p->last_at, t0, memory_order_relaxed);
	atomic_store_explicit(&p->last_ns, d, memory_order_relaxed);
	atomic_store_explicit(&p->last_where, at, memory_order_relaxed);
	p->pause_t0 = t0;
	p->pause_at_point = at_point;
	p->pause_holding = holding;
	return d ? d : 1; /* 0 means "no pause" to the callers of the points */
}

void fb_port_pause_end(fb_fault_port *p)
{
	uint64_t now = fb_clock_now(p->lease_clock);
	uint64_t slept = now > p->pause_t0 ? now - p->pause_t0 : 0;
	fb_counter_add(&p->paused_ns, slept);
	if (slept > p->ttl_ns) /* the vacuity proof's "> ttl": what it measured */
		fb_counter_add(&p->over_ttl[FB_FAULT_PAUSE], 1);
	if (p->pause_at_point)
		fb_counter_add(&p->at_point, 1);
	if (p->pause_holding)
		fb_counter_add(&p->hit, 1);
	fb_port_done(p);
}

void fb_pause_now(fb_fault_port *p, bool at_point)
{
	uint64_t d = fb_port_pause_begin(p, at_point);
	if (p->stop ? !fb_sleep_unless(p->stop, d) : (fb_sleep_ns(d), false))
		fb_counter_add(&p->cut_short, 1);
	fb_port_pause_end(p);
}

uint64_t fb_port_trap_claim(fb_fault_port *p, uint32_t key, uint64_t fence, const fb_clock *clk)
{
	fb_pause_trap *t = &p->traps[key];
	uint64_t tf = atomic_load_explicit(&t->fence, memory_order_relaxed);
	if (!tf || fence <= tf)
		return 0;
	/* Take this worker out of the injector's choices first (it owns the
	 * pause while `pending`), then claim the trap; acquire on the claim:
	 * wake_at and extra_ns were stored before the fence. */
	uint32_t idle = 0;
	if (!atomic_compare_exchange_strong_explicit(&p->pending, &idle, 1, memory_order_acquire,
	                                             memory_order_relaxed))
		return 0;
	if (!atomic_compare_exchange_strong_explicit(&t->fence, &tf, 0, memory_order_acquire,
	                                             memory_order_relaxed)) {
		fb_port_done(p);
		return 0;
	}
	uint64_t now = fb_clock_now(clk);
	uint64_t wake = atomic_load_explicit(&t->wake_at, memory_order_relaxed);
	uint64_t d = (wake > now ? wake - now : 0) +
	             atomic_load_explicit(&t->extra_ns, memory_order_relaxed);
	atomic_store_explicit(&p->arg_ns, d, memory_order_relaxed);
	atomic_store_explicit(&p->armed, FB_ARM(FB_FAULT_PAUSE, FB_AT_TRAPPED),
	                      memory_order_relaxed);
	fb_counter_add(&p->trapped, 1);
	return fb_port_pause_begin(p, true);
}

void fb_pause_armed_here(void *ctx)
{
	(void)ctx;
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

/* ---- the decisions ---- */

void fb_fault_gen_init(fb_fault_gen *g, const fb_injector_config *cfg, fb_fault_port **ports,
                       uint32_t n)
{
	*g = (fb_fault_gen){.cfg = *cfg, .ports = ports, .n = n, .t0 = fb_clock_now(cfg->clock)};
	fb_prng_init(&g->rng, cfg->seed, 0);
	for (int f = 0; f < FB_FAULTS; f++)
		g->total += cfg->rate[f] > 0 ? cfg->rate[f] : 0;
}

uint64_t fb_fault_gen_gap(fb_fault_gen *g)
{
	if (g->total <= 0 || g->cfg.plan)
		return UINT64_MAX;
	return fb_prng_exp(&g->rng, 1e9 / g->total); /* a Poisson stream of faults */
}

/* A live worker holding a lease, not already under a fault; else any free
 * live one. */
static fb_fault_port *pick(fb_fault_gen *g, bool *holder)
{
	uint32_t start = fb_prng_below(&g->rng, g->n);
	fb_fault_port *fallback = NULL;
	for (uint32_t i = 0; i < g->n; i++) {
		uint32_t j = start + i;
		fb_fault_port *p = g->ports[j >= g->n ? j - g->n : j];
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

static uint64_t draw(fb_fault_gen *g, uint64_t lo, uint64_t hi)
{
	return lo + (hi > lo ? fb_prng_next(&g->rng) % (hi - lo + 1) : 0);
}

static uint64_t since_start_us(const fb_fault_gen *g)
{
	return (fb_clock_now(g->cfg.clock) - g->t0) / 1000;
}

/* Issue 24: strike the wire; taken, it is counted and planned (worker 0,
 * at its time since the start, the connection struck as its extra). */
static void strike_wire(fb_fault_gen *g, fb_fault f, unsigned dir, uint64_t ns, uint64_t pick,
                        bool exact, uint64_t target)
{
	int64_t hit = g->cfg.wire(g->cfg.server_ctx, f, dir, ns, pick, exact, target);
	if (exact) /* replayed: sent as the plan says */
		g->st.sent[f]++;
	if (hit < 0)
		return;
	int i = f - FB_FAULT_PARTITION;
	g->st.wire_taken[i]++;
	g->st.wire_over_ttl[i] += ns > g->cfg.ttl_ns;
	if (exact)
		return;
	fb_plan_entry e = {since_start_us(g), ns, (uint64_t)hit, 0, (uint8_t)f, (uint8_t)dir, 0};
	fb_plan_log_add(g->cfg.log, &e);
}

/* Step the lease service's clock forward: every live lease loses arg_ns. */
static void step_service(fb_fault_gen *g, uint64_t ns, bool record)
{
	fb_clock_skewed_jump(g->cfg.service_clock, (int64_t)ns);
	g->st.service_steps++;
	if (g->cfg.steps) /* relaxed: workers only compare it across a cycle */
		atomic_fetch_add_explicit(g->cfg.steps, 1, memory_order_relaxed);
	if (!record)
		return;
	fb_plan_entry e = {since_start_us(g), ns, 0, 0, FB_FAULT_SKEW, FB_SKEW_SERVICE, 0};
	fb_plan_log_add(g->cfg.log, &e);
}

/* Which fault: in proportion to the rates. */
static fb_fault which(fb_fault_gen *g)
{
	double x = fb_prng_unit(&g->rng) * g->total;
	int f = 0;
	while (f < FB_FAULTS - 1 && (x -= g->cfg.rate[f]) >= 0)
		f++;
	while (g->cfg.rate[f] <= 0) /* rounding: the last fault with a rate */
		f--;
	return (fb_fault)f;
}

bool fb_fault_gen_next(fb_fault_gen *g, fb_fault_decision *d)
{
	const fb_injector_config *c = &g->cfg;
	fb_fault f = which(g);
	*d = (fb_fault_decision){.fault = f, .at = FB_AT_AFTER_READ};
	if (f == FB_FAULT_SKEW && c->service_clock && fb_prng_below(&g->rng, 2)) {
		step_service(g, c->skew_ns, true);
		return false; /* done: the service's clock, not a worker's */
	}
	if (f == FB_FAULT_SERVER_PAUSE) { /* the service, not a worker */
		d->arg_ns = draw(g, c->pause_min_ns, c->pause_max_ns);
		g->st.sent[f]++;
		return c->server_pause != NULL;
	}
	if (f == FB_FAULT_NODE_JUMP) { /* a node of the service, not a worker */
		d->arg_ns = c->skew_ns;
		g->st.sent[f]++;
		return c->node_jump != NULL;
	}
	if (fb_fault_wire(f)) { /* issue 24: the wire */
		int i = f == FB_FAULT_WIRE_DELAY;
		/* a reset has no length and tears both ways down */
		d->arg_ns = f == FB_FAULT_WIRE_RESET
		                    ? 0
		                    : draw(g, c->wire_min_ns[i], c->wire_max_ns[i]);
		d->at = (fb_fault_at)fb_prng_below(&g->rng, FB_WIRE_DIRS);
		if (f == FB_FAULT_WIRE_RESET)
			d->at = (fb_fault_at)FB_WIRE_BOTH;
		d->extra_ns = fb_prng_next(&g->rng); /* which connection */
		g->st.sent[f]++;
		return c->wire != NULL;
	}
	if (f == FB_FAULT_NEMESIS) { /* issue 24: the user's command, not a worker */
		d->arg_ns = draw(g, c->nemesis_min_ns, c->nemesis_max_ns);
		d->at = (fb_fault_at)fb_prng_below(&g->rng,
		                                   c->nemesis_names ? c->nemesis_names : 1);
		g->st.sent[f]++;
		return c->nemesis != NULL;
	}
	if (f == FB_FAULT_CRASH && g->crashes + 1 >= g->n)
		return false; /* someone must live to take the leases over */
	bool holder = false;
	fb_fault_port *p = NULL;
	for (int tries = 0; tries < 64 && !holder; tries++)
		p = pick(g, &holder);
	if (!p)
		return false;
	uint32_t idle = 0;
	if (!atomic_compare_exchange_strong_explicit(&p->pending, &idle, 1, memory_order_acquire,
	                                             memory_order_relaxed))
		return false;
	switch (f) {
	case FB_FAULT_PAUSE:
		d->arg_ns = draw(g, c->pause_min_ns, c->pause_max_ns);
		/* a trapped taker wakes up to half a TTL after the first holder */
		d->extra_ns = fb_prng_next(&g->rng) % (c->ttl_ns / 2 + 1);
		d->at = c->at == FB_AT_MIX ? (fb_fault_at)fb_prng_below(&g->rng, FB_AT_MIX) : c->at;
		/* Half of a mix's takeovers strike before the read: the stale
		 * holder's read then falls between the newer holder's read and
		 * write. Chosen by a draw already made, so a seed's stream of
		 * faults is what it was. */
		if (c->at == FB_AT_MIX && d->at == FB_AT_TAKEOVER && (d->arg_ns & 1))
			d->at = FB_AT_TAKEOVER_READ;
		d->signal = d->at == FB_AT_ANY;
		break;
	case FB_FAULT_SKEW: /* the worker's own clock: slow, or a jump back */
		d->at = fb_prng_below(&g->rng, 2) ? (fb_fault_at)FB_SKEW_SLOW
		                                  : (fb_fault_at)FB_SKEW_BACK;
		d->arg_ns = c->skew_ns;
		break;
	case FB_FAULT_DELAY:
		d->arg_ns = draw(g, c->delay_min_ns, c->delay_max_ns);
		break;
	case FB_FAULT_RENEW: /* the stall before the heartbeat: racing the expiry */
		d->arg_ns = draw(g, c->ttl_ns / 2, c->ttl_ns * 3 / 2);
		break;
	case FB_FAULT_CRASH:
		g->crashes++;
		break;
	case FB_FAULT_RETRY: /* taken at the write */
		d->at = FB_AT_AFTER_CHECK;
		break;
	default:
		break;
	}
	d->port = p;
	d->holder = holder || !d->signal; /* an armed fault waits for a holder's point */
	g->st.sent[f]++;
	if (!d->holder)
		g->st.missed++;
	atomic_store_explicit(&p->arg_ns, d->arg_ns, memory_order_relaxed);
	atomic_store_explicit(&p->extra_ns, d->extra_ns, memory_order_relaxed);
	return true;
}

void fb_fault_arm(const fb_fault_decision *d)
{
	/* release: publishes arg_ns and extra_ns with it */
	atomic_store_explicit(&d->port->armed, FB_ARM(d->fault, d->at), memory_order_release);
}

uint64_t fb_fault_gen_plan_due(const fb_fault_gen *g)
{
	if (!g->cfg.plan)
		return UINT64_MAX;
	const fb_plan_entry *e;
	size_t n = fb_plan_for(g->cfg.plan, 0, &e);
	return g->plan_next < n ? g->t0 + e[g->plan_next].cycle * 1000 : UINT64_MAX;
}

void fb_fault_gen_plan_step(fb_fault_gen *g)
{
	const fb_plan_entry *e;
	size_t n = fb_plan_for(g->cfg.plan, 0, &e);
	if (g->plan_next >= n)
		return;
	const fb_plan_entry *x = &e[g->plan_next];
	if (fb_fault_wire(x->fault) && g->cfg.wire)
		strike_wire(g, (fb_fault)x->fault, x->at, x->arg_ns, 0, true, x->extra);
	else if (x->fault == FB_FAULT_SKEW && g->cfg.service_clock)
		step_service(g, x->arg_ns, false);
	g->plan_next++;
}

/* ---- the injector thread ---- */

struct fb_injector {
	fb_fault_gen g;
	pthread_t tid;
	_Atomic int stop;
};

/* Sleep until the injector's clock reads `until` or it is told to stop, in
 * steps of 20 ms. False: stopped. */
static bool wait_for(fb_injector *inj, uint64_t until)
{
	for (;;) {
		if (atomic_load_explicit(&inj->stop, memory_order_relaxed))
			return false;
		uint64_t now = fb_clock_now(inj->g.cfg.clock);
		if (now >= until)
			return true;
		fb_sleep_unless(&inj->stop, until - now);
	}
}

/* The delivery on threads: a server pause through the engine, a pause
 * anywhere as SIGUSR1 (its handler sleeps), the rest armed on the port. */
static void deliver(fb_injector *inj, const fb_fault_decision *d)
{
	fb_fault_gen *g = &inj->g;
	const fb_injector_config *c = &g->cfg;
	if (!d->port && d->fault == FB_FAULT_NODE_JUMP) { /* one node's clock jumps */
		if (c->node_jump(c->server_ctx, d->arg_ns) != 0)
			return;
		g->st.node_jumped++;
		g->st.node_over_ttl += d->arg_ns > c->ttl_ns;
		if (c->node_jumps) /* relaxed: workers only compare it across a cycle */
			atomic_fetch_add_explicit(c->node_jumps, 1, memory_order_relaxed);
		return;
	}
	if (!d->port && fb_fault_wire(d->fault)) {
		strike_wire(g, d->fault, d->at, d->arg_ns, d->extra_ns, false, 0);
		return;
	}
	if (!d->port && d->fault == FB_FAULT_NEMESIS) {
		if (c->nemesis(c->server_ctx, d->at, d->arg_ns) != 0)
			return; /* one under way: this one is sent, not taken */
		g->st.nemesis_taken++;
		g->st.nemesis_over_ttl += d->arg_ns > c->ttl_ns;
		return;
	}
	if (!d->port) { /* the lease service pauses */
		if (c->server_pause(c->server_ctx, d->arg_ns) != 0)
			return;
		g->st.server_paused++;
		if (d->arg_ns > c->ttl_ns)
			g->st.server_over_ttl++;
		if (c->server_pauses) /* relaxed: workers only compare it across a cycle */
			atomic_fetch_add_explicit(c->server_pauses, 1, memory_order_relaxed);
		return;
	}
	if (d->signal) {
		/* pthread_kill orders the port's stores before the handler */
		if (pthread_kill(d->port->tid, SIGUSR1) != 0)
			fb_port_done(d->port);
		return;
	}
	fb_fault_arm(d);
}

static void *injector_main(void *arg)
{
	fb_injector *inj = arg;
	fb_fault_gen *g = &inj->g;
	if (g->cfg.plan) { /* replaying: only the service's steps are the injector's */
		for (uint64_t at; (at = fb_fault_gen_plan_due(g)) != UINT64_MAX;) {
			if (!wait_for(inj, at))
				break;
			fb_fault_gen_plan_step(g);
		}
		return NULL;
	}
	for (uint64_t t = fb_clock_now(g->cfg.clock);;) {
		t += fb_fault_gen_gap(g);
		if (!wait_for(inj, t))
			break;
		fb_fault_decision d;
		if (fb_fault_gen_next(g, &d))
			deliver(inj, &d);
	}
	return NULL;
}

fb_err fb_injector_start(const fb_injector_config *cfg, fb_fault_port **ports, uint32_t n,
                         fb_injector **out)
{
	double total = 0;
	for (int f = 0; f < FB_FAULTS; f++)
		total += cfg->rate[f] > 0 ? cfg->rate[f] : 0;
	if (!n || (total <= 0 && !cfg->plan) || cfg->pause_min_ns > cfg->pause_max_ns ||
	    !cfg->clock)
		return FB_EINVAL;
	fb_injector *inj = calloc(1, sizeof *inj);
	if (!inj)
		return FB_ENOMEM;
	fb_fault_gen_init(&inj->g, cfg, ports, n);
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
	atomic_store_explicit(&inj->stop, 1, memory_order_release);
	fb_sleep_wake(&inj->stop);
	pthread_join(inj->tid, NULL);
	if (st)
		*st = inj->g.st;
	free(inj);
}
