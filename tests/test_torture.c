/*
 * Torture tests of the primitives, locktorture style: two or three threads
 * race one key of a store or one slot of the lease table in tight loops,
 * for a bounded number of iterations (a count, never a time), and an exact
 * oracle, independent of the primitive's own code, judges what they did.
 *
 * The stress run almost never lands in the nanoseconds inside one
 * operation, so an operation split into two atomic steps passes it; here
 * every iteration is such a race. The oracles:
 *
 *   store: the accepted writes, ordered by the version the store gave
 *     each, must be versions 1..n exactly (none twice, none missing), each
 *     replacing the balance the previous one left; in the fenced and
 *     write-fenced disciplines their tokens rise strictly; in fenced a
 *     read-modify-write never loses an update (each write replaced what
 *     its own read served); the store ends at the last write's balance and
 *     fence; and nothing is refused without cause (a refused token is
 *     below, or equal to an accepted, token of an operation that exists).
 *   lease: with a clock that never moves, the lease is a mutex: never two
 *     holders in the critical section, fences rising strictly in the order
 *     the critical sections ran, each acquire replacing exactly the fence
 *     before it, every holder's release accepted and every late release of
 *     an old lease refused.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "lease.h"
#include "store.h"
#include "fbtest.h"

enum {
	STORE_THREADS = 3,
	STORE_ITERS = 18000, /* per thread: accepted writes stay below 2^16 */
	LEASE_THREADS = 6,   /* more threads than cores: preempted mid-acquire */
	LEASE_ITERS = 15000,
	ROUNDS = 6,
	LEASE_ROUNDS = 8,
	INITIAL = 1000000,
};

/* Issue 27: every race's fences cross 2^32 early on, so a fence kept in 32
 * bits anywhere (a cast, a column, a format) breaks the oracle's order. */
#define CROSS_2_32 ((UINT64_C(1) << 32) - 1000)

/* Iterations per thread: the default, or FB_TORTURE_ITERS when smaller (to
 * measure how few a planted split needs to be caught). */
static int iters(int dflt)
{
	const char *e = getenv("FB_TORTURE_ITERS");
	int n = e ? atoi(e) : 0;
	return n > 0 && n < dflt ? n : dflt;
}

/* All threads of a race start at once: each spins until every one is here. */
typedef struct gate {
	_Atomic int ready;
	int n;
} gate;

static void gate_pass(gate *g)
{
	atomic_fetch_add(&g->ready, 1);
	while (atomic_load(&g->ready) < g->n)
		fb_cpu_relax();
}

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
	return *x;
}

/* ---- the store ---------------------------------------------------------- */

typedef enum store_op { OP_RMW, OP_DEBIT } store_op;

/* One operation as the racing thread saw it. */
typedef struct op_log {
	uint64_t token;
	uint16_t version; /* accepted writes */
	bool read, ok;
	int64_t served; /* rmw: the balance its read served */
	int64_t before, after;
} op_log;

typedef struct store_race {
	fb_store *s;
	fb_discipline d;
	store_op op;
	bool stale_tokens; /* some tokens are old ones, repeated or below the newest */
	_Atomic uint64_t next_token;
	gate g;
	op_log *log[STORE_THREADS];
	size_t n[STORE_THREADS];
	uint64_t seed;
} store_race;

/* A fresh token (the next a lease would mint), or with stale_tokens now and
 * then one from a little while ago (a zombie's; possibly one in use). */
static uint64_t draw_token(store_race *r, uint64_t *x)
{
	uint64_t now = atomic_load_explicit(&r->next_token, memory_order_relaxed);
	if (r->stale_tokens && now > 8 && xorshift(x) % 4 == 0)
		return now - xorshift(x) % 8;
	return atomic_fetch_add_explicit(&r->next_token, 1, memory_order_relaxed) + 1;
}

typedef struct racer_arg {
	store_race *r;
	int me;
} racer_arg;

static void *store_racer(void *p)
{
	racer_arg *a = p;
	store_race *r = a->r;
	int me = a->me;
	uint64_t x = r->seed * 0x9e3779b97f4a7c15u + (uint64_t)me + 1;
	op_log *log = r->log[me];
	size_t n = 0;
	fb_store_result memo = {0};
	bool have_memo = false;
	gate_pass(&r->g);
	for (int i = 0, end = iters(STORE_ITERS); i < end; i++) {
		uint64_t t = draw_token(r, &x);
		fb_store_result rd = {0}, wr = {0};
		bool guess = xorshift(&x) & 1; /* the _after variants half the time */
		if (r->op == OP_RMW) {
			bool ok = fb_store_read(r->s, 0, t, &rd);
			log[n++] =
			        (op_log){.token = t, .read = true, .ok = ok, .served = rd.balance};
			if (!ok)
				continue;
			int64_t bal = rd.balance - 1;
			ok = guess ? fb_store_write_after(r->s, 0, bal, t, &rd, &wr)
			           : fb_store_write(r->s, 0, bal, t, &wr);
			log[n++] = (op_log){t,          wr.version, false,     ok,
			                    rd.balance, wr.before,  wr.balance};
		} else {
			bool ok = guess && have_memo
			                  ? fb_store_debit_after(r->s, 0, 1, t, &memo, &wr)
			                  : fb_store_debit(r->s, 0, 1, t, &wr);
			memo = wr;
			have_memo = true;
			log[n++] = (op_log){t, wr.version, false, ok, 0, wr.before, wr.balance};
		}
	}
	r->n[me] = n;
	return NULL;
}

static int by_version(const void *a, const void *b)
{
	const op_log *x = *(op_log *const *)a, *y = *(op_log *const *)b;
	return (x->version > y->version) - (x->version < y->version);
}

/* The oracle for one race: see the comment at the top. */
static void judge_store(store_race *r, const char *what)
{
	size_t total = 0;
	for (int i = 0; i < STORE_THREADS; i++)
		total += r->n[i];
	op_log **acc = malloc(total * sizeof *acc);
	check(acc, "out of memory");
	size_t na = 0;
	uint64_t top_read = 0; /* the highest token a served read registered */
	for (int i = 0; i < STORE_THREADS; i++)
		for (size_t j = 0; j < r->n[i]; j++) {
			op_log *o = &r->log[i][j];
			if (o->ok && !o->read)
				acc[na++] = o;
			if (o->ok && o->read && o->token > top_read)
				top_read = o->token;
		}
	check(na > 0 && na < 65536, "%s: %zu writes accepted (want 1..65535)", what, na);
	qsort(acc, na, sizeof *acc, by_version);
	bool fenced = r->d != FB_UNFENCED;
	int64_t bal = INITIAL, lost = 0;
	uint64_t top = 0;
	for (size_t i = 0; i < na; i++) {
		const op_log *o = acc[i];
		check(o->version == i + 1,
		      "%s: the accepted writes' versions are not 1..%zu: position %zu holds "
		      "version "
		      "%u (a version given twice, or skipped: the check-and-apply is not one "
		      "atomic "
		      "step)",
		      what, na, i + 1, o->version);
		check(o->before == bal,
		      "%s: version %u replaced balance %lld, but version %zu left %lld (two writes "
		      "applied to one state)",
		      what, o->version, (long long)o->before, i, (long long)bal);
		if (fenced)
			check(o->token > top,
			      "%s: version %u accepted token %llu after token %llu had been "
			      "accepted "
			      "(a stale write went in)",
			      what, o->version, (unsigned long long)o->token,
			      (unsigned long long)top);
		if (r->op == OP_RMW && o->served != o->before)
			lost++;
		int64_t want = r->op == OP_RMW ? o->served - 1 : o->before - 1;
		check(o->after == want, "%s: version %u left %lld, its operation computes %lld",
		      what, o->version, (long long)o->after, (long long)want);
		bal = o->after;
		if (o->token > top)
			top = o->token;
	}
	if (r->d == FB_FENCED)
		check(lost == 0,
		      "%s: %lld read-modify-writes replaced a balance other than the one their "
		      "read "
		      "served: updates lost in the fenced store (a read and its registration are "
		      "not "
		      "one step)",
		      what, (long long)lost);
	check(fb_store_balance(r->s, 0) == bal,
	      "%s: the store holds %lld, its last write left %lld", what,
	      (long long)fb_store_balance(r->s, 0), (long long)bal);
	if (fenced)
		check(fb_store_last_fence(r->s, 0) == acc[na - 1]->token,
		      "%s: the store's last fence %llu, the last accepted write's %llu", what,
		      (unsigned long long)fb_store_last_fence(r->s, 0),
		      (unsigned long long)acc[na - 1]->token);
	/* Liveness: nothing refused without cause. A write-fenced store refuses
	 * token t only over an accepted token >= t; a fenced one also over a
	 * served read above t (a read registers its token). */
	uint64_t top_all = top > top_read ? top : top_read;
	for (int i = 0; i < STORE_THREADS; i++)
		for (size_t j = 0; j < r->n[i]; j++) {
			const op_log *o = &r->log[i][j];
			if (o->ok || !fenced)
				continue;
			bool cause = r->d == FB_FENCED
			                     ? (o->read ? top_all > o->token
			                                : top >= o->token || top_read > o->token)
			                     : top >= o->token;
			check(cause,
			      "%s: a %s with token %llu refused, but no accepted write (highest "
			      "%llu) "
			      "nor served read (highest %llu) stood above it: the store refused "
			      "its "
			      "rightful holder",
			      what, o->read ? "read" : "write", (unsigned long long)o->token,
			      (unsigned long long)top, (unsigned long long)top_read);
		}
	check(fb_store_highest(r->s, 0) >= top_all, "%s: the store's highest %llu below %llu seen",
	      what, (unsigned long long)fb_store_highest(r->s, 0), (unsigned long long)top_all);
	free(acc);
}

static void race_store(fb_discipline d, store_op op, bool stale_tokens, int rounds)
{
	for (int round = 0; round < rounds; round++) {
		store_race r = {.d = d,
		                .op = op,
		                .stale_tokens = stale_tokens,
		                .next_token = CROSS_2_32,
		                .g = {.n = STORE_THREADS},
		                .seed = (uint64_t)round + 1};
		check_eq(fb_store_create(d, 1, INITIAL, &r.s), FB_OK, "store");
		racer_arg args[STORE_THREADS];
		pthread_t th[STORE_THREADS];
		for (int i = 0; i < STORE_THREADS; i++) {
			r.log[i] = malloc(2 * STORE_ITERS * sizeof *r.log[i]);
			check(r.log[i], "out of memory");
			args[i] = (racer_arg){&r, i};
		}
		for (int i = 0; i < STORE_THREADS; i++)
			pthread_create(&th[i], NULL, store_racer, &args[i]);
		for (int i = 0; i < STORE_THREADS; i++)
			pthread_join(th[i], NULL);
		char what[128];
		snprintf(what, sizeof what, "%s %s%s, round %d", fb_discipline_name(d),
		         op == OP_RMW ? "read-modify-write" : "debit",
		         stale_tokens ? " with stale tokens" : "", round);
		judge_store(&r, what);
		for (int i = 0; i < STORE_THREADS; i++)
			free(r.log[i]);
		fb_store_destroy(r.s);
	}
}

static void test_fenced_rmw_races_lose_no_update(void **state)
{
	(void)state;
	/* a read and a write racing inside the read's own step: the likeliest
	 * split, and the least likely to be hit, so the most rounds */
	race_store(FB_FENCED, OP_RMW, false, 4 * ROUNDS);
	race_store(FB_FENCED, OP_RMW, true, ROUNDS);
}

static void test_fenced_debit_races_keep_tokens_rising(void **state)
{
	(void)state;
	race_store(FB_FENCED, OP_DEBIT, false, ROUNDS);
	race_store(FB_FENCED, OP_DEBIT, true, ROUNDS);
}

static void test_write_fenced_races_keep_tokens_rising(void **state)
{
	(void)state;
	race_store(FB_WRITE_FENCED, OP_RMW, false, ROUNDS);
	race_store(FB_WRITE_FENCED, OP_RMW, true, ROUNDS);
	race_store(FB_WRITE_FENCED, OP_DEBIT, true, ROUNDS);
}

static void test_unfenced_races_keep_one_chain(void **state)
{
	(void)state;
	race_store(FB_UNFENCED, OP_RMW, true, ROUNDS);
	race_store(FB_UNFENCED, OP_DEBIT, true, ROUNDS);
}

/* ---- the lease table ---------------------------------------------------- */

typedef struct cs_log {
	uint64_t seq, fence, replaced;
} cs_log;

typedef struct lease_race {
	fb_lease_table *t;
	fb_fence_source src;
	gate g;
	_Atomic uint32_t holder; /* who is in the critical section: 0 none */
	_Atomic uint64_t seq;    /* the critical sections' order */
	_Atomic uint32_t ids;
	_Atomic uint64_t violations; /* two in the critical section at once */
	_Atomic uint64_t bad_releases, stale_releases, not_held, held_after;
	cs_log *log[LEASE_THREADS];
} lease_race;

static void *lease_racer(void *p)
{
	lease_race *r = p;
	uint32_t me = atomic_fetch_add(&r->ids, 1) + 1;
	cs_log *log = r->log[me - 1];
	uint64_t x = 0x2545f4914f6cdd1du * me;
	fb_lease_stats st = {0};
	fb_lease mine = {0}, old = {0};
	bool have_old = false;
	gate_pass(&r->g);
	for (int i = 0, end = iters(LEASE_ITERS); i < end; i++) {
		fb_acquire a;
		/* the from-a-guess variant half the time, guessing our last release */
		do {
			a = (xorshift(&x) & 1) && have_old
			            ? fb_lease_acquire_from(r->t, 0, (uint16_t)me,
			                                    &(fb_lease){.fence = old.fence}, &mine,
			                                    &st)
			            : fb_lease_acquire(r->t, 0, (uint16_t)me, &mine, &st);
		} while (a == FB_HELD);
		check_eq(a, FB_ACQUIRED, "acquire");
		uint32_t was = atomic_exchange(&r->holder, me);
		if (was)
			atomic_fetch_add(&r->violations, 1);
		log[i] = (cs_log){atomic_fetch_add(&r->seq, 1), mine.fence, mine.replaced};
		if (!fb_lease_is_held(r->t, 0, (uint16_t)me))
			atomic_fetch_add(&r->not_held, 1);
		if (atomic_exchange(&r->holder, 0) != me)
			atomic_fetch_add(&r->violations, 1);
		bool ok = xorshift(&x) & 1 ? fb_lease_release_lease(r->t, 0, &mine, NULL)
		                           : fb_lease_release(r->t, 0, (uint16_t)me, mine.fence);
		if (!ok)
			atomic_fetch_add(&r->bad_releases, 1);
		/* a late release of an old lease, racing whoever holds now */
		if (have_old && fb_lease_release(r->t, 0, (uint16_t)me, old.fence))
			atomic_fetch_add(&r->stale_releases, 1);
		if (fb_lease_is_held(r->t, 0, (uint16_t)me))
			atomic_fetch_add(&r->held_after, 1);
		old = mine;
		have_old = true;
	}
	return NULL;
}

static int by_seq(const void *a, const void *b)
{
	const cs_log *x = a, *y = b;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static void race_lease(fb_fence_source src)
{
	for (int round = 0; round < LEASE_ROUNDS; round++) {
		fb_clock_manual clk; /* never moves: no lease expires, the lease is a mutex */
		fb_clock_manual_init(&clk, 1000);
		fb_lease_config lc = {.keys = 1,
		                      .ttl_ns = 1000000000,
		                      .source = src,
		                      .first_fence = CROSS_2_32 + 1,
		                      .clock = &clk.base};
		lease_race r = {.src = src, .g = {.n = LEASE_THREADS}};
		check_eq(fb_lease_table_create(&lc, &r.t), FB_OK, "lease table");
		cs_log *all = calloc((size_t)LEASE_THREADS * LEASE_ITERS, sizeof *all);
		check(all, "out of memory");
		for (int i = 0; i < LEASE_THREADS; i++)
			r.log[i] = all + (size_t)i * (size_t)iters(LEASE_ITERS);
		pthread_t th[LEASE_THREADS];
		for (int i = 0; i < LEASE_THREADS; i++)
			pthread_create(&th[i], NULL, lease_racer, &r);
		for (int i = 0; i < LEASE_THREADS; i++)
			pthread_join(th[i], NULL);
		const char *what = src == FB_FENCE_GLOBAL ? "global fences" : "per-key fences";
		check_eq(atomic_load(&r.violations), 0,
		         "two holders in the critical section at once");
		check_eq(atomic_load(&r.not_held), 0, "a holder's is_held said no");
		check_eq(atomic_load(&r.bad_releases), 0, "a holder's own release refused");
		check_eq(
		        atomic_load(&r.stale_releases), 0,
		        "a late release of an old lease accepted (it could free a newer holder's)");
		check_eq(atomic_load(&r.held_after), 0, "is_held said yes after the release");
		size_t n = (size_t)LEASE_THREADS * (size_t)iters(LEASE_ITERS);
		qsort(all, n, sizeof *all, by_seq);
		uint64_t prev = CROSS_2_32; /* the slot starts one below the first fence */
		for (size_t i = 0; i < n; i++) {
			check(all[i].fence > prev,
			      "%s, round %d: critical section %zu ran under fence %llu after fence "
			      "%llu "
			      "(a fence not above its predecessor's)",
			      what, round, i, (unsigned long long)all[i].fence,
			      (unsigned long long)prev);
			if (i || src == FB_FENCE_PER_KEY)
				check(all[i].replaced == prev,
				      "%s, round %d: acquire %zu says it replaced fence %llu, the "
				      "slot "
				      "held %llu",
				      what, round, i, (unsigned long long)all[i].replaced,
				      (unsigned long long)prev);
			if (src == FB_FENCE_PER_KEY)
				check(all[i].fence == prev + 1,
				      "%s: fence %llu after %llu: a per-key fence minted twice or "
				      "skipped",
				      what, (unsigned long long)all[i].fence,
				      (unsigned long long)prev);
			prev = all[i].fence;
		}
		free(all);
		fb_lease_table_destroy(r.t);
	}
}

/*
 * With a clock that moves: leases now expire under their holders, in the
 * middle of a critical section or of a release. A clock thread advances the
 * manual clock a tick at a time while the racers run (it stops when they
 * are done: a count of their iterations, not a time). The oracle:
 *   - no holder's lease is taken while it is live: whoever enters the
 *     critical section with a live lease finds there no one, or one whose
 *     lease has expired by the clock (a holder leaves before it releases);
 *   - the fences form one chain: every acquire replaced the fence before
 *     it, each fence was replaced at most once (a release that frees a
 *     newer holder's lease puts an old fence back in the slot), and every
 *     fence is above the one it replaced.
 */
enum { EXPIRY_THREADS = 4, EXPIRY_ITERS = 20000, EXPIRY_TTL = 40 };

typedef struct expiry_race {
	fb_lease_table *t;
	fb_clock_manual clk;
	gate g;
	_Atomic int done;
	_Atomic uint32_t ids;
	_Atomic uint64_t holder; /* expiry << 16 | id of who is in the section; 0: none */
	_Atomic uint64_t overlaps, stale_releases;
	cs_log *log[EXPIRY_THREADS];
} expiry_race;

static void *ticker(void *p)
{
	expiry_race *r = p;
	while (atomic_load(&r->done) < EXPIRY_THREADS)
		fb_clock_manual_advance(&r->clk, 1);
	return NULL;
}

static void *expiry_racer(void *p)
{
	expiry_race *r = p;
	uint32_t me = atomic_fetch_add(&r->ids, 1) + 1;
	cs_log *log = r->log[me - 1];
	uint64_t x = 0x9e3779b97f4a7c15u * me;
	fb_lease_stats st = {0};
	fb_lease mine = {0}, old = {0};
	bool have_old = false;
	gate_pass(&r->g);
	for (int i = 0, end = iters(EXPIRY_ITERS); i < end; i++) {
		while (fb_lease_acquire(r->t, 0, (uint16_t)me, &mine, &st) == FB_HELD)
			;
		log[i] = (cs_log){0, mine.fence, mine.replaced};
		/* who was in the section, with the expiry of the lease it held */
		uint64_t in = mine.expires_at << 16 | me;
		uint64_t was = atomic_exchange(&r->holder, in);
		uint64_t now = fb_clock_now(&r->clk.base);
		/* both leases live at one instant: two holders (a holder whose own
		 * lease ran out before it got here is a zombie, not the table's) */
		if (was && now < was >> 16 && now < mine.expires_at)
			atomic_fetch_add(&r->overlaps, 1);
		for (int k = (int)(xorshift(&x) % 64); k > 0; k--)
			fb_cpu_relax();    /* work, long enough to outlive the lease at times */
		if (xorshift(&x) % 4 == 0) /* a pause of a TTL: released late, racing a taker */
			fb_clock_manual_advance(&r->clk, EXPIRY_TTL);
		atomic_compare_exchange_strong(&r->holder, &in, 0); /* leave, unless taken over */
		if (xorshift(&x) & 1)
			fb_lease_release_lease(r->t, 0, &mine, NULL);
		else
			fb_lease_release(r->t, 0, (uint16_t)me, mine.fence);
		if (have_old && fb_lease_release(r->t, 0, (uint16_t)me, old.fence))
			atomic_fetch_add(&r->stale_releases, 1);
		old = mine;
		have_old = true;
	}
	atomic_fetch_add(&r->done, 1);
	return NULL;
}

static int by_replaced(const void *a, const void *b)
{
	const cs_log *x = a, *y = b;
	return (x->replaced > y->replaced) - (x->replaced < y->replaced);
}

static void race_expiring_lease(fb_fence_source src)
{
	for (int round = 0; round < ROUNDS; round++) {
		expiry_race r = {.g = {.n = EXPIRY_THREADS}};
		fb_clock_manual_init(&r.clk, 1000);
		fb_lease_config lc = {.keys = 1,
		                      .ttl_ns = EXPIRY_TTL,
		                      .source = src,
		                      .first_fence = 1,
		                      .clock = &r.clk.base};
		check_eq(fb_lease_table_create(&lc, &r.t), FB_OK, "lease table");
		size_t per = (size_t)iters(EXPIRY_ITERS), n = EXPIRY_THREADS * per;
		cs_log *all = calloc(n, sizeof *all);
		check(all, "out of memory");
		for (int i = 0; i < EXPIRY_THREADS; i++)
			r.log[i] = all + (size_t)i * per;
		pthread_t th[EXPIRY_THREADS], tk;
		pthread_create(&tk, NULL, ticker, &r);
		for (int i = 0; i < EXPIRY_THREADS; i++)
			pthread_create(&th[i], NULL, expiry_racer, &r);
		for (int i = 0; i < EXPIRY_THREADS; i++)
			pthread_join(th[i], NULL);
		pthread_join(tk, NULL);
		const char *what = src == FB_FENCE_GLOBAL ? "global fences" : "per-key fences";
		check_eq(atomic_load(&r.overlaps), 0,
		         "a lease taken over while its holder's was live (two holders at once)");
		check_eq(atomic_load(&r.stale_releases), 0,
		         "a late release of an old lease accepted");
		/* one chain: sorted by what they replaced, no fence replaced twice */
		qsort(all, n, sizeof *all, by_replaced);
		for (size_t i = 0; i < n; i++) {
			check(all[i].fence > all[i].replaced,
			      "%s, round %d: fence %llu minted over %llu", what, round,
			      (unsigned long long)all[i].fence,
			      (unsigned long long)all[i].replaced);
			check(!i || all[i].replaced != all[i - 1].replaced,
			      "%s, round %d: fence %llu replaced twice (by %llu and %llu): a "
			      "release "
			      "freed a newer holder's lease, or two acquires took one slot word",
			      what, round, (unsigned long long)all[i].replaced,
			      (unsigned long long)all[i - 1].fence,
			      (unsigned long long)all[i].fence);
			if (src == FB_FENCE_PER_KEY)
				check(all[i].replaced == i,
				      "%s, round %d: the chain of fences breaks at %zu (replaced "
				      "%llu)",
				      what, round, i, (unsigned long long)all[i].replaced);
		}
		free(all);
		fb_lease_table_destroy(r.t);
	}
}

static void test_expiring_lease_races_never_take_a_live_lease(void **state)
{
	(void)state;
	race_expiring_lease(FB_FENCE_GLOBAL);
	race_expiring_lease(FB_FENCE_PER_KEY);
}

static void test_lease_races_keep_one_holder_and_rising_fences(void **state)
{
	(void)state;
	race_lease(FB_FENCE_GLOBAL);
	race_lease(FB_FENCE_PER_KEY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_fenced_rmw_races_lose_no_update),
	        cmocka_unit_test(test_fenced_debit_races_keep_tokens_rising),
	        cmocka_unit_test(test_write_fenced_races_keep_tokens_rising),
	        cmocka_unit_test(test_unfenced_races_keep_one_chain),
	        cmocka_unit_test(test_lease_races_keep_one_holder_and_rising_fences),
	        cmocka_unit_test(test_expiring_lease_races_never_take_a_live_lease),
	};
	return cmocka_run_group_tests_name("torture", tests, NULL, NULL);
}
