/*
 * `fencebench adapter-test exec:COMMAND`, end to end: the reference adapter
 * and the correct stores with gapped versions pass every contract (exit 0);
 * each broken adapter fails exactly the contracts its mistake breaks, with
 * the exchange that broke each (exit 1): no-predicate (lower, equal, read
 * and the race), less-equal (equal), check-write (the race alone: its
 * mistake is a race), an etcd contrib/lock-like store (fresh: a newer
 * holder refused; equal; read: its reads carry no token; the race); bad
 * usage is one line naming the option and exit 2; an adapter that dies,
 * hangs or answers an error is exit 3. Also item 6 of issue 23: `check`
 * against an adapter without meta is exit 2, and --help lists every
 * subcommand. Skipped without python3 (the adapters are Python).
 */
#define _GNU_SOURCE
#include <libgen.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "fbproc.h"
#include "fbtest.h"

static char root[512];   /* the repository */
static char python[512]; /* the interpreter itself, not a shim: a start costs less */
static char *scratch;    /* this run's databases */

/* "exec:PYTHON ROOT/PATH ARGS SCRATCH/DB.db" */
static const char *url_of(const char *path, const char *args, const char *db)
{
	static char buf[4][2048];
	static int next;
	char *u = buf[next++ % 4];
	snprintf(u, sizeof buf[0], "exec:%s %s/%s %s%s%s/%s.db", python, root, path, args,
	         *args ? " " : "", scratch, db);
	return u;
}

/* adapter-test on url with extra options (NULL-terminated, or NULL); the
 * test fails unless it exits want. */
static void run(fb_test_proc *p, const char *url, const char *const *extra, int want)
{
	const char *args[16] = {"adapter-test"};
	int n = 1;
	for (; extra && *extra && n < 14; extra++)
		args[n++] = *extra;
	args[n++] = url;
	args[n] = NULL;
	fb_test_start_within(p, args, 600);
	int code = fb_test_finish(p);
	check(code == want, "adapter-test %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", url,
	      code, want, p->out, p->err);
}

/* The contracts on FAIL lines, in order: "lower,equal,race". */
static void failed_contracts(const char *out, char *buf, size_t len)
{
	buf[0] = 0;
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, "FAIL  ", 6) != 0)
			continue;
		size_t used = strlen(buf), w = strcspn(l + 6, " \n");
		snprintf(buf + used, len - used, "%s%.*s", used ? "," : "", (int)w, l + 6);
	}
}

static int count_lines(const char *out, const char *prefix)
{
	int n = 0;
	size_t k = strlen(prefix);
	for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		n += strncmp(l, prefix, k) == 0;
	return n;
}

/* Whether a line under the contract's line at l (the indented ones) begins
 * with prefix. */
static bool in_block(const char *l, const char *prefix)
{
	for (l = strchr(l, '\n'); l && !strncmp(l + 1, "      ", 6); l = strchr(l + 1, '\n'))
		if (!strncmp(l + 1, prefix, strlen(prefix)))
			return true;
	return false;
}

/* Every contract's line PASS, the verdict line PASS, nothing on stderr. */
static void passes(const char *path, const char *args, const char *db)
{
	fb_test_proc p;
	const char *extra[] = {"--rounds", "100", NULL};
	run(&p, url_of(path, args, db), extra, 0);
	check(count_lines(p.out, "PASS  ") == 10 && count_lines(p.out, "FAIL  ") == 0,
	      "%s %s: ten contracts, each PASS:\n%s", path, args, p.out);
	check(strstr(p.out, "\nadapter-test: PASS, 10 of 10 contracts held"),
	      "%s %s: the verdict line:\n%s", path, args, p.out);
	check(!*p.err, "%s %s: nothing on stderr:\n%s", path, args, p.err);
	fb_test_release(&p);
}

/* Exactly the contracts want fail; each FAIL quotes its exchange. */
static void fails(const char *path, const char *args, const char *db, const char *want,
                  const char *const *extra)
{
	fb_test_proc p;
	run(&p, url_of(path, args, db), extra, 1);
	char got[256];
	failed_contracts(p.out, got, sizeof got);
	check(!strcmp(got, want), "%s %s: the contracts that FAIL are '%s', want '%s':\n%s", path,
	      args, got, want, p.out);
	for (const char *l = strstr(p.out, "\nFAIL  "); l; l = strstr(l + 1, "\nFAIL  "))
		check(in_block(l + 1, "      > {\"op\":") && in_block(l + 1, "      < {"),
		      "%s %s: a FAIL quotes the requests and the replies:\n%s", path, args, l + 1);
	check(strstr(p.out, "\nadapter-test: FAIL !!! "), "%s %s: the verdict line:\n%s", path,
	      args, p.out);
	fb_test_release(&p);
}

static void test_the_reference_adapter_passes_every_contract(void **state)
{
	(void)state;
	passes("scripts/adapters/sqlite_store.py", "", "ref");
}

static void test_gapped_versions_pass_every_contract(void **state)
{
	(void)state;
	passes("tests/adapters/gapped.py", "x2", "x2");
	passes("tests/adapters/gapped.py", "x1000", "x1000");
	passes("tests/adapters/gapped.py", "ns", "ns");
}

static void test_each_broken_adapter_fails_by_contract(void **state)
{
	(void)state;
	const char *few[] = {"--rounds", "100", NULL};
	fails("scripts/adapters/sqlite_broken.py", "no-predicate", "np", "lower,equal,read,race",
	      few);
	fails("scripts/adapters/sqlite_broken.py", "less-equal", "le", "equal", few);
	/* a check in one statement, the write in another: only a race shows
	 * it, and at the default bound it shows every time */
	fails("scripts/adapters/sqlite_broken.py", "check-write", "cw", "race", NULL);
	fb_test_proc p;
	run(&p, url_of("scripts/adapters/sqlite_broken.py", "less-equal", "le"), few, 1);
	check(strstr(p.out, "a resent write lands twice"), "the equal token, named:\n%s", p.out);
	fb_test_release(&p);
}

/* etcd's contrib/lock storage, as tests/adapters/equal.py keeps it: the
 * newer holder refused, the equal token accepted (and no token on reads). */
static void test_an_equality_check_fails_fresh_and_equal(void **state)
{
	(void)state;
	const char *few[] = {"--rounds", "100", NULL};
	fails("tests/adapters/equal.py", "", "eq", "fresh,equal,read,race", few);
	fb_test_proc p;
	run(&p, url_of("tests/adapters/equal.py", "", "eq"), few, 1);
	check(strstr(p.out, "a newer holder refused") && strstr(p.out, "lands twice"),
	      "both defects named:\n%s", p.out);
	check(strstr(p.out, "\nn/a   version "), "versions cannot be judged, and say so:\n%s",
	      p.out);
	fb_test_release(&p);
}

/* One line on stderr naming the option and the value, exit 2. */
static void usage_error(const char *const *args, const char *want)
{
	fb_test_proc p;
	check_eq(fb_test_run(&p, args), 2, want);
	check(strstr(p.err, want) && strchr(p.err, '\n') == p.err + strlen(p.err) - 1,
	      "one line saying '%s':\n%s", want, p.err);
	check(!*p.out, "nothing on stdout:\n%s", p.out);
	fb_test_release(&p);
}

static void test_bad_usage_is_one_line_and_exit_2(void **state)
{
	(void)state;
	const char *ex = "exec:true";
	usage_error((const char *[]){"adapter-test", "--rounds", "0", ex, NULL}, "--rounds '0'");
	usage_error((const char *[]){"adapter-test", "--processes", "1", ex, NULL},
	            "--processes '1'");
	usage_error((const char *[]){"adapter-test", "-k", "x", ex, NULL}, "--keys 'x'");
	usage_error((const char *[]){"adapter-test", "--adapter-timeout", "5", ex, NULL},
	            "--adapter-timeout '5'");
	usage_error((const char *[]){"adapter-test", "--bogus", ex, NULL}, "'--bogus'");
	usage_error((const char *[]){"adapter-test", ex, "--rounds", NULL}, "--rounds needs");
	usage_error((const char *[]){"adapter-test", NULL}, "exec:COMMAND");
	usage_error((const char *[]){"adapter-test", "redis://localhost", NULL},
	            "'redis://localhost': not an adapter");
	fb_test_proc p; /* the shell says it too, on the stderr the adapter shares */
	check_eq(fb_test_run(&p, (const char *[]){"adapter-test", "exec:/nonexistent/ad", NULL}), 2,
	         "a command the shell cannot find");
	check(strstr(p.err, "fencebench adapter-test: ") && strstr(p.err, "could not find"),
	      "it says so:\n%s", p.err);
	fb_test_release(&p);
	check_eq(fb_test_run(&p, (const char *[]){"adapter-test", "--help", NULL}), 0, "--help");
	check(strstr(p.out, "--processes N") && strstr(p.out, "--adapter-timeout D"),
	      "--help lists the options:\n%s", p.out);
	fb_test_release(&p);
}

/* An adapter that exits, hangs or answers an error mid-test: exit 3, the
 * call named; one whose reply has the wrong shape: a contract FAIL. */
static void test_an_adapter_that_dies_is_exit_3(void **state)
{
	(void)state;
	static const struct {
		const char *mode, *says;
	} dies[] = {
	        {"exit", "exited with status 3"},
	        {"hang", "no reply within 1 s"},
	        {"error", "answered with an error"},
	};
	const char *opts[] = {"--rounds", "5", "--adapter-timeout", "1s", NULL};
	for (size_t i = 0; i < sizeof dies / sizeof dies[0]; i++) {
		fb_test_proc p;
		char args[64];
		snprintf(args, sizeof args, "%s 2", dies[i].mode);
		run(&p, url_of("tests/adapters/hostile.py", args, dies[i].mode), opts, 3);
		check(strstr(p.err, "fencebench adapter-test: adapter 'hostile'") &&
		              strstr(p.err, dies[i].says) && strstr(p.err, " token "),
		      "%s: stderr names the adapter, the call and '%s':\n%s", dies[i].mode,
		      dies[i].says, p.err);
		fb_test_release(&p);
	}
	fb_test_proc p;
	run(&p, url_of("tests/adapters/hostile.py", "missing 2", "missing"), opts, 1);
	const char *shape = strstr(p.out, "\nFAIL  shape ");
	check(shape && in_block(shape + 1, "      its reply breaks the protocol: ") &&
	              strstr(shape, "no \"version\""),
	      "a reply without its version fails shape, saying so:\n%s", p.out);
	fb_test_release(&p);
}

/* Issue 23 item 6: check needs meta and history, which an adapter may not
 * offer: a usage error (2), as the README says; and --help lists check
 * and adapter-test. */
static void test_check_without_meta_is_exit_2_and_help_lists_subcommands(void **state)
{
	(void)state;
	char store[2100];
	snprintf(store, sizeof store, "%s", url_of("tests/adapters/hostile.py", "no-meta 0", "nm"));
	usage_error((const char *[]){"check", "--store", store, NULL}, "does not implement meta");
	fb_test_proc p;
	check_eq(fb_test_run(&p, (const char *[]){"--help", NULL}), 0, "--help");
	check(strstr(p.out, "\n       fencebench check --store URL") &&
	              strstr(p.out, "\n       fencebench adapter-test exec:COMMAND"),
	      "--help lists check and adapter-test:\n%s", p.out);
	fb_test_release(&p);
}

int main(void)
{
	if (!fb_test_adapter_setup(python, sizeof python, root, sizeof root,
	                           7, /* the table below */
	                           "adapter-test tests"))
		return 0;
	scratch = fb_test_tmpdir();
	const struct CMUnitTest tests_[] = {
	        cmocka_unit_test(test_the_reference_adapter_passes_every_contract),
	        cmocka_unit_test(test_gapped_versions_pass_every_contract),
	        cmocka_unit_test(test_each_broken_adapter_fails_by_contract),
	        cmocka_unit_test(test_an_equality_check_fails_fresh_and_equal),
	        cmocka_unit_test(test_bad_usage_is_one_line_and_exit_2),
	        cmocka_unit_test(test_an_adapter_that_dies_is_exit_3),
	        cmocka_unit_test(test_check_without_meta_is_exit_2_and_help_lists_subcommands),
	};
	int failed = cmocka_run_group_tests(tests_, NULL, NULL);
	fb_test_rmtree(scratch);
	free(scratch);
	return failed;
}
