/*
 * The environment the cycle runs in (cycle.h), for both drivers: the
 * engines opened and every worker connected, the checkers, the witness and
 * what the faults need; and after the run, the workers summed and every
 * store's history walked against the store.
 */
#define _GNU_SOURCE
#include "cycle.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inproc.h"
#include "registry.h"
#include "url.h"

/* The longest one writer can legitimately hold back its key's next
 * version: its own pause, delay and work, and a TTL's worth of slack, twice
 * over. The checker counts it from the walk's last move, so a chain of
 * such holders, one after another, never adds up against it. */
/* Issue 24: the longest a wire fault holds a call's bytes back. */
static uint64_t wire_hold(const fb_config *cfg)
{
	uint64_t p = fb_config_fault(cfg, FB_FAULT_PARTITION) ? cfg->partition_max_ns : 0;
	uint64_t d = fb_config_fault(cfg, FB_FAULT_WIRE_DELAY) ? 2 * cfg->wire_delay_max_ns : 0;
	/* a nemesis fault lasts its length and its heal command */
	uint64_t n = fb_config_fault(cfg, FB_FAULT_NEMESIS)
	                     ? cfg->nemesis_max_ns + cfg->nemesis_timeout_ns
	                     : 0;
	p = p > d ? p : d;
	return p > n ? p : n;
}

static uint64_t longest_wait(const fb_config *cfg)
{
	uint64_t hold = cfg->pause_max_ns + cfg->delay_max_ns + cfg->work_max_ns + cfg->ttl_ns +
	                wire_hold(cfg);
	return UINT64_C(10000000000) + 2 * hold;
}

fb_engine_config fb_env_engine_config(const fb_config *cfg, const fb_clock *clock)
{
	fb_engine_config ec = {.keys = cfg->keys,
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
	                       .timeout_ns = fb_config_fault(cfg, FB_FAULT_SERVER_PAUSE) ||
	                                                     fb_config_fault(cfg, FB_FAULT_PAUSE)
	                                             ? UINT64_C(10000000000) + 2 * cfg->pause_max_ns
	                                             : 0};
	if (wire_hold(cfg)) /* issue 24: nor may a call the wire holds back */
		ec.timeout_ns = (ec.timeout_ns ? ec.timeout_ns : UINT64_C(10000000000)) +
		                2 * wire_hold(cfg);
	ec.adapter_timeout_ns = cfg->adapter_timeout_ns;
	return ec;
}

void fb_env_close(fb_env *e)
{
	fb_feed_destroy(e->feed); /* first: its thread walks the checkers */
	e->feed = NULL;
	for (int d = 0; d < FB_DISCIPLINES; d++)
		fb_checker_destroy(e->checker[d]);
	if (e->workers)
		for (uint32_t i = 0; i < e->cfg->threads; i++) {
			if (e->workers[i].lconn)
				e->lops->disconnect(e->workers[i].lconn);
			if (e->workers[i].sconn)
				e->sops->disconnect(e->workers[i].sconn);
		}
	if (e->net_lconn)
		e->lops->disconnect(e->net_lconn);
	if (e->net_sconn)
		e->sops->disconnect(e->net_sconn);
	if (e->pause_lconn)
		e->lops->disconnect(e->pause_lconn);
	if (e->leng)
		e->lops->close(e->leng);
	if (e->seng)
		e->sops->close(e->seng);
	fb_env_heal(e);
	fb_wire_close(&e->wire, e->cfg->ttl_ns); /* issue 24: after every connection through it */
	free(e->lease_url);
	free(e->store_url);
	if (e->outside_mu_init)
		pthread_mutex_destroy(&e->outside_mu);
	fb_witness_destroy(e->witness);
	free(e->marks_own);
	for (int d = 0; d < FB_DISCIPLINES; d++)
		free(e->calls[d]);
	fb_plan_log_destroy(e->log);
	fb_plan_free(&e->plan);
	free(e->traps);
	free(e->crashes_at);
	free(e->zipf_cdf);
	free(e->workers);
	memset(e, 0, sizeof *e);
}

static fb_err oom(fb_env *e)
{
	fprintf(stderr, "fencebench: out of memory setting up %u threads and %u keys\n",
	        e->cfg->threads, e->cfg->keys);
	fb_env_close(e);
	return FB_ENOMEM;
}

/* Issue 24: the URLs the engines open, through a proxy where they ask for
 * one (?proxy=1). */
static fb_err open_wire(fb_env *e, char *err, size_t errlen, const char **opt)
{
	const fb_config *cfg = e->cfg;
	size_t ln = (cfg->lease_url ? strlen(cfg->lease_url) : 0) + 64 * FB_URL_HOSTS + 64;
	size_t sn = (cfg->store_url ? strlen(cfg->store_url) : 0) + 64 * FB_URL_HOSTS + 64;
	e->lease_url = malloc(ln);
	e->store_url = malloc(sn);
	if (!e->lease_url || !e->store_url)
		return FB_ENOMEM;
	*opt = "--lease";
	fb_err r = fb_wire_url(&e->wire, *opt, cfg->lease_url, e->lease_url, ln, err, errlen);
	if (!r) {
		*opt = "--store";
		r = fb_wire_url(&e->wire, *opt, cfg->store_url, e->store_url, sn, err, errlen);
	}
	/* an empty URL is the in-process engine's: NULL, as the option left it */
	if (!cfg->lease_url) {
		free(e->lease_url);
		e->lease_url = NULL;
	}
	if (!cfg->store_url) {
		free(e->store_url);
		e->store_url = NULL;
	}
	e->wiring = e->wire.n > 0 && (fb_config_fault(cfg, FB_FAULT_PARTITION) ||
	                              fb_config_fault(cfg, FB_FAULT_WIRE_DELAY) ||
	                              fb_config_fault(cfg, FB_FAULT_WIRE_RESET));
	return r;
}

/* An outside fault struck (from the injector's thread only): counted for
 * the cycles that span it, logged for the story. */
static void log_outside_locked(fb_env *e, fb_fault f, uint64_t ns, uint32_t what)
{
	uint64_t seq = atomic_load_explicit(&e->outside_seq, memory_order_relaxed) + 1;
	e->outside[seq % FB_OUTSIDE_LOG] =
	        (fb_outside_fault){seq, fb_clock_now(e->clock), ns, 0, (uint32_t)f, what};
	if (f == FB_FAULT_NEMESIS)
		e->nemesis_seq = seq;
	/* relaxed: a worker only snapshots it at its acquire, and reads the
	 * log under the lock */
	atomic_store_explicit(&e->outside_seq, seq, memory_order_relaxed);
}

static void count_outside(fb_env *e, fb_fault f)
{
	/* relaxed: workers only compare them across a cycle */
	atomic_fetch_add_explicit(&e->wire_faults[f - FB_FAULT_PARTITION], 1, memory_order_relaxed);
}

static void log_outside(fb_env *e, fb_fault f, uint64_t ns, uint32_t what)
{
	pthread_mutex_lock(&e->outside_mu);
	log_outside_locked(e, f, ns, what);
	pthread_mutex_unlock(&e->outside_mu);
	count_outside(e, f);
}

/* The nemesis healed its last fault: the story dates the fault's end by
 * it (a failover outlasts the start command, and lasts until the heal at
 * least as fencebench saw it). */
static void nemesis_healed(void *ctx)
{
	fb_env *e = ctx;
	pthread_mutex_lock(&e->outside_mu);
	fb_outside_fault *o = &e->outside[e->nemesis_seq % FB_OUTSIDE_LOG];
	if (e->nemesis_seq && o->seq == e->nemesis_seq && !o->end)
		o->end = fb_clock_now(e->clock);
	pthread_mutex_unlock(&e->outside_mu);
}

/* A nemesis command that failed or hung ends the run: exit 3, named. */
static void nemesis_failed(void *ctx, const char *why)
{
	fb_env_failed(ctx, "nemesis", why);
}

/* Issue 24: --nemesis exec:COMMAND, its names split, its thread started. */
static fb_err open_nemesis(fb_env *e)
{
	const fb_config *cfg = e->cfg;
	/* the option parser gives the fault its command; a config built
	 * otherwise (a test's, the simulator's) without one has no nemesis */
	if (!fb_config_fault(cfg, FB_FAULT_NEMESIS) || !cfg->nemesis || !cfg->nemesis_names)
		return FB_OK;
	snprintf(e->nemesis_names, sizeof e->nemesis_names, "%s", cfg->nemesis_names);
	for (char *save = NULL, *t = strtok_r(e->nemesis_names, ",", &save);
	     t && e->n_nemesis_names < 32; t = strtok_r(NULL, ",", &save))
		e->nemesis_name[e->n_nemesis_names++] = t;
	if (fb_nemesis_start(cfg->nemesis + 5, cfg->nemesis_timeout_ns, nemesis_failed, e,
	                     &e->nemesis) != FB_OK) {
		fprintf(stderr, "fencebench: --nemesis: cannot start its thread: %s\n",
		        strerror(errno));
		return FB_ESYS;
	}
	fb_nemesis_on_heal(e->nemesis, nemesis_healed);
	e->wiring = true;
	return FB_OK;
}

void fb_env_started(fb_env *e)
{
	if (e->nemesis)
		fb_nemesis_go(e->nemesis);
}

void fb_env_heal(fb_env *e)
{
	if (!e->nemesis)
		return;
	uint64_t healed;
	fb_nemesis_stop(e->nemesis, &e->nemesis_started, &healed);
	e->nemesis = NULL;
}

/* The injector's nemesis fault: the user's command starts fault `name`. */
static int nemesis_fault(void *ctx, unsigned name, uint64_t ns)
{
	fb_env *e = ctx;
	if (name >= e->n_nemesis_names)
		return -1;
	/* logged under the log's lock taken before the strike: its heal,
	 * which takes that lock, finds it logged */
	pthread_mutex_lock(&e->outside_mu);
	bool struck = fb_nemesis_strike(e->nemesis, e->nemesis_name[name], ns);
	if (struck)
		log_outside_locked(e, FB_FAULT_NEMESIS, ns, name);
	pthread_mutex_unlock(&e->outside_mu);
	if (!struck)
		return -1;
	count_outside(e, FB_FAULT_NEMESIS);
	return 0;
}

/*
 * Open both engines, prepare them (afresh, unless this is one process of a
 * shared run) and connect each worker, and the delivery, to each: one
 * context (a server connection) per worker. A failure prints the option and
 * the engine's reason, which names the URL with its password hidden.
 */
static fb_err open_engines(fb_env *e, const fb_env_driver *drv, fb_results *res)
{
	const fb_config *cfg = e->cfg;
	fb_engine_config ec = fb_env_engine_config(cfg, e->clock);
	ec.between = drv->between;
	ec.between_ctx = drv->between_ctx;
	char err[512] = "";
	const char *opt = "--lease";
	bool fresh = !cfg->client_id;
	fb_err r = open_wire(e, err, sizeof err, &opt);
	if (!r) {
		opt = "--lease";
		r = e->lops->open(&ec, e->lease_url, &e->leng, err, sizeof err);
	}
	if (!r)
		r = e->lops->prepare(e->leng, fresh, err, sizeof err);
	if (!r) {
		opt = "--store";
		r = e->sops->open(&ec, e->store_url, &e->seng, err, sizeof err);
		if (!r)
			r = e->sops->prepare(e->seng, fresh, err, sizeof err);
	}
	if (!r) {
		opt = "--lease";
		r = e->lops->connect(e->leng, 0, &e->net_lconn, err, sizeof err);
	}
	if (!r) {
		opt = "--store";
		r = e->sops->connect(e->seng, 0, &e->net_sconn, err, sizeof err);
	}
	if (!r && (e->server_pausing || fb_config_fault(cfg, FB_FAULT_NODE_JUMP))) {
		opt = "--lease";
		r = e->lops->connect(e->leng, 0, &e->pause_lconn, err, sizeof err);
	}
	/* a node jump needs a node set up for it; without one the run goes on
	 * without the fault, and says so */
	if (!r && fb_config_fault(cfg, FB_FAULT_NODE_JUMP)) {
		e->jumping =
		        e->lops->node_jump && e->lops->node_jump(e->pause_lconn, 0) == FB_IO_OK;
		if (!e->jumping)
			fprintf(stderr, "fencebench: --faults: node-jump skipped: %s\n",
			        e->lops->node_jump ? e->lops->error(e->pause_lconn)
			                           : "the lease service has no nodes to jump");
	}
	for (uint32_t i = 0; !r && i < cfg->threads; i++) {
		fb_worker *w = &e->workers[i];
		opt = "--lease";
		r = e->lops->connect(e->leng, (uint16_t)(i + 1), &w->lconn, err, sizeof err);
		if (!r) {
			opt = "--store";
			r = e->sops->connect(e->seng, (uint16_t)(i + 1), &w->sconn, err,
			                     sizeof err);
		}
	}
	if (r) {
		fprintf(stderr, "fencebench: %s: %s\n", opt, err);
		return r;
	}
	char v[64];
	e->lops->version(e->leng, v, sizeof v);
	snprintf(res->lease_engine, sizeof res->lease_engine, "%s %s", e->lops->name, v);
	e->sops->version(e->seng, v, sizeof v);
	snprintf(res->store_engine, sizeof res->store_engine, "%s %s", e->sops->name, v);
	for (int d = 0; d < FB_DISCIPLINES; d++)
		snprintf(res->column[d], sizeof res->column[d], "%s",
		         fb_store_column(e->sops, e->seng, (fb_discipline)d));
	e->own_versions = e->sops->own_versions ? e->sops->own_versions(e->seng) : 0;
	res->unfenced_reads = e->sops->unfenced_reads ? e->sops->unfenced_reads(e->seng) : 0;
	res->remote = e->remote;
	res->batched = e->batched;
	res->check_deferred = !e->checking && !cfg->no_check;
	return FB_OK;
}

/* The feed's bound was reached: a walk stood still for longer than any
 * writer may hold it. */
static void walk_stuck(void *ctx, uint32_t key, int d)
{
	char why[300];
	snprintf(why, sizeof why,
	         "key %u of the %s store: the history's walk stood still for longer than any "
	         "writer may hold it, waiting for a write that never came (another process writing "
	         "to this store? give each process of a shared run a --client-id)",
	         key, fb_discipline_name((fb_discipline)d));
	fb_env_failed(ctx, "checker", why);
}

/* A worker in process runs but for its faults and waits: the workers keep
 * busy every CPU this process may run on (only --cpus's, if given). */
static bool cores_taken(const fb_config *cfg)
{
	cpu_set_t may;
	CPU_ZERO(&may);
	if (sched_getaffinity(0, sizeof may, &may))
		return false;
	uint32_t busy = cfg->n_cpus && cfg->n_cpus < cfg->threads ? cfg->n_cpus : cfg->threads;
	return busy >= (uint32_t)CPU_COUNT(&may);
}

/* The checkers and the witness: one checker a discipline, fed through one
 * log a worker and one for the deliveries, the feed bounded by the longest
 * a writer may hold its key's walk. */
static fb_err open_checks(fb_env *e, bool blocking)
{
	const fb_config *cfg = e->cfg;
	/* the marks beside the lease words where the table lends room
	 * (fb_key_marks), else on lines of their own */
	size_t room = 0, stride = 0;
	if (e->lops->side)
		e->marks = e->lops->side(e->leng, &stride, &room);
	if (stride != FB_PAD_LINE || room < sizeof(fb_key_marks)) {
		if (!(e->marks_own = aligned_alloc(FB_PAD_LINE, (size_t)cfg->keys * FB_PAD_LINE)))
			return FB_ENOMEM;
		e->marks = e->marks_own;
	}
	for (uint32_t k = 0; k < cfg->keys; k++) {
		fb_key_marks *m = fb_env_marks(e, k);
		for (int d = 0; d < 4; d++)
			atomic_init(&m->sent[d], 0);
		for (int d = 0; d < FB_DISCIPLINES; d++)
			atomic_init(&m->twice[d], 0);
		atomic_init(&m->admitted, 0);
		atomic_init(&m->wf, 0);
	}
	if (fb_witness_create_at(cfg->keys, cfg->ttl_ns, e->lease_slack,
	                         &fb_env_marks(e, 0)->witness, FB_PAD_LINE, &e->witness) != FB_OK)
		return FB_ENOMEM;
	if (e->validity_short)
		fb_witness_judge_answers(e->witness, e->validity_short);
	/* The in-process table and its witness time leases on this machine's
	 * clock, read on every core: measure how far the cores disagree, so a
	 * clock behind on one core is blamed on the clock, not the table. */
	if (e->witnessing && !e->lops->remote && blocking)
		e->core_skew = fb_clock_core_skew(e->clock, 200);
	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (cfg->modes & (1u << d))
			e->active[e->nactive++] = (fb_discipline)d;
	if (!e->checking)
		return FB_OK;
	uint32_t cap, ahead, in_flight = fb_checker_in_flight(cfg->threads);
	/* thousands of threads: logs wider than their share of the window,
	 * which the producers then share as they use it (threads only: the
	 * simulator's schedule stays what its seeds replay) */
	bool wide = blocking && !fb_feed_plan_wide(cfg->threads + 1, in_flight, &cap, &ahead);
	if (!wide && fb_feed_plan(cfg->threads + 1, in_flight, &cap, &ahead))
		return FB_ENOMEM;
	fb_check_watch *watches[] = {&e->watch_first, &e->watch_shaped};
	for (int i = 0; i < e->nactive; i++) {
		fb_discipline d = e->active[i];
		fb_err r;
		if (e->own_versions & (1u << d)) {
			if (!(e->calls[d] = calloc(cfg->keys, sizeof *e->calls[d])))
				return FB_ENOMEM;
			r = fb_checker_create_ordered(cfg->keys, cfg->initial_balance, e->calls[d],
			                              &e->checker[d]);
		} else {
			r = fb_checker_create(cfg->keys, ahead, cfg->initial_balance,
			                      &e->checker[d]);
		}
		if (r)
			return FB_ENOMEM;
		fb_checker_watch(e->checker[d], watches, 2);
	}
	if (fb_feed_create(cfg->threads + 1, cap, e->checker, blocking, &e->feed))
		return FB_ENOMEM;
	if (wide)
		fb_feed_window(e->feed, in_flight);
	/* longer than any fault can hold a version back */
	fb_feed_bound(e->feed, &e->failed, &e->stop, e->fast, longest_wait(cfg), walk_stuck, e);
	if (blocking)
		fb_feed_end(e->feed, &e->end_at);
	/* no core for the feed's thread: the workers take the passes (wide
	 * logs are a few cycles long: their gate waits for the thread's) */
	if (blocking && !e->remote && !wide && cores_taken(cfg))
		fb_feed_crowded(e->feed);
	e->net_log = fb_feed_log_of(e->feed, cfg->threads);
	return FB_OK;
}

/* --dist zipf: cumulative weights (k + 1)^-s, from fb_exp_neg and
 * fb_neg_log, not pow(): the key choices must not depend on the libm. */
static fb_err open_zipf(fb_env *e)
{
	const fb_config *cfg = e->cfg;
	if (cfg->dist.kind != FB_DIST_ZIPF)
		return FB_OK;
	if (!(e->zipf_cdf = malloc(cfg->keys * sizeof *e->zipf_cdf)))
		return FB_ENOMEM;
	double sum = 0;
	for (uint32_t k = 0; k < cfg->keys; k++)
		e->zipf_cdf[k] = sum += fb_exp_neg(cfg->dist.s * fb_neg_log(k + 1.0));
	for (uint32_t k = 0; k < cfg->keys; k++)
		e->zipf_cdf[k] /= sum;
	e->zipf_cdf[cfg->keys - 1] = 1.0;
	return FB_OK;
}

/* The plan log (--plan-out, room for twice the expected faults and then
 * some) and the plan replayed (--plan). */
static fb_err open_plans(fb_env *e)
{
	const fb_config *cfg = e->cfg;
	if (cfg->plan_out_path) {
		double per_s = 0;
		for (int f = 0; f < FB_FAULTS; f++)
			per_s += fb_config_rate(cfg, (fb_fault)f);
		double want = 2 * per_s * ((double)cfg->duration_ns / 1e9) + 4096;
		uint64_t cap =
		        want > (double)(UINT64_C(1) << 26) ? UINT64_C(1) << 26 : (uint64_t)want;
		if (fb_plan_log_create(cap, &e->log) != FB_OK)
			return FB_ENOMEM;
	}
	if (cfg->plan_path) {
		char err[512];
		unsigned flags =
		        (cfg->lease_clock == FB_LEASE_CLOCK_REALTIME ? FB_PLAN_SERVICE_CLOCK : 0) |
		        (e->wire.n ? FB_PLAN_WIRE : 0);
		fb_err r = fb_plan_read(cfg->plan_path, cfg->threads, flags, &e->plan, err,
		                        sizeof err);
		if (r) {
			fprintf(stderr, "fencebench: --plan: %s\n", err);
			return r == FB_ESYS ? FB_EINVAL : r;
		}
	}
	return FB_OK;
}

fb_err fb_env_open(fb_env *e, const fb_config *cfg, const fb_env_driver *drv, fb_results *res)
{
	memset(e, 0, sizeof *e);
	e->cfg = cfg;
	pthread_mutex_init(&e->outside_mu, NULL); /* issue 24 */
	e->outside_mu_init = true;
	e->fast = drv->fast;
	e->lops = fb_lease_engine(cfg->lease_url);
	e->sops = fb_store_engine(cfg->store_url);
	/* main judges these first, before the run header; a driver opened
	 * otherwise gets the same line */
	if (!fb_registry_check_urls(cfg->lease_url, cfg->store_url))
		return FB_EINVAL;
	e->clock = drv->fast;
	if (cfg->lease_clock == FB_LEASE_CLOCK_REALTIME) {
		/* A wall clock the skew fault can step: the Redis documentation's
		 * warning, made measurable. */
		fb_clock_skewed_init(&e->service, drv->wall, 1.0, 0);
		e->clock = &e->service.base;
	}
	if (cfg->bug == FB_BUG_SLOW_CORE && drv->blocking) { /* PLANTED */
		fb_clock_core_behind_init(&e->behind, e->clock, 2000000);
		e->clock = &e->behind.base;
	}
	e->blocking = drv->blocking;
	e->send = drv->send;
	e->send_ctx = drv->send_ctx;
	e->remote = e->lops->remote || e->sops->remote;
	e->batched = e->sops->batch != NULL;
	e->timed_modes = e->remote ? ~e->sops->local_modes : 0;
	/* Another process writes the same keys: this one's checker would wait
	 * for versions it never sees. `fencebench check` reads the whole
	 * history afterwards. */
	e->checking = !cfg->no_check && !cfg->client_id;
	/* ... and its calls too: a refusal is judged only on a full record */
	e->judging = e->checking;
	/* issue 27: the write-fenced control's chances to lose an update */
	e->wf_judged = e->judging && cfg->op == FB_OP_RMW && (cfg->modes & (1u << FB_WRITE_FENCED));
	e->witnessing = !cfg->no_check;
	e->skip = cfg->on_held == FB_ON_HELD_SKIP;
	e->crashes = fb_config_fault(cfg, FB_FAULT_CRASH) || cfg->plan_path;
	e->stepping = cfg->lease_clock == FB_LEASE_CLOCK_REALTIME;
	e->server_pausing = fb_config_fault(cfg, FB_FAULT_SERVER_PAUSE);
	/* a remote service expires keys on its millisecond grid; an engine that
	 * dates leases on the caller's clock names its own bound */
	e->lease_slack = !e->lops->remote            ? 50000
	                 : e->lops->witness_slack_ns ? e->lops->witness_slack_ns
	                                             : 2000000;
	e->validity_short =
	        e->lops->validity_short_ns ? e->lops->validity_short_ns(cfg->ttl_ns) : 0;
	atomic_init(&e->counting, cfg->warmup_ns == 0);
	atomic_init(&e->end_at, UINT64_MAX); /* the threaded driver's, when its gate opens */
	atomic_init(&e->look_at, 0);
	size_t wbytes = (size_t)cfg->threads * sizeof *e->workers;
	e->workers =
	        aligned_alloc(FB_PAD_LINE, (wbytes + FB_PAD_LINE - 1) / FB_PAD_LINE * FB_PAD_LINE);
	res->per_thread_ops = calloc(cfg->threads, sizeof *res->per_thread_ops);
	res->dead = calloc(cfg->threads, sizeof *res->dead);
	res->keys = calloc(cfg->keys, sizeof *res->keys);
	e->traps = aligned_alloc(FB_CACHE_LINE, (size_t)cfg->keys * sizeof *e->traps);
	e->crashes_at = aligned_alloc(FB_CACHE_LINE, (size_t)cfg->keys * sizeof *e->crashes_at);
	if (!e->workers || !res->per_thread_ops || !res->dead || !res->keys || !e->traps ||
	    !e->crashes_at || open_zipf(e))
		return oom(e);
	memset(e->workers, 0, wbytes);
	for (uint32_t k = 0; k < cfg->keys; k++) {
		atomic_init(&e->traps[k].fence, 0);
		atomic_init(&e->traps[k].wake_at, 0);
		atomic_init(&e->traps[k].extra_ns, 0);
		atomic_init(&e->crashes_at[k].fence, 0);
		atomic_init(&e->crashes_at[k].at, 0);
	}
	fb_err r = open_engines(e, drv, res);
	if (!r) /* after the store: its versions say which checker walks it */
		r = open_checks(e, drv->blocking);
	if (!r)
		r = open_nemesis(e);
	if (!r)
		r = open_plans(e);
	if (r == FB_ENOMEM)
		return oom(e);
	if (r) {
		fb_env_close(e);
		return r;
	}
	e->nworkers = cfg->threads;
	for (uint32_t i = 0; i < cfg->threads; i++)
		fb_worker_init(&e->workers[i], e, (uint16_t)(i + 1));
	/* the threaded driver's checkers walk on a thread of their own */
	if (e->feed && drv->blocking && fb_feed_start(e->feed)) {
		fprintf(stderr, "fencebench: cannot start the checker's thread\n");
		fb_env_close(e);
		return FB_ESYS;
	}
	return FB_OK;
}

/* The counters as they stand, summed (the progress line, the CSV). */
void fb_env_sample(fb_env *e, uint64_t t0, fb_sample *s)
{
	memset(s, 0, sizeof *s);
	s->t_s = (double)(fb_clock_now(e->fast) - t0) / 1e9;
	s->ops_min = UINT64_MAX;
	for (uint32_t i = 0; i < e->nworkers; i++) {
		fb_worker *w = &e->workers[i];
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
	s->checked = e->checking;
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		s->accepted[d] += fb_counter_get(&e->net[d].accepted);
		s->rejected[d] += fb_counter_get(&e->net[d].rejected);
		s->store_stale[d] += fb_counter_get(&e->net[d].store_stale);
		s->stale[d] = s->store_stale[d];
		if (e->checking && e->checker[d]) {
			int64_t amount;
			fb_checker_so_far(e->checker[d], &s->stale[d], &amount);
			s->lost[d] = amount / e->cfg->amount;
		}
	}
}

/* ---- results ---- */

static void sum_worker(fb_results *res, const fb_worker *wc, uint32_t i)
{
	fb_worker *w = (fb_worker *)wc;
	res->per_thread_ops[i] = fb_counter_get(&w->ops);
	res->dead[i] = atomic_load_explicit(&w->port.phase, memory_order_relaxed) == FB_PHASE_DEAD;
	res->ops += fb_counter_get(&w->ops);
	res->acquired += fb_counter_get(&w->acquired);
	res->contended += fb_counter_get(&w->contended);
	res->cas_retries += fb_counter_get(&w->cas_retries);
	res->wasted_fences += fb_counter_get(&w->wasted_fences);
	res->checker_stalls += fb_counter_get(&w->checker_stalls);
	res->abandoned += fb_counter_get(&w->abandoned);
	res->local_fooled += fb_counter_get(&w->local_fooled);
	res->renew_ok += fb_counter_get(&w->renew_ok);
	res->renew_believed += fb_counter_get(&w->renew_believed);
	res->crash_takeovers += fb_counter_get(&w->crash_takeovers);
	res->lease.duplicates += w->heard.witness.duplicates;
	res->lease.inversions += w->heard.witness.inversions;
	res->lease.overlaps += w->heard.witness.overlaps;
	res->lease.regressions += w->heard.witness.regressions;
	res->lease.held_past_ttl += w->heard.witness.held_past_ttl;
	res->lease.renew_taken += w->heard.witness.renew_taken;
	res->lease.renew_expired += w->heard.witness.renew_expired;
	res->pause_hit += fb_counter_get(&w->port.hit);
	res->pause_at_point += fb_counter_get(&w->port.at_point);
	res->pause_trapped += fb_counter_get(&w->port.trapped);
	res->paused_ns += fb_counter_get(&w->port.paused_ns);
	res->pause_cut_short += fb_counter_get(&w->port.cut_short);
	for (int f = 0; f < FB_FAULTS; f++) {
		res->fault[f].taken += fb_counter_get(&w->port.taken[f]);
		res->fault[f].over_ttl += fb_counter_get(&w->port.over_ttl[f]);
		res->fault[f].takeovers += fb_counter_get(&w->heard.takeovers[f]);
		res->fault[f].stale_attempts += fb_counter_get(&w->heard.stale_attempts[f]);
	}
	fb_hist_merge(&res->acquire, &w->acquire);
	fb_hist_merge(&res->write, &w->write);
	fb_hist_merge(&res->cycle, &w->cycle);
	fb_hist_merge(&res->takeover, &w->takeover);
	for (int k = 0; k < FB_EOPS; k++)
		fb_hist_merge(&res->eop[k], &w->eop[k]);
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		fb_mode_result *m = &res->mode[d];
		const fb_mode_counters *c = &w->m[d];
		m->writes += fb_counter_get((fb_counter *)&c->writes);
		m->accepted += fb_counter_get((fb_counter *)&c->accepted);
		m->rejected_stale += fb_counter_get((fb_counter *)&c->rejected);
		m->reads_refused += fb_counter_get((fb_counter *)&c->reads_refused);
		m->store_stale += fb_counter_get((fb_counter *)&c->store_stale);
		m->zombie_writes += fb_counter_get((fb_counter *)&c->zombie);
		m->false_rejections += fb_counter_get((fb_counter *)&c->false_rejections);
		m->stale_reads += fb_counter_get((fb_counter *)&c->stale_reads);
		m->refused_other += fb_counter_get((fb_counter *)&c->refused_other);
		m->unjudged += fb_counter_get((fb_counter *)&c->unjudged);
		m->indeterminate += fb_counter_get((fb_counter *)&c->indeterminate);
		m->control_chances += fb_counter_get((fb_counter *)&c->control_chances);
	}
}

static void sum_workers(fb_env *e, fb_results *res)
{
	fb_hist_init(&res->acquire);
	fb_hist_init(&res->write);
	fb_hist_init(&res->cycle);
	fb_hist_init(&res->takeover);
	for (int k = 0; k < FB_EOPS; k++)
		fb_hist_init(&res->eop[k]);
	for (uint32_t i = 0; i < e->nworkers; i++)
		sum_worker(res, &e->workers[i], i);
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		res->mode[d].accepted += fb_counter_get(&e->net[d].accepted);
		res->mode[d].rejected_stale += fb_counter_get(&e->net[d].rejected);
		res->mode[d].false_rejections += fb_counter_get(&e->net[d].false_rejections);
		res->mode[d].refused_other += fb_counter_get(&e->net[d].refused_other);
		res->mode[d].unjudged += fb_counter_get(&e->net[d].unjudged);
		res->mode[d].store_stale += fb_counter_get(&e->net[d].store_stale);
		res->mode[d].indeterminate += fb_counter_get(&e->net[d].indeterminate);
	}
	res->checker_stalls += fb_counter_get(&e->net_stalls);
	res->delayed = fb_counter_get(&e->net_delivered);
	res->fault[FB_FAULT_DELAY].takeovers += fb_counter_get(&e->net_takeovers);
	res->fault[FB_FAULT_DELAY].stale_attempts += fb_counter_get(&e->net_stale);
	res->crashes = res->fault[FB_FAULT_CRASH].taken;
	res->plan_slipped = fb_counter_get(&e->plan_slipped);
}

typedef struct key_ctx {
	fb_results *res;
	fb_discipline d;
	int64_t amount;
} key_ctx;

static void key_result(void *ctx, uint32_t k, const fb_check_key *ck, int64_t balance,
                       int64_t ledger, uint64_t last_fence)
{
	key_ctx *c = ctx;
	fb_key_result *kr = &c->res->keys[k];
	kr->balance[c->d] = balance;
	kr->accepted[c->d] = ck->checked;
	kr->stale[c->d] = ck->stale_accepted;
	kr->lost[c->d] = ledger > 0 ? ledger / c->amount : 0; /* below 0 is named, not counted */
	kr->last_fence[c->d] = last_fence;
}

/* Walk every checker to the end and compare what it found with the store. */
static void check_modes(fb_env *e, fb_results *res)
{
	const fb_config *cfg = e->cfg;
	int64_t *bal = calloc(cfg->keys, sizeof *bal);
	uint64_t *last = calloc(cfg->keys, sizeof *last);
	for (int i = 0; i < e->nactive; i++) {
		fb_discipline d = e->active[i];
		fb_mode_result *m = &res->mode[d];
		key_ctx ctx = {res, d, cfg->amount};
		m->on = true;
		if (!bal || !last) {
			snprintf(m->disagreement, sizeof m->disagreement,
			         "out of memory reading the store back");
			continue;
		}
		if (e->sops->final(e->net_sconn, d, cfg->keys, bal, last) != FB_IO_OK) {
			snprintf(m->disagreement, sizeof m->disagreement,
			         "the store did not answer after the run: %s",
			         e->sops->error(e->net_sconn));
			continue;
		}
		fb_check_verdict v;
		fb_checker_verdict(e->checker[d], d != FB_UNFENCED, bal, last, cfg->initial_balance,
		                   cfg->amount, m->accepted, m->store_stale, &v, key_result, &ctx);
		m->checked = v.checked;
		m->stale_accepted = v.stale_accepted;
		m->chain_breaks = v.chain_breaks;
		m->duplicates = v.duplicates;
		m->lost_updates = v.lost_updates;
		m->lost_history = v.lost_history;
		m->checker_agrees = v.agrees;
		memcpy(m->disagreement, v.disagreement, sizeof m->disagreement);
	}
	free(bal);
	free(last);
}

/* The newer write the story's stale write went behind, as the checker of
 * the store that took it walked it: the unfenced one's first, where the
 * article has it. */
static void newer_from(fb_first_corruption *fc, const fb_check_watch *wt)
{
	static const fb_discipline pref[] = {FB_UNFENCED, FB_WRITE_FENCED, FB_FENCED};
	for (size_t i = 0; fc->found && i < sizeof pref / sizeof pref[0]; i++) {
		fb_discipline d = pref[i];
		if (!wt->seen[d])
			continue;
		const fb_check_rec *b = &wt->newer[d];
		fc->newer_written = true;
		fc->newer_store = (uint8_t)d;
		fc->newer_owner = b->writer;
		fc->newer_fence = b->fence;
		fc->newer_delayed = b->delayed;
		fc->resent = wt->stale[d].resent;
		fc->newer_acquired_at = fb_check_acquired_at(b);
		fc->newer_wrote_at = b->wrote_at;
		memcpy(fc->newer_outcome, b->outcome, sizeof fc->newer_outcome);
		fc->wrote_at = wt->stale[d].wrote_at; /* the stale write's own time */
		return;
	}
}

void fb_env_results(fb_env *e, fb_results *res)
{
	if (e->feed) /* every producer has stopped: the rest of the walk */
		fb_feed_stop(e->feed);
	res->cfg = e->cfg;
	res->clock_name = e->clock->name;
	/* A worker that died in the last TTL may still hold its lease: that
	 * is liveness not yet due, not a failure; its age says which. */
	uint64_t end = fb_clock_now(e->fast);
	for (uint32_t k = 0; k < e->cfg->keys; k++)
		if (atomic_load_explicit(&e->crashes_at[k].fence, memory_order_acquire)) {
			uint64_t at =
			        atomic_load_explicit(&e->crashes_at[k].at, memory_order_relaxed);
			uint64_t age = end > at ? end - at : 0;
			res->crash_pending++;
			if (age > res->crash_pending_age_ns)
				res->crash_pending_age_ns = age;
		}
	sum_workers(e, res);
	bool failed = atomic_load(&e->failed);
	if (failed) /* written before `failed`, by a thread joined since */
		snprintf(res->failure, sizeof res->failure, "%s", e->failure);
	if (e->checking && !failed)
		check_modes(e, res);
	else /* nothing was checked: the stores' own counts, marked so */
		for (int i = 0; i < e->nactive; i++) {
			fb_mode_result *m = &res->mode[e->active[i]];
			m->on = true;
			m->checker_agrees = true;
			m->unchecked = true;
			m->stale_accepted = m->store_stale;
		}
	res->first = e->first;
	res->shaped = e->shaped;
	newer_from(&res->first, &e->watch_first);
	newer_from(&res->shaped, &e->watch_shaped);
	res->false_rejection = e->false_rej; /* written by a thread joined since */
	res->stale_read = e->stale_read;     /* the same */
	snprintf(res->other_reason, sizeof res->other_reason, "%s", e->other_reason);
	for (int k = 0; k < FB_WIT_KINDS; k++)
		fb_witness_example_of(e->witness, (fb_witness_kind)k, &res->lease_example[k]);
	res->lease_unjudged[0] = 0;
	if (e->witnessing && e->leng && e->lops->unjudged)
		e->lops->unjudged(e->leng, res->lease_unjudged, sizeof res->lease_unjudged);
	res->exhausted = atomic_load(&e->exhausted);
	res->core_skew_ns = e->core_skew;
	res->clock_slack_ns = e->lease_slack;
	if (e->core_skew > e->lease_slack) { /* every judgement that rests on timing */
		fb_witness_counts *l = &res->lease, *b = &res->clock_blamed;
		*b = (fb_witness_counts){.inversions = l->inversions,
		                         .overlaps = l->overlaps,
		                         .held_past_ttl = l->held_past_ttl,
		                         .renew_expired = l->renew_expired};
		l->inversions = l->overlaps = l->held_past_ttl = l->renew_expired = 0;
	}
}

/* The injector's node-jump fault: one node's clock steps ns forward. */
static int node_jump(void *ctx, uint64_t ns)
{
	fb_env *e = ctx;
	fb_io io = e->lops->node_jump(e->pause_lconn, ns);
	if (io == FB_IO_OK)
		return 0;
	if (io == FB_IO_ERROR)
		fb_env_failed(e, "lease", e->lops->error(e->pause_lconn));
	return -1;
}

/* The injector's server-pause fault: the lease service stops for ns. */
static int server_pause(void *ctx, uint64_t ns)
{
	fb_env *e = ctx;
	if (e->lops->server_pause(e->pause_lconn, ns) == FB_IO_OK)
		return 0;
	fb_env_failed(e, "lease", e->lops->error(e->pause_lconn));
	return -1;
}

/* Issue 24, the injector's wire faults: one proxied connection (drawn by
 * pick, or the plan's target: proxy << 48 | connection) held or slowed for
 * ns, or reset. The target struck, or -1 when there was none. */
static int64_t wire_fault(void *ctx, fb_fault f, unsigned dir, uint64_t ns, uint64_t pick,
                          bool exact, uint64_t target)
{
	fb_env *e = ctx;
	if (!e->wire.n)
		return -1;
	uint64_t i = exact ? target >> 48 : (pick >> 40) % (uint64_t)e->wire.n;
	if (i >= (uint64_t)e->wire.n)
		return -1;
	unsigned dirs = dir == FB_WIRE_TO_SERVER   ? FB_PROXY_TO_SERVER
	                : dir == FB_WIRE_TO_CLIENT ? FB_PROXY_TO_CLIENT
	                                           : FB_PROXY_BOTH;
	fb_proxy_fault pf = f == FB_FAULT_PARTITION    ? FB_PROXY_PARTITION
	                    : f == FB_FAULT_WIRE_DELAY ? FB_PROXY_DELAY
	                                               : FB_PROXY_RESET;
	int64_t seq = fb_proxy_strike(e->wire.px[i], pf, dirs, ns, pick, exact,
	                              target & ((UINT64_C(1) << 48) - 1));
	if (seq < 0)
		return -1;
	log_outside(e, f, ns, dir | (uint32_t)!strcmp(e->wire.side[i], "--store") << 8);
	return (int64_t)(i << 48 | (uint64_t)seq);
}

/* What the injector is told: the faults' rates and sizes, the clocks. */
fb_injector_config fb_env_injector_config(fb_env *e, const fb_clock *clock)
{
	const fb_config *cfg = e->cfg;
	fb_injector_config ic = {
	        .pause_min_ns = cfg->pause_min_ns,
	        .pause_max_ns = cfg->pause_max_ns,
	        .delay_min_ns = cfg->delay_min_ns,
	        .delay_max_ns = cfg->delay_max_ns,
	        .skew_ns = cfg->skew_ns,
	        .ttl_ns = cfg->ttl_ns,
	        .seed = cfg->seed,
	        .at = cfg->fault_at,
	        .service_clock = cfg->lease_clock == FB_LEASE_CLOCK_REALTIME ? &e->service : NULL,
	        .steps = &e->service_steps,
	        .log = e->log,
	        .plan = e->plan.n ? &e->plan : NULL,
	        .server_pause = e->pause_lconn ? server_pause : NULL,
	        .server_ctx = e,
	        .server_pauses = &e->server_pauses,
	        .node_jump = e->jumping ? node_jump : NULL,
	        .node_jumps = &e->node_jumps,
	        .wire_min_ns = {cfg->partition_min_ns, cfg->wire_delay_min_ns},
	        .wire_max_ns = {cfg->partition_max_ns, cfg->wire_delay_max_ns},
	        .wire = e->wire.n ? wire_fault : NULL, /* issue 24 */
	        .nemesis = e->nemesis ? nemesis_fault : NULL,
	        .nemesis_names = e->n_nemesis_names,
	        .nemesis_min_ns = cfg->nemesis_min_ns,
	        .nemesis_max_ns = cfg->nemesis_max_ns,
	        .clock = clock,
	};
	for (int f = 0; f < FB_FAULTS; f++)
		if (fb_config_fault(cfg, (fb_fault)f))
			ic.rate[f] = fb_config_rate(cfg, (fb_fault)f);
	return ic;
}

/* --plan-out: the faults taken, as a plan. */
void fb_env_write_plan(fb_env *e, fb_results *res)
{
	if (!e->log)
		return;
	char comment[1024];
	fb_config_replay(e->cfg, comment, sizeof comment);
	res->plan_recorded = atomic_load(&e->log->n);
	res->plan_dropped = fb_plan_log_dropped(e->log);
	if (fb_plan_write(e->log, e->cfg->plan_out_path, comment)) {
		fprintf(stderr, "fencebench: --plan-out: cannot write '%s': errno=%d (%s)\n",
		        e->cfg->plan_out_path, errno, strerror(errno));
		res->plan_unwritten = true;
	}
}
