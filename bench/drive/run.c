/*
 * The threaded driver: worker threads run the cycle (cycle.c) in a straight
 * line, an injector thread delivers the faults by signal or armed port, a
 * delay line's thread lands delayed writes, and the main thread samples the
 * counters once a second until the run's time is up or a signal arrives.
 */
#define _GNU_SOURCE
#include "run.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "cycle.h"
#include "delay.h"
#include "placement.h"
#include "stop.h"

typedef struct threads {
	fb_env env;
	fb_delay_line *delay;
	/* the start gate: workers wait here until every thread exists */
	_Atomic int gate; /* 0 closed, 1 go, -1 abort */
	uint32_t started;
	uint64_t began; /* fb_run's start, on the fast clock: the start-up's */
	/* workers out of their cycles, and the last one's word: the main
	 * thread waits once for them all, not once for each (every wait for
	 * one is a wait for a core behind thousands) */
	_Atomic uint32_t out;
	_Atomic int all_out;
} threads;

/* A delayed write goes in flight on the delay line. */
static fb_err send_delayed(void *ctx, const fb_delayed_write *dw)
{
	return fb_delay_send(((threads *)ctx)->delay, dw);
}

/* ... and lands, on the delay line's thread: committed there, waiting if
 * the ring is full (the thread holds no lease). */
static void deliver(void *ctx, const fb_delayed_write *dw)
{
	fb_env *e = &((threads *)ctx)->env;
	fb_check_rec c;
	uint64_t stalls = 0;
	if (fb_cycle_deliver(e, dw, &c))
		fb_cycle_commit(e, e->net_log, &c, &stalls);
	fb_counter_add(&e->net_stalls, stalls);
}

/* A futex, not a condition variable: a broadcast to 16k threads that each
 * take the mutex again on their way out left hundreds still queued there
 * seconds later, when the run was already over. */
static bool wait_gate(threads *t)
{
	/* the sleep's acquire load: pairs with open_gate's release */
	while (fb_sleep_unless(&t->gate, UINT64_C(1000000000)))
		;
	return atomic_load_explicit(&t->gate, memory_order_relaxed) > 0;
}

static void open_gate(threads *t, int value)
{
	/* release: the run's setup before the workers read it */
	atomic_store_explicit(&t->gate, value, memory_order_release);
	fb_sleep_wake(&t->gate);
}

static void *worker_main(void *arg)
{
	fb_worker *w = arg;
	fb_pause_bind(&w->port);
	threads *t = (threads *)w->env; /* env is a threads' first member */
	if (wait_gate(t))
		fb_cycle_thread(w);
	/* relaxed: a count; the last one's wake is a futex, and the join
	 * orders the rest. t->started was set before the gate opened */
	if (atomic_fetch_add_explicit(&t->out, 1, memory_order_relaxed) + 1 == t->started) {
		atomic_store_explicit(&t->all_out, 1, memory_order_release);
		fb_sleep_wake(&t->all_out);
	}
	return NULL;
}

/* Wait until `deadline` on the fast clock or a stop signal (SIGINT, SIGTERM,
 * SIGHUP: stop.h); returns the signal or 0. */
static int wait_until(threads *t, uint64_t deadline)
{
	fb_env *e = &t->env;
	for (;;) {
		uint64_t now = fb_clock_now(e->fast);
		/* a worker that saw a signal pending stopped the run: take it */
		if (atomic_load_explicit(&e->stop, memory_order_relaxed))
			return fb_stop_take();
		if (now >= deadline)
			return 0;
		uint64_t d = deadline - now;
		if (d > 100000000)
			d = 100000000; /* wake to notice a worker-initiated stop */
		int sig = fb_stop_wait(d);
		if (sig > 0)
			return sig;
	}
}

/*
 * Linux 6.17 gives a process a futex hash of its own, sized by its CPUs, not
 * its threads: 16 buckets on 2 cores. Thousands of workers parked on one
 * word (the feed's gate) fill one bucket, and every wake of another word
 * that hashes there (a producer's log, woken with room) walks them all,
 * under the bucket's lock: at 16,384 threads on 2 cores, 14% of the run in
 * futex_wake, and the checked run 20% slower. A bucket four waiters a
 * thread (64 bytes each: 4 MiB at 16,384) keeps the walks short. An older
 * kernel (EINVAL: one global hash, sized by CPUs at boot) keeps its own.
 */
#ifndef PR_FUTEX_HASH
#define PR_FUTEX_HASH 78
#endif
#ifndef PR_FUTEX_HASH_SET_SLOTS
#define PR_FUTEX_HASH_SET_SLOTS 1
#endif
#define FUTEX_HASH_FROM 256 /* threads: below, the kernel's own is enough */

static void size_futex_hash(uint32_t n)
{
	if (n < FUTEX_HASH_FROM)
		return;
	unsigned long slots = 1;
	while (slots < 4ul * n)
		slots <<= 1;
	(void)prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_SET_SLOTS, slots, 0ul, 0ul); /* a tuning only */
}

static fb_err start_workers(threads *t)
{
	fb_env *e = &t->env;
	const fb_config *cfg = e->cfg;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	/* Workers need little stack; 16k threads of 8 MiB would not fit. */
	pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN > 262144 ? PTHREAD_STACK_MIN : 262144);
	size_futex_hash(cfg->threads);
	fb_err err = FB_OK;
	const fb_placement place = {cfg->cpus, cfg->n_cpus, cfg->pin};
	for (uint32_t i = 0; i < cfg->threads; i++) {
		fb_worker *w = &e->workers[i];
		fb_placement_apply(&place, i, &attr);
		pthread_t tid;
		int r = pthread_create(&tid, &attr, worker_main, w);
		if (r == EINVAL && (cfg->pin || cfg->n_cpus)) {
			fprintf(stderr,
			        "fencebench: --cpus: worker %u cannot run on the CPUs given: "
			        "pthread_create failed, errno=%d (%s)\n",
			        i + 1, r, strerror(r));
			err = FB_EINVAL;
			break;
		}
		if (r) {
			fprintf(stderr,
			        "fencebench: cannot start worker thread %u of %u: pthread_create "
			        "failed, errno=%d (%s)\n",
			        i + 1, cfg->threads, r, strerror(r));
			err = FB_ESYS;
			break;
		}
		w->port.tid = tid;
		t->started++;
	}
	pthread_attr_destroy(&attr);
	e->nworkers = t->started;
	return err;
}

static fb_err start_injector(threads *t, fb_fault_port **ports, fb_injector **inj)
{
	fb_env *e = &t->env;
	fb_injector_config ic = fb_env_injector_config(e, fb_clock_monotonic());
	double total = 0;
	for (int f = 0; f < FB_FAULTS; f++)
		total += ic.rate[f];
	if ((total <= 0 && !ic.plan) || !t->started)
		return FB_OK;
	for (uint32_t i = 0; i < t->started; i++)
		ports[i] = &e->workers[i].port;
	if (fb_injector_start(&ic, ports, t->started, inj) != FB_OK) {
		fprintf(stderr,
		        "fencebench: cannot start the injector thread: pthread_create failed, "
		        "errno=%d (%s)\n",
		        errno, strerror(errno));
		return FB_ESYS;
	}
	return FB_OK;
}

/*
 * The main thread's part of a run: the warm-up, then a sample a second
 * until the end, a signal, or a stop from inside. Returns when counting
 * began. The run's times are fixed before the gate opens: at thousands of
 * threads the main thread waits for a core for seconds once it has woken
 * the workers, and the workers keep the times themselves (look_out in
 * cycle.c). A count begun late would have made the run look that much
 * shorter than it was.
 */
static uint64_t supervise(threads *t, fb_tick_fn tick, void *ctx, fb_results *res)
{
	fb_env *e = &t->env;
	const fb_config *cfg = e->cfg;
	uint64_t w0 = fb_clock_now(e->fast), t0 = w0 + cfg->warmup_ns;
	res->startup_s = (double)(w0 - t->began) / 1e9;
	e->count_at = t0;
	/* relaxed: the gate's release publishes it */
	atomic_store_explicit(&e->end_at,
	                      t0 + cfg->duration_ns < t0 ? UINT64_MAX : t0 + cfg->duration_ns,
	                      memory_order_relaxed);
	e->t0 = e->first.t0 = fb_clock_now(e->clock);
	open_gate(t, 1);
	fb_env_started(e); /* issue 24: after t0, which a nemesis failure reads */
	if (cfg->warmup_ns) {
		int sig = wait_until(t, t0);
		res->warmed_s = (double)(fb_clock_now(e->fast) - w0) / 1e9;
		if (sig) {
			/* no window was measured: counting never starts, so
			 * nothing of the warm-up passes for a measurement */
			res->interrupted = res->unmeasured = true;
			res->signal = sig;
			return fb_clock_now(e->fast);
		}
	}
	atomic_store_explicit(&e->counting, 1, memory_order_relaxed);
	uint64_t end =
	        res->interrupted ? t0 : atomic_load_explicit(&e->end_at, memory_order_relaxed);
	for (uint64_t next = t0 + 1000000000u; !res->interrupted; next += 1000000000u) {
		uint64_t until = next < end ? next : end;
		int sig = wait_until(t, until);
		if (sig) {
			res->interrupted = true;
			res->signal = sig;
			break;
		}
		/* stopped from inside before its time (a worker that saw the
		 * end stops it as the end's own sample is due: taken) */
		bool stopped = atomic_load_explicit(&e->stop, memory_order_relaxed);
		if (stopped && fb_clock_now(e->fast) < end)
			break;
		fb_sample s;
		fb_env_sample(e, t0, &s);
		if (tick)
			tick(ctx, &s);
		if (until >= end || stopped)
			break;
	}
	return t0;
}

/* Stop everything, in order: the injector, the workers, then the writes
 * still in flight land, late, before anything is counted. */
static void wind_down(threads *t, fb_injector *inj, fb_results *res, uint64_t t0)
{
	fb_env *e = &t->env;
	/* the stop: the run's end, or earlier what stopped it (a signal, a
	 * failure); the workers may have stopped themselves at the end */
	uint64_t stop_at = fb_clock_now(e->fast),
	         end = atomic_load_explicit(&e->end_at, memory_order_relaxed);
	if (end < stop_at)
		stop_at = end;
	fb_env_stop(e);
	fb_injector_stats ist = {0};
	fb_injector_stop(inj, &ist);
	while (t->started && fb_sleep_unless(&t->all_out, UINT64_C(1000000000)))
		;
	/* the run ends as its last worker leaves its cycles; the joins that
	 * follow free thousands of stacks (a second at 16k threads) */
	res->elapsed_s = res->unmeasured ? 0 : (double)(fb_clock_now(e->fast) - t0) / 1e9;
	fb_env_heal(e); /* issue 24: the user's cluster whole before the last reads */
	for (uint32_t i = 0; i < t->started; i++)
		pthread_join(e->workers[i].port.tid, NULL);
	res->stopping_s = (double)(fb_clock_now(e->fast) - stop_at) / 1e9;
	fb_delay_stop(t->delay);
	t->delay = NULL;
	fb_results_injected(res, &ist);
	/* taken: what the user's command started, not what was asked of it */
	res->fault[FB_FAULT_NEMESIS].taken =
	        e->nemesis_started < ist.nemesis_taken ? e->nemesis_started : ist.nemesis_taken;
}

/* The run's end: the failure or the exhausted fence space, said once. */
static fb_err outcome(const fb_results *res)
{
	if (res->failure[0]) {
		fprintf(stderr, "fencebench: %s\n", res->failure);
		return FB_EENGINE;
	}
	if (res->exhausted) {
		fprintf(stderr,
		        "fencebench: the fence space (2^47) is exhausted; the run stopped\n");
		return FB_EFENCE;
	}
	return FB_OK;
}

fb_err fb_run(const fb_config *cfg, fb_tick_fn tick, void *ctx, fb_results *res)
{
	static threads zero;
	threads *t = malloc(sizeof *t);
	if (!t)
		return FB_ENOMEM;
	*t = zero;
	t->began = fb_clock_now(fb_clock_fast());
	memset(res, 0, sizeof *res);
	res->cfg = cfg;
	atomic_init(&t->gate, 0);
	atomic_init(&t->out, 0);
	atomic_init(&t->all_out, 0);
	fb_env_driver drv = {.fast = fb_clock_fast(),
	                     .wall = fb_clock_realtime(),
	                     .blocking = true,
	                     .send = send_delayed,
	                     .send_ctx = t,
	                     .between = fb_pause_armed_here};
	fb_err err = fb_env_open(&t->env, cfg, &drv, res);
	fb_fault_port **ports = NULL;
	fb_injector *inj = NULL;
	if (!err && fb_pause_install() != FB_OK) {
		fprintf(stderr, "fencebench: sigaction(SIGUSR1) failed, errno=%d (%s)\n", errno,
		        strerror(errno));
		err = FB_ESYS;
	}
	if (!err && !(ports = calloc(cfg->threads, sizeof *ports)))
		err = FB_ENOMEM;
	if (!err && fb_delay_start(deliver, t, &t->delay) != FB_OK) {
		fprintf(stderr, "fencebench: cannot start the delay line's thread: errno=%d (%s)\n",
		        errno, strerror(errno));
		err = FB_ESYS;
	}
	if (!err)
		err = start_workers(t);
	if (!err)
		err = start_injector(t, ports, &inj);
	if (err) {
		open_gate(t, -1);
		for (uint32_t i = 0; i < t->started; i++)
			pthread_join(t->env.workers[i].port.tid, NULL);
		fb_delay_stop(t->delay);
	} else {
		wind_down(t, inj, res, supervise(t, tick, ctx, res));
		fb_env_results(&t->env, res);
		fb_env_write_plan(&t->env, res);
		err = outcome(res);
	}
	free(ports);
	if (t->env.cfg)
		fb_env_close(&t->env);
	free(t);
	if (err && err != FB_EENGINE && err != FB_EFENCE)
		fb_results_free(res);
	return err;
}
