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

/* A remote engine gives up a lock it won too slowly to date (Redlock's
 * round, ZooKeeper's create: over 10 ms) and says held with no holder
 * (owner 0). On a loaded machine that happens to any acquire; these
 * tests are about the lease's logic, not the machine's speed, so such an
 * answer is tried again, 5 times at most. A real holder is named, and is
 * answered at once. */
fb_acquire fb_test_acquire(const fb_lease_ops *L, void *conn, uint32_t key, fb_lease *l)
{
	fb_acquire a = FB_HELD;
	for (int i = 0; i < 5 && a == FB_HELD; i++) {
		fb_lease_stats st = {0};
		a = L->acquire(conn, key, l, &st);
		check(st.cas_retries == 0 && st.wasted_fences == 0,
		      "a remote engine counts no CAS");
		if (a == FB_HELD && l->owner)
			break;
	}
	return a;
}

void fb_test_lease_contract(const fb_lease_ops *L, void *eng, bool reports_replaced)
{
	void *a = fb_test_lease_conn(L, eng, 1), *b = fb_test_lease_conn(L, eng, 2);
	fb_lease la, lb, lc, p;
	check_eq(fb_test_acquire(L, a, 0, &la), FB_ACQUIRED, "A takes key 0");
	check(la.fence > 0 && la.owner == 1, "fence %llu, owner %u", (unsigned long long)la.fence,
	      la.owner);
	/* A lock the engine took too slowly to date and withdrew (etcd, on a
	 * loaded machine) is the slot's last word before the next: replaced is
	 * then its fence, between the two holders' own. */
	if (reports_replaced)
		check(la.replaced < la.fence,
		      "the key's first lease replaced nothing (or a "
		      "withdrawn try of its own): %llu",
		      (unsigned long long)la.replaced);
	check_eq(fb_test_acquire(L, b, 0, &lb), FB_HELD, "B is refused while A holds");
	check_eq(lb.owner, 1, "and told that A holds it");
	check_eq(L->peek(b, 0, &p), FB_IO_OK, "peek");
	check(p.owner == 1 && (!p.fence || p.fence == la.fence),
	      "peek sees A's lease (owner %u, fence %llu)", p.owner, (unsigned long long)p.fence);
	check_eq(L->is_held(a, 0, &la), FB_IO_OK, "A holds");
	check_eq(L->release(a, 0, &la, NULL), FB_IO_OK, "A releases");
	check_eq(L->release(a, 0, &la, NULL), FB_IO_REFUSED, "a second release is refused");
	check_eq(fb_test_acquire(L, b, 0, &lb), FB_ACQUIRED, "B takes it after the release");
	check(lb.fence > la.fence, "B's fence %llu > A's %llu", (unsigned long long)lb.fence,
	      (unsigned long long)la.fence);
	if (reports_replaced)
		check(lb.replaced == la.fence || (lb.replaced > la.fence && lb.replaced < lb.fence),
		      "the service says B's lease replaced A's fence %llu (or a withdrawn try "
		      "after "
		      "it): %llu",
		      (unsigned long long)la.fence, (unsigned long long)lb.replaced);
	check_eq(L->is_held(a, 0, &la), FB_IO_REFUSED, "A no longer holds");
	check_eq(L->is_held(b, 0, &lb), FB_IO_OK, "B does");
	check_eq(fb_test_acquire(L, a, 1, &lc), FB_ACQUIRED, "A takes key 1");
	check(lc.fence > lb.fence, "one counter for every key: %llu > %llu",
	      (unsigned long long)lc.fence, (unsigned long long)lb.fence);
	check_eq(L->release(b, 0, &lb, NULL), FB_IO_OK, "B releases");
	check_eq(L->release(a, 1, &lc, NULL), FB_IO_OK, "A releases key 1");
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

void fb_test_witness_exit(const fb_test_proc *p, json_object *doc, fb_witness_expect w)
{
	static const char *const others[] = {"fence_regressions",        "duplicate_fences",
	                                     "overlapping_leases",       "held_past_ttl",
	                                     "renewed_for_a_non_holder", "renewed_after_expiry"};
	char path[96];
	int64_t inv = fb_test_num(doc, "run.lease_violations.out_of_order_fences"), other = 0;
	for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
		snprintf(path, sizeof path, "run.lease_violations.%s", others[i]);
		other += fb_test_num(doc, path);
	}
	if (w == FB_MINTS_AFTER && p->code == 1 && inv > 0 && other == 0) {
		/* the lease is the verdict's only reason: its ");" is followed by
		 * the replay, and no clock came before it */
		const char *lease = strstr(p->out, " lease VIOLATED (");
		const char *end = lease ? strstr(lease, ");") : NULL;
		check(end && !strncmp(end + 2, " replay: ", 9) &&
		              !strstr(p->out, "clock NOT JUDGED"),
		      "exit 1 for a reason besides the INCR's gap:\n%s", p->out);
		fprintf(stderr,
		        "note: a stall landed in the INCR's gap (%lld fences out of "
		        "acquisition order), which the witness rightly failed\n",
		        (long long)inv);
		return;
	}
	check(p->code == 0 && inv == 0 && other == 0,
	      "exit %d with %lld fences out of acquisition order and %lld other broken promises "
	      "of the lease service (%s)\nstdout:\n%s\nstderr:\n%s",
	      p->code, (long long)inv, (long long)other,
	      w == FB_MINTS_AFTER ? "only the inversions, exit 1, are the INCR's gap"
	                          : "this service mints in the step that grants",
	      p->out, p->err);
}

void fb_test_shared_run(const char *lease, const char *store, const char *const *common,
                        fb_witness_expect w)
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
	char json[2][4200];
	args[n + 4] = "-q";
	args[n + 5] = "-o";
	args[n + 6] = prep.dir;
	args[n + 7] = "--client-id";
	args[n + 9] = "--json";
	args[n + 11] = NULL;
	for (int i = 0; i < 2; i++) {
		args[n + 8] = i ? "2" : "1";
		snprintf(json[i], sizeof json[i], "%s/client-%d.json", prep.dir, i + 1);
		args[n + 10] = json[i];
		fb_test_start(&p[i], args);
	}
	for (int i = 0; i < 2; i++) {
		fb_test_finish(&p[i]);
		json_object *doc = fb_test_load(json[i]);
		fb_test_witness_exit(&p[i], doc, w);
		json_object_put(doc);
	}
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

void fb_test_fenced_safe_unfenced_corrupted(json_object *doc, const char *out, fb_witness_expect w)
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
	check(fb_test_num(doc, "run.lease_violations.overlapping_leases") +
	                      (w == FB_MINTS_AFTER
	                               ? 0
	                               : fb_test_num(doc,
	                                             "run.lease_violations.out_of_order_fences")) +
	                      fb_test_num(doc, "run.lease_violations.duplicate_fences") ==
	              0,
	      "the lease service kept its promises:\n%s", out);
	check(strstr(out, "fenced: SAFE"), "the verdict:\n%s", out);
}

json_object *fb_test_run_corrupting(fb_test_proc *p, const char *const *args, fb_witness_expect w)
{
	for (int run = 1;; run++) {
		json_object *doc = fb_test_run_doc_any(p, args);
		check(doc, "no JSON document from the run:\nstdout:\n%s\nstderr:\n%s", p->out,
		      p->err);
		fb_test_witness_exit(p, doc, w);
		/* what fb_test_fenced_safe_unfenced_corrupted asks of a run: a
		 * stale write, and a pause that cost its holder the lease (a
		 * starved injector can miss every holder) */
		if (run == 3 || (fb_test_num(doc, "modes.unfenced.stale_accepted") > 0 &&
		                 fb_test_num(doc, "run.faults.pause.takeovers") > 0))
			return doc;
		fprintf(stderr,
		        "run %d of 3 was vacuous (no stale write, or no pause cost a lease): "
		        "again\n",
		        run);
		json_object_put(doc);
		fb_test_release(p);
	}
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

/* ---- a store's batched phases ---- */

/* One operation of a phase as a call of its own. */
static fb_io store_single(const fb_store_ops *S, void *conn, const fb_store_op *op, uint32_t key,
                          uint64_t token, fb_store_result *r)
{
	switch (op->verb) {
	case FB_STORE_READ:
		return S->read(conn, op->d, key, token, r);
	case FB_STORE_WRITE:
		return S->write(conn, op->d, key, op->value, token, op->read, r);
	default:
		return S->debit(conn, op->d, key, op->value, token, r);
	}
}

static void same_result(const fb_store_result *b, const fb_store_result *s, const char *what, int i)
{
	check(b->ok == s->ok && b->stale == s->stale && b->version == s->version &&
	              b->balance == s->balance && b->before == s->before && b->token == s->token &&
	              b->highest == s->highest && b->highest_written == s->highest_written,
	      "%s, operation %d: batched {ok %d stale %d version %llu balance %lld before %lld "
	      "highest %llu%s} but alone {ok %d stale %d version %llu balance %lld before %lld "
	      "highest %llu%s}",
	      what, i, b->ok, b->stale, (unsigned long long)b->version, (long long)b->balance,
	      (long long)b->before, (unsigned long long)b->highest,
	      b->highest_written ? " written" : "", s->ok, s->stale, (unsigned long long)s->version,
	      (long long)s->balance, (long long)s->before, (unsigned long long)s->highest,
	      s->highest_written ? " written" : "");
}

typedef struct batch_phase {
	const char *what;
	uint64_t token;
	int n;
	fb_store_op ops[FB_BATCH_MAX];
	fb_io want[FB_BATCH_MAX];
} batch_phase;

#define RD(d)                                                                                      \
	{                                                                                          \
		FB_STORE_READ, d, 0, NULL                                                          \
	}
#define WR(d, v)                                                                                   \
	{                                                                                          \
		FB_STORE_WRITE, d, v, NULL                                                         \
	}
#define DB(d, v)                                                                                   \
	{                                                                                          \
		FB_STORE_DEBIT, d, v, NULL                                                         \
	}

void fb_test_store_fences_above_2_32(const fb_store_ops *S, void *conn)
{
	const uint64_t G = UINT64_C(1) << 32;
	fb_store_result r;
	int64_t bal;
	uint64_t last;
	for (int d = FB_FENCED; d <= FB_WRITE_FENCED; d++) {
		const char *n = fb_discipline_name((fb_discipline)d);
		if (d == FB_FENCED) {
			check_eq(S->read(conn, FB_FENCED, 0, G + 5, &r), FB_IO_OK,
			         "fenced: a read with 2^32 + 5 is served");
			check_eq(S->read(conn, FB_FENCED, 0, 6, &r), FB_IO_REFUSED,
			         "fenced: a read with 6 after 2^32 + 5 is refused (6 < 2^32 + 5)");
		}
		check(S->write(conn, (fb_discipline)d, 0, 90, G + 5, NULL, &r) == FB_IO_OK,
		      "%s: a write with 2^32 + 5 is accepted", n);
		check(S->write(conn, (fb_discipline)d, 0, 80, 6, NULL, &r) == FB_IO_REFUSED,
		      "%s: a write with 6 after 2^32 + 5 is stale (kept in 32 bits, 5 < 6)", n);
		check(S->write(conn, (fb_discipline)d, 0, 70, G + 4, NULL, &r) == FB_IO_REFUSED,
		      "%s: a write with 2^32 + 4 after 2^32 + 5 is stale", n);
		check(S->write(conn, (fb_discipline)d, 0, 60, 2 * G + 1, NULL, &r) == FB_IO_OK,
		      "%s: a write with 2^33 + 1 is accepted", n);
		check(S->final(conn, (fb_discipline)d, 1, &bal, &last) == FB_IO_OK, "%s: final", n);
		check(last == 2 * G + 1 && bal == 60,
		      "%s: the last fence is the whole 2^33 + 1 (%llu), the balance 60 (%lld)", n,
		      (unsigned long long)last, (long long)bal);
	}
}

void fb_test_store_batch_contract(const fb_store_ops *S, void *conn)
{
	const fb_discipline F = FB_FENCED, W = FB_WRITE_FENCED, U = FB_UNFENCED;
	const fb_io OK = FB_IO_OK, NO = FB_IO_REFUSED;
	const batch_phase phases[] = {
	        {"reads below the registered 9", 5, 3, {RD(F), RD(W), RD(U)}, {NO, OK, OK}},
	        {"writes with 5, one sent twice",
	         5,
	         4,
	         {WR(F, 99), WR(W, 99), WR(W, 99), WR(U, 99)},
	         {NO, OK, NO, OK}},
	        {"reads with 9, another order", 9, 3, {RD(U), RD(F), RD(W)}, {OK, OK, OK}},
	        {"debits with 9", 9, 3, {DB(W, 1), DB(U, 1), DB(F, 1)}, {OK, OK, OK}},
	        {"writes with an equal 9", 9, 2, {WR(F, 7), WR(U, 7)}, {NO, OK}},
	        {"a token no lease mints",
	         FB_FENCE_MAX + 1,
	         3,
	         {WR(F, 1), RD(W), DB(U, 1)},
	         {NO, NO, NO}},
	};
	check(S->batch != NULL, "the %s store batches its phases", S->name);
	fb_store_result r;
	for (uint32_t k = 0; k < 2; k++)
		check_eq(S->read(conn, F, k, 9, &r), FB_IO_OK, "a fenced read registers 9");
	for (size_t p = 0; p < sizeof phases / sizeof phases[0]; p++) {
		const batch_phase *ph = &phases[p];
		fb_store_result rb[FB_BATCH_MAX], rs;
		fb_io io[FB_BATCH_MAX];
		S->batch(conn, ph->n, ph->ops, 0, ph->token, rb, io);
		for (int i = 0; i < ph->n; i++) {
			check(io[i] == ph->want[i], "%s, operation %d (%s): %d, not %d (%s)",
			      ph->what, i, fb_discipline_name(ph->ops[i].d), (int)io[i],
			      (int)ph->want[i], S->error(conn));
			fb_io alone = store_single(S, conn, &ph->ops[i], 1, ph->token, &rs);
			check_eq(alone, io[i], "the same operation alone");
			same_result(&rb[i], &rs, ph->what, i);
		}
	}
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		int64_t bal[2];
		uint64_t last[2];
		check_eq(S->final(conn, (fb_discipline)d, 2, bal, last), FB_IO_OK, "final");
		check(bal[0] == bal[1] && last[0] == last[1],
		      "%s: batched key %lld (fence %llu), one by one %lld (fence %llu)",
		      fb_discipline_name((fb_discipline)d), (long long)bal[0],
		      (unsigned long long)last[0], (long long)bal[1], (unsigned long long)last[1]);
	}
}

void fb_test_store_batch_one_store_fails(const fb_store_ops *S, void *conn, uint32_t key,
                                         int64_t balance, bool reads_fail)
{
	const fb_discipline F = FB_FENCED, W = FB_WRITE_FENCED, U = FB_UNFENCED;
	const fb_store_op writes[] = {WR(F, balance), WR(W, balance), WR(U, balance)};
	const fb_store_op reads[] = {RD(F), RD(W), RD(U)};
	fb_store_result r[3];
	fb_io io[3];
	S->batch(conn, 3, writes, key, 1, r, io);
	char err[800];
	snprintf(err, sizeof err, "%s", S->error(conn));
	check(io[0] == FB_IO_OK && io[2] == FB_IO_OK,
	      "the writes beside the broken store's are accepted (%d, %d): %s", (int)io[0],
	      (int)io[2], err);
	check_eq(io[1], FB_IO_ERROR, "the broken store's write fails");
	check(strstr(err, "write-fenced write"), "the error names the store that failed: %s", err);
	S->batch(conn, 3, reads, key, 2, r, io);
	check(io[0] == FB_IO_OK && io[2] == FB_IO_OK,
	      "the connection serves the next batch (%d, %d): %s", (int)io[0], (int)io[2],
	      S->error(conn));
	check(r[0].balance == balance && r[2].balance == balance,
	      "fenced and unfenced hold what their writes left: %lld, %lld",
	      (long long)r[0].balance, (long long)r[2].balance);
	check_eq(io[1], reads_fail ? FB_IO_ERROR : FB_IO_OK, "the broken store's read");
	if (reads_fail)
		check(strstr(S->error(conn), "write-fenced read"), "named again: %s",
		      S->error(conn));
	else
		check(r[1].balance != balance, "the write that failed left nothing");
}

const fb_store_op fb_test_copy_batch[3] = {DB(FB_FENCED, 1), DB(FB_UNFENCED, 1),
                                           DB(FB_UNFENCED, 1)};

void fb_test_store_copy_settled(const fb_store_result *r, const fb_io *io, const char *err)
{
	check(io[0] == FB_IO_OK && r[0].ok && r[0].version == 1 && r[0].balance == 99,
	      "the fenced debit stands (%d, version %llu): %s", (int)io[0],
	      (unsigned long long)r[0].version, err);
	for (int i = 1; i < 3; i++)
		check(io[i] == FB_IO_OK && r[i].ok && r[i].version == (uint64_t)i &&
		              r[i].before == 101 - i && r[i].balance == 100 - i,
		      "unfenced debit %d of 2 is settled as its own copy: version %d, %d -> %d "
		      "(%d, version %llu, %lld -> %lld): %s",
		      i, i, 101 - i, 100 - i, (int)io[i], (unsigned long long)r[i].version,
		      (long long)r[i].before, (long long)r[i].balance, err);
}

void fb_test_store_batch_lost_after_first(const fb_store_ops *S, void *conn, bool settles)
{
	const fb_store_op writes[] = {WR(FB_FENCED, 90), WR(FB_WRITE_FENCED, 90),
	                              WR(FB_UNFENCED, 90)};
	fb_store_result r[3], x;
	fb_io io[3];
	S->batch(conn, 3, writes, 0, 1, r, io);
	check(io[0] == FB_IO_OK && r[0].ok && r[0].version == 1 && r[0].balance == 90,
	      "the write answered before the loss stands (%d, version %llu): %s", (int)io[0],
	      (unsigned long long)r[0].version, S->error(conn));
	if (settles) {
		for (int i = 1; i < 3; i++)
			check(io[i] == FB_IO_OK && r[i].ok && r[i].version == 1 &&
			              r[i].balance == 90 && !r[i].stale && r[i].token == 1,
			      "%s: the write never answered is settled from the history as "
			      "accepted, once (%d, version %llu, balance %lld): %s",
			      fb_discipline_name(writes[i].d), (int)io[i],
			      (unsigned long long)r[i].version, (long long)r[i].balance,
			      S->error(conn));
		check(S->read(conn, FB_FENCED, 0, 1, &x) == FB_IO_OK && x.balance == 90,
		      "the connection made again serves the next call: %s", S->error(conn));
		return;
	}
	check(io[1] == FB_IO_ERROR && io[2] == FB_IO_ERROR,
	      "the writes never answered are of unknown outcome (%d, %d)", (int)io[1], (int)io[2]);
	check_eq(S->read(conn, FB_FENCED, 0, 1, &x), FB_IO_ERROR,
	         "a later call on the lost connection");
}
