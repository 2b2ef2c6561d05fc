/*
 * The README's deterministic examples, run: it cannot drift from the code.
 *
 * A fenced block in README.md right after one of these comments is checked:
 *
 *   <!-- test: ARGS -->       the binary's stdout for ARGS is the block
 *   <!-- test-lines: PATH --> every line of the block is a line of PATH,
 *                             in the block's order
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
#include <string.h>

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
	int runs = 0, files = 0;
	for (char *p = doc; (p = strstr(p, "<!-- test")) != NULL;) {
		int line = 1;
		for (char *q = doc; q < p; q++)
			line += *q == '\n';
		char where[64];
		snprintf(where, sizeof where, "README.md:%d", line);
		bool run = !strncmp(p, "<!-- test: ", 11);
		check(run || !strncmp(p, "<!-- test-lines: ", 17), "%s: an unknown test marker",
		      where);
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
