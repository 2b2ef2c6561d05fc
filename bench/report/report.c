#define _GNU_SOURCE
#include "report.h"
#include "metrics.h"
#include "output.h"
#include "story.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#define G(v) fb_grouped((char[48]){0}, 48, (double)(v))

static const char *dur(char *buf, size_t len, uint64_t ns)
{
	fb_format_duration(buf, len, ns);
	return buf;
}

#define D(ns) dur((char[32]){0}, 32, (ns))

/* "1 thread", "2 threads": words that add up */
#define PL(n, one, many) ((n) == 1 ? (one) : (many))

/* A run above its floor pipeline: the floor is then no bound for that
 * configuration, and the line says so rather than call it a floor. */
#define FLOOR_NO_BOUND                                                                             \
	"; above 1: no bound for this run (the pipeline's threads all run flat out and "           \
	"contend on every step; this run's also waited and slept, contending less, or the "        \
	"machine was busier while the floor ran)"

/* The CSV's counts after t_s and mode, in the order fb_report_tick writes
 * them; then the faults, the run's settings and the updates lost. */
static const fb_metric_id csv_counts[] = {
        FB_M_OPS,           FB_M_THROUGHPUT,  FB_M_WRITES, FB_M_ACCEPTED, FB_M_REJECTED_STALE,
        FB_M_READS_REFUSED, FB_M_STORE_STALE,
};

void fb_report_open(fb_report *rp, const fb_config *cfg)
{
	memset(rp, 0, sizeof *rp);
	rp->cfg = cfg;
	fb_clock_wall_stamp(rp->stamp, sizeof rp->stamp, rp->started_at, sizeof rp->started_at);
	const char *dir = cfg->results_dir;
	snprintf(rp->json_path, sizeof rp->json_path, "%s/fencebench-%s-%d.json", dir, rp->stamp,
	         (int)getpid());
	snprintf(rp->csv_path, sizeof rp->csv_path, "%s/fencebench-%s-%d.csv", dir, rp->stamp,
	         (int)getpid());
	fb_outfile csv;
	char why[300] = "";
	rp->dir_ok = fb_mkdir_p(dir) == 0 &&
	             fb_outfile_check(rp->csv_path, &csv, why, sizeof why) == 0 &&
	             fb_outfile_begin(&csv, &rp->csv_out) == 0;
	if (rp->dir_ok) {
		rp->csv = rp->csv_out.f;
		fprintf(rp->csv, "t_s,mode");
		for (size_t i = 0; i < sizeof csv_counts / sizeof csv_counts[0]; i++)
			fprintf(rp->csv, ",%s", fb_metrics[csv_counts[i]].csv);
		fprintf(rp->csv, ",faults,threads,fence,dist,pause_rate,%s\n",
		        fb_metrics[FB_M_LOST_UPDATES].csv);
	} else {
		snprintf(rp->dir_error, sizeof rp->dir_error,
		         "results directory '%s' cannot be written: %s", dir,
		         why[0] ? why : strerror(errno));
		fprintf(stderr, "fencebench: %s; the run goes on, its summary is printed, exit 3\n",
		        rp->dir_error);
	}
	rp->tty = isatty(STDERR_FILENO);
	rp->progress = !cfg->quiet && (cfg->progress == FB_PROGRESS_ALWAYS ||
	                               (cfg->progress == FB_PROGRESS_AUTO && rp->tty));
}

/* The sample, for the JSON's series. Out of memory: the series stops
 * growing, and the run goes on. */
static void keep_sample(fb_report *rp, const fb_sample *s)
{
	if (rp->nseries == rp->series_cap) {
		size_t cap = rp->series_cap ? 2 * rp->series_cap : 64;
		fb_sample *grown = realloc(rp->series, cap * sizeof *grown);
		if (!grown)
			return;
		rp->series = grown;
		rp->series_cap = cap;
	}
	rp->series[rp->nseries++] = *s;
}

/* Cycles per second from sample a to sample b. */
static double ops_rate(const fb_sample *a, const fb_sample *b)
{
	double dt = b->t_s - a->t_s;
	return dt > 0 ? (double)(b->ops - a->ops) / dt : 0;
}

void fb_report_tick(void *ctx, const fb_sample *s)
{
	fb_report *rp = ctx;
	const fb_config *cfg = rp->cfg, *row = rp->row ? rp->row : rp->cfg;
	double rate = ops_rate(&rp->last, s);
	if (rp->csv) {
		for (int d = 0; d < FB_DISCIPLINES; d++) {
			if (!(cfg->modes & (1u << d)))
				continue;
			char dist[64];
			fb_dist_format(dist, sizeof dist, &row->dist);
			char lost[24] = "";
			if (s->checked)
				snprintf(lost, sizeof lost, "%lld", (long long)s->lost[d]);
			fprintf(rp->csv,
			        "%.3f,%s,%llu,%.0f,%llu,%llu,%llu,%llu,%llu,%llu,%u,%s,%s,%g,%s\n",
			        s->t_s, fb_discipline_key((fb_discipline)d),
			        (unsigned long long)s->ops, rate, (unsigned long long)s->writes[d],
			        (unsigned long long)s->accepted[d],
			        (unsigned long long)s->rejected[d],
			        (unsigned long long)s->reads_refused[d],
			        (unsigned long long)s->store_stale[d],
			        (unsigned long long)s->faults, row->threads,
			        fb_fence_source_name(row->fence), dist, row->pause_rate, lost);
		}
		fflush(rp->csv);
	}
	keep_sample(rp, s);
	if (rp->progress) {
		char line[320];
		int n = snprintf(line, sizeof line, "[%5.1fs/%s] %s ops/s", s->t_s,
		                 D(cfg->duration_ns), G(rate));
		if (cfg->modes & (1u << FB_UNFENCED))
			n += snprintf(line + n, sizeof line - (size_t)n,
			              "  unfenced stale accepted %s",
			              G(s->store_stale[FB_UNFENCED]));
		if (cfg->modes & (1u << FB_FENCED))
			n += snprintf(line + n, sizeof line - (size_t)n, "  fenced rejected %s",
			              G(s->rejected[FB_FENCED] + s->reads_refused[FB_FENCED]));
		n += snprintf(line + n, sizeof line - (size_t)n, "  faults %s", G(s->faults));
		/* locktorture's starvation flag: the slowest thread below half the fastest */
		double fair = s->ops_max ? (double)s->ops_min / (double)s->ops_max : 1.0;
		snprintf(line + n, sizeof line - (size_t)n, "  fairness %.2f%s", fair,
		         fair < 0.5 ? " ???" : "");
		if (rp->tty)
			fprintf(stderr, "\r%-100s", line);
		else
			fprintf(stderr, "%s\n", line);
		fflush(stderr);
	}
	rp->last = *s;
}

/* "2 threads", or a sweep's "threads 1,2,4": the header describes every
 * row, not the first. */
static void thread_words(char *buf, size_t len, const fb_config *cfg, const char *one,
                         const char *many)
{
	if (cfg->n_threads <= 1) {
		snprintf(buf, len, "%u %s", cfg->threads, PL(cfg->threads, one, many));
		return;
	}
	size_t n = (size_t)snprintf(buf, len, "%s ", many);
	for (uint32_t i = 0; i < cfg->n_threads && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%u", i ? "," : "", cfg->threads_list[i]);
}

/* The faults, each with its rate and size; a swept pause rate as its list. */
static bool header_faults(FILE *out, const fb_config *cfg)
{
	bool any = false;
	if (fb_config_fault(cfg, FB_FAULT_PAUSE) || cfg->n_pause_rate > 1) {
		char rates[200] = "";
		for (uint32_t i = 0; i < cfg->n_pause_rate; i++)
			snprintf(rates + strlen(rates), sizeof rates - strlen(rates), "%s%g",
			         i ? "," : "", cfg->pause_rate_list[i]);
		fprintf(out, "pauses %s/s x %s-%s at %s  ", rates, D(cfg->pause_min_ns),
		        D(cfg->pause_max_ns), fb_fault_at_names[cfg->fault_at]);
		any = true;
	}
	if (fb_config_fault(cfg, FB_FAULT_SKEW)) {
		/* what the steps act on: the clock this run reads */
		if (cfg->lease_clock == FB_LEASE_CLOCK_REALTIME)
			fprintf(out, "skew %g/s: the lease service's wall clock steps %s forward  ",
			        cfg->skew_rate, D(cfg->skew_ns));
		else if (cfg->check_lease == FB_CHECK_LOCAL)
			fprintf(out,
			        "skew %g/s: a client's own clock runs slow (x%g) or steps %s back, "
			        "and its lease check believes it  ",
			        cfg->skew_rate, 1 - cfg->skew_drift, D(cfg->skew_ns));
		else
			fprintf(out, "skew %g/s on no clock this run reads  ", cfg->skew_rate);
		any = true;
	}
	if (fb_config_fault(cfg, FB_FAULT_DELAY)) {
		fprintf(out, "delays %g/s x %s-%s  ", cfg->delay_rate, D(cfg->delay_min_ns),
		        D(cfg->delay_max_ns));
		any = true;
	}
	if (fb_config_fault(cfg, FB_FAULT_CRASH)) {
		fprintf(out, "crashes %g/s  ", cfg->crash_rate);
		any = true;
	}
	if (fb_config_fault(cfg, FB_FAULT_RENEW)) {
		fprintf(out, "late renewals %g/s  ", cfg->renew_rate);
		any = true;
	}
	if (fb_config_fault(cfg, FB_FAULT_RETRY)) {
		fprintf(out, "lost acks %g/s  ", cfg->retry_rate);
		any = true;
	}
	if (fb_config_fault(cfg, FB_FAULT_SERVER_PAUSE)) {
		fprintf(out, "server pauses %g/s x %s-%s  ", cfg->server_pause_rate,
		        D(cfg->pause_min_ns), D(cfg->pause_max_ns));
		any = true;
	}
	if (fb_config_fault(cfg, FB_FAULT_NODE_JUMP)) {
		fprintf(out, "node clock jumps %g/s x %s  ", cfg->node_jump_rate, D(cfg->skew_ns));
		any = true;
	}
	if (fb_config_fault(cfg, FB_FAULT_PARTITION)) { /* issue 24 */
		fprintf(out, "partitions %g/s x %s-%s  ", cfg->partition_rate,
		        D(cfg->partition_min_ns), D(cfg->partition_max_ns));
		any = true;
	}
	if (fb_config_fault(cfg, FB_FAULT_WIRE_DELAY)) {
		fprintf(out, "slow wires %g/s x %s-%s  ", cfg->wire_delay_rate,
		        D(cfg->wire_delay_min_ns), D(cfg->wire_delay_max_ns));
		any = true;
	}
	if (fb_config_fault(cfg, FB_FAULT_WIRE_RESET)) {
		fprintf(out, "connection resets %g/s  ", cfg->wire_reset_rate);
		any = true;
	}
	if (fb_config_fault(cfg, FB_FAULT_NEMESIS)) {
		fprintf(out, "nemesis %g/s x %s-%s (%s)  ", cfg->nemesis_rate,
		        D(cfg->nemesis_min_ns), D(cfg->nemesis_max_ns), cfg->nemesis_names);
		any = true;
	}
	return any;
}

void fb_report_header(FILE *out, const fb_config *cfg)
{
	if (cfg->bug != FB_BUG_NONE)
		fprintf(out,
		        "!!! PLANTED BUG %s: %s. This run tests the checkers, not the design.\n",
		        fb_bug_names[cfg->bug], fb_bug_what[cfg->bug]);
	char who[200];
	if (cfg->swarm) { /* what the seeds draw is in their replay lines */
		fprintf(out,
		        "fencebench %s  deterministic swarm  %llu steps a seed  seeds %llu..%llu: "
		        "each draws the options not given\n",
		        FB_VERSION, (unsigned long long)cfg->steps,
		        (unsigned long long)cfg->seed_lo, (unsigned long long)cfg->seed_hi);
		return;
	}
	if (cfg->deterministic) {
		thread_words(who, sizeof who, cfg, "worker", "workers");
		fprintf(out, "fencebench %s  deterministic  %s  %llu steps a seed  ", FB_VERSION,
		        who, (unsigned long long)cfg->steps);
	} else {
		thread_words(who, sizeof who, cfg, "thread", "threads");
		fprintf(out, "fencebench %s  %s  %s  ", FB_VERSION, who, D(cfg->duration_ns));
	}
	fprintf(out, "%u %s  ttl %s  ", cfg->keys, PL(cfg->keys, "key", "keys"), D(cfg->ttl_ns));
	if (!header_faults(out, cfg))
		fprintf(out, "no faults  ");
	if (cfg->store_faults)
		fprintf(out, "(pauses, lost acks and delays: the default against a store not "
		             "fencebench's own)  ");
	if (cfg->work_max_ns)
		fprintf(out, "work %s-%s  ", D(cfg->work_min_ns), D(cfg->work_max_ns));
	if (cfg->check_lease != FB_CHECK_NONE)
		fprintf(out, "check %s  ", fb_check_lease_names[cfg->check_lease]);
	if (cfg->lease_clock != FB_LEASE_CLOCK_MONOTONIC)
		fprintf(out, "lease clock %s  ", fb_lease_clock_names[cfg->lease_clock]);
	if (cfg->plan_path)
		fprintf(out, "plan %s  ", cfg->plan_path);
	if (cfg->lease_url || cfg->store_url) {
		char l[256] = "inproc", s[256] = "inproc";
		if (cfg->lease_url)
			fb_url_redact(cfg->lease_url, l, sizeof l);
		if (cfg->store_url)
			fb_url_redact(cfg->store_url, s, sizeof s);
		fprintf(out, "lease %s  store %s  ", l, s);
		if (cfg->client_id)
			fprintf(out, "client %u  ", cfg->client_id);
	}
	fprintf(out, "fence %s  op %s  ",
	        cfg->fences == ((1u << FB_FENCE_GLOBAL) | (1u << FB_FENCE_PER_KEY))
	                ? "global,per-key"
	                : fb_fence_source_name(cfg->fence),
	        cfg->op == FB_OP_RMW ? "rmw" : "debit");
	if (cfg->n_dist > 1 || cfg->dist.kind != FB_DIST_UNIFORM) {
		fprintf(out, "dist ");
		for (uint32_t i = 0; i < cfg->n_dist; i++) {
			char d[64];
			fb_dist_format(d, sizeof d, &cfg->dist_list[i]);
			fprintf(out, "%s%s", i ? "," : "", d);
		}
		fprintf(out, "  ");
	}
	if (cfg->deterministic && cfg->seed_lo != cfg->seed_hi)
		fprintf(out, "seeds %llu..%llu\n", (unsigned long long)cfg->seed_lo,
		        (unsigned long long)cfg->seed_hi);
	else
		fprintf(out, "seed %llu\n", (unsigned long long)cfg->seed);
}

static double throughput(const fb_results *res)
{
	return res->elapsed_s > 0 ? (double)res->ops / res->elapsed_s : 0;
}

static double fairness(const fb_results *res);

/* Starvation, judged against what the scheduler could give: a live thread
 * that made no progress at all, or an uneven split (below half) with no
 * more threads than CPUs to run them. 64 threads on 2 cores can never get
 * an even split: there an uneven one is the scheduler's, not starvation. */
static bool starved(const fb_results *res)
{
	const fb_config *cfg = res->cfg;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	uint32_t cpus = cfg->n_cpus ? cfg->n_cpus : (uint32_t)(online > 0 ? online : 1);
	bool none = false;
	for (uint32_t i = 0; res->ops && i < cfg->threads; i++)
		none |= !res->dead[i] && res->per_thread_ops[i] == 0;
	return none || (cfg->threads <= cpus && fairness(res) < 0.5);
}

static double fairness(const fb_results *res)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	for (uint32_t i = 0; i < res->cfg->threads; i++) {
		if (res->dead[i])
			continue;
		uint64_t v = res->per_thread_ops[i];
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
	}
	return hi ? (double)lo / (double)hi : 1.0;
}

/* Stale writes attempted: rejected ones and accepted ones. */
static uint64_t stale_attempts(const fb_results *res)
{
	uint64_t n = 0;
	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (res->mode[d].on)
			n += res->mode[d].rejected_stale + res->mode[d].reads_refused +
			     res->mode[d].stale_accepted;
	return n;
}

bool fb_report_vacuous(const fb_results *res)
{
	return stale_attempts(res) == 0;
}

/* The fenced column's store said its reads carry no token ("fenced_reads":
 * false): it is the article's write-fenced store, whose lost updates under
 * rmw, and stale reads served, are its design, not a broken promise. Its
 * writes are judged as ever. */
static bool reads_declared_unfenced(const fb_results *res)
{
	return res->unfenced_reads & (1u << FB_FENCED);
}

/* The fenced column broke a promise it made (the checker's agreement
 * aside). */
static bool fenced_broken(const fb_results *res)
{
	const fb_mode_result *f = &res->mode[FB_FENCED];
	return f->stale_accepted || f->false_rejections ||
	       (!reads_declared_unfenced(res) && (f->lost_updates || f->stale_reads));
}

/* Issue 27: the write-fenced control lost no update in a run that gave it
 * chances where a write-fenced store must lose one (bench/drive/control.h:
 * a correct one loses at every chance, so one is enough). */
bool fb_report_not_a_control(const fb_results *res)
{
	const fb_mode_result *w = &res->mode[FB_WRITE_FENCED];
	return w->on && !w->unchecked && res->cfg->op == FB_OP_RMW && w->checker_agrees &&
	       w->control_chances >= FB_CONTROL_CHANCES && w->lost_updates <= 0;
}

/* The verdict's exit code: 1 if a fenced discipline failed. */
int fb_report_verdict(const fb_results *res)
{
	const fb_mode_result *f = &res->mode[FB_FENCED], *w = &res->mode[FB_WRITE_FENCED],
	                     *u = &res->mode[FB_UNFENCED];
	if (f->on && (fenced_broken(res) || !f->checker_agrees))
		return 1;
	if (w->on && (w->stale_accepted || w->false_rejections || !w->checker_agrees))
		return 1;
	if (fb_report_not_a_control(res))
		return 1; /* the comparison with the control means nothing */
	if (u->on && !u->checker_agrees)
		return 1;
	if (fb_witness_total(&res->lease))
		return 1; /* the lease table broke its own promises */
	if (res->core_skew_ns > res->clock_slack_ns)
		return 1; /* the clock: the lease could not be judged */
	return 0;
}

/* A row of the side-by-side table: the metric's label, its value in each
 * discipline shown ("-" where the discipline has no such number, or it is
 * unknown), its note. */
static void row(FILE *out, const fb_results *res, fb_metric_id id)
{
	const fb_metric *mt = &fb_metrics[id];
	fprintf(out, "%-22s", mt->label);
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		if (!res->mode[d].on)
			continue;
		int64_t v = 0;
		bool have = fb_metric_applies(id, d) && fb_metric_get(res, d, id, &v);
		/* as before the table was one: a count of -1 shows "-" too */
		fprintf(out, " %13s", !have || v == -1 ? "-" : G(v));
	}
	fprintf(out, "%s%s\n", mt->note ? "   " : "", mt->note ? mt->note : "");
}

/* Whether the table shows metric id's row in this run. */
static bool row_shown(const fb_results *res, fb_metric_id id)
{
	switch (fb_metrics[id].show) {
	case FB_SHOW_ALWAYS:
		return true;
	case FB_SHOW_IF_INCOMPLETE:
		return res->failure[0] != 0;
	case FB_SHOW_IF_ANY:
		break;
	}
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		int64_t v = 0;
		if (res->mode[d].on && fb_metric_get(res, d, id, &v) && v)
			return true;
	}
	return false;
}

/* One latency line: the --percentiles and the max. */
static void lat(FILE *out, const fb_config *cfg, const char *name, const fb_hist *h)
{
	if (!h->count)
		return; /* percentiles of nothing are not 0 */
	fprintf(out, "  %-8s", name);
	for (uint32_t i = 0; i < cfg->n_percentiles; i++)
		fprintf(out, " p%.10g %s ", cfg->percentiles[i],
		        D(fb_hist_quantile(h, cfg->percentiles[i] / 100)));
	fprintf(out, " max %s\n", D(fb_hist_quantile(h, 1.0)));
}

/* The faults and what each did: the vacuity proof. */
static void print_faults(FILE *out, const fb_results *res)
{
	const fb_config *cfg = res->cfg;
	fprintf(out, "%-12s %8s %10s %10s %10s %14s\n", "fault", "injected", "taken", "> ttl",
	        "takeovers", "stale writes");
	for (int f = 0; f < FB_FAULTS; f++) {
		const fb_fault_result *fr = &res->fault[f];
		if (!fb_config_fault(cfg, (fb_fault)f) && !fr->taken)
			continue;
		fprintf(out, "%-12s %8s %10s %10s %10s %14s%s\n", fb_fault_names[f], G(fr->sent),
		        G(fr->taken),
		        f == FB_FAULT_SKEW || f == FB_FAULT_CRASH ? "-" : G(fr->over_ttl),
		        G(fr->takeovers), f == FB_FAULT_CRASH ? "-" : G(fr->stale_attempts),
		        f != FB_FAULT_CRASH && fr->taken && !fr->stale_attempts
		                ? "   vacuous: no stale write attempted"
		                : "");
	}
	if (res->fault[FB_FAULT_PAUSE].taken)
		fprintf(out, "pauses: hit a holder %s, at a named point %s, takers trapped %s\n",
		        G(res->pause_hit), G(res->pause_at_point), G(res->pause_trapped));
	if (res->pause_cut_short)
		fprintf(out,
		        "pauses cut short by the end of the run: %s (they end with it, as "
		        "every sleep of the run does)\n",
		        G(res->pause_cut_short));
	if (res->service_steps)
		fprintf(out, "skew: the lease service's clock stepped %s %s\n",
		        G(res->service_steps), PL(res->service_steps, "time", "times"));
	if (res->fault[FB_FAULT_DELAY].taken)
		fprintf(out, "delays: %s %s delivered late\n", G(res->delayed),
		        PL(res->delayed, "write", "writes"));
	if (res->crashes)
		fprintf(out,
		        "crashes: %s %s died holding a lease; %s %s taken over after "
		        "p50 %s, max %s (ttl %s)\n",
		        G(res->crashes), PL(res->crashes, "worker", "workers"),
		        G(res->crash_takeovers), PL(res->crash_takeovers, "lease", "leases"),
		        D(fb_hist_quantile(&res->takeover, 0.5)),
		        D(fb_hist_quantile(&res->takeover, 1.0)), D(cfg->ttl_ns));
	if (res->renew_ok + res->renew_believed)
		fprintf(out,
		        "late renewals: %s still extended the lease, %s failed and the client "
		        "wrote anyway\n",
		        G(res->renew_ok), G(res->renew_believed));
	if (cfg->check_lease != FB_CHECK_NONE)
		fprintf(out, "lease check (%s): %s cycles found the lease lost and wrote nothing\n",
		        fb_check_lease_names[cfg->check_lease], G(res->abandoned));
	if (res->plan_slipped || res->plan_dropped)
		fprintf(out,
		        "plan: %s faults slipped (one at a time), %s not recorded (log full)\n",
		        G(res->plan_slipped), G(res->plan_dropped));
}

/* Issue 27: a clock behind on one core, named, with the timing judgements
 * it took from the lease table. */
static void print_clock(FILE *out, const fb_results *res)
{
	if (res->core_skew_ns <= res->clock_slack_ns)
		return;
	const fb_witness_counts *b = &res->clock_blamed;
	fprintf(out,
	        "clock: NOT JUDGED !!! this machine's clock reads up to %s apart on two cores, "
	        "beyond the lease witness's %s: the lease's timing judgements rest on it, so "
	        "%s out of acquisition order, %s two live holders, %s held past the TTL and %s "
	        "renewed after expiry are blamed on the clock, not the lease table\n",
	        D(res->core_skew_ns), D(res->clock_slack_ns), G(b->inversions), G(b->overlaps),
	        G(b->held_past_ttl), G(b->renew_expired));
}

/* The lease witness's verdict, each kind of violation by name with its first
 * example. */
static void print_lease_violations(FILE *out, const fb_results *res)
{
	const fb_witness_counts *lw = &res->lease;
	fprintf(out,
	        "lease: VIOLATED !!! %s fences not above the one they replaced, %s handed out "
	        "twice, %s out of acquisition order, %s acquired while the previous lease was "
	        "live",
	        G(lw->regressions), G(lw->duplicates), G(lw->inversions), G(lw->overlaps));
	if (lw->held_past_ttl)
		fprintf(out, ", %s held past the TTL", G(lw->held_past_ttl));
	if (lw->renew_taken)
		fprintf(out, ", %s renewed for a non-holder", G(lw->renew_taken));
	if (lw->renew_expired)
		fprintf(out, ", %s renewed after expiry", G(lw->renew_expired));
	fprintf(out, "\n");
	static const char *const what[FB_WIT_KINDS] = {
	        [FB_WIT_REGRESSION] = "fence regression: fence %llu was minted over a slot that "
	                              "held %llu",
	        [FB_WIT_DUPLICATE] = "fence %llu handed out twice (the newest was %llu)",
	        [FB_WIT_INVERSION] = "fence %llu out of acquisition order with %llu (an older "
	                             "lease carries the newer fence)",
	        [FB_WIT_OVERLAP] = "fence %llu acquired while %llu was live: two holders at once",
	        [FB_WIT_HELD_PAST_TTL] = "lease %llu held past its TTL: the lease service kept "
	                                 "it %llu ns beyond the expiry it stated",
	        [FB_WIT_RENEW_TAKEN] = "lease %llu renewed for a non-holder: the key was "
	                               "fence %llu's when it was renewed",
	        [FB_WIT_RENEW_EXPIRED] = "lease %llu renewed after expiry: the renewal was sent "
	                                 "%llu ns after the lease expired",
	};
	static const fb_witness_kind order[] = {
	        FB_WIT_REGRESSION,    FB_WIT_DUPLICATE,   FB_WIT_INVERSION,    FB_WIT_OVERLAP,
	        FB_WIT_HELD_PAST_TTL, FB_WIT_RENEW_TAKEN, FB_WIT_RENEW_EXPIRED};
	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
		const fb_witness_example *e = &res->lease_example[order[i]];
		if (!e->found)
			continue;
		fprintf(out, "  first, key %u: ", e->key);
		fprintf(out, what[order[i]], (unsigned long long)e->fence,
		        (unsigned long long)e->other);
		fprintf(out, "\n");
	}
}

static void print_lease(FILE *out, const fb_results *res)
{
	print_clock(out, res);
	const fb_witness_counts *lw = &res->lease;
	if (!fb_witness_total(lw))
		fprintf(out,
		        "lease: kept its promises (every fence above the one it replaced, none "
		        "twice, none out of acquisition order, no two live holders)\n");
	else
		print_lease_violations(out, res);
	if (res->lease_unjudged[0])
		fprintf(out, "  not judged: %s\n", res->lease_unjudged);
}

/* The first refusal of a rightful holder, in one line, under the verdict
 * of the store that made it. */
static void print_false_rejection(FILE *out, const fb_results *res, fb_discipline d)
{
	const fb_false_rejection *x = &res->false_rejection;
	if (!x->found || x->d != d)
		return;
	fprintf(out,
	        "  first, key %u: w%u's %s with fence %llu refused by %s, although no call with a "
	        "higher fence had been sent to it (the highest sent: %llu",
	        x->key, x->worker, x->read ? "read" : "write", (unsigned long long)x->fence,
	        fb_column(res, x->d), (unsigned long long)x->sent);
	if (x->highest)
		fprintf(out, "; the store said it had seen %llu", (unsigned long long)x->highest);
	fprintf(out, ")\n");
	/* issue 27: the control that stops being one. A write-fenced store
	 * that says it saw a fence no write had carried saw it on a read. */
	if (x->d == FB_WRITE_FENCED && !x->read && x->highest > x->sent)
		fprintf(out,
		        "  write-fenced is not a control: it had seen fence %llu, which only a "
		        "read "
		        "carried (it registers reads, so the updates it should lose are not "
		        "lost)\n",
		        (unsigned long long)x->highest);
}

/* The first stale read the fenced store served, in one line, under its
 * verdict. */
static void print_stale_read(FILE *out, const fb_results *res)
{
	const fb_stale_read *x = &res->stale_read;
	if (!x->found)
		return;
	fprintf(out,
	        "  first stale read, key %u: w%u's read with fence %llu served by %s, after it had "
	        "admitted fence %llu and answered (a read checked against the last accepted "
	        "fence, not the highest seen?)\n",
	        x->key, x->worker, (unsigned long long)x->fence, fb_column(res, FB_FENCED),
	        (unsigned long long)x->admitted);
}

/* A fenced store that accepted almost nothing: broken, or so is the mapping
 * of its adapter (a refusal read for an acceptance, a token not sent). */
static void say_accepted_little(FILE *out, const fb_results *res, fb_discipline d)
{
	const fb_mode_result *m = &res->mode[d];
	if (!m->on || !m->writes || m->accepted * 100 >= m->writes)
		return;
	fprintf(out,
	        "  %s accepted %s of %s writes (%.2f%%): a store that refuses nearly every "
	        "write is broken, or its adapter's mapping is\n",
	        fb_column(res, d), G(m->accepted), G(m->writes),
	        100.0 * (double)m->accepted / (double)m->writes);
}

/* Refusals that were not staleness nor a rightful holder's: the store's
 * own reasons, and those fencebench could not judge. */
static void say_other_refusals(FILE *out, const fb_results *res, fb_discipline d)
{
	const fb_mode_result *m = &res->mode[d];
	if (m->on && m->refused_other)
		fprintf(out, "  %s refused %s %s for a reason of its own; the first: %s\n",
		        fb_column(res, d), G(m->refused_other),
		        PL(m->refused_other, "call", "calls"),
		        res->other_reason[0] ? res->other_reason : "(not said)");
	if (m->on && m->unjudged)
		fprintf(out,
		        "  %s: %s %s not judged (fencebench does not see every call to the "
		        "store: %s)\n",
		        fb_column(res, d), G(m->unjudged), PL(m->unjudged, "refusal", "refusals"),
		        res->cfg->no_check ? "--no-check" : "other processes write to it");
}

/* The side-by-side table: one column per discipline. */
static void print_table(FILE *out, const fb_results *res)
{
	fprintf(out, "\n%-22s", "");
	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (res->mode[d].on)
			fprintf(out, " %13s", fb_column(res, (fb_discipline)d));
	fprintf(out, "   (same workers, leases and faults)\n");
	static const fb_metric_id rows[] = {
	        FB_M_ACCEPTED,      FB_M_READS_REFUSED,    FB_M_REJECTED_STALE, FB_M_STALE_ACCEPTED,
	        FB_M_LOST_UPDATES,  FB_M_FALSE_REJECTIONS, FB_M_REFUSED_OTHER,  FB_M_UNJUDGED,
	        FB_M_ZOMBIE_WRITES, FB_M_INDETERMINATE};
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		if (row_shown(res, rows[i]))
			row(out, res, rows[i]);
	fprintf(out, "%-22s", "checker agrees");
	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (res->mode[d].on)
			fprintf(out, " %13s",
			        res->check_deferred || res->failure[0] ? "-"
			        : res->mode[d].checker_agrees          ? "yes"
			                                               : "NO");
	fprintf(out, "\n\n");
}

/* Throughput, contention, latency, the engines' round trips and the
 * simulator's own figures. */
static void print_performance(FILE *out, const fb_results *res)
{
	const fb_config *cfg = res->cfg;
	double tput = throughput(res);
	if (res->unmeasured) {
		/* the warm-up's cycles are no measurement: no rate, no latency */
		char w[32];
		fb_format_duration(w, sizeof w, cfg->warmup_ns);
		fprintf(out,
		        "nothing measured: interrupted %.2fs into the %s --warmup, before the "
		        "measured window began (no throughput, no latency; the counts above "
		        "cover the warm-up)\n\n",
		        res->warmed_s, w);
		return;
	}
	if (res->sim.deterministic)
		fprintf(out, "ops %s in %s of virtual time: %s ops/s (virtual)", G(res->ops),
		        D(res->sim.virtual_ns), G(tput));
	else
		fprintf(out, "ops %s in %.2fs: %s ops/s", G(res->ops), res->elapsed_s, G(tput));
	/* Time outside the window asked for, when it is not small beside it:
	 * 16k threads take seconds to start and to join. The rate above is
	 * over elapsed, which ends as the last worker leaves its cycles (after
	 * the end, by as long as a cycle under way takes); the joins follow. */
	double window = (double)cfg->duration_ns / 1e9;
	if (!res->sim.deterministic && (res->startup_s > fmax(0.001, window / 20) ||
	                                res->stopping_s > fmax(0.001, window / 20)))
		fprintf(out,
		        " (%.2fs before it, starting %s%u %s; %.2fs from its end until all had "
		        "stopped)",
		        res->startup_s, res->remote ? "the engines and " : "", cfg->threads,
		        PL(cfg->threads, "worker", "workers"), res->stopping_s);
	if (res->floor_ops_s > 0)
		fprintf(out, " = %.2f x the floor pipeline's %s ops/s (%s fence, %u %s)%s",
		        tput / res->floor_ops_s, G(res->floor_ops_s),
		        fb_fence_source_name(cfg->fence), cfg->threads,
		        PL(cfg->threads, "thread", "threads"),
		        tput > res->floor_ops_s ? FLOOR_NO_BOUND : "");
	fprintf(out,
	        "\ncontention: %s acquires found the lease held, %.3f CAS retries/op, %s fences "
	        "minted and never used; fairness %.2f%s\n",
	        G(res->contended), res->ops ? (double)res->cas_retries / (double)res->ops : 0.0,
	        G(res->wasted_fences), fairness(res), starved(res) ? " ??? (starvation)" : "");
	fprintf(out, "latency%s, 1 cycle in %u timed (%s %s)%s\n",
	        res->sim.deterministic ? " (virtual)" : "", cfg->sample, G(res->cycle.count),
	        PL(res->cycle.count, "sample", "samples"),
	        res->cycle.count ? ":" : ": no cycle was timed, so no percentile to show");
	lat(out, cfg, "cycle", &res->cycle);
	lat(out, cfg, "acquire", &res->acquire);
	lat(out, cfg, "write", &res->write);
	if (res->remote) {
		fprintf(out, "engine round trips (lease %s, store %s%s):\n", res->lease_engine,
		        res->store_engine,
		        res->batched ? "; read, write: every store in one round trip" : "");
		for (int e = 0; e < FB_EOPS; e++)
			if (res->eop[e].count)
				lat(out, cfg, fb_engine_op_names[e], &res->eop[e]);
	}
	if (res->sim.deterministic)
		fprintf(out,
		        "deterministic: %s steps (%s idle), %s virtual; history hash 0x%016llx (%s "
		        "lines)%s%s\n",
		        G(res->sim.steps), G(res->sim.idle_steps), D(res->sim.virtual_ns),
		        (unsigned long long)res->sim.hash, G(res->sim.lines),
		        cfg->history_path ? " written to " : "",
		        cfg->history_path ? cfg->history_path : "");
	fprintf(out, "\n");
}

/* What kept the run from a full verdict: an engine that died, a shared run
 * whose checking is `check`'s, a checker out of step with its store. */
static void print_status(FILE *out, const fb_results *res)
{
	if (res->failure[0])
		fprintf(out,
		        "INCOMPLETE: %s; the run stopped there. Writes sent and never answered "
		        "are counted as indeterminate, not as corrupt; the numbers above are "
		        "what was measured until then, unchecked.\n",
		        res->failure);
	if (res->check_deferred)
		fprintf(out,
		        "checker: deferred (client %u of a shared run: other processes write the "
		        "same keys); verify the global history after all finish: fencebench check "
		        "--store URL\n",
		        res->cfg->client_id);
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		const fb_mode_result *m = &res->mode[d];
		if (m->on && !m->checker_agrees)
			fprintf(out, "%s: CHECKER DISAGREES: %s\n",
			        fb_column(res, (fb_discipline)d), m->disagreement);
	}
}

/* "N stale writes accepted, N updates lost, N refusals of its rightful
 * holder": each broken promise of a fenced discipline, those that are. */
static void say_broken(FILE *out, const fb_mode_result *m, bool reads_count)
{
	const char *sep = "";
	if (m->stale_accepted) {
		fprintf(out, "%s stale writes accepted", G(m->stale_accepted));
		sep = ", ";
	}
	if (reads_count && m->lost_updates) {
		fprintf(out, "%s%s updates lost", sep, G(m->lost_updates));
		sep = ", ";
	}
	if (m->false_rejections) {
		fprintf(out,
		        "%s%s refusals of its rightful holder (no call with a higher fence had "
		        "been sent to it)",
		        sep, G(m->false_rejections));
		sep = ", ";
	}
	if (reads_count && m->stale_reads)
		fprintf(out, "%s%s stale reads served, below a fence it had admitted already", sep,
		        G(m->stale_reads));
}

static void say_fenced(FILE *out, const fb_results *res, bool vacuous)
{
	const fb_mode_result *f = &res->mode[FB_FENCED];
	const char *name = fb_column(res, FB_FENCED);
	if (!f->on)
		return;
	if (f->unchecked && !f->stale_accepted && !f->false_rejections && !f->stale_reads) {
		fprintf(out,
		        "%s: no stale write accepted by the store's own count (%s refused); "
		        "not "
		        "verified here\n",
		        name, G(f->rejected_stale + f->reads_refused));
	} else if (fenced_broken(res)) {
		fprintf(out, "%s: VIOLATED !!! (", name);
		say_broken(out, f, !reads_declared_unfenced(res));
		fprintf(out, ")\n");
	} else if (!f->checker_agrees) {
		fprintf(out, "%s: FAIL !!! (its checker disagrees with it, above)\n", name);
	} else if (vacuous) {
		fprintf(out, "%s: no violation, but vacuous: no stale write attempted\n", name);
	} else {
		fprintf(out, "%s: SAFE (%s stale %s refused", name, G(f->rejected_stale),
		        PL(f->rejected_stale, "write", "writes"));
		if (f->reads_refused)
			fprintf(out, ", and %s stale %s", G(f->reads_refused),
			        PL(f->reads_refused, "read", "reads"));
		fprintf(out, ")");
		if (f->lost_updates) /* its reads are not fenced: said below */
			fprintf(out, "; %s updates lost, as a write-fenced store loses them",
			        G(f->lost_updates));
		fprintf(out, "\n");
	}
	if (res->unfenced_reads & (1u << FB_FENCED))
		fprintf(out,
		        "  %s: reads are not fenced (its adapter's hello says \"fenced_reads\": "
		        "false): a stale holder's read is served; with --op rmw the updates lost "
		        "show what that costs, --op debit judges its writes alone\n",
		        name);
}

static void say_write_fenced(FILE *out, const fb_results *res)
{
	const fb_mode_result *w = &res->mode[FB_WRITE_FENCED];
	if (!w->on)
		return;
	if (w->unchecked && !w->stale_accepted && !w->false_rejections) {
		fprintf(out, "write-fenced: no stale write accepted by the store's own count; "
		             "lost updates not measured here\n");
	} else if (w->stale_accepted || w->false_rejections) {
		fprintf(out, "write-fenced: VIOLATED !!! (");
		say_broken(out, w, false);
		fprintf(out, ")\n");
	} else if (!w->checker_agrees) {
		fprintf(out, "write-fenced: FAIL !!! (its checker disagrees with it, above)\n");
	} else if (w->lost_updates) {
		fb_say_write_fenced_lost(out, w->lost_updates);
	} else if (fb_report_not_a_control(res)) {
		fprintf(out,
		        "write-fenced: NOT A CONTROL !!! no update lost in %s %s where a "
		        "write-fenced store must lose one (a write it had to accept, sent after "
		        "another it had to accept that was sent after this write's read was "
		        "served: it replaced a newer balance than it read); a store that keeps "
		        "these updates registers reads, and the comparison with it means nothing\n",
		        G(w->control_chances), PL(w->control_chances, "chance", "chances"));
	} else {
		fprintf(out, "write-fenced: no stale write, no update lost%s\n",
		        res->cfg->op == FB_OP_DEBIT ? " (the store subtracts: nothing to lose)"
		                                    : "");
	}
}

static void say_unfenced(FILE *out, const fb_results *res, bool vacuous)
{
	const fb_mode_result *u = &res->mode[FB_UNFENCED];
	if (!u->on)
		return;
	if (u->unchecked && u->stale_accepted)
		fprintf(out,
		        "unfenced: CORRUPTED (%s stale writes accepted, by the store's own "
		        "count)\n",
		        G(u->stale_accepted));
	else if (u->stale_accepted || u->lost_updates)
		fb_say_unfenced_corrupted(out, u->stale_accepted, u->lost_updates);
	else
		fprintf(out, "unfenced: no corruption observed%s\n",
		        vacuous ? " (vacuous: no stale write attempted)" : "");
}

/* Why no stale write was attempted, and what would make the faults bite. */
static const char *vacuous_why(const fb_config *cfg)
{
	uint32_t biting = cfg->faults & ~(1u << FB_FAULT_CRASH);
	if (cfg->plan_path)
		return "the plan's faults outlasted no lease a newer holder wrote under";
	if (!cfg->faults || (cfg->faults == 1u << FB_FAULT_PAUSE && cfg->pause_rate == 0))
		return "no fault was injected (--faults, --pause-rate)";
	if (!biting)
		return "a crashed worker never writes again: crash alone cannot make a stale "
		       "write, "
		       "it tests the takeover (add pause or delay to --faults)";
	if (biting == 1u << FB_FAULT_SKEW && cfg->lease_clock == FB_LEASE_CLOCK_MONOTONIC &&
	    cfg->check_lease != FB_CHECK_LOCAL)
		return "skew stepped no clock this run reads (--lease-clock realtime, or "
		       "--check-lease local)";
	if (biting == 1u << FB_FAULT_SKEW && !cfg->work_max_ns)
		return "a clock step caught no holder at work (--work gives holders time under the "
		       "lease)";
	return "no fault outlasted a lease that a newer holder then wrote under (longer faults: "
	       "--pause, --delay; or more of them)";
}

/* The one-line verdict, locktorture style: outcome, every number that
 * decided it, what failed, and every parameter (as the command that
 * replays it). */
static int print_verdict_line(FILE *out, const fb_results *res, bool vacuous)
{
	const fb_config *cfg = res->cfg;
	char replay[1024];
	fb_config_replay(cfg, replay, sizeof replay);
	int code = fb_report_verdict(res);
	if (cfg->no_check)
		fprintf(out,
		        "--no-check: no history checker, no lease witness: stale counts are the "
		        "stores' own, nothing was verified\n");
	fprintf(out, "\n%s:",
	        code                  ? "FAIL !!!"
	        : res->failure[0]     ? "INCOMPLETE"
	        : cfg->no_check       ? "UNCHECKED"
	        : res->check_deferred ? "DEFERRED"
	        : vacuous             ? "VACUOUS"
	                              : "PASS");
	const char *stale = fb_metrics[FB_M_STALE_ACCEPTED].verdict,
	           *lost = fb_metrics[FB_M_LOST_UPDATES].verdict,
	           *fals = fb_metrics[FB_M_FALSE_REJECTIONS].verdict;
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		const fb_mode_result *m = &res->mode[d];
		const char *name = fb_column(res, (fb_discipline)d);
		if (m->on && m->unchecked) /* the stores' own stale counts, nothing else */
			fprintf(out, " %s %s=%llu %s=- agree=-;", name, stale,
			        (unsigned long long)m->stale_accepted, lost);
		else if (m->on && d == FB_UNFENCED) /* it refuses nothing */
			fprintf(out, " %s %s=%llu %s=%lld agree=%s;", name, stale,
			        (unsigned long long)m->stale_accepted, lost,
			        (long long)m->lost_updates, m->checker_agrees ? "yes" : "NO");
		else if (m->on)
			fprintf(out, " %s %s=%llu %s=%lld %s=%llu agree=%s;", name, stale,
			        (unsigned long long)m->stale_accepted, lost,
			        (long long)m->lost_updates, fals,
			        (unsigned long long)m->false_rejections,
			        m->checker_agrees ? "yes" : "NO");
	}
	if (code)
		fb_report_reasons(out, res);
	else if (vacuous && !res->failure[0] && !cfg->no_check && !res->check_deferred)
		fprintf(out, " %s;", vacuous_why(cfg));
	fprintf(out, " replay: %s\n", replay);
	return code;
}

int fb_report_summary(fb_report *rp, FILE *out, const fb_results *res)
{
	(void)rp;
	bool vacuous = stale_attempts(res) == 0;
	print_table(out, res);
	print_faults(out, res);
	print_lease(out, res);
	print_performance(out, res);
	print_status(out, res);
	say_fenced(out, res, vacuous);
	print_false_rejection(out, res, FB_FENCED);
	print_stale_read(out, res);
	say_accepted_little(out, res, FB_FENCED);
	say_other_refusals(out, res, FB_FENCED);
	say_write_fenced(out, res);
	print_false_rejection(out, res, FB_WRITE_FENCED);
	say_accepted_little(out, res, FB_WRITE_FENCED);
	say_other_refusals(out, res, FB_WRITE_FENCED);
	say_unfenced(out, res, vacuous);
	fb_story_print(out, res);
	if (res->interrupted)
		fprintf(out, "interrupted: these are the numbers measured until the signal\n");
	return print_verdict_line(out, res, vacuous);
}

/* ---- JSON ---- */

static void v_num(void *ctx, const char *k, double v)
{
	json_object_object_add(ctx, k, json_object_new_double(v));
}
static void v_int(void *ctx, const char *k, uint64_t v)
{
	json_object_object_add(ctx, k, json_object_new_uint64(v));
}
static void v_str(void *ctx, const char *k, const char *v)
{
	json_object_object_add(ctx, k, v ? json_object_new_string(v) : NULL);
}
static void v_strs(void *ctx, const char *k, const char *const *v, int n)
{
	json_object *a = json_object_new_array();
	for (int i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_string(v[i]));
	json_object_object_add(ctx, k, a);
}
static void v_bool(void *ctx, const char *k, bool v)
{
	json_object_object_add(ctx, k, json_object_new_boolean(v));
}
static void v_nums(void *ctx, const char *k, const double *v, int n)
{
	json_object *a = json_object_new_array();
	for (int i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_double(v[i]));
	json_object_object_add(ctx, k, a);
}

/* A fault's name as a JSON key: snake_case like every other key. */
static const char *fault_key(int f)
{
	static char keys[FB_FAULTS][32];
	if (!keys[f][0]) {
		snprintf(keys[f], sizeof keys[f], "%s", fb_fault_names[f]);
		for (char *c = keys[f]; *c; c++)
			if (*c == '-')
				*c = '_';
	}
	return keys[f];
}

static json_object *j_u(uint64_t v)
{
	return json_object_new_uint64(v);
}

static json_object *j_i(int64_t v)
{
	return json_object_new_int64(v);
}

static json_object *j_hist(const fb_config *cfg, const fb_hist *h)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "p50", j_u(fb_hist_quantile(h, 0.5)));
	json_object_object_add(o, "p90", j_u(fb_hist_quantile(h, 0.9)));
	json_object_object_add(o, "p99", j_u(fb_hist_quantile(h, 0.99)));
	json_object_object_add(o, "p999", j_u(fb_hist_quantile(h, 0.999)));
	json_object_object_add(o, "p9999", j_u(fb_hist_quantile(h, 0.9999)));
	json_object_object_add(o, "max", j_u(fb_hist_quantile(h, 1.0)));
	json_object_object_add(o, "samples", j_u(h->count));
	for (uint32_t i = 0; i < cfg->n_percentiles; i++) {
		/* --percentiles beyond the fixed ones: p99.5 is "p995" */
		char key[32], num[24];
		snprintf(num, sizeof num, "%.10g", cfg->percentiles[i]);
		size_t o_ = 0;
		key[o_++] = 'p';
		for (char *c = num; *c && o_ + 1 < sizeof key; c++)
			if (*c != '.')
				key[o_++] = *c;
		key[o_] = 0;
		if (!json_object_object_get_ex(o, key, NULL))
			json_object_object_add(o, key,
			                       j_u(fb_hist_quantile(h, cfg->percentiles[i] / 100)));
	}
	return o;
}

static json_object *j_machine(const char *clock_name)
{
	json_object *o = fb_json_machine();
	json_object_object_add(o, "clock", json_object_new_string(clock_name));
	return o;
}

/* Metric id of discipline d at its key: a count, null where unknown. */
static void j_metric(json_object *o, const fb_results *res, fb_discipline d, fb_metric_id id)
{
	const fb_metric *mt = &fb_metrics[id];
	int64_t v = 0;
	json_object *x = NULL;
	if (fb_metric_get(res, d, id, &v))
		x = mt->unit == FB_UNIT_SIGNED ? j_i(v) : j_u((uint64_t)v);
	json_object_object_add(o, mt->json, x);
}

static json_object *j_mode(const fb_results *res, fb_discipline d)
{
	const fb_mode_result *m = &res->mode[d];
	const fb_config *cfg = res->cfg;
	json_object *o = json_object_new_object();
	double tput = res->elapsed_s > 0 ? (double)res->ops / res->elapsed_s : 0;
	json_object_object_add(o, "column", json_object_new_string(fb_column(res, d)));
	if (res->unfenced_reads & (1u << d))
		json_object_object_add(o, "reads_fenced", json_object_new_boolean(false));
	for (int id = FB_M_OPS; id <= FB_M_INDETERMINATE; id++) {
		if (id == FB_M_CONTROL_CHANCES &&
		    (d != FB_WRITE_FENCED || res->cfg->op != FB_OP_RMW || m->unchecked))
			continue;
		j_metric(o, res, d, (fb_metric_id)id);
		if (id == FB_M_CONTROL_CHANCES)
			json_object_object_add(
			        o, "not_a_control",
			        json_object_new_boolean(fb_report_not_a_control(res)));
	}
	json_object *faults = json_object_new_object();
	for (int f = 0; f < FB_FAULTS; f++)
		json_object_object_add(faults, fault_key(f), j_u(res->fault[f].taken));
	json_object_object_add(faults, "pause_hit_holder", j_u(res->pause_hit));
	json_object_object_add(faults, "pause_over_ttl", j_u(res->fault[FB_FAULT_PAUSE].over_ttl));
	json_object_object_add(faults, "takeovers_during_pause",
	                       j_u(res->fault[FB_FAULT_PAUSE].takeovers));
	json_object_object_add(faults, "pause_at_point", j_u(res->pause_at_point));
	json_object_object_add(faults, "pause_takers_trapped", j_u(res->pause_trapped));
	json_object_object_add(o, "faults", faults);
	json_object_object_add(o, fb_metrics[FB_M_THROUGHPUT].json, json_object_new_double(tput));
	j_metric(o, res, d, FB_M_CAS_RETRIES);
	json_object *lat = json_object_new_object();
	json_object_object_add(lat, "acquire", j_hist(res->cfg, &res->acquire));
	json_object_object_add(lat, "write", j_hist(res->cfg, &res->write));
	json_object_object_add(lat, "cycle", j_hist(res->cfg, &res->cycle));
	json_object_object_add(o, "latency_ns", lat);
	json_object *pt = json_object_new_array();
	for (uint32_t i = 0; i < cfg->threads; i++)
		json_object_array_add(pt, j_u(res->per_thread_ops[i]));
	json_object_object_add(o, "per_thread_ops", pt);
	/* --no-check, a shared run's process, an engine that died: nothing was
	 * checked here, so nothing agreed: null */
	bool unchecked = cfg->no_check || res->check_deferred || res->failure[0];
	json_object_object_add(o, "checker_agrees",
	                       unchecked ? NULL : json_object_new_boolean(m->checker_agrees));
	if (!m->checker_agrees)
		json_object_object_add(o, "disagreement", json_object_new_string(m->disagreement));
	j_metric(o, res, d, FB_M_STORE_STALE);
	j_metric(o, res, d, FB_M_LOST_HISTORY);
	j_metric(o, res, d, FB_M_CHAIN_BREAKS);
	if (cfg->keys <= 1024) {
		json_object *keys = json_object_new_array();
		for (uint32_t k = 0; k < cfg->keys; k++) {
			const fb_key_result *kr = &res->keys[k];
			json_object *ko = json_object_new_object();
			json_object_object_add(ko, "key", j_u(k));
			json_object_object_add(ko, "balance", j_i(kr->balance[d]));
			json_object_object_add(ko, "accepted", j_u(kr->accepted[d]));
			json_object_object_add(ko, "stale_accepted", j_u(kr->stale[d]));
			json_object_object_add(ko, "lost_updates", j_i(kr->lost[d]));
			json_object_object_add(ko, "last_fence", j_u(kr->last_fence[d]));
			json_object_array_add(keys, ko);
		}
		json_object_object_add(o, "per_key", keys);
	}
	return o;
}

/* schema, tool, version, kind, when, the configuration and the machine */
static json_object *j_header(const fb_report *rp, const char *kind, bool interrupted, int sig,
                             const char *clock_name)
{
	json_object *doc = json_object_new_object();
	json_object_object_add(doc, "schema", j_u(FB_SCHEMA));
	json_object_object_add(doc, "tool", json_object_new_string("fencebench"));
	json_object_object_add(doc, "version", json_object_new_string(FB_VERSION));
	json_object_object_add(doc, "kind", json_object_new_string(kind));
	json_object_object_add(doc, "interrupted", json_object_new_boolean(interrupted));
	if (interrupted)
		json_object_object_add(doc, "signal", j_u((uint64_t)sig));
	json_object_object_add(doc, "started_at", json_object_new_string(rp->started_at));
	json_object *c = json_object_new_object();
	fb_config_visitor vis = {v_num, v_int, v_str, v_strs, v_bool, v_nums};
	fb_config_visit(rp->cfg, &vis, c);
	json_object_object_add(doc, "config", c);
	json_object_object_add(doc, "machine", j_machine(clock_name));
	return doc;
}

/* Run-wide numbers: contention, the faults' vacuity proof, the floor. */
static json_object *j_run(const fb_results *res)
{
	json_object *run = json_object_new_object();
	json_object_object_add(run, "ops", j_u(res->ops));
	/* false: a stop signal in the warm-up; ops and rates measure nothing */
	json_object_object_add(run, "measured", json_object_new_boolean(!res->unmeasured));
	json_object_object_add(run, "startup_s", json_object_new_double(res->startup_s));
	json_object_object_add(run, "stopping_s", json_object_new_double(res->stopping_s));
	json_object_object_add(run, "wasted_fences", j_u(res->wasted_fences));
	json_object_object_add(run, "checker_stalls", j_u(res->checker_stalls));
	json_object_object_add(run, "pauses_cut_short", j_u(res->pause_cut_short));
	json_object_object_add(run, "paused_s",
	                       json_object_new_double((double)res->paused_ns / 1e9));
	json_object_object_add(run, "injector_missed_holder", j_u(res->injector_missed));
	json_object_object_add(run, "fairness", json_object_new_double(fairness(res)));
	json_object_object_add(run, "stale_writes_attempted", j_u(stale_attempts(res)));
	json_object *fd = json_object_new_object();
	for (int f = 0; f < FB_FAULTS; f++) {
		const fb_fault_result *fr = &res->fault[f];
		json_object *o = json_object_new_object();
		json_object_object_add(o, "injected", j_u(fr->sent));
		json_object_object_add(o, "taken", j_u(fr->taken));
		json_object_object_add(o, "over_ttl", j_u(fr->over_ttl));
		json_object_object_add(o, "takeovers", j_u(fr->takeovers));
		json_object_object_add(o, "stale_attempts", j_u(fr->stale_attempts));
		json_object_object_add(fd, fault_key(f), o);
	}
	json_object_object_add(run, "faults", fd);
	json_object_object_add(run, "service_clock_steps", j_u(res->service_steps));
	json_object_object_add(run, "delayed_writes_delivered", j_u(res->delayed));
	json_object_object_add(run, "crashes", j_u(res->crashes));
	json_object_object_add(run, "crash_takeovers", j_u(res->crash_takeovers));
	json_object_object_add(run, "crash_pending", j_u(res->crash_pending));
	json_object_object_add(run, "crash_pending_age_ns", j_u(res->crash_pending_age_ns));
	json_object_object_add(run, "crash_takeover_latency_ns", j_hist(res->cfg, &res->takeover));
	json_object_object_add(run, "renew_extended", j_u(res->renew_ok));
	json_object_object_add(run, "renew_believed", j_u(res->renew_believed));
	json_object_object_add(run, "check_abandoned", j_u(res->abandoned));
	json_object_object_add(run, "plan_recorded", j_u(res->plan_recorded));
	json_object_object_add(run, "plan_slipped", j_u(res->plan_slipped));
	json_object *lo = json_object_new_object();
	json_object_object_add(lo, "fence_regressions", j_u(res->lease.regressions));
	json_object_object_add(lo, "duplicate_fences", j_u(res->lease.duplicates));
	json_object_object_add(lo, "out_of_order_fences", j_u(res->lease.inversions));
	json_object_object_add(lo, "overlapping_leases", j_u(res->lease.overlaps));
	json_object_object_add(lo, "held_past_ttl", j_u(res->lease.held_past_ttl));
	json_object_object_add(lo, "renewed_for_a_non_holder", j_u(res->lease.renew_taken));
	json_object_object_add(lo, "renewed_after_expiry", j_u(res->lease.renew_expired));
	json_object_object_add(run, "clock_core_skew_ns", j_u(res->core_skew_ns));
	if (res->core_skew_ns > res->clock_slack_ns) {
		json_object *cb = json_object_new_object();
		json_object_object_add(cb, "out_of_order_fences",
		                       j_u(res->clock_blamed.inversions));
		json_object_object_add(cb, "overlapping_leases", j_u(res->clock_blamed.overlaps));
		json_object_object_add(cb, "held_past_ttl", j_u(res->clock_blamed.held_past_ttl));
		json_object_object_add(cb, "renewed_after_expiry",
		                       j_u(res->clock_blamed.renew_expired));
		json_object_object_add(run, "blamed_on_the_clock", cb);
	}
	json_object_object_add(run, "lease_violations", lo);
	json_object *eng = json_object_new_object();
	json_object_object_add(eng, "lease", json_object_new_string(res->lease_engine));
	if (res->lease_unjudged[0])
		json_object_object_add(eng, "lease_not_judged",
		                       json_object_new_string(res->lease_unjudged));
	json_object_object_add(eng, "store", json_object_new_string(res->store_engine));
	json_object *rtt = json_object_new_object();
	for (int e = 0; e < FB_EOPS; e++)
		if (res->eop[e].count)
			json_object_object_add(rtt, fb_engine_op_names[e],
			                       j_hist(res->cfg, &res->eop[e]));
	json_object_object_add(eng, "round_trip_ns", rtt);
	json_object_object_add(eng, "batched", json_object_new_boolean(res->batched));
	json_object_object_add(eng, "check_deferred", json_object_new_boolean(res->check_deferred));
	if (res->failure[0])
		json_object_object_add(eng, "failure", json_object_new_string(res->failure));
	json_object_object_add(run, "engines", eng);
	if (res->sim.deterministic) {
		json_object *sm = json_object_new_object();
		json_object_object_add(sm, "seed", j_u(res->sim.seed));
		json_object_object_add(sm, "steps", j_u(res->sim.steps));
		json_object_object_add(sm, "idle_steps", j_u(res->sim.idle_steps));
		json_object_object_add(sm, "virtual_ns", j_u(res->sim.virtual_ns));
		char hash[24];
		snprintf(hash, sizeof hash, "0x%016llx", (unsigned long long)res->sim.hash);
		json_object_object_add(sm, "history_hash", json_object_new_string(hash));
		json_object_object_add(sm, "history_lines", j_u(res->sim.lines));
		json_object_object_add(run, "deterministic", sm);
	}
	json_object_object_add(run, "local_checks_fooled", j_u(res->local_fooled));
	if (res->floor_ops_s > 0) {
		json_object_object_add(run, "floor_pipeline_ops_s",
		                       json_object_new_double(res->floor_ops_s));
		json_object_object_add(run, "floor_ratio",
		                       json_object_new_double(throughput(res) / res->floor_ops_s));
	}
	return run;
}

static json_object *j_modes(const fb_results *res)
{
	json_object *modes = json_object_new_object();
	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (res->mode[d].on)
			json_object_object_add(modes, fb_discipline_key((fb_discipline)d),
			                       j_mode(res, (fb_discipline)d));
	return modes;
}

/* The samples' counts of one kind for discipline d, a column. */
typedef enum scol { S_ACCEPTED, S_REJECTED, S_REFUSED, S_STALE, S_LOST, S_COLS } scol;
static const fb_metric_id scol_metric[S_COLS] = {FB_M_ACCEPTED, FB_M_REJECTED_STALE,
                                                 FB_M_READS_REFUSED, FB_M_STALE_ACCEPTED,
                                                 FB_M_LOST_UPDATES};

static json_object *j_column(const fb_sample *s, size_t n, scol c, int d)
{
	json_object *a = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		const fb_sample *x = &s[i];
		json_object_array_add(a, c == S_LOST       ? j_i(x->lost[d])
		                         : c == S_ACCEPTED ? j_u(x->accepted[d])
		                         : c == S_REJECTED ? j_u(x->rejected[d])
		                         : c == S_REFUSED  ? j_u(x->reads_refused[d])
		                                           : j_u(x->stale[d]));
	}
	return a;
}

/*
 * The run's samples as columns, an entry a second: "t_s", "ops",
 * "ops_per_s" (over the second before), "faults" (taken so far), and per
 * discipline its counts so far: "accepted", "rejected_stale",
 * "reads_refused", "stale_accepted" and, when the checker ran,
 * "lost_updates". The totals in "modes" are counted once the writes still
 * in flight landed: they may exceed the last entry.
 */
static json_object *j_series(const fb_report *rp)
{
	const fb_sample *s = rp->series;
	size_t n = rp->nseries;
	json_object *o = json_object_new_object(), *t = json_object_new_array(),
	            *ops = json_object_new_array(), *rate = json_object_new_array(),
	            *faults = json_object_new_array(), *modes = json_object_new_object();
	fb_sample zero = {0};
	for (size_t i = 0; i < n; i++) {
		json_object_array_add(t, json_object_new_double(s[i].t_s));
		json_object_array_add(ops, j_u(s[i].ops));
		json_object_array_add(rate, json_object_new_double(
		                                    round(ops_rate(i ? &s[i - 1] : &zero, &s[i]))));
		json_object_array_add(faults, j_u(s[i].faults));
	}
	json_object_object_add(o, "t_s", t);
	json_object_object_add(o, fb_metrics[FB_M_OPS].json, ops);
	json_object_object_add(o, fb_metrics[FB_M_THROUGHPUT].csv, rate); /* the CSV's name */
	json_object_object_add(o, "faults", faults);
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		if (!(rp->cfg->modes & (1u << d)))
			continue;
		json_object *m = json_object_new_object();
		for (int c = 0; c < S_COLS; c++)
			if (c != S_LOST || (n && s[0].checked))
				json_object_object_add(m, fb_metrics[scol_metric[c]].json,
				                       j_column(s, n, (scol)c, d));
		json_object_object_add(modes, fb_discipline_key((fb_discipline)d), m);
	}
	json_object_object_add(o, "modes", modes);
	return o;
}

static void j_footer(json_object *doc, const fb_config *cfg, int exit_code)
{
	json_object_object_add(doc, "exit_code", j_u((uint64_t)exit_code));
	char replay[1024];
	fb_config_replay(cfg, replay, sizeof replay);
	json_object_object_add(doc, "replay", json_object_new_string(replay));
}

static json_object *j_document(const fb_report *rp, const fb_results *res, int exit_code)
{
	json_object *doc = j_header(rp, "run", res->interrupted, res->signal, res->clock_name);
	json_object_object_add(doc, "elapsed_s", json_object_new_double(res->elapsed_s));
	json_object_object_add(doc, "run", j_run(res));
	json_object_object_add(doc, "modes", j_modes(res));
	json_object_object_add(doc, "first_corruption", fb_story_json(res));
	json_object_object_add(doc, "series", j_series(rp));
	j_footer(doc, rp->cfg, exit_code);
	return doc;
}

/*
 * HdrHistogram's "classic" percentile distribution text, which its
 * plotting tools read: Value (here microseconds), Percentile, TotalCount,
 * 1/(1-Percentile), reported at 5 ticks per halving of the distance to 100%.
 */
/* One histogram's file, written into out (begun here, committed by the
 * caller). 0, or -1 with errno set and nothing begun. */
static int write_hdr(const char *path, const fb_hist *h, fb_outfile_stream *out)
{
	fb_outfile o;
	char why[300];
	if (fb_outfile_check(path, &o, why, sizeof why) || fb_outfile_begin(&o, out))
		return -1;
	FILE *f = out->f;
	/* the unit, for readers other than HdrHistogram's own plotter */
	fprintf(f, "# fencebench %s latency, Value in microseconds\n", path);
	fprintf(f, "%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount",
	        "1/(1-Percentile)");
	double sum = 0, sumsq = 0;
	uint64_t count = 0;
	for (unsigned i = 0; i < FB_HIST_BUCKETS; i++) {
		if (!h->b[i])
			continue;
		double v = (double)fb_hist_bucket_top(i) / 1e3;
		sum += v * (double)h->b[i];
		sumsq += v * v * (double)h->b[i];
	}
	double q = 0;
	for (int half = 0; h->count && half < 40 && q < 1.0; half++) {
		double base = 1.0 - 1.0 / (double)(1ull << half),
		       span = 1.0 / (double)(2ull << half);
		for (int tick = 0; tick < 5; tick++) {
			q = base + span * tick / 5.0;
			uint64_t v = fb_hist_quantile(h, q);
			count = fb_hist_count_upto(h, v);
			fprintf(f, "%12.3f %2.12f %10llu %14.2f\n", (double)v / 1e3, q,
			        (unsigned long long)count, 1.0 / (1.0 - q));
			if (count >= h->count) {
				q = 1.0;
				break;
			}
		}
	}
	if (h->count)
		fprintf(f, "%12.3f %2.12f %10llu\n", (double)h->max / 1e3, 1.0,
		        (unsigned long long)h->count);
	double mean = h->count ? sum / (double)h->count : 0;
	double var = h->count ? sumsq / (double)h->count - mean * mean : 0;
	fprintf(f, "#[Mean    = %12.3f, StdDeviation   = %12.3f]\n", mean, var > 0 ? sqrt(var) : 0);
	fprintf(f, "#[Max     = %12.3f, Total count    = %12llu]\n", (double)h->max / 1e3,
	        (unsigned long long)h->count);
	fprintf(f, "#[Buckets = %12d, SubBuckets     = %12d]\n", FB_HIST_BUCKETS,
	        1 << FB_HIST_SUB_BITS);
	return 0;
}

/* The three files are one set: each written and flushed before any is
 * named, so a disk that fills leaves none of them rather than some. */
int fb_report_hdr(const char *prefix, const fb_results *res)
{
	static const char *const names[] = {"acquire", "write", "cycle"};
	const fb_hist *h[] = {&res->acquire, &res->write, &res->cycle};
	fb_outfile_stream out[3];
	char path[3][4096];
	int begun = 0, named = 0, bad = -1;
	for (int i = 0; i < 3 && bad < 0; i++) {
		snprintf(path[i], sizeof path[i], "%s.%s.hdr", prefix, names[i]);
		if (write_hdr(path[i], h[i], &out[i]))
			bad = i;
		else if (begun++, fflush(out[i].f) || ferror(out[i].f))
			bad = i;
	}
	for (int i = 0; i < 3 && bad < 0; i++)
		if (fb_outfile_commit(&out[i]))
			bad = i; /* a rename or a sync: those before it are named */
		else
			named++;
	int e = errno;
	for (int i = 0; i < begun; i++)
		if (out[i].f)
			fb_outfile_abandon(&out[i]);
	if (bad < 0)
		return 0;
	fprintf(stderr,
	        "fencebench: --hdr-file: cannot write '%s': errno=%d (%s); %s of the three "
	        "files written\n",
	        path[bad], e, strerror(e), named ? "some" : "none");
	return -1;
}

/* An output written where it goes, saying on stderr what failed. */
/* The document's text, in three parts: head, a sweep's rows (NULL: none)
 * copied from their file, tail. */
typedef struct doc_text {
	const char *head, *tail;
	FILE *rows;
} doc_text;

/* Copy the rows' file into out, from its start. 0, or -1 with errno set. */
static int copy_rows(FILE *rows, FILE *out)
{
	char buf[65536];
	size_t n;
	rewind(rows);
	while ((n = fread(buf, 1, sizeof buf, rows)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			return -1;
	return ferror(rows) ? -1 : 0;
}

static int put_text(const char *path, const doc_text *t)
{
	fb_outfile o;
	fb_outfile_stream s;
	char why[256];
	if (fb_outfile_check(path, &o, why, sizeof why) || fb_outfile_begin(&o, &s))
		return -1;
	if (fputs(t->head, s.f) == EOF || (t->rows && copy_rows(t->rows, s.f)) ||
	    fputs(t->tail, s.f) == EOF || fputc('\n', s.f) == EOF) {
		int e = errno;
		fb_outfile_abandon(&s);
		errno = e;
		return -1;
	}
	return fb_outfile_commit(&s);
}

static int write_out(const char *opt, const char *path, const doc_text *t)
{
	if (put_text(path, t) == 0)
		return 0;
	if (errno == ENXIO) { /* a FIFO: outfile.h */
		fprintf(stderr, "fencebench: %s%sno reader opened the FIFO '%s' within %d s\n",
		        opt ? opt : "", opt ? ": " : "", path, FB_OUTFILE_FIFO_WAIT_MS / 1000);
		return -1;
	}
	fprintf(stderr, "fencebench: %s%scannot write '%s': errno=%d (%s)\n", opt ? opt : "",
	        opt ? ": " : "", path, errno, strerror(errno));
	return -1;
}

/* Write the document where it goes and finish the CSV: the summary out and
 * the results directory first, --json last, since a FIFO there waits for
 * its reader (and a second signal in that wait must lose nothing else). */
static int emit_text(fb_report *rp, const doc_text *t)
{
	int rc = 0;
	fflush(stdout);
	if (!rp->dir_ok) {
		fprintf(stderr, "fencebench: %s; no results written there\n", rp->dir_error);
		rc = -1;
	} else {
		/* The JSON and the CSV are one run's pair: a CSV is not left
		 * without its JSON, and whatever of the pair is lost is said,
		 * naming the option whose directory could not take it. */
		FILE *say = rp->cfg->deterministic ? stderr : stdout; /* same stdout a seed */
		rp->csv = NULL;
		if (put_text(rp->json_path, t)) {
			int e = errno;
			fb_outfile_abandon(&rp->csv_out);
			fprintf(stderr,
			        "fencebench: -o/--results-dir: cannot write '%s': errno=%d (%s); "
			        "neither this run's JSON nor its CSV is in '%s'%s\n",
			        rp->json_path, e, strerror(e), rp->cfg->results_dir,
			        rp->cfg->json_path ? ""
			                           : " (the summary above is all that is kept)");
			rc = -1;
		} else if (fb_outfile_commit(&rp->csv_out)) {
			fprintf(stderr,
			        "fencebench: -o/--results-dir: cannot write '%s': errno=%d (%s); "
			        "the "
			        "JSON is written without it\n",
			        rp->csv_path, errno, strerror(errno));
			fprintf(say, "results: %s\n", rp->json_path);
			rc = -1;
		} else {
			fprintf(say, "results: %s  %s\n", rp->json_path, rp->csv_path);
		}
		fflush(stdout);
	}
	if (rp->cfg->json_path && write_out("--json", rp->cfg->json_path, t))
		rc = -1;
	free(rp->series);
	rp->series = NULL;
	rp->nseries = rp->series_cap = 0;
	return rc;
}

static const char *doc_string(json_object *doc)
{
	return json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
	                                                   JSON_C_TO_STRING_NOSLASHESCAPE);
}

static int emit(fb_report *rp, json_object *doc)
{
	doc_text t = {doc_string(doc), "", NULL};
	int rc = emit_text(rp, &t);
	json_object_put(doc);
	return rc;
}

void fb_report_reasons(FILE *out, const fb_results *res)
{
	const fb_witness_counts *l = &res->lease;
	if (res->core_skew_ns > res->clock_slack_ns)
		fprintf(out,
		        " clock NOT JUDGED (two cores read %s apart: the lease's timing is the "
		        "clock's);",
		        D(res->core_skew_ns));
	if (fb_witness_total(l))
		fprintf(out,
		        " lease VIOLATED (%s fences not above the one they replaced, %s handed out "
		        "twice, %s out of acquisition order, %s two live holders, %s held past the "
		        "TTL, %s renewed for a non-holder, %s renewed after expiry);",
		        G(l->regressions), G(l->duplicates), G(l->inversions), G(l->overlaps),
		        G(l->held_past_ttl), G(l->renew_taken), G(l->renew_expired));
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		const fb_mode_result *m = &res->mode[d];
		const char *name = fb_column(res, (fb_discipline)d);
		if (!m->on)
			continue;
		if (!m->checker_agrees)
			fprintf(out, " %s: checker disagrees: %s;", name, m->disagreement);
		if (d != FB_UNFENCED && m->stale_accepted)
			fprintf(out, " %s accepted %s stale writes;", name, G(m->stale_accepted));
		bool reads = d != FB_FENCED || !reads_declared_unfenced(res);
		if (d == FB_FENCED && reads && m->lost_updates)
			fprintf(out, " %s lost %s updates;", name, G(m->lost_updates));
		if (m->false_rejections)
			fprintf(out, " %s refused its rightful holder %s times;", name,
			        G(m->false_rejections));
		if (reads && m->stale_reads)
			fprintf(out, " %s served %s stale reads;", name, G(m->stale_reads));
		if (d == FB_WRITE_FENCED && fb_report_not_a_control(res))
			fprintf(out, " %s is not a control (no update lost in %s chances);", name,
			        G(m->control_chances));
	}
}

void fb_report_seed_line(FILE *out, const fb_results *res)
{
	const fb_mode_result *f = &res->mode[FB_FENCED], *w = &res->mode[FB_WRITE_FENCED],
	                     *u = &res->mode[FB_UNFENCED];
	fprintf(out, "seed %-6llu hash 0x%016llx", (unsigned long long)res->sim.seed,
	        (unsigned long long)res->sim.hash);
	if (u->on)
		fprintf(out, "  unfenced stale %-5llu lost %-7lld",
		        (unsigned long long)u->stale_accepted, (long long)u->lost_updates);
	if (w->on)
		fprintf(out, "  write-fenced stale %llu lost %-5lld",
		        (unsigned long long)w->stale_accepted, (long long)w->lost_updates);
	if (f->on)
		fprintf(out, "  fenced stale %llu lost %lld", (unsigned long long)f->stale_accepted,
		        (long long)f->lost_updates);
	if (fb_report_verdict(res)) {
		fprintf(out, "  FAIL !!!");
		fb_report_reasons(out, res);
	} else if (!stale_attempts(res)) {
		fprintf(out, "  vacuous: no stale write attempted");
	}
	fprintf(out, "\n");
}

void fb_report_sweep_line(FILE *out, const fb_config *row, const fb_results *res, bool first)
{
	static bool said_above; /* the note under the first row above its floor */
	if (first)
		said_above = false;
	if (first)
		fprintf(out, "%7s %-8s %-12s %7s %12s %7s %10s %10s %10s %14s %6s\n", "threads",
		        "fence", "dist", "pause/s", "ops/s", "x floor", "cycle p99", "fenced",
		        "wf lost", "unfenced stale", "agree");
	char dist[64], fr[16] = "-";
	fb_dist_format(dist, sizeof dist, &row->dist);
	bool above = res->floor_ops_s > 0 && throughput(res) > res->floor_ops_s;
	if (res->floor_ops_s > 0)
		snprintf(fr, sizeof fr, "%.2f%s", throughput(res) / res->floor_ops_s,
		         above ? "*" : "");
	const fb_mode_result *f = &res->mode[FB_FENCED], *w = &res->mode[FB_WRITE_FENCED],
	                     *u = &res->mode[FB_UNFENCED];
	bool agree = (!f->on || f->checker_agrees) && (!w->on || w->checker_agrees) &&
	             (!u->on || u->checker_agrees);
	fprintf(out, "%7u %-8s %-12s %7g %12s %7s %10s %10s %10s %14s %6s\n", row->threads,
	        fb_fence_source_name(row->fence), dist,
	        fb_config_fault(row, FB_FAULT_PAUSE) ? row->pause_rate : 0.0, G(throughput(res)),
	        fr, D(fb_hist_quantile(&res->cycle, 0.99)),
	        !f->on                                                ? "-"
	        : fenced_broken(res) || fb_witness_total(&res->lease) ? "VIOLATED"
	        : !stale_attempts(res)                                ? "vacuous"
	                                                              : "safe",
	        w->on ? G(w->lost_updates) : "-", u->on ? G(u->stale_accepted) : "-",
	        agree ? "yes" : "NO");
	if (above && !said_above)
		fprintf(out, "        *%s\n", FLOOR_NO_BOUND);
	said_above |= above;
	fflush(out);
}

void fb_report_row_begin(fb_report *rp, const fb_config *row)
{
	rp->row = row;
	memset(&rp->last, 0, sizeof rp->last);
	rp->nseries = 0;
}

int fb_report_write(fb_report *rp, const fb_results *res, int exit_code)
{
	return emit(rp, j_document(rp, res, exit_code));
}

void fb_report_add_row(fb_report *rp, const fb_config *row, const fb_results *res)
{
	json_object *o = json_object_new_object();
	char dist[64];
	fb_dist_format(dist, sizeof dist, &row->dist);
	json_object_object_add(o, "threads", j_u(row->threads));
	json_object_object_add(o, "fence",
	                       json_object_new_string(fb_fence_source_name(row->fence)));
	json_object_object_add(o, "dist", json_object_new_string(dist));
	json_object_object_add(o, "pause_rate", json_object_new_double(row->pause_rate));
	if (res->sim.deterministic)
		json_object_object_add(o, "seed", j_u(res->sim.seed));
	if (rp->cfg->swarm) { /* each row its own configuration, as the document's is */
		json_object *c = json_object_new_object();
		fb_config_visitor vis = {v_num, v_int, v_str, v_strs, v_bool, v_nums};
		fb_config_visit(row, &vis, c);
		json_object_object_add(o, "config", c);
		char replay[1024];
		fb_config_replay(row, replay, sizeof replay);
		json_object_object_add(o, "replay", json_object_new_string(replay));
	}
	json_object_object_add(o, "elapsed_s", json_object_new_double(res->elapsed_s));
	json_object_object_add(o, "run", j_run(res));
	json_object_object_add(o, "modes", j_modes(res));
	json_object_object_add(o, "series", j_series(rp));
	if (!rp->clock_name)
		rp->clock_name = res->clock_name;
	if (!rp->rows) {
		/* beside the results, so the disk that takes the document takes
		 * its rows; else the system's temporary directory */
		int fd = rp->dir_ok
		                 ? open(rp->cfg->results_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)
		                 : -1;
		rp->rows = fd >= 0 ? fdopen(fd, "w+") : tmpfile();
		if (!rp->rows && fd >= 0)
			close(fd);
	}
	/* an element of the document's "rows", as json-c would indent it
	 * there (a raw newline cannot be inside a JSON string: each is one of
	 * the layout's) */
	const char *text = doc_string(o);
	if (rp->rows) {
		fputs(rp->nrows ? ",\n    " : "\n    ", rp->rows);
		for (const char *c = text; *c; c++)
			if (*c == '\n')
				fputs("\n    ", rp->rows);
			else
				putc(*c, rp->rows);
		rp->nrows++;
	} else {
		rp->rows_lost++;
	}
	json_object_put(o);
}

/* The "rows" value stands for the rows' text while the rest is laid out. */
#define ROWS_MARK "fencebench:rows"

int fb_report_write_sweep(fb_report *rp, int exit_code, bool interrupted, int sig)
{
	json_object *doc = j_header(rp, "sweep", interrupted, sig,
	                            rp->clock_name ? rp->clock_name : "unknown");
	json_object_object_add(doc, "rows", json_object_new_string(ROWS_MARK));
	j_footer(doc, rp->cfg, exit_code);
	const char *laid = doc_string(doc);
	/* the only unescaped `"rows":"` is the key's: a quote in a value is \" */
	const char *at = strstr(laid, "\"rows\":\"" ROWS_MARK "\"");
	const char *rest = at + strlen("\"rows\":\"" ROWS_MARK "\"");
	size_t head_len = (size_t)(at - laid) + strlen("\"rows\":[");
	char *head = malloc(head_len + 1), *tail = malloc(strlen(rest) + 8);
	int rc = -1;
	bool kept = !rp->rows_lost && (!rp->rows || (fflush(rp->rows) == 0 && !ferror(rp->rows)));
	if (!kept)
		fprintf(stderr,
		        "fencebench: the sweep's rows could not all be kept (%llu of %llu "
		        "lost, errno=%d); the document has the others\n",
		        (unsigned long long)rp->rows_lost,
		        (unsigned long long)(rp->nrows + rp->rows_lost), errno);
	if (head && tail) {
		snprintf(head, head_len + 1, "%.*s\"rows\":[", (int)(at - laid), laid);
		snprintf(tail, strlen(rest) + 8, "\n  ]%s", rest);
		doc_text t = {head, tail, rp->rows};
		rc = emit_text(rp, &t);
	} else {
		fprintf(stderr, "fencebench: cannot lay out the sweep's document: out of memory\n");
	}
	free(head);
	free(tail);
	json_object_put(doc);
	if (rp->rows)
		fclose(rp->rows);
	rp->rows = NULL;
	rp->nrows = rp->rows_lost = 0;
	return kept ? rc : -1;
}

void fb_report_abandon(const fb_report *rp)
{
	if (rp->csv_out.named) /* no O_TMPFILE here: the temporary has a name */
		unlink(rp->csv_out.tmp);
}
