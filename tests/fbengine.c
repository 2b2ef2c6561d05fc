#include "fbengine.h"

#include <string.h>

#include "fbproc.h"
#include "fbtest.h"

fb_engine_config fb_test_lease_cfg(uint64_t ttl_ns)
{
	return (fb_engine_config){.keys = 4,
	                          .ttl_ns = ttl_ns,
	                          .fence = FB_FENCE_GLOBAL,
	                          .first_fence = 1,
	                          .clock = fb_clock_monotonic(),
	                          .modes = 7,
	                          .threads = 2,
	                          .timeout_ns = 5000 * MS};
}

void *fb_test_lease_open(const fb_lease_ops *L, const fb_engine_config *cfg, const char *url,
                         bool fresh)
{
	void *e = NULL;
	char err[640] = "";
	check_eq(L->open(cfg, url, &e, err, sizeof err), FB_OK, err);
	check_eq(L->prepare(e, fresh, err, sizeof err), FB_OK, err);
	return e;
}

void *fb_test_lease_conn(const fb_lease_ops *L, void *eng, uint16_t worker)
{
	void *c = NULL;
	char err[640] = "";
	check_eq(L->connect(eng, worker, &c, err, sizeof err), FB_OK, err);
	return c;
}

fb_acquire fb_test_acquire(const fb_lease_ops *L, void *conn, uint32_t key, fb_lease *l)
{
	fb_lease_stats st = {0};
	fb_acquire a = L->acquire(conn, key, l, &st);
	check(st.cas_retries == 0 && st.wasted_fences == 0, "a remote engine counts no CAS");
	return a;
}

void fb_test_lease_contract(const fb_lease_ops *L, void *eng, bool reports_replaced)
{
	void *a = fb_test_lease_conn(L, eng, 1), *b = fb_test_lease_conn(L, eng, 2);
	fb_lease la, lb, lc, p;
	check_eq(fb_test_acquire(L, a, 0, &la), FB_ACQUIRED, "A takes key 0");
	check(la.fence > 0 && la.owner == 1, "fence %llu, owner %u", (unsigned long long)la.fence,
	      la.owner);
	if (reports_replaced)
		check_eq(la.replaced, 0, "the key's first lease replaced nothing");
	check_eq(fb_test_acquire(L, b, 0, &lb), FB_HELD, "B is refused while A holds");
	check_eq(lb.owner, 1, "and told that A holds it");
	check_eq(L->peek(b, 0, &p), FB_IO_OK, "peek");
	check(p.owner == 1 && (!p.fence || p.fence == la.fence),
	      "peek sees A's lease (owner %u, fence %llu)", p.owner, (unsigned long long)p.fence);
	check_eq(L->is_held(a, 0, &la), FB_IO_OK, "A holds");
	check_eq(L->release(a, 0, &la), FB_IO_OK, "A releases");
	check_eq(L->release(a, 0, &la), FB_IO_REFUSED, "a second release is refused");
	check_eq(fb_test_acquire(L, b, 0, &lb), FB_ACQUIRED, "B takes it after the release");
	check(lb.fence > la.fence, "B's fence %llu > A's %llu", (unsigned long long)lb.fence,
	      (unsigned long long)la.fence);
	if (reports_replaced)
		check_eq(lb.replaced, la.fence, "the service says B's lease replaced A's fence");
	check_eq(L->is_held(a, 0, &la), FB_IO_REFUSED, "A no longer holds");
	check_eq(L->is_held(b, 0, &lb), FB_IO_OK, "B does");
	check_eq(fb_test_acquire(L, a, 1, &lc), FB_ACQUIRED, "A takes key 1");
	check(lc.fence > lb.fence, "one counter for every key: %llu > %llu",
	      (unsigned long long)lc.fence, (unsigned long long)lb.fence);
	check_eq(L->release(b, 0, &lb), FB_IO_OK, "B releases");
	check_eq(L->release(a, 1, &lc), FB_IO_OK, "A releases key 1");
	L->disconnect(a);
	L->disconnect(b);
}

void fb_test_bad_lease_urls(const fb_lease_ops *L, const fb_engine_config *cfg,
                            const char *const *urls, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		void *e = NULL;
		char err[640] = "", red[512];
		check_eq(L->open(cfg, urls[i], &e, err, sizeof err), FB_EINVAL, urls[i]);
		check(!e, "%s: no engine on failure", urls[i]);
		check(!strstr(err, "s3cret") && !strchr(err, '\n'), "%s: %s", urls[i], err);
		fb_url_redact(urls[i], red, sizeof red);
		check(strncmp(err, red, strlen(red)) == 0, "%s: the message names the URL: %s",
		      urls[i], err);
	}
}

void fb_test_lease_refused(const fb_lease_ops *L, const fb_engine_config *cfg, const char *url,
                           const char *says)
{
	void *e = NULL;
	char err[640] = "";
	check_eq(L->open(cfg, url, &e, err, sizeof err), FB_EINVAL, says);
	check(!e && strstr(err, says), "the reason says '%s': %s", says, err);
}

void fb_test_shared_run(const char *lease, const char *store, const char *const *common)
{
	fb_test_proc prep, p[2], chk;
	const char *args[64];
	int n = 0;
	for (; common[n] && n < 48; n++)
		args[n] = common[n];
	const char *tail[] = {"--lease", lease, "--store", store, "--prepare-only", NULL};
	for (int i = 0; tail[i]; i++)
		args[n + i] = tail[i];
	args[n + 5] = NULL;
	check_eq(fb_test_run(&prep, args), 0, "--prepare-only");
	args[n + 4] = "-q";
	args[n + 5] = "-o";
	args[n + 6] = prep.dir;
	args[n + 7] = "--client-id";
	args[n + 9] = NULL;
	for (int i = 0; i < 2; i++) {
		args[n + 8] = i ? "2" : "1";
		fb_test_start(&p[i], args);
	}
	int c0 = fb_test_finish(&p[0]), c1 = fb_test_finish(&p[1]);
	check(c0 == 0 && c1 == 0, "both processes exit 0 (%d, %d):\n%s\n%s\n%s\n%s", c0, c1,
	      p[0].out, p[0].err, p[1].out, p[1].err);
	check(strstr(p[0].out, "checker: deferred"), "a shared process defers the check:\n%s",
	      p[0].out);
	const char *chk_args[] = {"check", "--store", store, NULL};
	int cc = fb_test_run(&chk, chk_args);
	check(cc == 0 && strstr(chk.out, "fenced: SAFE"), "the global check (exit %d):\n%s\n%s", cc,
	      chk.out, chk.err);
	fb_test_release(&p[0]);
	fb_test_release(&p[1]);
	fb_test_release(&chk);
	fb_test_release(&prep);
}

void fb_test_fenced_safe_unfenced_corrupted(json_object *doc, const char *out)
{
	check(fb_test_num(doc, "modes.unfenced.stale_accepted") > 0, "unfenced corrupted:\n%s",
	      out);
	check_eq(fb_test_num(doc, "modes.fenced.stale_accepted"), 0, "fenced stale accepted");
	check_eq(fb_test_num(doc, "modes.fenced.lost_updates"), 0, "fenced lost updates");
	check_eq(fb_test_num(doc, "modes.write_fenced.stale_accepted"), 0, "write-fenced stale");
	const char *agree[] = {"modes.fenced.checker_agrees", "modes.write_fenced.checker_agrees",
	                       "modes.unfenced.checker_agrees"};
	for (int i = 0; i < 3; i++) {
		json_object *a = fb_test_json(doc, agree[i]);
		check(a && json_object_get_boolean(a), "%s:\n%s", agree[i], out);
	}
	check(fb_test_num(doc, "run.faults.pause.over_ttl") > 0, "pauses past the TTL:\n%s", out);
	check(fb_test_num(doc, "run.faults.pause.takeovers") > 0,
	      "that cost their holders the lease:\n%s", out);
	check_eq(fb_test_num(doc, "run.lease_violations.overlapping_leases") +
	                 fb_test_num(doc, "run.lease_violations.out_of_order_fences") +
	                 fb_test_num(doc, "run.lease_violations.duplicate_fences"),
	         0, "the lease service kept its promises");
	check(strstr(out, "fenced: SAFE"), "the verdict:\n%s", out);
}

int fb_test_start_with_store(fb_server_kind kind, fb_server *svc, fb_server *store,
                             const char *what, size_t tests)
{
	fb_server *both[2] = {svc, store};
	fb_server_kind kinds[2] = {kind, FB_SERVER_REDIS};
	if (!fb_servers_installed(what, kinds, 2, tests))
		return 0;
	for (int i = 0; i < 2; i++) {
		if (fb_server_start(kinds[i], both[i]) == 1)
			continue;
		if (i)
			fb_server_stop(svc);
		fprintf(stderr, "%s: cannot start a server: %s\n", what, both[i]->why);
		return -1;
	}
	return 1;
}
