/*
 * Your own SQL for the PostgreSQL store (--store postgres://...?sql=FILE):
 * the statements file read and its $names rewritten (no server), then the
 * binary against a throwaway PostgreSQL (tests/servers.c): the example
 * table's fenced UPDATE passes beside fencebench's controls, the same
 * UPDATE without its fence predicate is caught, and statements that cannot
 * work are refused before the run (exit 2) with the reason. The server part
 * is skipped where PostgreSQL is not installed.
 */
#define _GNU_SOURCE
#include <libgen.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "fbproc.h"
#include "fbtest.h"
#include "pg_sql.h"
#include "servers.h"

static fb_server pg;
static bool have_pg;
static char root[PATH_MAX], *scratch;

/* ---- the file ------------------------------------------------------------- */

static void test_names_become_the_positions_fencebench_binds(void **state)
{
	(void)state;
	fb_user_sql u;
	char err[300];
	bool ok = fb_user_sql_parse(
	        "-- a comment before anything\n"
	        "-- @name accounts\n"
	        "-- @write\n"
	        "UPDATE t SET b = $balance, f = $token, s = '$key' /* $amount */ -- $x\n"
	        "  , q = $$ $key $$, r = $tag$ $token $tag$\n"
	        " WHERE id = $key AND f < $token;\n"
	        "-- @read\n"
	        "SELECT balance FROM t WHERE id = $key\n"
	        "--   @reset\n"
	        "INSERT INTO t SELECT k, $initial_balance FROM generate_series(0, $keys - 1) k\n",
	        &u, err, sizeof err);
	check(ok, "a good file parses: %s", err);
	check(!strcmp(u.name, "accounts"), "the column's name");
	check(!strcmp(u.sql[FB_SQL_WRITE],
	              "UPDATE t SET b = $1, f = $2, s = '$key' /* $amount */ -- $x\n"
	              "  , q = $$ $key $$, r = $tag$ $token $tag$\n"
	              " WHERE id = $3 AND f < $2"),
	      "write: $balance $token $key are $1 $2 $3, strings and comments untouched, the "
	      "final ';' gone:\n%s",
	      u.sql[FB_SQL_WRITE]);
	check(!strcmp(u.sql[FB_SQL_READ], "SELECT balance FROM t WHERE id = $1"), "read: %s",
	      u.sql[FB_SQL_READ]);
	check(u.nreset == 1 && strstr(u.reset[0], "SELECT k, $2 FROM generate_series(0, $1 - 1)"),
	      "reset: $keys $1, $initial_balance $2: %s", u.nreset ? u.reset[0] : "(none)");
	check(!u.sql[FB_SQL_DEBIT] && !u.sql[FB_SQL_FINAL], "what is not there is NULL");
	fb_user_sql_free(&u);
}

static void test_a_file_that_cannot_work_says_why_and_where(void **state)
{
	(void)state;
	static const struct {
		const char *text, *why;
	} cases[] = {
	        {"-- @write\nUPDATE t SET b = $balance WHERE id = $key AND f < $tokn\n",
	         "line 1: @write has no parameter $tokn (it takes $balance, $token, $key"},
	        {"-- @read\nSELECT b FROM t WHERE id = $1\n", "positional parameter ($1)"},
	        {"-- @write\nUPDATE t SET f = $token WHERE id = $key\n",
	         "@write never uses $balance"},
	        {"-- @debit\nUPDATE t SET b = b - 1 WHERE id = $key\n",
	         "@debit never uses $amount"},
	        {"-- @write\n\n-- @read\nSELECT 1\n", "line 1: @write has no statement"},
	        {"-- @wirte\nSELECT 1\n", "line 1: unknown directive @wirte"},
	        {"-- @read\nSELECT $key\n-- @read\nSELECT $key\n", "line 3: a second @read"},
	        {"SELECT 1\n-- @read\nSELECT $key\n", "line 1: a statement before any directive"},
	        {"-- @name my table\n", "@name needs"},
	        {"-- @name unfenced\n", "@name needs"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		fb_user_sql u;
		char err[300] = "";
		bool ok = fb_user_sql_parse(cases[i].text, &u, err, sizeof err);
		check(!ok && strstr(err, cases[i].why), "'%s' must be refused saying '%s', got: %s",
		      cases[i].text, cases[i].why, ok ? "(parsed)" : err);
		fb_user_sql_free(&u);
	}
}

static void test_sql_is_taken_out_of_the_url_for_libpq(void **state)
{
	(void)state;
	static const struct {
		const char *url, *rest, *path;
	} cases[] = {
	        {"postgres://u@h:5/db?sql=my.sql", "postgres://u@h:5/db", "my.sql"},
	        {"postgres://u@h:5/db?sslmode=disable&sql=a/b.sql&x=1",
	         "postgres://u@h:5/db?sslmode=disable&x=1", "a/b.sql"},
	        {"postgres://u@h:5/db?sql=f.sql&x=1", "postgres://u@h:5/db?x=1", "f.sql"},
	        {"host=h sql='my file.sql' dbname=d", "host=h  dbname=d", "my file.sql"},
	        {"host=h dbname=d sql = f.sql", "host=h dbname=d ", "f.sql"},
	        {"postgres://u@h/db?mysql=1", "postgres://u@h/db?mysql=1", ""},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char rest[256], path[256];
		check(fb_user_sql_take(cases[i].url, rest, sizeof rest, path, sizeof path), "%s",
		      cases[i].url);
		check(!strcmp(rest, cases[i].rest) && !strcmp(path, cases[i].path),
		      "%s: expected '%s' and '%s', got '%s' and '%s'", cases[i].url, cases[i].rest,
		      cases[i].path, rest, path);
	}
}

/* ---- the binary against a server ----------------------------------------- */

/* url?sql=FILE */
static const char *with_sql(const char *file)
{
	static char u[2][PATH_MAX + 1200];
	static int next;
	char *s = u[next++ % 2];
	snprintf(s, sizeof u[0], "%s?sql=%s", pg.url, file);
	return s;
}

/* The example file with `from` replaced by `to`, as a file of its own. */
static const char *variant(const char *name, const char *from, const char *to)
{
	static char path[PATH_MAX];
	char src[PATH_MAX + 64];
	snprintf(src, sizeof src, "%s/scripts/adapters/postgres_accounts.sql", root);
	FILE *f = fopen(src, "r");
	check(f, "cannot read %s", src);
	char text[8192];
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = 0;
	snprintf(path, sizeof path, "%s/%s.sql", scratch, name);
	FILE *o = fopen(path, "w");
	check(o, "cannot write %s", path);
	for (char *p = text, *hit; *p; p = hit + strlen(from)) {
		hit = from ? strstr(p, from) : NULL;
		if (!hit) {
			fputs(p, o);
			break;
		}
		fwrite(p, 1, (size_t)(hit - p), o);
		fputs(to, o);
	}
	fclose(o);
	return path;
}

/* The binary on store, its results in scratch (fb_test_run_store). */
#define run(p, store, extra, want) fb_test_run_store(p, scratch, store, extra, want)

static void test_your_own_update_is_judged_beside_the_controls(void **state)
{
	(void)state;
	if (!have_pg)
		fb_skip("postgresql", "your own SQL needs a PostgreSQL server");
	char file[PATH_MAX + 64];
	snprintf(file, sizeof file, "%s/scripts/adapters/postgres_accounts.sql", root);
	fb_test_proc p;
	const char *args[] = {"-t", "8", "-d", "2s", "--ttl", "30ms", "--pause-rate", "40", NULL};
	json_object *doc = run(&p, with_sql(file), args, 0);
	check(strstr(p.out, "accounts: SAFE") && strstr(p.out, "unfenced: CORRUPTED"),
	      "the user's column is safe, the control corrupted:\n%s", p.out);
	json_object *c = fb_test_json(doc, "modes.fenced.column");
	check(c && !strcmp(json_object_get_string(c), "accounts"), "modes.fenced.column");
	check(fb_test_num(doc, "modes.fenced.accepted") > 0, "the user's UPDATE accepted writes");
	json_object_put(doc);
	fb_test_release(&p);
	/* check re-verifies fencebench's own tables: the user's has no history */
	const char *chk[] = {"check", "--store", pg.url, NULL};
	check_eq(fb_test_run(&p, chk), 0, "check of the controls");
	check(!strstr(p.out, "accounts") && strstr(p.out, "unfenced"), "the controls only:\n%s",
	      p.out);
	fb_test_release(&p);
}

static void test_your_update_without_its_predicate_is_caught(void **state)
{
	(void)state;
	if (!have_pg)
		fb_skip("postgresql", "your own SQL needs a PostgreSQL server");
	const char *file = variant("nopred", " AND a.last_fence < $token AND a.seen <= $token", "");
	fb_test_proc p;
	const char *args[] = {"-t", "8", "-d", "2s", "--ttl", "30ms", "--pause-rate", "40", NULL};
	json_object *doc = run(&p, with_sql(file), args, 1);
	check(strstr(p.out, "accounts: VIOLATED !!!") && strstr(p.out, "stale writes accepted"),
	      "the verdict names what the UPDATE let through:\n%s", p.out);
	json_object_put(doc);
	fb_test_release(&p);
	/* a check given the sql=FILE URL after a run on fencebench's own tables
	 * reads the controls only, not the fenced history against the user's
	 * finals */
	const char *own[] = {"-t", "2", "-d", "1s", NULL};
	json_object_put(run(&p, pg.url, own, 0));
	fb_test_release(&p);
	const char *chk[] = {"check", "--store", with_sql(file), NULL};
	check_eq(fb_test_run(&p, chk), 0, "check with sql=FILE after a run without it");
	check(strstr(p.out, "disciplines write-fenced, unfenced\n") &&
	              strstr(p.out, "PASS: write-fenced writes="),
	      "the controls only:\n%s", p.out);
	fb_test_release(&p);
}

static void test_statements_that_cannot_work_are_refused_before_the_run(void **state)
{
	(void)state;
	if (!have_pg)
		fb_skip("postgresql", "your own SQL needs a PostgreSQL server");
	static const struct {
		const char *name, *from, *to, *why;
	} cases[] = {
	        {"param", "a.last_fence < $token", "a.last_fence < $tokn",
	         "@write has no parameter $tokn"},
	        {"column", "old.last_fence\n", "old.last_fence AS lf\n",
	         "no column \"last_fence\": it must return before, balance, version and "
	         "last_fence"},
	        {"syntax", "FROM old\n WHERE a.id", "FROM old\n WEHRE a.id",
	         "@write: syntax error"},
	        {"table", "FROM accounts WHERE id = $key\n", "FROM acounts WHERE id = $key\n",
	         "@final: relation \"acounts\" does not exist"},
	        {"final", "-- @final", "-- final", "has no @final"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *file = variant(cases[i].name, cases[i].from, cases[i].to);
		fb_test_proc p;
		const char *args[] = {"-t", "2", "-d", "1s", NULL};
		run(&p, with_sql(file), args, 2);
		check(strstr(p.err, "--store") && strstr(p.err, cases[i].why),
		      "%s: the line names the option and '%s':\n%s", cases[i].name, cases[i].why,
		      p.err);
		fb_test_release(&p);
	}
	fb_test_proc p;
	run(&p, with_sql("/nonexistent.sql"), NULL, 2);
	check(strstr(p.err, "cannot read '/nonexistent.sql'"), "a missing file:\n%s", p.err);
	fb_test_release(&p);
}

int main(void)
{
	const char *t = getenv("FB_TESTS");
	char abs[PATH_MAX];
	if (!realpath(t ? t : "tests", abs)) {
		fprintf(stderr, "cannot resolve the tests directory\n");
		return 1;
	}
	snprintf(root, sizeof root, "%s", dirname(abs));
	scratch = fb_test_tmpdir();
	int r = fb_server_start(FB_SERVER_POSTGRES, &pg);
	if (r < 0) {
		fprintf(stderr, "cannot start postgres: %s\n", pg.why);
		return 1;
	}
	have_pg = r > 0;
	if (!have_pg) /* the checks of the file itself run without a server */
		printf("SKIPPED: your own SQL against PostgreSQL, 3 tests: %s\n", pg.why);
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_names_become_the_positions_fencebench_binds),
	        cmocka_unit_test(test_a_file_that_cannot_work_says_why_and_where),
	        cmocka_unit_test(test_sql_is_taken_out_of_the_url_for_libpq),
	        cmocka_unit_test(test_your_own_update_is_judged_beside_the_controls),
	        cmocka_unit_test(test_your_update_without_its_predicate_is_caught),
	        cmocka_unit_test(test_statements_that_cannot_work_are_refused_before_the_run),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	if (have_pg)
		fb_server_stop(&pg);
	fb_test_rmtree(scratch);
	free(scratch);
	return failed;
}
