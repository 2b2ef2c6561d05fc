#define _GNU_SOURCE
#include "adapter_test.h"

#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "clock.h"
#include "exec.h"
#include "exec_proto.h"
#include "options.h"

/* What every session's reset announces: small numbers, so that an exchange
 * reads at a glance. A debit takes AMOUNT, not 1: a store that ignores the
 * amount shows. */
#define INITIAL 1000000
#define AMOUNT  7

#define RACE_REPLY 240 /* what the race keeps of each reply */

#include "adapter_test_int.h"

static const fb_store_ops *const X = &fb_exec_store_ops;

/* The contract's verdict, if none was given yet: the first reason stands. */
static void judge(at *t, verdict v, const char *fmt, va_list ap)
{
	if (t->v != V_PASS)
		return;
	vsnprintf(t->why, sizeof t->why, fmt, ap);
	t->v = v;
}

/* The contract failed. */
void at_fail(at *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	judge(t, V_FAIL, fmt, ap);
	va_end(ap);
}

/* The contract cannot be judged (an operation not offered, or an earlier
 * contract's failure in the way). */
void at_na(at *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	judge(t, V_NA, fmt, ap);
	va_end(ap);
}

void at_fatal(at *t, int code, const char *msg)
{
	if (!t->fatal)
		snprintf(t->why, sizeof t->why, "%s", msg);
	t->fatal = code;
}

static void note(at *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(at *t, const char *fmt, ...)
{
	if (t->loglen >= sizeof t->log - 1)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t->log + t->loglen, sizeof t->log - t->loglen, fmt, ap);
	va_end(ap);
	if (n > 0)
		t->loglen += (size_t)n < sizeof t->log - t->loglen ? (size_t)n
		                                                   : sizeof t->log - 1 - t->loglen;
}

/* The exchange just made, into the transcript. */
static void log_exchange(at *t, const fb_exec_exchange *x)
{
	if (x->request[0])
		note(t, "      > %s\n", x->request);
	if (x->reply[0])
		note(t, "      < %s\n", x->reply);
}

bool at_has(const at *t, fb_exec_op op)
{
	return t->offers & (1u << op);
}

/* ---- sessions --------------------------------------------------------------- */

static fb_engine_config config_of(const at *t, uint32_t threads)
{
	fb_engine_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.keys = t->o->keys;
	cfg.modes = 1u << FB_FENCED;
	cfg.initial_balance = INITIAL;
	cfg.amount = AMOUNT;
	cfg.op = t->op;
	cfg.threads = threads;
	cfg.first_fence = 1;
	cfg.timeout_ns = t->o->timeout_ns;
	return cfg;
}

static void session_close(at *t)
{
	if (t->conn)
		X->disconnect(t->conn);
	if (t->eng)
		X->close(t->eng);
	t->conn = t->eng = NULL;
}

/* An adapter process started and greeted, the store reset to the test's
 * keys, fencebench's own connection (worker 0) taken; threads: how many
 * worker processes the session will connect. False: the contract failed (a
 * reset reply of the wrong shape) or the test must stop (t->fatal). */
static bool session_open(at *t, uint32_t threads)
{
	fb_engine_config cfg = config_of(t, threads);
	char err[2600] = "";
	fb_err e = X->open(&cfg, t->o->url, &t->eng, err, sizeof err);
	if (at_setup_failed(t, e, err)) {
		session_close(t);
		return false;
	}
	e = X->prepare(t->eng, true, err, sizeof err);
	if (at_setup_failed(t, e, err)) {
		session_close(t);
		return false;
	}
	if (X->connect(t->eng, 0, &t->conn, err, sizeof err) != FB_OK) {
		t->conn = NULL;
		at_fatal(t, 3, err);
		session_close(t);
		return false;
	}
	return true;
}

bool at_setup_failed(at *t, fb_err e, const char *err)
{
	if (e == FB_OK)
		return false;
	fb_exec_exchange x = {0};
	if (t->eng) /* an open that failed leaves it NULL */
		fb_exec_setup_last(t->eng, &x);
	if (e == FB_ESYS && x.broke) {
		log_exchange(t, &x);
		at_fail(t, "%s", err);
	} else {
		at_fatal(t, e == FB_EINVAL ? 2 : 3, err);
	}
	return true;
}

/* ---- calls ------------------------------------------------------------------ */

/* After a call on conn: the exchange logged; an error either fails the
 * contract (the adapter broke the protocol) or stops the test. */
bool at_after(at *t, void *conn, fb_io io)
{
	fb_exec_exchange x;
	fb_exec_last(conn, &x);
	log_exchange(t, &x);
	if (io != FB_IO_ERROR)
		return true;
	if (x.broke)
		at_fail(t, "its reply breaks the protocol: %s", X->error(conn));
	else
		at_fatal(t, 3, X->error(conn));
	return false;
}

static bool rd(at *t, uint32_t key, uint64_t token, fb_store_result *r)
{
	return at_after(t, t->conn, X->read(t->conn, FB_FENCED, key, token, r));
}

static bool db(at *t, uint32_t key, uint64_t token, fb_store_result *r)
{
	return at_after(t, t->conn, X->debit(t->conn, FB_FENCED, key, AMOUNT, token, r));
}

/* What a write with token sets: one balance per token, so that whose write
 * a balance is shows. */
static int64_t wval(uint64_t token)
{
	return INITIAL - 10 * (int64_t)token;
}

/* An update with token: a write of wval(token), or a debit where the
 * adapter offers no write. */
static bool upd(at *t, uint32_t key, uint64_t token, fb_store_result *r)
{
	if (!at_has(t, FB_XOP_WRITE))
		return db(t, key, token, r);
	return at_after(t, t->conn, X->write(t->conn, FB_FENCED, key, wval(token), token, NULL, r));
}

/* What upd(token) must leave over a balance of before. */
static int64_t upd_after(const at *t, uint64_t token, int64_t before)
{
	return at_has(t, FB_XOP_WRITE) ? wval(token) : before - AMOUNT;
}

/* Key's balance and last fence, by conn (the engine reads keys 0..key, one
 * call each, all logged). */
static bool fin_on(at *t, void *conn, uint32_t key, int64_t *balance, uint64_t *last)
{
	int64_t *b = calloc((size_t)key + 1, sizeof *b);
	uint64_t *l = calloc((size_t)key + 1, sizeof *l);
	bool ok = false;
	if (!b || !l)
		at_fatal(t, 3, "out of memory for the final balances");
	else if ((ok = at_after(t, conn, X->final(conn, FB_FENCED, key + 1, b, l)))) {
		*balance = b[key];
		*last = l[key];
	}
	free(b);
	free(l);
	return ok;
}

static bool fin(at *t, uint32_t key, int64_t *balance, uint64_t *last)
{
	return fin_on(t, t->conn, key, balance, last);
}

typedef struct rows {
	uint32_t key;
	uint64_t n, of_key;
	uint64_t *fences; /* of key, in the stream's order */
	size_t cap;
	bool nomem;
} rows;

static void row_seen(void *ctx, const fb_history_row *h)
{
	rows *r = ctx;
	r->n++;
	if (h->key != r->key)
		return;
	if (r->of_key == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 256;
		uint64_t *f = realloc(r->fences, cap * sizeof *f);
		if (!f) {
			r->nomem = true;
			return;
		}
		r->fences = f;
		r->cap = cap;
	}
	r->fences[r->of_key++] = h->fence;
}

static bool history(at *t, void *conn, rows *r)
{
	return at_after(t, conn, X->history(conn, row_seen, r));
}

/* ---- the contracts ------------------------------------------------------------ */

/* Every operation once, each reply read by the protocol's rules (the
 * engine's parser and validators: one JSON object, every field a reply of
 * that kind needs, of its type). */
static void c_shape(at *t)
{
	fb_store_result r;
	int64_t bal;
	uint64_t last;
	if (at_has(t, FB_XOP_READ) && !rd(t, 0, 5, &r))
		return;
	if (!upd(t, 0, 5, &r) || !upd(t, 0, 3, &r))
		return;
	if (at_has(t, FB_XOP_DEBIT) && at_has(t, FB_XOP_WRITE) && !db(t, 0, 6, &r))
		return;
	if (!fin(t, t->o->keys - 1, &bal, &last))
		return;
	fb_store_meta m;
	if (at_has(t, FB_XOP_META) && !at_after(t, t->conn, X->meta(t->conn, &m)))
		return;
	rows h = {.key = 0};
	if (at_has(t, FB_XOP_HISTORY))
		history(t, t->conn, &h);
	free(h.fences);
}

static void c_fresh(at *t)
{
	fb_store_result r;
	if (!upd(t, 0, 5, &r))
		return;
	if (!r.ok)
		return at_fail(t, "token 5, the first on a freshly reset key, was refused");
	if (!upd(t, 0, 6, &r))
		return;
	if (!r.ok)
		return at_fail(t, "token 6 was refused after token 5 had been accepted, and no "
		                  "token above 6 was ever sent: a newer holder refused");
	if (!at_has(t, FB_XOP_READ))
		return;
	if (!rd(t, 0, 7, &r))
		return;
	if (!r.ok)
		return at_fail(t, "a read with token 7 was refused, the highest token sent before "
		                  "it being 6: a newer holder refused");
	if (!upd(t, 0, 7, &r))
		return;
	if (!r.ok)
		at_fail(t, "token 7 was refused after its own read registered it: a holder's "
		           "read-modify-write refused");
}

/* The key after the refusals of a contract must be as the accepted write
 * with token left it. */
static void unchanged(at *t, uint64_t token, int64_t want)
{
	int64_t bal;
	uint64_t last;
	if (!fin(t, 0, &bal, &last))
		return;
	if (bal != want || last != token)
		at_fail(t,
		        "after the refusals the key holds balance %lld, last fence %llu; token "
		        "%llu's "
		        "write left %lld, fence %llu: a refused call changed the key",
		        (long long)bal, (unsigned long long)last, (unsigned long long)token,
		        (long long)want, (unsigned long long)token);
}

static void c_lower(at *t)
{
	fb_store_result r, first;
	if (!upd(t, 0, 10, &first))
		return;
	if (!first.ok)
		return at_na(t, "token 10 on a freshly reset key was refused (see fresh)");
	if (!upd(t, 0, 7, &r))
		return;
	if (r.ok)
		return at_fail(t, "token 7 was accepted after token 10: a stale write went in");
	if (at_has(t, FB_XOP_DEBIT) && at_has(t, FB_XOP_WRITE)) {
		if (!db(t, 0, 8, &r))
			return;
		if (r.ok)
			return at_fail(t,
			               "a debit with token 8 was accepted after token 10: a stale "
			               "debit went in");
	}
	unchanged(t, 10, first.balance);
}

static void c_equal(at *t)
{
	fb_store_result r, first;
	if (!upd(t, 0, 10, &first))
		return;
	if (!first.ok)
		return at_na(t, "token 10 on a freshly reset key was refused (see fresh)");
	if (!upd(t, 0, 10, &r))
		return;
	if (r.ok)
		return at_fail(t, "the same call with token 10 was accepted twice: a resent write "
		                  "lands twice (an equal token is stale)");
	if (at_has(t, FB_XOP_DEBIT) && at_has(t, FB_XOP_WRITE)) {
		if (!db(t, 0, 10, &r))
			return;
		if (r.ok)
			return at_fail(
			        t, "a debit with token 10 was accepted after a write with token "
			           "10: an equal token is stale");
	}
	unchanged(t, 10, first.balance);
}

static void c_read(at *t)
{
	fb_store_result r;
	if (!at_has(t, FB_XOP_READ))
		return at_na(t, "the adapter offers no read");
	if (!rd(t, 0, 20, &r))
		return;
	if (!r.ok)
		return at_fail(t, "a read with token 20 on a freshly reset key was refused");
	if (!upd(t, 0, 15, &r))
		return;
	if (r.ok)
		return at_fail(t, "token 15 was accepted after a read with token 20 had been "
		                  "served: the read did not register its token, so a stale holder "
		                  "overwrites what the newer one read");
	if (!rd(t, 0, 15, &r))
		return;
	if (r.ok)
		return at_fail(t, "a read with token 15 was served after a read with token 20: a "
		                  "stale holder reads as if it held the key");
	if (!upd(t, 0, 20, &r))
		return;
	if (!r.ok)
		at_fail(t, "token 20 was refused after its own read registered it (a token equal "
		           "to the highest seen and above the last written is the holder's)");
}

static void c_version(at *t)
{
	uint64_t prev = 0;
	int accepted = 0;
	bool both = at_has(t, FB_XOP_DEBIT) && at_has(t, FB_XOP_WRITE);
	for (uint64_t token = 1; token <= 6; token++) {
		fb_store_result r;
		if (!(both && token % 2 == 0 ? db(t, 0, token, &r) : upd(t, 0, token, &r)))
			return;
		if (!r.ok)
			continue;
		if (accepted++ && r.version <= prev)
			return at_fail(
			        t,
			        "token %llu's write was given version %llu after version %llu: "
			        "a version must grow at every accepted write (gaps are fine)",
			        (unsigned long long)token, (unsigned long long)r.version,
			        (unsigned long long)prev);
		prev = r.version;
	}
	if (accepted < 2)
		at_na(t,
		      "fewer than two of six writes with rising tokens were accepted (see fresh)");
}

/* An accepted update's reply against the balance it replaced. */
static bool replaced(at *t, const char *what, uint64_t token, const fb_store_result *r,
                     int64_t held, int64_t want)
{
	if (r->before != held) {
		at_fail(t, "%s with token %llu says before %lld, but the key held %lld", what,
		        (unsigned long long)token, (long long)r->before, (long long)held);
		return false;
	}
	if (r->balance != want) {
		at_fail(t, "%s with token %llu says it left %lld, but it must leave %lld", what,
		        (unsigned long long)token, (long long)r->balance, (long long)want);
		return false;
	}
	return true;
}

static void c_before(at *t)
{
	fb_store_result r;
	int64_t held = INITIAL;
	for (uint64_t token = 5; token <= 6; token++) {
		if (!upd(t, 0, token, &r))
			return;
		if (!r.ok) {
			if (token == 5)
				at_na(t, "token 5 on a freshly reset key was refused (see fresh)");
			return;
		}
		if (!replaced(t, "the update", token, &r, held, upd_after(t, token, held)))
			return;
		held = r.balance;
	}
	if (at_has(t, FB_XOP_DEBIT) && at_has(t, FB_XOP_WRITE)) {
		if (!db(t, 0, 7, &r) || !r.ok)
			return;
		if (!replaced(t, "the debit", 7, &r, held, held - AMOUNT))
			return;
		held = r.balance;
	}
	if (!at_has(t, FB_XOP_READ) || !rd(t, 0, 8, &r) || !r.ok)
		return;
	if (r.balance != held)
		at_fail(t, "a read with token 8 served %lld, but the last accepted write left %lld",
		        (long long)r.balance, (long long)held);
}

static void c_debit(at *t)
{
	if (!at_has(t, FB_XOP_DEBIT))
		return at_na(t, "the adapter offers no debit");
	fb_store_result r;
	int64_t held = INITIAL;
	uint64_t last = 0;
	for (uint64_t token = 5; token <= 6; token++) {
		if (!db(t, 0, token, &r))
			return;
		if (!r.ok) {
			if (token == 5)
				at_fail(t, "a debit with token 5, the first on a freshly reset "
				           "key, was "
				           "refused");
			break;
		}
		if (!replaced(t, "the debit", token, &r, held, held - AMOUNT))
			return;
		held = r.balance;
		last = token;
	}
	if (t->v != V_PASS)
		return;
	int64_t bal;
	uint64_t fence;
	if (!fin(t, 0, &bal, &fence))
		return;
	if (bal != held || fence != last)
		at_fail(t,
		        "after the debits the key holds %lld, last fence %llu; they left %lld, "
		        "fence %llu",
		        (long long)bal, (unsigned long long)fence, (long long)held,
		        (unsigned long long)last);
}

/* Every key written, a high token registered; then a second reset: every
 * key back at the initial balance and fence 0, no token remembered, meta
 * and history as a fresh store's. */
static void c_reset(at *t)
{
	fb_store_result r;
	uint32_t keys = t->o->keys;
	for (uint32_t k = 0; k < keys; k++)
		if (!upd(t, k, 100 + k, &r))
			return;
	if (at_has(t, FB_XOP_READ) && !rd(t, 0, 200, &r))
		return;
	session_close(t);
	note(t, "      (a second reset)\n");
	if (!session_open(t, 1))
		return;
	for (uint32_t k = 0; k < keys; k++) {
		int64_t bal;
		uint64_t last;
		if (!fin(t, k, &bal, &last))
			return;
		if (bal != INITIAL || last != 0)
			return at_fail(t,
			               "after a reset key %u holds %lld, last fence %llu: a reset "
			               "restores %d and fence 0",
			               k, (long long)bal, (unsigned long long)last, INITIAL);
	}
	if (at_has(t, FB_XOP_META)) {
		fb_store_meta m;
		if (!at_after(t, t->conn, X->meta(t->conn, &m)))
			return;
		if (m.keys != keys || m.initial_balance != INITIAL || m.amount != AMOUNT ||
		    m.op != t->op)
			return at_fail(
			        t,
			        "meta after a reset is not what the reset recorded (keys %u, "
			        "initial_balance %d, amount %d, cycle %s)",
			        keys, INITIAL, AMOUNT, t->op == FB_OP_DEBIT ? "debit" : "rmw");
	}
	if (at_has(t, FB_XOP_HISTORY)) {
		rows h = {.key = 0};
		bool ok = history(t, t->conn, &h);
		free(h.fences);
		if (!ok)
			return;
		if (h.n)
			return at_fail(t, "after a reset the history still holds %llu rows",
			               (unsigned long long)h.n);
	}
	if (at_has(t, FB_XOP_READ)) {
		if (!rd(t, 0, 1, &r))
			return;
		if (!r.ok || r.balance != INITIAL)
			return at_fail(
			        t,
			        "after a reset a read with token 1 %s: token 200, registered "
			        "before the reset, survived it",
			        r.ok ? "served another balance" : "was refused");
	}
	if (!upd(t, 0, 1, &r))
		return;
	if (!r.ok)
		return at_fail(t,
		               "after a reset token 1 was refused: a fence from before the reset "
		               "survived it");
	replaced(t, "the first update after a reset", 1, &r, INITIAL, upd_after(t, 1, INITIAL));
}

typedef struct contract {
	const char *name;
	const char *says;
	void (*run)(at *t);
} contract;

static const contract contracts[] = {
        {"shape", "replies have the protocol's shape", c_shape},
        {"fresh", "a fresh token is accepted, a newer holder's after it", c_fresh},
        {"lower", "a lower token is refused", c_lower},
        {"equal", "an equal token is refused (a resent write)", c_equal},
        {"read", "a read registers its token: lower writes and reads are then refused", c_read},
        {"version", "the version grows at every accepted write", c_version},
        {"before", "`before` is the balance replaced; a read serves the last", c_before},
        {"debit", "a debit subtracts its amount", c_debit},
        {"reset", "a reset restores every key and forgets every token", c_reset},
};

const char *at_verdict_name(verdict v)
{
	return v == V_PASS ? "PASS" : v == V_FAIL ? "FAIL" : "n/a ";
}

/* The contract's line; on FAIL its exchange and why; n/a: why. */
void at_print(const at *t, const char *name, const char *says)
{
	printf("%s  %-8s %s\n", at_verdict_name(t->v), name, says);
	if (t->v == V_FAIL)
		printf("%.*s      %s\n", (int)t->loglen, t->log, t->why);
	else if (t->v == V_NA)
		printf("      %s\n", t->why);
	fflush(stdout);
}

/* ---- the race ------------------------------------------------------------------- */

/* One call of the race, as its process sent it and saw its reply. */
typedef struct race_op {
	uint64_t token;
	bool debit, stale, sent, ok;
	int64_t value; /* a write's balance */
	fb_store_result r;
	char reply[RACE_REPLY];
} race_op;

typedef struct race {
	at *t;
	uint32_t key, procs, rounds;
	race_op *ops; /* [round * procs + process] */
	void **conns; /* [process]: worker process + 1's connection */
	pthread_barrier_t bar;
	_Atomic bool stop;
	atomic_flag claimed; /* the first failure's thread writes err */
	char err[2600];
	bool broke;
} race;

typedef struct racer_arg {
	race *ra;
	uint32_t me;
} racer_arg;

static race_op *op_at(const race *ra, uint32_t round, uint32_t proc)
{
	return &ra->ops[(size_t)round * ra->procs + proc];
}

/* One process's side of the race: each round starts when every process is
 * at the barrier, so their calls reach the store together, and ends when
 * every reply is in; after a failure all stop at the same round. */
static void *racer(void *p)
{
	racer_arg *a = p;
	race *ra = a->ra;
	void *conn = ra->conns[a->me];
	for (uint32_t round = 0; round < ra->rounds; round++) {
		pthread_barrier_wait(&ra->bar);
		race_op *o = op_at(ra, round, a->me);
		fb_io io = o->debit ? X->debit(conn, FB_FENCED, ra->key, AMOUNT, o->token, &o->r)
		                    : X->write(conn, FB_FENCED, ra->key, o->value, o->token, NULL,
		                               &o->r);
		fb_exec_exchange x;
		fb_exec_last(conn, &x);
		snprintf(o->reply, sizeof o->reply, "%.*s", RACE_REPLY - 1, x.reply);
		o->sent = true;
		o->ok = io == FB_IO_OK;
		if (io == FB_IO_ERROR) {
			if (!atomic_flag_test_and_set(&ra->claimed)) {
				snprintf(ra->err, sizeof ra->err, "%s", X->error(conn));
				ra->broke = x.broke;
			}
			atomic_store(&ra->stop, true);
		}
		pthread_barrier_wait(&ra->bar);
		if (atomic_load(&ra->stop))
			break;
	}
	return NULL;
}

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
	return *x;
}

/* Round r's tokens: r * procs + 1 .. r * procs + procs, fresh, dealt to the
 * processes in a random order (so that the process whose call lands first
 * is not the one with the highest token); from the second round on, one
 * process sends instead a stale token, below the last round's highest.
 * Writes and debits alternate by round where the adapter offers both. */
static void deal(race *ra)
{
	uint64_t x = 0x9e3779b97f4a7c15u;
	bool both = at_has(ra->t, FB_XOP_DEBIT) && at_has(ra->t, FB_XOP_WRITE);
	for (uint32_t round = 0; round < ra->rounds; round++) {
		uint64_t base = (uint64_t)round * ra->procs;
		for (uint32_t i = 0; i < ra->procs; i++) {
			uint32_t j = (uint32_t)(xorshift(&x) % (i + 1));
			*op_at(ra, round, i) = *op_at(ra, round, j);
			op_at(ra, round, j)->token = base + i + 1;
		}
		for (uint32_t i = 0; i < ra->procs; i++) {
			race_op *o = op_at(ra, round, i);
			o->debit = both ? round % 2 == 1 : !at_has(ra->t, FB_XOP_WRITE);
			if (round > 0 && i == round % ra->procs) {
				/* below every fresh token of the round before, which a
				 * correct store accepted the highest of */
				o->token = round == 1 ? 1 + xorshift(&x) % (ra->procs - 1)
				                      : base - ra->procs - xorshift(&x) % ra->procs;
				o->stale = true;
			}
			o->value = wval(o->token);
		}
	}
}

static void print_op(at *t, const race *ra, const race_op *o)
{
	size_t i = (size_t)(o - ra->ops);
	note(t, "      round %zu, process %zu%s:\n", i / ra->procs + 1, i % ra->procs + 1,
	     o->stale ? " (a stale token)" : "");
	if (o->debit)
		note(t, "      > {\"op\":\"debit\",\"key\":%u,\"amount\":%d,\"token\":%llu}\n",
		     ra->key, AMOUNT, (unsigned long long)o->token);
	else
		note(t, "      > {\"op\":\"write\",\"key\":%u,\"balance\":%lld,\"token\":%llu}\n",
		     ra->key, (long long)o->value, (unsigned long long)o->token);
	note(t, "      < %s\n", o->reply);
}

static int by_version(const void *a, const void *b)
{
	const race_op *x = *(race_op *const *)a, *y = *(race_op *const *)b;
	return (x->r.version > y->r.version) - (x->r.version < y->r.version);
}

/* The accepted calls in version order: distinct versions, tokens rising,
 * each replacing the balance the one before left and leaving what its
 * call computes. */
static void judge_order(at *t, const race *ra, race_op **acc, size_t na)
{
	int64_t held = INITIAL;
	for (size_t i = 0; i < na && t->v == V_PASS; i++) {
		const race_op *o = acc[i], *p = i ? acc[i - 1] : NULL;
		int64_t want = o->debit ? o->r.before - AMOUNT : o->value;
		if (p && o->r.version == p->r.version)
			at_fail(t, "two accepted calls were given version %llu: one commit twice",
			        (unsigned long long)o->r.version);
		else if (p && o->token <= p->token)
			at_fail(t,
			        "token %llu was accepted after token %llu (versions %llu, %llu): a "
			        "%s write went in; the check and the write are not one atomic step",
			        (unsigned long long)o->token, (unsigned long long)p->token,
			        (unsigned long long)p->r.version, (unsigned long long)o->r.version,
			        o->stale ? "stale" : "lower");
		else if (o->r.before != held)
			at_fail(t,
			        "version %llu replaced %lld, but the write before it (version "
			        "%llu) "
			        "left %lld: two calls applied to one state",
			        (unsigned long long)o->r.version, (long long)o->r.before,
			        p ? (unsigned long long)p->r.version : 0ULL, (long long)held);
		else if (o->r.balance != want)
			at_fail(t, "version %llu left %lld; its call computes %lld",
			        (unsigned long long)o->r.version, (long long)o->r.balance,
			        (long long)want);
		else
			held = o->r.balance;
		if (t->v == V_FAIL) {
			if (p)
				print_op(t, ra, p);
			print_op(t, ra, o);
		}
	}
}

/* Nothing refused without cause: a call in round r is refused only when a
 * token at least its own had been accepted by the end of round r (later
 * rounds start after every reply of r is in). */
static void judge_refusals(at *t, const race *ra)
{
	uint64_t top = 0;
	for (uint32_t round = 0; round < ra->rounds && t->v == V_PASS; round++) {
		for (uint32_t i = 0; i < ra->procs; i++) {
			const race_op *o = op_at(ra, round, i);
			if (o->sent && o->ok && o->token > top)
				top = o->token;
		}
		for (uint32_t i = 0; i < ra->procs && t->v == V_PASS; i++) {
			const race_op *o = op_at(ra, round, i);
			if (!o->sent || o->ok || o->token <= top)
				continue;
			at_fail(t,
			        "token %llu was refused, yet no token at or above it had been "
			        "accepted "
			        "(the highest: %llu): a rightful holder refused",
			        (unsigned long long)o->token, (unsigned long long)top);
			print_op(t, ra, o);
		}
	}
}

/* The key at the end against the last accepted call, and the store's
 * history of the key (where it keeps one) against the accepted calls. */
static void judge_books(at *t, const race *ra, race_op **acc, size_t na)
{
	int64_t bal, want = na ? acc[na - 1]->r.balance : INITIAL;
	uint64_t last, fence = na ? acc[na - 1]->token : 0;
	if (!fin(t, ra->key, &bal, &last))
		return;
	if (bal != want || last != fence)
		return at_fail(t,
		               "the key ends at balance %lld, last fence %llu; the last accepted "
		               "call (token %llu) left %lld",
		               (long long)bal, (unsigned long long)last, (unsigned long long)fence,
		               (long long)want);
	if (!at_has(t, FB_XOP_HISTORY))
		return;
	rows h = {.key = ra->key};
	if (history(t, t->conn, &h) && !h.nomem) {
		if (h.of_key != na)
			at_fail(t,
			        "the history holds %llu writes of key %u, the replies accepted %zu",
			        (unsigned long long)h.of_key, ra->key, na);
		for (size_t i = 0; i < na && t->v == V_PASS; i++)
			if (h.fences[i] != acc[i]->token)
				at_fail(t,
				        "the history's write %zu of key %u has fence %llu, the "
				        "accepted "
				        "call with that place in version order token %llu",
				        i + 1, ra->key, (unsigned long long)h.fences[i],
				        (unsigned long long)acc[i]->token);
	}
	free(h.fences);
}

static void judge_race(at *t, const race *ra, size_t *accepted)
{
	size_t total = (size_t)ra->rounds * ra->procs, na = 0;
	race_op **acc = malloc((total ? total : 1) * sizeof *acc);
	if (!acc)
		return at_fatal(t, 3, "out of memory for the race's oracle");
	for (size_t i = 0; i < total; i++)
		if (ra->ops[i].sent && ra->ops[i].ok)
			acc[na++] = &ra->ops[i];
	qsort(acc, na, sizeof *acc, by_version);
	judge_order(t, ra, acc, na);
	if (t->v == V_PASS)
		judge_refusals(t, ra);
	if (t->v == V_PASS)
		judge_books(t, ra, acc, na);
	*accepted = na;
	free(acc);
}

/* Several adapter processes race one key from threads; see deal(). */
static void c_race(at *t)
{
	race ra = {.t = t, .key = t->o->keys - 1, .procs = t->o->procs, .rounds = t->o->rounds};
	atomic_init(&ra.stop, false);
	atomic_flag_clear(&ra.claimed);
	ra.ops = calloc((size_t)ra.rounds * ra.procs, sizeof *ra.ops);
	ra.conns = calloc(ra.procs, sizeof *ra.conns);
	pthread_t *th = calloc(ra.procs, sizeof *th);
	racer_arg *args = calloc(ra.procs, sizeof *args);
	uint32_t conns = 0;
	char err[2600];
	if (!ra.ops || !ra.conns || !th || !args) {
		at_fatal(t, 3, "out of memory for the race");
		goto out;
	}
	deal(&ra);
	for (; conns < ra.procs; conns++)
		if (X->connect(t->eng, (uint16_t)(conns + 1), &ra.conns[conns], err, sizeof err) !=
		    FB_OK) {
			at_fatal(t, 3, err);
			goto out;
		}
	if (pthread_barrier_init(&ra.bar, NULL, ra.procs) != 0) {
		at_fatal(t, 3, "pthread_barrier_init failed");
		goto out;
	}
	for (uint32_t i = 0; i < ra.procs; i++)
		args[i] = (racer_arg){&ra, i};
	at_threads(ra.procs, th, racer, args, sizeof *args);
	pthread_barrier_destroy(&ra.bar);
	size_t accepted = 0, stale = 0, sent = 0;
	if (!at_race_stopped(t, atomic_load(&ra.stop), ra.broke, ra.err))
		judge_race(t, &ra, &accepted);
	for (size_t i = 0; i < (size_t)ra.rounds * ra.procs; i++) {
		sent += ra.ops[i].sent;
		stale += ra.ops[i].sent && ra.ops[i].stale;
	}
	if (t->v == V_PASS)
		snprintf(t->why, sizeof t->why,
		         "%zu calls (%zu with a stale token), %zu accepted: tokens rose in version "
		         "order, no rightful holder refused, the books agree",
		         sent, stale, accepted);
out:
	for (uint32_t i = 0; i < conns; i++)
		X->disconnect(ra.conns[i]);
	free(args);
	free(th);
	free(ra.conns);
	free(ra.ops);
}

void at_threads(uint32_t n, pthread_t *th, void *(*fn)(void *), void *args, size_t size)
{
	uint32_t started = 0;
	for (; started < n; started++)
		if (pthread_create(&th[started], NULL, fn, (char *)args + started * size) != 0)
			break;
	if (started < n) { /* the others wait at the barrier for ever: stop here */
		fprintf(stderr, "fencebench adapter-test: pthread_create failed\n");
		exit(3);
	}
	for (uint32_t i = 0; i < n; i++)
		pthread_join(th[i], NULL);
}

bool at_race_stopped(at *t, bool stopped, bool broke, const char *err)
{
	if (stopped && broke)
		at_fail(t, "its reply breaks the protocol: %s", err);
	else if (stopped)
		at_fatal(t, 3, err);
	return stopped;
}

/* ---- the command -------------------------------------------------------------- */

static void usage(FILE *out)
{
	fprintf(out, "usage: fencebench adapter-test [OPTION]... exec:COMMAND\n"
	             "       fencebench adapter-test [OPTION]... --lease exec:COMMAND\n"
	             "\n"
	             "The conformance test of a store adapter (README: \"Bring your own store\"),\n"
	             "in seconds, before any benchmark. Each contract of the protocol runs on a\n"
	             "freshly reset store and prints one line, PASS or FAIL, and on FAIL the\n"
	             "requests sent (>) and the replies read (<): a fresh token is accepted; a\n"
	             "lower one and an equal one (a resend) refused; a read registers its token;\n"
	             "the version grows at every accepted write; `before` is the balance\n"
	             "replaced; a debit subtracts; a reset resets; replies have the protocol's\n"
	             "shape. Then adapter processes race one key round after round, with fresh\n"
	             "and stale tokens, and an exact oracle judges what the store accepted.\n"
	             "\n"
	             "With --lease, the conformance test of a lease adapter (README: \"Bring\n"
	             "your own lock service\"): a free key is granted with a fence; a live lease\n"
	             "is not taken; release, renew and is_held check the owner and the fence; a\n"
	             "released key's next fence is higher; an expired lease is taken over with a\n"
	             "new, higher fence; renew extends; then adapter processes race one key:\n"
	             "one holder at a time, fences rising.\n"
	             "\n"
	             "      --lease exec:COMMAND  test a lease adapter instead of a store adapter\n"
	             "  -k, --keys N              keys the store is reset to (default 4; the race\n"
	             "                            uses the last)\n"
	             "  -p, --processes N         adapter processes in the race, 2-64 (default 4;\n"
	             "                            a lease race takes 8 at most)\n"
	             "  -r, --rounds N            race rounds, one call per process each (default\n"
	             "                            300)\n"
	             "      --adapter-timeout D   how long a reply may take (default 10s)\n"
	             "  -h, --help                this text\n"
	             "\n"
	             "Exit 0 when every contract held, 1 when one failed, 2 for a usage error (a\n"
	             "command the shell cannot find, an adapter without reset, final and read +\n"
	             "write or debit), 3 when the adapter cannot be started, dies, hangs or\n"
	             "answers {\"error\": ...}.\n");
}

int at_bad(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("fencebench adapter-test: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return 2;
}

/* A whole number in min..max for option name, else the line and 2. */
static int count_arg(const char *name, const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;
	if (fb_parse_u64(s, min, max, &v) != 0)
		return at_bad("%s '%s': not a whole number in %u..%u", name, s, min, max);
	*out = (uint32_t)v;
	return 0;
}

/* 0: run with *o; -1: --help printed; else the exit code (2). */
static int parse(int argc, char **argv, at_opts *o)
{
	enum { OPT_TIMEOUT = 256, OPT_LEASE };
	static const struct option lo[] = {
	        {"lease", required_argument, NULL, OPT_LEASE},
	        {"keys", required_argument, NULL, 'k'},
	        {"processes", required_argument, NULL, 'p'},
	        {"rounds", required_argument, NULL, 'r'},
	        {"adapter-timeout", required_argument, NULL, OPT_TIMEOUT},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	*o = (at_opts){.keys = 4, .procs = 4, .rounds = 300};
	opterr = 0;
	optind = 1;
	int c, rc = 0;
	while (!rc && (c = getopt_long(argc, argv, ":hk:p:r:", lo, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return -1;
		case 'k':
			rc = count_arg("--keys", optarg, 1, 65536, &o->keys);
			break;
		case 'p':
			rc = count_arg("--processes", optarg, 2, 64, &o->procs);
			break;
		case 'r':
			rc = count_arg("--rounds", optarg, 1, 100000, &o->rounds);
			break;
		case OPT_LEASE:
			o->url = optarg;
			o->lease = true;
			break;
		case OPT_TIMEOUT: {
			int e = fb_parse_duration(optarg, false, &o->timeout_ns);
			if (e)
				rc = at_bad("--adapter-timeout '%s': %s", optarg,
				            fb_duration_error(e, false));
			break;
		}
		case ':':
			rc = at_bad("%s needs a value (see --help)", argv[optind - 1]);
			break;
		default:
			rc = optopt ? at_bad("unknown option '-%c' (see --help)", optopt)
			            : at_bad("unknown option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (rc)
		return rc;
	if (o->lease && optind < argc)
		return at_bad("'%s': one adapter at a time (--lease names it; quote a command "
		              "with arguments: --lease \"exec:CMD ARG...\")",
		              argv[optind]);
	if (o->lease && strncmp(o->url, "exec:", 5) != 0)
		return at_bad("--lease '%s': not an adapter; adapter-test takes --lease "
		              "exec:COMMAND",
		              o->url);
	if (o->lease)
		return 0;
	if (optind == argc)
		return at_bad("needs the adapter to test: fencebench adapter-test exec:COMMAND "
		              "(a store adapter) or --lease exec:COMMAND (a lease adapter)");
	if (optind + 1 < argc)
		return at_bad("'%s': one adapter at a time (quote a command with arguments: "
		              "\"exec:CMD ARG...\")",
		              argv[optind + 1]);
	o->url = argv[optind];
	if (strncmp(o->url, "exec:", 5) != 0)
		return at_bad("'%s': not an adapter; adapter-test takes exec:COMMAND", o->url);
	return 0;
}

int at_probe(at *t, at_open_fn open, void (*version)(void *, char *, size_t), void (*close)(void *),
             const fb_engine_config *cfg, char *name, size_t nlen, char *ver, size_t vlen)
{
	char err[2600] = "";
	void *eng;
	fb_err e = open(cfg, t->o->url, &eng, err, sizeof err);
	if (e != FB_OK) {
		fprintf(stderr, "fencebench adapter-test: %s\n", err);
		return e == FB_EINVAL ? 2 : 3;
	}
	t->offers = fb_exec_offers(eng);
	snprintf(name, nlen, "%s", *fb_exec_name(eng) ? fb_exec_name(eng) : "yours");
	version(eng, ver, vlen);
	close(eng);
	return 0;
}

/* A first process's hello: what the adapter offers, its name and version;
 * whether it can be tested at all (as a run, it needs reset, final and
 * read + write or debit). */
static int probe(at *t, char *name, size_t nlen, char *version, size_t vlen)
{
	fb_engine_config cfg = config_of(t, 1);
	int rc = at_probe(t, X->open, X->version, X->close, &cfg, name, nlen, version, vlen);
	if (rc)
		return rc;
	bool rmw = at_has(t, FB_XOP_READ) && at_has(t, FB_XOP_WRITE);
	if (!at_has(t, FB_XOP_RESET) || !at_has(t, FB_XOP_FINAL) ||
	    !(rmw || at_has(t, FB_XOP_DEBIT))) {
		char offered[128];
		fb_exec_ops_list(t->offers, offered, sizeof offered);
		return at_bad("%s: its hello offers %s; a test (as a run) needs reset, final, and "
		              "read + write or debit",
		              t->o->url, offered);
	}
	t->op = rmw ? FB_OP_RMW : FB_OP_DEBIT;
	return 0;
}

void at_begin(at *t)
{
	t->v = V_PASS;
	t->why[0] = 0;
	t->loglen = 0;
	t->log[0] = 0;
}

int fb_adapter_test_main(int argc, char **argv)
{
	at_opts o;
	int rc = parse(argc, argv, &o);
	if (rc)
		return rc < 0 ? 0 : rc;
	if (o.lease)
		return fb_adapter_test_lease(&o);
	at t = {.o = &o};
	char name[32], version[64];
	if ((rc = probe(&t, name, sizeof name, version, sizeof version)))
		return rc;
	uint64_t t0 = fb_clock_now(fb_clock_monotonic());
	char proto[32];
	snprintf(proto, sizeof proto, "protocol %d", FB_EXEC_PROTOCOL);
	bool named = strcmp(version, proto) != 0; /* else the engine's stand-in */
	printf("fencebench adapter-test %s\nadapter '%s'%s%s%s, %s, %u keys, race: %u processes x "
	       "%u rounds on key %u\n\n",
	       o.url, name, named ? " (" : "", named ? version : "", named ? ")" : "", proto,
	       o.keys, o.procs, o.rounds, o.keys - 1);
	fflush(stdout);
	at_tally y = {.t0 = t0};
	size_t n = sizeof contracts / sizeof contracts[0];
	for (size_t i = 0; i <= n && !t.fatal; i++) {
		bool is_race = i == n;
		at_begin(&t);
		if (session_open(&t, is_race ? o.procs : 1)) {
			if (is_race)
				c_race(&t);
			else
				contracts[i].run(&t);
		}
		session_close(&t);
		if (t.fatal)
			break;
		const char *cname = is_race ? "race" : contracts[i].name;
		if (is_race) {
			char says[96];
			snprintf(says, sizeof says, "%u processes race key %u, %u rounds", o.procs,
			         o.keys - 1, o.rounds);
			printf("%s  %-8s %s\n", at_verdict_name(t.v), cname, says);
			printf("%.*s      %s\n", t.v == V_FAIL ? (int)t.loglen : 0, t.log, t.why);
		} else {
			at_print(&t, cname, contracts[i].says);
		}
		at_count(&y, &t, cname);
	}
	return at_finish(&t, &y);
}

void at_count(at_tally *y, const at *t, const char *cname)
{
	y->ran++;
	y->skipped += t->v == V_NA;
	if (t->v == V_FAIL) {
		size_t used = strlen(y->names);
		snprintf(y->names + used, sizeof y->names - used, "%s%s", y->failed ? ", " : "",
		         cname);
		y->failed++;
	}
}

int at_finish(const at *t, const at_tally *y)
{
	double s = (double)(fb_clock_now(fb_clock_monotonic()) - y->t0) / 1e9;
	if (t->fatal) {
		fflush(stdout);
		fprintf(stderr, "fencebench adapter-test: %s\n", t->why);
		return t->fatal;
	}
	if (y->failed)
		printf("\nadapter-test: FAIL !!! %u of %u contracts broken (%s), in %.1f s\n",
		       y->failed, y->ran, y->names, s);
	else
		printf("\nadapter-test: PASS, %u of %u contracts held%s, in %.1f s\n",
		       y->ran - y->skipped, y->ran, y->skipped ? " (the others n/a)" : "", s);
	return y->failed ? 1 : 0;
}
