/*
 * `fencebench compare` and `fencebench plot`, run as the real binary (FB_BIN)
 * on the documents under tests/data/ (real runs and sweeps, trimmed of their
 * per-key and per-thread arrays): compare prints B/A ratios and refuses what
 * it cannot read with exit 2 and one line; plot writes the SVG charts that
 * apply (skipped when gnuplot is not installed), among them a run's time
 * series, drawn from a deterministic run's own document, and exits 3 with
 * the apt-get line when gnuplot is missing.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fbproc.h"
#include "fbtest.h"

extern char **environ;

typedef struct result {
	int code;
	char *out, *err;
} result;

/* A fixture under tests/data/ (FB_TESTS names tests/). */
static const char *data(const char *name)
{
	static char path[4][512];
	static int next;
	const char *t = getenv("FB_TESTS");
	char *p = path[next++ % 4];
	snprintf(p, sizeof path[0], "%s/data/%s", t ? t : "tests", name);
	return p;
}

/* Run FB_BIN with args (NULL-terminated) in env (NULL: ours). */
static result run_env(const char *const *args, char *const *env)
{
	int o[2], e[2];
	check(pipe(o) == 0 && pipe(e) == 0, "pipe failed: %s", strerror(errno));
	const char *argv[32];
	int n = 0;
	argv[n++] = fb_test_bin();
	for (; args[n - 1] && n < 31; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	pid_t pid = fork();
	check(pid >= 0, "fork failed: %s", strerror(errno));
	if (pid == 0) {
		dup2(o[1], 1);
		dup2(e[1], 2);
		close(o[0]);
		close(e[0]);
		execve(argv[0], (char *const *)argv, env ? env : environ);
		_exit(127);
	}
	close(o[1]);
	close(e[1]);
	result r;
	r.out = fb_test_slurp(o[0]);
	r.err = fb_test_slurp(e[0]);
	int st;
	waitpid(pid, &st, 0);
	r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	check(r.code != 127, "could not exec %s (set FB_BIN)", argv[0]);
	return r;
}

static result run(const char *const *args)
{
	return run_env(args, NULL);
}

static void release(result *r)
{
	free(r->out);
	free(r->err);
}

/* The line of text that contains what, copied into line; false if none. */
static bool line_with(const char *text, const char *what, char *line, size_t len)
{
	const char *at = strstr(text, what);
	if (!at)
		return false;
	const char *start = at, *end = strchr(at, '\n');
	while (start > text && start[-1] != '\n')
		start--;
	size_t n = end ? (size_t)(end - start) : strlen(start);
	snprintf(line, len, "%.*s", (int)(n < len ? n : len - 1), start);
	return true;
}

static size_t count(const char *text, const char *what)
{
	size_t n = 0;
	for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
		n++;
	return n;
}

/* fixture with one change (set is called on the parsed document), written
 * to dir/name; returns the path. */
static const char *variant(const char *dir, const char *fixture, const char *name,
                           void (*set)(json_object *doc))
{
	static char path[512];
	json_object *doc = json_object_from_file(data(fixture));
	check(doc != NULL, "fixture %s did not parse", data(fixture));
	set(doc);
	snprintf(path, sizeof path, "%s/%s", dir, name);
	check(json_object_to_file_ext(path, doc, JSON_C_TO_STRING_PRETTY) == 0, "cannot write %s",
	      path);
	json_object_put(doc);
	return path;
}

/* The whole file, NUL-terminated. */
static char *read_text(const char *path)
{
	FILE *f = fopen(path, "r");
	check(f != NULL, "%s was not written: %s", path, strerror(errno));
	char *text = fb_test_slurp(dup(fileno(f)));
	fclose(f);
	return text;
}

static bool gnuplot_installed(void)
{
	const char *path = getenv("PATH");
	char dir[4096], file[4200];
	snprintf(dir, sizeof dir, "%s", path ? path : "/usr/bin:/bin");
	for (char *save, *d = strtok_r(dir, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(file, sizeof file, "%s/gnuplot", d);
		if (access(file, X_OK) == 0)
			return true;
	}
	return false;
}

#define NEED_GNUPLOT()                                                                             \
	do {                                                                                       \
		if (!gnuplot_installed()) {                                                        \
			fprintf(stderr, "gnuplot is not installed: skipped (apt-get install "      \
			                "gnuplot-nox to run it)\n");                               \
			fb_skip("gnuplot-nox", "gnuplot is not installed");                        \
		}                                                                                  \
	} while (0)

/* ---- compare ---- */

static void test_compare_two_runs_prints_ratios_per_discipline(void **state)
{
	(void)state;
	const char *args[] = {"compare", data("run-a.json"), data("run-b.json"), NULL};
	result r = run(args);
	check_eq(r.code, 0, "exit code of compare on two runs");
	check(r.err[0] == 0, "nothing on stderr, got:\n%s", r.err);
	/* A 1,812,994 ops/s (8 threads, global fence), B 317,242 (per-key,
	 * seed 7): 0.17x */
	char line[256];
	check(line_with(r.out, "throughput (ops/s)", line, sizeof line), "a throughput line:\n%s",
	      r.out);
	check(strstr(line, "1,812,994") && strstr(line, "317,242") && strstr(line, "0.17x"),
	      "throughput A, B with thousands separators and B/A as 0.17x: '%s'", line);
	check_eq(count(r.out, "throughput (ops/s)"), 3,
	         "a throughput line for each of the three disciplines");
	check_eq(count(r.out, "lost updates"), 3, "a lost updates line per discipline");
	check_eq(count(r.out, "cycle p99.9"), 3, "a cycle p99.9 line per discipline");
	check(line_with(r.out, "cycle p99 ", line, sizeof line) && strstr(line, "1.25 us") &&
	              strstr(line, "2.37 us"),
	      "latency in its unit, 1,250 ns as 1.25 us: '%s'", line);
	check(line_with(r.out, "reads refused", line, sizeof line) && strstr(line, "0.00x"),
	      "fenced reads refused 1 -> 0 is 0.00x: '%s'", line);
	check(line_with(r.out, "fairness", line, sizeof line), "a fairness line:\n%s", r.out);
	check(strstr(r.out, "cas retries per op"), "CAS retries per op:\n%s", r.out);
	check(line_with(r.out, "throughput / floor", line, sizeof line) &&
	              strstr(line, "not measured"),
	      "the floor ratio is absent from both documents and says so: '%s'", line);
	check(strstr(r.out, "config differences"), "the config differences:\n%s", r.out);
	check(line_with(r.out, "  fence ", line, sizeof line) && strstr(line, "global") &&
	              strstr(line, "per-key"),
	      "fence differs: global against per-key: '%s'", line);
	check(line_with(r.out, "  seed ", line, sizeof line) && strstr(line, "1") &&
	              strstr(line, "7"),
	      "seed differs: 1 against 7: '%s'", line);
	check(!strstr(r.out, "  keys "), "keys are the same in both and not listed:\n%s", r.out);
	release(&r);
}

static void add_run_floor(json_object *doc)
{
	json_object *run;
	json_object_object_get_ex(doc, "run", &run);
	json_object_object_add(run, "floor_pipeline_ops_s", json_object_new_double(3e6));
	json_object_object_add(run, "floor_ratio", json_object_new_double(0.6));
}

static void test_compare_floor_ratio_when_present(void **state)
{
	(void)state;
	char *dir = fb_test_tmpdir();
	char a[512];
	snprintf(a, sizeof a, "%s", data("run-a.json"));
	const char *b = variant(dir, "run-a.json", "floor.json", add_run_floor);
	const char *args[] = {"compare", a, b, NULL};
	result r = run(args);
	check_eq(r.code, 0, "exit code of compare with a floor in B only");
	char line[256];
	check(line_with(r.out, "throughput / floor", line, sizeof line), "a floor ratio line:\n%s",
	      r.out);
	check(strstr(line, "0.60") && strstr(line, " - "), "A has no floor ('-'), B 0.60: '%s'",
	      line);
	release(&r);
	fb_test_rmtree(dir);
	free(dir);
}

static void test_compare_two_sweeps_matches_rows(void **state)
{
	(void)state;
	const char *args[] = {"compare", data("sweep-threads.json"), data("sweep-threads.json"),
	                      NULL};
	result r = run(args);
	check_eq(r.code, 0, "exit code of compare on two sweeps");
	check(strstr(r.out, "matched 6 of A's 6 rows and B's 6"), "every row matched:\n%s", r.out);
	char line[256];
	check(line_with(r.out, "      4  per-key  uniform", line, sizeof line),
	      "a line for the row threads 4, per-key, uniform:\n%s", r.out);
	check_eq(count(line, "1.00x"), 3, "the same document: 1.00x for every discipline");
	check_eq(count(r.out, "1.00x"), 6 * 3 + 3, "6 rows and the geometric mean, 3 each");
	release(&r);

	const char *other[] = {"compare", data("sweep-threads.json"), data("sweep-pause.json"),
	                       NULL};
	r = run(other);
	check_eq(r.code, 0, "exit code of compare on sweeps with no row in common");
	check(strstr(r.out, "matched 0 of A's 6 rows and B's 4"), "no row matched:\n%s", r.out);
	check_eq(count(r.out, "only in A: "), 6, "A's six rows listed as unmatched");
	check(strstr(r.out, "only in B: threads 8, fence global, dist uniform, pause rate 400/s"),
	      "B's rows listed with their keys:\n%s", r.out);
	check(line_with(r.out, "pause_rate", line, sizeof line) && strstr(line, "0,20,100,400"),
	      "the swept pause rates differ: '%s'", line);
	release(&r);
}

static void set_schema_3(json_object *doc)
{
	json_object_object_add(doc, "schema", json_object_new_int(3));
}

static void set_tool_fio(json_object *doc)
{
	json_object_object_add(doc, "tool", json_object_new_string("fio"));
}

/* Exit 2 with one line on stderr naming the file and containing reason. */
static void refused(result *r, const char *file, const char *reason, const char *what)
{
	check_eq(r->code, 2, what);
	check(r->out[0] == 0, "%s: nothing on stdout, got:\n%s", what, r->out);
	check_eq(count(r->err, "\n"), 1, "one line on stderr");
	check(strstr(r->err, file), "%s: stderr names %s: %s", what, file, r->err);
	check(strstr(r->err, reason), "%s: stderr says '%s': %s", what, reason, r->err);
}

static void test_compare_refuses_schema_3_and_another_tool(void **state)
{
	(void)state;
	char *dir = fb_test_tmpdir();
	const char *s2 = variant(dir, "run-a.json", "schema3.json", set_schema_3);
	const char *args[] = {"compare", data("run-a.json"), s2, NULL};
	result r = run(args);
	refused(&r, "schema3.json", "\"schema\" is 3; this fencebench reads schemas 1 to 2",
	        "compare with a schema-3 document exits 2");
	release(&r);

	const char *fio = variant(dir, "run-a.json", "fio.json", set_tool_fio);
	const char *args2[] = {"compare", fio, data("run-a.json"), NULL};
	r = run(args2);
	refused(&r, "fio.json", "not a fencebench document (\"tool\" is \"fio\"",
	        "compare with another tool's document exits 2");
	release(&r);
	fb_test_rmtree(dir);
	free(dir);
}

static void test_compare_refuses_run_against_sweep(void **state)
{
	(void)state;
	const char *args[] = {"compare", data("run-a.json"), data("sweep-threads.json"), NULL};
	result r = run(args);
	refused(&r, "run-a.json", "is a run and", "compare of a run with a sweep exits 2");
	check(strstr(r.err, "sweep-threads.json a sweep"), "both kinds named: %s", r.err);
	release(&r);
}

static void test_malformed_json_exits_2_naming_the_file(void **state)
{
	(void)state;
	char *dir = fb_test_tmpdir(), path[512];
	snprintf(path, sizeof path, "%s/broken.json", dir);
	FILE *f = fopen(path, "w");
	check(f != NULL, "cannot create %s", path);
	fputs("{\"schema\": 1, \"tool\": \"fencebench\", \"modes\": {", f);
	fclose(f);
	const char *cmp[] = {"compare", path, data("run-a.json"), NULL};
	result r = run(cmp);
	refused(&r, "broken.json", "malformed JSON", "compare of a truncated document exits 2");
	release(&r);
	const char *plt[] = {"plot", path, "-o", dir, NULL};
	r = run(plt);
	refused(&r, "broken.json", "malformed JSON", "plot of a truncated document exits 2");
	release(&r);
	const char *missing[] = {"compare", data("run-a.json"), "/nonexistent/x.json", NULL};
	r = run(missing);
	refused(&r, "/nonexistent/x.json", "cannot read", "compare of a missing file exits 2");
	release(&r);
	fb_test_rmtree(dir);
	free(dir);
}

static void test_compare_usage_errors_exit_2(void **state)
{
	(void)state;
	const char *one[] = {"compare", data("run-a.json"), NULL};
	result r = run(one);
	check_eq(r.code, 2, "compare with one document exits 2");
	check(strstr(r.err, "two documents"), "says two are needed: %s", r.err);
	release(&r);
	const char *opt[] = {"compare", "--bogus", data("run-a.json"), data("run-a.json"), NULL};
	r = run(opt);
	check_eq(r.code, 2, "compare with an unknown option exits 2");
	check(strstr(r.err, "--bogus"), "names the option: %s", r.err);
	release(&r);
}

/* ---- plot ---- */

/* path exists, is not empty and is an SVG document. */
static void check_svg(const char *path)
{
	FILE *f = fopen(path, "r");
	check(f != NULL, "%s was not written: %s", path, strerror(errno));
	char head[4096];
	size_t n = fread(head, 1, sizeof head - 1, f);
	head[n] = 0;
	fclose(f);
	check(n > 0, "%s is empty", path);
	check(strstr(head, "<svg") != NULL, "%s has no <svg element in its first %zu bytes", path,
	      n);
}

static void test_plot_threads_sweep_writes_throughput_p99_and_latency(void **state)
{
	(void)state;
	NEED_GNUPLOT();
	char *dir = fb_test_tmpdir(), listing[1024], path[600];
	const char *args[] = {"plot", data("sweep-threads.json"), "-o", dir, NULL};
	result r = run(args);
	check_eq(r.code, 0, "exit code of plot on a sweep over threads");
	static const char *const charts[] = {"throughput", "cycle-p99", "latency"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "%s/sweep-threads-%s.svg", dir, charts[i]);
		check(strstr(r.out, path), "stdout lists %s:\n%s", path, r.out);
		check_svg(path);
	}
	check(strstr(r.err, "skipped corruption: the sweep has one pause rate"),
	      "the corruption chart is skipped with a note: %s", r.err);
	fb_test_listdir(dir, listing, sizeof listing);
	check(!strcmp(listing, "sweep-threads-cycle-p99.svg\nsweep-threads-latency.svg\n"
	                       "sweep-threads-throughput.svg\n"),
	      "exactly the three charts, no temporary file left:\n%s", listing);
	snprintf(path, sizeof path, "%s/sweep-threads-throughput.svg", dir);
	char *svg = read_text(path);
	check(strstr(svg, "Throughput against worker threads"), "the chart says what it shows");
	check(strstr(svg, "write-fenced, fence per-key"), "a line per discipline and fence");
	check(!strstr(svg, "floor"), "no floor drawn when the rows carry none");
	free(svg);
	release(&r);
	fb_test_rmtree(dir);
	free(dir);
}

static void add_floor(json_object *doc)
{
	json_object *rows;
	json_object_object_get_ex(doc, "rows", &rows);
	for (size_t i = 0; i < json_object_array_length(rows); i++) {
		json_object *run;
		json_object_object_get_ex(json_object_array_get_idx(rows, i), "run", &run);
		json_object_object_add(run, "floor_pipeline_ops_s", json_object_new_double(4e6));
		json_object_object_add(run, "floor_ratio", json_object_new_double(0.4));
	}
}

static void test_plot_draws_the_floor_when_rows_carry_it(void **state)
{
	(void)state;
	NEED_GNUPLOT();
	char *dir = fb_test_tmpdir(), path[600];
	const char *doc = variant(dir, "sweep-threads.json", "floored.json", add_floor);
	const char *args[] = {"plot", doc, NULL};
	result r = run(args);
	check_eq(r.code, 0, "exit code of plot on a sweep with a floor");
	snprintf(path, sizeof path, "%s/floored-throughput.svg", dir);
	check(strstr(r.out, path), "the chart goes next to the document by default:\n%s", r.out);
	char *svg = read_text(path);
	check(strstr(svg, "floor: raw CAS pipeline"), "the floor is in the legend");
	check(strstr(svg, "stroke-dasharray"), "the floor is dashed");
	free(svg);
	release(&r);
	fb_test_rmtree(dir);
	free(dir);
}

static void test_plot_pause_sweep_writes_corruption(void **state)
{
	(void)state;
	NEED_GNUPLOT();
	char *dir = fb_test_tmpdir(), path[600];
	const char *args[] = {"plot", data("sweep-pause.json"), "-o", dir, NULL};
	result r = run(args);
	check_eq(r.code, 0, "exit code of plot on a sweep over pause rates");
	snprintf(path, sizeof path, "%s/sweep-pause-corruption.svg", dir);
	check(strstr(r.out, path), "stdout lists %s:\n%s", path, r.out);
	check_svg(path);
	snprintf(path, sizeof path, "%s/sweep-pause-latency.svg", dir);
	check_svg(path);
	check(strstr(r.err, "skipped throughput: the sweep has one thread count"),
	      "throughput is skipped with a note: %s", r.err);
	release(&r);
	fb_test_rmtree(dir);
	free(dir);
}

static void test_plot_run_writes_the_latency_spectrum_only(void **state)
{
	(void)state;
	NEED_GNUPLOT();
	char *dir = fb_test_tmpdir(), listing[512], path[600];
	const char *args[] = {"plot", data("run-a.json"), "-o", dir, NULL};
	result r = run(args);
	check_eq(r.code, 0, "exit code of plot on a single run");
	snprintf(path, sizeof path, "%s/run-a-latency.svg", dir);
	check_svg(path);
	fb_test_listdir(dir, listing, sizeof listing);
	check(!strcmp(listing, "run-a-latency.svg\n"), "only the spectrum applies:\n%s", listing);
	check_eq(count(r.err, "skipped"), 4, "four charts skipped, each with a note");
	check(strstr(r.err, "skipped timeseries: no time series in the document"),
	      "a document from before the series says why it has no chart over time: %s", r.err);
	release(&r);
	fb_test_rmtree(dir);
	free(dir);
}

/* ---- plot: the time series of a run ---- */

/* A deterministic run of 8 simulated workers, about 3.7 virtual seconds:
 * the same samples every time, in a fraction of a real second. */
static void series_run(const char *dir, char *json, size_t len)
{
	snprintf(json, len, "%s/run.json", dir);
	const char *args[] = {"--deterministic", "-t", "8",  "--steps", "2000000",
	                      "--seed",          "1",  "-q", "-o",      dir,
	                      "--json",          json, NULL};
	result r = run(args);
	check_eq(r.code, 0, "exit code of the deterministic run");
	release(&r);
}

/* The rows of data block name in a gnuplot script ("$cum << EOD" up to
 * "EOD"), each row's numbers into v[row][col]; '?' is NAN. */
static size_t data_block(const char *script, const char *name, double v[][8], size_t cap,
                         size_t *cols)
{
	char head[64];
	snprintf(head, sizeof head, "%s << EOD\n", name);
	const char *at = strstr(script, head);
	check(at != NULL, "the script has no data block %s", name);
	at += strlen(head);
	size_t n = 0;
	*cols = 0;
	for (const char *line = at; strncmp(line, "EOD\n", 4) && *line;
	     line = strchr(line, '\n') + 1) {
		if (*line == '#')
			continue;
		check(n < cap, "more than %zu rows in %s", cap, name);
		size_t c = 0;
		for (const char *p = line; *p != '\n' && c < 8;) {
			char *end;
			v[n][c++] = *p == '?' ? NAN : strtod(p, &end);
			p = *p == '?' ? p + 1 : end;
			while (*p == ' ')
				p++;
		}
		check(!*cols || c == *cols, "row %zu of %s has %zu columns, not %zu", n, name, c,
		      *cols);
		*cols = c;
		n++;
	}
	return n;
}

static double doc_num(json_object *doc, const char *path)
{
	json_object *o = fb_test_json(doc, path);
	check(o != NULL, "the document has no %s", path);
	return json_object_get_double(o);
}

static const char *const series_key[3] = {"fenced", "write_fenced", "unfenced"};

/* $cum, rows v[0..n): nothing at 0, then each sample of the JSON's series,
 * then the totals of "modes" at elapsed_s; stale counts never go down,
 * fenced stays flat at 0. */
static void check_cumulative(double v[][8], size_t n, json_object *doc)
{
	char p[160];
	for (size_t c = 0; c < 7; c++)
		check(v[0][c] == 0, "the first row is nothing at 0: column %zu is %g", c, v[0][c]);
	for (int d = 0; d < 3; d++) {
		const char *key = series_key[d];
		snprintf(p, sizeof p, "series.modes.%s.stale_accepted", key);
		json_object *a = fb_test_json(doc, p);
		check(a != NULL, "the JSON has %s", p);
		for (size_t i = 1; i < n; i++) {
			check(v[i][1 + 2 * d] >= v[i - 1][1 + 2 * d],
			      "%s: stale writes accepted so far never go down: %g then %g", key,
			      v[i - 1][1 + 2 * d], v[i][1 + 2 * d]);
			check(i == n - 1 || v[i][1 + 2 * d] ==
			                            json_object_get_double(
			                                    json_object_array_get_idx(a, i - 1)),
			      "%s: row %zu is the JSON's sample %zu", key, i, i - 1);
		}
		snprintf(p, sizeof p, "modes.%s.stale_accepted", key);
		check(v[n - 1][1 + 2 * d] == doc_num(doc, p), "%s: the line ends at the total %g",
		      key, doc_num(doc, p));
		snprintf(p, sizeof p, "modes.%s.lost_updates", key);
		check(v[n - 1][2 + 2 * d] == doc_num(doc, p),
		      "%s: the lost updates end at the total %g, not %g", key, doc_num(doc, p),
		      v[n - 1][2 + 2 * d]);
	}
	check(v[n - 1][0] == doc_num(doc, "elapsed_s"), "the last row is at elapsed_s");
	for (size_t i = 0; i < n; i++)
		check(v[i][1] == 0 && v[i][2] == 0, "fenced stays flat at 0: row %zu has %g, %g", i,
		      v[i][1], v[i][2]);
	check(v[n - 1][5] > 0 && v[n - 1][6] > 0, "unfenced was corrupted: %g stale, %g lost",
	      v[n - 1][5], v[n - 1][6]);
}

/* Each discipline in the colour the other charts give it, in both count
 * panels; the throughput a second as the JSON has it. */
static void check_lines(const char *gp, json_object *doc, size_t samples)
{
	check_eq(count(gp, "lc rgb '#009988' lw 2.2 pt 7 ps 0.8 title 'fenced'"), 2,
	         "fenced in the teal of the other charts, in both count panels");
	check_eq(count(gp, "lc rgb '#CC3311' lw 2.2 pt 5 ps 0.8 title 'unfenced'"), 2,
	         "unfenced in their red, in both count panels");
	check_eq(count(gp, "lc rgb '#EE7733'"), 2, "write-fenced in their orange, in both");
	check(strstr(gp, "'#EE7733' lw 5.4"),
	      "write-fenced's zero stale line is drawn wide under fenced's (a stripe)");
	static double v[64][8];
	size_t cols, n = data_block(gp, "$rate", v, 64, &cols);
	check_eq(n, samples, "a throughput row a second");
	json_object *rate = fb_test_json(doc, "series.ops_per_s");
	for (size_t i = 0; i < n; i++)
		check(v[i][1] == json_object_get_double(json_object_array_get_idx(rate, i)) &&
		              v[i][1] > 0,
		      "row %zu: the second's throughput as the JSON has it, got %g", i, v[i][1]);
}

/* What the chart draws is the run's series, from nothing at 0 to the
 * totals of the summary at the end. */
static void test_plot_run_draws_its_time_series_ending_at_the_totals(void **state)
{
	(void)state;
	NEED_GNUPLOT();
	char *dir = fb_test_tmpdir(), json[600], path[600];
	series_run(dir, json, sizeof json);
	const char *args[] = {"plot", json, "--script", NULL};
	result r = run(args);
	check_eq(r.code, 0, "exit code of plot --script on a run");
	snprintf(path, sizeof path, "%s/run-timeseries.svg", dir);
	check(strstr(r.out, path), "stdout lists %s:\n%s", path, r.out);
	check_svg(path);
	char *svg = read_text(path);
	check(strstr(svg, "Over time: throughput, stale writes accepted and updates lost"),
	      "the chart says what it shows");
	check(strstr(svg, "faults/s (right axis)"), "the faults are drawn, on the right axis");
	free(svg);
	snprintf(path, sizeof path, "%s/run-timeseries.gp", dir);
	check(strstr(r.out, path), "stdout lists the script %s:\n%s", path, r.out);
	char *gp = read_text(path);
	json_object *doc = json_object_from_file(json);
	check(doc != NULL, "the run's JSON parses");
	static double v[64][8];
	size_t cols, n = data_block(gp, "$cum", v, 64, &cols);
	size_t samples = json_object_array_length(fb_test_json(doc, "series.t_s"));
	check(samples >= 3, "a run of 3.7 virtual seconds has 3 samples, got %zu", samples);
	check_eq(n, samples + 2, "a row at 0, one a second, one at the end");
	check_eq(cols, 7, "t and, per discipline, stale accepted and updates lost");
	check_cumulative(v, n, doc);
	check_lines(gp, doc, samples);
	json_object_put(doc);
	free(gp);
	release(&r);
	fb_test_rmtree(dir);
	free(dir);
}

/* The frames as a reader sees them, on the reference documents: a sweep
 * without pauses says so (not "pauses 0/s x 15-30 ms"), a key has a column
 * of its own beside the plot (never squeezing it, never on its lines), and
 * a setup line too long for its chart goes on two lines, not cut. */
static void test_plot_frames_are_readable(void **state)
{
	(void)state;
	NEED_GNUPLOT();
	char *dir = fb_test_tmpdir(), json[600], path[700];
	const char *names[] = {"dist", "run"};
	for (int i = 0; i < 2; i++) {
		snprintf(json, sizeof json, "%s/../results/reference/%s.json", getenv("FB_TESTS"),
		         names[i]);
		const char *args[] = {"plot", json, "--script", "-o", dir, NULL};
		result r = run(args);
		check_eq(r.code, 0, names[i]);
		release(&r);
	}
	snprintf(path, sizeof path, "%s/dist-throughput.gp", dir);
	char *gp = read_text(path);
	check(strstr(gp, "no pauses") && !strstr(gp, "pauses 0/s"),
	      "a sweep without pauses says so:\n%.600s", gp);
	check(strstr(gp, "set rmargin at screen") && strstr(gp, "set key at screen"),
	      "the key sits in its own column, the plot keeps its width");
	check(strstr(gp, "fenced (inside)") && strstr(gp, "the stores, fence per-key"),
	      "six series of coinciding stores: one entry a series, the colours said once");
	free(gp);
	snprintf(path, sizeof path, "%s/dist-latency.gp", dir);
	gp = read_text(path);
	check(strstr(gp, "set key at screen"), "the sweep's latency key is beside the panels");
	free(gp);
	snprintf(path, sizeof path, "%s/run-latency.gp", dir);
	gp = read_text(path);
	check(strstr(gp, "set label 904"), "a 960-pixel chart's long setup line is wrapped");
	free(gp);
	fb_test_rmtree(dir);
	free(dir);
}

/* The script it wrote draws the chart again on its own; -f png draws PNG. */
static void test_plot_script_redraws_and_png_is_png(void **state)
{
	(void)state;
	NEED_GNUPLOT();
	char *dir = fb_test_tmpdir(), json[600], path[600], cmd[1400];
	series_run(dir, json, sizeof json);
	const char *args[] = {"plot", json, "-f", "png", "--script", "-o", dir, NULL};
	result r = run(args);
	check_eq(r.code, 0, "exit code of plot -f png");
	snprintf(path, sizeof path, "%s/run-timeseries.png", dir);
	check(strstr(r.out, path), "stdout lists %s:\n%s", path, r.out);
	check(unlink(path) == 0, "%s was written", path);
	snprintf(cmd, sizeof cmd, "gnuplot -d '%s/run-timeseries.gp'", dir);
	check_eq(system(cmd), 0, "gnuplot runs the script it was given");
	FILE *f = fopen(path, "rb");
	check(f != NULL, "the script wrote %s again", path);
	unsigned char magic[8] = {0};
	size_t got = fread(magic, 1, sizeof magic, f);
	fclose(f);
	check(got == 8 && !memcmp(magic, "\x89PNG\r\n\x1a\n", 8), "%s is a PNG", path);
	release(&r);
	fb_test_rmtree(dir);
	free(dir);
}

static void test_plot_timeseries_skips_a_sweep_and_a_bad_format_exits_2(void **state)
{
	(void)state;
	NEED_GNUPLOT();
	char *dir = fb_test_tmpdir();
	const char *args[] = {"plot", data("sweep-pause.json"), "-o", dir, NULL};
	result r = run(args);
	check_eq(r.code, 0, "exit code of plot on a sweep");
	check(strstr(r.err, "skipped timeseries: a sweep"), "the time series is a run's: %s",
	      r.err);
	release(&r);
	const char *bad[] = {"plot", data("run-a.json"), "--format", "jpg", NULL};
	r = run(bad);
	check_eq(r.code, 2, "an unknown format exits 2");
	check_eq(count(r.err, "\n"), 1, "one line on stderr");
	check(strstr(r.err, "--format") && strstr(r.err, "'jpg'"),
	      "it names the option and the value: %s", r.err);
	release(&r);
	fb_test_rmtree(dir);
	free(dir);
}

static void test_plot_without_gnuplot_exits_3_with_the_apt_line(void **state)
{
	(void)state;
	char *dir = fb_test_tmpdir();
	char *env[] = {"PATH=/nonexistent-fencebench-test", NULL};
	const char *args[] = {"plot", data("sweep-threads.json"), "-o", dir, NULL};
	result r = run_env(args, env);
	check_eq(r.code, 3, "plot with no gnuplot on PATH exits 3");
	check_eq(count(r.err, "\n"), 1, "one line on stderr");
	check(strstr(r.err, "apt-get install gnuplot-nox"), "says how to install it: %s", r.err);
	check(r.out[0] == 0, "no chart listed: %s", r.out);
	release(&r);
	fb_test_rmtree(dir);
	free(dir);
}

static void test_plot_refuses_schema_3(void **state)
{
	(void)state;
	char *dir = fb_test_tmpdir();
	const char *s2 = variant(dir, "run-a.json", "schema3.json", set_schema_3);
	const char *args[] = {"plot", s2, NULL};
	result r = run(args);
	refused(&r, "schema3.json", "schemas 1 to 2", "plot of a schema-3 document exits 2");
	release(&r);
	fb_test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_compare_two_runs_prints_ratios_per_discipline),
	        cmocka_unit_test(test_compare_floor_ratio_when_present),
	        cmocka_unit_test(test_compare_two_sweeps_matches_rows),
	        cmocka_unit_test(test_compare_refuses_schema_3_and_another_tool),
	        cmocka_unit_test(test_compare_refuses_run_against_sweep),
	        cmocka_unit_test(test_malformed_json_exits_2_naming_the_file),
	        cmocka_unit_test(test_compare_usage_errors_exit_2),
	        cmocka_unit_test(test_plot_threads_sweep_writes_throughput_p99_and_latency),
	        cmocka_unit_test(test_plot_draws_the_floor_when_rows_carry_it),
	        cmocka_unit_test(test_plot_pause_sweep_writes_corruption),
	        cmocka_unit_test(test_plot_run_writes_the_latency_spectrum_only),
	        cmocka_unit_test(test_plot_run_draws_its_time_series_ending_at_the_totals),
	        cmocka_unit_test(test_plot_script_redraws_and_png_is_png),
	        cmocka_unit_test(test_plot_frames_are_readable),
	        cmocka_unit_test(test_plot_timeseries_skips_a_sweep_and_a_bad_format_exits_2),
	        cmocka_unit_test(test_plot_without_gnuplot_exits_3_with_the_apt_line),
	        cmocka_unit_test(test_plot_refuses_schema_3),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
