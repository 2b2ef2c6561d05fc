/*
 * `fencebench adapter-test --lease exec:COMMAND`: the conformance test of a
 * lease adapter, through the lease engine (backends/exec_lease.c) as a run
 * drives it. Each contract opens its own session (a reset, fencebench's
 * connection, and OWNERS owners, each its own adapter process, as the
 * workers of a run) and judges one promise of a lease service. Time is
 * the adapter's to keep: a contract that needs a lease live or expired
 * waits for it on fencebench's clock with a margin, and one whose calls
 * came back too late to tell says n/a, never FAIL.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "adapter_test_int.h"
#include "clock.h"

static const fb_lease_ops *const L = &fb_exec_lease_ops;

/* The TTL of the contracts that need a lease to stay live, and of those
 * that need it to expire, and how far past an expiry they wait. */
#define LIVE_TTL_NS  (UINT64_C(5000) * 1000000)
#define SHORT_TTL_NS (UINT64_C(300) * 1000000)
#define MARGIN_NS    (UINT64_C(100) * 1000000)
/* renew's: a quarter of it is the window in which the renewed lease must
 * answer held, past the first TTL */
#define RENEW_TTL_NS (UINT64_C(1000) * 1000000)
/* The owners of a contract, and the race's rounds at most (each round is
 * a few calls per process). */
#define OWNERS          3
#define RACE_ROUNDS_MAX 100

static uint64_t now(void)
{
	return fb_clock_now(fb_clock_monotonic());
}

/* Until the monotonic clock reads at least `until`. */
static void wait_until(uint64_t until)
{
	for (uint64_t t; (t = now()) < until;) {
		uint64_t d = until - t;
		struct timespec ts = {(time_t)(d / 1000000000), (long)(d % 1000000000)};
		nanosleep(&ts, NULL);
	}
}

static fb_engine_config config_of(const at *t, uint64_t ttl_ns, uint32_t owners)
{
	fb_engine_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.keys = t->o->keys;
	cfg.ttl_ns = ttl_ns;
	cfg.first_fence = 1;
	cfg.fence = FB_FENCE_GLOBAL;
	cfg.clock = fb_clock_monotonic();
	cfg.threads = owners;
	cfg.timeout_ns = t->o->timeout_ns;
	cfg.adapter_timeout_ns = t->o->timeout_ns;
	cfg.lease_undated = true; /* every acquire as the adapter answered it */
	return cfg;
}

static void session_close(at *t, uint32_t owners)
{
	for (uint32_t w = 0; w <= owners; w++)
		if (t->owners[w])
			L->disconnect(t->owners[w]);
	if (t->eng)
		L->close(t->eng);
	memset(t->owners, 0, sizeof t->owners);
	t->eng = NULL;
}

/* A session: the engine opened with ttl_ns, reset, owners 1..owners
 * connected (and fencebench's own, 0). False: the contract failed or the
 * test stops (t->fatal). */
static bool session_open(at *t, uint64_t ttl_ns, uint32_t owners)
{
	fb_engine_config cfg = config_of(t, ttl_ns, owners);
	char err[2600] = "";
	fb_err e = L->open(&cfg, t->o->url, &t->eng, err, sizeof err);
	if (at_setup_failed(t, e, err) ||
	    at_setup_failed(t, L->prepare(t->eng, true, err, sizeof err), err)) {
		session_close(t, owners);
		return false;
	}
	for (uint32_t w = 0; w <= owners; w++)
		if (L->connect(t->eng, (uint16_t)w, &t->owners[w], err, sizeof err) != FB_OK) {
			t->owners[w] = NULL;
			at_fatal(t, 3, err);
			session_close(t, owners);
			return false;
		}
	return true;
}

/* ---- calls -------------------------------------------------------------------- */

/* Owner w acquires key: *got is the lease when granted, else the holder the
 * adapter named. False: the call failed (logged, judged). */
static bool acq(at *t, uint16_t w, uint32_t key, fb_lease *got, bool *granted)
{
	fb_acquire a = L->acquire(t->owners[w], key, got, NULL);
	*granted = a == FB_ACQUIRED;
	return at_after(t, t->owners[w], a == FB_ACQ_ERROR ? FB_IO_ERROR : FB_IO_OK);
}

typedef fb_io (*owned_op)(void *conn, uint32_t key, const fb_lease *l);

static fb_io renew(void *conn, uint32_t key, const fb_lease *l)
{
	return L->renew(conn, key, l, NULL);
}

static fb_io release(void *conn, uint32_t key, const fb_lease *l)
{
	return L->release(conn, key, l, NULL);
}

/* Owner w's release, renew or is_held of (key, fence): *io its answer. */
static bool own(at *t, uint16_t w, owned_op op, uint32_t key, uint64_t fence, fb_io *io)
{
	fb_lease l = {.fence = fence, .owner = w};
	*io = op(t->owners[w], key, &l);
	return at_after(t, t->owners[w], *io);
}

/* Owner 1's lease of key 0, granted; else the contract is n/a (see live). */
static bool first_lease(at *t, fb_lease *l, uint64_t *sent, uint64_t *back)
{
	bool granted;
	*sent = now();
	if (!acq(t, 1, 0, l, &granted))
		return false;
	*back = now();
	if (!granted)
		at_fail(t, "owner 1's acquire of key 0, free after a reset, was refused");
	return granted;
}

/* ---- the contracts -------------------------------------------------------------- */

/* Every operation once, each reply read by the protocol's rules. */
static void c_shape(at *t)
{
	fb_lease l, held;
	uint64_t s, b;
	fb_io io;
	bool granted;
	if (!first_lease(t, &l, &s, &b) || !acq(t, 2, 0, &held, &granted))
		return;
	if (at_has(t, FB_XOP_IS_HELD) && !own(t, 1, L->is_held, 0, l.fence, &io))
		return;
	if (at_has(t, FB_XOP_RENEW) && !own(t, 1, renew, 0, l.fence, &io))
		return;
	if (at_has(t, FB_XOP_PEEK) && !at_after(t, t->owners[0], L->peek(t->owners[0], 0, &held)))
		return;
	own(t, 1, release, 0, l.fence, &io);
}

/* A live lease is another owner's to wait for: never granted twice. */
static void c_live(at *t)
{
	fb_lease l, other;
	uint64_t s, b;
	bool granted;
	if (!first_lease(t, &l, &s, &b) || !acq(t, 2, 0, &other, &granted))
		return;
	uint64_t back = now();
	if (back >= s + LIVE_TTL_NS)
		return at_na(t, "the calls took longer than the lease's TTL: too slow to judge");
	if (granted)
		at_fail(t,
		        "owner 2 was granted key 0 (fence %llu) %.0f ms after owner 1's lease "
		        "(fence %llu, TTL %llu ms) was: two holders at once (a takeover that does "
		        "not check the expiry)",
		        (unsigned long long)other.fence, (double)(back - s) / 1e6,
		        (unsigned long long)l.fence, (unsigned long long)(LIVE_TTL_NS / 1000000));
}

/* Release, renew and is_held are by (owner, fence): another owner's, or a
 * wrong fence, change nothing. */
static void c_owner(at *t)
{
	fb_lease l;
	uint64_t s, b;
	fb_io io;
	if (!first_lease(t, &l, &s, &b))
		return;
	if (!own(t, 2, release, 0, l.fence, &io))
		return;
	if (io == FB_IO_OK)
		return at_fail(t,
		               "owner 2's release of owner 1's live lease (fence %llu) was "
		               "accepted: a late holder's release frees its successor's lease "
		               "(a release without an owner check)",
		               (unsigned long long)l.fence);
	if (!own(t, 1, release, 0, l.fence + 1000, &io))
		return;
	if (io == FB_IO_OK)
		return at_fail(t,
		               "owner 1's release with fence %llu, not its lease's (%llu), was "
		               "accepted: a release must name the lease by its fence",
		               (unsigned long long)(l.fence + 1000), (unsigned long long)l.fence);
	if (at_has(t, FB_XOP_RENEW)) {
		if (!own(t, 2, renew, 0, l.fence, &io))
			return;
		if (io == FB_IO_OK)
			return at_fail(t,
			               "owner 2's renew of owner 1's lease (fence %llu) was "
			               "accepted",
			               (unsigned long long)l.fence);
	}
	if (!at_has(t, FB_XOP_IS_HELD))
		return;
	if (!own(t, 2, L->is_held, 0, l.fence, &io))
		return;
	if (io == FB_IO_OK)
		return at_fail(t, "owner 2's is_held of owner 1's lease (fence %llu) said held",
		               (unsigned long long)l.fence);
	if (!own(t, 1, L->is_held, 0, l.fence, &io))
		return;
	if (now() >= s + LIVE_TTL_NS)
		return at_na(t, "the calls took longer than the lease's TTL: too slow to judge");
	if (io != FB_IO_OK)
		at_fail(t,
		        "owner 1's live lease (fence %llu) is no longer held after the other "
		        "owner's calls: they changed it",
		        (unsigned long long)l.fence);
}

/* What the adapter says a granted acquire replaced, if it says: the key's
 * last lease's fence. */
static void replaced_is(at *t, const fb_lease *got, uint64_t last)
{
	if (got->replaced && got->replaced != last)
		at_fail(t,
		        "the acquire that minted fence %llu says it replaced fence %llu, but the "
		        "key's last lease carried %llu",
		        (unsigned long long)got->fence, (unsigned long long)got->replaced,
		        (unsigned long long)last);
}

/* A released key is free at once, and its next lease's fence is higher. */
static void c_release(at *t)
{
	fb_lease l, next;
	uint64_t s, b;
	fb_io io;
	bool granted;
	if (!first_lease(t, &l, &s, &b) || !own(t, 1, release, 0, l.fence, &io))
		return;
	if (io != FB_IO_OK)
		return at_fail(t,
		               "owner 1's release of its own live lease (fence %llu) was refused",
		               (unsigned long long)l.fence);
	if (at_has(t, FB_XOP_IS_HELD)) {
		if (!own(t, 1, L->is_held, 0, l.fence, &io))
			return;
		if (io == FB_IO_OK)
			return at_fail(t, "owner 1's released lease (fence %llu) is still held",
			               (unsigned long long)l.fence);
	}
	if (!acq(t, 2, 0, &next, &granted))
		return;
	if (!granted)
		return at_fail(t, "owner 2's acquire of key 0, released by owner 1, was refused");
	if (next.fence <= l.fence)
		return at_fail(
		        t,
		        "owner 2's lease of key 0 carries fence %llu, not above the released "
		        "lease's %llu: a stale holder's writes would pass as its",
		        (unsigned long long)next.fence, (unsigned long long)l.fence);
	replaced_is(t, &next, l.fence);
}

/* An expired lease is taken over, with a new, higher fence, and its late
 * holder's calls change nothing. */
static void c_expiry(at *t)
{
	fb_lease l, next;
	uint64_t s, b;
	fb_io io;
	bool granted;
	if (!first_lease(t, &l, &s, &b))
		return;
	wait_until(b + SHORT_TTL_NS + MARGIN_NS); /* its TTL counts from before the reply */
	if (at_has(t, FB_XOP_IS_HELD)) {
		if (!own(t, 1, L->is_held, 0, l.fence, &io))
			return;
		if (io == FB_IO_OK)
			return at_fail(t,
			               "owner 1's lease (fence %llu) is still held %llu ms after "
			               "its TTL of %llu ms ended",
			               (unsigned long long)l.fence,
			               (unsigned long long)((now() - b - SHORT_TTL_NS) / 1000000),
			               (unsigned long long)(SHORT_TTL_NS / 1000000));
	}
	if (!acq(t, 2, 0, &next, &granted))
		return;
	if (!granted)
		return at_fail(t,
		               "owner 2's acquire of key 0 was refused %llu ms after owner 1's "
		               "lease of %llu ms had expired",
		               (unsigned long long)((now() - b - SHORT_TTL_NS) / 1000000),
		               (unsigned long long)(SHORT_TTL_NS / 1000000));
	if (next.fence == l.fence)
		return at_fail(t,
		               "owner 2 took the expired lease over with its fence, %llu: a "
		               "fence handed out twice, so the late holder's writes pass as "
		               "the new one's (no new fence minted on takeover)",
		               (unsigned long long)l.fence);
	if (next.fence < l.fence)
		return at_fail(t,
		               "owner 2's takeover minted fence %llu, below the expired "
		               "lease's %llu",
		               (unsigned long long)next.fence, (unsigned long long)l.fence);
	replaced_is(t, &next, l.fence);
	if (t->v != V_PASS || !own(t, 1, release, 0, l.fence, &io))
		return;
	if (io == FB_IO_OK)
		return at_fail(t,
		               "owner 1's late release of its expired lease (fence %llu) was "
		               "accepted after owner 2 took the key over",
		               (unsigned long long)l.fence);
	if (!at_has(t, FB_XOP_IS_HELD) || !own(t, 2, L->is_held, 0, next.fence, &io))
		return;
	if (now() >= b + SHORT_TTL_NS + MARGIN_NS + SHORT_TTL_NS)
		return at_na(t,
		             "the calls took longer than the new lease's TTL: too slow to judge");
	if (io != FB_IO_OK)
		at_fail(t,
		        "owner 2's live lease (fence %llu) is not held after owner 1's late "
		        "release: the late holder's release freed it",
		        (unsigned long long)next.fence);
}

/* A renew of a live lease extends it by a TTL from the renew. */
static void c_renew(at *t)
{
	fb_lease l;
	uint64_t s, b;
	fb_io io;
	if (!at_has(t, FB_XOP_RENEW) || !at_has(t, FB_XOP_IS_HELD))
		return at_na(t, "the adapter offers no renew or no is_held");
	if (!first_lease(t, &l, &s, &b))
		return;
	wait_until(s + RENEW_TTL_NS / 2);
	uint64_t rs = now();
	if (!own(t, 1, renew, 0, l.fence, &io))
		return;
	if (now() >= s + RENEW_TTL_NS)
		return at_na(t, "the renew came back after the lease's TTL: too slow to judge");
	if (io != FB_IO_OK)
		return at_fail(t, "owner 1's renew of its live lease (fence %llu) was refused",
		               (unsigned long long)l.fence);
	wait_until(b + RENEW_TTL_NS + RENEW_TTL_NS / 4); /* past the first TTL */
	if (!own(t, 1, L->is_held, 0, l.fence, &io))
		return;
	if (now() >= rs + RENEW_TTL_NS)
		return at_na(t, "the is_held came back after the renewed TTL: too slow to judge");
	if (io != FB_IO_OK)
		at_fail(t,
		        "owner 1's lease (fence %llu), renewed %llu ms into its TTL of %llu ms, "
		        "was not held after its first TTL: renew did not extend it",
		        (unsigned long long)l.fence, (unsigned long long)((rs - s) / 1000000),
		        (unsigned long long)(RENEW_TTL_NS / 1000000));
}

/* ---- the race ------------------------------------------------------------------- */

typedef struct lrace {
	at *t;
	uint32_t key, procs, rounds;
	fb_lease *got; /* [round * procs + process]: fence 0 when not granted */
	pthread_barrier_t bar;
	_Atomic bool stop;
	atomic_flag claimed;
	char err[2600];
	bool broke;
} lrace;

typedef struct lracer {
	lrace *ra;
	uint32_t i;
} lracer;

/* One process: each round, acquire at the barrier, release if granted
 * once every process has tried. */
static void *lracer_main(void *p)
{
	lracer *me = p;
	lrace *ra = me->ra;
	void *conn = ra->t->owners[me->i + 1];
	for (uint32_t r = 0; r < ra->rounds; r++) {
		fb_lease *g = &ra->got[(size_t)r * ra->procs + me->i];
		pthread_barrier_wait(&ra->bar);
		fb_acquire a =
		        atomic_load(&ra->stop) ? FB_HELD : L->acquire(conn, ra->key, g, NULL);
		if (a != FB_ACQUIRED)
			g->fence = 0;
		pthread_barrier_wait(&ra->bar);
		if (a == FB_ACQUIRED && L->release(conn, ra->key, g, NULL) == FB_IO_ERROR)
			a = FB_ACQ_ERROR;
		if (a == FB_ACQ_ERROR && !atomic_flag_test_and_set(&ra->claimed)) {
			fb_exec_exchange x;
			fb_exec_last(conn, &x);
			snprintf(ra->err, sizeof ra->err, "%s", L->error(conn));
			ra->broke = x.broke;
			atomic_store(&ra->stop, true);
		}
	}
	return NULL;
}

/* One holder per round, and the fences of the rounds rising. */
static void judge_lrace(at *t, const lrace *ra, unsigned *won)
{
	uint64_t last = 0;
	uint32_t last_round = 0;
	*won = 0;
	for (uint32_t r = 0; r < ra->rounds && t->v == V_PASS; r++) {
		const fb_lease *g = &ra->got[(size_t)r * ra->procs], *first = NULL;
		for (uint32_t i = 0; i < ra->procs; i++) {
			if (!g[i].fence)
				continue;
			if (first)
				return at_fail(
				        t,
				        "round %u: owners %u and %u were both granted key %u "
				        "(fences %llu and %llu), no release between: two holders "
				        "at once",
				        r + 1, (unsigned)first->owner, (unsigned)g[i].owner,
				        ra->key, (unsigned long long)first->fence,
				        (unsigned long long)g[i].fence);
			first = &g[i];
		}
		if (!first)
			continue;
		if (first->fence <= last)
			return at_fail(
			        t,
			        "round %u granted key %u with fence %llu, not above fence %llu "
			        "of round %u, released before it",
			        r + 1, ra->key, (unsigned long long)first->fence,
			        (unsigned long long)last, last_round + 1);
		last = first->fence;
		last_round = r;
		++*won;
	}
	if (t->v == V_PASS && !*won)
		at_fail(t, "no round granted the key to anyone");
}

static void c_race(at *t, uint32_t procs, uint32_t rounds)
{
	lrace ra = {.t = t, .key = t->o->keys - 1, .procs = procs, .rounds = rounds};
	atomic_init(&ra.stop, false);
	atomic_flag_clear(&ra.claimed);
	ra.got = calloc((size_t)procs * rounds, sizeof *ra.got);
	pthread_t *th = calloc(procs, sizeof *th);
	lracer *args = calloc(procs, sizeof *args);
	if (!ra.got || !th || !args || pthread_barrier_init(&ra.bar, NULL, procs) != 0) {
		at_fatal(t, 3, "out of memory for the race");
		goto out;
	}
	for (uint32_t i = 0; i < procs; i++)
		args[i] = (lracer){&ra, i};
	at_threads(procs, th, lracer_main, args, sizeof *args);
	pthread_barrier_destroy(&ra.bar);
	unsigned won = 0;
	if (!at_race_stopped(t, atomic_load(&ra.stop), ra.broke, ra.err))
		judge_lrace(t, &ra, &won);
	if (t->v == V_PASS)
		snprintf(
		        t->why, sizeof t->why,
		        "%u rounds of %u acquires, %u granted: one holder at a time, fences rising",
		        rounds, procs, won);
out:
	free(args);
	free(th);
	free(ra.got);
}

/* ---- the command ------------------------------------------------------------------ */

typedef struct lcontract {
	const char *name, *says;
	uint64_t ttl_ns;
	void (*run)(at *t);
} lcontract;

static const lcontract contracts[] = {
        {"shape", "replies have the protocol's shape", LIVE_TTL_NS, c_shape},
        {"live", "a live lease is not granted to another owner", LIVE_TTL_NS, c_live},
        {"owner", "release, renew and is_held check the owner and the fence", LIVE_TTL_NS, c_owner},
        {"release", "a released key is free; its next fence is higher", LIVE_TTL_NS, c_release},
        {"expiry", "an expired lease is taken over with a new, higher fence", SHORT_TTL_NS,
         c_expiry},
        {"renew", "renew extends a live lease by a TTL", RENEW_TTL_NS, c_renew},
};

int fb_adapter_test_lease(const at_opts *o)
{
	at t = {.o = o};
	char name[32], version[64];
	fb_engine_config cfg = config_of(&t, LIVE_TTL_NS, 1);
	int rc = at_probe(&t, L->open, L->version, L->close, &cfg, name, sizeof name, version,
	                  sizeof version);
	if (rc)
		return rc;
	uint32_t procs = o->procs > AT_OWNERS ? AT_OWNERS : o->procs;
	uint32_t rounds = o->rounds > RACE_ROUNDS_MAX ? RACE_ROUNDS_MAX : o->rounds;
	char proto[32];
	snprintf(proto, sizeof proto, "lease protocol %d", FB_EXEC_LEASE_PROTOCOL);
	bool named = strcmp(version, proto) != 0; /* else the engine's stand-in */
	printf("fencebench adapter-test --lease %s\nadapter '%s'%s%s%s, %s, %u keys, race: %u "
	       "processes x %u rounds on key %u\n\n",
	       o->url, name, named ? " (" : "", named ? version : "", named ? ")" : "", proto,
	       o->keys, procs, rounds, o->keys - 1);
	fflush(stdout);
	at_tally y = {.t0 = now()};
	size_t n = sizeof contracts / sizeof contracts[0];
	for (size_t i = 0; i <= n && !t.fatal; i++) {
		bool is_race = i == n;
		at_begin(&t);
		if (session_open(&t, is_race ? LIVE_TTL_NS : contracts[i].ttl_ns,
		                 is_race ? procs : OWNERS)) {
			if (is_race)
				c_race(&t, procs, rounds);
			else
				contracts[i].run(&t);
		}
		session_close(&t, AT_OWNERS);
		if (t.fatal)
			break;
		char says[96];
		if (is_race)
			snprintf(says, sizeof says, "%u processes race key %u, %u rounds", procs,
			         o->keys - 1, rounds);
		const char *cname = is_race ? "race" : contracts[i].name;
		at_print(&t, cname, is_race ? says : contracts[i].says);
		at_count(&y, &t, cname);
	}
	return at_finish(&t, &y);
}
