/*
 * Redlock against three throwaway redis-servers, the second and third
 * under libfaketime, plus a fourth as the store: the majority and its validity,
 * the two ways a fence is bolted on (none, refused by the fenced stores;
 * incr, the two-step trap), Kleppmann's scenario (a node's clock jumps,
 * its key expires early, a second client wins a majority), and the
 * fencebench binary end to end.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "backend.h"
#include "fbengine.h"
#include "fbproc.h"
#include "fbtest.h"
#include "redlock.h"
#include "servers.h"

static const fb_lease_ops *const L = &fb_redlock_lease_ops;
static fb_server node[3], store;
static char nodes[300];   /* host:port,host:port,host:port */
static char jumpy[700];   /* ...?faketime=3:FILE */
static char jumpy2[1100]; /* ...?faketime=2:FILE&faketime=3:FILE: a majority jumps */

#define TTL (200 * MS)

static fb_engine_config base_cfg(void)
{
	return fb_test_lease_cfg(TTL);
}

/* The Redlock URL over the three nodes, with a query ("" for none). */
static const char *url_with(const char *query)
{
	static char buf[800];
	snprintf(buf, sizeof buf, "redlock://%s%s", nodes, query);
	return buf;
}

static fb_acquire acq(void *c, uint32_t key, fb_lease *l)
{
	return fb_test_acquire(L, c, key, l);
}

/* An acquire that must win: one whose round took longer than the engine's
 * 10 ms slack is withdrawn as it should be (a loaded machine), and tried
 * again, 10 times at most. */
static fb_acquire acq_winning(void *c, uint32_t key, fb_lease *l)
{
	fb_acquire got = FB_HELD;
	for (int i = 0; i < 10 && got == FB_HELD; i++)
		got = acq(c, key, l);
	return got;
}

/* A command on node i, from the test's own connection; the reply freed. */
static void on_node(int i, const char *fmt, ...)
{
	redisContext *c = redisConnect("127.0.0.1", node[i].port);
	check(c && !c->err, "connect to node %d", i + 1);
	va_list ap;
	va_start(ap, fmt);
	redisReply *r = redisvCommand(c, fmt, ap);
	va_end(ap);
	check(r && r->type != REDIS_REPLY_ERROR, "node %d: %s", i + 1, fmt);
	freeReplyObject(r);
	redisFree(c);
}

static void test_bad_urls_and_configurations_are_einval_naming_the_url(void **state)
{
	(void)state;
	char two[400], four[900], cas[800];
	snprintf(two, sizeof two, "redlock://127.0.0.1:%d,127.0.0.1:%d", node[0].port,
	         node[1].port);
	snprintf(four, sizeof four, "%s?faketime=4:/tmp/x", url_with(""));
	snprintf(cas, sizeof cas, "redlock://bob:s3cret@%s?fence=cas", nodes);
	const char *bad[] = {"redlock://",
	                     two,
	                     four,
	                     cas,
	                     "redlock://s3cret@h:1,h:2,h:3/x",
	                     "redlock://h:1,h:2,h:3?faketime=x"};
	fb_engine_config cfg = base_cfg();
	cfg.modes = 1u << FB_UNFENCED;
	fb_test_bad_lease_urls(L, &cfg, bad, sizeof bad / sizeof bad[0]);
	fb_engine_config fenced = base_cfg();
	fb_test_lease_refused(L, &fenced, url_with(""), "Redlock mints no fence");
	fb_test_lease_refused(L, &fenced, url_with("?fence=none"), "?fence=incr");
	fb_engine_config tiny = base_cfg();
	tiny.ttl_ns = 10 * MS;
	fb_test_lease_refused(L, &tiny, url_with("?fence=incr"), "drift allowance");
}

static void test_a_node_down_at_the_start_is_esys_naming_it(void **state)
{
	(void)state;
	fb_engine_config cfg = base_cfg();
	char url[400];
	snprintf(url, sizeof url, "redlock://127.0.0.1:%d,127.0.0.1:1,127.0.0.1:%d?fence=incr",
	         node[0].port, node[2].port);
	void *e = NULL;
	char err[640] = "";
	check_eq(L->open(&cfg, url, &e, err, sizeof err), FB_ESYS, "node 2 is down");
	check(strstr(err, "node 2 (127.0.0.1:1)") && strstr(err, "refused"),
	      "the message names the node and why: %s", err);
}

/* The contract, with both ways of getting a number: INCR's fences and
 * none's labels both grow. */
static void test_the_lease_contract_with_incr_and_with_none(void **state)
{
	(void)state;
	fb_engine_config cfg = base_cfg();
	void *e = fb_test_lease_open(L, &cfg, url_with("?fence=incr"), true);
	fb_test_lease_contract(L, e, false);
	char v[64];
	L->version(e, v, sizeof v);
	check(strstr(v, "7.") && strstr(v, "3 nodes"), "version: %s", v);
	L->close(e);
	cfg.modes = 1u << FB_UNFENCED;
	e = fb_test_lease_open(L, &cfg, url_with(""), true);
	fb_test_lease_contract(L, e, false);
	L->close(e);
}

/* Issue 27, item 3: ?fence=incr's counter across 2^32. Prepared one below
 * --first-fence (2^32 - 2), the INCR's fences run 2^32 - 1, 2^32, 2^32 + 1
 * exactly: nothing on the way (the reply's parse, fb_lease, the engine's
 * own bound) keeps 32 bits; and the counter itself reads 2^32 + 1 after. */
static void test_incr_fences_cross_2_to_the_32(void **state)
{
	(void)state;
	const uint64_t two32 = UINT64_C(1) << 32;
	fb_engine_config cfg = base_cfg();
	cfg.keys = 1;
	cfg.fence = FB_FENCE_GLOBAL;
	cfg.first_fence = two32 - 1;
	void *e = fb_test_lease_open(L, &cfg, url_with("?fence=incr"), true);
	void *a = fb_test_lease_conn(L, e, 1);
	for (uint64_t want = two32 - 1; want <= two32 + 1; want++) {
		fb_lease l;
		check_eq(acq_winning(a, 0, &l), FB_ACQUIRED, "acquired");
		check_eq(l.fence, want, "the INCR's fence, past 32 bits");
		check_eq(L->release(a, 0, &l, NULL), FB_IO_OK, "released");
	}
	redisContext *c = redisConnect("127.0.0.1", node[0].port);
	redisReply *r = c ? redisCommand(c, "GET fb:redlock:fence") : NULL;
	check(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "4294967297") == 0,
	      "the counter on node 1 reads 2^32 + 1: %s", r && r->str ? r->str : "(none)");
	freeReplyObject(r);
	redisFree(c);
	L->disconnect(a);
	L->close(e);
}

/* A majority is enough: with a node's key taken by someone else, a lock
 * on the two others holds; with two taken, it does not, and what it set
 * on the third is deleted again. */
static void test_a_majority_holds_and_a_minority_is_undone(void **state)
{
	(void)state;
	fb_engine_config cfg = base_cfg();
	void *e = fb_test_lease_open(L, &cfg, url_with("?fence=incr"), true);
	void *a = fb_test_lease_conn(L, e, 1);
	fb_lease la;
	on_node(0, "SET fb:redlock:lock:0 stranger PX 10000");
	check_eq(acq_winning(a, 0, &la), FB_ACQUIRED, "nodes 2 and 3 are a majority");
	check_eq(L->is_held(a, 0, &la), FB_IO_OK, "held on a majority");
	check_eq(L->release(a, 0, &la, NULL), FB_IO_OK, "released from the majority");
	on_node(1, "SET fb:redlock:lock:0 stranger PX 10000");
	check_eq(acq(a, 0, &la), FB_HELD, "nodes 1 and 2 taken: no majority");
	redisContext *c = redisConnect("127.0.0.1", node[2].port);
	redisReply *r = redisCommand(c, "EXISTS fb:redlock:lock:0");
	check(r && r->type == REDIS_REPLY_INTEGER && r->integer == 0,
	      "the lock set on node 3 was deleted again");
	freeReplyObject(r);
	redisFree(c);
	on_node(0, "DEL fb:redlock:lock:0");
	on_node(1, "DEL fb:redlock:lock:0");
	L->disconnect(a);
	L->close(e);
}

/* Nodes that die: a minority is survived (the lock is a majority of the
 * others), a majority is no answer, naming the nodes and why. */
static void test_a_dead_minority_is_survived_and_a_dead_majority_is_an_error(void **state)
{
	(void)state;
	fb_server own[3];
	for (int i = 0; i < 3; i++)
		check_eq(fb_server_start(FB_SERVER_REDIS, &own[i]), 1, own[i].why);
	char url[400];
	snprintf(url, sizeof url, "redlock://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d?fence=incr",
	         own[0].port, own[1].port, own[2].port);
	fb_engine_config cfg = base_cfg();
	cfg.timeout_ns = 1000 * MS;
	void *e = fb_test_lease_open(L, &cfg, url, true);
	void *a = fb_test_lease_conn(L, e, 1);
	fb_lease la;
	fb_server_kill(&own[2]);
	check_eq(acq_winning(a, 0, &la), FB_ACQUIRED, "two of three nodes are a majority");
	check_eq(L->release(a, 0, &la, NULL), FB_IO_OK, "released from both");
	fb_server_kill(&own[1]);
	check_eq(acq(a, 0, &la), FB_ACQ_ERROR, "one node is not");
	check(strstr(L->error(a), "1 of 3 nodes answered, 2 needed") &&
	              strstr(L->error(a), "node 2 (127.0.0.1:"),
	      "the error says how many answered and which did not: %s", L->error(a));
	L->disconnect(a);
	fb_server_kill(&own[0]);
	L->close(e);
	for (int i = 0; i < 3; i++)
		fb_server_stop(&own[i]);
}

/* ?fence=incr's trap, by hand: A's SETs win, then, in the gap before its
 * INCR, A's keys expire and B takes the lock and mints; A mints after:
 * the older lock carries the newer fence. */
static struct {
	void *b;
	int calls;
	fb_acquire got;
	fb_lease lb;
} trap;

static void trap_between(void *ctx)
{
	(void)ctx;
	if (trap.calls++)
		return; /* B's own acquire passes here too */
	for (int i = 0; i < 3; i++)
		on_node(i, "PEXPIRE fb:redlock:lock:0 0");
	trap.got = acq(trap.b, 0, &trap.lb);
}

static void test_incr_gives_the_older_lock_the_newer_fence(void **state)
{
	(void)state;
	fb_engine_config cfg = base_cfg();
	cfg.between = trap_between;
	void *e = fb_test_lease_open(L, &cfg, url_with("?fence=incr"), true);
	void *a = fb_test_lease_conn(L, e, 1);
	memset(&trap, 0, sizeof trap);
	trap.b = fb_test_lease_conn(L, e, 2);
	fb_lease la;
	check_eq(acq(a, 0, &la), FB_ACQUIRED, "A won the majority before the gap");
	check_eq(trap.got, FB_ACQUIRED, "B took the expired lock inside A's gap");
	check(la.service_at < trap.lb.service_at, "A's lock is the older");
	check(la.fence > trap.lb.fence, "yet carries the newer fence (%llu > %llu)",
	      (unsigned long long)la.fence, (unsigned long long)trap.lb.fence);
	check_eq(L->is_held(trap.b, 0, &trap.lb), FB_IO_OK, "B holds it");
	check_eq(L->is_held(a, 0, &la), FB_IO_REFUSED, "A does not");
	L->disconnect(trap.b);
	L->disconnect(a);
	L->close(e);
}

/*
 * Kleppmann's scenario, step by step: A holds a bare majority, nodes 2
 * and 3 (node 1 was busy). Node 3's clock jumps forward, its key expires
 * early, node 1 frees up, and B wins nodes 1 and 3: a majority, while A's
 * validity has not run out. Two holders.
 */
static void test_a_node_clock_jump_gives_a_second_client_a_majority(void **state)
{
	(void)state;
	fb_engine_config cfg = base_cfg();
	cfg.ttl_ns = 10000 * MS; /* nothing expires by itself here */
	cfg.modes = 1u << FB_UNFENCED;
	void *e = fb_test_lease_open(L, &cfg, jumpy, true);
	void *a = fb_test_lease_conn(L, e, 1), *b = fb_test_lease_conn(L, e, 2);
	void *inj = fb_test_lease_conn(L, e, 3);
	fb_lease la, lb;
	on_node(0, "SET fb:redlock:lock:0 busy PX 60000");
	check_eq(acq_winning(a, 0, &la), FB_ACQUIRED, "A: nodes 2 and 3");
	check_eq(acq(b, 0, &lb), FB_HELD, "B is refused");
	check_eq(L->node_jump(inj, 0), FB_IO_OK, "node 3 can jump");
	check_eq(L->node_jump(inj, 2 * cfg.ttl_ns), FB_IO_OK, "node 3's clock jumps 20 s");
	on_node(0, "DEL fb:redlock:lock:0");
	check_eq(acq_winning(b, 0, &lb), FB_ACQUIRED, "B wins nodes 1 and 3");
	check(fb_clock_now(fb_clock_monotonic()) < la.expires_at,
	      "while A still believes its lock valid");
	check_eq(L->is_held(b, 0, &lb), FB_IO_OK, "B holds a majority");
	check_eq(L->release(b, 0, &lb, NULL), FB_IO_OK, "B releases");
	check_eq(L->release(a, 0, &la, NULL), FB_IO_REFUSED, "A holds only node 2");
	L->disconnect(inj);
	L->disconnect(a);
	L->disconnect(b);
	L->close(e);
}

static void test_node_jump_without_a_faketime_node_is_refused_saying_how(void **state)
{
	(void)state;
	fb_engine_config cfg = base_cfg();
	cfg.modes = 1u << FB_UNFENCED;
	void *e = fb_test_lease_open(L, &cfg, url_with(""), true);
	void *c = fb_test_lease_conn(L, e, 1);
	check_eq(L->node_jump(c, 0), FB_IO_REFUSED, "no node is set up");
	check(strstr(L->error(c), "libfaketime") && strstr(L->error(c), "?faketime=N:FILE"),
	      "the reason says how: %s", L->error(c));
	L->disconnect(c);
	L->close(e);
}

/* ---- end to end -------------------------------------------------------------- */

/* The acceptance run, with the fence bolted on by INCR and pauses that
 * strike anywhere (a signal: the gap before the INCR is microseconds, but
 * under the sanitizers one has landed there, and the witness rightly
 * failed the run: FB_MINTS_AFTER lets that be the only failure):
 * unfenced corrupted, fenced safe. */
static void test_pauses_past_the_ttl_corrupt_unfenced_only(void **state)
{
	(void)state;
	const char *args[] = {
	        "-t",         "16",      "-d",           "4s",
	        "-k",         "16",      "--on-held",    "skip",
	        "--ttl",      "100ms",   "--pause-rate", "20",
	        "--fault-at", "any",     "--lease",      url_with("?fence=incr"),
	        "--store",    store.url, "--mode",       "fenced,write-fenced,unfenced",
	        NULL};
	fb_test_proc p;
	json_object *doc = fb_test_run_corrupting(&p, args, FB_MINTS_AFTER);
	fb_test_fenced_safe_unfenced_corrupted(doc, p.out, FB_MINTS_AFTER);
	check(strstr(p.out, "lease Redlock 7."), "the report names it:\n%s", p.out);
	json_object_put(doc);
	fb_test_release(&p);
}

/* ... and with no fence at all: the unfenced store alone, corrupted. */
static void test_without_a_fence_only_unfenced_runs_and_it_is_corrupted(void **state)
{
	(void)state;
	const char *args[] = {
	        "-t",         "16",         "-d",      "3s",         "-k",           "16",
	        "--on-held",  "skip",       "--ttl",   "100ms",      "--pause-rate", "20",
	        "--fault-at", "after-read", "--lease", url_with(""), "--store",      store.url,
	        "--mode",     "unfenced",   NULL};
	fb_test_proc p;
	json_object *doc = fb_test_run_doc(&p, args, 0);
	check(fb_test_num(doc, "modes.unfenced.stale_accepted") > 0, "unfenced corrupted:\n%s",
	      p.out);
	json_object_put(doc);
	fb_test_release(&p);
	const char *all[] = {"-t",    "2",     "-d",      "1s",         "-q",
	                     "--ttl", "100ms", "--lease", url_with(""), NULL};
	check_eq(fb_test_run(&p, all), 2, "the fenced disciplines are refused: exit 2");
	check(strstr(p.err, "--lease") && strstr(p.err, "Redlock mints no fence"), "why:\n%s",
	      p.err);
	fb_test_release(&p);
}

/* Pauses aimed between the majority and the INCR: the witness sees older
 * locks with newer fences, and the run fails. */
static void test_pauses_between_the_two_steps_are_caught_by_the_witness(void **state)
{
	(void)state;
	const char *args[] = {"-t",           "16",     "-d",         "3s",
	                      "--ttl",        "30ms",   "--fault-at", "after-read",
	                      "--pause-rate", "40",     "--lease",    url_with("?fence=incr"),
	                      "--mode",       "fenced", NULL};
	fb_test_proc p;
	json_object *doc = fb_test_run_doc(&p, args, 1);
	check(fb_test_num(doc, "run.lease_violations.out_of_order_fences") > 0,
	      "the witness counts fences out of acquisition order:\n%s", p.out);
	check(strstr(p.out, "FAIL !!!"), "the verdict fails:\n%s", p.out);
	json_object_put(doc);
	fb_test_release(&p);
}

/*
 * Node clock jumps while holders work: a second client wins a majority
 * while the first still holds; the witness sees two live holders. Aimed,
 * not hoped for: two of the three nodes, a majority, jump in turns, each
 * by twice the TTL (far past the drift allowance: every key on it expires
 * at once), so a holder whose 20 ms of work spans a jump of each loses
 * both, and one of the 15 others wins them. At 50 jumps/s that is several
 * tenures a second. A run that nonetheless saw no overlap (the scheduler
 * can starve the injector) is run again, 3 runs at most: the test fails
 * only if none of them shows one.
 */
static void test_node_clock_jumps_give_two_holders_and_the_witness_sees_them(void **state)
{
	(void)state;
	const char *args[] = {"-t",
	                      "16",
	                      "-d",
	                      "3s",
	                      "-k",
	                      "1",
	                      "--ttl",
	                      "100ms",
	                      "--work",
	                      "20ms",
	                      "--faults",
	                      "node-jump",
	                      "--node-jump-rate",
	                      "50",
	                      "--skew",
	                      "200ms",
	                      "--lease",
	                      jumpy2,
	                      "--store",
	                      store.url,
	                      "--mode",
	                      "unfenced",
	                      NULL};
	fb_test_proc p;
	json_object *doc = NULL;
	int64_t overlaps = 0;
	for (int run = 1; run <= 3 && !overlaps; run++) {
		if (doc) {
			fprintf(stderr, "run %d of 3: no overlap seen, again\n", run - 1);
			json_object_put(doc);
			fb_test_release(&p);
		}
		doc = fb_test_run_doc_any(&p, args);
		check(doc && (p.code == 0 || p.code == 1),
		      "exit %d: a run with a verdict exits 0 or 1\nstdout:\n%s\nstderr:\n%s",
		      p.code, p.out, p.err);
		overlaps = fb_test_num(doc, "run.lease_violations.overlapping_leases");
	}
	check(overlaps > 0, "two live holders seen in one of 3 runs; the last:\n%s", p.out);
	check_eq(p.code, 1, "a run with two live holders fails");
	check(fb_test_num(doc, "run.faults.node_jump.taken") > 0, "jumps taken:\n%s", p.out);
	check(strstr(p.out, "node-jump"), "the fault table has its row:\n%s", p.out);
	json_object_put(doc);
	fb_test_release(&p);
	/* the jumps were the run's: the nodes' clocks are back where they were */
	for (int i = 1; i < 3; i++) {
		FILE *f = fopen(node[i].faketime, "r");
		char line[64] = "";
		check(f && fgets(line, sizeof line, f), "node %d's offset file reads", i + 1);
		fclose(f);
		check(strtod(line, NULL) == 0, "node %d's offset is back at 0 after the run: %s",
		      i + 1, line);
	}
	/* the least TTL Redlock takes, as the README says it */
	const char *shortttl[] = {"-t",      "2",    "-d",     "1s",       "-q",
	                          "--lease", jumpy2, "--mode", "unfenced", NULL};
	check_eq(fb_test_run(&p, shortttl), 2, "the default 10 ms TTL is below Redlock's least");
	check(strstr(p.err, "13 ms at least"), "the least TTL, named: %s", p.err);
	fb_test_release(&p);
	const char *plain[] = {"-t",         "2",      "-d",       "1s",        "-q",
	                       "--ttl",      "100ms",  "--faults", "node-jump", "--lease",
	                       url_with(""), "--mode", "unfenced", NULL};
	check_eq(fb_test_run(&p, plain), 0, "without a faketime node the run goes on");
	check(strstr(p.err, "node-jump skipped") && strstr(p.err, "libfaketime"),
	      "and says why:\n%s", p.err);
	fb_test_release(&p);
}

/*
 * The witness judges Redlock by its own documented bound (redis.io's drift
 * allowance: 1% of the TTL and 2 ms, 3 ms at 100 ms), on real nodes whose
 * clocks jump. A holder is told its lock is valid until its send + TTL -
 * 3 ms; a node whose clock jumped J forward frees the key J early, so a
 * second client's reply comes no sooner than the holder's send + TTL - J.
 * Jumps that add up to less than the allowance inside one tenure never
 * make two live holders, and the witness must not say they did; jumps
 * above it do, and it must. Holders work 150 ms on a 100 ms lease, so
 * each still holds (and has not released) when its lease ends: every
 * early expiry is a chance.
 *
 * Small: 0.5 ms a jump, two nodes in turns, 20 a second at most (each
 * waits up to 50 ms for its aim): one node would need 7 jumps inside one
 * 100 ms tenure, both nodes of a majority at once, to pass 3 ms; a run
 * sees about 60 jumps. Large: 8 ms a jump (5 ms past the allowance), the
 * same rate: a tenure that sees a jump on each of nodes 2 and 3 is lost
 * 8 ms early on a majority. Three runs at most: the scheduler can keep
 * every waiter off a core at the very moment; the small run is judged on
 * every one of its runs.
 */
static void test_node_jumps_are_judged_on_the_drift_allowance(void **state)
{
	(void)state;
	const char *small[] = {"-t",     "16",    "-d",       "3s",        "-k",
	                       "1",      "--ttl", "100ms",    "--work",    "150ms",
	                       "--faults", "node-jump", "--node-jump-rate", "20", "--skew",
	                       "500us",  "--lease", jumpy2,   "--store",   store.url,
	                       "--mode", "unfenced", NULL};
	fb_test_proc p;
	json_object *doc = fb_test_run_doc_any(&p, small);
	check(doc && (p.code == 0 || p.code == 1),
	      "exit %d: a run with a verdict exits 0 or 1\nstdout:\n%s\nstderr:\n%s", p.code,
	      p.out, p.err);
	int64_t jumps = fb_test_num(doc, "run.faults.node_jump.taken");
	check(jumps >= 10, "jumps taken (%lld): the run had its chances:\n%s", (long long)jumps,
	      p.out);
	int64_t small_overlaps = fb_test_num(doc, "run.lease_violations.overlapping_leases");
	check(small_overlaps == 0,
	      "0.5 ms jumps stay inside the 3 ms allowance: no two live holders (%lld):\n%s",
	      (long long)small_overlaps, p.out);
	check(!strstr(p.out, "lease: VIOLATED"), "the lease is not blamed:\n%s", p.out);
	json_object_put(doc);
	fb_test_release(&p);

	const char *large[] = {"-t",     "16",    "-d",       "3s",        "-k",
	                       "1",      "--ttl", "100ms",    "--work",    "150ms",
	                       "--faults", "node-jump", "--node-jump-rate", "20", "--skew",
	                       "8ms",    "--lease", jumpy2,   "--store",   store.url,
	                       "--mode", "unfenced", NULL};
	int64_t overlaps = 0;
	doc = NULL;
	for (int run = 1; run <= 3 && !overlaps; run++) {
		if (doc) {
			fprintf(stderr, "run %d of 3: no overlap seen, again\n", run - 1);
			json_object_put(doc);
			fb_test_release(&p);
		}
		doc = fb_test_run_doc_any(&p, large);
		check(doc && (p.code == 0 || p.code == 1),
		      "exit %d: a run with a verdict exits 0 or 1\nstdout:\n%s\nstderr:\n%s",
		      p.code, p.out, p.err);
		overlaps = fb_test_num(doc, "run.lease_violations.overlapping_leases");
	}
	check(overlaps > 0, "8 ms jumps pass the allowance: two live holders in one of 3 runs:\n%s",
	      p.out);
	check_eq(p.code, 1, "and the run fails");
	json_object_put(doc);
	fb_test_release(&p);
}

static void test_two_processes_share_the_nodes(void **state)
{
	(void)state;
	/* pauses anywhere: the INCR's gap is the other test's, and one that
	 * lands there by chance (CI's sanitizer run, once) fails its process
	 * rightly, out of acquisition order, which FB_MINTS_AFTER allows */
	const char *common[] = {"-t",         "4",     "-d",    "2s",           "-k",
	                        "4",          "--ttl", "100ms", "--pause-rate", "10",
	                        "--fault-at", "any",   NULL};
	fb_test_shared_run(url_with("?fence=incr"), store.url, common, FB_MINTS_AFTER);
}

static void test_unreachable_nodes_are_exit_3_with_the_password_hidden(void **state)
{
	(void)state;
	fb_test_proc p;
	const char *args[] = {"-t",
	                      "2",
	                      "-d",
	                      "1s",
	                      "-q",
	                      "--ttl",
	                      "100ms",
	                      "--mode",
	                      "unfenced",
	                      "--lease",
	                      "redlock://:hunter2@127.0.0.1:1,127.0.0.1:2,127.0.0.1:3",
	                      NULL};
	check_eq(fb_test_run(&p, args), 3, "exit code");
	check(strstr(p.err, "127.0.0.1:1") && !strstr(p.err, "hunter2") && strstr(p.err, "***"),
	      "names it, password hidden:\n%s", p.err);
	fb_test_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_bad_urls_and_configurations_are_einval_naming_the_url),
	        cmocka_unit_test(test_a_node_down_at_the_start_is_esys_naming_it),
	        cmocka_unit_test(test_the_lease_contract_with_incr_and_with_none),
	        cmocka_unit_test(test_incr_fences_cross_2_to_the_32),
	        cmocka_unit_test(test_a_majority_holds_and_a_minority_is_undone),
	        cmocka_unit_test(test_a_dead_minority_is_survived_and_a_dead_majority_is_an_error),
	        cmocka_unit_test(test_incr_gives_the_older_lock_the_newer_fence),
	        cmocka_unit_test(test_a_node_clock_jump_gives_a_second_client_a_majority),
	        cmocka_unit_test(test_node_jump_without_a_faketime_node_is_refused_saying_how),
	        cmocka_unit_test(test_pauses_past_the_ttl_corrupt_unfenced_only),
	        cmocka_unit_test(test_without_a_fence_only_unfenced_runs_and_it_is_corrupted),
	        cmocka_unit_test(test_pauses_between_the_two_steps_are_caught_by_the_witness),
	        cmocka_unit_test(test_node_clock_jumps_give_two_holders_and_the_witness_sees_them),
	        cmocka_unit_test(test_node_jumps_are_judged_on_the_drift_allowance),
	        cmocka_unit_test(test_two_processes_share_the_nodes),
	        cmocka_unit_test(test_unreachable_nodes_are_exit_3_with_the_password_hidden),
	};
	const size_t n = sizeof tests / sizeof tests[0];
	fb_server_kind kinds[4] = {FB_SERVER_REDIS, FB_SERVER_REDIS_FAKETIME,
	                           FB_SERVER_REDIS_FAKETIME, FB_SERVER_REDIS};
	fb_server *all[4] = {&node[0], &node[1], &node[2], &store};
	if (!fb_servers_installed("Redlock engine tests", kinds, 4, n))
		return 0;
	for (int i = 0; i < 4; i++) {
		if (fb_server_start(kinds[i], all[i]) == 1)
			continue;
		for (int j = 0; j < i; j++)
			fb_server_stop(all[j]);
		fprintf(stderr, "cannot start redis-server: %s\n", all[i]->why);
		return 1;
	}
	snprintf(nodes, sizeof nodes, "127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", node[0].port,
	         node[1].port, node[2].port);
	snprintf(jumpy, sizeof jumpy, "redlock://%s?faketime=3:%s", nodes, node[2].faketime);
	snprintf(jumpy2, sizeof jumpy2, "redlock://%s?faketime=2:%s&faketime=3:%s", nodes,
	         node[1].faketime, node[2].faketime);
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	for (int i = 0; i < 4; i++)
		fb_server_stop(all[i]);
	return failed;
}
