/*
 * fencebench: is your distributed lock a lease or a safety boundary?
 *
 * Exit codes: 0 success, 1 a fenced discipline failed (or the checker
 * disagreed with a store), 2 usage error, 3 runtime error, 128 + signal
 * when interrupted by SIGINT, SIGTERM or SIGHUP (the results measured so far
 * are still written; stop.h says which signals stop a run).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "cycle.h"
#include "outfile.h"
#include "output.h"
#include "options.h"
#include "registry.h"
#include "report.h"
#include "run.h"
#include "sim.h"
#include "stop.h"
#include "floor.h"

static fb_report report;

/* A second stop signal while results are being written: leave no
 * temporary file behind and go at once. */
static void on_second_signal(int sig)
{
	fb_report_abandon(&report);
	_exit(128 + sig);
}

/* After the run: a second stop signal goes at once. Only those the run
 * waited on: one the process started ignoring stays ignored. */
static void arm_second_signal(void)
{
	sigset_t set;
	fb_stop_set(&set);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_second_signal;
	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(&set, sig) == 1)
			sigaction(sig, &sa, NULL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

/* A stop signal that arrived after the run's own wait (while it was
 * being summed up) is still the first: it interrupts, it does not abort. */
static void take_pending_signal(fb_results *res)
{
	int sig = fb_stop_take();
	if (sig > 0 && !res->interrupted) {
		res->interrupted = true;
		res->signal = sig;
	}
}

/* A run that could not start: 2 for bad input, 3 for the rest, 128 + the
 * signal when a stop signal ended a wait before it (a --plan FIFO that no
 * writer opened: the line is said already). */
static int failed_start(fb_err err)
{
	fb_report_abandon(&report);
	int sig = fb_stop_take();
	return sig ? 128 + sig : err == FB_EINVAL ? 2 : 3;
}

/* The machine's own limit at this run's thread count: the bare pipeline
 * with the run's fence source, measured right after the run. Not with a
 * remote engine: in-process atomics say nothing of a round trip's bound. */
static void measure_floor(const fb_config *cfg, fb_results *res)
{
	take_pending_signal(res);
	if (cfg->no_floor || res->interrupted || res->remote)
		return;
	fb_floor_prim p = cfg->fence == FB_FENCE_GLOBAL ? FB_FLOOR_PIPELINE_GLOBAL
	                                                : FB_FLOOR_PIPELINE_PER_KEY;
	fb_floor_result fr;
	/* where the workers ran (--cpus, --pin): an unpinned pair of threads
	 * may share one CPU, and a time-sliced pair bounces no lines */
	const fb_placement place = {cfg->cpus, cfg->n_cpus, cfg->pin};
	if (fb_floor_measure_on(cfg->threads, cfg->keys, 500000000, 1u << p, &place, &fr) == FB_OK)
		res->floor_ops_s = fb_floor_rate(&fr, p);
}

static void clear_progress(void)
{
	if (report.progress && report.tty)
		fprintf(stderr, "\r%-100s\r", "");
}

/* A single run's epilogue, the same for either driver: the summary, the
 * exit code (a stop signal's; 3 for a run that failed after it measured,
 * or whose results could not be written), and the results written. err:
 * the driver's, FB_OK, FB_EFENCE or FB_EENGINE. */
static int epilogue(const fb_config *cfg, fb_results *res, fb_err err)
{
	take_pending_signal(res);
	arm_second_signal();
	int code = fb_report_summary(&report, stdout, res);
	if (res->interrupted)
		code = 128 + res->signal;
	else if ((err == FB_EFENCE || err == FB_EENGINE) && code == 0)
		code = 3; /* what was measured is written all the same; a violation
		             found before the failure still decides the exit code */
	if (fb_report_write(&report, res, code) && !res->interrupted)
		code = 3;
	if (cfg->hdr_prefix && fb_report_hdr(cfg->hdr_prefix, res) && !res->interrupted)
		code = 3;
	if (res->plan_unwritten && code == 0)
		code = 3;
	return code;
}

static int single(const fb_config *cfg)
{
	fb_report_header(stdout, cfg);
	fflush(stdout);
	fb_report_row_begin(&report, cfg);
	fb_results res;
	fb_err err = fb_run(cfg, fb_report_tick, &report, &res);
	if (err != FB_OK && err != FB_EFENCE && err != FB_EENGINE)
		return failed_start(err); /* a bad plan file or CPU list is bad input */
	clear_progress();
	measure_floor(cfg, &res);
	int code = epilogue(cfg, &res, err);
	fb_results_free(&res);
	return code;
}

/* What a sweep's rows came to, for its one verdict line. */
typedef struct sweep_tally {
	uint32_t ran, failed, corrupted, vacuous;
} sweep_tally;

/* One row of a sweep: its run, its line, its place in the document. False:
 * the sweep stops here (a failure to start, the engine gone, a signal). */
static bool sweep_row(const fb_config *row, bool *first, int *code, int *sig, fb_err *err,
                      sweep_tally *t)
{
	fb_report_row_begin(&report, row);
	fb_results res;
	fb_err e = fb_run(row, fb_report_tick, &report, &res);
	if (e != FB_OK)
		*err = e; /* the first failure of any row stays */
	if (e != FB_OK && e != FB_EFENCE && e != FB_EENGINE)
		return false;
	clear_progress();
	measure_floor(row, &res);
	take_pending_signal(&res);
	fb_report_sweep_line(stdout, row, &res, *first);
	*first = false;
	fb_report_add_row(&report, row, &res);
	int v = fb_report_verdict(&res);
	*code |= v;
	t->ran++;
	t->failed += (uint32_t)v;
	t->corrupted += res.mode[FB_UNFENCED].stale_accepted ||
	                res.mode[FB_UNFENCED].lost_updates ||
	                res.mode[FB_WRITE_FENCED].lost_updates;
	t->vacuous += fb_report_vacuous(&res);
	bool go = !res.interrupted && e != FB_EENGINE; /* the engine is gone: stop */
	if (res.interrupted)
		*sig = res.signal;
	fb_results_free(&res);
	return go;
}

/* Every combination of the lists, one run each, one document, one verdict. */
static int sweep(const fb_config *cfg)
{
	uint32_t fences[2], nf = 0;
	for (int f = 0; f < 2; f++)
		if (cfg->fences & (1u << f))
			fences[nf++] = (uint32_t)f;
	uint32_t total = cfg->n_threads * nf * cfg->n_dist * cfg->n_pause_rate;
	fb_report_header(stdout, cfg);
	printf("sweep: %u %s of %.4gs\n\n", total, total == 1 ? "run" : "runs",
	       (double)cfg->duration_ns / 1e9);
	int code = 0, sig = 0;
	bool first = true, go = true;
	fb_err err = FB_OK;
	sweep_tally t = {0};
	for (uint32_t i = 0; i < total && go; i++) {
		/* row i of the lists' product: threads, then fence, dist, pause rate */
		uint32_t p = i % cfg->n_pause_rate, d = i / cfg->n_pause_rate % cfg->n_dist,
		         f = i / (cfg->n_pause_rate * cfg->n_dist) % nf,
		         th = i / (cfg->n_pause_rate * cfg->n_dist * nf);
		fb_config row = *cfg;
		row.threads = cfg->threads_list[th];
		row.fence = (fb_fence_source)fences[f];
		row.dist = cfg->dist_list[d];
		row.pause_rate = cfg->pause_rate_list[p];
		go = sweep_row(&row, &first, &code, &sig, &err, &t);
	}
	arm_second_signal();
	if (err != FB_OK && err != FB_EFENCE && first)
		return failed_start(err);
	if (sig)
		code = 128 + sig;
	else if (err != FB_OK)
		code = 3;
	char replay[1024];
	fb_config_replay(cfg, replay, sizeof replay);
	if (t.ran < total)
		printf("\n%s after %u of %u rows: the rows above are what was measured\n",
		       sig ? "interrupted" : "stopped", t.ran, total);
	printf("\n%s: %u of %u rows run; a fenced discipline failed in %u; write-fenced or "
	       "unfenced corrupted in %u; vacuous (no stale write attempted) in %u; replay: %s\n",
	       t.failed             ? "FAIL !!!"
	       : sig                ? "INTERRUPTED"
	       : err != FB_OK       ? "INCOMPLETE"
	       : t.vacuous == t.ran ? "VACUOUS"
	                            : "PASS",
	       t.ran, total, t.failed, t.corrupted, t.vacuous, replay);
	if (fb_report_write_sweep(&report, code, sig != 0, sig) && !sig)
		code = 3;
	return code;
}

/* A deterministic seed's configuration: the seed it runs, replayed alone. */
static fb_config seed_row(const fb_config *cfg, uint64_t seed)
{
	fb_config row = *cfg;
	row.seed = row.seed_lo = row.seed_hi = seed;
	row.seeds_given = false;
	return row;
}

/* --deterministic, one seed: its whole report, as a stress run's. stdout
 * is the same for the same configuration and seed: the wall time goes to
 * stderr. */
static int deterministic_one(const fb_config *cfg)
{
	const fb_clock *wall = fb_clock_monotonic();
	uint64_t t0 = fb_clock_now(wall);
	fb_config row = seed_row(cfg, cfg->seed_lo);
	fb_results res;
	fb_report_row_begin(&report, &row);
	fb_err err = fb_sim_run(&row, row.seed, fb_report_tick, &report, &res);
	if (err != FB_OK && err != FB_EFENCE)
		return failed_start(err);
	clear_progress();
	int code = epilogue(cfg, &res, err); /* err: FB_OK or FB_EFENCE here */
	fflush(stdout);
	if (!cfg->quiet)
		fprintf(stderr, "fencebench: %llu steps in %.3f s\n",
		        (unsigned long long)res.sim.steps, (double)(fb_clock_now(wall) - t0) / 1e9);
	fb_results_free(&res);
	return code;
}

/* A --swarm seed's configuration, or exit 3's line when the draw is one
 * the options refuse (a fencebench bug: every menu is meant to be valid). */
static bool swarm_row(const fb_config *cfg, uint64_t seed, fb_config *row)
{
	if (fb_config_swarm(cfg, seed, row) == FB_PARSE_RUN)
		return true;
	fprintf(stderr,
	        "fencebench: --swarm: seed %llu drew a configuration the options refuse (the "
	        "line above): a fencebench bug\n",
	        (unsigned long long)seed);
	return false;
}

/* --deterministic --seeds A..B: a line a seed, stopping at the first fenced
 * violation or a stop signal, every seed run to its end a row of one
 * document (the seed a signal cut short is left out: it replays nothing). */
static int deterministic_sweep(const fb_config *cfg)
{
	const fb_clock *wall = fb_clock_monotonic();
	uint64_t t0 = fb_clock_now(wall), steps = 0, ran = 0, corrupted = 0, vacuous = 0;
	uint64_t total = cfg->seed_hi - cfg->seed_lo + 1;
	printf("seeds %llu..%llu, stopping at the first fenced violation%s\n\n",
	       (unsigned long long)cfg->seed_lo, (unsigned long long)cfg->seed_hi,
	       cfg->swarm ? "; each seed draws its configuration (--swarm), its replay line "
	                    "below it"
	                  : "");
	int code = 0, sig = 0;
	for (uint64_t seed = cfg->seed_lo;; seed++) {
		fb_config row = seed_row(cfg, seed);
		if (cfg->swarm && !swarm_row(cfg, seed, &row)) {
			code = 3;
			break;
		}
		fb_results res;
		fb_report_row_begin(&report, &row);
		if (fb_sim_run(&row, seed, NULL, NULL, &res) != FB_OK) {
			code = 3;
			break;
		}
		if (res.interrupted) {
			sig = res.signal;
			fb_results_free(&res);
			break;
		}
		ran++;
		steps += res.sim.steps;
		int v = fb_report_verdict(&res);
		bool corrupt = res.mode[FB_UNFENCED].stale_accepted ||
		               res.mode[FB_UNFENCED].lost_updates ||
		               res.mode[FB_WRITE_FENCED].lost_updates;
		corrupted += corrupt;
		vacuous += fb_report_vacuous(&res);
		fb_report_seed_line(stdout, &res);
		if (v || corrupt || cfg->swarm) { /* a swarm seed's configuration is its own */
			char replay[1024];
			fb_config_replay(&row, replay, sizeof replay);
			printf("  replay: %s\n", replay);
		}
		fb_report_add_row(&report, &row, &res);
		fb_results_free(&res);
		fflush(stdout);
		if (v)
			code = 1;
		if (v || seed == cfg->seed_hi)
			break;
		if ((sig = fb_stop_take())) /* between seeds: the one just run counts */
			break;
	}
	arm_second_signal();
	if (sig)
		printf("\ninterrupted after %llu of %llu seeds: the seeds above are what was run\n",
		       (unsigned long long)ran, (unsigned long long)total);
	printf("\n%s: %llu seeds run, %s; write-fenced or unfenced corrupted in %llu, vacuous "
	       "%llu\n",
	       code == 1 ? "FAIL !!!"
	       : code    ? "ERROR"
	       : sig     ? "INTERRUPTED"
	                 : "PASS",
	       (unsigned long long)ran,
	       code == 1 ? "a fenced violation (replay above)" : "no fenced violation",
	       (unsigned long long)corrupted, (unsigned long long)vacuous);
	fflush(stdout);
	if (sig && code != 1)
		code = 128 + sig;
	if (fb_report_write_sweep(&report, code, sig != 0, sig) && !code)
		code = 3;
	if (!cfg->quiet)
		fprintf(stderr, "fencebench: %llu seeds, %llu steps in %.3f s\n",
		        (unsigned long long)ran, (unsigned long long)steps,
		        (double)(fb_clock_now(wall) - t0) / 1e9);
	return code;
}

static int deterministic(const fb_config *cfg)
{
	if (cfg->swarm && cfg->seed_lo == cfg->seed_hi) { /* one seed: its own header */
		fb_config row;
		if (!swarm_row(cfg, cfg->seed_lo, &row))
			return 3;
		fb_report_header(stdout, &row);
		fflush(stdout);
		return deterministic_one(&row);
	}
	fb_report_header(stdout, cfg);
	fflush(stdout);
	return cfg->seed_lo == cfg->seed_hi ? deterministic_one(cfg) : deterministic_sweep(cfg);
}

/* --prepare-only: reset the engines of cfg (forget every lease and fence,
 * seed the balances, drop the history) and close them: the first step of a
 * shared run. Prints what it did; on failure the reason, on stderr. */
static fb_err prepare_only(const fb_config *cfg)
{
	const fb_lease_ops *lops = fb_lease_engine(cfg->lease_url);
	const fb_store_ops *sops = fb_store_engine(cfg->store_url);
	fb_engine_config ec = fb_env_engine_config(cfg, fb_clock_fast());
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

/* One output option's path, judged: 0, or -1 with the line said. */
static int check_output(const char *opt, const char *path)
{
	fb_outfile o;
	char why[400];
	if (!path || fb_outfile_check(path, &o, why, sizeof why) == 0)
		return 0;
	fprintf(stderr, "fencebench: %s: '%s' cannot be written: %s\n", opt, path, why);
	return -1;
}

/* Every output the run will write, judged before it starts, by option: a
 * typo must not cost a 60 s run. An output that cannot be written is a
 * runtime failure: exit 3. */
static int check_outputs(const fb_config *cfg)
{
	struct stat st;
	/* a file where the directory should be is that, not a permission */
	if (stat(cfg->results_dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "fencebench: -o/--results-dir: '%s' is not a directory\n",
		        cfg->results_dir);
		return -1;
	}
	if (fb_mkdir_p(cfg->results_dir) || access(cfg->results_dir, W_OK | X_OK)) {
		fprintf(stderr, "fencebench: -o/--results-dir: '%s' cannot be written: %s\n",
		        cfg->results_dir, strerror(errno));
		return -1;
	}
	if (check_output("--json", cfg->json_path) ||
	    check_output("--plan-out", cfg->plan_out_path) ||
	    check_output("--history", cfg->history_path))
		return -1;
	if (cfg->hdr_prefix) {
		static const char *const names[] = {"acquire", "write", "cycle"};
		for (int i = 0; i < 3; i++) {
			char path[4200];
			snprintf(path, sizeof path, "%s.%s.hdr", cfg->hdr_prefix, names[i]);
			if (check_output("--hdr-file", path))
				return -1;
		}
	}
	return 0;
}

/* `fencebench NAME ...`: the subcommands, each a main of its own. */
static const fb_command commands[] = {FB_COMMANDS};

int main(int argc, char **argv)
{
	/* A server that closes its connection while a worker (or `check`)
	 * writes to it must end the run with its results written (exit 3), not
	 * kill the process: writes to a dead socket fail with EPIPE instead. */
	signal(SIGPIPE, SIG_IGN);
	if (argc > 1)
		for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
			if (commands[i].main && strcmp(argv[1], commands[i].name) == 0)
				return commands[i].main(argc - 1, argv + 1);

	/* Blocked here, inherited by every thread: the run waits for the stop
	 * signals with sigtimedwait (the simulator looks for them between
	 * steps), workers unblock only SIGUSR1 (the pause). */
	fb_stop_block();
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	fb_config cfg;
	fb_config_defaults(&cfg);
	switch (fb_config_parse(&cfg, argc, argv)) {
	case FB_PARSE_EXIT0:
		return 0;
	case FB_PARSE_USAGE:
		return 2;
	case FB_PARSE_RUN:
		break;
	}
	/* each engine judges its URL, before anything starts: a typo is input */
	if (!fb_registry_check_urls(cfg.lease_url, cfg.store_url))
		return 2;

	if (check_outputs(&cfg))
		return 3;
	if (cfg.prepare_only) {
		fb_err e = prepare_only(&cfg);
		return e == FB_OK ? 0 : e == FB_EINVAL ? 2 : 3;
	}
	fb_report_open(&report, &cfg);
	if (cfg.deterministic)
		return deterministic(&cfg);
	int code = fb_config_is_sweep(&cfg) ? sweep(&cfg) : single(&cfg);
	return code;
}
