/*
 * Signals and special files, end to end: a stop signal (SIGINT, SIGTERM,
 * SIGHUP) ends every kind of run with what it measured written and marked
 * interrupted; a SIGINT the process started ignoring stays ignored; a FIFO
 * given to --plan or --json never makes the binary deaf to a signal or
 * lose a finished run. Every wait here is bounded: a hang fails the test
 * (the child is killed by SIGALRM), it never stalls the suite.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fbproc.h"
#include "fbtest.h"

/* A child's bound on hanging: far above any run here. */
#define LIMIT_S 120

/* Whether the child has ended (left to be reaped by fb_test_finish). */
static bool ended(pid_t pid)
{
	siginfo_t info;
	memset(&info, 0, sizeof info);
	return waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
	       info.si_pid == pid;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Like fb_test_start_within, with SIGINT ignored in the child when asked
 * (as a non-interactive shell's `cmd &` starts it). */
static void start(fb_test_proc *p, const char *const *args, bool ignore_sigint)
{
	memset(p, 0, sizeof *p);
	p->dir = fb_test_tmpdir();
	char out[300], err[300];
	snprintf(out, sizeof out, "%s/stdout", p->dir);
	snprintf(err, sizeof err, "%s/stderr", p->dir);
	const char *argv[64] = {fb_test_bin()};
	int n = 1;
	for (int i = 0; args[i] && n < 63; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pid_t pid = fb_test_fork();
	check(pid >= 0, "fork failed: %s", strerror(errno));
	if (pid == 0) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int in = open("/dev/null", O_RDONLY);
		if (o < 0 || e < 0 || in < 0)
			_exit(126);
		dup2(in, 0);
		dup2(o, 1);
		dup2(e, 2);
		if (ignore_sigint)
			signal(SIGINT, SIG_IGN);
		alarm(LIMIT_S);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	p->pid = pid;
}

/* How many times needle occurs in the child's stdout or stderr so far. */
static int count_in(const fb_test_proc *p, const char *file, const char *needle)
{
	char path[300];
	snprintf(path, sizeof path, "%s/%s", p->dir, file);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	char *text = fb_test_slurp(fd);
	int n = 0;
	for (const char *at = text; (at = strstr(at, needle)); at += strlen(needle))
		n++;
	free(text);
	return n;
}

/* Wait (at most limit_s) until needle occurs at least `times` times in the
 * child's file; false if it did not, or the child ended first. */
static bool wait_for(const fb_test_proc *p, const char *file, const char *needle, int times,
                     int limit_s)
{
	for (int waited = 0; waited < limit_s * 1000; waited += 20) {
		if (count_in(p, file, needle) >= times)
			return true;
		if (ended(p->pid))
			return count_in(p, file, needle) >= times;
		sleep_ms(20);
	}
	return false;
}

/* The one JSON document the run left in dir, checked whole (put it). */
static json_object *results_doc(const char *dir)
{
	char path[600], names[2048];
	fb_test_listdir(dir, names, sizeof names);
	check(!strstr(names, ".tmp"), "no temporary file left in %s:\n%s", dir, names);
	check(fb_test_find_suffix(dir, ".json", path, sizeof path),
	      "the run wrote no JSON in %s:\n%s", dir, names);
	return fb_test_load(path);
}

static bool interrupted_by(json_object *doc, int sig)
{
	json_object *i = fb_test_json(doc, "interrupted");
	return i && json_object_get_boolean(i) && fb_test_num(doc, "signal") == sig;
}

/* A seed sweep of a million seeds, stopped by sig once a few seeds ran. */
static void sweep_stopped_by(int sig, bool ignore_sigint)
{
	char *dir = fb_test_tmpdir();
	const char *args[] = {
	        "--deterministic", "--seeds", "1..1000000", "--steps", "1000", "-o", dir, NULL};
	fb_test_proc p;
	start(&p, args, ignore_sigint);
	check(wait_for(&p, "stdout", "\nseed ", 2, 60), "no seed line within 60 s");
	if (ignore_sigint) {
		/* ignored, as asked: the sweep goes on seeds after it */
		kill(p.pid, SIGINT);
		int before = count_in(&p, "stdout", "\nseed ");
		check(wait_for(&p, "stdout", "\nseed ", before + 3, 60),
		      "a SIGINT the sweep started ignoring stopped it");
	}
	kill(p.pid, sig);
	int code = fb_test_finish(&p);
	check_eq(code, 128 + sig, "a stopped sweep's exit code");
	check(strstr(p.out, "interrupted after "), "the sweep says how far it got:\n%s", p.out);
	check(strstr(p.out, "INTERRUPTED: "), "its verdict line says interrupted:\n%s", p.out);
	json_object *doc = results_doc(dir);
	check(interrupted_by(doc, sig), "the sweep's JSON is marked interrupted by %d", sig);
	json_object *rows = fb_test_json(doc, "rows");
	unsigned long ran = 0;
	const char *said = strstr(p.out, "INTERRUPTED: ");
	check(said && sscanf(said, "INTERRUPTED: %lu seeds run", &ran) == 1,
	      "the verdict line counts the seeds:\n%s", p.out);
	check(rows && ran >= 2 && json_object_array_length(rows) == ran,
	      "a row for each of the %lu seeds run (%zu rows)", ran,
	      rows ? json_object_array_length(rows) : 0);
	check_eq(count_in(&p, "stdout", "\nseed "), (long long)ran,
	         "a seed line for each seed run, none for the one cut short");
	json_object_put(doc);
	fb_test_release(&p);
	fb_test_rmtree(dir);
	free(dir);
}

static void test_sigterm_stops_a_seed_sweep_with_the_seeds_run_written(void **state)
{
	(void)state;
	sweep_stopped_by(SIGTERM, false);
}

static void test_sigint_stops_a_seed_sweep_with_the_seeds_run_written(void **state)
{
	(void)state;
	sweep_stopped_by(SIGINT, false);
}

static void test_a_sweep_started_ignoring_sigint_goes_on_and_sigterm_stops_it(void **state)
{
	(void)state;
	sweep_stopped_by(SIGTERM, true);
}

/* One deterministic seed of a billion steps: stopped, summed up, written. */
static void test_a_stop_signal_ends_a_deterministic_run_with_its_results(void **state)
{
	(void)state;
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	for (int i = 0; i < 3; i++) {
		char *dir = fb_test_tmpdir();
		const char *args[] = {"--deterministic", "--steps", "1000000000", "--progress",
		                      "always",          "-o",      dir,          NULL};
		fb_test_proc p;
		start(&p, args, false);
		/* a progress line a virtual second: well into its steps */
		check(wait_for(&p, "stderr", "ops/s", 1, 60), "no progress line within 60 s");
		kill(p.pid, sigs[i]);
		int code = fb_test_finish(&p);
		check_eq(code, 128 + sigs[i], "a stopped deterministic run's exit code");
		check(strstr(p.out, "interrupted: "), "the summary says interrupted:\n%s", p.out);
		json_object *doc = results_doc(dir);
		check(interrupted_by(doc, sigs[i]), "its JSON is marked interrupted by %d",
		      sigs[i]);
		check(fb_test_num(doc, "modes.fenced.ops") > 0,
		      "what it ran is in the JSON (signal %d):\n%s%s", sigs[i], p.out, p.err);
		check_eq(fb_test_num(doc, "modes.fenced.stale_accepted"), 0, "fenced stayed safe");
		json_object_put(doc);
		fb_test_release(&p);
		fb_test_rmtree(dir);
		free(dir);
	}
}

/* An ssh session that drops mid-run: SIGHUP is a stop, as SIGTERM is. */
static void test_sighup_mid_run_writes_results_marked_interrupted(void **state)
{
	(void)state;
	char *dir = fb_test_tmpdir();
	const char *args[] = {"-t", "4", "-d", "1h", "--progress", "always", "-o", dir, NULL};
	fb_test_proc p;
	start(&p, args, false);
	check(wait_for(&p, "stderr", "ops/s", 1, 60), "no progress line within 60 s");
	kill(p.pid, SIGHUP);
	int code = fb_test_finish(&p);
	check_eq(code, 128 + SIGHUP, "exit code after SIGHUP");
	check(strstr(p.out, "interrupted: "), "the summary is printed:\n%s", p.out);
	json_object *doc = results_doc(dir);
	check(interrupted_by(doc, SIGHUP), "the JSON is marked interrupted by SIGHUP");
	check(fb_test_num(doc, "modes.fenced.ops") > 0, "the numbers measured so far are there");
	json_object_put(doc);
	fb_test_release(&p);
	fb_test_rmtree(dir);
	free(dir);
}

static char *fifo_in(const char *dir, const char *name)
{
	char *path = malloc(600);
	snprintf(path, 600, "%s/%s", dir, name);
	check(mkfifo(path, 0600) == 0, "mkfifo %s: %s", path, strerror(errno));
	return path;
}

/* --plan FIFO that no writer opens: SIGTERM or SIGINT still ends it. */
static void test_a_plan_fifo_with_no_writer_gives_way_to_a_signal(void **state)
{
	(void)state;
	static const int sigs[] = {SIGTERM, SIGINT};
	for (int i = 0; i < 2; i++) {
		char *dir = fb_test_tmpdir(), *fifo = fifo_in(dir, "plan");
		const char *args[] = {"-t", "2", "-d", "1s", "-q", "--plan", fifo, "-o", dir, NULL};
		fb_test_proc p;
		start(&p, args, false);
		check(wait_for(&p, "stdout", "fencebench ", 1, 60), "no header within 60 s");
		sleep_ms(100); /* into the wait for a writer */
		kill(p.pid, sigs[i]);
		int code = fb_test_finish(&p);
		check_eq(code, 128 + sigs[i], "exit code of a run stopped waiting for its plan");
		check(strstr(p.err, "--plan: ") && strstr(p.err, "interrupted") &&
		              !strchr(strchr(p.err, '\n') + 1, '\n'),
		      "one line naming --plan: %s", p.err);
		fb_test_release(&p);
		unlink(fifo);
		fb_test_rmtree(dir);
		free(fifo);
		free(dir);
	}
}

/* ... and one whose writer comes late is read as a file is. */
static void test_a_plan_fifo_is_read_when_its_writer_comes(void **state)
{
	(void)state;
	char *dir = fb_test_tmpdir(), *fifo = fifo_in(dir, "plan"), plan[700];
	snprintf(plan, sizeof plan, "%s/recorded", dir);
	const char *rec[] = {"-t", "2", "-d", "300ms", "-q", "--plan-out", plan, "-o", dir, NULL};
	fb_test_proc p;
	check_eq(fb_test_run(&p, rec), 0, "recording a plan");
	fb_test_release(&p);
	int src = open(plan, O_RDONLY);
	check(src >= 0, "the recorded plan %s: %s", plan, strerror(errno));
	char *text = fb_test_slurp(src);
	const char *args[] = {"-t", "2", "-d", "300ms", "-q", "--plan", fifo, "-o", dir, NULL};
	start(&p, args, false);
	sleep_ms(300); /* the writer comes late */
	int fd = -1;
	for (int waited = 0; fd < 0 && waited < 60000; waited += 20) {
		fd = open(fifo, O_WRONLY | O_NONBLOCK);
		if (fd < 0)
			sleep_ms(20);
	}
	check(fd >= 0, "the run never opened its plan FIFO: %s", strerror(errno));
	fcntl(fd, F_SETFL, 0);
	check(write(fd, text, strlen(text)) == (ssize_t)strlen(text), "writing the plan");
	close(fd);
	int code = fb_test_finish(&p);
	check_eq(code, 0, "a run replaying a plan read from a FIFO");
	free(text);
	fb_test_release(&p);
	unlink(fifo);
	fb_test_rmtree(dir);
	free(fifo);
	free(dir);
}

/* --json FIFO that no reader opens: the summary and results/ come first,
 * then one line says no reader came, within the bounded wait. */
static void test_a_json_fifo_with_no_reader_loses_nothing_else(void **state)
{
	(void)state;
	char *dir = fb_test_tmpdir(), *fifo = fifo_in(dir, "doc");
	char res[700];
	snprintf(res, sizeof res, "%s/results", dir);
	const char *args[] = {"-t", "2", "-d", "200ms", "--json", fifo, "-o", res, NULL};
	fb_test_proc p;
	start(&p, args, false);
	int code = fb_test_finish(&p);
	check_eq(code, 3, "an output no reader took is a runtime failure");
	/* the verdict line: PASS, or VACUOUS when 200 ms of a loaded machine
	 * gave no fault a stale write to attempt (ASan in CI, once) */
	check((strstr(p.out, "\nPASS: ") || strstr(p.out, "\nVACUOUS: ")) &&
	              strstr(p.out, "results: "),
	      "the summary and the results line are printed:\n%s", p.out);
	check(strstr(p.err, "--json: no reader opened the FIFO"), "one line says so: %s", p.err);
	json_object *doc = results_doc(res);
	json_object_put(doc);
	fb_test_release(&p);

	/* a signal during that wait: what was written stays, exit at once */
	start(&p, args, false);
	check(wait_for(&p, "stdout", "results: ", 1, 60), "no results line within 60 s");
	kill(p.pid, SIGTERM);
	check_eq(fb_test_finish(&p), 128 + SIGTERM, "a signal ends the wait for a reader");
	fb_test_release(&p);
	unlink(fifo);
	fb_test_rmtree(res);
	fb_test_rmtree(dir);
	free(fifo);
	free(dir);
}

/* ... and a reader gets the whole document. */
static void test_a_json_fifo_reader_gets_the_document(void **state)
{
	(void)state;
	char *dir = fb_test_tmpdir(), *fifo = fifo_in(dir, "doc");
	int rd = open(fifo, O_RDONLY | O_NONBLOCK);
	check(rd >= 0, "opening the FIFO to read: %s", strerror(errno));
	const char *args[] = {"-t", "2", "-d", "200ms", "-q", "--json", fifo, "-o", dir, NULL};
	fb_test_proc p;
	start(&p, args, false);
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	bool over = false;
	for (int waited = 0; waited < 60000; waited += 20) {
		struct pollfd pf = {.fd = rd, .events = POLLIN};
		poll(&pf, 1, 20);
		if (len + 4096 > cap)
			buf = realloc(buf, cap *= 2);
		ssize_t n = read(rd, buf + len, cap - len - 1);
		if (n > 0) {
			len += (size_t)n;
			continue;
		}
		if (over) /* exited, and nothing more to read */
			break;
		over = ended(p.pid);
	}
	buf[len] = 0;
	close(rd);
	check_eq(fb_test_finish(&p), 0, "a run whose --json FIFO had a reader");
	json_object *doc = json_tokener_parse(buf);
	check(doc && fb_test_num(doc, "modes.fenced.ops") > 0,
	      "the reader got the whole document (%zu bytes)", len);
	json_object_put(doc);
	free(buf);
	fb_test_release(&p);
	unlink(fifo);
	fb_test_rmtree(dir);
	free(fifo);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_sigterm_stops_a_seed_sweep_with_the_seeds_run_written),
	        cmocka_unit_test(test_sigint_stops_a_seed_sweep_with_the_seeds_run_written),
	        cmocka_unit_test(test_a_sweep_started_ignoring_sigint_goes_on_and_sigterm_stops_it),
	        cmocka_unit_test(test_a_stop_signal_ends_a_deterministic_run_with_its_results),
	        cmocka_unit_test(test_sighup_mid_run_writes_results_marked_interrupted),
	        cmocka_unit_test(test_a_plan_fifo_with_no_writer_gives_way_to_a_signal),
	        cmocka_unit_test(test_a_plan_fifo_is_read_when_its_writer_comes),
	        cmocka_unit_test(test_a_json_fifo_with_no_reader_loses_nothing_else),
	        cmocka_unit_test(test_a_json_fifo_reader_gets_the_document),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
