/*
 * The ZooKeeper engine against a throwaway standalone server (tickTime
 * 10 ms): the lock recipe and its czxid fences, the session as the lease,
 * and the point of the single-threaded client: a session whose worker
 * stops talking expires, and its lock goes to the next client. Then the
 * fencebench binary end to end, with a Redis store.
 */
#define _GNU_SOURCE
#include <string.h>
#include <time.h>

#include "backend.h"
#include "fbproc.h"
#include "fbtest.h"
#include "servers.h"
#include "zk.h"

static const fb_lease_ops *const L = &fb_zk_lease_ops;
static fb_server zk, redis;

#define TTL (300 * MS)

static fb_engine_config base_cfg(void)
{
	return (fb_engine_config){.keys = 4,
	                          .ttl_ns = TTL,
	                          .fence = FB_FENCE_GLOBAL,
	                          .first_fence = 1,
	                          .clock = fb_clock_monotonic(),
	                          .modes = 7,
	                          .threads = 2,
	                          .timeout_ns = 5000 * MS};
}

static void *engine(const fb_engine_config *cfg, bool fresh)
{
	void *e = NULL;
	char err[640] = "";
	check_eq(L->open(cfg, zk.url, &e, err, sizeof err), FB_OK, err);
	check_eq(L->prepare(e, fresh, err, sizeof err), FB_OK, err);
	return e;
}

static void *conn(void *e, uint16_t worker)
{
	void *c = NULL;
	char err[640] = "";
	check_eq(L->connect(e, worker, &c, err, sizeof err), FB_OK, err);
	return c;
}

static fb_acquire acq(void *c, uint32_t key, fb_lease *l)
{
	fb_lease_stats st = {0};
	return L->acquire(c, key, l, &st);
}

static uint64_t wall_ns(void)
{
	return fb_clock_now(fb_clock_realtime());
}

static void test_bad_urls_and_configurations_are_einval_naming_the_url(void **state)
{
	(void)state;
	static const char *bad[] = {"zk://",
	                            "zk://127.0.0.1:0",
	                            "zk://127.0.0.1:2181,",
	                            "zk://127.0.0.1:2181?fence=incr",
	                            "zk://bob:s3cret@127.0.0.1:2181",
	                            "zk://127.0.0.1:2181/a/",
	                            "zk://127.0.0.1:2181/a//b",
	                            "zk://127.0.0.1:2181/a%20b"};
	fb_engine_config cfg = base_cfg();
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		void *e = NULL;
		char err[640] = "", red[512];
		check_eq(L->open(&cfg, bad[i], &e, err, sizeof err), FB_EINVAL, bad[i]);
		check(!e && !strstr(err, "s3cret") && !strchr(err, '\n'), "%s: %s", bad[i], err);
		fb_url_redact(bad[i], red, sizeof red);
		check(strncmp(err, red, strlen(red)) == 0, "%s: the message names the URL: %s",
		      bad[i], err);
	}
	struct {
		fb_engine_config cfg;
		const char *says;
	} cases[] = {{base_cfg(), "whole milliseconds"},
	             {base_cfg(), "per-key"},
	             {base_cfg(), "--first-fence"}};
	cases[0].cfg.ttl_ns = TTL + 1;
	cases[1].cfg.fence = FB_FENCE_PER_KEY;
	cases[2].cfg.first_fence = 33;
	for (size_t i = 0; i < 3; i++) {
		void *e = NULL;
		char err[640] = "";
		check_eq(L->open(&cases[i].cfg, zk.url, &e, err, sizeof err), FB_EINVAL,
		         cases[i].says);
		check(strstr(err, cases[i].says), "the reason says '%s': %s", cases[i].says, err);
	}
}

static void test_unreachable_server_is_esys_naming_it(void **state)
{
	(void)state;
	fb_engine_config cfg = base_cfg();
	void *e = NULL;
	char err[640] = "";
	check_eq(L->open(&cfg, "zk://127.0.0.1:1", &e, err, sizeof err), FB_ESYS,
	         "nothing listens on port 1");
	check(strncmp(err, "zk://127.0.0.1:1: ", 18) == 0 && strstr(err, "no session"),
	      "the message names the server and what failed: %s", err);
}

/* The server grants 20 ms..60 s: a TTL outside is refused, naming both. */
static void test_a_ttl_the_server_will_not_grant_is_einval(void **state)
{
	(void)state;
	fb_engine_config cfg = base_cfg();
	cfg.ttl_ns = 10 * MS;
	void *e = NULL;
	char err[640] = "";
	check_eq(L->open(&cfg, zk.url, &e, err, sizeof err), FB_EINVAL, "10 ms < 20 ms");
	check(strstr(err, "--ttl 10 ms") && strstr(err, "negotiated a session timeout of 20 ms"),
	      "the message gives both timeouts: %s", err);
}

static void test_version_names_the_server_and_the_negotiated_timeout(void **state)
{
	(void)state;
	fb_engine_config cfg = base_cfg();
	void *e = engine(&cfg, true);
	char v[96];
	L->version(e, v, sizeof v);
	check(strncmp(v, "3.", 2) == 0 && strstr(v, "session timeout 300 ms"), "version: %s", v);
	L->close(e);
}

/* The recipe: the lowest request holds; a second client is refused while
 * the first holds, and takes the key after the release with a higher
 * czxid. Fences are zxids: they grow across keys too. */
static void test_lowest_request_holds_and_fences_are_growing_zxids(void **state)
{
	(void)state;
	fb_engine_config cfg = base_cfg();
	void *e = engine(&cfg, true);
	void *a = conn(e, 1), *b = conn(e, 2);
	fb_lease la, lb, lc, p;
	uint64_t t0 = wall_ns();
	check_eq(acq(a, 0, &la), FB_ACQUIRED, "A takes key 0");
	check(la.fence > 0 && la.owner == 1, "fence %llu, owner %u", (unsigned long long)la.fence,
	      la.owner);
	check(la.service_at + 1000 * MS > t0 && la.service_at < wall_ns() + 1000 * MS,
	      "service_at is the node's ctime on the server's wall clock");
	check_eq(acq(b, 0, &lb), FB_HELD, "B is refused while A holds");
	check_eq(lb.owner, 1, "and told who holds it");
	check_eq(L->peek(b, 0, &p), FB_IO_OK, "peek");
	check(p.owner == 1 && p.fence == la.fence, "peek sees A's lease (fence %llu)",
	      (unsigned long long)p.fence);
	check_eq(L->is_held(a, 0, &la), FB_IO_OK, "A holds");
	check_eq(L->release(a, 0, &la), FB_IO_OK, "A releases");
	check_eq(L->release(a, 0, &la), FB_IO_REFUSED, "a second release is refused");
	check_eq(acq(b, 0, &lb), FB_ACQUIRED, "B takes it after the release");
	check(lb.fence > la.fence, "B's czxid %llu > A's %llu", (unsigned long long)lb.fence,
	      (unsigned long long)la.fence);
	check_eq(L->is_held(a, 0, &la), FB_IO_REFUSED, "A no longer holds");
	check_eq(acq(a, 1, &lc), FB_ACQUIRED, "A takes key 1");
	check(lc.fence > lb.fence, "one counter for every key: %llu > %llu",
	      (unsigned long long)lc.fence, (unsigned long long)lb.fence);
	check_eq(L->release(b, 0, &lb), FB_IO_OK, "B releases");
	check_eq(L->release(a, 1, &lc), FB_IO_OK, "A releases key 1");
	L->disconnect(a);
	L->disconnect(b);
	L->close(e);
}

/*
 * The pause: A holds, then its thread does nothing for twice the session
 * timeout, as a stopped process would. Its session sends no heartbeat
 * meanwhile (the single-threaded client runs only inside A's calls), the
 * server expires it and deletes A's request, and B gets the lock. A's
 * release and is_held are refused, and A's next acquire gets a new
 * session.
 */
static void test_a_silent_session_expires_and_its_lock_goes_to_the_next_client(void **state)
{
	(void)state;
	fb_engine_config cfg = base_cfg();
	void *e = engine(&cfg, true);
	void *a = conn(e, 1), *b = conn(e, 2);
	fb_lease la, lb;
	check_eq(acq(a, 0, &la), FB_ACQUIRED, "A takes key 0");
	check_eq(acq(b, 0, &lb), FB_HELD, "B is refused");
	fb_sleep_ns(2 * TTL); /* A's pause; B's session goes quiet too */
	fb_acquire got = FB_HELD;
	for (int i = 0; i < 100 && got == FB_HELD; i++) {
		got = acq(b, 0, &lb);
		if (got == FB_HELD)
			fb_sleep_ns(10 * MS);
	}
	check_eq(got, FB_ACQUIRED, "B takes the key once A's session expired");
	check(lb.fence > la.fence, "with a higher fence");
	check_eq(L->is_held(a, 0, &la), FB_IO_REFUSED, "A, waking, does not hold it");
	check_eq(L->release(a, 0, &la), FB_IO_REFUSED, "and cannot release B's lock");
	check_eq(L->is_held(b, 0, &lb), FB_IO_OK, "B holds it");
	fb_lease la2;
	check_eq(acq(a, 1, &la2), FB_ACQUIRED, "A works again on a new session");
	check_eq(L->release(a, 1, &la2), FB_IO_OK, "A releases key 1");
	check_eq(L->release(b, 0, &lb), FB_IO_OK, "B releases key 0");
	L->disconnect(a);
	L->disconnect(b);
	L->close(e);
}

/* Renewing is talking: a holder that renews every third of the timeout
 * keeps its lock past several timeouts. */
static void test_renew_keeps_the_session_and_the_lock(void **state)
{
	(void)state;
	fb_engine_config cfg = base_cfg();
	void *e = engine(&cfg, true);
	void *a = conn(e, 1), *b = conn(e, 2);
	fb_lease la, lb, r;
	check_eq(acq(a, 0, &la), FB_ACQUIRED, "A takes key 0");
	for (int i = 0; i < 6; i++) {
		fb_sleep_ns(TTL / 3);
		uint64_t before = fb_clock_now(fb_clock_monotonic());
		check_eq(L->renew(a, 0, &la, &r), FB_IO_OK, "A renews");
		check(r.fence == la.fence && r.expires_at >= before + TTL, "a TTL from the renewal");
	}
	check_eq(acq(b, 0, &lb), FB_HELD, "after 2 timeouts B is still refused");
	check_eq(L->release(a, 0, &la), FB_IO_OK, "A releases");
	L->disconnect(a);
	L->disconnect(b);
	L->close(e);
}

/* A fresh prepare forgets every lock request (a crashed run's); a shared
 * run's later process (not fresh) keeps them. */
static void test_fresh_prepare_forgets_the_requests_and_a_shared_one_does_not(void **state)
{
	(void)state;
	fb_engine_config cfg = base_cfg();
	void *e = engine(&cfg, true);
	void *a = conn(e, 1);
	fb_lease la, lb;
	check_eq(acq(a, 2, &la), FB_ACQUIRED, "A takes key 2");
	void *e2 = engine(&cfg, false);
	void *b = conn(e2, 2);
	check_eq(acq(b, 2, &lb), FB_HELD, "a shared prepare left A's lock alone");
	void *e3 = engine(&cfg, true);
	check_eq(acq(b, 2, &lb), FB_ACQUIRED, "a fresh prepare deleted it");
	check_eq(L->is_held(a, 2, &la), FB_IO_REFUSED, "A's node is gone");
	L->disconnect(a);
	L->disconnect(b);
	L->close(e3);
	L->close(e2);
	L->close(e);
}

/* ---- end to end ----------------------------------------------------------- */

/* The acceptance run: pauses of 1.5-3 session timeouts cost their
 * holders the lock (the vacuity table's takeovers), unfenced accepts stale
 * writes, fenced none, the checker agrees, the witness sees no broken
 * promise. */
static void test_pauses_past_the_session_timeout_corrupt_unfenced_only(void **state)
{
	(void)state;
	const char *args[] = {"-t",      "16",      "-d",           "4s",     "-k",
	                      "8",       "--ttl",   "200ms",        "--pause-rate",
	                      "20",      "--lease", zk.url,         "--store",
	                      redis.url, "--mode",  "fenced,write-fenced,unfenced", NULL};
	fb_test_proc p;
	json_object *doc = fb_test_run_doc(&p, args, 0);
	check(fb_test_num(doc, "modes.unfenced.stale_accepted") > 0, "unfenced corrupted:\n%s", p.out);
	check_eq(fb_test_num(doc, "modes.fenced.stale_accepted"), 0, "fenced stale accepted");
	check_eq(fb_test_num(doc, "modes.fenced.lost_updates"), 0, "fenced lost updates");
	check_eq(fb_test_num(doc, "modes.write_fenced.stale_accepted"), 0, "write-fenced stale accepted");
	const char *agree[] = {"modes.fenced.checker_agrees", "modes.unfenced.checker_agrees"};
	for (int i = 0; i < 2; i++) {
		json_object *a = fb_test_json(doc, agree[i]);
		check(a && json_object_get_boolean(a), "%s:\n%s", agree[i], p.out);
	}
	check(fb_test_num(doc, "run.faults.pause.over_ttl") > 0, "pauses past the TTL:\n%s", p.out);
	check(fb_test_num(doc, "run.faults.pause.takeovers") > 0,
	      "and they cost holders their locks (the session expired):\n%s", p.out);
	check_eq(fb_test_num(doc, "run.lease_violations.overlapping_leases") +
	                 fb_test_num(doc, "run.lease_violations.out_of_order_fences") +
	                 fb_test_num(doc, "run.lease_violations.duplicate_fences"),
	         0, "ZooKeeper kept its promises");
	check(strstr(p.out, "lease ZooKeeper 3.") && strstr(p.out, "session timeout 200 ms"),
	      "the report names the service and its negotiated timeout:\n%s", p.out);
	json_object_put(doc);
	fb_test_release(&p);
}

/* Two processes share the service (--client-id) and the store; the global
 * check afterwards finds fenced safe. */
static void test_two_processes_share_the_ensemble(void **state)
{
	(void)state;
	fb_test_proc prep, a, b, chk;
	const char *prep_args[] = {"--lease", zk.url, "--store", redis.url, "--ttl", "200ms", "-k", "4",
	                           "--prepare-only", NULL};
	check_eq(fb_test_run(&prep, prep_args), 0, "--prepare-only");
	const char *a_args[] = {"-t",      "4",     "-d",           "2s",        "-k",     "4",
	                        "--ttl",   "200ms", "--pause-rate", "10",        "--lease", zk.url,
	                        "--store", redis.url, "-q",         "--client-id", "1",    "-o",
	                        prep.dir,  NULL};
	const char *b_args[] = {"-t",      "4",     "-d",           "2s",        "-k",     "4",
	                        "--ttl",   "200ms", "--pause-rate", "10",        "--lease", zk.url,
	                        "--store", redis.url, "-q",         "--client-id", "2",    "-o",
	                        prep.dir,  NULL};
	fb_test_start(&a, a_args);
	fb_test_start(&b, b_args);
	int ca = fb_test_finish(&a), cb = fb_test_finish(&b);
	check(ca == 0 && cb == 0, "both exit 0 (%d, %d):\n%s\n%s\n%s\n%s", ca, cb, a.out, a.err,
	      b.out, b.err);
	const char *chk_args[] = {"check", "--store", redis.url, NULL};
	int cc = fb_test_run(&chk, chk_args);
	check(cc == 0 && strstr(chk.out, "fenced: SAFE"), "the global check (exit %d):\n%s\n%s",
	      cc, chk.out, chk.err);
	fb_test_release(&a);
	fb_test_release(&b);
	fb_test_release(&chk);
	fb_test_release(&prep);
}

static void test_unreachable_ensemble_is_exit_3(void **state)
{
	(void)state;
	fb_test_proc p;
	const char *args[] = {"-t", "2", "-d", "1s", "-q", "--ttl", "200ms", "--lease",
	                      "zk://127.0.0.1:1,127.0.0.1:2", NULL};
	check_eq(fb_test_run(&p, args), 3, "exit code");
	check(strstr(p.err, "--lease") && strstr(p.err, "127.0.0.1:1"), "names it:\n%s", p.err);
	fb_test_release(&p);
}

int main(void)
{
	int r = fb_server_start(FB_SERVER_ZOOKEEPER, &zk);
	if (r <= 0) {
		if (r == 0) {
			fb_server_skipped("ZooKeeper engine tests", &zk);
			return 0;
		}
		fprintf(stderr, "cannot start zookeeper: %s\n", zk.why);
		return 1;
	}
	r = fb_server_start(FB_SERVER_REDIS, &redis);
	if (r <= 0) {
		fb_server_stop(&zk);
		if (r == 0) {
			fb_server_skipped("ZooKeeper engine tests (the store)", &redis);
			return 0;
		}
		fprintf(stderr, "cannot start redis-server: %s\n", redis.why);
		return 1;
	}
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_bad_urls_and_configurations_are_einval_naming_the_url),
	        cmocka_unit_test(test_unreachable_server_is_esys_naming_it),
	        cmocka_unit_test(test_a_ttl_the_server_will_not_grant_is_einval),
	        cmocka_unit_test(test_version_names_the_server_and_the_negotiated_timeout),
	        cmocka_unit_test(test_lowest_request_holds_and_fences_are_growing_zxids),
	        cmocka_unit_test(test_a_silent_session_expires_and_its_lock_goes_to_the_next_client),
	        cmocka_unit_test(test_renew_keeps_the_session_and_the_lock),
	        cmocka_unit_test(test_fresh_prepare_forgets_the_requests_and_a_shared_one_does_not),
	        cmocka_unit_test(test_pauses_past_the_session_timeout_corrupt_unfenced_only),
	        cmocka_unit_test(test_two_processes_share_the_ensemble),
	        cmocka_unit_test(test_unreachable_ensemble_is_exit_3),
	};
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	fb_server_stop(&redis);
	fb_server_stop(&zk);
	return failed;
}
