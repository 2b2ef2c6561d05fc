/*
 * The etcd engine against a throwaway single-member etcd (heartbeat 10 ms,
 * election timeout 50 ms: leases from 1 s), through its JSON gateway: the
 * create_revision == 0 transaction and its revision fences, the fence a
 * lease replaced as etcd reports it, leases that expire, the server's
 * minimum TTL refused; then the fencebench binary end to end, with a
 * Redis store.
 */
#define _GNU_SOURCE
#include <string.h>

#include "backend.h"
#include "etcd.h"
#include "fbengine.h"
#include "fbproc.h"
#include "fbtest.h"
#include "servers.h"

static const fb_lease_ops *const L = &fb_etcd_lease_ops;
static fb_server etcd, redis;

#define TTL (UINT64_C(1000) * MS)

static fb_engine_config base_cfg(void)
{
	return fb_test_lease_cfg(TTL);
}

static void *engine(const fb_engine_config *cfg, bool fresh)
{
	return fb_test_lease_open(L, cfg, etcd.url, fresh);
}

static void *conn(void *e, uint16_t worker)
{
	return fb_test_lease_conn(L, e, worker);
}

static fb_acquire acq(void *c, uint32_t key, fb_lease *l)
{
	return fb_test_acquire(L, c, key, l);
}

static void test_bad_urls_and_configurations_are_einval_naming_the_url(void **state)
{
	(void)state;
	static const char *bad[] = {"etcd://",
	                            "etcd://127.0.0.1:99999",
	                            "etcd://bob:s3cret@127.0.0.1:2379",
	                            "etcd://127.0.0.1:2379?prefix=x",
	                            "etcd://127.0.0.1:2379/a/b",
	                            "zk://127.0.0.1:2379"};
	fb_engine_config cfg = base_cfg();
	fb_test_bad_lease_urls(L, &cfg, bad, sizeof bad / sizeof bad[0]);
	struct {
		uint64_t ttl;
		fb_fence_source fence;
		uint64_t first;
		const char *says;
	} cases[] = {{500 * MS, FB_FENCE_GLOBAL, 1, "whole seconds"},
	             {1500 * MS, FB_FENCE_GLOBAL, 1, "whole seconds"},
	             {TTL, FB_FENCE_PER_KEY, 1, "per-key"},
	             {TTL, FB_FENCE_GLOBAL, 33, "--first-fence"}};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		fb_engine_config c = base_cfg();
		c.ttl_ns = cases[i].ttl;
		c.fence = cases[i].fence;
		c.first_fence = cases[i].first;
		fb_test_lease_refused(L, &c, etcd.url, cases[i].says);
	}
}

static void test_unreachable_member_is_esys_naming_it(void **state)
{
	(void)state;
	fb_engine_config cfg = base_cfg();
	void *e = NULL;
	char err[640] = "";
	check_eq(L->open(&cfg, "etcd://127.0.0.1:1", &e, err, sizeof err), FB_ESYS, "port 1");
	check(strncmp(err, "etcd://127.0.0.1:1: ", 20) == 0, "the message names it: %s", err);
}

/* A second member address that refuses connections is skipped for the
 * next one. */
static void test_a_dead_member_is_skipped_for_the_next(void **state)
{
	(void)state;
	fb_engine_config cfg = base_cfg();
	char url[600];
	snprintf(url, sizeof url, "etcd://127.0.0.1:1,127.0.0.1:%d", etcd.port);
	void *e = NULL;
	char err[640] = "";
	check_eq(L->open(&cfg, url, &e, err, sizeof err), FB_OK, err);
	char v[64];
	L->version(e, v, sizeof v);
	check(strncmp(v, "3.", 2) == 0, "the live member answered: %s", v);
	L->close(e);
}

/* The acquire: one holder at a time, revisions as fences, and what each
 * lease replaced as etcd's own record says. */
static void test_one_holder_revision_fences_and_the_fence_replaced(void **state)
{
	(void)state;
	fb_engine_config cfg = base_cfg();
	void *e = engine(&cfg, true);
	fb_test_lease_contract(L, e, true);
	L->close(e);
}

/* A holder that stops talking loses its lease a TTL (and the leader's
 * check) later; a renewing one keeps it. */
static void test_an_unrenewed_lease_expires_and_a_renewed_one_does_not(void **state)
{
	(void)state;
	fb_engine_config cfg = base_cfg();
	void *e = engine(&cfg, true);
	void *a = conn(e, 1), *b = conn(e, 2);
	fb_lease la, lb, lk, r;
	check_eq(acq(a, 0, &la), FB_ACQUIRED, "A takes key 0");
	check_eq(acq(a, 1, &lk), FB_ACQUIRED, "A takes key 1, which it will renew");
	uint64_t t0 = fb_clock_now(fb_clock_monotonic());
	fb_acquire got = FB_HELD;
	for (int i = 0; i < 200 && got == FB_HELD; i++) {
		check_eq(L->renew(a, 1, &lk, &r), FB_IO_OK, "A renews key 1");
		got = acq(b, 0, &lb);
		if (got == FB_HELD)
			fb_sleep_ns(20 * MS);
	}
	uint64_t took = fb_clock_now(fb_clock_monotonic()) - t0;
	check_eq(got, FB_ACQUIRED, "B takes key 0 once A's lease expired");
	check(took >= TTL - 50 * MS, "not before the TTL: %llu ms",
	      (unsigned long long)(took / MS));
	/* A's fence, or on a loaded machine a withdrawn try's (a transaction
	 * answered too late to date is revoked after it wrote the last
	 * holder's key): between A's fence and B's own */
	check(lb.replaced >= la.fence && lb.replaced < lb.fence,
	      "replacing A's fence %llu or a withdrawn try's after it: %llu (B's %llu)",
	      (unsigned long long)la.fence, (unsigned long long)lb.replaced,
	      (unsigned long long)lb.fence);
	check_eq(L->release(a, 0, &la, NULL), FB_IO_REFUSED, "A's lease is gone");
	fb_lease lk2;
	check_eq(acq(b, 1, &lk2), FB_HELD, "key 1, renewed all along, is still A's");
	check_eq(L->release(a, 1, &lk, NULL), FB_IO_OK, "A releases key 1");
	check_eq(L->release(b, 0, &lb, NULL), FB_IO_OK, "B releases key 0");
	L->disconnect(a);
	L->disconnect(b);
	L->close(e);
}

static void test_fresh_prepare_forgets_the_entries_and_a_shared_one_does_not(void **state)
{
	(void)state;
	fb_engine_config cfg = base_cfg();
	void *e = engine(&cfg, true);
	void *a = conn(e, 1), *b = conn(e, 2);
	fb_lease la, lb;
	check_eq(acq(a, 3, &la), FB_ACQUIRED, "A takes key 3");
	void *e2 = engine(&cfg, false);
	check_eq(acq(b, 3, &lb), FB_HELD, "a shared prepare left it");
	void *e3 = engine(&cfg, true);
	check_eq(acq(b, 3, &lb), FB_ACQUIRED, "a fresh one deleted it");
	check_eq(L->release(b, 3, &lb, NULL), FB_IO_OK, "B releases");
	L->disconnect(a);
	L->disconnect(b);
	L->close(e3);
	L->close(e2);
	L->close(e);
}

/* etcd with its default timing grants no lease under 2 s: --ttl 1s is
 * refused (exit 2) with the reason and what would work. */
static void test_a_ttl_below_the_servers_minimum_is_exit_2_saying_the_minimum(void **state)
{
	(void)state;
	fb_server slow;
	int r = fb_server_start(FB_SERVER_ETCD_DEFAULTS, &slow);
	check_eq(r, 1, slow.why);
	fb_test_proc p;
	const char *args[] = {"-t",    "2",  "-d",      "1s",     "-q",
	                      "--ttl", "1s", "--lease", slow.url, NULL};
	check_eq(fb_test_run(&p, args), 2, "exit code");
	check(strstr(p.err, "--lease") && strstr(p.err, "no lease shorter than 2 s") &&
	              strstr(p.err, "--ttl 2s"),
	      "the reason and the remedy:\n%s", p.err);
	fb_test_release(&p);
	const char *ok[] = {"-t",           "2", "-d",      "1s",     "-q", "--ttl", "2s",
	                    "--pause-rate", "0", "--lease", slow.url, NULL};
	check_eq(fb_test_run(&p, ok), 0, "--ttl 2s works there");
	fb_test_release(&p);
	fb_server_stop(&slow);
}

/* The acceptance run: pauses of 2-3 TTLs (past the TTL and the leader's
 * half-second check) cost holders their leases, unfenced accepts stale
 * writes, fenced none, checker agreeing. Workers skip held keys, so that
 * the pauses' victims do not hold everyone up. */
static void test_pauses_past_the_ttl_corrupt_unfenced_only(void **state)
{
	(void)state;
	const char *args[] = {"-t",
	                      "16",
	                      "-d",
	                      "5s",
	                      "-k",
	                      "16",
	                      "--on-held",
	                      "skip",
	                      "--ttl",
	                      "1s",
	                      "--pause",
	                      "2s-3s",
	                      "--pause-rate",
	                      "4",
	                      "--fault-at",
	                      "after-read",
	                      "--lease",
	                      etcd.url,
	                      "--store",
	                      redis.url,
	                      "--mode",
	                      "fenced,write-fenced,unfenced",
	                      NULL};
	fb_test_proc p;
	json_object *doc = fb_test_run_doc(&p, args, 0);
	fb_test_fenced_safe_unfenced_corrupted(doc, p.out, FB_KEEPS_ORDER);
	check(strstr(p.out, "lease etcd 3."), "the report names the service:\n%s", p.out);
	json_object_put(doc);
	fb_test_release(&p);
}

/* Two processes share the cluster and the store; the global check
 * afterwards finds fenced safe. */
static void test_two_processes_share_the_cluster(void **state)
{
	(void)state;
	const char *common[] = {"-t",    "4",  "-d",           "2s", "-k", "4",
	                        "--ttl", "1s", "--pause-rate", "2",  NULL};
	fb_test_shared_run(etcd.url, redis.url, common, FB_KEEPS_ORDER);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_bad_urls_and_configurations_are_einval_naming_the_url),
	        cmocka_unit_test(test_unreachable_member_is_esys_naming_it),
	        cmocka_unit_test(test_a_dead_member_is_skipped_for_the_next),
	        cmocka_unit_test(test_one_holder_revision_fences_and_the_fence_replaced),
	        cmocka_unit_test(test_an_unrenewed_lease_expires_and_a_renewed_one_does_not),
	        cmocka_unit_test(test_fresh_prepare_forgets_the_entries_and_a_shared_one_does_not),
	        cmocka_unit_test(test_a_ttl_below_the_servers_minimum_is_exit_2_saying_the_minimum),
	        cmocka_unit_test(test_pauses_past_the_ttl_corrupt_unfenced_only),
	        cmocka_unit_test(test_two_processes_share_the_cluster),
	};
	const size_t n = sizeof tests / sizeof tests[0];
	int r = fb_test_start_with_store(FB_SERVER_ETCD, &etcd, &redis, "etcd engine tests", n);
	if (r <= 0)
		return r < 0;
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	fb_server_stop(&redis);
	fb_server_stop(&etcd);
	return failed;
}
