/*
 * The hard edges, as a demanding new user meets them: a run stops on time
 * whatever it was told to sleep; durations need units; outputs never
 * clobber a device or a link; plans, lists and documents are judged as
 * input; an option that would be ignored is refused. Each class one test,
 * through the real binary.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fbproc.h"
#include "fbtest.h"

/* Run with args, killed if it runs past limit_s; its exit code. */
static int run_within(fb_test_proc *p, const char *const *args, unsigned limit_s)
{
	fb_test_start_within(p, args, limit_s);
	return fb_test_finish(p);
}

/* A one-line error naming `must_say`, and exit `code`. */
static void refused(const char *const *args, int code, const char *must_say)
{
	fb_test_proc p;
	int got = fb_test_run(&p, args);
	check(got == code, "%s: exit %d, expected %d: %s", must_say, got, code, p.err);
	check(strstr(p.err, must_say), "stderr must say \"%s\", it said: %s", must_say, p.err);
	check(strchr(p.err, '\n') == p.err + strlen(p.err) - 1, "exactly one line: %s", p.err);
	fb_test_release(&p);
}

/* Hours of TTL, of pause, of a planned pause: every sleep ends with the
 * run. The bound is a hang's, not a speed's. */
static void test_a_run_stops_on_time_whatever_it_sleeps(void **state)
{
	(void)state;
	char *dir = fb_test_tmpdir(), plan[300];
	snprintf(plan, sizeof plan, "%s/huge.plan", dir);
	FILE *f = fopen(plan, "w");
	fprintf(f, "# fencebench fault plan 1\n1 2 pause after-read holding 3600000000000000 0\n"
	           "2 2 pause any holding 3600000000000000 0\n");
	fclose(f);
	const char *ttl[] = {"--ttl", "10h", "-d", "1s", "-q", "--no-floor", "-o", dir, NULL};
	const char *pause[] = {"--pause", "20s", "-d", "1s", "-q", "--no-floor", "-o", dir, NULL};
	const char *planned[] = {"-t", "2", "-d",     "1s", "-q", "--no-floor",
	                         "-o", dir, "--plan", plan, NULL};
	const char *const *cases[] = {ttl, pause, planned};
	const char *what[] = {"--ttl 10h", "--pause 20s", "a planned pause of 1000 hours"};
	for (int i = 0; i < 3; i++) {
		fb_test_proc p;
		int code = run_within(&p, cases[i], 20);
		check(code != 128 + SIGALRM, "%s -d 1s still ran after 20 s", what[i]);
		check_eq(code, 0, what[i]);
		check(strstr(p.out, "cut short") || i == 0,
		      "%s: the summary says the pauses were cut "
		      "short:\n%s",
		      what[i], p.out);
		fb_test_release(&p);
	}
	/* Ctrl-C in the middle of a 20 s pause of a 60 s run */
	const char *longrun[] = {"--pause",    "20s", "-d", "60s", "-q",
	                         "--no-floor", "-o",  dir,  NULL};
	fb_test_proc p;
	fb_test_start_within(&p, longrun, 20);
	char out[400];
	snprintf(out, sizeof out, "%s/stdout", p.dir);
	struct stat st;
	for (int i = 0; i < 5000 && (stat(out, &st) || st.st_size == 0); i++)
		usleep(1000); /* until its header is out: the run is under way */
	usleep(300000);       /* and its workers are in their pauses */
	kill(p.pid, SIGINT);
	int code = fb_test_finish(&p);
	check(code == 128 + SIGINT, "Ctrl-C ends it (exit %d)", code);
	fb_test_release(&p);
	fb_test_rmtree(dir);
	free(dir);
}

static void test_durations_other_than_the_runs_need_a_unit(void **state)
{
	(void)state;
	const char *ttl[] = {"--ttl", "10", NULL};
	refused(ttl, 2, "--ttl: '10' has no unit (units: ns us ms s m h");
	const char *pause[] = {"--pause", "15-30ms", NULL};
	refused(pause, 2, "--pause: '15-30ms' has no unit");
	const char *skew[] = {"--faults", "skew", "--skew", "3", NULL};
	refused(skew, 2, "--skew: '3' has no unit");
	const char *huge[] = {"-d", "1e30", NULL};
	refused(huge, 2, "--duration: '1e30' is too large");
	const char *zero[] = {"-d", "0.0000000001s", NULL};
	refused(zero, 2, "is not a duration above zero");
	/* and what --help says works, works */
	char *dir = fb_test_tmpdir();
	const char *ok[] = {"-d",  "1",  "--ttl",      "10ms", "--work", "0", "--mode",
	                    "all", "-q", "--no-floor", "-o",   dir,      NULL};
	fb_test_proc p;
	check_eq(fb_test_run(&p, ok), 0, "-d 1 (seconds), --work 0, --mode all");
	fb_test_release(&p);
	fb_test_rmtree(dir);
	free(dir);
}

/* An output is written in place when it is a device, followed when it is a
 * link, and judged before the run. */
static void test_outputs_never_clobber_what_is_not_theirs(void **state)
{
	(void)state;
	char *dir = fb_test_tmpdir(), link[300], target[300];
	snprintf(link, sizeof link, "%s/link.json", dir);
	snprintf(target, sizeof target, "%s/target.json", dir);
	check(symlink("target.json", link) == 0, "a symlink");
	const char *viaLink[] = {"-d", "100ms",  "-q", "--no-floor", "-o",
	                         dir,  "--json", link, NULL};
	fb_test_proc p;
	check_eq(fb_test_run(&p, viaLink), 0, "--json through a symlink");
	fb_test_release(&p);
	struct stat st;
	check(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "the link is still a link");
	check(stat(target, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 100,
	      "its target got the document");
	const char *full[] = {"-d", "100ms",  "-q",        "--no-floor", "-o",
	                      dir,  "--json", "/dev/full", NULL};
	check_eq(fb_test_run(&p, full), 3, "--json /dev/full: written in place, and full");
	fb_test_release(&p);
	check(stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode), "/dev/full is still a device");
	const char *nodir[] = {"-d", "10s", "-o", dir, "--json", "/nonexistent/x.json", NULL};
	refused(nodir, 3, "--json: '/nonexistent/x.json' cannot be written: its directory");
	const char *planout[] = {"-d", "10s", "-o", dir, "--plan-out", "/nonexistent/p", NULL};
	refused(planout, 3, "--plan-out: '/nonexistent/p' cannot be written");
	const char *isdir[] = {"-d", "10s", "-o", dir, "--json", dir, NULL};
	refused(isdir, 3, "is a directory");
	char names[1024];
	fb_test_listdir(dir, names, sizeof names);
	check(!strstr(names, ".tmp"), "no temporary file left:\n%s", names);
	fb_test_rmtree(dir);
	free(dir);
}

static void test_plans_are_judged_as_input(void **state)
{
	(void)state;
	char *dir = fb_test_tmpdir(), path[300];
	struct {
		const char *text, *must_say;
	} cases[] = {
	        {"", "empty: not a fault plan"},
	        {"# fencebench fault plan 1\n", "no fault in the plan"},
	        {"# fencebench fault plan 2\n1 1 pause after-read holding 1000 0\n",
	         ":1: a fault plan of format 2"},
	        {"1 1 pause after-read holding 1000 0\n", ":1: not a fault plan"},
	        {"# fencebench fault plan 1\n1 3 server-pause after-read holding 1000 0\n",
	         ":2: worker 1, server-pause: server-pause is the lease service's fault"},
	        {"# fencebench fault plan 1\n0 3 skew service - 1000 0\n",
	         "needs --lease-clock realtime"},
	};
	snprintf(path, sizeof path, "%s/p.plan", dir);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		FILE *f = fopen(path, "w");
		fputs(cases[i].text, f);
		fclose(f);
		const char *args[] = {"-d", "1s", "-o", dir, "--plan", path, NULL};
		refused(args, 2, cases[i].must_say);
	}
	const char *adir[] = {"-d", "1s", "-o", dir, "--plan", dir, NULL};
	refused(adir, 2, "is a directory, not a fault plan");
	const char *sweep[] = {"-t", "1,2", "-o", dir, "--plan-out", path, NULL};
	refused(sweep, 2, "--plan-out: a plan is one run's faults");
	fb_test_rmtree(dir);
	free(dir);
}

static void test_lists_have_one_rule(void **state)
{
	(void)state;
	struct {
		const char *opt, *value, *must_say;
	} cases[] = {
	        {"-t", "1,,2", "--threads: '1,,2' has an empty element"},
	        {"-t", "1,", "--threads: '1,' has an empty element"},
	        {"-t", "2,2", "--threads: '2,2' names '2' twice"},
	        {"--mode", "fenced,,unfenced", "--mode: 'fenced,,unfenced' has an empty element"},
	        {"--mode", "fenced,fenced", "names 'fenced' twice"},
	        {"--mode", "write-fenced,write_fenced", "names one twice"},
	        {"--faults", "pause,,skew", "--faults: 'pause,,skew' has an empty element"},
	        {"--cpus", "0,,1", "--cpus: '0,,1' has an empty element"},
	        {"--cpus", "0-1,1", "names a CPU twice"},
	        {"--percentiles", "50,,99", "--percentiles: '50,,99' has an empty element"},
	        {"--percentiles", "99,50,50", "names '50' twice"},
	        {"--pause-rate", "10,10", "names '10' twice"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		const char *args[] = {cases[i].opt, cases[i].value, NULL};
		refused(args, 2, cases[i].must_say);
	}
	const char *floor_list[] = {"floor", "-t", "1,", NULL};
	refused(floor_list, 2, "has an empty element");
	/* percentiles: sorted, and each labelled with the value asked for */
	char *dir = fb_test_tmpdir();
	const char *pcts[] = {"-d", "200ms",         "--no-floor",       "-o",
	                      dir,  "--percentiles", "99.9999999,50,99", NULL};
	fb_test_proc p;
	check_eq(fb_test_run(&p, pcts), 0, "three percentiles");
	const char *cycle = strstr(p.out, "  cycle ");
	check(cycle, "a cycle latency line:\n%s", p.out);
	const char *a = strstr(cycle, " p50 "), *b = strstr(cycle, " p99 "),
	           *c = strstr(cycle, " p99.9999999 ");
	check(a && b && c && a < b && b < c, "sorted, labelled as asked: %.120s", cycle);
	fb_test_release(&p);
	fb_test_rmtree(dir);
	free(dir);
}

/* What --help says is the default is accepted; what a run would ignore is
 * refused; a message says what is wrong. */
static void test_options_that_would_be_ignored_are_refused(void **state)
{
	(void)state;
	const char *pr[] = {"--faults", "crash", "--pause-rate", "100", NULL};
	refused(pr, 2, "--pause-rate: its fault, pause, is not among --faults");
	const char *seeds[] = {"--deterministic", "--seeds", "1..3", "--seed", "2", NULL};
	refused(seeds, 2, "--seed: --seeds names the seeds already");
	const char *hist[] = {"--history", "h.txt", NULL};
	refused(hist, 2, "--history: only with --deterministic");
	const char *steps[] = {"--steps", "100", NULL};
	refused(steps, 2, "--steps: only with --deterministic");
	const char *hdr[] = {"-t", "1,2", "--hdr-file", "x", NULL};
	refused(hdr, 2, "--hdr-file: a sweep has many runs");
	const char *lease[] = {"--lease", "", NULL};
	refused(lease, 2, "--lease: '' is empty");
	const char *prog[] = {"-q", "--progress", "always", NULL};
	refused(prog, 2, "--progress: 'always' and -q");
	const char *det[] = {"--deterministic", "-d", "5s", NULL};
	refused(det, 2, "--duration: not for --deterministic");
}

/* One of a thing is said in the singular, wherever the summary counts it:
 * a one-thread run with one fault of each kind that counts in ones. */
static void test_words_add_up(void **state)
{
	(void)state;
	char *dir = fb_test_tmpdir();
	const char *args[] = {"-t", "1", "-d", "300ms", "--pause-rate", "3", "-o", dir, NULL};
	fb_test_proc p;
	int code = fb_test_run(&p, args);
	check(code == 0, "a one-thread run: exit %d\n%s", code, p.err);
	static const char *const plural[] = {"threads", "workers", "debits", "writes", "reads",
	                                     "pauses",  "leases",  "fences", "times"};
	for (const char *q = p.out; (q = strstr(q, "1 ")) != NULL; q++) {
		if (q > p.out && (q[-1] == '.' || q[-1] == ',' || (q[-1] >= '0' && q[-1] <= '9')))
			continue; /* 0.1, 2,001, 11 */
		for (size_t i = 0; i < sizeof plural / sizeof plural[0]; i++)
			check(strncmp(q + 2, plural[i], strlen(plural[i])),
			      "'1 %s' in the summary:\n%s", plural[i], p.out);
	}
	check(strstr(p.out, "1 thread)") != NULL, "the floor's thread count in words:\n%s", p.out);
	fb_test_release(&p);
	fb_test_rmtree(dir);
	free(dir);
}

/* plot and compare name the first bad value by its JSON path. */
static void test_documents_are_judged_by_path(void **state)
{
	(void)state;
	char *dir = fb_test_tmpdir(), src[300], bad[300];
	snprintf(src, sizeof src, "%s/data/sweep-threads.json", getenv("FB_TESTS"));
	snprintf(bad, sizeof bad, "%s/bad.json", dir);
	struct {
		const char *path, *value, *must_say;
	} cases[] = {
	        {"rows.3.modes.fenced.throughput_ops_s", "\"fast\"",
	         "rows[3].modes.fenced.throughput_ops_s: \"fast\" is not a number"},
	        {"rows.0.modes.unfenced.throughput_ops_s", "-5e300", "is below zero"},
	        {"rows.2.threads", "\"x\"",
	         "rows[2].threads: \"x\" is not a positive whole number"},
	        {"rows.1.threads", "0", "rows[1].threads: 0 is not a positive whole number"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		json_object *doc = json_object_from_file(src);
		check(doc, "the sweep document parses");
		/* set the value at path (rows.N.k.k...) */
		char path[200];
		snprintf(path, sizeof path, "%s", cases[i].path);
		json_object *o = doc;
		char *save, *tok = strtok_r(path, ".", &save), *next;
		while ((next = strtok_r(NULL, ".", &save))) {
			o = json_object_is_type(o, json_type_array)
			            ? json_object_array_get_idx(o, (size_t)atoi(tok))
			            : json_object_object_get(o, tok);
			tok = next;
		}
		json_object_object_add(o, tok, json_tokener_parse(cases[i].value));
		json_object_to_file(bad, doc);
		json_object_put(doc);
		const char *plot[] = {"plot", bad, "-o", dir, NULL};
		refused(plot, 2, cases[i].must_say);
		const char *cmp[] = {"compare", bad, src, NULL};
		refused(cmp, 2, cases[i].must_say);
	}
	json_object *doc = json_object_from_file(src);
	json_object_object_add(doc, "rows", json_object_new_array());
	json_object_to_file(bad, doc);
	json_object_put(doc);
	const char *cmp[] = {"compare", bad, bad, NULL};
	refused(cmp, 2, "a sweep of no rows");
	fb_test_rmtree(dir);
	free(dir);
}

/* What the last of two would have decided silently, what a run would
 * have done other than it said, is refused before the run header: one
 * line naming the option and the value, exit 2. */
static void test_what_was_accepted_silently_is_refused(void **state)
{
	(void)state;
	const char *twice[] = {"-t", "2", "-t", "3", NULL};
	refused(twice, 2, "--threads: given twice ('2', then '3')");
	const char *json[] = {"--json", "a", "--json", "b", NULL};
	refused(json, 2, "--json: given twice ('a', then 'b')");
	const char *help[] = {"--help=foo", NULL};
	refused(help, 2, "--help: takes no value ('--help=foo')");
	const char *cpus[] = {"--cpus", "999", NULL};
	refused(cpus, 2, "--cpus: CPU 999 is not one this process may run on");
	const char *part[] = {"-k", "1", "--dist", "partitioned", "-t", "8", NULL};
	refused(part, 2, "--dist: 'partitioned' gives each of the 8 workers keys of its own");
	const char *psweep[] = {"-k", "4", "--dist", "uniform,partitioned", "-t", "2,8", NULL};
	refused(psweep, 2, "-k 4 is fewer keys than workers");
	const char *port[] = {"--lease", "redis://127.0.0.1:99999", NULL};
	refused(port, 2, "--lease: 'redis://127.0.0.1:99999' is malformed: the port must be");
	struct {
		const char *opt, *url;
	} dup[] = {
	        {"--lease", "redis://127.0.0.1:6379?fence=incr&fence=script"},
	        {"--store", "redis://127.0.0.1:6379/0?fence=incr&fence=incr"},
	        {"--lease", "redlock://h:1,h:2,h:3?fence=incr&fence=none"},
	        {"--store", "postgres://u@h:5432/db?sslmode=disable&sslmode=require"},
	};
	/* (etcd:// and zk:// take no query at all; Redlock's faketime=N:FILE
	 * is a list, one a node: test_redlock runs two) */
	for (size_t i = 0; i < sizeof dup / sizeof *dup; i++) {
		const char *args[] = {dup[i].opt, dup[i].url, "-d", "1s", NULL};
		char must[300];
		snprintf(must, sizeof must,
		         "%s: '%s' is malformed: a query parameter is given twice", dup[i].opt,
		         dup[i].url);
		refused(args, 2, must);
	}
	/* a flag twice says the same thing once: still a run */
	char *dir = fb_test_tmpdir();
	const char *flags[] = {"-q", "-q", "-d", "50ms", "--no-floor", "-o", dir, NULL};
	fb_test_proc p;
	check_eq(fb_test_run(&p, flags), 0, "-q -q");
	fb_test_release(&p);
	fb_test_rmtree(dir);
	free(dir);
}

/* plot names a wrong type in a run's series by its path: a damaged
 * document, exit 2, never a chart skipped as "older than its series". */
static void test_a_series_of_the_wrong_type_is_named(void **state)
{
	(void)state;
	char *dir = fb_test_tmpdir(), bad[300];
	snprintf(bad, sizeof bad, "%s/bad.json", dir);
	const char *extra[] = {"-d", "1100ms", "--no-floor", NULL};
	fb_test_proc p;
	json_object *doc = fb_test_run_doc(&p, extra, 0);
	fb_test_release(&p);
	struct {
		const char *col, *must_say;
	} cases[] = {
	        {"t_s", "series.t_s: \"x\" is not an array of numbers"},
	        {"ops_per_s", "series.ops_per_s[0]: \"x\" is not a number"},
	        {NULL, "series: \"x\" is not an object"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		json_object *copy = NULL;
		json_object_deep_copy(doc, &copy, NULL);
		json_object *series = fb_test_json(copy, "series");
		check(series, "the run wrote a series");
		if (!cases[i].col)
			json_object_object_add(copy, "series", json_object_new_string("x"));
		else if (i == 0)
			json_object_object_add(series, cases[i].col, json_object_new_string("x"));
		else
			json_object_array_put_idx(fb_test_json(series, cases[i].col), 0,
			                          json_object_new_string("x"));
		json_object_to_file(bad, copy);
		json_object_put(copy);
		const char *plot[] = {"plot", bad, "-o", dir, NULL};
		refused(plot, 2, cases[i].must_say);
	}
	json_object_put(doc);
	fb_test_rmtree(dir);
	free(dir);
}

/* No figure the run cannot stand behind: no rate from a window never
 * measured, no percentile of nothing, no duration below what means
 * anything, and the time outside the window said when it is not small. */
static void test_figures_that_cannot_be_true_are_not_printed(void **state)
{
	(void)state;
	const char *d[] = {"-d", "1ns", NULL};
	refused(d, 2, "--duration: '1ns' is below 1ms, the shortest meaningful run");
	const char *ttl[] = {"--ttl", "1ns", NULL};
	refused(ttl, 2, "--ttl: '1ns' is below 1us, the shortest meaningful TTL");
	char *dir = fb_test_tmpdir();
	/* SIGTERM in the warm-up: nothing measured, no ops/s */
	const char *warm[] = {"--warmup", "1h", "-d", "1s", "-q", "--no-floor", "-o", dir, NULL};
	fb_test_proc p;
	fb_test_start_within(&p, warm, 60);
	char out[400];
	snprintf(out, sizeof out, "%s/stdout", p.dir);
	struct stat st;
	for (int i = 0; i < 20000 && (stat(out, &st) || st.st_size == 0); i++)
		usleep(1000); /* until its header is out: the run is under way */
	kill(p.pid, SIGTERM);
	check_eq(fb_test_finish(&p), 128 + SIGTERM, "SIGTERM in the warm-up");
	check(strstr(p.out, "nothing measured: interrupted") && strstr(p.out, "--warmup"),
	      "the summary says nothing was measured:\n%s", p.out);
	check(!strstr(p.out, "ops/s"), "and gives no rate:\n%s", p.out);
	check(!strstr(p.out, " p50 "), "nor a percentile:\n%s", p.out);
	fb_test_release(&p);
	/* no cycle timed: no percentiles of zeros */
	const char *none[] = {"-t", "2",          "-d", "10ms", "--sample", "1048576",
	                      "-q", "--no-floor", "-o", dir,    NULL};
	check_eq(fb_test_run(&p, none), 0, "--sample 1048576");
	check(strstr(p.out, "(0 samples): no cycle was timed, so no percentile to show"),
	      "no samples, said so:\n%s", p.out);
	check(!strstr(p.out, " p50 "), "and no percentile printed:\n%s", p.out);
	fb_test_release(&p);
	/* a thousand workers take longer to start than a 10 ms window */
	const char *many[] = {"-t", "1000", "-d", "10ms", "-q", "--no-floor", "-o", dir, NULL};
	check_eq(run_within(&p, many, 120), 0, "-t 1000 -d 10ms");
	check(strstr(p.out, "starting 1000 workers;") &&
	              strstr(p.out, "from its end until all had stopped"),
	      "the start-up and the stop are said:\n%s", p.out);
	fb_test_release(&p);
	fb_test_rmtree(dir);
	free(dir);
}

/* A 64 KiB tmpfs at dir in this test's own mount namespace (the binary
 * inherits it), filled but for `room` bytes. False where this machine does
 * not allow it (a mount needs root): the caller skips, saying so. */
static bool small_disk(const char *dir, long room)
{
	static bool own_namespace;
	if (!own_namespace &&
	    (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)))
		return false;
	own_namespace = true;
	if (mount("none", dir, "tmpfs", 0, "size=64k"))
		return false;
	char fill[400];
	snprintf(fill, sizeof fill, "%s/filler", dir);
	int fd = open(fill, O_CREAT | O_WRONLY, 0644);
	char block[4096] = {0};
	long n = 0;
	ssize_t w;
	while (fd >= 0 && (w = write(fd, block, sizeof block)) > 0)
		n += w;
	check(fd >= 0 && ftruncate(fd, n > room ? n - room : 0) == 0, "the filler fills %s", dir);
	close(fd);
	return true;
}

/* What a full disk cost is said, naming the option and the path; what
 * was finished elsewhere is kept; no set is left in part. */
static void test_a_full_disk_loses_nothing_silently(void **state)
{
	(void)state;
	const char *proc[] = {"-o", "/proc/version", "-d", "1s", NULL};
	refused(proc, 3, "-o/--results-dir: '/proc/version' is not a directory");
	char *full = fb_test_tmpdir(), *ok = fb_test_tmpdir(), json[400], hdr[400];
	if (!small_disk(full, 0)) {
		fb_test_rmtree(full);
		fb_test_rmtree(ok);
		free(full);
		free(ok);
		fb_skip(NULL, "a full disk is a small tmpfs, and mounting one needs root");
	}
	char names[2048];
	fb_test_proc p;
	/* -o: the summary is printed, the pair is lost, and said so */
	const char *o[] = {"-d", "100ms", "-q", "--no-floor", "-o", full, NULL};
	check_eq(fb_test_run(&p, o), 3, "-o on a full disk");
	check(strstr(p.out, "stale accepted"), "the summary is printed:\n%s", p.out);
	check(strstr(p.err, "-o/--results-dir: cannot write '") && strstr(p.err, full) &&
	              strstr(p.err, "neither this run's JSON nor its CSV"),
	      "stderr names -o, the path, and what is lost: %s", p.err);
	fb_test_release(&p);
	fb_test_listdir(full, names, sizeof names);
	check(!strcmp(names, "filler\n"), "nothing left in part:\n%s", names);
	/* room for the CSV, not for the JSON: no CSV without its JSON */
	check(umount2(full, MNT_DETACH) == 0 && small_disk(full, 8192), "a disk with 8 KiB free");
	check_eq(fb_test_run(&p, o), 3, "-o on a nearly full disk");
	fb_test_release(&p);
	fb_test_listdir(full, names, sizeof names);
	check(!strcmp(names, "filler\n"), "no CSV without its JSON:\n%s", names);
	/* --json on a full disk: results/ is written, and said */
	check(umount2(full, MNT_DETACH) == 0 && small_disk(full, 0), "a full disk again");
	snprintf(json, sizeof json, "%s/x.json", full);
	const char *j[] = {"-d", "100ms", "-q", "--no-floor", "-o", ok, "--json", json, NULL};
	check_eq(fb_test_run(&p, j), 3, "--json on a full disk");
	check(strstr(p.out, "results: ") && strstr(p.out, ok), "the results line:\n%s", p.out);
	char want[500];
	snprintf(want, sizeof want, "--json: cannot write '%s': errno=28", json);
	check(strstr(p.err, want), "stderr names --json and its path: %s", p.err);
	fb_test_release(&p);
	fb_test_listdir(ok, names, sizeof names);
	check(strstr(names, ".json\n") && strstr(names, ".csv\n"), "results/ has both:\n%s", names);
	/* --hdr-file: room for one of the three files, and none is left */
	check(umount2(full, MNT_DETACH) == 0 && small_disk(full, 4096), "a disk with 4 KiB free");
	snprintf(hdr, sizeof hdr, "%s/h", full);
	const char *h[] = {"-d", "100ms", "-q", "--no-floor", "-o", ok, "--hdr-file", hdr, NULL};
	check_eq(fb_test_run(&p, h), 3, "--hdr-file on a nearly full disk");
	check(strstr(p.err, "--hdr-file: cannot write '") && strstr(p.err, full) &&
	              strstr(p.err, "none of the three files written"),
	      "stderr names --hdr-file, the path, and that none is written: %s", p.err);
	fb_test_release(&p);
	fb_test_listdir(full, names, sizeof names);
	check(!strcmp(names, "filler\n"), "no partial set of histograms:\n%s", names);
	umount2(full, MNT_DETACH);
	fb_test_rmtree(full);
	fb_test_rmtree(ok);
	free(full);
	free(ok);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_a_run_stops_on_time_whatever_it_sleeps),
	        cmocka_unit_test(test_durations_other_than_the_runs_need_a_unit),
	        cmocka_unit_test(test_outputs_never_clobber_what_is_not_theirs),
	        cmocka_unit_test(test_plans_are_judged_as_input),
	        cmocka_unit_test(test_lists_have_one_rule),
	        cmocka_unit_test(test_options_that_would_be_ignored_are_refused),
	        cmocka_unit_test(test_words_add_up),
	        cmocka_unit_test(test_documents_are_judged_by_path),
	        cmocka_unit_test(test_what_was_accepted_silently_is_refused),
	        cmocka_unit_test(test_a_series_of_the_wrong_type_is_named),
	        cmocka_unit_test(test_figures_that_cannot_be_true_are_not_printed),
	        cmocka_unit_test(test_a_full_disk_loses_nothing_silently),
	};
	return cmocka_run_group_tests_name("edges", tests, NULL, NULL);
}
