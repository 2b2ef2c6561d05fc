/*
 * The lease adapter engine (--lease exec:COMMAND): the lease side's reply
 * validators, the engine against real adapter processes (the SQLite
 * reference lease adapter, and tests/adapters/hostile_lease.py, which
 * breaks the protocol one way at its Nth granted acquire), the binary end
 * to end (the reference pair SAFE with the control corrupted; each broken
 * lease adapter caught by name, exit 1), and `adapter-test --lease` (the
 * reference passes, each broken one FAILs the contract of its defect).
 * Skipped without python3 (the adapters are Python).
 *
 * Nothing here waits on a clock of its own: a lease that must stay live
 * lives a minute; faults are fencebench's own, aimed at holders, and a run
 * that must find a planted mistake gets a bounded number of tries.
 */
#define _GNU_SOURCE
#include <libgen.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "exec.h"
#include "exec_proto.h"
#include "fbproc.h"
#include "fbtest.h"

static char root[512];   /* the repository */
static char python[512]; /* the interpreter itself, not a shim: starts stay quick */
static char *scratch;    /* this run's databases */

/* "exec:PYTHON ROOT/PATH ARGS" */
static const char *url_of(const char *path, const char *args)
{
	return fb_test_exec_url(python, root, path, args);
}

/* The reference lease adapter on a database of its own. */
static const char *lease_url(const char *db)
{
	char args[600];
	snprintf(args, sizeof args, "%s/%s.db", scratch, db);
	return url_of("scripts/adapters/sqlite_lease.py", args);
}

static const char *store_url(const char *db)
{
	char args[600];
	snprintf(args, sizeof args, "%s/%s.db", scratch, db);
	return url_of("scripts/adapters/sqlite_store.py", args);
}

static const char *broken_url(const char *mistake, int attempt)
{
	char args[700];
	snprintf(args, sizeof args, "%s %s/broken-%s-%d.db", mistake, scratch, mistake, attempt);
	return url_of("scripts/adapters/sqlite_lease_broken.py", args);
}

static const char *hostile_url(const char *mode, int n)
{
	char args[700];
	snprintf(args, sizeof args, "%s %d %s/hostile-%s.db", mode, n, scratch, mode);
	return url_of("tests/adapters/hostile_lease.py", args);
}

/* ---- the validators --------------------------------------------------------- */

static bool parse(const char *line, fb_reply *r)
{
	static char dec[1024];
	char err[200];
	return fb_reply_parse(r, line, strlen(line), dec, sizeof dec, err, sizeof err);
}

static void test_acquire_replies_are_read_by_the_rules(void **state)
{
	(void)state;
	static const struct {
		const char *line, *why; /* why: NULL for a reply that is read */
	} cases[] = {
	        {"{\"ok\":true,\"fence\":9}", NULL},
	        {"{\"ok\":true,\"fence\":9,\"replaced\":8,\"ttl_ms\":100}", NULL},
	        {"{\"ok\":false}", NULL},
	        {"{\"ok\":false,\"owner\":3,\"fence\":9}", NULL},
	        {"{\"fence\":9}", "no \"ok\""},
	        {"{\"ok\":true}", "no \"fence\""},
	        {"{\"ok\":true,\"fence\":0}", "outside 1.."},
	        {"{\"ok\":true,\"fence\":140737488355328}", "outside 1.."},
	        {"{\"ok\":true,\"fence\":\"9\"}", "a string, not an integer"},
	        {"{\"ok\":true,\"fence\":9,\"replaced\":-1}", "\"replaced\" is -1"},
	        {"{\"ok\":true,\"fence\":9,\"ttl_ms\":0}", "\"ttl_ms\" is 0"},
	        {"{\"ok\":false,\"owner\":65536}", "\"owner\" is 65536"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		fb_reply r;
		fb_exec_acquired a;
		char err[240] = "";
		check(parse(cases[i].line, &r), "'%s' parses", cases[i].line);
		bool ok = fb_exec_acquire_of(&r, &a, err, sizeof err);
		if (!cases[i].why)
			check(ok, "'%s' must be read: %s", cases[i].line, err);
		else
			check(!ok && strstr(err, cases[i].why),
			      "'%s' must be refused saying '%s': %s", cases[i].line, cases[i].why,
			      ok ? "(read)" : err);
	}
	fb_reply r;
	fb_exec_acquired a;
	char err[200];
	check(parse("{\"ok\":true,\"fence\":9,\"replaced\":0}", &r) &&
	              fb_exec_acquire_of(&r, &a, err, sizeof err) && a.said_replaced &&
	              !a.replaced && a.fence == 9,
	      "\"replaced\": 0 is said (nothing before), not unsaid");
	check(parse("{\"ok\":false,\"owner\":3,\"fence\":9}", &r) &&
	              fb_exec_acquire_of(&r, &a, err, sizeof err) && !a.ok && a.owner == 3 &&
	              a.fence == 9,
	      "a refusal names the holder");
}

static void test_a_lease_hello_says_its_side(void **state)
{
	(void)state;
	fb_reply r;
	fb_exec_hello h;
	char err[300];
	check(parse("{\"side\":\"lease\",\"protocol\":1,\"ops\":[\"acquire\",\"release\"]}", &r) &&
	              fb_exec_lease_hello_of(&r, &h, err, sizeof err) &&
	              h.ops & (1u << FB_XOP_ACQUIRE) && h.ops & (1u << FB_XOP_RELEASE),
	      "a lease hello is read");
	check(!fb_exec_hello_of(&r, &h, err, sizeof err) && strstr(err, "not a store adapter"),
	      "a lease adapter given as a store is named: %s", err);
	check(parse("{\"protocol\":1,\"ops\":[\"read\"]}", &r) &&
	              !fb_exec_lease_hello_of(&r, &h, err, sizeof err) &&
	              strstr(err, "not a lease adapter"),
	      "a store adapter given as a lease is named: %s", err);
	check(parse("{\"side\":\"lease\",\"protocol\":2,\"ops\":[]}", &r) &&
	              !fb_exec_lease_hello_of(&r, &h, err, sizeof err) &&
	              strstr(err, "speaks lease protocol 2"),
	      "another lease protocol is refused: %s", err);
	bool held;
	uint16_t owner;
	uint64_t fence, left;
	check(parse("{\"held\":true,\"owner\":2,\"fence\":4,\"ttl_ms\":96}", &r) &&
	              fb_exec_peek_of(&r, &held, &owner, &fence, &left, err, sizeof err) && held &&
	              owner == 2 && fence == 4 && left == 96,
	      "a peek is read");
	check(parse("{\"held\":true,\"owner\":2}", &r) &&
	              !fb_exec_peek_of(&r, &held, &owner, &fence, &left, err, sizeof err),
	      "a held peek needs its fence");
}

/* ---- the engine against adapter processes ------------------------------------- */

typedef struct engine {
	void *eng;
	void *conn[4]; /* 0: fencebench's own; 1..3: owners */
} engine;

static fb_engine_config config(uint64_t ttl_ns, uint32_t threads)
{
	return (fb_engine_config){.keys = 4,
	                          .ttl_ns = ttl_ns,
	                          .fence = FB_FENCE_GLOBAL,
	                          .first_fence = 1,
	                          .clock = fb_clock_monotonic(),
	                          .threads = threads,
	                          .adapter_timeout_ns = 30000 * MS,
	                          /* a slow acquire (a busy machine, a sanitizer) stays
	                           * one: the adapter counts what it grants */
	                          .lease_undated = true};
}

static engine start(const char *url, fb_engine_config cfg)
{
	const fb_lease_ops *ops = &fb_exec_lease_ops;
	engine e = {0};
	char err[2600] = "";
	check(ops->open(&cfg, url, &e.eng, err, sizeof err) == FB_OK, "open %s: %s", url, err);
	check(ops->prepare(e.eng, true, err, sizeof err) == FB_OK, "prepare: %s", err);
	for (uint16_t w = 0; w <= cfg.threads; w++)
		check(ops->connect(e.eng, w, &e.conn[w], err, sizeof err) == FB_OK,
		      "connect %u: %s", w, err);
	return e;
}

static void stop(engine *e)
{
	for (int w = 0; w < 4; w++)
		if (e->conn[w])
			fb_exec_lease_ops.disconnect(e->conn[w]);
	fb_exec_lease_ops.close(e->eng);
}

/* A minute's lease: nothing in the test outlives it. */
static void test_the_reference_keeps_its_promises_across_processes(void **state)
{
	(void)state;
	const fb_lease_ops *L = &fb_exec_lease_ops;
	engine e = start(lease_url("promises"), config(60000 * MS, 3));
	char v[64];
	L->version(e.eng, v, sizeof v);
	check(strstr(v, "SQLite"), "its version: %s", v);
	fb_lease a, b, held;
	check_eq(L->acquire(e.conn[1], 0, &a, NULL), FB_ACQUIRED, "owner 1's acquire of key 0");
	check(a.fence >= 1 && a.owner == 1 && a.replaced == 0,
	      "fence %llu, owner %u, replaced %llu", (unsigned long long)a.fence, a.owner,
	      (unsigned long long)a.replaced);
	check_eq(L->acquire(e.conn[2], 0, &held, NULL), FB_HELD, "owner 2 finds it held");
	check(held.owner == 1 && held.fence == a.fence, "held by owner 1 with fence %llu",
	      (unsigned long long)a.fence);
	fb_lease as2 = a;
	as2.owner = 2;
	check_eq(L->release(e.conn[2], 0, &as2, NULL), FB_IO_REFUSED, "another owner's release");
	check_eq(L->is_held(e.conn[2], 0, &as2), FB_IO_REFUSED, "another owner's is_held");
	check_eq(L->renew(e.conn[2], 0, &as2, NULL), FB_IO_REFUSED, "another owner's renew");
	check_eq(L->is_held(e.conn[1], 0, &a), FB_IO_OK, "still owner 1's");
	fb_lease renewed;
	check_eq(L->renew(e.conn[1], 0, &a, &renewed), FB_IO_OK, "owner 1's renew");
	check(renewed.fence == a.fence && renewed.expires_at >= a.expires_at, "renewed in place");
	check_eq(L->peek(e.conn[0], 0, &held), FB_IO_OK, "peek");
	check(held.owner == 1 && held.fence == a.fence && held.expires_at, "peek names owner 1");
	check_eq(L->release(e.conn[1], 0, &a, NULL), FB_IO_OK, "owner 1's release");
	check_eq(L->is_held(e.conn[1], 0, &a), FB_IO_REFUSED, "released");
	check_eq(L->acquire(e.conn[2], 0, &b, NULL), FB_ACQUIRED, "owner 2's acquire");
	check(b.fence > a.fence && b.replaced == a.fence,
	      "a higher fence (%llu over %llu), replacing the released one's",
	      (unsigned long long)b.fence, (unsigned long long)a.fence);
	check_eq(L->acquire(e.conn[3], 1, &a, NULL), FB_ACQUIRED, "another key is free");
	check_eq(L->release(e.conn[1], 9, &a, NULL), FB_IO_ERROR, "a key out of range is an error");
	check(strstr(L->error(e.conn[1]), "key out of range"), "%s", L->error(e.conn[1]));
	char why[400];
	L->unjudged(e.eng, why, sizeof why);
	check(!strstr(why, "replaced"), "the reference says what it replaced: %s", why);
	stop(&e);
}

/* An acquire answered later than fencebench can date is given back and
 * tried again: the lease the caller gets is the second, and the report
 * says so. The adapter is slow by 50 ms, never faster: no timing luck. */
static void test_an_acquire_too_late_to_date_is_given_back(void **state)
{
	(void)state;
	const fb_lease_ops *L = &fb_exec_lease_ops;
	fb_engine_config cfg = config(60000 * MS, 1);
	cfg.lease_undated = false; /* dated as a run dates them */
	engine e = start(hostile_url("slow", 1), cfg);
	fb_lease a;
	/* a busy machine can make the tries after it slow too: four in a row
	 * answer held, and the next call tries again */
	fb_acquire got = FB_HELD;
	for (int i = 0; i < 5 && got == FB_HELD; i++)
		got = L->acquire(e.conn[1], 0, &a, NULL);
	check_eq(got, FB_ACQUIRED, "the acquire");
	check(a.replaced && a.fence > a.replaced,
	      "the lease replaced a withdrawn one (fence %llu over %llu)",
	      (unsigned long long)a.fence, (unsigned long long)a.replaced);
	char why[400];
	L->unjudged(e.eng, why, sizeof why);
	check(strstr(why, " answered more than 15 ms after the send, too late to date"), "%s", why);
	stop(&e);
}

/* Each way a lease adapter breaks the protocol ends its call with an error
 * naming the adapter and the call. */
static void test_each_hostile_reply_is_an_error_naming_the_call(void **state)
{
	(void)state;
	static const struct {
		const char *mode, *says;
	} cases[] = {
	        {"not-json", "not one JSON object"},     {"no-fence", "no \"fence\""},
	        {"fence-type", "\"fence\" is a string"}, {"short-ttl", "below the 100 asked for"},
	        {"long", "longer than 65536 bytes"},     {"error", "lock server unreachable"},
	        {"exit", "exited with status 3"},        {"hang", "no reply within 3 s"},
	};
	const fb_lease_ops *L = &fb_exec_lease_ops;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		fb_engine_config cfg = config(100 * MS, 1);
		if (!strcmp(cases[i].mode, "hang")) /* its deadline, exactly (the hello's too) */
			cfg.adapter_timeout_ns = 3000 * MS;
		engine e = start(hostile_url(cases[i].mode, 1), cfg);
		fb_lease l;
		check_eq(L->acquire(e.conn[1], 0, &l, NULL), FB_ACQ_ERROR, cases[i].mode);
		const char *err = L->error(e.conn[1]);
		check(strstr(err, "adapter 'hostile'") && strstr(err, "acquire key 0 owner 1") &&
		              strstr(err, cases[i].says),
		      "%s: the error names the adapter, the call and '%s': %s", cases[i].mode,
		      cases[i].says, err);
		stop(&e);
	}
	/* a fence below one this process was given for the key */
	engine e = start(hostile_url("backwards", 3), config(60000 * MS, 1));
	fb_lease l;
	for (int i = 0; i < 2; i++) {
		check_eq(L->acquire(e.conn[1], 0, &l, NULL), FB_ACQUIRED, "an acquire");
		check_eq(L->release(e.conn[1], 0, &l, NULL), FB_IO_OK, "its release");
	}
	check_eq(L->acquire(e.conn[1], 0, &l, NULL), FB_ACQ_ERROR, "fence 1 after fence 2");
	check(strstr(L->error(e.conn[1]), "its fences went backwards"), "%s", L->error(e.conn[1]));
	stop(&e);
}

static void test_a_bad_hello_or_setting_fails_at_open(void **state)
{
	(void)state;
	static const struct {
		const char *url, *says;
		fb_err rc;
		uint64_t ttl_ns;
	} cases[] = {
	        {NULL, "not a lease adapter", FB_ESYS, 100 * MS}, /* a store's hello */
	        {NULL, "speaks lease protocol 2", FB_ESYS, 100 * MS},
	        {NULL, "does not implement release", FB_EINVAL, 100 * MS},
	        {"exec:", "needs a command", FB_EINVAL, 100 * MS},
	        {NULL, "whole milliseconds", FB_EINVAL, 100 * MS + 500000},
	};
	const char *urls[] = {hostile_url("hello-store", 1), hostile_url("hello-protocol", 1),
	                      hostile_url("no-release", 1), NULL, lease_url("open")};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		fb_engine_config cfg = config(cases[i].ttl_ns, 1);
		void *eng = NULL;
		char err[2600] = "";
		const char *url = cases[i].url ? cases[i].url : urls[i];
		fb_err rc = fb_exec_lease_ops.open(&cfg, url, &eng, err, sizeof err);
		check(rc == cases[i].rc && !eng && strstr(err, cases[i].says),
		      "%s: rc %d (expected %d), '%s' in: %s", url, rc, cases[i].rc, cases[i].says,
		      err);
	}
	fb_engine_config cfg = config(100 * MS, 1);
	void *eng = NULL;
	char err[2600] = "";
	check(fb_exec_lease_ops.open(&cfg, store_url("as-lease"), &eng, err, sizeof err) ==
	                      FB_ESYS &&
	              strstr(err, "it is not a lease adapter"),
	      "the store adapter as a lease adapter: %s", err);
}

/* ---- the binary ------------------------------------------------------------------ */

/* Pauses past a 100 ms TTL, aimed at holders; a minute for adapters to start
 * on a busy machine. */
#define RUN_ARGS                                                                                   \
	"-t", "8", "-d", "3s", "--ttl", "100ms", "--pause", "150ms-200ms", "--adapter-timeout",    \
	        "60s"

static void test_the_reference_pair_is_safe_with_the_control_corrupted(void **state)
{
	(void)state;
	fb_test_proc p;
	const char *args[] = {RUN_ARGS, "--lease", lease_url("pair-lease"), NULL};
	json_object *doc = fb_test_run_store(&p, scratch, store_url("pair-store"), args, 0);
	check(strstr(p.out, "sqlite: SAFE"), "the adapter's store is SAFE:\n%s", p.out);
	check(strstr(p.out, "unfenced: CORRUPTED"), "the control was corrupted:\n%s", p.out);
	check(strstr(p.out, "lease: kept its promises"), "the lease kept its promises:\n%s", p.out);
	check(strstr(p.out, "lease adapter SQLite"), "the round trips name the lease:\n%s", p.out);
	check(!strstr(p.out, "not judged: whether each fence"),
	      "the reference says what each acquire replaced:\n%s", p.out);
	check_eq(fb_test_num(doc, "modes.fenced.stale_accepted"), 0, "stale writes accepted");
	check(fb_test_num(doc, "modes.unfenced.stale_accepted") > 0, "unfenced stale writes");
	json_object_put(doc);
	fb_test_release(&p);
}

/* Each mistake, caught by name: exit 1 and the witness's words. A mistake
 * that needs a fault to land (a takeover of an expired lease, a late
 * release) gets three runs to show. */
static void broken(const char *mistake, const char *words)
{
	char out[16384] = "";
	for (int attempt = 0; attempt < 3; attempt++) {
		fb_test_proc p;
		const char *args[] = {"-q",      "-o",
		                      scratch,   RUN_ARGS,
		                      "-k",      "4",
		                      "--lease", broken_url(mistake, attempt),
		                      "--store", store_url(mistake),
		                      NULL};
		int code = fb_test_run(&p, args);
		bool caught = code == 1 && strstr(p.out, "lease: VIOLATED !!!") &&
		              strstr(p.out, words) && strstr(p.out, "FAIL !!!");
		snprintf(out, sizeof out, "exit %d\n%s\n%s", code, p.out, p.err);
		fb_test_release(&p);
		if (caught)
			return;
		check(code == 0 || code == 1, "%s: a run ends with a verdict: %s", mistake, out);
	}
	check(false, "%s: '%s' in three runs:\n%s", mistake, words, out);
}

static void test_each_broken_lease_adapter_is_caught_by_name(void **state)
{
	(void)state;
	broken("no-expiry", "acquired while the previous lease was live");
	broken("same-fence", "handed out twice");
	broken("any-owner", "two holders at once");
}

static void test_bad_lease_settings_are_usage_errors(void **state)
{
	(void)state;
	fb_test_proc p;
	const char *ttl[] = {"-q", "-d", "1s", "--ttl", "10500us", "--lease", lease_url("usage"),
	                     NULL};
	check_eq(fb_test_run(&p, ttl), 2, "a TTL of no whole milliseconds");
	check(strstr(p.err, "--lease") && strstr(p.err, "whole milliseconds"), "%s", p.err);
	fb_test_release(&p);
	const char *two[] = {"adapter-test", "--lease", lease_url("usage"), "exec:other", NULL};
	check_eq(fb_test_run(&p, two), 2, "adapter-test --lease and another adapter");
	check(strstr(p.err, "one adapter at a time"), "%s", p.err);
	fb_test_release(&p);
}

/* ---- adapter-test --lease ------------------------------------------------------ */

static void test_adapter_test_passes_the_reference(void **state)
{
	(void)state;
	fb_test_proc p;
	const char *args[] = {"adapter-test",      "-r",  "20",
	                      "--adapter-timeout", "60s", "--lease",
	                      lease_url("at-ref"), NULL};
	int code = fb_test_run(&p, args);
	check(code == 0 && strstr(p.out, "adapter-test: PASS") && !strstr(p.out, "FAIL"),
	      "exit %d:\n%s\n%s", code, p.out, p.err);
	static const char *const names[] = {"shape",  "live",  "owner", "release",
	                                    "expiry", "renew", "race"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char line[32];
		snprintf(line, sizeof line, "  %-8s ", names[i]);
		check(strstr(p.out, line), "a line for %s:\n%s", names[i], p.out);
	}
	fb_test_release(&p);
}

/* Each broken adapter FAILs the contract of its defect, and the transcript
 * shows the exchange. */
static void test_adapter_test_names_each_defect(void **state)
{
	(void)state;
	static const struct {
		const char *mistake, *fails, *says;
	} cases[] = {
	        {"no-expiry", "FAIL  live", "two holders at once"},
	        {"same-fence", "FAIL  expiry", "a fence handed out twice"},
	        {"any-owner", "FAIL  owner", "a release without an owner check"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		fb_test_proc p;
		const char *args[] = {"adapter-test",
		                      "-r",
		                      "10",
		                      "--adapter-timeout",
		                      "60s",
		                      "--lease",
		                      broken_url(cases[i].mistake, 9),
		                      NULL};
		int code = fb_test_run(&p, args);
		check(code == 1 && strstr(p.out, cases[i].fails) && strstr(p.out, cases[i].says) &&
		              strstr(p.out, "      > {\"op\":\"acquire\"") &&
		              strstr(p.out, "adapter-test: FAIL !!!"),
		      "%s: exit %d, '%s' and '%s':\n%s\n%s", cases[i].mistake, code, cases[i].fails,
		      cases[i].says, p.out, p.err);
		fb_test_release(&p);
	}
}

int main(void)
{
	if (!fb_test_adapter_setup(python, sizeof python, root, sizeof root,
	                           11, /* the table below */
	                           "lease adapter tests"))
		return 0;
	scratch = fb_test_tmpdir();
	const struct CMUnitTest tests_[] = {
	        cmocka_unit_test(test_acquire_replies_are_read_by_the_rules),
	        cmocka_unit_test(test_a_lease_hello_says_its_side),
	        cmocka_unit_test(test_the_reference_keeps_its_promises_across_processes),
	        cmocka_unit_test(test_an_acquire_too_late_to_date_is_given_back),
	        cmocka_unit_test(test_each_hostile_reply_is_an_error_naming_the_call),
	        cmocka_unit_test(test_a_bad_hello_or_setting_fails_at_open),
	        cmocka_unit_test(test_the_reference_pair_is_safe_with_the_control_corrupted),
	        cmocka_unit_test(test_each_broken_lease_adapter_is_caught_by_name),
	        cmocka_unit_test(test_bad_lease_settings_are_usage_errors),
	        cmocka_unit_test(test_adapter_test_passes_the_reference),
	        cmocka_unit_test(test_adapter_test_names_each_defect),
	};
	int failed = cmocka_run_group_tests(tests_, NULL, NULL);
	fb_test_rmtree(scratch);
	free(scratch);
	return failed;
}
