/*
 * The ZooKeeper engine against a throwaway standalone server (tickTime
 * 10 ms): the lock recipe and its czxid fences, the session as the lease,
 * and the point of the single-threaded client: a session whose worker
 * stops talking expires, and its lock goes to the next client. Then the
 * fencebench binary end to end, with a Redis store.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "fbengine.h"
#include "fbproc.h"
#include "fbtest.h"
#include "relay.h"
#include "servers.h"
#include "zk.h"

static const fb_lease_ops *const L = &fb_zk_lease_ops;
static fb_server zk, redis;

/* The session timeout of the engine tests: a session the test leaves
 * idle between two calls (the client pings only inside them) must outlive
 * the test process's longest wait for a core on a loaded machine; at
 * 300 ms a busy soak saw one lapse. */
#define TTL (1000 * MS)

static fb_engine_config base_cfg(void)
{
	return fb_test_lease_cfg(TTL);
}

static void *engine(const fb_engine_config *cfg, bool fresh)
{
	return fb_test_lease_open(L, cfg, zk.url, fresh);
}

static void *conn(void *e, uint16_t worker)
{
	return fb_test_lease_conn(L, e, worker);
}

static fb_acquire acq(void *c, uint32_t key, fb_lease *l)
{
	return fb_test_acquire(L, c, key, l);
}

static uint64_t mono_ns(void)
{
	return fb_clock_now(fb_clock_monotonic());
}

/* The caller's clock, 11 ms further on at every read: every create takes
 * longer than the engine's 10 ms slack. */
typedef struct slow_clock {
	fb_clock base;
	bool on; /* off while the engine is set up: only the acquire is slow */
	uint64_t reads;
} slow_clock;

static uint64_t slow_now(const fb_clock *c)
{
	slow_clock *s = (slow_clock *)(uintptr_t)c;
	return mono_ns() + (s->on ? ++s->reads : s->reads) * 11 * MS;
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
	fb_test_bad_lease_urls(L, &cfg, bad, sizeof bad / sizeof bad[0]);
	struct {
		fb_engine_config cfg;
		const char *says;
	} cases[] = {{base_cfg(), "whole milliseconds"},
	             {base_cfg(), "per-key"},
	             {base_cfg(), "--first-fence"}};
	cases[0].cfg.ttl_ns = TTL + 1;
	cases[1].cfg.fence = FB_FENCE_PER_KEY;
	cases[2].cfg.first_fence = 33;
	for (size_t i = 0; i < 3; i++)
		fb_test_lease_refused(L, &cases[i].cfg, zk.url, cases[i].says);
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

/* The server grants 20 ms..60 s: a TTL outside is refused, naming both.
 * Above the range, where the session that asks lives long: a 20 ms one
 * cannot even be kept open on a loaded machine (seen in a soak: no
 * session, where the test wanted the refusal). */
static void test_a_ttl_the_server_will_not_grant_is_einval(void **state)
{
	(void)state;
	fb_engine_config cfg = base_cfg();
	cfg.ttl_ns = 120000 * MS;
	fb_test_lease_refused(L, &cfg, zk.url,
	                      "--ttl 120000 ms: the server negotiated a session "
	                      "timeout of 60000 ms");
}

static void test_version_names_the_server_and_the_negotiated_timeout(void **state)
{
	(void)state;
	fb_engine_config cfg = base_cfg();
	void *e = engine(&cfg, true);
	char v[96];
	L->version(e, v, sizeof v);
	check(strncmp(v, "3.", 2) == 0 && strstr(v, "session timeout 1000 ms"), "version: %s", v);
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
	fb_test_lease_contract(L, e, false);
	void *a = conn(e, 1);
	fb_lease la;
	uint64_t t0 = mono_ns();
	check_eq(acq(a, 2, &la), FB_ACQUIRED, "A takes key 2");
	uint64_t t1 = mono_ns();
	check(la.service_at >= t0 && la.service_at <= t1 && la.service_at + TTL == la.expires_at,
	      "service_at is the create's send on the caller's clock (%llu in [%llu, %llu]), "
	      "and the lease runs a TTL from it",
	      (unsigned long long)la.service_at, (unsigned long long)t0, (unsigned long long)t1);
	check_eq(L->witness_slack_ns, 10 * MS, "dated to within the slack it enforces");
	check_eq(L->release(a, 2, &la, NULL), FB_IO_OK, "A releases");
	L->disconnect(a);
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
	check_eq(L->release(a, 0, &la, NULL), FB_IO_REFUSED, "and cannot release B's lock");
	/* B next, while its session is fresh: A's new session below can take
	 * longer than B's timeout on a loaded machine (seen in a soak) */
	check_eq(L->is_held(b, 0, &lb), FB_IO_OK, "B holds it");
	check_eq(L->release(b, 0, &lb, NULL), FB_IO_OK, "B releases key 0");
	fb_lease la2;
	check_eq(acq(a, 1, &la2), FB_ACQUIRED, "A works again on a new session");
	check_eq(L->release(a, 1, &la2, NULL), FB_IO_OK, "A releases key 1");
	L->disconnect(a);
	L->disconnect(b);
	L->close(e);
}

/* Renewing is talking: a holder that renews every sixth of the timeout
 * keeps its lock past several timeouts. */
static void test_renew_keeps_the_session_and_the_lock(void **state)
{
	(void)state;
	/* a timeout 6 renewals long: a loaded machine's late wake-up from a
	 * sleep must not outlast it (with 3, a busy soak saw one do so) */
	const uint64_t ttl = 600 * MS;
	fb_engine_config cfg = fb_test_lease_cfg(ttl);
	void *e = engine(&cfg, true);
	void *a = conn(e, 1), *b = conn(e, 2);
	fb_lease la, lb, r;
	check_eq(acq(a, 0, &la), FB_ACQUIRED, "A takes key 0");
	for (int i = 0; i < 12; i++) {
		fb_sleep_ns(ttl / 6);
		uint64_t before = fb_clock_now(fb_clock_monotonic());
		check_eq(L->renew(a, 0, &la, &r), FB_IO_OK, "A renews");
		check(r.fence == la.fence && r.expires_at >= before + ttl,
		      "a TTL from the renewal");
	}
	check_eq(acq(b, 0, &lb), FB_HELD, "after 2 timeouts B is still refused");
	check_eq(L->release(a, 0, &la, NULL), FB_IO_OK, "A releases");
	L->disconnect(a);
	L->disconnect(b);
	L->close(e);
}

/* A lock whose create took longer than the slack cannot be dated to
 * within it: dated by its send, it could seem to begin before the lease it
 * followed had ended. It is withdrawn, and after a few such tries the key
 * is reported held; the key is left free. */
static void test_a_create_slower_than_the_slack_is_withdrawn(void **state)
{
	(void)state;
	slow_clock slow = {{"slow", slow_now}, false, 0};
	fb_engine_config cfg = base_cfg(), plain = base_cfg();
	cfg.clock = &slow.base;
	void *e2 = engine(&plain, true), *e = engine(&cfg, false);
	void *a = conn(e, 1), *b = conn(e2, 2);
	fb_lease la, lb;
	slow.on = true;
	check_eq(acq(a, 3, &la), FB_HELD, "no lock from creates that took 11 ms or more");
	slow.on = false;
	check(la.fence == 0 && la.owner == 0, "no fence, and no holder named");
	check_eq(acq(b, 3, &lb), FB_ACQUIRED, "the withdrawn requests left the key free");
	check_eq(L->release(b, 3, &lb, NULL), FB_IO_OK, "B releases");
	L->disconnect(a);
	L->disconnect(b);
	L->close(e2);
	L->close(e);
}

/* A worker that closed its session after a lost connection may leave a
 * request behind (the server never heard the close), alive until that
 * session expires. The worker's next acquire clears it instead of finding
 * its own dead request holding the key. Another worker's is a holder. */
static void test_a_request_the_worker_left_behind_is_cleared(void **state)
{
	(void)state;
	fb_engine_config cfg = base_cfg();
	void *e = engine(&cfg, true);
	void *old = conn(e, 1), *now = conn(e, 1), *other = conn(e, 2);
	fb_lease lo, ln, lx;
	check_eq(acq(old, 3, &lo), FB_ACQUIRED, "worker 1's old session leaves a request on key 3");
	check_eq(acq(other, 3, &lx), FB_HELD, "worker 2 takes it for a holder");
	check_eq(lx.owner, 1, "worker 1");
	check_eq(acq(now, 3, &ln), FB_ACQUIRED, "worker 1's new session clears it and takes key 3");
	check(ln.fence > lo.fence, "with a higher fence");
	check_eq(L->is_held(old, 3, &lo), FB_IO_REFUSED, "the old request is gone");
	check_eq(L->release(now, 3, &ln, NULL), FB_IO_OK, "released");
	L->disconnect(old);
	L->disconnect(now);
	L->disconnect(other);
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

/* ---- a reply out of order --------------------------------------------- */

/*
 * A relay (tests/relay.h) that can spoil one reply. From server to client
 * ZooKeeper sends frames (a 4-byte big-endian length, then the payload);
 * every frame after a session's first (the connect response) begins with
 * its reply header's xid, which the client matches against the request it
 * sent first. Armed, the relay changes the xid of the next reply to a
 * request (xid > 0; not a ping, -2, a watch event, -1, or a reconnect's own
 * requests, below 0): to the client, a reply out of order, which it
 * answers as it does a leader that died with requests in flight (issue
 * 24): it drops the connection, failing what was in flight with
 * ZRUNTIMEINCONSISTENCY.
 */
enum { UNKNOWN, SESSION, WORD }; /* WORD: a four-letter word ("srvr") */

typedef struct spoiled_link {
	int kind;
	bool greeted;   /* the connect response has gone by */
	char in[65536]; /* the server's bytes not yet a whole frame */
	size_t nin;
} spoiled_link;

typedef struct spoiler {
	_Atomic int armed, spoiled;
	_Atomic int broken; /* a frame bigger than the relay holds */
	spoiled_link link[FB_RELAY_LINKS];
} spoiler;

/* The length of the frame at q->in + at with its header, or 0: not all of
 * it is here yet. */
static size_t whole_frame(const spoiled_link *q, size_t at)
{
	uint32_t len;
	if (q->nin - at < 4)
		return 0;
	memcpy(&len, q->in + at, 4);
	len = ntohl(len);
	return q->nin - at - 4 >= len ? 4 + (size_t)len : 0;
}

static bool spoil(void *ctx, fb_relay *r, int link, bool client, const char *buf, size_t n)
{
	spoiler *sp = ctx;
	spoiled_link *q = &sp->link[link];
	if (client && !n) { /* a new link */
		q->kind = UNKNOWN;
		q->greeted = false;
		q->nin = 0;
	} else if (client && q->kind == UNKNOWN) { /* a frame's length starts with a 0 byte */
		q->kind = buf[0] == 0 ? SESSION : WORD;
	}
	if (client)
		return true;
	if (q->kind != SESSION)
		return fb_relay_pass(r, link, buf, n);
	if (n > sizeof q->in - q->nin) {
		atomic_store(&sp->broken, 1); /* not for this thread to fail the test */
		return false;
	}
	memcpy(q->in + q->nin, buf, n);
	q->nin += n;
	size_t at = 0;
	for (size_t len; (len = whole_frame(q, at)); at += len) {
		char *f = q->in + at + 4;
		uint32_t xid = 0;
		if (q->greeted && len >= 8)
			memcpy(&xid, f, 4);
		if ((int32_t)ntohl(xid) > 0 && atomic_load(&sp->armed) > 0) {
			atomic_fetch_sub(&sp->armed, 1);
			f[0] ^= 0x40; /* another request's xid, never sent */
			atomic_fetch_add(&sp->spoiled, 1);
		}
		q->greeted = true;
	}
	bool ok = fb_relay_pass(r, link, q->in, at);
	memmove(q->in, q->in + at, q->nin - at);
	q->nin -= at;
	return ok;
}

/*
 * The engine through the relay, one reply spoiled in its acquire: the
 * client drops the link and reconnects the same session, and the engine
 * rides it out as a lost link (sends the request again on the session).
 * The acquire is answered, never failed: it holds the key, or, where the
 * relay's extra hops on a loaded machine made every create slower than
 * the engine's slack, it withdrew its requests and says the key is held
 * by nobody (the engine's answer to a slow create, which the helper has
 * already tried five times). Either way it leaves nothing behind.
 */
static void test_a_reply_out_of_order_is_a_lost_link_ridden_out(void **state)
{
	(void)state;
	static spoiler sp;
	fb_relay r;
	fb_relay_start(&r, zk.port, spoil, &sp);
	char url[64];
	snprintf(url, sizeof url, "zk://127.0.0.1:%d", r.port);
	fb_engine_config cfg = base_cfg();
	void *e = fb_test_lease_open(L, &cfg, url, true), *e2 = engine(&cfg, false);
	void *a = conn(e, 1), *b = conn(e2, 2);
	fb_lease la, lb;
	fb_acquire got = acq(a, 3, &la);
	check(got != FB_ACQ_ERROR, "A's acquire through the relay, before it is armed: %s",
	      L->error(a));
	if (got == FB_ACQUIRED)
		check_eq(L->release(a, 3, &la, NULL), FB_IO_OK, "A gives key 3 back");
	atomic_store(&sp.armed, 1);
	got = acq(a, 3, &la);
	check_eq(atomic_load(&sp.spoiled), 1, "one reply of the acquire was spoiled");
	check(got == FB_ACQUIRED || (got == FB_HELD && !la.owner),
	      "A's acquire answered across a reply out of order (%d: %s)", got, L->error(a));
	if (got == FB_ACQUIRED) {
		check(la.fence > 0 && la.owner == 1, "A holds it, with a fence");
		check_eq(acq(b, 3, &lb), FB_HELD, "B finds A holding it");
		check_eq(lb.owner, 1, "A, named");
		check_eq(L->release(a, 3, &la, NULL), FB_IO_OK, "A releases");
	}
	check_eq(acq(b, 3, &lb), FB_ACQUIRED, "nothing was left behind: B takes key 3");
	check(got != FB_ACQUIRED || lb.fence > la.fence, "with a higher fence");
	check_eq(L->release(b, 3, &lb, NULL), FB_IO_OK, "B releases");
	L->disconnect(a);
	L->disconnect(b);
	L->close(e2);
	L->close(e);
	fb_relay_stop(&r);
	check(!atomic_load(&sp.broken), "every frame fitted the relay");
}

/* ---- end to end ----------------------------------------------------------- */

/* The acceptance run: pauses of 1.5-3 session timeouts cost their
 * holders the lock (the vacuity table's takeovers), unfenced accepts stale
 * writes, fenced none, the checker agrees, the witness sees no broken
 * promise. */
static void test_pauses_past_the_session_timeout_corrupt_unfenced_only(void **state)
{
	(void)state;
	const char *args[] = {
	        "-t",         "16",         "-d",           "4s",
	        "-k",         "16",         "--on-held",    "skip",
	        "--ttl",      "200ms",      "--pause-rate", "20",
	        "--fault-at", "after-read", "--lease",      zk.url,
	        "--store",    redis.url,    "--mode",       "fenced,write-fenced,unfenced",
	        NULL};
	fb_test_proc p;
	json_object *doc = fb_test_run_corrupting(&p, args, FB_KEEPS_ORDER);
	fb_test_fenced_safe_unfenced_corrupted(doc, p.out, FB_KEEPS_ORDER);
	check(strstr(p.out, "lease ZooKeeper 3.") && strstr(p.out, "session timeout 200 ms"),
	      "the report names the service and its negotiated timeout:\n%s", p.out);
	json_object_put(doc);
	fb_test_release(&p);
}

/* Two processes share the ensemble (--client-id) and the store; the global
 * check afterwards finds fenced safe. */
static void test_two_processes_share_the_ensemble(void **state)
{
	(void)state;
	const char *common[] = {"-t",    "4",     "-d",           "2s", "-k", "4",
	                        "--ttl", "200ms", "--pause-rate", "10", NULL};
	fb_test_shared_run(zk.url, redis.url, common, FB_KEEPS_ORDER);
}

static void test_unreachable_ensemble_is_exit_3(void **state)
{
	(void)state;
	fb_test_proc p;
	const char *args[] = {"-t",    "2",       "-d",
	                      "1s",    "-q",      "--ttl",
	                      "200ms", "--lease", "zk://127.0.0.1:1,127.0.0.1:2",
	                      NULL};
	check_eq(fb_test_run(&p, args), 3, "exit code");
	check(strstr(p.err, "--lease") && strstr(p.err, "127.0.0.1:1"), "names it:\n%s", p.err);
	fb_test_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_bad_urls_and_configurations_are_einval_naming_the_url),
	        cmocka_unit_test(test_unreachable_server_is_esys_naming_it),
	        cmocka_unit_test(test_a_ttl_the_server_will_not_grant_is_einval),
	        cmocka_unit_test(test_version_names_the_server_and_the_negotiated_timeout),
	        cmocka_unit_test(test_lowest_request_holds_and_fences_are_growing_zxids),
	        cmocka_unit_test(
	                test_a_silent_session_expires_and_its_lock_goes_to_the_next_client),
	        cmocka_unit_test(test_renew_keeps_the_session_and_the_lock),
	        cmocka_unit_test(test_a_create_slower_than_the_slack_is_withdrawn),
	        cmocka_unit_test(test_a_request_the_worker_left_behind_is_cleared),
	        cmocka_unit_test(test_fresh_prepare_forgets_the_requests_and_a_shared_one_does_not),
	        cmocka_unit_test(test_a_reply_out_of_order_is_a_lost_link_ridden_out),
	        cmocka_unit_test(test_pauses_past_the_session_timeout_corrupt_unfenced_only),
	        cmocka_unit_test(test_two_processes_share_the_ensemble),
	        cmocka_unit_test(test_unreachable_ensemble_is_exit_3),
	};
	const size_t n = sizeof tests / sizeof tests[0];
	int r = fb_test_start_with_store(FB_SERVER_ZOOKEEPER, &zk, &redis, "ZooKeeper engine tests",
	                                 n);
	if (r <= 0)
		return r < 0;
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	fb_server_stop(&redis);
	fb_server_stop(&zk);
	return failed;
}
