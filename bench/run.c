#define _GNU_SOURCE
#include "run.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <unistd.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "delay.h"
#include "inproc.h"
#include "util.h"
#include "dist.h"
#include "prng.h"
#include "witness.h"

/* Where a worker that crashed left its lease, for the taker to time itself. */
typedef struct crash_slot {
	alignas(FB_CACHE_LINE) _Atomic uint64_t fence; /* 0: none pending */
	_Atomic uint64_t at;
} crash_slot;

typedef struct fb_run_state {
	const fb_config *cfg;
	const fb_clock *fast;  /* timing: latency, crash takeover, delays */
	const fb_clock *clock; /* the lease service's clock */
	fb_clock_skewed service;
	const fb_lease_ops *lops; /* the engines (backends/backend.h) */
	const fb_store_ops *sops;
	void *leng, *seng;
	/* the delay line's contexts, and the main thread's once it stopped */
	void *net_lconn, *net_sconn;
	void *pause_lconn;              /* the injector's, for server pauses */
	_Atomic uint64_t server_pauses; /* server pauses so far */
	_Atomic uint64_t node_jumps;    /* issue 14: node clock jumps so far */
	bool jumping;                   /* issue 14: node-jump is on, and can be taken */
	bool remote;                    /* round trips: every engine call is timed */
	bool checking;                  /* the history checker sees every write */
	bool witnessing;
	fb_checker *checker[FB_DISCIPLINES];
	fb_witness *witness;
	fb_pause_trap *traps;
	crash_slot *crashes;
	fb_delay_line *delay;
	fb_plan_log *log;
	fb_plan plan;
	double *zipf_cdf;     /* --dist zipf: cumulative weights of keys 0..k */
	_Atomic int counting; /* 0 while warming up: throughput and latency not counted */
	fb_discipline active[FB_DISCIPLINES];
	int nactive;
	fb_worker *workers;
	uint32_t started;
	/* the start gate: workers wait here until every thread exists */
	pthread_mutex_t gate_mu;
	pthread_cond_t gate_cv;
	int gate; /* 0 closed, 1 go, -1 abort */
	_Atomic int stop;
	_Atomic int exhausted;
	_Atomic int failed; /* an engine stopped answering: set once */
	char failure[400];  /* ... written by the thread that set it */
	/* the delay line's deliveries: written by its thread only */
	fb_mode_counters net[FB_DISCIPLINES];
	fb_counter net_stalls, net_delivered, net_stale, net_takeovers;
	_Atomic uint64_t service_steps; /* the injector's steps of the service clock */
	/* the first corruption: claimed once, written by its claimer only */
	_Atomic int first_claimed;
	fb_first_corruption first;
	fb_counter plan_slipped;
} fb_run_state;

/*
 * An engine stopped answering (the server died, the network broke): the
 * first to see it keeps the reason, and the run stops. What was measured
 * up to then is still summed and written; the run exits 3.
 */
static void engine_failed(fb_run_state *r, const char *what, const char *why)
{
	int no = 0;
	if (atomic_compare_exchange_strong_explicit(&r->failed, &no, 1, memory_order_relaxed,
	                                            memory_order_relaxed))
		snprintf(r->failure, sizeof r->failure, "%s: %s", what, why);
	atomic_store_explicit(&r->stop, 1, memory_order_relaxed);
}

/* The injector's server-pause fault: the lease service stops for ns. */
static int server_pause(void *ctx, uint64_t ns)
{
	fb_run_state *r = ctx;
	if (r->lops->server_pause(r->pause_lconn, ns) == FB_IO_OK)
		return 0;
	engine_failed(r, "lease", r->lops->error(r->pause_lconn));
	return -1;
}

/* Issue 14, the injector's node-jump fault: one node's clock steps ns
 * forward. */
static int node_jump(void *ctx, uint64_t ns)
{
	fb_run_state *r = ctx;
	fb_io io = r->lops->node_jump(r->pause_lconn, ns);
	if (io == FB_IO_OK)
		return 0;
	if (io == FB_IO_ERROR)
		engine_failed(r, "lease", r->lops->error(r->pause_lconn));
	return -1;
}

/* An accepted write to the checker; a wait for a version that never came
 * (fb_checker_bound) ends the run rather than the process's patience. */
static void commit(fb_run_state *r, fb_discipline d, uint32_t key, uint16_t version, uint64_t fence,
                   int64_t read, int64_t replaced, int64_t written, uint64_t highest,
                   uint64_t *stalls)
{
	if (fb_checker_commit(r->checker[d], key, version, fence, read, replaced, written, highest,
	                      stalls))
		return;
	char why[240];
	snprintf(why, sizeof why,
	         "key %u of the %s store: the history waits for a write that never came (another "
	         "process writing to this store? give each process of a shared run a --client-id)",
	         key, fb_discipline_name(d));
	engine_failed(r, "checker", why);
}

/* An engine call, timed when `on`: the engine is remote (a round trip dwarfs
 * the clock) or the cycle is sampled. */
static inline uint64_t eop_start(const fb_run_state *r, bool on)
{
	return on ? fb_clock_now(r->fast) : 0;
}

static inline void eop_end(const fb_run_state *r, fb_worker *w, fb_engine_op op, uint64_t t0)
{
	if (t0)
		fb_hist_record(&w->eop[op], fb_clock_now(r->fast) - t0);
}

/* The i-th of n disciplines from first, without a division. */
static inline int rotated(int first, int i, int n)
{
	int j = first + i;
	return j >= n ? j - n : j;
}

/* An accepted write on its way to the checker. */
typedef struct pending_commit {
	fb_discipline d;
	uint16_t version;
	int64_t read, replaced, written;
	uint64_t highest; /* the store's highest fence before it */
} pending_commit;

/* A cycle's accepted writes to the checker, after the lease is released. */
static void commit_all(fb_run_state *r, const pending_commit *todo, int n, uint32_t key,
                       uint64_t fence, uint64_t *stalls)
{
	for (int i = 0; i < n; i++)
		commit(r, todo[i].d, key, todo[i].version, fence, todo[i].read, todo[i].replaced,
		       todo[i].written, todo[i].highest, stalls);
}

/*
 * Contention: spin a little, then give the core away, then sleep. On an
 * oversubscribed machine the holder is often not running at all, and a
 * holder that is paused keeps its lease until it expires: spinning on it
 * would only starve the holders that can run (seen here: at 200 pauses a
 * second, 99% of the CPU in this loop). The sleep never outlasts the lease
 * seen held, and grows from 50 us to 1.6 ms.
 */
static void backoff(unsigned fails, uint64_t now, uint64_t expires_at)
{
	if (fails < 4) {
		for (int i = 0; i < 32; i++)
			fb_cpu_relax();
	} else if (fails < 16) {
		sched_yield();
	} else {
		unsigned k = fails - 16 < 5 ? fails - 16 : 5;
		uint64_t d = UINT64_C(50000) << k;
		if (expires_at > now && expires_at - now < d)
			d = expires_at - now;
		fb_sleep_ns(d ? d : 1000);
	}
}

static bool wait_gate(fb_run_state *r)
{
	pthread_mutex_lock(&r->gate_mu);
	while (r->gate == 0)
		pthread_cond_wait(&r->gate_cv, &r->gate_mu);
	int g = r->gate;
	pthread_mutex_unlock(&r->gate_mu);
	return g > 0;
}

static void open_gate(fb_run_state *r, int value)
{
	pthread_mutex_lock(&r->gate_mu);
	r->gate = value;
	pthread_cond_broadcast(&r->gate_cv);
	pthread_mutex_unlock(&r->gate_mu);
}

static uint64_t draw(fb_prng *rng, uint64_t lo, uint64_t hi)
{
	return lo + (hi > lo ? fb_prng_next(rng) % (hi - lo + 1) : 0);
}

static void record(fb_worker *w, fb_fault f, uint8_t at, uint64_t arg, uint64_t extra)
{
	fb_plan_entry e = {atomic_load_explicit(&w->port.cycle, memory_order_relaxed),
	                   arg,
	                   extra,
	                   w->id,
	                   (uint8_t)f,
	                   at,
	                   FB_PHASE_HOLDING};
	fb_plan_log_add(w->port.log, &e);
}

/*
 * A plan's faults for this cycle: arm them on the worker's own port, as the
 * injector would have. One fault at a time: a second one in the same cycle
 * slips to the next. Pauses that landed "anywhere" come back at the phase
 * they struck: *any_phase says which (or -1).
 */
static void replay_plan(fb_worker *w, const fb_plan_entry **next, size_t *left, uint64_t n,
                        int *any_phase)
{
	fb_run_state *r = w->run;
	*any_phase = -1;
	while (*left && (*next)->cycle < n) { /* missed: the worker died or the plan is odd */
		(*next)++;
		(*left)--;
	}
	if (!*left || (*next)->cycle != n)
		return;
	const fb_plan_entry *e = *next;
	(*next)++;
	(*left)--;
	if (atomic_load_explicit(&w->port.pending, memory_order_relaxed)) {
		fb_counter_add(&r->plan_slipped, 1); /* one fault at a time */
		return;
	}
	atomic_store_explicit(&w->port.pending, 1, memory_order_relaxed);
	atomic_store_explicit(&w->port.arg_ns, e->arg_ns, memory_order_relaxed);
	atomic_store_explicit(&w->port.extra_ns, e->extra, memory_order_relaxed);
	if (e->fault == FB_FAULT_PAUSE && e->at == FB_AT_ANY)
		*any_phase = e->phase;
	else
		atomic_store_explicit(&w->port.armed, FB_ARM(e->fault, e->at),
		                      memory_order_relaxed);
}

/* Take an armed skew, crash or renew fault at the after-read point. Returns
 * false if the worker died. */
static bool take_fault(fb_worker *w, uint32_t armed, uint32_t key, fb_lease *l,
                       uint64_t *local_deadline)
{
	fb_run_state *r = w->run;
	fb_fault_port *p = &w->port;
	fb_fault f = FB_ARM_FAULT(armed);
	uint64_t arg = atomic_load_explicit(&p->arg_ns, memory_order_relaxed);
	switch (f) {
	case FB_FAULT_SKEW:
		record(w, f, FB_ARM_AT(armed), arg, (uint64_t)(r->cfg->skew_drift * 1e6));
		fb_port_take(p, f, 0);
		if (FB_ARM_AT(armed) == (fb_fault_at)FB_SKEW_BACK) {
			fb_clock_skewed_jump(&w->local, -(int64_t)arg);
		} else {
			/* From now on its clock runs slow, continuing from where it
			 * reads now. Only this thread reads or writes w->local. */
			uint64_t was = fb_clock_now(&w->local.base);
			fb_clock_skewed_init(&w->local, r->fast, 1.0 - r->cfg->skew_drift,
			                     (int64_t)(was - fb_clock_now(r->fast)));
		}
		break;
	case FB_FAULT_CRASH: {
		record(w, f, FB_AT_AFTER_READ, 0, 0);
		fb_port_take(p, f, 0);
		crash_slot *c = &r->crashes[key];
		atomic_store_explicit(&c->at, fb_clock_now(r->fast), memory_order_relaxed);
		/* release: the taker reads `at` after claiming the fence */
		atomic_store_explicit(&c->fence, l->fence, memory_order_release);
		fb_port_phase(p, FB_PHASE_DEAD);
		return false; /* pending stays set: nobody aims at the dead */
	}
	case FB_FAULT_RENEW: {
		record(w, f, FB_AT_AFTER_READ, arg, 0);
		fb_port_take(p, f, arg);
		fb_sleep_ns(arg); /* the late heartbeat */
		fb_lease renewed;
		fb_io io = r->lops->renew(w->lconn, key, l, &renewed);
		if (io == FB_IO_ERROR)
			engine_failed(r, "lease", r->lops->error(w->lconn));
		if (io == FB_IO_OK) {
			fb_counter_add(&w->renew_ok, 1);
			*l = renewed;
		} else {
			/* The bug: the client counts the heartbeat as sent and so the
			 * lease as extended, though it had expired and was taken. */
			fb_counter_add(&w->renew_believed, 1);
		}
		*local_deadline = fb_clock_now(&w->local.base) + r->cfg->ttl_ns;
		break;
	}
	default:
		return true; /* pauses and delays are taken elsewhere */
	}
	fb_port_done(p);
	return true;
}

/*
 * Claim the first-corruption slot (once per run) and note the newer lease
 * the stale write went behind: the lease slot still names its holder if it
 * has not moved on.
 */
static fb_first_corruption *claim_first(fb_run_state *r, void *lconn, uint32_t key, uint64_t newer)
{
	int no = 0;
	if (atomic_load_explicit(&r->first_claimed, memory_order_relaxed) ||
	    !atomic_compare_exchange_strong_explicit(&r->first_claimed, &no, 1,
	                                             memory_order_relaxed, memory_order_relaxed))
		return NULL;
	fb_first_corruption *fc = &r->first;
	fc->found = true;
	fc->key = key;
	fc->fault = -1;
	fc->newer_fence = newer;
	fb_lease now;
	if (r->lops->peek(lconn, key, &now) == FB_IO_OK && now.fence == newer) {
		fc->newer_owner = now.owner;
		fc->newer_acquired_at = now.expires_at - r->cfg->ttl_ns;
	}
	fc->wrote_at = fb_clock_now(r->clock);
	return fc;
}

/* A worker's stale write was accepted: if it is the run's first, keep the
 * story of its cycle. */
static void note_first(fb_worker *w, uint32_t key, const fb_lease *l, uint64_t newer,
                       const uint8_t *outcome, int64_t erased, int first)
{
	fb_first_corruption *fc = claim_first(w->run, w->lconn, key, newer);
	if (!fc)
		return;
	fb_fault_port *p = &w->port;
	fc->writer = w->id;
	fc->fence = l->fence;
	fc->expires_at = l->expires_at;
	fc->acquired_at = l->expires_at - w->run->cfg->ttl_ns;
	memcpy(fc->outcome, outcome, sizeof fc->outcome);
	fc->erased = erased;
	for (int i = 0; i < w->run->nactive; i++)
		fc->order[i] = (uint8_t)w->run->active[(first + i) % w->run->nactive];
	uint32_t faulted = atomic_load_explicit(&p->faulted, memory_order_relaxed);
	for (int f = 0; f < FB_FAULTS; f++)
		if (faulted & (1u << f)) {
			fc->fault = f;
			break;
		}
	if (fc->fault == FB_FAULT_PAUSE) {
		fc->fault_at = atomic_load_explicit(&p->last_at, memory_order_relaxed);
		fc->fault_ns = atomic_load_explicit(&p->last_ns, memory_order_relaxed);
		fc->fault_where = atomic_load_explicit(&p->last_where, memory_order_relaxed);
	}
}

/* The lease check before writing, per --check-lease. */
static bool lease_checks_out(fb_worker *w, uint32_t key, const fb_lease *l, uint64_t local_deadline,
                             bool rtt)
{
	fb_run_state *r = w->run;
	switch (r->cfg->check_lease) {
	case FB_CHECK_IS_HELD: {
		uint64_t e0 = eop_start(r, rtt);
		fb_io io = r->lops->is_held(w->lconn, key, l);
		eop_end(r, w, FB_EOP_IS_HELD, e0);
		if (io == FB_IO_ERROR)
			engine_failed(r, "lease", r->lops->error(w->lconn));
		return io == FB_IO_OK;
	}
	case FB_CHECK_LOCAL:
		return fb_clock_now(&w->local.base) < local_deadline;
	default:
		return true;
	}
}

/* The delay line's delivery of one write: what the store does with it now. */
static void deliver(void *ctx, const fb_delayed_write *dw)
{
	fb_run_state *r = ctx;
	fb_discipline d = (fb_discipline)dw->mode;
	fb_store_result res = {0};
	if (atomic_load_explicit(&r->failed, memory_order_relaxed)) {
		/* the engine is gone: never delivered, its outcome not the store's */
		fb_counter_add(&r->net[d].indeterminate, 1);
		return;
	}
	fb_io io = dw->debit ? r->sops->debit(r->net_sconn, d, dw->key, dw->value, dw->fence, &res)
	                     : r->sops->write(r->net_sconn, d, dw->key, dw->value, dw->fence, NULL,
	                                      &res);
	if (io == FB_IO_ERROR) {
		fb_counter_add(&r->net[d].indeterminate, 1);
		engine_failed(r, "store", r->sops->error(r->net_sconn));
		return;
	}
	bool ok = io == FB_IO_OK;
	fb_counter_add(&r->net_delivered, 1);
	/* One delay fault holds a cycle's writes, one per store: the first
	 * speaks for the fault in the vacuity counts. */
	fb_lease now;
	if (dw->first && r->lops->peek(r->net_lconn, dw->key, &now) == FB_IO_OK && now.fence &&
	    now.fence != dw->fence) /* 0: not known (yet) */
		fb_counter_add(&r->net_takeovers, 1);
	if (dw->first && (!ok || res.stale))
		fb_counter_add(&r->net_stale, 1);
	if (!ok) {
		fb_counter_add(&r->net[d].rejected, 1);
		return;
	}
	fb_counter_add(&r->net[d].accepted, 1);
	if (r->cfg->no_check) {
		if (res.stale)
			fb_counter_add(&r->net[d].store_stale, 1);
		return;
	}
	if (res.stale) {
		fb_counter_add(&r->net[d].store_stale, 1);
		fb_first_corruption *fc = claim_first(r, r->net_lconn, dw->key, res.highest);
		if (fc) {
			fc->writer = dw->worker;
			fc->fence = dw->fence;
			fc->fault = FB_FAULT_DELAY;
			fc->fault_at = dw->issued;
			fc->fault_ns = fc->wrote_at > dw->issued ? fc->wrote_at - dw->issued : 0;
			fc->outcome[d] = FB_OUT_STALE;
			fc->order[0] = (uint8_t)d;
			fc->erased = (dw->debit ? res.before : dw->read) - res.before;
		}
	}
	if (!r->checking)
		return;
	uint64_t stalls = 0;
	commit(r, d, dw->key, res.version, dw->fence, dw->debit ? res.before : dw->read, res.before,
	       res.balance, res.highest, &stalls);
	fb_counter_add(&r->net_stalls, stalls);
}

/*
 * The cycle of DESIGN section 2: acquire (retrying on contention), read the
 * balance under the lease from every store, [after-read point], optional
 * lease check, [after-check point], write balance - amount with the fence to
 * every store that served the read, release. The debit is a
 * read-modify-write of what was read, so lost updates are real.
 */
static void *worker_main(void *arg)
{
	fb_worker *w = arg;
	fb_run_state *r = w->run;
	const fb_config *cfg = r->cfg;
	fb_fault_port *port = &w->port;
	fb_pause_bind(port);
	if (!wait_gate(r))
		return NULL;

	fb_prng rng;
	fb_prng_init(&rng, cfg->seed, w->id);
	fb_lease_stats ls = {0};
	fb_witness_memo wmemo;
	memset(wmemo.key1, 0, sizeof wmemo.key1);
	uint64_t stalls = 0, n = 0;
	const bool rmw = cfg->op == FB_OP_RMW;
	const bool checking = r->checking;     /* --no-check: the ablation; shared runs */
	const bool witnessing = r->witnessing; /* --no-check */
	const fb_lease_ops *lops = r->lops;
	const fb_store_ops *sops = r->sops;
	const uint64_t ttl = cfg->ttl_ns;
	const bool skip = cfg->on_held == FB_ON_HELD_SKIP;
	/* Engine calls are timed with a remote engine, where a round trip
	 * dwarfs the clock. In process the sampled cycle's acquire and write
	 * latencies time the same calls: timing each again cost six more clock
	 * reads a timed cycle (about 8% of throughput, measured). */
	const bool remote = r->remote;
	const bool crashes = fb_config_fault(cfg, FB_FAULT_CRASH) || r->plan.n;
	/* A step of the service clock hits every cycle that spans it. */
	const bool stepping = cfg->lease_clock == FB_LEASE_CLOCK_REALTIME;
	/* ... and so does a pause of the lease service */
	const bool server_pausing = fb_config_fault(cfg, FB_FAULT_SERVER_PAUSE);
	const bool jumping = r->jumping; /* issue 14: ... and a node's clock jumping */
	const fb_plan_entry *plan = NULL;
	size_t planned = r->plan.n ? fb_plan_for(&r->plan, w->id, &plan) : 0;
	int any_phase = -1;
	bool counting = cfg->warmup_ns == 0;
	/* n % sample and n % nactive, kept by counting: two divisions a cycle
	 * cost more than the rest of its arithmetic */
	uint32_t tick = 0, rot = 0;
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		atomic_store_explicit(&port->cycle, ++n, memory_order_relaxed);
		tick = tick + 1 == cfg->sample ? 0 : tick + 1;
		rot = rot + 1 == (uint32_t)r->nactive ? 0 : rot + 1;
		any_phase = -1;
		if (planned)
			replay_plan(w, &plan, &planned, n, &any_phase);
		if (any_phase == FB_PHASE_IDLE)
			fb_pause_now(port, false);
		if (!counting && atomic_load_explicit(&r->counting, memory_order_relaxed)) {
			/* Warm-up over: start the performance counts afresh. The
			 * correctness counts cover the whole run: the checker must see
			 * every write. */
			counting = true;
			fb_counter_reset(&w->ops);
			fb_counter_reset(&w->acquired);
			fb_counter_reset(&w->contended);
			ls = (fb_lease_stats){0};
			fb_hist_init(&w->acquire);
			fb_hist_init(&w->write);
			fb_hist_init(&w->cycle);
			for (int e = 0; e < FB_EOPS; e++)
				fb_hist_init(&w->eop[e]);
		}
		bool timed = tick == 0;
		uint64_t t0 = timed ? fb_clock_now(r->fast) : 0;
		uint32_t key = fb_dist_pick(cfg, r->zipf_cdf, w->id, &rng);
		fb_port_phase(port, FB_PHASE_ACQUIRING);
		if (any_phase == FB_PHASE_ACQUIRING)
			fb_pause_now(port, false);
		fb_lease l;
		fb_acquire a;
		unsigned fails = 0;
		for (;;) {
			uint64_t e0 = eop_start(r, remote);
			a = lops->acquire(w->lconn, key, &l, &ls);
			eop_end(r, w, FB_EOP_ACQUIRE, e0);
			if (a != FB_HELD)
				break;
			fb_counter_add(&w->contended, 1);
			if (atomic_load_explicit(&r->stop, memory_order_relaxed))
				break;
			fails++;
			if (skip) { /* another key; if all seem held, back off all the same */
				key = fb_dist_pick(cfg, r->zipf_cdf, w->id, &rng);
				if (fails < 4)
					continue;
			}
			backoff(fails, fails >= 16 ? fb_clock_now(r->clock) : 0, l.expires_at);
		}
		if (a != FB_ACQUIRED) {
			fb_port_phase(port, FB_PHASE_IDLE);
			if (a == FB_EXHAUSTED) {
				atomic_store_explicit(&r->exhausted, 1, memory_order_relaxed);
				atomic_store_explicit(&r->stop, 1, memory_order_relaxed);
			}
			if (a == FB_ACQ_ERROR)
				engine_failed(r, "lease", lops->error(w->lconn));
			break;
		}
		fb_counter_add(&w->acquired, 1);
		if (witnessing) /* on the service's own clock */
			fb_witness_acquired_memo(r->witness, key, l.fence, l.service_at + ttl,
			                         &w->witness, &wmemo);
		uint64_t steps =
		        stepping ? atomic_load_explicit(&r->service_steps, memory_order_relaxed)
		                 : 0;
		uint64_t spauses = server_pausing ? atomic_load_explicit(&r->server_pauses,
		                                                         memory_order_relaxed)
		                                  : 0;
		uint64_t jumps =
		        jumping ? atomic_load_explicit(&r->node_jumps, memory_order_relaxed) : 0;
		if (crashes) {
			/* The first acquire of a crashed holder's key times the takeover. */
			crash_slot *c = &r->crashes[key];
			uint64_t cf = atomic_load_explicit(&c->fence, memory_order_relaxed);
			if (cf && l.fence > cf &&
			    atomic_compare_exchange_strong_explicit(&c->fence, &cf, 0,
			                                            memory_order_acquire,
			                                            memory_order_relaxed)) {
				uint64_t at = atomic_load_explicit(&c->at, memory_order_relaxed);
				uint64_t now = fb_clock_now(r->fast);
				fb_hist_record(&w->takeover, now > at ? now - at : 0);
				fb_counter_add(&w->crash_takeovers, 1);
			}
		}
		uint64_t local_deadline = 0;
		if (cfg->check_lease == FB_CHECK_LOCAL)
			local_deadline = fb_clock_now(&w->local.base) + cfg->ttl_ns;
		fb_port_hold(port, key, l.fence);
		if (any_phase == FB_PHASE_HOLDING)
			fb_pause_now(port, false);
		uint64_t t1 = timed ? fb_clock_now(r->fast) : 0;

		/* Rotate the order of the disciplines each cycle: a pause that
		 * lands between two of them must not favour one column. */
		int first = (int)rot;
		int64_t bal[FB_DISCIPLINES] = {0};
		bool served[FB_DISCIPLINES];
		bool stale = false, silent = false;
		fb_store_result res = {0}, rd[FB_DISCIPLINES];
		for (int i = 0; i < r->nactive; i++) {
			fb_discipline d = r->active[rotated(first, i, r->nactive)];
			fb_io io = FB_IO_OK;
			if (rmw) {
				uint64_t e0 = eop_start(r, remote);
				rd[d] = (fb_store_result){0};
				io = sops->read(w->sconn, d, key, l.fence, &rd[d]);
				eop_end(r, w, FB_EOP_READ, e0);
			}
			if (io == FB_IO_ERROR) {
				engine_failed(r, "store", sops->error(w->sconn));
				silent = true;
				break;
			}
			served[d] = io == FB_IO_OK;
			if (!served[d]) {
				fb_counter_add(&w->m[d].reads_refused, 1);
				stale = true;
			}
			bal[d] = rmw ? rd[d].balance : 0;
		}
		if (silent) { /* the store fell silent: the run is over */
			fb_port_phase(port, FB_PHASE_IDLE);
			break;
		}
		uint32_t armed = fb_port_armed(port);
		if (armed && !take_fault(w, armed, key, &l, &local_deadline))
			break; /* crashed holding the lease */
		fb_pause_point(port, key, l.fence, r->clock, FB_AT_AFTER_READ);
		if (cfg->work_max_ns)
			fb_sleep_ns(draw(&rng, cfg->work_min_ns, cfg->work_max_ns));
		bool checked = lease_checks_out(w, key, &l, local_deadline, remote);
		fb_pause_point(port, key, l.fence, r->clock, FB_AT_AFTER_CHECK);
		if (!checked)
			fb_counter_add(&w->abandoned, 1);

		armed = fb_port_armed(port);
		bool resend = false;
		if (armed && FB_ARM_FAULT(armed) == FB_FAULT_RETRY) {
			record(w, FB_FAULT_RETRY, FB_AT_AFTER_CHECK, 0, 0);
			fb_port_take(port, FB_FAULT_RETRY, 0);
			resend = true;
		}
		uint64_t delay = 0;
		if (armed && FB_ARM_FAULT(armed) == FB_FAULT_DELAY) {
			delay = atomic_load_explicit(&port->arg_ns, memory_order_relaxed);
			record(w, FB_FAULT_DELAY, FB_AT_AFTER_CHECK, delay, 0);
			fb_port_take(port, FB_FAULT_DELAY, delay);
		}
		uint64_t tw = 0;
		bool sent = false; /* a write of this cycle is in flight */
		uint8_t outcome[FB_DISCIPLINES] = {0};
		uint64_t stale_newer = 0; /* the fence a stale write went behind */
		int64_t erased = 0;       /* ... and the debits it erased */
		pending_commit todo[2 * FB_DISCIPLINES];
		int ntodo = 0;
		for (int i = 0; checked && !silent && i < r->nactive; i++) {
			fb_discipline d = r->active[rotated(first, i, r->nactive)];
			if (!served[d]) {
				outcome[d] = FB_OUT_READ_REFUSED;
				continue;
			}
			fb_mode_counters *mc = &w->m[d];
			fb_counter_add(&mc->writes, 1);
			/* Zombie: the writer's own lease is over as it issues the write
			 * (read per write: a pause can fall between two of them). */
			uint64_t now = fb_clock_now(r->clock);
			if (timed && !tw) /* the write latency's start: sampled cycles only */
				tw = r->clock == r->fast ? now : fb_clock_now(r->fast);
			if (now >= l.expires_at)
				fb_counter_add(&mc->zombie, 1);
			int64_t value = rmw ? bal[d] - cfg->amount : cfg->amount;
			if (delay) {
				fb_delayed_write dw = {fb_clock_now(r->fast) + delay,
				                       l.fence,
				                       now,
				                       value,
				                       bal[d],
				                       key,
				                       w->id,
				                       (uint8_t)d,
				                       !rmw,
				                       !sent};
				if (fb_delay_send(r->delay, &dw) == FB_OK) {
					sent = true;
					continue;
				}
				/* no memory to hold it: it goes out on time instead */
			}
			/* A lost acknowledgement (retry fault) sends the write twice:
			 * same value, same fence. A correct fenced store refuses the
			 * second copy: an equal token is stale. */
			for (int copy = 0; copy <= (int)resend; copy++) {
				if (copy) { /* the resent copy is a write of its own */
					fb_counter_add(&mc->writes, 1);
					if (now >= l.expires_at)
						fb_counter_add(&mc->zombie, 1);
				}
				uint64_t e0 = eop_start(r, remote);
				fb_io io =
				        rmw ? sops->write(w->sconn, d, key, value, l.fence, &rd[d],
				                          &res)
				            : sops->debit(w->sconn, d, key, value, l.fence, &res);
				eop_end(r, w, FB_EOP_WRITE, e0);
				if (io == FB_IO_ERROR) {
					/* sent, never answered: it may or may not have
					 * landed; the store's history knows, we do not */
					fb_counter_add(&mc->indeterminate, 1);
					engine_failed(r, "store", sops->error(w->sconn));
					silent = true;
					break;
				}
				if (io != FB_IO_OK) {
					fb_counter_add(&mc->rejected, 1);
					outcome[d] = FB_OUT_REJECTED;
					stale = true;
					continue;
				}
				fb_counter_add(&mc->accepted, 1);
				outcome[d] = FB_OUT_ACCEPTED;
				if (res.stale) {
					fb_counter_add(&mc->store_stale, 1);
					outcome[d] = FB_OUT_STALE;
					stale_newer = res.highest;
					erased = (rmw ? bal[d] : res.before) - res.before;
					stale = true;
				}
				todo[ntodo++] = (pending_commit){
				        d,          res.version, rmw ? bal[d] : res.before,
				        res.before, res.balance, res.highest};
			}
		}
		if (silent) { /* what was accepted before the silence is history */
			if (checking)
				commit_all(r, todo, ntodo, key, l.fence, &stalls);
			fb_port_phase(port, FB_PHASE_IDLE);
			break;
		}
		if (delay || resend)
			fb_port_done(port);
		if (stale_newer)
			note_first(w, key, &l, stale_newer, outcome, erased, first);
		uint64_t t2 = timed ? fb_clock_now(r->fast) : 0;
		if (!tw)
			tw = t2;
		/* A failed compare-and-delete means another worker took the lease. */
		if (witnessing)
			fb_witness_releasing_memo(r->witness, key, l.fence, l.service_at + ttl,
			                          &wmemo);
		uint64_t e0 = eop_start(r, remote);
		fb_io rel = lops->release(w->lconn, key, &l);
		eop_end(r, w, FB_EOP_RELEASE, e0);
		if (rel == FB_IO_ERROR)
			engine_failed(r, "lease", lops->error(w->lconn));
		bool taken_over = rel == FB_IO_REFUSED;
		if (stepping &&
		    atomic_load_explicit(&r->service_steps, memory_order_relaxed) != steps)
			atomic_fetch_or_explicit(&port->faulted, 1u << FB_FAULT_SKEW,
			                         memory_order_relaxed);
		if (server_pausing &&
		    atomic_load_explicit(&r->server_pauses, memory_order_relaxed) != spauses)
			atomic_fetch_or_explicit(&port->faulted, 1u << FB_FAULT_SERVER_PAUSE,
			                         memory_order_relaxed);
		if (jumping && atomic_load_explicit(&r->node_jumps, memory_order_relaxed) != jumps)
			atomic_fetch_or_explicit(&port->faulted, 1u << FB_FAULT_NODE_JUMP,
			                         memory_order_relaxed);
		fb_port_phase(port, FB_PHASE_IDLE);
		/* Which faults hit this cycle, and what they did: the vacuity proof. */
		/* Set only on this thread (its faults, its signal handler): a plain
		 * load spares the locked exchange in the cycles nothing hit, and a
		 * fault that lands after it is this thread's next cycle's. */
		uint32_t faulted = atomic_load_explicit(&port->faulted, memory_order_relaxed);
		if (faulted)
			faulted = atomic_exchange_explicit(&port->faulted, 0, memory_order_relaxed);
		for (int f = 0; faulted && f < FB_FAULTS; f++) {
			if (!(faulted & (1u << f)) || f == FB_FAULT_DELAY)
				continue; /* a delayed write's outcome is the delay line's */
			if (taken_over)
				fb_counter_add(&port->takeovers[f], 1);
			if (stale)
				fb_counter_add(&port->stale_attempts[f], 1);
		}
		/* History goes to the checker after the release: if the checker's
		 * ring is full (a paused writer holds back a key's walk) the wait
		 * must not hold a lease, or it would make zombies of its own. */
		if (checking)
			commit_all(r, todo, ntodo, key, l.fence, &stalls);
		fb_counter_add(&w->ops, 1);
		if (timed) {
			fb_hist_record(&w->acquire, t1 - t0);
			fb_hist_record(&w->write, t2 - tw);
			fb_hist_record(&w->cycle, fb_clock_now(r->fast) - t0);
		}
	}
	fb_counter_add(&w->cas_retries, ls.cas_retries);
	fb_counter_add(&w->wasted_fences, ls.wasted_fences);
	fb_counter_add(&w->checker_stalls, stalls);
	return NULL;
}

static void sample(fb_run_state *r, uint64_t t0, fb_sample *s)
{
	memset(s, 0, sizeof *s);
	s->t_s = (double)(fb_clock_now(r->fast) - t0) / 1e9;
	s->ops_min = UINT64_MAX;
	for (uint32_t i = 0; i < r->started; i++) {
		fb_worker *w = &r->workers[i];
		uint64_t ops = fb_counter_get(&w->ops);
		s->ops += ops;
		if (atomic_load_explicit(&w->port.phase, memory_order_relaxed) != FB_PHASE_DEAD) {
			s->ops_min = ops < s->ops_min ? ops : s->ops_min;
			s->ops_max = ops > s->ops_max ? ops : s->ops_max;
		}
		for (int f = 0; f < FB_FAULTS; f++)
			s->faults += fb_counter_get(&w->port.taken[f]);
		for (int d = 0; d < FB_DISCIPLINES; d++) {
			s->writes[d] += fb_counter_get(&w->m[d].writes);
			s->accepted[d] += fb_counter_get(&w->m[d].accepted);
			s->rejected[d] += fb_counter_get(&w->m[d].rejected);
			s->reads_refused[d] += fb_counter_get(&w->m[d].reads_refused);
			s->store_stale[d] += fb_counter_get(&w->m[d].store_stale);
		}
	}
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		s->accepted[d] += fb_counter_get(&r->net[d].accepted);
		s->rejected[d] += fb_counter_get(&r->net[d].rejected);
		s->store_stale[d] += fb_counter_get(&r->net[d].store_stale);
	}
}

/* Wait until `deadline` on r->fast or a SIGINT/SIGTERM; returns the signal or 0. */
static int wait_until(fb_run_state *r, uint64_t deadline)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	for (;;) {
		uint64_t now = fb_clock_now(r->fast);
		if (now >= deadline || atomic_load_explicit(&r->stop, memory_order_relaxed))
			return 0;
		uint64_t d = deadline - now;
		if (d > 100000000)
			d = 100000000; /* wake to notice a worker-initiated stop */
		struct timespec ts = {(time_t)(d / 1000000000u), (long)(d % 1000000000u)};
		int sig = sigtimedwait(&set, NULL, &ts);
		if (sig > 0)
			return sig;
	}
}

static void sum_workers(fb_run_state *r, fb_results *res)
{
	for (uint32_t i = 0; i < r->started; i++) {
		fb_worker *w = &r->workers[i];
		res->per_thread_ops[i] = fb_counter_get(&w->ops);
		res->dead[i] =
		        atomic_load_explicit(&w->port.phase, memory_order_relaxed) == FB_PHASE_DEAD;
		res->ops += fb_counter_get(&w->ops);
		res->acquired += fb_counter_get(&w->acquired);
		res->contended += fb_counter_get(&w->contended);
		res->cas_retries += fb_counter_get(&w->cas_retries);
		res->wasted_fences += fb_counter_get(&w->wasted_fences);
		res->checker_stalls += fb_counter_get(&w->checker_stalls);
		res->abandoned += fb_counter_get(&w->abandoned);
		res->renew_ok += fb_counter_get(&w->renew_ok);
		res->renew_believed += fb_counter_get(&w->renew_believed);
		res->crash_takeovers += fb_counter_get(&w->crash_takeovers);
		res->lease.duplicates += w->witness.duplicates;
		res->lease.inversions += w->witness.inversions;
		res->lease.overlaps += w->witness.overlaps;
		res->pause_hit += fb_counter_get(&w->port.hit);
		res->pause_at_point += fb_counter_get(&w->port.at_point);
		res->pause_trapped += fb_counter_get(&w->port.trapped);
		res->paused_ns += fb_counter_get(&w->port.paused_ns);
		for (int f = 0; f < FB_FAULTS; f++) {
			res->fault[f].taken += fb_counter_get(&w->port.taken[f]);
			res->fault[f].over_ttl += fb_counter_get(&w->port.over_ttl[f]);
			res->fault[f].takeovers += fb_counter_get(&w->port.takeovers[f]);
			res->fault[f].stale_attempts += fb_counter_get(&w->port.stale_attempts[f]);
		}
		fb_hist_merge(&res->acquire, &w->acquire);
		fb_hist_merge(&res->write, &w->write);
		fb_hist_merge(&res->cycle, &w->cycle);
		fb_hist_merge(&res->takeover, &w->takeover);
		for (int e = 0; e < FB_EOPS; e++)
			fb_hist_merge(&res->eop[e], &w->eop[e]);
		for (int d = 0; d < FB_DISCIPLINES; d++) {
			fb_mode_result *m = &res->mode[d];
			m->writes += fb_counter_get(&w->m[d].writes);
			m->accepted += fb_counter_get(&w->m[d].accepted);
			m->rejected_stale += fb_counter_get(&w->m[d].rejected);
			m->reads_refused += fb_counter_get(&w->m[d].reads_refused);
			m->store_stale += fb_counter_get(&w->m[d].store_stale);
			m->zombie_writes += fb_counter_get(&w->m[d].zombie);
			m->indeterminate += fb_counter_get(&w->m[d].indeterminate);
		}
	}
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		res->mode[d].accepted += fb_counter_get(&r->net[d].accepted);
		res->mode[d].rejected_stale += fb_counter_get(&r->net[d].rejected);
		res->mode[d].store_stale += fb_counter_get(&r->net[d].store_stale);
		res->mode[d].indeterminate += fb_counter_get(&r->net[d].indeterminate);
	}
	res->checker_stalls += fb_counter_get(&r->net_stalls);
	res->delayed = fb_counter_get(&r->net_delivered);
	res->fault[FB_FAULT_DELAY].takeovers += fb_counter_get(&r->net_takeovers);
	res->fault[FB_FAULT_DELAY].stale_attempts += fb_counter_get(&r->net_stale);
	res->crashes = res->fault[FB_FAULT_CRASH].taken;
	res->plan_slipped = fb_counter_get(&r->plan_slipped);
}

static void key_result(void *ctx, uint32_t k, const fb_check_key *ck, int64_t balance,
                       int64_t ledger, uint64_t last_fence)
{
	struct {
		fb_results *res;
		fb_discipline d;
		int64_t amount;
	} *c = ctx;
	fb_key_result *kr = &c->res->keys[k];
	kr->balance[c->d] = balance;
	kr->accepted[c->d] = ck->checked;
	kr->stale[c->d] = ck->stale_accepted;
	kr->lost[c->d] = ledger / c->amount;
	kr->last_fence[c->d] = last_fence;
}

/* Walk every checker to the end and compare what it found with the store. */
static void check_modes(fb_run_state *r, fb_results *res)
{
	const fb_config *cfg = r->cfg;
	for (int i = 0; i < r->nactive; i++) {
		fb_discipline d = r->active[i];
		fb_mode_result *m = &res->mode[d];
		struct {
			fb_results *res;
			fb_discipline d;
			int64_t amount;
		} ctx = {res, d, cfg->amount};
		fb_check_verdict v;
		int64_t *bal = calloc(cfg->keys, sizeof *bal);
		uint64_t *last = calloc(cfg->keys, sizeof *last);
		m->on = true;
		if (!bal || !last) {
			snprintf(m->disagreement, sizeof m->disagreement,
			         "out of memory reading the store back");
			free(bal);
			free(last);
			continue;
		}
		if (r->sops->final(r->net_sconn, d, cfg->keys, bal, last) != FB_IO_OK) {
			snprintf(m->disagreement, sizeof m->disagreement,
			         "the store did not answer after the run: %s",
			         r->sops->error(r->net_sconn));
			free(bal);
			free(last);
			continue;
		}
		fb_checker_verdict(r->checker[d], d != FB_UNFENCED, bal, last, cfg->initial_balance,
		                   cfg->amount, m->accepted, m->store_stale, &v, key_result, &ctx);
		free(bal);
		free(last);
		m->checked = v.checked;
		m->stale_accepted = v.stale_accepted;
		m->chain_breaks = v.chain_breaks;
		m->lost_updates = v.lost_updates;
		m->lost_history = v.lost_history;
		m->checker_agrees = v.agrees;
		memcpy(m->disagreement, v.disagreement, sizeof m->disagreement);
	}
}

static void destroy(fb_run_state *r)
{
	for (int d = 0; d < FB_DISCIPLINES; d++)
		fb_checker_destroy(r->checker[d]);
	if (r->workers)
		for (uint32_t i = 0; i < r->cfg->threads; i++) {
			if (r->workers[i].lconn)
				r->lops->disconnect(r->workers[i].lconn);
			if (r->workers[i].sconn)
				r->sops->disconnect(r->workers[i].sconn);
		}
	if (r->net_lconn)
		r->lops->disconnect(r->net_lconn);
	if (r->net_sconn)
		r->sops->disconnect(r->net_sconn);
	if (r->pause_lconn)
		r->lops->disconnect(r->pause_lconn);
	if (r->leng)
		r->lops->close(r->leng);
	if (r->seng)
		r->sops->close(r->seng);
	fb_witness_destroy(r->witness);
	fb_plan_log_destroy(r->log);
	fb_plan_free(&r->plan);
	free(r->traps);
	free(r->crashes);
	free(r->zipf_cdf);
	free(r->workers);
	pthread_mutex_destroy(&r->gate_mu);
	pthread_cond_destroy(&r->gate_cv);
}

static fb_err oom(fb_run_state *r)
{
	fprintf(stderr, "fencebench: out of memory setting up %u threads and %u keys\n",
	        r->cfg->threads, r->cfg->keys);
	destroy(r);
	return FB_ENOMEM;
}

/*
 * Open both engines, prepare them (afresh, unless this is one process of a
 * shared run) and connect each worker, and the delay line, to each: one
 * context (a server connection) per thread. A failure prints the option and
 * the engine's reason, which names the URL with its password hidden.
 */
/* The longest a writer can legitimately hold back its key's next version:
 * its own pause, delay and work, and a TTL's worth of slack, twice over. */
static uint64_t longest_wait(const fb_config *cfg)
{
	uint64_t hold = cfg->pause_max_ns + cfg->delay_max_ns + cfg->work_max_ns + cfg->ttl_ns;
	return UINT64_C(10000000000) + 2 * hold;
}

static fb_engine_config engine_config(const fb_config *cfg, const fb_clock *clock)
{
	return (fb_engine_config){.keys = cfg->keys,
	                          .ttl_ns = cfg->ttl_ns,
	                          .fence = cfg->fence,
	                          .first_fence = cfg->first_fence,
	                          .clock = clock,
	                          .bug = cfg->bug,
	                          .between = fb_pause_armed_here,
	                          .modes = cfg->modes,
	                          .initial_balance = cfg->initial_balance,
	                          .amount = cfg->amount,
	                          .op = (int)cfg->op,
	                          .client_id = cfg->client_id,
	                          .threads = cfg->threads,
	                          /* a pause, of the server or of the caller in the
	                           * middle of a call, must not read as a dead server */
	                          .timeout_ns =
	                                  fb_config_fault(cfg, FB_FAULT_SERVER_PAUSE) ||
	                                                  fb_config_fault(cfg, FB_FAULT_PAUSE)
	                                          ? UINT64_C(10000000000) + 2 * cfg->pause_max_ns
	                                          : 0};
}

fb_err fb_run_prepare(const fb_config *cfg)
{
	const fb_lease_ops *lops = fb_lease_engine(cfg->lease_url);
	const fb_store_ops *sops = fb_store_engine(cfg->store_url);
	fb_engine_config ec = engine_config(cfg, fb_clock_fast());
	ec.client_id = 0;
	char err[512] = "", v[64];
	void *leng = NULL, *seng = NULL;
	const char *opt = "--lease";
	fb_err e = lops->open(&ec, cfg->lease_url, &leng, err, sizeof err);
	if (!e)
		e = lops->prepare(leng, true, err, sizeof err);
	if (!e) {
		lops->version(leng, v, sizeof v);
		printf("lease: %s %s: every lease and fence forgotten; the first fence will be "
		       "%llu\n",
		       lops->name, v, (unsigned long long)cfg->first_fence);
		opt = "--store";
		e = sops->open(&ec, cfg->store_url, &seng, err, sizeof err);
	}
	if (!e)
		e = sops->prepare(seng, true, err, sizeof err);
	if (!e) {
		sops->version(seng, v, sizeof v);
		char bal[32];
		printf("store: %s %s: %u keys at balance %s in each discipline, no history\n",
		       sops->name, v, cfg->keys,
		       fb_grouped(bal, sizeof bal, (double)cfg->initial_balance));
	}
	if (e)
		fprintf(stderr, "fencebench: %s: %s\n", opt, err);
	if (leng)
		lops->close(leng);
	if (seng)
		sops->close(seng);
	return e;
}

static fb_err open_engines(fb_run_state *r, fb_results *res)
{
	const fb_config *cfg = r->cfg;
	fb_engine_config ec = engine_config(cfg, r->clock);
	char err[512] = "";
	const char *opt = "--lease";
	bool fresh = !cfg->client_id;
	fb_err e = r->lops->open(&ec, cfg->lease_url, &r->leng, err, sizeof err);
	if (!e)
		e = r->lops->prepare(r->leng, fresh, err, sizeof err);
	if (!e) {
		opt = "--store";
		e = r->sops->open(&ec, cfg->store_url, &r->seng, err, sizeof err);
		if (!e)
			e = r->sops->prepare(r->seng, fresh, err, sizeof err);
	}
	if (!e) {
		opt = "--lease";
		e = r->lops->connect(r->leng, 0, &r->net_lconn, err, sizeof err);
	}
	if (!e) {
		opt = "--store";
		e = r->sops->connect(r->seng, 0, &r->net_sconn, err, sizeof err);
	}
	if (!e && (fb_config_fault(cfg, FB_FAULT_SERVER_PAUSE) ||
	           fb_config_fault(cfg, FB_FAULT_NODE_JUMP))) {
		opt = "--lease";
		e = r->lops->connect(r->leng, 0, &r->pause_lconn, err, sizeof err);
	}
	/* issue 14: a node jump needs a node set up for it; without one the
	 * run goes on without the fault, and says so */
	if (!e && fb_config_fault(cfg, FB_FAULT_NODE_JUMP)) {
		r->jumping = r->lops->node_jump(r->pause_lconn, 0) == FB_IO_OK;
		if (!r->jumping)
			fprintf(stderr, "fencebench: --faults: node-jump skipped: %s\n",
			        r->lops->error(r->pause_lconn));
	}
	for (uint32_t i = 0; !e && i < cfg->threads; i++) {
		fb_worker *w = &r->workers[i];
		opt = "--lease";
		e = r->lops->connect(r->leng, (uint16_t)(i + 1), &w->lconn, err, sizeof err);
		if (!e) {
			opt = "--store";
			e = r->sops->connect(r->seng, (uint16_t)(i + 1), &w->sconn, err,
			                     sizeof err);
		}
	}
	if (e) {
		fprintf(stderr, "fencebench: %s: %s\n", opt, err);
		return e;
	}
	char v[64];
	r->lops->version(r->leng, v, sizeof v);
	snprintf(res->lease_engine, sizeof res->lease_engine, "%s %s", r->lops->name, v);
	r->sops->version(r->seng, v, sizeof v);
	snprintf(res->store_engine, sizeof res->store_engine, "%s %s", r->sops->name, v);
	res->remote = r->remote;
	res->check_deferred = !r->checking && !cfg->no_check;
	return FB_OK;
}

/* Everything the workers share, before any thread exists. */
static fb_err setup(fb_run_state *r, fb_results *res)
{
	const fb_config *cfg = r->cfg;
	const fb_clock *base = r->fast;
	if (cfg->lease_clock == FB_LEASE_CLOCK_REALTIME) {
		/* A wall clock the skew fault can step: the Redis documentation's
		 * warning, made measurable. */
		fb_clock_skewed_init(&r->service, fb_clock_realtime(), 1.0, 0);
		base = &r->service.base;
	}
	r->clock = base;
	r->remote = r->lops != &fb_inproc_lease_ops || r->sops != &fb_inproc_store_ops;
	/* Another process writes the same keys: this one's checker would wait
	 * for versions it never sees. `fencebench check` reads the whole
	 * history afterwards. */
	r->checking = !cfg->no_check && !cfg->client_id;
	r->witnessing = !cfg->no_check;
	/* a remote service expires keys on its millisecond grid; an engine
	 * that dates leases on the caller's clock names its own bound */
	uint64_t slack = r->lops == &fb_inproc_lease_ops ? 50000
	                 : r->lops->witness_slack_ns     ? r->lops->witness_slack_ns
	                                                 : 2000000;
	if (fb_witness_create(cfg->keys, cfg->ttl_ns, slack, &r->witness) != FB_OK)
		return oom(r);
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		if (!(cfg->modes & (1u << d)))
			continue;
		r->active[r->nactive++] = (fb_discipline)d;
		if (!r->checking)
			continue;
		if (fb_checker_create(cfg->keys, cfg->threads, cfg->initial_balance,
		                      &r->checker[d]))
			return oom(r);
		/* longer than any fault can hold a version back */
		fb_checker_bound(r->checker[d], &r->failed, r->fast, longest_wait(cfg));
	}
	r->workers = aligned_alloc(FB_PAD_LINE, (size_t)cfg->threads * sizeof *r->workers);
	res->per_thread_ops = calloc(cfg->threads, sizeof *res->per_thread_ops);
	res->dead = calloc(cfg->threads, sizeof *res->dead);
	res->keys = calloc(cfg->keys, sizeof *res->keys);
	r->traps = aligned_alloc(FB_CACHE_LINE, (size_t)cfg->keys * sizeof *r->traps);
	r->crashes = aligned_alloc(FB_CACHE_LINE, (size_t)cfg->keys * sizeof *r->crashes);
	if (!r->workers || !res->per_thread_ops || !res->dead || !res->keys || !r->traps ||
	    !r->crashes)
		return oom(r);
	memset(r->workers, 0, (size_t)cfg->threads * sizeof *r->workers);
	fb_err opened = open_engines(r, res);
	if (opened) {
		destroy(r);
		return opened;
	}
	for (uint32_t k = 0; k < cfg->keys; k++) {
		atomic_init(&r->traps[k].fence, 0);
		atomic_init(&r->traps[k].wake_at, 0);
		atomic_init(&r->traps[k].extra_ns, 0);
		atomic_init(&r->crashes[k].fence, 0);
		atomic_init(&r->crashes[k].at, 0);
	}
	if (cfg->dist.kind == FB_DIST_ZIPF) {
		if (!(r->zipf_cdf = malloc(cfg->keys * sizeof *r->zipf_cdf)))
			return oom(r);
		double sum = 0;
		for (uint32_t k = 0; k < cfg->keys; k++)
			r->zipf_cdf[k] = sum += pow(k + 1.0, -cfg->dist.s);
		for (uint32_t k = 0; k < cfg->keys; k++)
			r->zipf_cdf[k] /= sum;
		r->zipf_cdf[cfg->keys - 1] = 1.0;
	}
	if (cfg->plan_out_path) {
		/* room for twice the expected faults, and then some */
		double per_s = 0;
		for (int f = 0; f < FB_FAULTS; f++)
			per_s += fb_config_rate(cfg, (fb_fault)f);
		double want = 2 * per_s * ((double)cfg->duration_ns / 1e9) + 4096;
		uint64_t cap =
		        want > (double)(UINT64_C(1) << 26) ? UINT64_C(1) << 26 : (uint64_t)want;
		if (fb_plan_log_create(cap, &r->log) != FB_OK)
			return oom(r);
	}
	if (cfg->plan_path) {
		char err[512];
		fb_err e = fb_plan_read(cfg->plan_path, cfg->threads, &r->plan, err, sizeof err);
		if (e) {
			fprintf(stderr, "fencebench: --plan: %s\n", err);
			destroy(r);
			return e == FB_ESYS ? FB_EINVAL : e;
		}
	}
	if (fb_pause_install() != FB_OK) {
		fprintf(stderr, "fencebench: sigaction(SIGUSR1) failed, errno=%d (%s)\n", errno,
		        strerror(errno));
		destroy(r);
		return FB_ESYS;
	}
	return FB_OK;
}

static fb_err start_workers(fb_run_state *r)
{
	const fb_config *cfg = r->cfg;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	/* Workers need little stack; 32k threads of 8 MiB would not fit. */
	pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN > 262144 ? PTHREAD_STACK_MIN : 262144);
	fb_err err = FB_OK;
	const fb_placement place = {cfg->cpus, cfg->n_cpus, cfg->pin};
	for (uint32_t i = 0; i < cfg->threads; i++) {
		fb_worker *w = &r->workers[i];
		w->run = r;
		w->id = (uint16_t)(i + 1);
		w->port.worker = w->id;
		w->port.ttl_ns = cfg->ttl_ns;
		w->port.lease_clock = r->clock;
		w->port.traps = r->traps;
		w->port.log = r->log;
		fb_clock_skewed_init(&w->local, r->fast, 1.0, 0);
		fb_hist_init(&w->acquire);
		fb_hist_init(&w->write);
		fb_hist_init(&w->cycle);
		fb_hist_init(&w->takeover);
		for (int e = 0; e < FB_EOPS; e++)
			fb_hist_init(&w->eop[e]);
		fb_placement_apply(&place, i, &attr);
		pthread_t tid;
		int e = pthread_create(&tid, &attr, worker_main, w);
		if (e == EINVAL && (cfg->pin || cfg->n_cpus)) {
			fprintf(stderr,
			        "fencebench: --cpus: worker %u cannot run on the CPUs given: "
			        "pthread_create failed, errno=%d (%s)\n",
			        i + 1, e, strerror(e));
			err = FB_EINVAL;
			break;
		}
		if (e) {
			fprintf(stderr,
			        "fencebench: cannot start worker thread %u of %u: pthread_create "
			        "failed, "
			        "errno=%d (%s)\n",
			        i + 1, cfg->threads, e, strerror(e));
			err = FB_ESYS;
			break;
		}
		w->port.tid = tid;
		r->started++;
	}
	pthread_attr_destroy(&attr);
	return err;
}

static fb_err start_injector(fb_run_state *r, fb_fault_port **ports, fb_injector **inj)
{
	const fb_config *cfg = r->cfg;
	fb_injector_config ic = {
	        .pause_min_ns = cfg->pause_min_ns,
	        .pause_max_ns = cfg->pause_max_ns,
	        .delay_min_ns = cfg->delay_min_ns,
	        .delay_max_ns = cfg->delay_max_ns,
	        .skew_ns = cfg->skew_ns,
	        .ttl_ns = cfg->ttl_ns,
	        .seed = cfg->seed,
	        .at = cfg->fault_at,
	        .service_clock = cfg->lease_clock == FB_LEASE_CLOCK_REALTIME ? &r->service : NULL,
	        .steps = &r->service_steps,
	        .log = r->log,
	        .plan = r->plan.n ? &r->plan : NULL,
	        .server_pause = r->pause_lconn ? server_pause : NULL,
	        .server_ctx = r,
	        .server_pauses = &r->server_pauses,
	        .node_jump = r->jumping ? node_jump : NULL, /* issue 14 */
	        .node_jumps = &r->node_jumps,
	};
	double total = 0;
	for (int f = 0; f < FB_FAULTS; f++) {
		if (fb_config_fault(cfg, (fb_fault)f))
			ic.rate[f] = fb_config_rate(cfg, (fb_fault)f);
		total += ic.rate[f];
	}
	if ((total <= 0 && !ic.plan) || !r->started)
		return FB_OK;
	for (uint32_t i = 0; i < r->started; i++)
		ports[i] = &r->workers[i].port;
	if (fb_injector_start(&ic, ports, r->started, inj) != FB_OK) {
		fprintf(stderr,
		        "fencebench: cannot start the injector thread: pthread_create failed, "
		        "errno=%d (%s)\n",
		        errno, strerror(errno));
		return FB_ESYS;
	}
	return FB_OK;
}

fb_err fb_run(const fb_config *cfg, fb_tick_fn tick, void *ctx, fb_results *res)
{
	fb_run_state r = {.cfg = cfg,
	                  .fast = fb_clock_fast(),
	                  .lops = fb_lease_engine(cfg->lease_url),
	                  .sops = fb_store_engine(cfg->store_url)};
	if (!r.lops || !r.sops) { /* the option parser refuses these first */
		fprintf(stderr, "fencebench: unknown engine\n");
		return FB_EINVAL;
	}
	pthread_mutex_init(&r.gate_mu, NULL);
	pthread_cond_init(&r.gate_cv, NULL);
	atomic_init(&r.stop, 0);
	atomic_init(&r.exhausted, 0);
	atomic_init(&r.failed, 0);
	atomic_init(&r.server_pauses, 0);
	atomic_init(&r.node_jumps, 0);
	atomic_init(&r.service_steps, 0);
	atomic_init(&r.first_claimed, 0);
	atomic_init(&r.counting, cfg->warmup_ns == 0);
	memset(res, 0, sizeof *res);
	res->cfg = cfg;
	fb_err err = setup(&r, res);
	if (err) {
		fb_results_free(res);
		return err;
	}
	res->clock_name = r.clock->name;

	fb_fault_port **ports = calloc(cfg->threads, sizeof *ports);
	if (!ports) {
		fb_results_free(res);
		return oom(&r);
	}
	if (fb_delay_start(deliver, &r, &r.delay) != FB_OK) {
		fprintf(stderr, "fencebench: cannot start the delay line's thread: errno=%d (%s)\n",
		        errno, strerror(errno));
		free(ports);
		destroy(&r);
		fb_results_free(res);
		return FB_ESYS;
	}
	fb_injector *inj = NULL;
	err = start_workers(&r);
	if (!err)
		err = start_injector(&r, ports, &inj);
	if (err) {
		open_gate(&r, -1);
		for (uint32_t i = 0; i < r.started; i++)
			pthread_join(r.workers[i].port.tid, NULL);
		fb_delay_stop(r.delay);
		free(ports);
		destroy(&r);
		fb_results_free(res);
		return err;
	}

	r.first.t0 = fb_clock_now(r.clock);
	open_gate(&r, 1);
	if (cfg->warmup_ns) {
		int sig = wait_until(&r, fb_clock_now(r.fast) + cfg->warmup_ns);
		if (sig) {
			res->interrupted = true;
			res->signal = sig;
		}
	}
	atomic_store_explicit(&r.counting, 1, memory_order_relaxed);
	uint64_t t0 = fb_clock_now(r.fast), end = res->interrupted ? t0 : t0 + cfg->duration_ns;
	for (uint64_t next = t0 + 1000000000u; !res->interrupted; next += 1000000000u) {
		uint64_t until = next < end ? next : end;
		int sig = wait_until(&r, until);
		if (sig) {
			res->interrupted = true;
			res->signal = sig;
			break;
		}
		if (atomic_load_explicit(&r.stop, memory_order_relaxed))
			break;
		fb_sample s;
		sample(&r, t0, &s);
		if (tick)
			tick(ctx, &s);
		if (until >= end)
			break;
	}
	atomic_store_explicit(&r.stop, 1, memory_order_relaxed);
	fb_injector_stats ist = {0};
	fb_injector_stop(inj, &ist);
	for (uint32_t i = 0; i < r.started; i++)
		pthread_join(r.workers[i].port.tid, NULL);
	res->elapsed_s = (double)(fb_clock_now(r.fast) - t0) / 1e9;
	/* A worker that died in the last TTL may still hold its lease: that
	 * is liveness not yet due, not a failure; its age says which. */
	uint64_t end_t = fb_clock_now(r.fast);
	for (uint32_t k = 0; k < cfg->keys; k++)
		if (atomic_load_explicit(&r.crashes[k].fence, memory_order_acquire)) {
			uint64_t at = atomic_load_explicit(&r.crashes[k].at, memory_order_relaxed);
			uint64_t age = end_t > at ? end_t - at : 0;
			res->crash_pending++;
			if (age > res->crash_pending_age_ns)
				res->crash_pending_age_ns = age;
		}
	/* Writes still in flight land now, late, before anything is counted. */
	fb_delay_stop(r.delay);
	fb_hist_init(&res->acquire);
	fb_hist_init(&res->write);
	fb_hist_init(&res->cycle);
	fb_hist_init(&res->takeover);
	for (int e = 0; e < FB_EOPS; e++)
		fb_hist_init(&res->eop[e]);
	sum_workers(&r, res);
	for (int f = 0; f < FB_FAULTS; f++)
		res->fault[f].sent = ist.sent[f];
	res->injector_missed = ist.missed;
	res->service_steps = ist.service_steps;
	res->fault[FB_FAULT_SKEW].taken += ist.service_steps;
	res->fault[FB_FAULT_SERVER_PAUSE].taken = ist.server_paused;
	res->fault[FB_FAULT_SERVER_PAUSE].over_ttl = ist.server_over_ttl;
	res->fault[FB_FAULT_NODE_JUMP].taken = ist.node_jumped; /* issue 14 */
	res->fault[FB_FAULT_NODE_JUMP].over_ttl = ist.node_over_ttl;
	bool failed = atomic_load(&r.failed);
	if (failed) /* written before `failed`, by a thread joined since */
		snprintf(res->failure, sizeof res->failure, "%s", r.failure);
	if (r.checking && !failed)
		check_modes(&r, res);
	else /* nothing was checked: the stores' own counts, marked so */
		for (int i = 0; i < r.nactive; i++) {
			fb_mode_result *m = &res->mode[r.active[i]];
			m->on = true;
			m->checker_agrees = true;
			m->unchecked = true;
			m->stale_accepted = m->store_stale;
		}
	res->first = r.first;
	if (r.log) {
		char comment[1024];
		fb_config_replay(cfg, comment, sizeof comment);
		res->plan_recorded = atomic_load(&r.log->n);
		res->plan_dropped = fb_plan_log_dropped(r.log);
		if (fb_plan_write(r.log, cfg->plan_out_path, comment))
			fprintf(stderr,
			        "fencebench: --plan-out: cannot write '%s': errno=%d (%s)\n",
			        cfg->plan_out_path, errno, strerror(errno));
	}
	free(ports);
	bool exhausted = atomic_load(&r.exhausted);
	destroy(&r);
	if (failed) {
		fprintf(stderr, "fencebench: %s\n", res->failure);
		return FB_EENGINE;
	}
	if (exhausted) {
		fprintf(stderr,
		        "fencebench: the fence space (2^47) is exhausted; the run stopped\n");
		return FB_EFENCE;
	}
	return FB_OK;
}

void fb_results_free(fb_results *res)
{
	free(res->per_thread_ops);
	free(res->dead);
	free(res->keys);
	res->per_thread_ops = NULL;
	res->dead = NULL;
	res->keys = NULL;
}
