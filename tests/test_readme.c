/*
 * The README's deterministic examples, run: it cannot drift from the code.
 *
 * A fenced block in README.md right after one of these comments is checked:
 *
 *   <!-- test: ARGS -->       the binary's stdout for ARGS is the block
 *   <!-- test-lines: PATH --> every line of the block is a line of PATH,
 *                             in the block's order
 *   <!-- test-sh -->          the block, a shell script, runs as written
 *                             (bash -eu) and exits 0 or 1, in a scratch
 *                             directory holding ./fencebench and scripts/
 *                             (its results/ stay there); the servers it
 *                             starts with scripts/servers.sh are stopped
 *                             after it. Exit 77 (a server not installed)
 *                             skips it, counted, saying which.
 *
 * In ARGS and PATH, {tmp} is a scratch directory the whole README shares
 * (a history one block writes, the next reads), and in the output it reads
 * as /tmp, where the README's commands put their files. A block line that starts
 * with "..." stands for any number of lines; trailing blanks do not count;
 * the output's "results: ..." line (file names with a time and a pid in
 * them) is left out. A failure prints the first line that differs and the
 * whole output, to paste into the README.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fbproc.h"
#include "fbtest.h"

static char *scratch;

typedef struct lines {
	char **v;
	size_t n, cap;
} lines;

static void push(lines *l, char *s)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = realloc(l->v, l->cap * sizeof *l->v);
		check(l->v != NULL, "out of memory");
	}
	l->v[l->n++] = s;
}

/* text split into lines (modified in place), trailing blanks cut */
static lines split(char *text, bool drop_results)
{
	lines l = {0};
	for (char *save, *t = strtok_r(text, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
		size_t n = strlen(t);
		while (n && (t[n - 1] == ' ' || t[n - 1] == '\t' || t[n - 1] == '\r'))
			t[--n] = 0;
		if (drop_results && !strncmp(t, "results: ", 9))
			continue;
		push(&l, t);
	}
	return l;
}

static bool gap(const char *line)
{
	return !strncmp(line, "...", 3);
}

/* Whether want[i..] matches got[j..] whole, a gap line matching any run. */
static bool match(const lines *want, size_t i, const lines *got, size_t j, size_t *at)
{
	for (; i < want->n; i++, j++) {
		if (gap(want->v[i])) {
			for (size_t k = j; k <= got->n; k++)
				if (match(want, i + 1, got, k, at))
					return true;
			return false;
		}
		if (j >= got->n || strcmp(want->v[i], got->v[j])) {
			if (j > *at)
				*at = j;
			return false;
		}
	}
	return j == got->n;
}

/* {tmp} replaced by the scratch directory */
static void expand(const char *in, char *out, size_t len)
{
	size_t o = 0;
	for (const char *p = in; *p && o + 1 < len;) {
		if (!strncmp(p, "{tmp}", 5)) {
			o += (size_t)snprintf(out + o, len - o, "%s", scratch);
			p += 5;
		} else {
			out[o++] = *p++;
		}
	}
	out[o < len ? o : len - 1] = 0;
}

static void check_run(const char *where, const char *args_text, char *block)
{
	char buf[2048];
	expand(args_text, buf, sizeof buf);
	const char *argv[64];
	int n = 0;
	for (char *save, *t = strtok_r(buf, " ", &save); t && n < 63;
	     t = strtok_r(NULL, " ", &save))
		argv[n++] = t;
	argv[n] = NULL;
	fb_test_proc p;
	/* a hang ends; a sanitized build runs 20-30 x slower (a 100-seed sweep
	 * takes 2.5 minutes under TSan here) */
	fb_test_start_within(&p, argv, getenv("FB_SANITIZED") ? 900 : 120);
	int code = fb_test_finish(&p);
	check(code == 0 || code == 1, "%s: 'fencebench %s' exited %d:\n%s", where, args_text, code,
	      p.err);
	/* the scratch directory reads as /tmp, where the README puts its files */
	char *out = malloc(strlen(p.out) + 1);
	check(out != NULL, "out of memory");
	size_t o = 0, sl = strlen(scratch);
	for (const char *q = p.out; *q;)
		if (!strncmp(q, scratch, sl)) {
			memcpy(out + o, "/tmp", 4);
			o += 4;
			q += sl;
		} else {
			out[o++] = *q++;
		}
	out[o] = 0;
	lines want = split(block, true), got = split(out, true);
	size_t at = 0;
	if (!match(&want, 0, &got, 0, &at))
		check(0,
		      "%s: the README's output of 'fencebench %s' is not what it prints now; "
		      "first difference at output line %zu:\n  README: %s\n  now:    %s\n"
		      "re-record the block from this output:\n%s",
		      where, args_text, at + 1, at < want.n ? want.v[at] : "(end)",
		      at < got.n ? got.v[at] : "(end)", p.out);
	free(want.v);
	free(got.v);
	free(out);
	fb_test_release(&p);
}

/* bash -eu -c block in dir, its output into the file out, with
 * scripts/servers.sh keeping its servers in servers; they are stopped
 * after it whatever it did. Its exit code. */
static int run_sh(const char *block, const char *dir, const char *servers, const char *out)
{
	pid_t pid = fb_test_fork();
	check(pid >= 0, "fork");
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || chdir(dir) < 0)
			_exit(126);
		dup2(fd, 1);
		dup2(fd, 2);
		setenv("FB_SERVERS_DIR", servers, 1);
		/* a hang ends (a sanitized build starts its runs far slower) */
		alarm(getenv("FB_SANITIZED") ? 1800 : 600);
		execl("/bin/bash", "bash", "-eu", "-c", block, (char *)NULL);
		_exit(127);
	}
	int status = 0;
	while (waitpid(pid, &status, 0) < 0)
		;
	char stop[2800];
	snprintf(stop, sizeof stop, "FB_SERVERS_DIR=%s %s/scripts/servers.sh stop", servers, dir);
	check(system(stop) == 0, "scripts/servers.sh stop failed (%s)", servers);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Whether scripts/servers.sh said, in the output file out, that a server
 * failed to start (a port retry is no failure); *missing: because its
 * binaries are not installed. */
static bool servers_failed(const char *out, bool *missing)
{
	char *text = fb_test_slurp(open(out, O_RDONLY));
	bool failed = false;
	for (char *l = strstr(text, "servers.sh: "); l; l = strstr(l + 1, "servers.sh: ")) {
		size_t n = strcspn(l, "\n");
		char line[600];
		snprintf(line, sizeof line, "%.*s", (int)n, l);
		if (strstr(line, "again on another"))
			continue;
		failed = true;
		if (missing && strstr(line, "is not installed"))
			*missing = true;
	}
	free(text);
	return failed;
}

/* A shell block of the README, run as a reader would run it from the
 * repository's root: 0 when it ran, -1 when it skipped (a server's
 * binaries missing). */
static int check_sh(const char *where, const char *block)
{
	static int n;
	char dir[1200], path[1400], root[1200], out[1400];
	snprintf(dir, sizeof dir, "%s/sh-%d", scratch, ++n);
	check(mkdir(dir, 0700) == 0, "%s: mkdir %s", where, dir);
	const char *t = getenv("FB_TESTS");
	check(realpath(t ? t : "tests", root) != NULL, "%s: the tests directory", where);
	snprintf(path, sizeof path, "%s/fencebench", dir);
	check(symlink(fb_test_bin(), path) == 0, "%s: link the binary", where);
	snprintf(path, sizeof path, "%s/scripts", dir);
	snprintf(out, sizeof out, "%s/../scripts", root);
	check(symlink(out, path) == 0, "%s: link scripts/", where);
	snprintf(out, sizeof out, "%s/out", dir);
	char servers[1300];
	snprintf(servers, sizeof servers, "%s/servers", dir);
	int code = run_sh(block, dir, servers, out);
	if (code == 3 || servers_failed(out, NULL)) {
		/* an engine's reply or a server's start past its deadline on a
		 * loaded machine is a runtime failure: one more try, said */
		char *text = fb_test_slurp(open(out, O_RDONLY));
		fprintf(stderr, "%s: the shell block exited 3, once more; it said:\n%s", where,
		        text);
		free(text);
		code = run_sh(block, dir, servers, out);
	}
	/* `eval "$(scripts/servers.sh start ...)"` does not stop on a failed
	 * start (eval's status is its text's): the script's own lines say it */
	bool missing = false;
	if (servers_failed(out, &missing))
		code = missing ? 77 : 3;
	char *text = fb_test_slurp(open(out, O_RDONLY));
	if (code == 77) {
		char why[300];
		const char *s = strstr(text, "servers.sh: ");
		snprintf(why, sizeof why, "README shell block at %s: %.*s", where,
		         s ? (int)strcspn(s, "\n") : 7, s ? s : "skipped");
		printf("SKIPPED: %s\n", why);
		fb_test_skipped(1, NULL, why);
		free(text);
		return -1;
	}
	check(code == 0 || code == 1, "%s: the README's shell block exited %d:\n%s\noutput:\n%s",
	      where, code, block, text);
	free(text);
	return 0;
}

static void check_lines(const char *where, const char *path_text, char *block)
{
	char path[1024];
	expand(path_text, path, sizeof path);
	FILE *f = fopen(path, "r");
	check(f != NULL, "%s: cannot read %s (written by an earlier block?)", where, path);
	lines want = split(block, false);
	size_t i = 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	while (i < want.n && (len = getline(&line, &cap, f)) >= 0) {
		while (len && (line[len - 1] == '\n' || line[len - 1] == ' '))
			line[--len] = 0;
		while (i < want.n && gap(want.v[i]))
			i++;
		if (i < want.n && !strcmp(line, want.v[i]))
			i++;
	}
	while (i < want.n && gap(want.v[i]))
		i++;
	check(i == want.n, "%s: the README's line '%s' is not in %s (in that order)", where,
	      i < want.n ? want.v[i] : "", path);
	free(line);
	free(want.v);
	fclose(f);
}

static void test_the_readmes_examples_are_what_the_code_prints(void **state)
{
	(void)state;
	const char *t = getenv("FB_TESTS");
	char path[1024];
	snprintf(path, sizeof path, "%s/../README.md", t ? t : "tests");
	FILE *f = fopen(path, "r");
	check(f != NULL, "cannot read %s", path);
	char *doc = NULL;
	size_t cap = 0;
	ssize_t len = getdelim(&doc, &cap, 0, f);
	fclose(f);
	check(len > 0, "%s is empty", path);
	int runs = 0, files = 0, shells = 0;
	for (char *p = doc; (p = strstr(p, "<!-- test")) != NULL;) {
		int line = 1;
		for (char *q = doc; q < p; q++)
			line += *q == '\n';
		char where[64];
		snprintf(where, sizeof where, "README.md:%d", line);
		bool run = !strncmp(p, "<!-- test: ", 11), sh = !strncmp(p, "<!-- test-sh -->", 16);
		check(run || sh || !strncmp(p, "<!-- test-lines: ", 17),
		      "%s: an unknown test marker", where);
		if (sh) {
			char *open = strstr(p, "```sh\n");
			check(open != NULL, "%s: no ```sh block after the marker", where);
			char *body = open + 6, *close = strstr(body, "\n```");
			check(close != NULL, "%s: the code block does not end", where);
			*close = 0;
			shells += check_sh(where, body) == 0;
			p = close + 1;
			continue;
		}
		char *arg = p + (run ? 11 : 17), *end = strstr(arg, " -->");
		check(end != NULL, "%s: the marker does not end with ' -->'", where);
		*end = 0;
		char *open = strstr(end + 1, "```");
		check(open != NULL, "%s: no code block after the marker", where);
		char *body = strchr(open, '\n');
		check(body != NULL, "%s: an empty code block", where);
		body++;
		char *close = strstr(body, "\n```");
		check(close != NULL, "%s: the code block does not end", where);
		*close = 0;
		if (run) {
			check_run(where, arg, body);
			runs++;
		} else {
			check_lines(where, arg, body);
			files++;
		}
		p = close + 1;
	}
	/* the deterministic run, the fault table, the sweep, a scenario; the history */
	check(runs >= 4 && files >= 1,
	      "the README's marked examples went missing (%d runs, %d files)", runs, files);
	if (shells)
		printf("README: %d shell blocks run\n", shells);
	free(doc);
}

int main(void)
{
	scratch = fb_test_tmpdir();
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_the_readmes_examples_are_what_the_code_prints),
	};
	int failed = cmocka_run_group_tests_name("readme", tests, NULL, NULL);
	fb_test_rmtree(scratch);
	free(scratch);
	return failed;
}
