#define _GNU_SOURCE
#include "run.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prng.h"

typedef struct fb_run_state {
	const fb_config *cfg;
	const fb_clock *clock;
	fb_lease_table *leases;
	fb_store *store[FB_DISCIPLINES];
	fb_checker *checker[FB_DISCIPLINES];
	fb_pause_trap *traps;
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
} fb_run_state;

/* An accepted write on its way to the checker. */
typedef struct pending_commit {
	fb_discipline d;
	uint16_t version;
	int64_t read, replaced, written;
} pending_commit;

/* Contention: spin a little, then give the core away. On an oversubscribed
 * machine the holder is often not running at all. */
static void backoff(unsigned fails)
{
	if (fails % 8 == 0) {
		sched_yield();
		return;
	}
	for (int i = 0; i < 32; i++)
		fb_cpu_relax();
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

/*
 * The cycle of DESIGN section 2: acquire (retrying on contention), read the
 * balance under the lease from every store, write balance - amount with the
 * fence to every store that served the read, release. The debit is a
 * read-modify-write of what was read, so lost updates are real.
 */
static void *worker_main(void *arg)
{
	fb_worker *w = arg;
	fb_run_state *r = w->run;
	const fb_config *cfg = r->cfg;
	fb_pause_bind(&w->port);
	if (!wait_gate(r))
		return NULL;

	fb_prng rng;
	fb_prng_init(&rng, cfg->seed, w->id);
	fb_lease_stats ls = {0};
	uint64_t stalls = 0, n = 0;
	const bool rmw = cfg->op == FB_OP_RMW;
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		bool timed = ++n % cfg->sample == 0;
		uint64_t t0 = timed ? fb_clock_now(r->clock) : 0;
		uint32_t key = fb_prng_below(&rng, cfg->keys);
		fb_port_phase(&w->port, FB_PHASE_ACQUIRING);
		fb_lease l;
		fb_acquire a;
		unsigned fails = 0;
		while ((a = fb_lease_acquire(r->leases, key, w->id, &l, &ls)) == FB_HELD) {
			fb_counter_add(&w->contended, 1);
			if (atomic_load_explicit(&r->stop, memory_order_relaxed))
				break;
			backoff(++fails);
		}
		if (a != FB_ACQUIRED) {
			fb_port_phase(&w->port, FB_PHASE_IDLE);
			if (a == FB_EXHAUSTED) {
				atomic_store_explicit(&r->exhausted, 1, memory_order_relaxed);
				atomic_store_explicit(&r->stop, 1, memory_order_relaxed);
			}
			break;
		}
		fb_counter_add(&w->acquired, 1);
		uint64_t pauses_at_acquire = fb_counter_get(&w->port.pauses);
		fb_port_hold(&w->port, key, l.fence);
		uint64_t t1 = timed ? fb_clock_now(r->clock) : 0;

		/* Rotate the order of the disciplines each cycle: a pause that
		 * lands between two of them must not favour one column. */
		int first = (int)(n % (uint64_t)r->nactive);
		int64_t bal[FB_DISCIPLINES] = {0};
		bool served[FB_DISCIPLINES];
		fb_store_result res = {0};
		for (int i = 0; i < r->nactive; i++) {
			fb_discipline d = r->active[(first + i) % r->nactive];
			served[d] = !rmw || fb_store_read(r->store[d], key, l.fence, &res);
			if (!served[d])
				fb_counter_add(&w->m[d].reads_refused, 1);
			bal[d] = res.balance;
		}
		fb_pause_point(&w->port, key, l.fence, r->clock);
		uint64_t tw = 0;
		pending_commit todo[FB_DISCIPLINES];
		int ntodo = 0;
		for (int i = 0; i < r->nactive; i++) {
			fb_discipline d = r->active[(first + i) % r->nactive];
			if (!served[d])
				continue;
			fb_mode_counters *mc = &w->m[d];
			fb_counter_add(&mc->writes, 1);
			/* Zombie: the writer's own lease is over as it issues the write
			 * (read per write: a pause can fall between two of them). */
			uint64_t now = fb_clock_now(r->clock);
			if (!tw)
				tw = now;
			if (now >= l.expires_at)
				fb_counter_add(&mc->zombie, 1);
			bool ok =
			        rmw ? fb_store_write(r->store[d], key, bal[d] - cfg->amount,
			                             l.fence, &res)
			            : fb_store_debit(r->store[d], key, cfg->amount, l.fence, &res);
			if (!ok) {
				fb_counter_add(&mc->rejected, 1);
				continue;
			}
			fb_counter_add(&mc->accepted, 1);
			if (res.stale)
				fb_counter_add(&mc->store_stale, 1);
			todo[ntodo++] = (pending_commit){d, res.version, rmw ? bal[d] : res.before,
			                                 res.before, res.balance};
		}
		uint64_t t2 = timed ? fb_clock_now(r->clock) : 0;
		if (!tw)
			tw = t2;
		/* A failed compare-and-delete means another worker took the lease
		 * over; if this cycle was paused, the pause caused it. */
		if (!fb_lease_release(r->leases, key, w->id, l.fence) &&
		    fb_counter_get(&w->port.pauses) != pauses_at_acquire)
			fb_counter_add(&w->port.takeovers, 1);
		fb_port_phase(&w->port, FB_PHASE_IDLE);
		/* History goes to the checker after the release: if the checker's
		 * ring is full (a paused writer holds back a key's walk) the wait
		 * must not hold a lease, or it would make zombies of its own. */
		for (int i = 0; i < ntodo; i++)
			fb_checker_commit(r->checker[todo[i].d], key, todo[i].version, l.fence,
			                  todo[i].read, todo[i].replaced, todo[i].written, &stalls);
		fb_counter_add(&w->ops, 1);
		if (timed) {
			fb_hist_record(&w->acquire, t1 - t0);
			fb_hist_record(&w->write, t2 - tw);
			fb_hist_record(&w->cycle, fb_clock_now(r->clock) - t0);
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
	s->t_s = (double)(fb_clock_now(r->clock) - t0) / 1e9;
	for (uint32_t i = 0; i < r->started; i++) {
		fb_worker *w = &r->workers[i];
		s->ops += fb_counter_get(&w->ops);
		s->pauses += fb_counter_get(&w->port.pauses);
		for (int d = 0; d < FB_DISCIPLINES; d++) {
			s->writes[d] += fb_counter_get(&w->m[d].writes);
			s->accepted[d] += fb_counter_get(&w->m[d].accepted);
			s->rejected[d] += fb_counter_get(&w->m[d].rejected);
			s->reads_refused[d] += fb_counter_get(&w->m[d].reads_refused);
			s->store_stale[d] += fb_counter_get(&w->m[d].store_stale);
		}
	}
}

/* Wait until `deadline` on r->clock or a SIGINT/SIGTERM; returns the signal or 0. */
static int wait_until(fb_run_state *r, uint64_t deadline)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	for (;;) {
		uint64_t now = fb_clock_now(r->clock);
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

/* The first reason the checker and the store disagree; later ones are
 * usually consequences of it. */
__attribute__((format(printf, 2, 3))) static void disagree(fb_mode_result *m, const char *fmt, ...)
{
	if (!m->checker_agrees)
		return;
	m->checker_agrees = false;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->disagreement, sizeof m->disagreement, fmt, ap);
	va_end(ap);
}

static void summarize(fb_run_state *r, fb_results *res)
{
	const fb_config *cfg = r->cfg;
	fb_hist_init(&res->acquire);
	fb_hist_init(&res->write);
	fb_hist_init(&res->cycle);
	for (uint32_t i = 0; i < r->started; i++) {
		fb_worker *w = &r->workers[i];
		res->per_thread_ops[i] = fb_counter_get(&w->ops);
		res->ops += fb_counter_get(&w->ops);
		res->acquired += fb_counter_get(&w->acquired);
		res->contended += fb_counter_get(&w->contended);
		res->cas_retries += fb_counter_get(&w->cas_retries);
		res->wasted_fences += fb_counter_get(&w->wasted_fences);
		res->checker_stalls += fb_counter_get(&w->checker_stalls);
		res->pauses += fb_counter_get(&w->port.pauses);
		res->pause_hit += fb_counter_get(&w->port.hit);
		res->pause_over_ttl += fb_counter_get(&w->port.over_ttl);
		res->takeovers += fb_counter_get(&w->port.takeovers);
		res->paused_ns += fb_counter_get(&w->port.paused_ns);
		res->pause_aimed += fb_counter_get(&w->port.aimed);
		res->pause_trapped += fb_counter_get(&w->port.trapped);
		fb_hist_merge(&res->acquire, &w->acquire);
		fb_hist_merge(&res->write, &w->write);
		fb_hist_merge(&res->cycle, &w->cycle);
		for (int d = 0; d < FB_DISCIPLINES; d++) {
			fb_mode_result *m = &res->mode[d];
			m->writes += fb_counter_get(&w->m[d].writes);
			m->accepted += fb_counter_get(&w->m[d].accepted);
			m->rejected_stale += fb_counter_get(&w->m[d].rejected);
			m->reads_refused += fb_counter_get(&w->m[d].reads_refused);
			m->store_stale += fb_counter_get(&w->m[d].store_stale);
			m->zombie_writes += fb_counter_get(&w->m[d].zombie);
		}
	}
	for (int i = 0; i < r->nactive; i++) {
		fb_discipline d = r->active[i];
		fb_mode_result *m = &res->mode[d];
		m->on = true;
		m->checker_agrees = true;
		fb_checker_drain(r->checker[d]);
		int64_t lost_ledger = 0, lost_hist = 0;
		for (uint32_t k = 0; k < cfg->keys; k++) {
			fb_check_key ck;
			fb_checker_key(r->checker[d], k, &ck);
			int64_t bal = fb_store_balance(r->store[d], k);
			/* What the balance is above what the accepted debits left:
			 * the debits whose effect is missing. */
			int64_t ledger =
			        bal - (cfg->initial_balance - (int64_t)ck.checked * cfg->amount);
			fb_key_result *kr = &res->keys[k];
			kr->balance[d] = bal;
			kr->accepted[d] = ck.checked;
			kr->stale[d] = ck.stale_accepted;
			kr->lost[d] = ledger / cfg->amount;
			kr->last_fence[d] = fb_store_last_fence(r->store[d], k);
			m->checked += ck.checked;
			m->stale_accepted += ck.stale_accepted;
			m->chain_breaks += ck.chain_breaks;
			lost_ledger += ledger;
			lost_hist += ck.lost_amount;
			if (ledger != ck.lost_amount)
				disagree(m, "key %u: the ledger lost %lld, the history %lld", k,
				         (long long)ledger, (long long)ck.lost_amount);
			if (ck.balance != bal)
				disagree(m,
				         "key %u: the history ends at balance %lld, the store "
				         "holds %lld",
				         k, (long long)ck.balance, (long long)bal);
			if (d != FB_UNFENCED && ck.max_fence != kr->last_fence[d])
				disagree(m,
				         "key %u: the history's last fence is %llu, the store's "
				         "%llu",
				         k, (unsigned long long)ck.max_fence,
				         (unsigned long long)kr->last_fence[d]);
		}
		m->lost_updates = lost_ledger / cfg->amount;
		m->lost_history = lost_hist / cfg->amount;
		if (m->checked != m->accepted)
			disagree(m,
			         "the history holds %llu accepted writes, the store reported %llu",
			         (unsigned long long)m->checked, (unsigned long long)m->accepted);
		if (m->stale_accepted != m->store_stale)
			disagree(m, "the checker found %llu stale writes accepted, the store %llu",
			         (unsigned long long)m->stale_accepted,
			         (unsigned long long)m->store_stale);
		if (m->chain_breaks)
			disagree(m, "%llu writes did not replace the balance the previous one left",
			         (unsigned long long)m->chain_breaks);
	}
}

static void destroy(fb_run_state *r)
{
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		fb_store_destroy(r->store[d]);
		fb_checker_destroy(r->checker[d]);
	}
	fb_lease_table_destroy(r->leases);
	free(r->traps);
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

fb_err fb_run(const fb_config *cfg, fb_tick_fn tick, void *ctx, fb_results *res)
{
	fb_run_state r = {.cfg = cfg, .clock = fb_clock_fast()};
	pthread_mutex_init(&r.gate_mu, NULL);
	pthread_cond_init(&r.gate_cv, NULL);
	atomic_init(&r.stop, 0);
	atomic_init(&r.exhausted, 0);
	memset(res, 0, sizeof *res);
	res->cfg = cfg;
	res->clock_name = r.clock->name;

	fb_lease_config lc = {.keys = cfg->keys,
	                      .ttl_ns = cfg->ttl_ns,
	                      .source = cfg->fence,
	                      .first_fence = cfg->first_fence,
	                      .clock = r.clock};
	if (fb_lease_table_create(&lc, &r.leases) != FB_OK)
		return oom(&r);
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		if (!(cfg->modes & (1u << d)))
			continue;
		r.active[r.nactive++] = (fb_discipline)d;
		if (fb_store_create((fb_discipline)d, cfg->keys, cfg->initial_balance,
		                    &r.store[d]) ||
		    fb_checker_create(cfg->keys, cfg->threads, cfg->initial_balance, &r.checker[d]))
			return oom(&r);
	}
	r.workers = aligned_alloc(FB_PAD_LINE, (size_t)cfg->threads * sizeof *r.workers);
	res->per_thread_ops = calloc(cfg->threads, sizeof *res->per_thread_ops);
	res->keys = calloc(cfg->keys, sizeof *res->keys);
	r.traps = aligned_alloc(FB_CACHE_LINE, (size_t)cfg->keys * sizeof *r.traps);
	if (!r.workers || !res->per_thread_ops || !res->keys || !r.traps)
		return oom(&r);
	for (uint32_t k = 0; k < cfg->keys; k++) {
		atomic_init(&r.traps[k].fence, 0);
		atomic_init(&r.traps[k].wake_at, 0);
		atomic_init(&r.traps[k].extra_ns, 0);
	}
	memset(r.workers, 0, (size_t)cfg->threads * sizeof *r.workers);
	if (fb_pause_install() != FB_OK) {
		fprintf(stderr, "fencebench: sigaction(SIGUSR1) failed, errno=%d (%s)\n", errno,
		        strerror(errno));
		destroy(&r);
		return FB_ESYS;
	}

	pthread_attr_t attr;
	pthread_attr_init(&attr);
	/* Workers need little stack; 64k threads of 8 MiB would not fit. */
	pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN > 262144 ? PTHREAD_STACK_MIN : 262144);
	fb_err err = FB_OK;
	for (uint32_t i = 0; i < cfg->threads; i++) {
		fb_worker *w = &r.workers[i];
		w->run = &r;
		w->id = (uint16_t)(i + 1);
		w->port.leases = r.leases;
		w->port.traps = r.traps;
		fb_hist_init(&w->acquire);
		fb_hist_init(&w->write);
		fb_hist_init(&w->cycle);
		pthread_t tid;
		int e = pthread_create(&tid, &attr, worker_main, w);
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
		r.started++;
	}
	pthread_attr_destroy(&attr);

	fb_injector *inj = NULL;
	fb_fault_port **ports = NULL;
	if (!err && cfg->pause_rate > 0) {
		ports = calloc(r.started, sizeof *ports);
		if (!ports) {
			fprintf(stderr, "fencebench: out of memory for the injector\n");
			err = FB_ENOMEM;
		} else {
			for (uint32_t i = 0; i < r.started; i++)
				ports[i] = &r.workers[i].port;
			fb_injector_config ic = {.rate = cfg->pause_rate,
			                         .min_ns = cfg->pause_min_ns,
			                         .max_ns = cfg->pause_max_ns,
			                         .seed = cfg->seed,
			                         .ttl_ns = cfg->ttl_ns,
			                         .at = cfg->fault_at};
			if (fb_injector_start(&ic, ports, r.started, &inj) != FB_OK) {
				fprintf(stderr,
				        "fencebench: cannot start the injector thread: "
				        "pthread_create "
				        "failed, errno=%d (%s)\n",
				        errno, strerror(errno));
				err = FB_ESYS;
			}
		}
	}
	if (err) {
		open_gate(&r, -1);
		for (uint32_t i = 0; i < r.started; i++)
			pthread_join(r.workers[i].port.tid, NULL);
		free(ports);
		destroy(&r);
		return err;
	}

	uint64_t t0 = fb_clock_now(r.clock), end = t0 + cfg->duration_ns;
	open_gate(&r, 1);
	for (uint64_t next = t0 + 1000000000u;; next += 1000000000u) {
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
	res->elapsed_s = (double)(fb_clock_now(r.clock) - t0) / 1e9;
	res->injector_sent = ist.sent;
	res->injector_missed = ist.missed;
	summarize(&r, res);
	free(ports);
	bool exhausted = atomic_load(&r.exhausted);
	destroy(&r);
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
	free(res->keys);
}
