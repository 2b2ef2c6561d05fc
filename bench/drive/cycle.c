/*
 * The worker's cycle (cycle.h): every operation once, for both drivers.
 *
 * An operation reads and writes the worker's own state and the shared
 * environment; it never sleeps, spins or waits itself (but for a commit on
 * a blocking environment, the threaded one's): where the cycle must wait
 * (a pause, a late heartbeat's stall, the holder's work) it returns
 * FB_SLEEP and the driver waits, on the real clock or the virtual one.
 */
#define _GNU_SOURCE
#include "cycle.h"
#include "control.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "dist.h"
#include "judge.h"
#include "listeners.h"
#include "stop.h"

const char *const fb_pc_names[FB_PCS] = {
        "begin", "pick",  "acquire",     "read", "fault", "renew",   "pause-read", "trap",
        "work",  "check", "pause-check", "arm",  "write", "release", "commit",     "end"};

/* The operations are inlined into the straight line of fb_cycle_thread (and
 * the simulator's switch): a call per operation cost about a third of a
 * single thread's cycle here. */
#define HOT inline __attribute__((always_inline))

static inline fb_step go(fb_worker *w, uint8_t pc)
{
	w->pc = pc;
	return (fb_step){FB_GO, 0};
}

/* Wait ns, then go on at pc; a pause (pausing: one begun, never of 0 ns)
 * ends when the driver wakes the worker. 0 ns: go on at once. */
static inline fb_step nap(fb_worker *w, uint8_t pc, uint64_t ns, bool pausing)
{
	w->pc = pc;
	if (!ns)
		return (fb_step){FB_GO, 0};
	w->pausing = pausing;
	return (fb_step){FB_SLEEP, ns};
}

static inline fb_step stop(fb_worker *w)
{
	fb_port_phase(&w->port, FB_PHASE_IDLE);
	return (fb_step){FB_STOP, 0};
}

/* An engine call, timed when `on`: the engine is remote (a round trip dwarfs
 * the clock). In process the sampled cycle's acquire and write latencies
 * time the same calls: timing each again cost six more clock reads a timed
 * cycle (about 8% of throughput, measured). */
static inline uint64_t eop_start(const fb_env *e, bool on)
{
	return on ? fb_clock_now(e->fast) : 0;
}

static inline void eop_end(const fb_env *e, fb_worker *w, fb_engine_op op, uint64_t t0)
{
	if (t0)
		fb_hist_record(&w->eop[op], fb_clock_now(e->fast) - t0);
}

/* The i-th of n disciplines from first, without a division. */
static inline fb_discipline rotated(const fb_env *e, int first, int i)
{
	int j = first + i;
	return e->active[j >= e->nactive ? j - e->nactive : j];
}

/* A fault taken by the worker, for the listeners (the plan log). */
static void record(fb_worker *w, fb_fault f, uint8_t at, uint64_t arg, uint64_t extra)
{
	FB_EMIT(w->env, &w->heard, FB_EV_FAULT, .worker = w->id, .key = w->key, .fence = w->l.fence,
	        .fault = (uint8_t)f, .at = at, .arg = arg, .extra = extra,
	        .cycle = atomic_load_explicit(&w->port.cycle, memory_order_relaxed));
}

void fb_env_failed(fb_env *e, const char *what, const char *why)
{
	int no = 0;
	if (atomic_compare_exchange_strong_explicit(&e->failed, &no, 1, memory_order_relaxed,
	                                            memory_order_relaxed)) {
		/* when, on the lease clock the story's times are read on */
		uint64_t now = fb_clock_now(e->clock), t0 = e->t0;
		if (t0 && now >= t0)
			snprintf(e->failure, sizeof e->failure, "%s, %.3f s into the run: %s", what,
			         (double)(now - t0) / 1e9, why);
		else
			snprintf(e->failure, sizeof e->failure, "%s: %s", what, why);
	}
	fb_env_stop(e);
}

void fb_env_stop(fb_env *e)
{
	/* release: what the stopper wrote before it (a failure's text) is
	 * seen by whoever sees the flag. Once: the first stopper wakes every
	 * wait, and a wait begun after it looks at the flag before it sleeps */
	if (atomic_exchange_explicit(&e->stop, 1, memory_order_release))
		return;
	fb_sleep_wake(&e->stop);
	/* writers waiting for room in their logs look at the flags now */
	if (e->feed)
		fb_feed_wake(e->feed);
}

void fb_worker_init(fb_worker *w, fb_env *e, uint16_t id)
{
	const fb_config *cfg = e->cfg;
	w->env = e;
	w->id = id;
	w->port.worker = id;
	w->port.ttl_ns = cfg->ttl_ns;
	w->port.lease_clock = e->clock;
	w->port.traps = e->traps;
	w->port.log = e->log;
	w->port.stop = &e->stop;
	w->log = e->feed ? fb_feed_log_of(e->feed, id - 1u) : NULL;
	fb_clock_skewed_init(&w->local, e->fast, 1.0, 0);
	fb_hist_init(&w->acquire);
	fb_hist_init(&w->write);
	fb_hist_init(&w->cycle);
	fb_hist_init(&w->takeover);
	for (int k = 0; k < FB_EOPS; k++)
		fb_hist_init(&w->eop[k]);
	fb_prng_init(&w->rng, cfg->seed, id);
	memset(w->heard.wmemo.key1, 0, sizeof w->heard.wmemo.key1);
	w->counting = cfg->warmup_ns == 0;
	w->any_phase = -1;
	w->pc = FB_PC_BEGIN;
	w->planned = e->plan.n ? fb_plan_for(&e->plan, id, &w->plan) : 0;
}

/* ---- begin: the stop flag, the plan, the warm-up ---- */

/*
 * A plan's faults for this cycle: arm them on the worker's own port, as the
 * injector would have. One fault at a time: a second one in the same cycle
 * slips to the next. Pauses that landed "anywhere" come back at the phase
 * they struck: any_phase says which (or -1).
 */
static void replay_plan(fb_worker *w)
{
	fb_env *e = w->env;
	while (w->planned && w->plan->cycle < w->n) { /* missed: the worker died, or an odd plan */
		w->plan++;
		w->planned--;
	}
	if (!w->planned || w->plan->cycle != w->n)
		return;
	const fb_plan_entry *p = w->plan++;
	w->planned--;
	if (atomic_load_explicit(&w->port.pending, memory_order_relaxed)) {
		fb_counter_add(&e->plan_slipped, 1); /* one fault at a time */
		return;
	}
	atomic_store_explicit(&w->port.pending, 1, memory_order_relaxed);
	atomic_store_explicit(&w->port.arg_ns, p->arg_ns, memory_order_relaxed);
	atomic_store_explicit(&w->port.extra_ns, p->extra, memory_order_relaxed);
	if (p->fault == FB_FAULT_PAUSE && p->at == FB_AT_ANY)
		w->any_phase = (int8_t)p->phase;
	else
		atomic_store_explicit(&w->port.armed, FB_ARM(p->fault, p->at),
		                      memory_order_relaxed);
}

/* Warm-up over: start the performance counts afresh. The correctness counts
 * cover the whole run: the checker must see every write. */
static void start_counting(fb_worker *w)
{
	w->counting = true;
	fb_counter_reset(&w->ops);
	fb_counter_reset(&w->acquired);
	fb_counter_reset(&w->contended);
	w->ls = (fb_lease_stats){0};
	fb_hist_init(&w->acquire);
	fb_hist_init(&w->write);
	fb_hist_init(&w->cycle);
	for (int k = 0; k < FB_EOPS; k++)
		fb_hist_init(&w->eop[k]);
}

static HOT fb_step op_begin(fb_worker *w)
{
	fb_env *e = w->env;
	const fb_config *cfg = e->cfg;
	if (atomic_load_explicit(&e->stop, memory_order_relaxed))
		return stop(w);
	if (cfg->cycles && w->n >= cfg->cycles) { /* --cycles: done; the last one stops the run */
		if (atomic_fetch_add_explicit(&e->done, 1, memory_order_relaxed) + 1 == e->nworkers)
			fb_env_stop(e);
		return stop(w);
	}
	atomic_store_explicit(&w->port.cycle, ++w->n, memory_order_relaxed);
	w->tick = w->tick + 1 == cfg->sample ? 0 : w->tick + 1;
	w->rot = w->rot + 1 == (uint32_t)e->nactive ? 0 : w->rot + 1;
	w->any_phase = -1;
	if (w->planned)
		replay_plan(w);
	if (!w->counting && atomic_load_explicit(&e->counting, memory_order_relaxed))
		start_counting(w);
	if (w->any_phase == FB_PHASE_IDLE)
		return nap(w, FB_PC_PICK, fb_port_pause_begin(&w->port, false), true);
	return go(w, FB_PC_PICK);
}

static HOT fb_step op_pick(fb_worker *w)
{
	fb_env *e = w->env;
	w->timed = w->tick == 0;
	w->t0 = w->timed ? fb_clock_now(e->fast) : 0;
	w->key = fb_dist_pick(e->cfg, e->zipf_cdf, w->id, &w->rng);
	w->fails = 0;
	fb_port_phase(&w->port, FB_PHASE_ACQUIRING);
	if (w->any_phase == FB_PHASE_ACQUIRING)
		return nap(w, FB_PC_ACQUIRE, fb_port_pause_begin(&w->port, false), true);
	return go(w, FB_PC_ACQUIRE);
}

/* ---- the lease ---- */

/* The first acquire of a crashed holder's key times the takeover. */
static void time_takeover(fb_worker *w)
{
	fb_env *e = w->env;
	fb_crash_slot *c = &e->crashes_at[w->key];
	uint64_t cf = atomic_load_explicit(&c->fence, memory_order_relaxed);
	if (cf && w->l.fence > cf &&
	    atomic_compare_exchange_strong_explicit(&c->fence, &cf, 0, memory_order_acquire,
	                                            memory_order_relaxed)) {
		uint64_t at = atomic_load_explicit(&c->at, memory_order_relaxed);
		uint64_t now = fb_clock_now(e->fast);
		fb_hist_record(&w->takeover, now > at ? now - at : 0);
		fb_counter_add(&w->crash_takeovers, 1);
	}
}

/* The cycle's lease was granted: what every later operation reads. */
static HOT fb_step acquired(fb_worker *w)
{
	fb_env *e = w->env;
	const fb_config *cfg = e->cfg;
	fb_counter_add(&w->acquired, 1);
	/* the commit's lines, on their way while the cycle runs (the consumer's
	 * core read them last): -t 1 checked, the median rate 14-27% higher in
	 * four noisy side-by-side sets, unchanged in a quiet one; -t 2 unchanged */
	if (w->log)
		fb_feed_prefetch(w->log, FB_DISCIPLINES);
	FB_EMIT(e, &w->heard, FB_EV_ACQUIRED, .worker = w->id, .key = w->key, .fence = w->l.fence,
	        .lease = &w->l);
	w->steps = e->stepping ? atomic_load_explicit(&e->service_steps, memory_order_relaxed) : 0;
	w->spauses = e->server_pausing
	                     ? atomic_load_explicit(&e->server_pauses, memory_order_relaxed)
	                     : 0;
	w->jumps = e->jumping ? atomic_load_explicit(&e->node_jumps, memory_order_relaxed) : 0;
	if (e->crashes)
		time_takeover(w);
	if (cfg->check_lease == FB_CHECK_LOCAL)
		w->local_deadline = fb_clock_now(&w->local.base) + cfg->ttl_ns;
	fb_port_hold(&w->port, w->key, w->l.fence);
	w->t1 = w->timed ? fb_clock_now(e->fast) : 0;
	w->tw = 0;
	/* Rotate the order of the disciplines each cycle: a pause that lands
	 * between two of them must not favour one column. */
	w->first = (uint8_t)w->rot;
	w->i = 0;
	w->stale = w->resend = w->sent = w->silent = false;
	w->reg = 0;
	w->delay = w->stale_newer = 0;
	memset(w->outcome, 0, sizeof w->outcome);
	uint8_t next = FB_PC_READ;
	if (cfg->op != FB_OP_RMW) { /* a debit reads nothing: every store "served" */
		for (int d = 0; d < FB_DISCIPLINES; d++) {
			w->served[d] = true;
			w->bal[d] = 0;
		}
		next = FB_PC_FAULT;
	}
	if (w->any_phase == FB_PHASE_HOLDING)
		return nap(w, next, fb_port_pause_begin(&w->port, false), true);
	/* The takeover-read point, before the read: the next holder is held
	 * after its read until this one wakes, so this stale read falls
	 * between that holder's read and its write. */
	if (next == FB_PC_READ)
		return nap(w, next, fb_port_pause_due(&w->port, FB_AT_TAKEOVER_READ), true);
	return go(w, next);
}

static HOT fb_step op_acquire(fb_worker *w)
{
	fb_env *e = w->env;
	/* issue 24: from before the call: a wire fault can hold its reply */
	for (int i = 0; e->wiring && i < FB_FAULTS_OUTSIDE; i++)
		w->wires[i] = atomic_load_explicit(&e->wire_faults[i], memory_order_relaxed);
	if (e->wiring)
		w->outside0 = atomic_load_explicit(&e->outside_seq, memory_order_relaxed);
	uint64_t e0 = eop_start(e, e->remote);
	fb_acquire a = e->lops->acquire(w->lconn, w->key, &w->l, &w->ls);
	eop_end(e, w, FB_EOP_ACQUIRE, e0);
	if (a == FB_ACQUIRED)
		return acquired(w);
	if (a == FB_HELD) {
		fb_counter_add(&w->contended, 1);
		FB_EMIT(e, &w->heard, FB_EV_HELD, .worker = w->id, .key = w->key,
		        .fence = w->l.fence, .lease = &w->l);
		if (atomic_load_explicit(&e->stop, memory_order_relaxed))
			return stop(w);
		w->fails++;
		if (e->skip) { /* another key; if all seem held, back off all the same */
			w->key = fb_dist_pick(e->cfg, e->zipf_cdf, w->id, &w->rng);
			if (w->fails < 4)
				return go(w, FB_PC_ACQUIRE);
		}
		return (fb_step){FB_YIELD, 0};
	}
	if (a == FB_EXHAUSTED) {
		atomic_store_explicit(&e->exhausted, 1, memory_order_relaxed);
		fb_env_stop(e);
	}
	if (a == FB_ACQ_ERROR)
		fb_env_failed(e, "lease", e->lops->error(w->lconn));
	return stop(w);
}

/* ---- the reads, and what a refusal means ---- */

/* The fenced store admitted a call carrying f on key (a read served, a
 * write accepted) and its reply is back: from now on it has seen f, and
 * must refuse a read below it. A max kept by plain stores, no locked
 * instruction: a reply held up between reading the record and writing it
 * can set it back (until a higher fence comes), which can only hide stale
 * reads, never make one (every fence kept there was admitted). release:
 * the reply before the record, for a sender who reads it and then sends. */
static HOT void admitted(fb_env *e, uint32_t key, uint64_t f)
{
	if (!e->witnessing) /* --no-check: no judgement, no shared line */
		return;
	_Atomic uint64_t *a = &fb_env_marks(e, key)->admitted;
	if (atomic_load_explicit(a, memory_order_relaxed) < f)
		atomic_store_explicit(a, f, memory_order_release);
}

/* A fenced read is about to be sent: what the store admitted before it. */
static HOT void reading(fb_worker *w)
{
	w->admitted = w->env->witnessing
	                      ? atomic_load_explicit(&fb_env_marks(w->env, w->key)->admitted,
	                                             memory_order_seq_cst)
	                      : 0;
}

/*
 * The fenced store served this cycle's read. If a call carrying a higher
 * fence had been admitted by it, and answered, before this read was sent,
 * a correct store had registered that fence and must have refused this
 * read: a stale read served (the read checked against the last accepted
 * fence, not the highest seen). Judged on fencebench's own record of
 * replies, with no timing: a late report only hides one, never makes one.
 */
static HOT void read_served(fb_worker *w)
{
	fb_env *e = w->env;
	if (__builtin_expect(w->admitted > w->l.fence, 0)) {
		fb_counter_add(&w->m[FB_FENCED].stale_reads, 1);
		if (fb_claim_once(&e->stale_read_claimed))
			e->stale_read =
			        (fb_stale_read){true, w->key, w->id, w->l.fence, w->admitted};
	}
	admitted(e, w->key, w->l.fence);
}

/* A store whose versions are its own counts its write calls on each key,
 * in flight and accepted (FB_CALLS_*): the ordered checker walks a key
 * once none is in flight and every accepted one is in hand. seq_cst: the
 * count in flight before the call can be committed. */
static HOT void calls_begin(fb_env *e, fb_discipline d, uint32_t key)
{
	if (e->calls[d])
		atomic_fetch_add_explicit(&e->calls[d][key], 1, memory_order_seq_cst);
}

static HOT void calls_end(fb_env *e, fb_discipline d, uint32_t key, fb_io io)
{
	if (e->calls[d])
		atomic_fetch_add_explicit(&e->calls[d][key],
		                          io == FB_IO_OK ? FB_CALLS_ONE_ACCEPTED - 1 : UINT64_MAX,
		                          memory_order_seq_cst);
}

/*
 * What a refusal by store d of a call with `fence` on key was (DESIGN
 * section 3): stale, if a call carrying a higher fence had been sent to
 * that store before the reply came back, by fencebench's own record of
 * what it sent (never the store's claim, never the lease's promise: a
 * lease service that let a newer holder in makes the refusal right, and
 * the broken promise is the witness's); or if the caller's own fence had
 * been accepted already (own: a resent copy). Otherwise it refused its
 * rightful holder: a false rejection. An equal fence sent by another
 * lease (the lease service handed it out twice) makes the refusal stale
 * too, by the same record (fb_env_sending), key by key: never by the
 * witness's word, which may come late. A refusal with the store's own reason is that;
 * where fencebench does not see every call (a shared run, --no-check) it
 * is not judged. The record is read only here, after a refusal.
 */
static fb_outcome_t judge_refusal(fb_env *e, fb_discipline d, uint32_t key, uint64_t fence,
                                  const fb_store_result *res, bool own)
{
	static const fb_outcome_t as[] = {[FB_JUDGE_REFUSED_OTHER] = FB_OUT_REFUSED_OTHER,
	                                  [FB_JUDGE_REJECTED] = FB_OUT_REJECTED,
	                                  [FB_JUDGE_UNJUDGED] = FB_OUT_REFUSED,
	                                  [FB_JUDGE_FALSE] = FB_OUT_REFUSED_HOLDER};
	fb_judge_refusal j = fb_judge_refusal_of(res->other, d != FB_UNFENCED, own, e->judging);
	if (j == FB_JUDGE_BY_SENT) {
		uint64_t sent = atomic_load_explicit(fb_env_sent(e, key, d), memory_order_seq_cst);
		j = fb_judge_refusal_by_sent(fence, sent,
		                             sent == fence && fb_env_sent_twice(e, key, d, fence));
	}
	return as[j];
}

/* A refusal judged: counted where it belongs, the first false rejection and
 * the first reason of the store's own kept. */
static void count_refusal(fb_env *e, fb_mode_counters *mc, fb_discipline d, uint32_t key,
                          uint16_t worker, uint64_t fence, bool read, const fb_store_result *res,
                          fb_outcome_t o, void *sconn)
{
	switch (o) {
	case FB_OUT_REJECTED:
		if (!read)
			fb_counter_add(&mc->rejected, 1);
		return;
	case FB_OUT_REFUSED:
		fb_counter_add(&mc->unjudged, 1);
		return;
	case FB_OUT_REFUSED_OTHER:
		fb_counter_add(&mc->refused_other, 1);
		if (fb_claim_once(&e->other_claimed))
			snprintf(e->other_reason, sizeof e->other_reason, "%s",
			         res->other ? e->sops->error(sconn)
			                    : "a refusal by the unfenced store");
		return;
	default:
		break;
	}
	fb_counter_add(&mc->false_rejections, 1);
	if (!fb_claim_once(&e->false_claimed))
		return;
	e->false_rej = (fb_false_rejection){
	        true,         d,
	        read,         key,
	        worker,       fence,
	        res->highest, atomic_load_explicit(fb_env_sent(e, key, d), memory_order_relaxed)};
}

/* Store d refused this cycle's read or write: judged and counted. */
static fb_outcome_t refused(fb_worker *w, fb_discipline d, bool read, const fb_store_result *res,
                            bool own)
{
	fb_env *e = w->env;
	fb_outcome_t o = judge_refusal(e, d, w->key, w->l.fence, res, own);
	count_refusal(e, &w->m[d], d, w->key, w->id, w->l.fence, read, res, o, w->sconn);
	if (o == FB_OUT_REJECTED || o == FB_OUT_REFUSED)
		w->stale = true; /* a stale attempt, for the vacuity proof */
	return o;
}

/* Store d's read came back (into w->rd[d]): served, or refused and counted.
 * False: the store fell silent, and the run is over. */
static HOT bool read_done(fb_worker *w, fb_discipline d, fb_io io)
{
	fb_env *e = w->env;
	if (io == FB_IO_ERROR) {
		fb_env_failed(e, "store", e->sops->error(w->sconn));
		return false;
	}
	w->served[d] = io == FB_IO_OK;
	FB_EMIT(e, &w->heard, FB_EV_READ, .worker = w->id, .key = w->key, .fence = w->l.fence,
	        .d = (uint8_t)d, .served = w->served[d], .batched = e->batched,
	        .balance = w->rd[d].balance, .highest = w->rd[d].highest);
	if (w->served[d] && d == FB_FENCED)
		read_served(w);
	if (w->served[d])
		control_read(w, d);
	if (!w->served[d]) {
		fb_counter_add(&w->m[d].reads_refused, 1);
		fb_outcome_t o = refused(w, d, true, &w->rd[d], false);
		w->rd_out[d] = (uint8_t)(o == FB_OUT_REJECTED ? FB_OUT_READ_REFUSED : o);
	}
	w->bal[d] = w->rd[d].balance;
	return true;
}

/* The read phase in one round trip, on a store that batches: every store's
 * read sent together in the cycle's order, each outcome taken as op_read
 * takes one. One step, so a fault "anywhere" falls before or after the
 * whole phase; the round trip is the phase's. */
static fb_step read_all(fb_worker *w)
{
	fb_env *e = w->env;
	fb_store_op ops[FB_DISCIPLINES];
	fb_store_result r[FB_DISCIPLINES];
	fb_io io[FB_DISCIPLINES];
	for (int i = 0; i < e->nactive; i++) {
		ops[i] = (fb_store_op){FB_STORE_READ, rotated(e, w->first, i), 0, NULL};
		if (ops[i].d == FB_FENCED) {
			fb_env_sending(e, FB_FENCED, w->key, w->l.fence, &w->reg);
			reading(w);
		}
	}
	uint64_t e0 = eop_start(e, e->remote);
	e->sops->batch(w->sconn, e->nactive, ops, w->key, w->l.fence, r, io);
	eop_end(e, w, FB_EOP_READ, e0);
	bool answered = true;
	for (int i = 0; i < e->nactive; i++) {
		w->rd[ops[i].d] = r[i];
		answered &= read_done(w, ops[i].d, io[i]);
	}
	if (!answered)
		return stop(w);
	w->i = (uint8_t)e->nactive;
	return go(w, FB_PC_FAULT);
}

static HOT fb_step op_read(fb_worker *w)
{
	fb_env *e = w->env;
	if (e->batched)
		return read_all(w);
	fb_discipline d = rotated(e, w->first, w->i);
	uint64_t e0 = eop_start(e, e->timed_modes >> d & 1);
	w->rd[d] = (fb_store_result){0};
	if (d == FB_FENCED) {
		fb_env_sending(e, d, w->key, w->l.fence, &w->reg);
		reading(w);
	}
	fb_io io = e->sops->read(w->sconn, d, w->key, w->l.fence, &w->rd[d]);
	eop_end(e, w, FB_EOP_READ, e0);
	if (!read_done(w, d, io)) /* the store fell silent: the run is over */
		return stop(w);
	if (++w->i == e->nactive)
		w->pc = FB_PC_FAULT;
	return (fb_step){FB_GO, 0};
}

/* Store d gets no write this cycle: its read was refused. What the read
 * did to the listeners, as the store's outcome. */
static void unwritten(fb_worker *w, fb_discipline d)
{
	w->outcome[d] = w->rd_out[d];
	FB_EMIT(w->env, &w->heard, FB_EV_UNWRITTEN, .worker = w->id, .key = w->key,
	        .fence = w->l.fence, .d = (uint8_t)d, .outcome = w->rd_out[d],
	        .highest = w->rd[d].highest);
}

/* Past the stores whose read was refused (no write for them) to the next
 * that served it, or to the release. */
static HOT void next_write(fb_worker *w)
{
	fb_env *e = w->env;
	for (; w->i < e->nactive; w->i++) {
		fb_discipline d = rotated(e, w->first, w->i);
		if (w->served[d])
			return;
		unwritten(w, d);
	}
	w->pc = FB_PC_RELEASE;
}

/* ---- the after-read point ---- */

/* An armed skew, crash or late heartbeat, taken at the after-read point;
 * pauses and delays are taken at their own points. */
static HOT fb_step op_fault(fb_worker *w)
{
	fb_env *e = w->env;
	fb_fault_port *p = &w->port;
	uint32_t armed = fb_port_armed(p);
	if (!armed)
		return go(w, FB_PC_PAUSE_READ);
	fb_fault f = FB_ARM_FAULT(armed);
	uint64_t arg = atomic_load_explicit(&p->arg_ns, memory_order_relaxed);
	switch (f) {
	case FB_FAULT_SKEW:
		record(w, f, FB_ARM_AT(armed), arg, (uint64_t)(e->cfg->skew_drift * 1e6));
		fb_port_take(p, f, 0);
		if (FB_ARM_AT(armed) == (fb_fault_at)FB_SKEW_BACK) {
			fb_clock_skewed_jump(&w->local, -(int64_t)arg);
		} else {
			/* From now on its clock runs slow, continuing from where it
			 * reads now. Only this worker reads or writes w->local. */
			uint64_t was = fb_clock_now(&w->local.base);
			fb_clock_skewed_init(&w->local, e->fast, 1.0 - e->cfg->skew_drift,
			                     (int64_t)(was - fb_clock_now(e->fast)));
		}
		fb_port_done(p);
		return go(w, FB_PC_PAUSE_READ);
	case FB_FAULT_CRASH: {
		record(w, f, FB_AT_AFTER_READ, 0, 0);
		fb_port_take(p, f, 0);
		fb_crash_slot *c = &e->crashes_at[w->key];
		atomic_store_explicit(&c->at, fb_clock_now(e->fast), memory_order_relaxed);
		/* release: the taker reads `at` after claiming the fence */
		atomic_store_explicit(&c->fence, w->l.fence, memory_order_release);
		fb_port_phase(p, FB_PHASE_DEAD);
		FB_EMIT(e, &w->heard, FB_EV_DIED, .worker = w->id, .key = w->key,
		        .fence = w->l.fence);
		return (fb_step){FB_DIED, 0}; /* pending stays set: nobody aims at the dead */
	}
	case FB_FAULT_RENEW:
		record(w, f, FB_AT_AFTER_READ, arg, 0);
		fb_port_take(p, f, arg);
		return nap(w, FB_PC_RENEW, arg, false); /* the stall before the heartbeat */
	default:
		return go(w, FB_PC_PAUSE_READ);
	}
}

/* The late heartbeat. */
static fb_step op_renew(fb_worker *w)
{
	fb_env *e = w->env;
	fb_lease renewed = {0};
	FB_EMIT(e, &w->heard, FB_EV_RENEWING, .worker = w->id, .key = w->key, .fence = w->l.fence,
	        .lease = &w->l);
	fb_io io = e->lops->renew(w->lconn, w->key, &w->l, &renewed);
	if (io == FB_IO_ERROR)
		fb_env_failed(e, "lease", e->lops->error(w->lconn));
	if (io == FB_IO_OK) {
		fb_counter_add(&w->renew_ok, 1);
		FB_EMIT(e, &w->heard, FB_EV_RENEWED, .worker = w->id, .key = w->key,
		        .fence = w->l.fence, .lease = &w->l, .renewed = &renewed);
		w->l = renewed;
	} else {
		/* The bug: the client counts the heartbeat as sent and so the
		 * lease as extended, though it had expired and was taken. */
		fb_counter_add(&w->renew_believed, 1);
	}
	w->local_deadline = fb_clock_now(&w->local.base) + e->cfg->ttl_ns;
	fb_port_done(&w->port);
	return go(w, FB_PC_PAUSE_READ);
}

static HOT fb_step op_pause_read(fb_worker *w)
{
	return nap(w, FB_PC_TRAP, fb_port_pause_due(&w->port, FB_AT_AFTER_READ), true);
}

static HOT fb_step op_trap(fb_worker *w)
{
	uint64_t d = fb_port_trap_due(&w->port, w->key, w->l.fence, w->env->clock);
	return nap(w, FB_PC_WORK, d, true);
}

static HOT fb_step op_work(fb_worker *w)
{
	const fb_config *cfg = w->env->cfg;
	if (!cfg->work_max_ns)
		return go(w, FB_PC_CHECK);
	uint64_t lo = cfg->work_min_ns, hi = cfg->work_max_ns;
	return nap(w, FB_PC_CHECK, lo + (hi > lo ? fb_prng_next(&w->rng) % (hi - lo + 1) : 0),
	           false);
}

/* ---- the lease check, the after-check point ---- */

static HOT fb_step op_check(fb_worker *w)
{
	fb_env *e = w->env;
	switch (e->cfg->check_lease) {
	case FB_CHECK_IS_HELD: {
		uint64_t e0 = eop_start(e, e->remote);
		fb_io io = e->lops->is_held(w->lconn, w->key, &w->l);
		eop_end(e, w, FB_EOP_IS_HELD, e0);
		if (io == FB_IO_ERROR)
			fb_env_failed(e, "lease", e->lops->error(w->lconn));
		w->checked = io == FB_IO_OK;
		break;
	}
	case FB_CHECK_LOCAL:
		w->checked = fb_clock_now(&w->local.base) < w->local_deadline;
		if (w->checked && fb_clock_now(e->clock) >= w->l.expires_at)
			fb_counter_add(&w->local_fooled, 1);
		break;
	default:
		w->checked = true;
	}
	FB_EMIT(e, &w->heard, FB_EV_CHECKED, .worker = w->id, .key = w->key, .fence = w->l.fence,
	        .flag = w->checked);
	return go(w, FB_PC_PAUSE_CHECK);
}

static HOT fb_step op_pause_check(fb_worker *w)
{
	return nap(w, FB_PC_ARM, fb_port_pause_due(&w->port, FB_AT_AFTER_CHECK), true);
}

/* A lost acknowledgement (the writes go twice) or a delay (they go in
 * flight), armed for this cycle's writes. */
static HOT fb_step op_arm(fb_worker *w)
{
	fb_fault_port *p = &w->port;
	if (!w->checked) {
		fb_counter_add(&w->abandoned, 1);
		return go(w, FB_PC_RELEASE);
	}
	uint32_t armed = fb_port_armed(p);
	if (armed && FB_ARM_FAULT(armed) == FB_FAULT_RETRY) {
		record(w, FB_FAULT_RETRY, FB_AT_AFTER_CHECK, 0, 0);
		fb_port_take(p, FB_FAULT_RETRY, 0);
		w->resend = true;
	}
	if (armed && FB_ARM_FAULT(armed) == FB_FAULT_DELAY) {
		w->delay = atomic_load_explicit(&p->arg_ns, memory_order_relaxed);
		record(w, FB_FAULT_DELAY, FB_AT_AFTER_CHECK, w->delay, 0);
		fb_port_take(p, FB_FAULT_DELAY, w->delay);
	}
	w->i = 0;
	w->pc = FB_PC_WRITE;
	next_write(w);
	return (fb_step){FB_GO, 0};
}

/* ---- the writes ---- */

/* Store d's write (or its resent copy), issued at `now` from the balance
 * `read`, is done: its outcome to the listeners. */
static HOT void written(fb_worker *w, fb_discipline d, bool copy, uint8_t outcome, uint64_t now,
                        int64_t read, const fb_store_result *res)
{
	FB_EMIT(w->env, &w->heard, FB_EV_WRITTEN, .worker = w->id, .key = w->key,
	        .fence = w->l.fence, .d = (uint8_t)d, .copy = copy, .batched = w->env->batched,
	        .outcome = outcome, .now = now, .read = read, .res = res, .lease = &w->l);
}

/* Store d's write (or its resent copy, which is a write of its own) came
 * back: counted, and an accepted one kept for the checker. False: no
 * answer, so its outcome is unknown, and the run is over. */
static HOT bool wrote(fb_worker *w, fb_discipline d, bool copy, uint64_t now, fb_io io,
                      const fb_store_result *res)
{
	fb_env *e = w->env;
	fb_mode_counters *mc = &w->m[d];
	bool rmw = e->cfg->op == FB_OP_RMW;
	if (copy) {
		fb_counter_add(&mc->writes, 1);
		if (now >= w->l.expires_at)
			fb_counter_add(&mc->zombie, 1);
	}
	if (io == FB_IO_ERROR) {
		/* sent, never answered: it may or may not have landed; the
		 * store's history knows, we do not */
		fb_counter_add(&mc->indeterminate, 1);
		written(w, d, copy, FB_EV_NO_ANSWER, now, 0, res);
		fb_env_failed(e, "store", e->sops->error(w->sconn));
		w->silent = true;
		return false;
	}
	if (!copy)
		control_reply(w, d, mc);
	if (io != FB_IO_OK) {
		/* a resent copy of an accepted write is rightly refused: its token
		 * equals the accepted one */
		bool own =
		        copy && (w->outcome[d] == FB_OUT_ACCEPTED || w->outcome[d] == FB_OUT_STALE);
		uint8_t o = (uint8_t)refused(w, d, false, res, own);
		w->outcome[d] = o;
		written(w, d, copy, o, now, 0, res);
		return true;
	}
	fb_counter_add(&mc->accepted, 1);
	if (d == FB_FENCED)
		admitted(e, w->key, w->l.fence);
	w->outcome[d] = FB_OUT_ACCEPTED;
	int64_t read = rmw ? w->bal[d] : res->before;
	if (res->stale) {
		fb_counter_add(&mc->store_stale, 1);
		w->outcome[d] = FB_OUT_STALE;
		w->stale_newer = res->highest;
		w->stale = true;
	}
	written(w, d, copy, w->outcome[d], now, read, res); /* the feed keeps it (listen_feed.h) */
	return true;
}

/* One write (or its resent copy) to store d: sent, answered, counted. */
static HOT bool write_one(fb_worker *w, fb_discipline d, int64_t value, uint64_t now, bool copy)
{
	fb_env *e = w->env;
	fb_store_result *res = &w->res;
	if (!copy)
		control_send(w, d);
	fb_env_sending(e, d, w->key, w->l.fence, &w->reg);
	calls_begin(e, d, w->key);
	uint64_t e0 = eop_start(e, e->timed_modes >> d & 1);
	fb_io io = e->cfg->op == FB_OP_RMW
	                   ? e->sops->write(w->sconn, d, w->key, value, w->l.fence, &w->rd[d], res)
	                   : e->sops->debit(w->sconn, d, w->key, value, w->l.fence, res);
	eop_end(e, w, FB_EOP_WRITE, e0);
	calls_end(e, d, w->key, io);
	return wrote(w, d, copy, now, io, res);
}

/* The writes' instant on the lease clock, which the zombie count compares
 * with the lease; the first also starts a sampled cycle's write latency. */
static HOT uint64_t write_clock(fb_worker *w)
{
	fb_env *e = w->env;
	uint64_t now = fb_clock_now(e->clock);
	if (w->timed && !w->tw)
		w->tw = e->clock == e->fast ? now : fb_clock_now(e->fast);
	return now;
}

/* Store d's write is issued at `now`: counted (a zombie when the lease is
 * over), its value worked out, and put in flight if a delay holds this
 * cycle's writes. True: in flight, nothing to send now. */
static HOT bool issue(fb_worker *w, fb_discipline d, uint64_t now, int64_t *value)
{
	fb_env *e = w->env;
	const fb_config *cfg = e->cfg;
	fb_counter_add(&w->m[d].writes, 1);
	if (now >= w->l.expires_at)
		fb_counter_add(&w->m[d].zombie, 1);
	bool rmw = cfg->op == FB_OP_RMW;
	*value = rmw ? w->bal[d] - cfg->amount : cfg->amount;
	if (!w->delay)
		return false;
	fb_delayed_write dw = {fb_clock_now(e->fast) + w->delay,
	                       w->l.fence,
	                       now,
	                       *value,
	                       w->bal[d],
	                       w->key,
	                       w->id,
	                       (uint8_t)d,
	                       !rmw,
	                       !w->sent,
	                       (w->reg >> d & 1) != 0};
	if (e->send(e->send_ctx, &dw) != FB_OK)
		return false; /* no memory to hold it: it goes out on time instead */
	w->sent = true;
	written(w, d, false, FB_EV_IN_FLIGHT, now, 0, &(fb_store_result){0});
	return true;
}

/*
 * The write phase in one round trip, on a store that batches: the writes
 * of every store that served its read (each twice when the acknowledgement
 * is lost), sent together in the cycle's order at one instant, each
 * outcome taken as op_write takes one. What a delay holds goes in flight
 * as ever. One step, as the read phase.
 */
static fb_step write_all(fb_worker *w)
{
	fb_env *e = w->env;
	uint64_t now = write_clock(w);
	fb_store_verb verb = e->cfg->op == FB_OP_RMW ? FB_STORE_WRITE : FB_STORE_DEBIT;
	fb_store_op ws[FB_BATCH_MAX];
	int n = 0;
	for (; w->i < e->nactive; w->i++) {
		fb_discipline d = rotated(e, w->first, w->i);
		int64_t value;
		if (!w->served[d])
			unwritten(w, d);
		else if (!issue(w, d, now, &value))
			for (int copy = 0; copy <= (int)w->resend; copy++)
				ws[n++] = (fb_store_op){verb, d, value, &w->rd[d]};
	}
	w->i = 0;
	if (!n)
		return go(w, FB_PC_RELEASE);
	fb_store_result r[FB_BATCH_MAX];
	fb_io io[FB_BATCH_MAX];
	for (int j = 0; j < n; j++) {
		if (j == 0 || ws[j - 1].d != ws[j].d)
			control_send(w, ws[j].d);
		fb_env_sending(e, ws[j].d, w->key, w->l.fence, &w->reg);
		calls_begin(e, ws[j].d, w->key);
	}
	uint64_t e0 = eop_start(e, e->remote);
	e->sops->batch(w->sconn, n, ws, w->key, w->l.fence, r, io);
	eop_end(e, w, FB_EOP_WRITE, e0);
	for (int j = 0; j < n; j++)
		calls_end(e, ws[j].d, w->key, io[j]);
	bool answered = true;
	for (int j = 0; j < n; j++)
		answered &= wrote(w, ws[j].d, j > 0 && ws[j - 1].d == ws[j].d, now, io[j], &r[j]);
	/* the engine is gone: what it accepted is history */
	return go(w, answered ? FB_PC_RELEASE : FB_PC_COMMIT);
}

/* The next store that served the read: its write, in flight if delayed, and
 * sent twice if the acknowledgement is lost (a correct fenced store refuses
 * the second copy: an equal token is stale). */
static HOT fb_step op_write(fb_worker *w)
{
	if (w->env->batched)
		return write_all(w);
	fb_discipline d = rotated(w->env, w->first, w->i++);
	/* read per write: a pause can fall between two of them */
	uint64_t now = write_clock(w);
	int64_t value;
	if (!issue(w, d, now, &value))
		for (int copy = 0; copy <= (int)w->resend; copy++)
			if (!write_one(w, d, value, now, copy)) { /* the engine is gone */
				w->i = 0;
				return go(w, FB_PC_COMMIT); /* what it accepted is history */
			}
	next_write(w);
	return (fb_step){FB_GO, 0};
}

/* ---- the release, the commits ---- */

/* Released: the listeners hear which faults hit this cycle (the vacuity
 * proof's). Set only on this worker (its faults, its signal handler): a
 * plain load spares the locked exchange in the cycles nothing hit, and a
 * fault that lands after it is this worker's next cycle's. */
static HOT void released(fb_worker *w, const fb_lease *freed)
{
	fb_fault_port *p = &w->port;
	uint32_t faulted = atomic_load_explicit(&p->faulted, memory_order_relaxed);
	if (faulted)
		faulted = atomic_exchange_explicit(&p->faulted, 0, memory_order_relaxed);
	FB_EMIT(w->env, &w->heard, FB_EV_RELEASED, .worker = w->id, .key = w->key,
	        .fence = w->l.fence, .faulted = faulted, .flag = w->taken_over, .stale = w->stale,
	        .freed = freed);
}

static HOT fb_step op_release(fb_worker *w)
{
	fb_env *e = w->env;
	fb_fault_port *p = &w->port;
	if (w->delay || w->resend)
		fb_port_done(p);
	if (w->stale_newer) /* a store took a stale write: the story's facts */
		FB_EMIT(e, &w->heard, FB_EV_STALE, .worker = w->id, .key = w->key,
		        .fence = w->l.fence, .lease = &w->l, .now = fb_clock_now(e->clock),
		        .d = w->first, .cycle = w->outside0, .conn = w->lconn,
		        .faulted = atomic_load_explicit(&p->faulted, memory_order_relaxed),
		        .arg = atomic_load_explicit(&p->last_at, memory_order_relaxed),
		        .extra = atomic_load_explicit(&p->last_ns, memory_order_relaxed),
		        .where = atomic_load_explicit(&p->last_where, memory_order_relaxed));
	w->t2 = w->timed ? fb_clock_now(e->fast) : 0;
	if (!w->tw)
		w->tw = w->t2;
	FB_EMIT(e, &w->heard, FB_EV_RELEASING, .worker = w->id, .key = w->key, .fence = w->l.fence,
	        .lease = &w->l);
	uint64_t e0 = eop_start(e, e->remote);
	fb_lease freed, *asked = NULL; /* the word it freed: asked where the chain listens */
	if (e->chain) {
		freed = (fb_lease){0};
		asked = &freed;
	}
	fb_io rel = e->lops->release(w->lconn, w->key, &w->l, asked);
	eop_end(e, w, FB_EOP_RELEASE, e0);
	if (rel == FB_IO_ERROR)
		fb_env_failed(e, "lease", e->lops->error(w->lconn));
	/* A failed compare-and-delete means another worker took the lease. */
	w->taken_over = rel == FB_IO_REFUSED;
	/* a step of the service clock, or a pause of the service, hits every
	 * cycle that spans it */
	if (e->stepping &&
	    atomic_load_explicit(&e->service_steps, memory_order_relaxed) != w->steps)
		atomic_fetch_or_explicit(&p->faulted, 1u << FB_FAULT_SKEW, memory_order_relaxed);
	if (e->server_pausing &&
	    atomic_load_explicit(&e->server_pauses, memory_order_relaxed) != w->spauses)
		atomic_fetch_or_explicit(&p->faulted, 1u << FB_FAULT_SERVER_PAUSE,
		                         memory_order_relaxed);
	if (e->jumping && atomic_load_explicit(&e->node_jumps, memory_order_relaxed) != w->jumps)
		atomic_fetch_or_explicit(&p->faulted, 1u << FB_FAULT_NODE_JUMP,
		                         memory_order_relaxed);
	for (int i = 0; e->wiring && i < FB_FAULTS_OUTSIDE; i++) /* issue 24: the wire, likewise */
		if (atomic_load_explicit(&e->wire_faults[i], memory_order_relaxed) != w->wires[i])
			atomic_fetch_or_explicit(&p->faulted, 1u << (FB_FAULT_PARTITION + i),
			                         memory_order_relaxed);
	fb_port_phase(p, FB_PHASE_IDLE);
	released(w, asked);
	w->i = 0;
	/* History goes to the checker after the release: if the checker's ring
	 * is full (a paused writer holds back a key's walk) the wait must not
	 * hold a lease, or it would make zombies of its own. */
	return go(w, FB_PC_COMMIT);
}

bool fb_cycle_commit(fb_env *e, fb_feed_log *log, const fb_check_rec *c, uint64_t *stalls)
{
	if (!fb_feed_near(log, c, e->blocking, stalls) ||
	    (!fb_feed_slot(log) && !fb_feed_room(log, e->blocking, stalls))) {
		/* the run stopped: the last pass takes it from the spill */
		fb_check_rec *kept = e->blocking ? fb_feed_spill(log) : NULL;
		if (kept)
			*kept = *c;
		return kept; /* the simulator tries later; a wait given up: the run failed */
	}
	*fb_feed_slot(log) = *c;
	fb_feed_put(log);
	fb_feed_publish(log);
	return true;
}

/* The cycle's accepted writes, as the feed kept them, to its log
 * (listen_feed.h). A full log waits for room (threads: held by a walk,
 * bounded) or yields (the simulator tries again later). */
static HOT fb_step op_commit(fb_worker *w)
{
	if (!fb_feed_commit(w->env, &w->heard, w->log, &w->stalls))
		return (fb_step){FB_YIELD, 0};
	return go(w, FB_PC_END);
}

static HOT fb_step op_end(fb_worker *w)
{
	if (w->silent) /* what was accepted before the silence is history now */
		return stop(w);
	fb_counter_add(&w->ops, 1);
	if (w->timed) {
		fb_hist_record(&w->acquire, w->t1 - w->t0);
		fb_hist_record(&w->write, w->t2 - w->tw);
		fb_hist_record(&w->cycle, fb_clock_now(w->env->fast) - w->t0);
	}
	return go(w, FB_PC_BEGIN);
}

/* ---- the drivers' entries ---- */

void fb_cycle_woke(fb_worker *w)
{
	if (w->pausing) {
		w->pausing = false;
		fb_port_pause_end(&w->port);
	}
}

fb_step fb_cycle_step(fb_worker *w)
{
	switch ((fb_pc)w->pc) {
	case FB_PC_BEGIN:
		return op_begin(w);
	case FB_PC_PICK:
		return op_pick(w);
	case FB_PC_ACQUIRE:
		return op_acquire(w);
	case FB_PC_READ:
		return op_read(w);
	case FB_PC_FAULT:
		return op_fault(w);
	case FB_PC_RENEW:
		return op_renew(w);
	case FB_PC_PAUSE_READ:
		return op_pause_read(w);
	case FB_PC_TRAP:
		return op_trap(w);
	case FB_PC_WORK:
		return op_work(w);
	case FB_PC_CHECK:
		return op_check(w);
	case FB_PC_PAUSE_CHECK:
		return op_pause_check(w);
	case FB_PC_ARM:
		return op_arm(w);
	case FB_PC_WRITE:
		return op_write(w);
	case FB_PC_RELEASE:
		return op_release(w);
	case FB_PC_COMMIT:
		return op_commit(w);
	case FB_PC_END:
	case FB_PCS:
		break;
	}
	return op_end(w);
}

/*
 * Threads: the run's end, seen by the workers themselves. With thousands of
 * runnable workers on a few cores, the main thread that the timer or a stop
 * signal wakes waits for a core behind them: seconds, at 4,096 threads (a
 * 3 s run was stopped 4 s late, and began counting 66 s late). A worker
 * that runs looks at the fast clock every 16 cycles, or contended
 * attempts, and stops the run at its end; one of them at a time, at most
 * every LOOK_NS, looks for a pending stop signal (left pending for the
 * main thread to take: the workers keep the signals blocked). While no
 * worker runs the main thread has the cores, and stops the run itself.
 */
#define LOOK_EVERY 16
#define LOOK_NS    (2 * 1000 * 1000)

static void look_out(fb_worker *w)
{
	if (w->looks--)
		return;
	w->looks = LOOK_EVERY - 1;
	fb_env *e = w->env;
	uint64_t now = fb_clock_now(e->fast);
	/* relaxed: a flag for the cycle's next op_begin, which starts counting */
	if (now >= e->count_at && !atomic_load_explicit(&e->counting, memory_order_relaxed))
		atomic_store_explicit(&e->counting, 1, memory_order_relaxed);
	/* relaxed: set before the gate opened */
	if (now >= atomic_load_explicit(&e->end_at, memory_order_relaxed)) {
		fb_env_stop(e);
		return;
	}
	/* relaxed: a rate limit; the signal itself is the kernel's */
	uint64_t at = atomic_load_explicit(&e->look_at, memory_order_relaxed);
	if (now < at ||
	    !atomic_compare_exchange_strong_explicit(&e->look_at, &at, now + LOOK_NS,
	                                             memory_order_relaxed, memory_order_relaxed))
		return;
	if (fb_stop_pending())
		fb_env_stop(e);
}

/*
 * Contention, on threads: spin a little, then give the core away, then
 * sleep. On an oversubscribed machine the holder is often not running at
 * all, and a holder that is paused keeps its lease until it expires:
 * spinning on it would only starve the holders that can run (seen here: at
 * 200 pauses a second, 99% of the CPU in this loop). The sleep never
 * outlasts the lease seen held, and grows from 50 us to 1.6 ms.
 */
static void backoff(fb_worker *w)
{
	unsigned fails = w->fails;
	look_out(w);
	if (fails < 4) {
		for (int i = 0; i < 32; i++)
			fb_cpu_relax();
	} else if (fails < 16) {
		sched_yield();
	} else {
		uint64_t now = fb_clock_now(w->env->clock), expires_at = w->l.expires_at;
		unsigned k = fails - 16 < 5 ? fails - 16 : 5;
		uint64_t d = UINT64_C(50000) << k;
		if (expires_at > now && expires_at - now < d)
			d = expires_at - now;
		fb_sleep_unless(&w->env->stop, d ? d : 1000);
	}
}

/* One operation's outcome on a thread: a sleep is slept here. False: the
 * worker is done (it died, or the run is over). */
static inline bool thread_went(fb_worker *w, fb_step s)
{
	if (__builtin_expect(s.next == FB_GO, 1))
		return true;
	if (s.next == FB_SLEEP) {
		/* every sleep ends with the run: a pause of hours, a TTL of hours */
		if (!fb_sleep_unless(&w->env->stop, s.ns) && w->pausing)
			fb_counter_add(&w->port.cut_short, 1);
		fb_cycle_woke(w);
		return true;
	}
	return false;
}

/* The cycle in a straight line: each operation where the cycle has it,
 * those that may not apply (a read under --op debit, a renewal) skipped by
 * the pc they left. */
void fb_cycle_thread(fb_worker *w)
{
	for (;;) {
		look_out(w);
		if (w->log) { /* thousands of threads: wait while a walk waits */
			fb_feed_gate(w->log, &w->stalls);
			/* a wait of its ended at the run's end: said now, if the
			 * end was only due, so that no worker begins a cycle
			 * whose records could lie beyond the window */
			if (fb_feed_spilling(w->log))
				fb_env_stop(w->env);
		}
		if (!thread_went(w, op_begin(w)) || !thread_went(w, op_pick(w)))
			break;
		fb_step s;
		while ((s = op_acquire(w)).next == FB_YIELD ||
		       (s.next == FB_GO && w->pc == FB_PC_ACQUIRE))
			if (s.next == FB_YIELD)
				backoff(w);
		if (!thread_went(w, s))
			break;
		while (w->pc == FB_PC_READ)
			if (!thread_went(w, op_read(w)))
				goto out;
		if (!thread_went(w, op_fault(w)))
			break;
		if (w->pc == FB_PC_RENEW && !thread_went(w, op_renew(w)))
			break;
		if (!thread_went(w, op_pause_read(w)) || !thread_went(w, op_trap(w)) ||
		    !thread_went(w, op_work(w)) || !thread_went(w, op_check(w)) ||
		    !thread_went(w, op_pause_check(w)) || !thread_went(w, op_arm(w)))
			break;
		while (w->pc == FB_PC_WRITE)
			thread_went(w, op_write(w));
		if (w->pc == FB_PC_RELEASE)
			thread_went(w, op_release(w));
		while (w->pc == FB_PC_COMMIT)
			thread_went(w, op_commit(w));
		if (!thread_went(w, op_end(w)))
			break;
	}
out:
	fb_counter_add(&w->cas_retries, w->ls.cas_retries);
	fb_counter_add(&w->wasted_fences, w->ls.wasted_fences);
	fb_counter_add(&w->checker_stalls, w->stalls);
}

/* ---- delayed writes landing ---- */

bool fb_cycle_deliver(fb_env *e, const fb_delayed_write *dw, fb_check_rec *out)
{
	fb_discipline d = (fb_discipline)dw->mode;
	fb_store_result res = {0};
	if (atomic_load_explicit(&e->failed, memory_order_relaxed)) {
		/* the engine is gone: never delivered, its outcome not the store's */
		fb_counter_add(&e->net[d].indeterminate, 1);
		return false;
	}
	/* its lease's own record of the fence here (its fenced read), or none */
	uint8_t reg = dw->recorded ? (uint8_t)(1u << d) : 0;
	fb_env_sending(e, d, dw->key, dw->fence, &reg);
	calls_begin(e, d, dw->key);
	fb_io io = dw->debit ? e->sops->debit(e->net_sconn, d, dw->key, dw->value, dw->fence, &res)
	                     : e->sops->write(e->net_sconn, d, dw->key, dw->value, dw->fence, NULL,
	                                      &res);
	calls_end(e, d, dw->key, io);
	if (io == FB_IO_ERROR) {
		fb_counter_add(&e->net[d].indeterminate, 1);
		fb_env_failed(e, "store", e->sops->error(e->net_sconn));
		return false;
	}
	bool ok = io == FB_IO_OK;
	fb_counter_add(&e->net_delivered, 1);
	/* One delay fault holds a cycle's writes, one per store: the first
	 * speaks for the fault in the vacuity counts. */
	fb_lease now;
	if (dw->first && e->lops->peek(e->net_lconn, dw->key, &now) == FB_IO_OK && now.fence &&
	    now.fence != dw->fence) /* 0: not known (yet) */
		fb_counter_add(&e->net_takeovers, 1);
	if (dw->first && (!ok || res.stale))
		fb_counter_add(&e->net_stale, 1);
	if (!ok) {
		/* judged as any refusal: the writer's lease is long gone, but a
		 * correct store still accepts it if nothing newer reached it */
		fb_outcome_t o = judge_refusal(e, d, dw->key, dw->fence, &res, false);
		count_refusal(e, &e->net[d], d, dw->key, dw->worker, dw->fence, false, &res, o,
		              e->net_sconn);
		return false;
	}
	fb_counter_add(&e->net[d].accepted, 1);
	if (d == FB_FENCED)
		admitted(e, dw->key, dw->fence);
	uint64_t landed = fb_clock_now(e->clock);
	int64_t read = dw->debit ? res.before : dw->read;
	if (res.stale) {
		fb_counter_add(&e->net[d].store_stale, 1);
		FB_EMIT(e, NULL, FB_EV_LANDED, .worker = dw->worker, .key = dw->key,
		        .fence = dw->fence, .d = (uint8_t)d, .outcome = FB_OUT_STALE,
		        .arg = dw->issued, .now = landed, .read = read, .res = &res,
		        .conn = e->net_lconn);
	}
	if (!e->checking)
		return false;
	fb_feed_landed(out, dw, read, &res, landed); /* the feed's record (listen_feed.h) */
	return true;
}
