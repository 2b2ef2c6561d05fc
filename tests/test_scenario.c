/*
 * `fencebench scenario`: the six contracts as script files, run by the real
 * binary (FB_BIN) from FB_TESTS/scenarios, must pass with the article's
 * numbers; the built-ins must pass and be the same text as the files; a
 * malformed file gets exit 2 and one "file:line:col:" line; a wrong
 * expectation gets exit 1. Then the parser and the runner in-process: the
 * settings and steps it builds, every error it names, and a mutation
 * fuzzer that must never crash or leak (run it under ASan). Nothing
 * sleeps: every scenario runs on the manual clock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fbtest.h"
#include "scenario.h"

typedef struct proc {
	char *out, *err;
	int code;
} proc;

static const char *bin(void)
{
	const char *b = getenv("FB_BIN");
	return b ? b : "./fencebench";
}

static const char *tests_dir(void)
{
	const char *t = getenv("FB_TESTS");
	return t ? t : "tests";
}

/* All of fd until EOF, NUL-terminated. */
static char *slurp_fd(int fd)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	check(buf != NULL, "out of memory");
	for (;;) {
		if (len + 1 >= cap) {
			buf = realloc(buf, cap *= 2);
			check(buf != NULL, "out of memory");
		}
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	buf[len] = 0;
	return buf;
}

/*
 * Run FB_BIN scenario ARGS... (NULL-terminated). stderr goes to a
 * temporary file, so neither pipe can fill while the other is read.
 */
static int run(proc *p, const char *a1, const char *a2)
{
	char errpath[] = "/tmp/fbtest-scenario-XXXXXX";
	int errfd = mkstemp(errpath);
	check(errfd >= 0, "mkstemp failed: %s", strerror(errno));
	unlink(errpath);
	int o[2];
	check(pipe(o) == 0, "pipe failed: %s", strerror(errno));
	pid_t pid = fork();
	check(pid >= 0, "fork failed: %s", strerror(errno));
	if (pid == 0) {
		dup2(o[1], 1);
		dup2(errfd, 2);
		close(o[0]);
		const char *argv[] = {bin(), "scenario", a1, a2, NULL};
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(o[1]);
	p->out = slurp_fd(o[0]);
	close(o[0]);
	int status;
	waitpid(pid, &status, 0);
	lseek(errfd, 0, SEEK_SET);
	p->err = slurp_fd(errfd);
	close(errfd);
	p->code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return p->code;
}

static void release(proc *p)
{
	free(p->out);
	free(p->err);
}

static char *slurp_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	check(f != NULL, "cannot open %s: %s", path, strerror(errno));
	char *buf = slurp_fd(fileno(f));
	fclose(f);
	*len = strlen(buf);
	return buf;
}

/*
 * Whether one line of text holds every part of spec, parts separated by
 * '|' and found in order ("B|acquire acct|34|acquired"): the checks do not
 * depend on column widths.
 */
static bool has_line(const char *text, const char *spec)
{
	for (const char *line = text; *line;) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) : strlen(line);
		const char *at = line, *part = spec;
		bool all = true;
		while (all && *part) {
			const char *bar = strchr(part, '|');
			size_t k = bar ? (size_t)(bar - part) : strlen(part);
			const char *found = NULL;
			for (const char *c = at; c + k <= line + n && !found; c++)
				if (!strncmp(c, part, k))
					found = c;
			all = found != NULL;
			at = found ? found + k : at;
			part += k + (bar != NULL);
		}
		if (all)
			return true;
		line += n + (end != NULL);
	}
	return false;
}

static bool one_line(const char *s)
{
	size_t n = strlen(s);
	return n > 0 && strchr(s, '\n') == s + n - 1;
}

/* ---- the binary ------------------------------------------------------- */

static void test_contract_files_pass_with_the_articles_numbers(void **state)
{
	(void)state;
	static const struct {
		const char *file;
		const char *must[3];
	} cases[] = {
	        {"contract-1.fbs",
	         {"A|acquire acct:1|33|acquired, expires at 30ms",
	          "B|acquire acct:1|-|refused: A holds it (fence 33) until 30ms",
	          "B|is-held acct:1|no (A's lease, fence 33, until 30ms)"}},
	        {"contract-2.fbs",
	         {"31ms|A|is-held acct:1|33|no (expired at 30ms)",
	          "31ms|B|acquire acct:1|34|acquired, expires at 61ms", "ok|expect B fence 34"}},
	        {"contract-3.fbs",
	         {"A|debit acct:1 10|33|ACCEPTED stale -> 80",
	          "unfenced: CORRUPTED (balance 80, a stale write was accepted",
	          "ok|expect last-fence acct:1 unfenced 33"}},
	        {"contract-4.fbs",
	         {"A|debit acct:1 10|33|REJECTED stale (34 seen)|REJECTED stale (34 seen)",
	          "fenced: SAFE (balance 90, 1 stale write rejected)",
	          "ok|expect last-fence acct:1 fenced 34 write-fenced 34"}},
	        {"contract-5.fbs",
	         {"C|debit acct:1 5 fence 40|40|accepted -> 95",
	          "C|debit acct:1 5 fence 40|40|REJECTED stale (40 seen)",
	          "unfenced: CORRUPTED (balance 90, a stale write was accepted: fence 40 after "
	          "40)"}},
	        {"contract-6.fbs",
	         {"A|is-held acct:1|33|yes (until 30ms)",
	          "A|debit acct:1 10|33|REJECTED stale (34 seen)",
	          "fenced: SAFE (balance 90, 1 stale write rejected)"}},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char path[512];
		snprintf(path, sizeof path, "%s/scenarios/%s", tests_dir(), cases[i].file);
		proc p;
		run(&p, path, NULL);
		check(p.code == 0, "%s: exit %d, expected 0\nstdout:\n%s\nstderr:\n%s", path,
		      p.code, p.out, p.err);
		check(!p.err[0], "%s: nothing on stderr when every expectation holds: %s", path,
		      p.err);
		check(strstr(p.out, "\nPASS: "), "%s: the last line says PASS:\n%s", path, p.out);
		for (int m = 0; m < 3 && cases[i].must[m]; m++)
			check(has_line(p.out, cases[i].must[m]), "%s must show \"%s\":\n%s", path,
			      cases[i].must[m], p.out);
		release(&p);
	}
}

static void test_contract_files_are_the_builtins_text(void **state)
{
	(void)state;
	for (int n = 1; n <= 6; n++) {
		char path[512], name[16];
		snprintf(name, sizeof name, "contract-%d", n);
		snprintf(path, sizeof path, "%s/scenarios/%s.fbs", tests_dir(), name);
		size_t len;
		char *file = slurp_file(path, &len);
		proc p;
		check_eq(run(&p, "--show", name), 0, "exit code of scenario --show");
		check(!strcmp(file, p.out),
		      "%s must be the text of the built-in %s (regenerate it with "
		      "fencebench scenario --show %s)",
		      path, name, name);
		free(file);
		release(&p);
	}
}

static void test_every_builtin_passes(void **state)
{
	(void)state;
	for (const fb_scenario_builtin *b = fb_scenario_builtins; b->name; b++) {
		proc p;
		run(&p, b->name, NULL);
		check(p.code == 0, "built-in %s: exit %d, expected 0\nstdout:\n%s\nstderr:\n%s",
		      b->name, p.code, p.out, p.err);
		check(strstr(p.out, "\nPASS: "), "built-in %s passes its expectations:\n%s",
		      b->name, p.out);
		check(!strncmp(p.out, b->name, strlen(b->name)),
		      "a built-in's output starts with its name and summary:\n%s", p.out);
		release(&p);
	}
}

static void test_kleppmann_shows_fences_33_34_and_balances_80_90(void **state)
{
	(void)state;
	proc p;
	check_eq(run(&p, "kleppmann", NULL), 0, "exit code of scenario kleppmann");
	static const char *const must[] = {
	        "0ms|A|acquire acct|33|acquired, expires at 30ms",
	        "0ms|A|pause 31ms|asleep until 31ms",
	        "30ms|A's lease on acct (fence 33) expires",
	        "31ms|B|acquire acct|34|acquired, expires at 61ms",
	        "31ms|B|debit acct 10|34|accepted -> 90|accepted -> 90|accepted -> 90",
	        "31ms|A|debit acct 10|33|REJECTED stale (34 seen)|REJECTED stale (34 seen)|"
	        "ACCEPTED stale -> 80",
	        "fenced: SAFE (balance 90, 1 stale write rejected)",
	        "write-fenced: SAFE (balance 90, 1 stale write rejected)",
	        "unfenced: CORRUPTED (balance 80, a stale write was accepted: fence 33 after 34)",
	        "PASS: 8 expectations met",
	};
	for (size_t i = 0; i < sizeof must / sizeof *must; i++)
		check(has_line(p.out, must[i]), "scenario kleppmann must show \"%s\":\n%s", must[i],
		      p.out);
	release(&p);
}

static void test_rmw_write_fenced_loses_a_debit_fenced_refuses(void **state)
{
	(void)state;
	proc p;
	check_eq(run(&p, "rmw", NULL), 0, "exit code of scenario rmw");
	static const char *const must[] = {
	        "A|read acct|33|read 100|read 100|read 100",
	        "B|read acct|34|read 100|read 100|read 100",
	        "A|write acct read-1|33|REJECTED stale (34 seen)|accepted -> 99|accepted -> 99",
	        "B|write acct read-1|34|accepted -> 99|accepted -> 99|accepted -> 99",
	        "A|read acct|33|refused read (34 seen)|read 99|read 99",
	        "fenced: SAFE (balance 99, 1 stale write rejected, 1 read refused)",
	        "write-fenced: UPDATES LOST (balance 99, should be 98: no write went backwards",
	};
	for (size_t i = 0; i < sizeof must / sizeof *must; i++)
		check(has_line(p.out, must[i]), "scenario rmw must show \"%s\":\n%s", must[i],
		      p.out);
	release(&p);
}

static void test_malformed_file_exits_2_with_file_line_col(void **state)
{
	(void)state;
	static const struct {
		const char *file;
		const char *says; /* after "PATH:" */
	} cases[] = {
	        {"unknown-action.fbs", "5:3: unknown action 'grab'"},
	        {"setting-after-action.fbs", "3:1: 'ttl' is a setting: settings go before"},
	        {"duration-without-unit.fbs", "3:4: '31' is not a duration"},
	        {"time-backwards.fbs", "3:6: the clock is at 31ms already"},
	        {"expect-wrong-action.fbs",
	         "3:8: expect debit: the previous action (line 2) is acquire"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char path[512], want[700];
		snprintf(path, sizeof path, "%s/scenarios/bad/%s", tests_dir(), cases[i].file);
		snprintf(want, sizeof want, "%s:%s", path, cases[i].says);
		proc p;
		check_eq(run(&p, path, NULL), 2, cases[i].file);
		check(!strncmp(p.err, want, strlen(want)),
		      "stderr must start with \"%s\", it is: %s", want, p.err);
		check(one_line(p.err), "a malformed file gets exactly one line: %s", p.err);
		check(!p.out[0], "nothing runs, nothing is printed on stdout: %s", p.out);
		release(&p);
	}
}

static void test_wrong_expectation_exits_1_saying_what_happened(void **state)
{
	(void)state;
	char path[512], want[700];
	snprintf(path, sizeof path, "%s/scenarios/wrong-expectation.fbs", tests_dir());
	proc p;
	check_eq(run(&p, path, NULL), 1, "exit code of a scenario with a wrong expectation");
	snprintf(want, sizeof want,
	         "%s:12:1: expectation failed: expect balance acct fenced 91 unfenced 80: got "
	         "fenced 90\n",
	         path);
	check(!strcmp(p.err, want), "stderr must be \"%s\", it is \"%s\"", want, p.err);
	check(has_line(p.out, "FAIL|expect balance acct fenced 91 unfenced 80: got fenced 90"),
	      "the timeline marks the failed expectation:\n%s", p.out);
	check(has_line(p.out, "ok|expect B fence 34"),
	      "the run goes on after a failure and checks the rest:\n%s", p.out);
	check(strstr(p.out, "\nFAIL: 1 of 2 expectations failed\n"), "the summary line:\n%s",
	      p.out);
	release(&p);
}

static void test_missing_file_and_unknown_builtin_exit_2(void **state)
{
	(void)state;
	proc p;
	check_eq(run(&p, "/nonexistent/x.fbs", NULL), 2, "exit code for a missing file");
	check(strstr(p.err, "'/nonexistent/x.fbs'") && strstr(p.err, "No such file"),
	      "the message names the file and the reason: %s", p.err);
	check(one_line(p.err), "one line: %s", p.err);
	release(&p);

	check_eq(run(&p, "klepmann", NULL), 2, "exit code for an unknown built-in");
	for (const fb_scenario_builtin *b = fb_scenario_builtins; b->name; b++)
		check(strstr(p.err, b->name), "an unknown name lists the valid ones (%s): %s",
		      b->name, p.err);
	check(strstr(p.err, "'klepmann'"), "... and names the unknown one: %s", p.err);
	check(one_line(p.err), "one line: %s", p.err);
	release(&p);

	check_eq(run(&p, "--show", "nope"), 2, "exit code of --show for an unknown built-in");
	release(&p);
	check_eq(run(&p, NULL, NULL), 2, "exit code without a NAME or FILE");
	check(one_line(p.err), "one line: %s", p.err);
	release(&p);
	check_eq(run(&p, "--frobnicate", NULL), 2, "exit code for an unknown option");
	check(strstr(p.err, "'--frobnicate'"), "the message names the option: %s", p.err);
	release(&p);
}

static void test_list_and_help(void **state)
{
	(void)state;
	proc p;
	check_eq(run(&p, "--list", NULL), 0, "exit code of --list");
	for (const fb_scenario_builtin *b = fb_scenario_builtins; b->name; b++) {
		char line[256];
		snprintf(line, sizeof line, "%-12s %s\n", b->name, b->summary);
		check(strstr(p.out, line), "--list shows \"%s\":\n%s", line, p.out);
	}
	release(&p);
	check_eq(run(&p, "--help", NULL), 0, "exit code of --help");
	static const char *const words[] = {"first-fence", "advance", "acquire", "is-held",
	                                    "read-N",      "debit",   "expect",  "verdict"};
	for (size_t i = 0; i < sizeof words / sizeof *words; i++)
		check(strstr(p.out, words[i]), "--help explains %s:\n%s", words[i], p.out);
	release(&p);
}

/* ---- the parser, in-process ------------------------------------------- */

static fb_scenario *parse_ok(const char *text)
{
	char err[512];
	fb_scenario *sc = NULL;
	fb_err e = fb_scenario_parse(text, strlen(text), "t", &sc, err, sizeof err);
	check(e == FB_OK && sc, "must parse:\n%s\nerror: %s", text, err);
	return sc;
}

static void test_parse_settings_names_and_steps(void **state)
{
	(void)state;
	fb_scenario *sc = parse_ok("# a comment\n"
	                           "ttl 1.5s\r\n"
	                           "first-fence 7   # trailing comment\n"
	                           "balance -5\n"
	                           "fence per-key\n"
	                           "\n"
	                           "\tat 2ms\n"
	                           "Alice acquire acct:1\n"
	                           "Alice read acct:1\n"
	                           "expect read all ok\n"
	                           "Bob read acct:1 fence 9\n"
	                           "Bob write acct:1 read-3 fence 9\n"
	                           "Alice write acct:1 read+2\n"
	                           "Alice debit other 10 fence 3\n"
	                           "advance 500us\n"
	                           "expect Alice fence acct:1 7\n"
	                           "expect balance other fenced 90 unfenced -1\n"
	                           "expect verdict all safe");
	check_eq(sc->ttl_ns, 1500 * MS, "ttl 1.5s in ns");
	check_eq(sc->first_fence, 7, "first-fence");
	check_eq(sc->balance, -5, "balance may be negative");
	check_eq(sc->source, FB_FENCE_PER_KEY, "fence per-key");
	check_eq(sc->nclients, 2, "clients Alice, Bob");
	check(!strcmp(sc->clients[1], "Bob"), "client 1 is Bob, got %s", sc->clients[1]);
	check_eq(sc->nkeys, 2, "keys acct:1, other");
	check(!strcmp(sc->keys[0], "acct:1"), "key 0 is acct:1, got %s", sc->keys[0]);
	check_eq(sc->nsteps, 12, "statements other than settings");
	const fb_scenario_step *s = sc->steps;
	check_eq(s[0].op, FB_SCENARIO_AT, "at");
	check_eq(s[0].ns, 2 * MS, "at 2ms");
	check_eq(s[0].line, 7, "line of 'at' (comments and blank lines count)");
	check_eq(s[0].col, 2, "col of 'at' after a tab");
	check_eq(s[2].op, FB_SCENARIO_READ, "read");
	check_eq(s[3].op, FB_SCENARIO_EXPECT_RESULT, "expect read");
	check_eq(s[3].of, FB_SCENARIO_READ, "expect read checks a read");
	check_eq(s[3].of_step, 2, "... the read just before");
	for (int d = 0; d < FB_DISCIPLINES; d++)
		check_eq(s[3].want[d], FB_SCENARIO_OK, "'all ok' sets every store");
	check_eq(s[5].client, 1, "Bob");
	check(s[5].has_token && s[5].token == 9, "fence 9 overrides the lease's fence");
	check_eq(s[5].source, FB_SCENARIO_FROM_READ, "read-3 is relative to a read");
	check_eq(s[5].value, -3, "read-3");
	check_eq(s[6].value, 2, "read+2");
	check_eq(s[7].op, FB_SCENARIO_DEBIT, "debit");
	check_eq(s[7].value, 10, "debit amount");
	check_eq(s[8].ns, 500000, "advance 500us");
	check(s[9].has_key && s[9].value == 7, "expect Alice fence acct:1 7");
	check_eq(s[10].want[FB_WRITE_FENCED], FB_SCENARIO_ANY, "write-fenced not named");
	check_eq(s[10].want_value[FB_UNFENCED], -1, "unfenced -1");
	check_eq(s[11].want[FB_UNFENCED], FB_SCENARIO_SAFE, "verdict all safe");

	char buf[256];
	fb_scenario_step_format(sc, &s[5], buf, sizeof buf);
	check(!strcmp(buf, "write acct:1 read-3 fence 9"), "format of a write: %s", buf);
	fb_scenario_step_format(sc, &s[10], buf, sizeof buf);
	check(!strcmp(buf, "expect balance other fenced 90 unfenced -1"), "format: %s", buf);
	fb_scenario_step_format(sc, &s[8], buf, sizeof buf);
	check(!strcmp(buf, "advance 500us"), "format of a duration: %s", buf);
	fb_scenario_free(sc);
}

static void test_parse_errors_name_line_column_and_problem(void **state)
{
	(void)state;
	char longline[400];
	memset(longline, 'x', sizeof longline);
	memcpy(longline, "# ", 2);
	longline[sizeof longline - 1] = 0;
	static const char nul[] = "A acquire acct\nA read\0acct\n";
	const struct {
		const char *text;
		size_t len; /* 0: strlen */
		const char *says;
	} cases[] = {
	        {"A acquire acct\nA grab acct", 0, "t:2:3: unknown action 'grab'"},
	        {"lease acct", 0, "t:1:1: unknown statement 'lease'"},
	        {"A acquire acct\nttl 5ms", 0, "t:2:1: 'ttl' is a setting"},
	        {"ttl 5ms\nttl 6ms", 0, "t:2:1: 'ttl' is set twice (first on line 1)"},
	        {"ttl 0", 0, "t:1:5: ttl must be above 0"},
	        {"ttl", 0, "t:1:4: ttl needs a duration"},
	        {"at 31", 0, "t:1:4: '31' is not a duration"},
	        {"at 1.5ns", 0, "t:1:4: '1.5ns' is finer than a nanosecond"},
	        {"at 9999999999h", 0, "t:1:4: '9999999999h' is longer than a year"},
	        {"at 99999999999999999999999999ms", 0, "is longer than a year"},
	        {"at 31ms\nat 30ms", 0, "t:2:4: the clock is at 31ms already"},
	        {"advance 300d", 0, "t:1:9: '300d' is not a duration"},
	        {"fence random", 0, "t:1:7: fence source 'random'"},
	        {"first-fence 0", 0, "t:1:13: first-fence '0' is out of range"},
	        {"first-fence 140737488355328", 0, "first-fence '140737488355328' is out of range"},
	        {"balance 99999999999999999999", 0, "t:1:9: balance '99999999999999999999' is out"},
	        {"balance 12x", 0, "t:1:9: balance '12x' is not an integer"},
	        {"A debit acct 10", 0, "t:1:3: A has no fence for acct: no 'A acquire acct'"},
	        {"A acquire acct\nA write acct read-1", 0, "t:2:14: 'read-1' needs a read"},
	        {"A acquire acct\nA read acct\nA write acct read*2", 0,
	         "t:3:14: 'read*2' is not a value"},
	        {"A acquire acct\nA debit acct -1", 0, "t:2:14: amount '-1' is not a non-negative"},
	        {"A acquire acct\nA debit acct 1 fence", 0, "t:2:21: fence needs a number"},
	        {"A acquire acct\nA debit acct 1 fence 1 2", 0, "t:2:24: unexpected '2'"},
	        {"A acquire", 0, "t:1:10: acquire needs a KEY"},
	        {"A acquire 1acct", 0, "t:1:11: '1acct' is not a key name"},
	        {"A acquire a#b", 0, NULL}, /* '#' starts a comment: "a" is the key */
	        {"a acquire acct", 0, "t:1:1: unknown statement 'a'"},
	        {"expect", 0, "t:1:7: expect needs what"},
	        {"expect debit all accepted", 0, "t:1:8: expect debit: no action before it"},
	        {"A acquire acct\nexpect debit all accepted", 0,
	         "t:2:8: expect debit: the previous action (line 1) is acquire"},
	        {"A acquire acct\nexpect acquire maybe", 0,
	         "t:2:16: 'maybe': expect acquire ok or"},
	        {"A is-held acct\nexpect is-held ok", 0, "t:2:16: 'ok': expect is-held yes or no"},
	        {"A acquire acct\nexpect balance acct all 1 fenced 2", 0,
	         "t:2:27: fenced is named twice"},
	        {"A acquire acct\nexpect balance acct fancy 1", 0, "t:2:21: unknown store 'fancy'"},
	        {"A acquire acct\nexpect balance acct fenced", 0, "t:2:27: fenced needs a number"},
	        {"A acquire acct\nexpect balance nokey all 1", 0, "t:2:16: unknown key 'nokey'"},
	        {"A acquire acct\nexpect Z fence 33", 0, "t:2:8: unknown client 'Z'"},
	        {"A acquire acct\nexpect A fenc 33", 0, "t:2:10: 'fenc': expect A fence"},
	        {"A acquire acct\nexpect A fence 1 2 3", 0, "t:2:16: '1' is not a key name"},
	        {"A acquire acct\nexpect verdict unfenced ruined", 0,
	         "t:2:25: 'ruined': expect verdict expects safe, lost or corrupted"},
	        {"A acquire acct\nexpect pause x", 0, "t:2:8: unknown expectation 'pause'"},
	        {"A pause", 0, "t:1:8: pause needs a duration"},
	        {"A acquire acct caf\xc3\xa9", 0, "t:1:19: unexpected byte 0xc3"},
	        {nul, sizeof nul - 1, "t:2:7: unexpected byte 0x00"},
	        {longline, 0, "t:1:256: line longer than 255 bytes"},
	        {"A acquire a b c d e f g h i j k l m n o p q r s t u v w x y z", 0,
	         "t:1:55: more than 24 words on a line"},
	        {"A acquire k1\nA acquire k2\nA acquire k3\nA acquire k4\nA acquire k5\n"
	         "A acquire k6\nA acquire k7\nA acquire k8\nA acquire k9\nA acquire k10\n"
	         "A acquire k11\nA acquire k12\nA acquire k13\nA acquire k14\nA acquire k15\n"
	         "A acquire k16\nA acquire k17",
	         0, "t:17:11: too many keys: 'k17' would be the 17th (at most 16)"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char err[512] = "untouched";
		fb_scenario *sc = (fb_scenario *)1;
		size_t len = cases[i].len ? cases[i].len : strlen(cases[i].text);
		fb_err e = fb_scenario_parse(cases[i].text, len, "t", &sc, err, sizeof err);
		if (!cases[i].says) {
			check(e == FB_OK, "case %zu must parse, got: %s", i, err);
			fb_scenario_free(sc);
			continue;
		}
		check(e == FB_EINVAL, "case %zu (%s) must be refused, parse returned %d", i,
		      cases[i].says, (int)e);
		check(sc == NULL, "case %zu: *out is NULL on error", i);
		check(strstr(err, cases[i].says),
		      "case %zu: the message must say \"%s\", it says \"%s\"", i, cases[i].says,
		      err);
		check(!strchr(err, '\n'), "case %zu: one line, no newline: %s", i, err);
	}
}

static void test_parse_tolerates_tiny_error_buffers(void **state)
{
	(void)state;
	char err[4];
	fb_scenario *sc;
	check_eq(fb_scenario_parse("bogus", 5, "a-long-name", &sc, err, sizeof err), FB_EINVAL,
	         "a malformed text is refused whatever the buffer");
	check(strlen(err) < sizeof err, "the message is cut to fit: %s", err);
	check_eq(fb_scenario_parse("bogus", 5, NULL, &sc, NULL, 0), FB_EINVAL,
	         "no buffer at all is allowed");
	check_eq(fb_scenario_parse("", 0, NULL, &sc, NULL, 0), FB_OK, "an empty text is valid");
	check_eq(sc->nsteps, 0, "... and has no steps");
	fb_scenario_free(sc);
}

/* Run sc in-process; its output goes to files that are read back. */
static int run_inprocess(const fb_scenario *sc, char **out, char **err)
{
	FILE *o = tmpfile(), *e = tmpfile();
	check(o && e, "tmpfile failed: %s", strerror(errno));
	int code = fb_scenario_run(sc, o, e);
	fflush(o);
	fflush(e);
	rewind(o);
	rewind(e);
	*out = slurp_fd(fileno(o));
	*err = slurp_fd(fileno(e));
	fclose(o);
	fclose(e);
	return code;
}

static void test_run_refuses_a_store_action_without_a_fence(void **state)
{
	(void)state;
	/* B's acquire is refused at run time, so B has no fence to send. */
	fb_scenario *sc = parse_ok("A acquire acct\nB acquire acct\nB debit acct 10\n");
	char *out, *err;
	check_eq(run_inprocess(sc, &out, &err), 2, "a script asking the impossible: exit 2");
	check(!strcmp(err, "t:3:1: B has no fence for acct: its acquire was refused (or add "
	                   "'fence N')\n"),
	      "one line naming the place and the problem: %s", err);
	free(out);
	free(err);
	fb_scenario_free(sc);
}

static void test_run_lease_actions_and_per_key_fences(void **state)
{
	(void)state;
	fb_scenario *sc = parse_ok("fence per-key\nfirst-fence 5\nttl 10ms\n"
	                           "A acquire x\nexpect A fence 5\n"
	                           "A acquire y\nexpect A fence y 5\n"
	                           "advance 5ms\n"
	                           "A renew x\nexpect renew ok\n"
	                           "advance 9ms\n"
	                           "A renew y\nexpect renew refused\n"
	                           "B acquire x\nexpect acquire refused\n"
	                           "B acquire y\nexpect B fence 6\n"
	                           "A release y\nexpect release refused\n"
	                           "B release y\nexpect release ok\n"
	                           "A is-held x\nexpect is-held yes\n"
	                           "expect highest x all 0\n"
	                           "expect verdict all safe\n");
	char *out, *err;
	int code = run_inprocess(sc, &out, &err);
	check(code == 0, "exit %d:\n%s\n%s", code, out, err);
	check(strstr(out, "renewed, expires at 15ms"), "A's renewal at 5ms runs to 15ms:\n%s", out);
	check(strstr(out, "A's lease on y (fence 5) expires"), "y expires at 10ms:\n%s", out);
	check(strstr(out, "\nPASS: 11 expectations met\n"), "all held:\n%s", out);
	free(out);
	free(err);
	fb_scenario_free(sc);
}

static void test_run_acquire_past_the_last_fence_is_refused(void **state)
{
	(void)state;
	fb_scenario *sc =
	        parse_ok("first-fence 140737488355327\n"
	                 "A acquire a\nexpect A fence 140737488355327\n"
	                 "B acquire b\nexpect acquire refused\n"
	                 "B debit b 1 fence 140737488355327\nexpect debit all accepted\n");
	char *out, *err;
	int code = run_inprocess(sc, &out, &err);
	check(code == 0, "exit %d:\n%s\n%s", code, out, err);
	check(has_line(out, "B|acquire b|-|refused: the fence space is exhausted"),
	      "the last fence is minted once:\n%s", out);
	free(out);
	free(err);
	fb_scenario_free(sc);
}

static void test_run_verdict_expectations_can_fail(void **state)
{
	(void)state;
	fb_scenario *sc = parse_ok("A acquire acct\nA pause 31ms\nB acquire acct\n"
	                           "B debit acct 10\nA debit acct 10\n"
	                           "expect verdict unfenced safe fenced corrupted\n"
	                           "expect debit all accepted\n");
	char *out, *err;
	check_eq(run_inprocess(sc, &out, &err), 1, "wrong expectations: exit 1");
	check(strstr(err,
	             "t:6:1: expectation failed: expect verdict fenced corrupted unfenced safe: "
	             "got fenced safe, unfenced corrupted\n"),
	      "what was expected and what happened:\n%s", err);
	check(strstr(err, "t:7:1: expectation failed: expect debit all accepted: got fenced "
	                  "rejected, write-fenced rejected\n"),
	      "the stores that did otherwise:\n%s", err);
	free(out);
	free(err);
	fb_scenario_free(sc);
}

/* xorshift64*: deterministic, so a failure reproduces. */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

/*
 * Mutations of the built-ins' texts (bytes flipped, inserted, deleted,
 * lines spliced from other scenarios, tokens swapped for edge values):
 * every one must parse or be refused with a message that names the place,
 * and each that parses must run to completion. ASan/UBSan builds turn any
 * overflow, leak or undefined behaviour into a failure.
 */
static void test_parse_and_run_survive_mutated_input(void **state)
{
	(void)state;
	static const char *const tokens[] = {" 0",
	                                     " -1",
	                                     " 99999999999999999999",
	                                     " 140737488355327",
	                                     " 140737488355328",
	                                     "ms",
	                                     ".",
	                                     " read-",
	                                     " read+1000000000000",
	                                     " fence ",
	                                     " all",
	                                     "#",
	                                     "\r",
	                                     "\n",
	                                     "\t",
	                                     "\0",
	                                     "\xff",
	                                     " expect ",
	                                     " A ",
	                                     " at 1h\n",
	                                     " Z",
	                                     " 8760h",
	                                     " debit acct 1000000000000\n"};
	size_t n = 0;
	while (fb_scenario_builtins[n].name)
		n++;
	uint64_t seed = 0x9e3779b97f4a7c15u;
	int iterations = getenv("FB_SANITIZED") ? 10000 : 100000, parsed = 0;
	FILE *devnull = fopen("/dev/null", "w");
	check(devnull != NULL, "open /dev/null: %s", strerror(errno));
	char buf[8192];
	for (int it = 0; it < iterations; it++) {
		const char *src = fb_scenario_builtins[next_rand(&seed) % n].text;
		size_t len = strlen(src);
		memcpy(buf, src, len);
		int edits = 1 + (int)(next_rand(&seed) % 4);
		for (int e = 0; e < edits; e++) {
			size_t at = len ? next_rand(&seed) % len : 0;
			switch (next_rand(&seed) % 4) {
			case 0: /* flip a byte */
				if (len)
					buf[at] = (char)next_rand(&seed);
				break;
			case 1: /* delete a run */
			{
				size_t k = next_rand(&seed) % 16;
				if (at + k > len)
					k = len - at;
				memmove(buf + at, buf + at + k, len - at - k);
				len -= k;
				break;
			}
			case 2: /* insert a token */
			{
				const char *t =
				        tokens[next_rand(&seed) % (sizeof tokens / sizeof *tokens)];
				size_t k = strlen(t) ? strlen(t) : 1;
				if (len + k < sizeof buf) {
					memmove(buf + at + k, buf + at, len - at);
					memcpy(buf + at, t, k);
					len += k;
				}
				break;
			}
			default: /* splice another scenario's tail */
			{
				const char *o = fb_scenario_builtins[next_rand(&seed) % n].text;
				size_t ol = strlen(o), from = next_rand(&seed) % ol;
				size_t k =
				        ol - from < sizeof buf - at ? ol - from : sizeof buf - at;
				memcpy(buf + at, o + from, k);
				len = at + k;
				break;
			}
			}
		}
		char err[256];
		fb_scenario *sc;
		fb_err e = fb_scenario_parse(buf, len, "fuzz", &sc, err, sizeof err);
		check(e == FB_OK || e == FB_EINVAL, "iteration %d: parse returned %d", it, (int)e);
		if (e != FB_OK) {
			check(!strncmp(err, "fuzz:", 5) && !strchr(err, '\n'),
			      "iteration %d: one line starting with the name: %s", it, err);
			continue;
		}
		parsed++;
		int code = fb_scenario_run(sc, devnull, devnull);
		check(code >= 0 && code <= 2, "iteration %d: run returned %d", it, code);
		fb_scenario_free(sc);
	}
	fclose(devnull);
	check(parsed > iterations / 50, "some mutants must parse and run (%d of %d did)", parsed,
	      iterations);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_contract_files_pass_with_the_articles_numbers),
	        cmocka_unit_test(test_contract_files_are_the_builtins_text),
	        cmocka_unit_test(test_every_builtin_passes),
	        cmocka_unit_test(test_kleppmann_shows_fences_33_34_and_balances_80_90),
	        cmocka_unit_test(test_rmw_write_fenced_loses_a_debit_fenced_refuses),
	        cmocka_unit_test(test_malformed_file_exits_2_with_file_line_col),
	        cmocka_unit_test(test_wrong_expectation_exits_1_saying_what_happened),
	        cmocka_unit_test(test_missing_file_and_unknown_builtin_exit_2),
	        cmocka_unit_test(test_list_and_help),
	        cmocka_unit_test(test_parse_settings_names_and_steps),
	        cmocka_unit_test(test_parse_errors_name_line_column_and_problem),
	        cmocka_unit_test(test_parse_tolerates_tiny_error_buffers),
	        cmocka_unit_test(test_run_refuses_a_store_action_without_a_fence),
	        cmocka_unit_test(test_run_lease_actions_and_per_key_fences),
	        cmocka_unit_test(test_run_acquire_past_the_last_fence_is_refused),
	        cmocka_unit_test(test_run_verdict_expectations_can_fail),
	        cmocka_unit_test(test_parse_and_run_survive_mutated_input),
	};
	return cmocka_run_group_tests_name("scenario", tests, NULL, NULL);
}
