/*
 * The deterministic simulator: a scheduler over the stress run's own cycle.
 *
 * Each step advances the virtual clock by 0.5-2 us (or, when every worker
 * sleeps, to the next event), lands the delayed writes that are due, fires
 * the faults that are due (decided by the injector's own function, from the
 * same seeded stream), wakes the workers whose sleep is over, and runs ONE
 * operation of one runnable worker picked at random. A worker the cycle
 * puts to sleep (a pause, a heartbeat's stall, its work, a backoff) leaves
 * the run list until its time; a planted two-step acquire paused between
 * its steps runs the other workers from inside that call until it is due.
 * Nothing depends on the machine: no real clock, no threads, no addresses,
 * every choice from fb_prng streams of the seed.
 *
 * Every step appends a line to the history (step, virtual time in us,
 * worker, operation, key, fence, what it did); the FNV-1a hash of those
 * bytes identifies the run.
 */
#include "sim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cycle.h"
#include "listen_chain.h"
#include "outfile.h"
#include "stop.h"

/* Virtual time starts at 1 s, so a worker clock jumped back stays above 0
 * for a while (a skewed clock reads below 0 as 0). */
#define SIM_T0       UINT64_C(1000000000)
#define STEP_MIN_NS  500
#define STEP_SPAN_NS 1501 /* a step takes 0.5 to 2 us */
#define STREAM_SCHED (UINT64_C(1) << 32)
#define HIST_LINE    320
#define FNV_OFFSET   UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME    UINT64_C(0x100000001b3)
#define NONE         UINT32_MAX
/* a stop signal is looked for once in 1024 steps: a syscall's cost spread
 * thin, and a few milliseconds at most between the signal and the stop */
#define STOP_POLL 1023u

/* Where a simulated worker is. */
enum { RUNNABLE, SLEEPING, SUSPENDED, DUE, STOPPED, DEAD };

/* A key of the sleepers' heap: the wake time, then the worker (a total
 * order, so ties break alike on every machine). */
typedef struct sleeper {
	uint64_t wake;
	uint32_t idx;
} sleeper;

/* A write in flight, due at `due`; seq keeps equal dues in send order. */
typedef struct flight {
	uint64_t due, seq;
	fb_delayed_write dw;
} flight;

typedef struct sim {
	fb_env env;
	const fb_config *cfg;
	fb_results *res;
	fb_clock_manual vclock;
	uint64_t now, step;
	bool stopping;
	fb_prng sched;
	uint32_t n, live;
	uint8_t *state;
	bool *signalled; /* asleep in a pause a "signal" began: ended at the wake */
	uint32_t *run, *runpos, nrun;
	sleeper *heap;
	uint32_t *heappos, nheap;
	flight *fl;
	uint32_t nfl, capfl;
	uint64_t flseq;
	fb_check_rec *late; /* landed writes whose commit waits for room */
	uint32_t nlate, caplate;
	fb_fault_gen gen;
	fb_fault_port **ports;
	uint64_t next_fault, next_plan;
	fb_tick_fn tick;
	void *tick_ctx;
	uint64_t next_tick; /* the next virtual second */
	fb_worker *current; /* the worker whose operation runs now */
	uint32_t depth;     /* two-step acquires suspended, one inside the other */
	uint64_t hash, lines;
	FILE *hist;
	fb_outfile_stream hist_out;
	char line[HIST_LINE];
	size_t len;
	fb_err err;
} sim;

/* ---- the history ---- */

static void h_raw(sim *s, const char *p, size_t n)
{
	if (s->len + n > HIST_LINE - 2) /* never for the lines written here */
		n = s->len < HIST_LINE - 2 ? HIST_LINE - 2 - s->len : 0;
	memcpy(s->line + s->len, p, n);
	s->len += n;
}

static void h_str(sim *s, const char *p)
{
	h_raw(s, p, strlen(p));
}

static void h_u64(sim *s, uint64_t v)
{
	char b[24];
	int i = sizeof b;
	do {
		b[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	h_raw(s, b + i, sizeof b - (size_t)i);
}

static void h_i64(sim *s, int64_t v)
{
	if (v < 0) {
		h_raw(s, "-", 1);
		h_u64(s, (uint64_t)0 - (uint64_t)v);
	} else {
		h_u64(s, (uint64_t)v);
	}
}

/* A duration or a time as microseconds with three decimals. */
static void h_us(sim *s, uint64_t ns)
{
	char b[4] = {'.', (char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10),
	             (char)('0' + ns % 10)};
	h_u64(s, ns / 1000);
	h_raw(s, b, 4);
}

/* "STEP TIME wID " or "STEP TIME - " for events of no worker. */
static void h_begin(sim *s, const fb_worker *w)
{
	s->len = 0;
	h_u64(s, s->step);
	h_raw(s, " ", 1);
	h_us(s, s->now - SIM_T0);
	if (w) {
		h_raw(s, " w", 2);
		h_u64(s, w->id);
		h_raw(s, " ", 1);
	} else {
		h_raw(s, " - ", 3);
	}
}

static void h_kf(sim *s, uint32_t key, uint64_t fence)
{
	h_raw(s, " k", 2);
	h_u64(s, key);
	h_raw(s, " f", 2);
	h_u64(s, fence);
}

/* Close the line: hash its bytes, and write them if a history file is open. */
static void h_end(sim *s)
{
	s->line[s->len++] = '\n';
	uint64_t h = s->hash;
	for (size_t i = 0; i < s->len; i++) {
		h ^= (unsigned char)s->line[i];
		h *= FNV_PRIME;
	}
	s->hash = h;
	s->lines++;
	if (s->hist)
		fwrite(s->line, 1, s->len, s->hist);
}

/* What one operation did, from the worker's state after it. */
static void h_step(sim *s, const fb_worker *w, uint8_t pc, uint8_t i, fb_step st)
{
	static const char *const out[] = {"", " accepted", " accepted-stale", " rejected",
	                                  " read-refused"};
	const fb_env *e = &s->env;
	h_begin(s, w);
	h_str(s, fb_pc_names[pc]);
	h_kf(s, w->key, w->l.fence);
	if ((pc == FB_PC_READ || pc == FB_PC_WRITE) && i < e->nactive) {
		fb_discipline d = e->active[(w->first + i) % e->nactive];
		h_raw(s, " ", 1);
		h_str(s, fb_discipline_name(d));
		const fb_narration *n = &w->heard.narr; /* as the step's events said */
		if (pc == FB_PC_READ) {
			h_str(s, n->served[d] ? " ok " : " refused ");
			h_i64(s, n->served[d] ? n->bal[d] : (int64_t)n->highest[d]);
		} else if (n->sent) {
			h_str(s, " in-flight");
		} else {
			h_str(s, out[n->outcome[d] < 5 ? n->outcome[d] : 0]);
			h_raw(s, " ", 1);
			h_i64(s, n->balance);
			h_raw(s, " v", 2);
			h_u64(s, n->version);
		}
	}
	static const char *const next[] = {"", " sleep ", " yield", " died", " stop"};
	h_str(s, next[st.next]);
	if (st.next == FB_SLEEP)
		h_us(s, st.ns);
	h_end(s);
}

/* ---- the runnable set and the sleepers ---- */

static void run_add(sim *s, uint32_t idx)
{
	s->runpos[idx] = s->nrun;
	s->run[s->nrun++] = idx;
	s->state[idx] = RUNNABLE;
}

static void run_remove(sim *s, uint32_t idx)
{
	uint32_t at = s->runpos[idx], last = s->run[--s->nrun];
	s->run[at] = last;
	s->runpos[last] = at;
	s->runpos[idx] = NONE;
}

static bool before(sleeper a, sleeper b)
{
	return a.wake < b.wake || (a.wake == b.wake && a.idx < b.idx);
}

static void heap_set(sim *s, uint32_t i, sleeper x)
{
	s->heap[i] = x;
	s->heappos[x.idx] = i;
}

static void sift(sim *s, uint32_t i)
{
	sleeper x = s->heap[i];
	while (i && before(x, s->heap[(i - 1) / 2])) { /* up */
		heap_set(s, i, s->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	for (;;) { /* down */
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		sleeper best = x;
		if (l < s->nheap && before(s->heap[l], best))
			m = l, best = s->heap[l];
		if (r < s->nheap && before(s->heap[r], best))
			m = r;
		if (m == i)
			break;
		heap_set(s, i, s->heap[m]);
		i = m;
	}
	heap_set(s, i, x);
}

/* Put worker idx to sleep until `until` (state: SLEEPING or SUSPENDED). */
static void sleep_until(sim *s, uint32_t idx, uint64_t until, uint8_t state)
{
	if (s->state[idx] == RUNNABLE)
		run_remove(s, idx);
	s->state[idx] = state;
	uint32_t i = s->nheap++;
	heap_set(s, i, (sleeper){until, idx});
	sift(s, i);
}

/* A sleeper's wake moved later by ns (a pause signalled while it slept). */
static void postpone(sim *s, uint32_t idx, uint64_t ns)
{
	uint32_t i = s->heappos[idx];
	s->heap[i].wake += ns;
	sift(s, i);
}

static uint32_t heap_pop(sim *s)
{
	uint32_t idx = s->heap[0].idx;
	s->heappos[idx] = NONE;
	if (--s->nheap) {
		heap_set(s, 0, s->heap[s->nheap]);
		sift(s, 0);
	}
	return idx;
}

/* Wake every sleeper whose time has come, earliest first: it runs again (a
 * suspended one is due: its acquire goes on). */
static void wake_due(sim *s)
{
	while (s->nheap && s->heap[0].wake <= s->now) {
		uint32_t idx = heap_pop(s);
		fb_worker *w = &s->env.workers[idx];
		if (s->state[idx] == SUSPENDED) {
			s->state[idx] = DUE;
			continue;
		}
		if (s->signalled[idx]) {
			s->signalled[idx] = false;
			fb_port_pause_end(&w->port);
		}
		fb_cycle_woke(w);
		run_add(s, idx);
	}
}

/* The run is over: every sleep ends now, as a stopped run's do on threads
 * (a pause cut short is counted so); a suspended two-step is due. */
static void wake_all(sim *s)
{
	for (uint32_t i = 0; i < s->nheap; i++)
		s->heap[i].wake = s->now;
	for (uint32_t i = 0; i < s->nheap; i++) {
		fb_worker *w = &s->env.workers[s->heap[i].idx];
		if (w->pausing || s->signalled[s->heap[i].idx])
			fb_counter_add(&w->port.cut_short, 1);
	}
	wake_due(s);
}

/* ---- delayed writes and their commits ---- */

static bool flight_before(const flight *a, const flight *b)
{
	return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

/* fb_send_fn: a write goes in flight, in a sorted array (few at a time). */
static fb_err send_delayed(void *ctx, const fb_delayed_write *dw)
{
	sim *s = ctx;
	if (s->nfl == s->capfl) {
		uint32_t cap = s->capfl ? 2 * s->capfl : 16;
		flight *nf = realloc(s->fl, (size_t)cap * sizeof *nf);
		if (!nf)
			return FB_ENOMEM;
		s->fl = nf;
		s->capfl = cap;
	}
	flight f = {dw->due, s->flseq++, *dw};
	uint32_t i = s->nfl++;
	while (i && flight_before(&f, &s->fl[i - 1])) {
		s->fl[i] = s->fl[i - 1];
		i--;
	}
	s->fl[i] = f;
	return FB_OK;
}

/* A landed write's commit, kept until its key's ring has room. */
static void commit_late(sim *s, const fb_check_rec *c)
{
	uint64_t stalls = 0;
	if (!s->nlate && fb_cycle_commit(&s->env, s->env.net_log, c, &stalls))
		return;
	if (s->nlate == s->caplate) {
		uint32_t cap = s->caplate ? 2 * s->caplate : 16;
		fb_check_rec *nl = realloc(s->late, (size_t)cap * sizeof *nl);
		if (!nl) {
			s->err = FB_ENOMEM;
			return;
		}
		s->late = nl;
		s->caplate = cap;
	}
	s->late[s->nlate++] = *c;
}

/* The landed writes' commits that waited for room, in order: one waits,
 * all after it do. */
static void drain_late(sim *s)
{
	uint32_t m = 0;
	for (uint32_t j = 0; j < s->nlate; j++) {
		uint64_t stalls = 0;
		if (m || !fb_cycle_commit(&s->env, s->env.net_log, &s->late[j], &stalls))
			s->late[m++] = s->late[j];
	}
	s->nlate = m;
}

/* Land every write that is due (all of them once `all`). While a landed
 * write waits for room in its log the next stay in flight, so the delay
 * line holds at most one accepted write unlogged, as fb_checker_in_flight
 * counts it (the checker's window depends on it). */
static void deliver_due(sim *s, bool all)
{
	drain_late(s);
	uint32_t k = 0;
	while (k < s->nfl && (all || (s->fl[k].due <= s->now && !s->nlate))) {
		const fb_delayed_write *dw = &s->fl[k].dw;
		h_begin(s, &s->env.workers[dw->worker - 1]);
		h_str(s, "deliver");
		h_kf(s, dw->key, dw->fence);
		h_raw(s, " ", 1);
		h_str(s, fb_discipline_name((fb_discipline)dw->mode));
		h_end(s);
		fb_check_rec c;
		if (fb_cycle_deliver(&s->env, dw, &c))
			commit_late(s, &c);
		k++;
	}
	if (k) {
		memmove(s->fl, s->fl + k, (s->nfl - k) * sizeof *s->fl);
		s->nfl -= k;
	}
}

/* ---- faults ---- */

static void fire_faults(sim *s)
{
	while (!s->stopping && s->next_plan <= s->now) {
		fb_fault_gen_plan_step(&s->gen);
		s->next_plan = fb_fault_gen_plan_due(&s->gen);
	}
	while (!s->stopping && s->next_fault <= s->now) {
		uint64_t gap = fb_fault_gen_gap(&s->gen);
		fb_fault_decision d;
		bool go = fb_fault_gen_next(&s->gen, &d);
		s->next_fault = gap == UINT64_MAX ? UINT64_MAX : s->next_fault + gap;
		h_begin(s, go && d.port ? &s->env.workers[d.port->worker - 1] : NULL);
		h_str(s, "fault ");
		h_str(s, fb_fault_names[d.fault]);
		if (!go) {
			h_str(s, d.fault == FB_FAULT_SKEW ? " lease-clock" : " none");
			h_end(s);
			continue;
		}
		h_raw(s, " ", 1);
		h_us(s, d.arg_ns);
		h_str(s, d.signal ? "us signal" : "us armed");
		h_end(s);
		if (!d.port)
			continue;
		if (!d.signal) {
			fb_fault_arm(&d);
			continue;
		}
		/* the signal: the pause begins now, wherever the worker is */
		uint32_t idx = d.port->worker - 1u;
		uint64_t ns = fb_port_pause_begin(d.port, false);
		if (s->state[idx] == SLEEPING) {
			postpone(s, idx, ns);
			s->signalled[idx] = true;
		} else if (s->state[idx] == RUNNABLE) {
			sleep_until(s, idx, s->now + ns, SLEEPING);
			s->signalled[idx] = true;
		} else { /* stopped: nothing to pause */
			fb_port_pause_end(d.port);
		}
	}
}

/* ---- the loop ---- */

/* When nobody can run: the earliest wake, landing or fault. */
static uint64_t next_event(const sim *s)
{
	uint64_t t = s->nfl ? s->fl[0].due : UINT64_MAX;
	if (s->nheap && s->heap[0].wake < t)
		t = s->heap[0].wake;
	if (!s->stopping) {
		t = s->next_fault < t ? s->next_fault : t;
		t = s->next_plan < t ? s->next_plan : t;
	}
	return t;
}

/* One operation of worker idx, and what its outcome asks of the driver. */
static void step_worker(sim *s, uint32_t idx)
{
	fb_worker *w = &s->env.workers[idx];
	uint8_t pc = w->pc, i = w->i;
	fb_worker *outer = s->current;
	s->current = w;
	fb_step st = fb_cycle_step(w);
	s->current = outer;
	h_step(s, w, pc, i, st);
	switch (st.next) {
	case FB_GO:
		break;
	case FB_SLEEP:
		sleep_until(s, idx, s->now + st.ns, SLEEPING);
		break;
	case FB_YIELD: { /* contended: retry after 1 to 64 us */
		unsigned lg = w->fails < 7 ? (w->fails ? w->fails - 1 : 0) : 6;
		sleep_until(s, idx,
		            s->now + 1000 * (1 + (uint64_t)fb_prng_below(&s->sched, 1u << lg)),
		            SLEEPING);
		break;
	}
	case FB_DIED:
	case FB_STOP:
		run_remove(s, idx);
		s->state[idx] = st.next == FB_DIED ? DEAD : STOPPED;
		s->live--;
		break;
	}
}

/*
 * Step until `until` is due (a suspended worker's pause is over), or, for
 * the outer loop (until NONE), until cfg->steps have run and every worker
 * has wound its cycle down.
 */
static void loop(sim *s, uint32_t until)
{
	while (!s->err) {
		if (until != NONE && s->state[until] == DUE)
			return;
		if (!s->stopping && !(s->step & STOP_POLL)) {
			int sig = fb_stop_take(); /* a stop signal: wind down as at the end */
			if (sig) {
				s->res->interrupted = true;
				s->res->signal = sig;
			}
		}
		if (!s->stopping && (s->step >= s->cfg->steps || s->res->interrupted)) {
			s->stopping = true; /* the workers finish their cycles */
			atomic_store_explicit(&s->env.stop, 1, memory_order_relaxed);
			wake_all(s); /* as on threads: every sleep ends with the run */
		}
		if (until == NONE && !s->live && !s->nheap)
			return;
		if (s->nrun) {
			s->now += STEP_MIN_NS + fb_prng_below(&s->sched, STEP_SPAN_NS);
		} else {
			uint64_t t = next_event(s);
			if (t == UINT64_MAX) /* a live worker is always somewhere */
				return;
			s->now = t > s->now ? t : s->now;
		}
		fb_clock_manual_set(&s->vclock, s->now);
		s->step++;
		if (s->tick && s->now >= s->next_tick) {
			fb_sample sm;
			fb_env_sample(&s->env, SIM_T0, &sm);
			s->tick(s->tick_ctx, &sm);
			s->next_tick += 1000000000u;
		}
		deliver_due(s, false);
		fire_faults(s);
		wake_due(s);
		if (!s->nrun) {
			h_begin(s, NULL);
			h_str(s, "idle");
			h_end(s);
			s->res->sim.idle_steps++;
			continue;
		}
		step_worker(s, s->run[fb_prng_below(&s->sched, s->nrun)]);
	}
}

/* The two-step's fault point, between taking the slot and minting: a pause
 * armed on the worker is taken here, the others running meanwhile. */
static void between(void *ctx)
{
	sim *s = ctx;
	fb_worker *w = s->current;
	uint32_t a = w ? fb_port_armed(&w->port) : 0;
	if (!a || FB_ARM_FAULT(a) != FB_FAULT_PAUSE || s->depth >= s->n)
		return;
	uint32_t idx = w->id - 1u;
	uint64_t ns = fb_port_pause_begin(&w->port, true);
	h_begin(s, w);
	h_str(s, "suspended ");
	h_us(s, ns);
	h_str(s, "us between its steps");
	h_end(s);
	sleep_until(s, idx, s->now + ns, SUSPENDED);
	s->depth++;
	loop(s, idx);
	s->depth--;
	fb_port_pause_end(&w->port);
	s->current = w;
	run_add(s, idx);
}

/* ---- setup and the whole run ---- */

static fb_err setup(sim *s, const fb_config *cfg, fb_results *res)
{
	s->cfg = cfg;
	s->res = res;
	s->n = s->live = cfg->threads;
	s->now = SIM_T0;
	s->hash = FNV_OFFSET;
	fb_clock_manual_init(&s->vclock, SIM_T0);
	fb_prng_init(&s->sched, cfg->seed, STREAM_SCHED);
	fb_env_driver drv = {.fast = &s->vclock.base,
	                     .wall = &s->vclock.base,
	                     .blocking = false,
	                     .send = send_delayed,
	                     .send_ctx = s,
	                     .between = between,
	                     .between_ctx = s};
	fb_err e = fb_env_open(&s->env, cfg, &drv, res);
	if (e)
		return e;
	s->env.narrating = true; /* the history line hears the cycle's events */
	/* the lease chain, beside the witness, where the table names the words
	 * it replaced: it draws nothing, moves no clock, writes no line */
	if (s->env.witnessing && !s->env.lops->remote &&
	    fb_chain_create(cfg->keys, fb_lease_start_fence(cfg->fence, cfg->first_fence), 0,
	                    &s->env.chain))
		return FB_ENOMEM;
	s->state = calloc(s->n, sizeof *s->state);
	s->signalled = calloc(s->n, sizeof *s->signalled);
	s->run = calloc(s->n, sizeof *s->run);
	s->runpos = calloc(s->n, sizeof *s->runpos);
	s->heap = calloc(s->n, sizeof *s->heap);
	s->heappos = calloc(s->n, sizeof *s->heappos);
	s->ports = calloc(s->n, sizeof *s->ports);
	if (!s->state || !s->signalled || !s->run || !s->runpos || !s->heap || !s->heappos ||
	    !s->ports)
		return FB_ENOMEM;
	for (uint32_t i = 0; i < s->n; i++) {
		s->ports[i] = &s->env.workers[i].port;
		s->heappos[i] = NONE;
		run_add(s, i);
	}
	fb_injector_config ic = fb_env_injector_config(&s->env, &s->vclock.base);
	fb_fault_gen_init(&s->gen, &ic, s->ports, s->n);
	uint64_t gap = fb_fault_gen_gap(&s->gen);
	s->next_fault = gap == UINT64_MAX ? UINT64_MAX : SIM_T0 + gap;
	s->next_plan = fb_fault_gen_plan_due(&s->gen);
	s->env.t0 = s->env.first.t0 = SIM_T0;
	atomic_store_explicit(&s->env.counting, 1, memory_order_relaxed);
	return FB_OK;
}

/* The lease chain's verdict: every lease still held goes in as held (the
 * run is over), then the links whose other end never came are judged. */
static void chain_results(sim *s, fb_results *res)
{
	fb_env *e = &s->env;
	if (!e->chain)
		return;
	for (uint32_t i = 0; i < s->n; i++)
		fb_chain_flush(e, &e->workers[i].heard);
	res->chain_judged = fb_chain_finish(e->chain, !e->chain_lost);
	res->chain = *fb_chain_counts_of(e->chain);
}

static void teardown(sim *s)
{
	fb_chain_destroy(s->env.chain);
	if (s->env.cfg)
		fb_env_close(&s->env);
	free(s->state);
	free(s->signalled);
	free(s->run);
	free(s->runpos);
	free(s->heap);
	free(s->heappos);
	free(s->ports);
	free(s->fl);
	free(s->late);
}

fb_err fb_sim_run(const fb_config *user, uint64_t seed, fb_tick_fn tick, void *ctx, fb_results *res)
{
	fb_config eff = *user;
	eff.seed = seed;
	memset(res, 0, sizeof *res);
	sim *s = calloc(1, sizeof *s);
	if (!s)
		return FB_ENOMEM;
	s->tick = tick;
	s->tick_ctx = ctx;
	s->next_tick = SIM_T0 + 1000000000u;
	fb_err err = setup(s, &eff, res);
	if (!err && eff.history_path) {
		fb_outfile o;
		char why[300] = "";
		if (fb_outfile_check(eff.history_path, &o, why, sizeof why) ||
		    fb_outfile_begin(&o, &s->hist_out)) {
			fprintf(stderr, "fencebench: --history: cannot write '%s': %s\n",
			        eff.history_path, why[0] ? why : strerror(errno));
			err = FB_ESYS;
		} else {
			s->hist = s->hist_out.f;
		}
	}
	if (err == FB_ENOMEM)
		fprintf(stderr, "fencebench: deterministic: cannot set up %u workers and %u keys\n",
		        eff.threads, eff.keys);
	if (!err) {
		loop(s, NONE);
		/* writes still in flight land after the last step, and the commits
		 * that waited for room go in (every writer has committed now) */
		for (uint32_t left = UINT32_MAX; (s->nfl || s->nlate) && s->nlate != left;) {
			left = s->nlate;
			deliver_due(s, true);
		}
		err = s->err;
	}
	if (!err) {
		res->sim.deterministic = true;
		res->sim.seed = seed;
		res->sim.steps = s->step;
		res->sim.virtual_ns = s->now - SIM_T0;
		res->sim.hash = s->hash;
		res->sim.lines = s->lines;
		res->elapsed_s = (double)(s->now - SIM_T0) / 1e9;
		fb_results_injected(res, &s->gen.st);
		fb_env_results(&s->env, res);
		chain_results(s, res);
		fb_env_write_plan(&s->env, res);
		res->cfg = user; /* the caller's, which outlives this */
		if (res->exhausted) {
			fprintf(stderr,
			        "fencebench: deterministic seed %llu: the fence space (2^47) is "
			        "exhausted at step %llu\n",
			        (unsigned long long)seed, (unsigned long long)s->step);
			err = FB_EFENCE;
		}
	}
	if (s->hist) {
		s->hist = NULL;
		if (err) {
			fb_outfile_abandon(&s->hist_out);
		} else if (fb_outfile_commit(&s->hist_out)) {
			fprintf(stderr,
			        "fencebench: --history: writing '%s' failed, errno=%d (%s)\n",
			        eff.history_path, errno, strerror(errno));
			err = FB_ESYS;
		}
	}
	teardown(s);
	free(s);
	if (err && err != FB_EFENCE)
		fb_results_free(res);
	return err;
}
