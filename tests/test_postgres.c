/*
 * The PostgreSQL store against a throwaway server (tests/servers.c): the
 * three disciplines' rules as the server applies them, the history it
 * writes in the same statement, concurrent writers on their own
 * connections (under a database whose default isolation is repeatable
 * read, too), a shared run's prepare, and the failures (an unreachable
 * URL, a server killed mid-run, a server stopped with SIGSTOP). Skipped
 * when PostgreSQL is not installed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "fbtest.h"
#include "backend.h"
#include "fbengine.h"
#include "options.h"
#include "postgres.h"
#include "proxy.h"
#include "servers.h"

static fb_server server; /* one for every test but the ones that kill theirs */
static const fb_store_ops *const ops = &fb_pg_store_ops;

#define FENCED       FB_FENCED
#define WRITE_FENCED FB_WRITE_FENCED
#define UNFENCED     FB_UNFENCED
#define ALL_MODES    ((1u << FENCED) | (1u << WRITE_FENCED) | (1u << UNFENCED))
#define CLIENT       7

static fb_engine_config config(uint32_t keys, int64_t balance)
{
	return (fb_engine_config){.keys = keys,
	                          .modes = ALL_MODES,
	                          .initial_balance = balance,
	                          .amount = 1,
	                          .op = FB_OP_RMW,
	                          .client_id = CLIENT,
	                          .threads = 4};
}

typedef struct pg {
	void *eng;
	void *conn;
} pg;

/* An engine on url, prepared fresh (or not), and one worker's context. */
static pg pg_start(const char *url, const fb_engine_config *cfg, bool fresh, uint16_t worker)
{
	pg p = {0};
	char err[1024] = "";
	fb_err rc = ops->open(cfg, url, &p.eng, err, sizeof err);
	check(rc == FB_OK, "open %s: %s (%s)", url, fb_strerror(rc), err);
	rc = ops->prepare(p.eng, fresh, err, sizeof err);
	check(rc == FB_OK, "prepare: %s (%s)", fb_strerror(rc), err);
	rc = ops->connect(p.eng, worker, &p.conn, err, sizeof err);
	check(rc == FB_OK, "connect: %s (%s)", fb_strerror(rc), err);
	return p;
}

static void pg_end(pg *p)
{
	ops->disconnect(p->conn);
	ops->close(p->eng);
}

static bool rd(pg *p, fb_discipline d, uint32_t key, uint64_t token, fb_store_result *r)
{
	fb_io io = ops->read(p->conn, d, key, token, r);
	check(io != FB_IO_ERROR, "read %s key %u token %llu: %s", fb_discipline_name(d), key,
	      (unsigned long long)token, ops->error(p->conn));
	return io == FB_IO_OK;
}

static bool wr(pg *p, fb_discipline d, uint32_t key, int64_t balance, uint64_t token,
               fb_store_result *r)
{
	fb_io io = ops->write(p->conn, d, key, balance, token, NULL, r);
	check(io != FB_IO_ERROR, "write %s key %u token %llu: %s", fb_discipline_name(d), key,
	      (unsigned long long)token, ops->error(p->conn));
	check(r->ok == (io == FB_IO_OK), "result.ok agrees with the return value");
	return io == FB_IO_OK;
}

static bool debit(pg *p, fb_discipline d, uint32_t key, int64_t amount, uint64_t token,
                  fb_store_result *r)
{
	fb_io io = ops->debit(p->conn, d, key, amount, token, r);
	check(io != FB_IO_ERROR, "debit %s key %u token %llu: %s", fb_discipline_name(d), key,
	      (unsigned long long)token, ops->error(p->conn));
	check(r->ok == (io == FB_IO_OK), "result.ok agrees with the return value");
	return io == FB_IO_OK;
}

static void final_of(pg *p, fb_discipline d, uint32_t keys, int64_t *bal, uint64_t *last)
{
	fb_io io = ops->final(p->conn, d, keys, bal, last);
	check(io == FB_IO_OK, "final %s: %s", fb_discipline_name(d), ops->error(p->conn));
}

/* ---- the disciplines ---------------------------------------------------- */

static void test_fenced_read_refuses_below_highest_and_registers(void **state)
{
	(void)state;
	fb_engine_config cfg = config(2, 100);
	pg p = pg_start(server.url, &cfg, true, 1);
	fb_store_result r;
	check(rd(&p, FENCED, 0, 5, &r), "a first read with 5 is served");
	check_eq(r.balance, 100, "balance served");
	check_eq(r.highest, 0, "nothing seen before");
	check(!rd(&p, FENCED, 0, 4, &r), "a read with 4 < registered 5 is refused");
	check(rd(&p, FENCED, 0, 5, &r), "a read with the registered 5 is served");
	check_eq(r.highest, 5, "and reports the registered 5");
	check(!wr(&p, FENCED, 0, 50, 4, &r), "a write with 4 is refused");
	check(r.stale, "a refused write is the stale one");
	check(wr(&p, FENCED, 0, 50, 5, &r), "a write with 5 after a read with 5 is accepted");
	check(!r.stale, "an accepted fenced write is never stale");
	check_eq(r.before, 100, "it replaced 100");
	check_eq(r.balance, 50, "and left 50");
	check_eq(r.version, 1, "the key's first write");
	check_eq(r.highest, 5, "the highest fence seen before it");
	check(!wr(&p, FENCED, 0, 40, 5, &r), "a second write with 5 is stale: an equal token");
	check(rd(&p, FENCED, 0, 5, &r), "a read with the last written 5 is still served");
	check_eq(r.balance, 50, "and sees the write");
	check(rd(&p, FENCED, 0, 9, &r), "a read with 9 registers 9");
	check(!wr(&p, FENCED, 0, 30, 6, &r), "6 < registered 9: refused");
	check(wr(&p, FENCED, 0, 30, 9, &r), "the 9 holder writes");
	check_eq(r.version, 2, "the key's second write");
	check(rd(&p, FENCED, 1, 1, &r), "key 1 has its own fences");
	check_eq(r.balance, 100, "and its own balance");
	int64_t bal[2];
	uint64_t last[2];
	final_of(&p, FENCED, 2, bal, last);
	check_eq(bal[0], 30, "final balance");
	check_eq(last[0], 9, "last accepted fence");
	check_eq(bal[1], 100, "the other key's balance");
	check_eq(last[1], 0, "the other key was never written");
	pg_end(&p);
}

/* Issue 27: a stale holder's read between a newer holder's read and write.
 * The fence it carries is above the last accepted one and below the highest
 * seen: checked against the last accepted, it would be served. */
static void test_fenced_read_between_a_newer_read_and_its_write_is_refused(void **state)
{
	(void)state;
	fb_engine_config cfg = config(1, 100);
	pg p = pg_start(server.url, &cfg, true, 1);
	fb_store_result r;
	check(rd(&p, FENCED, 0, 3, &r) && wr(&p, FENCED, 0, 90, 3, &r), "the 3 holder writes");
	check(rd(&p, FENCED, 0, 9, &r), "the newer holder (9) reads");
	check(!rd(&p, FENCED, 0, 5, &r),
	      "a read with 5 after a read with 9 must be refused: 5 > the last accepted 3, but "
	      "below the highest seen 9");
	check(wr(&p, FENCED, 0, 80, 9, &r), "the 9 holder writes");
	check(!rd(&p, FENCED, 0, 5, &r), "5 is still refused after the 9 write");
	pg_end(&p);
}

static void test_write_fenced_and_unfenced_reads_register_nothing(void **state)
{
	(void)state;
	fb_engine_config cfg = config(1, 100);
	pg p = pg_start(server.url, &cfg, true, 1);
	fb_discipline ds[] = {WRITE_FENCED, UNFENCED};
	for (int i = 0; i < 2; i++) {
		const char *n = fb_discipline_name(ds[i]);
		bool unf = ds[i] == UNFENCED;
		fb_store_result r;
		check(rd(&p, ds[i], 0, 9, &r), "%s: read 9", n);
		check(rd(&p, ds[i], 0, 3, &r), "%s: a lower read is served too", n);
		check_eq(r.highest, 0, "reads registered nothing");
		check(wr(&p, ds[i], 0, 70, 3, &r), "%s: a write with 3 is accepted", n);
		check(!r.stale, "%s: 3 is the first fence", n);
		check(wr(&p, ds[i], 0, 60, 2, &r) == unf, "%s: a write with 2 after 3", n);
		check(r.stale, "%s: the store names the 2 after 3 stale, accepted or not", n);
		check(wr(&p, ds[i], 0, 55, 3, &r) == unf, "%s: an equal token 3 again", n);
		check(r.stale, "%s: an equal token is stale", n);
		check(wr(&p, ds[i], 0, 50, 4, &r), "%s: 4 is accepted", n);
		check(!r.stale, "%s: 4 is above every accepted fence", n);
		check_eq(r.before, unf ? 55 : 70, "the balance 4 replaced");
		check_eq(r.highest, 3, "the highest fence before 4");
		check_eq(r.version, unf ? 4 : 2, "4's place in the key's commit order");
		int64_t bal;
		uint64_t last;
		final_of(&p, ds[i], 1, &bal, &last);
		check_eq(bal, 50, "final balance");
		check_eq(last, 4, "last accepted fence");
	}
	pg_end(&p);
}

static void test_unfenced_stale_is_against_the_highest_accepted_not_the_last(void **state)
{
	(void)state;
	fb_engine_config cfg = config(1, 100);
	pg p = pg_start(server.url, &cfg, true, 1);
	fb_store_result r;
	check(wr(&p, UNFENCED, 0, 90, 5, &r) && !r.stale, "5 first");
	check(wr(&p, UNFENCED, 0, 80, 3, &r) && r.stale, "3 after 5: stale");
	check(wr(&p, UNFENCED, 0, 70, 4, &r), "4 after 3 after 5");
	check(r.stale, "4 is stale: 5 was accepted before it, though the last was 3");
	check_eq(r.highest, 5, "the highest fence before 4");
	int64_t bal;
	uint64_t last;
	final_of(&p, UNFENCED, 1, &bal, &last);
	check_eq(last, 4, "the last accepted fence, not the highest");
	pg_end(&p);
}

/*
 * DESIGN section 1: A (33) reads 100, B (34) reads 100, A writes 99, B
 * writes 99. Write-fenced accepts both (no write went backwards) and A's
 * debit is lost; fenced refuses A, whose 33 is below the registered 34.
 */
static void test_read_registration_prevents_the_lost_update(void **state)
{
	(void)state;
	fb_engine_config cfg = config(1, 100);
	pg a = pg_start(server.url, &cfg, true, 1);
	char err[512];
	void *bconn;
	check(ops->connect(a.eng, 2, &bconn, err, sizeof err) == FB_OK, "B connects: %s", err);
	pg b = {a.eng, bconn};
	fb_discipline ds[] = {FENCED, WRITE_FENCED};
	for (int i = 0; i < 2; i++) {
		const char *n = fb_discipline_name(ds[i]);
		fb_store_result ra, rb, r;
		check(rd(&a, ds[i], 0, 33, &ra), "%s: A reads with 33", n);
		check(rd(&b, ds[i], 0, 34, &rb), "%s: B reads with 34", n);
		check_eq(ra.balance, 100, "A read 100");
		check_eq(rb.balance, 100, "B read 100");
		bool a_ok = wr(&a, ds[i], 0, ra.balance - 1, 33, &r);
		check(a_ok == (ds[i] == WRITE_FENCED),
		      "%s: A's write with 33 after B's read with 34", n);
		check(wr(&b, ds[i], 0, rb.balance - 1, 34, &r), "%s: B's write with 34", n);
		check_eq(r.before, ds[i] == WRITE_FENCED ? 99 : 100, "what B's write replaced");
		int64_t bal;
		uint64_t last;
		final_of(&a, ds[i], 1, &bal, &last);
		check_eq(bal, 99, "one debit's effect is in the balance");
		check_eq(last, 34, "B's fence is the last");
	}
	ops->disconnect(bconn);
	pg_end(&a);
}

static void test_debit_subtracts_in_the_store_with_the_same_checks(void **state)
{
	(void)state;
	fb_engine_config cfg = config(1, 100);
	cfg.op = FB_OP_DEBIT;
	pg p = pg_start(server.url, &cfg, true, 1);
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		const char *n = fb_discipline_name((fb_discipline)d);
		fb_store_result r;
		check(debit(&p, (fb_discipline)d, 0, 10, 5, &r), "%s: debit 10 with 5", n);
		check_eq(r.before, 100, "debit replaced 100");
		check_eq(r.balance, 90, "and left 90");
		bool late = debit(&p, (fb_discipline)d, 0, 10, 4, &r);
		check(late == (d == UNFENCED), "%s: a debit with 4 after 5", n);
		check(r.stale, "%s: the 4 after 5 is stale", n);
		if (late) {
			check_eq(r.before, 90, "the stale debit replaced 90");
			check_eq(r.balance, 80, "and left 80");
		}
		check(debit(&p, (fb_discipline)d, 0, 10, 5, &r) == (d == UNFENCED),
		      "%s: an equal token debits only unfenced", n);
		int64_t bal;
		uint64_t last;
		final_of(&p, (fb_discipline)d, 1, &bal, &last);
		check_eq(bal, d == UNFENCED ? 70 : 90, "final balance after the debits");
	}
	pg_end(&p);
}

static void test_tokens_beyond_the_fence_space_are_refused(void **state)
{
	(void)state;
	fb_engine_config cfg = config(1, 100);
	pg p = pg_start(server.url, &cfg, true, 1);
	fb_store_result r;
	check(!wr(&p, UNFENCED, 0, 1, FB_FENCE_MAX + 1, &r), "a token above FB_FENCE_MAX");
	check(!r.stale, "is refused, not stale");
	check(wr(&p, UNFENCED, 0, 1, FB_FENCE_MAX, &r), "FB_FENCE_MAX itself is a fence");
	pg_end(&p);
}

/* ---- the history ---------------------------------------------------------- */

#define MAX_ROWS 4096

typedef struct rows {
	fb_history_row r[MAX_ROWS];
	int n;
	bool ordered; /* (discipline, key, version) ascending */
} rows;

static void collect(void *ctx, const fb_history_row *h)
{
	rows *rs = ctx;
	if (rs->n) {
		const fb_history_row *p = &rs->r[rs->n - 1];
		if (h->d < p->d ||
		    (h->d == p->d &&
		     (h->key < p->key || (h->key == p->key && h->version <= p->version))))
			rs->ordered = false;
	}
	if (rs->n < MAX_ROWS)
		rs->r[rs->n] = *h;
	rs->n++;
}

static rows *history_of(void *conn)
{
	rows *rs = calloc(1, sizeof *rs);
	rs->ordered = true;
	fb_io io = ops->history(conn, collect, rs);
	check(io == FB_IO_OK, "history: %s", ops->error(conn));
	check(rs->n <= MAX_ROWS, "more history rows (%d) than this test expects", rs->n);
	check(rs->ordered, "history ordered by discipline, key and version");
	return rs;
}

static void test_history_records_exactly_the_accepted_writes(void **state)
{
	(void)state;
	fb_engine_config cfg = config(2, 100);
	pg p = pg_start(server.url, &cfg, true, 3);
	/* (discipline, key, balance, token): a mix of accepted and refused */
	struct step {
		fb_discipline d;
		uint32_t key;
		int64_t bal;
		uint64_t token;
		bool is_debit;
	} steps[] = {
	        {UNFENCED, 0, 90, 5, false},     {UNFENCED, 0, 80, 3, false},
	        {UNFENCED, 0, 2, 5, true},       {UNFENCED, 1, 60, 1, false},
	        {FENCED, 0, 90, 5, false},       {FENCED, 0, 80, 3, false},
	        {FENCED, 0, 3, 6, true},         {FENCED, 0, 70, 6, false},
	        {WRITE_FENCED, 1, 50, 2, false}, {WRITE_FENCED, 1, 40, 2, false},
	        {WRITE_FENCED, 1, 30, 8, false},
	};
	fb_store_result acc[16];
	struct step accs[16];
	int na = 0;
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		fb_store_result r;
		bool ok = steps[i].is_debit ? debit(&p, steps[i].d, steps[i].key, steps[i].bal,
		                                    steps[i].token, &r)
		                            : wr(&p, steps[i].d, steps[i].key, steps[i].bal,
		                                 steps[i].token, &r);
		if (ok) {
			accs[na] = steps[i];
			acc[na++] = r;
		}
	}
	check_eq(na, 8, "accepted writes in the script");
	rows *rs = history_of(p.conn);
	check_eq(rs->n, na, "one history row per accepted write, no more");
	/* Match each accepted write to its row: same discipline, key, version. */
	for (int i = 0; i < na; i++) {
		const fb_history_row *h = NULL;
		for (int j = 0; j < rs->n; j++)
			if (rs->r[j].d == accs[i].d && rs->r[j].key == accs[i].key &&
			    (uint16_t)rs->r[j].version == acc[i].version)
				h = &rs->r[j];
		check(h, "accepted write %d (%s key %u version %llu) is in the history", i,
		      fb_discipline_name(accs[i].d), accs[i].key,
		      (unsigned long long)acc[i].version);
		check_eq(h->fence, accs[i].token, "the row's fence");
		check_eq(h->before, acc[i].before, "the row's before");
		check_eq(h->after, acc[i].balance, "the row's after");
		check_eq(h->store_stale, acc[i].stale, "the row's stale flag");
		check_eq(h->client, CLIENT, "the row's client");
		check_eq(h->worker, 3, "the row's worker");
	}
	/* Per key: versions 1..n, each before the previous after. */
	for (int j = 0; j < rs->n; j++) {
		bool first = !j || rs->r[j - 1].d != rs->r[j].d || rs->r[j - 1].key != rs->r[j].key;
		check_eq(rs->r[j].version, first ? 1 : rs->r[j - 1].version + 1, "version order");
		check_eq(rs->r[j].before, first ? 100 : rs->r[j - 1].after, "before/after chain");
	}
	int stale = 0;
	for (int j = 0; j < rs->n; j++)
		stale += rs->r[j].store_stale;
	check_eq(stale, 2, "the two unfenced writes at or below 5 after 5");
	free(rs);
	pg_end(&p);
}

/*
 * Four workers on their own connections, one key, tokens from one shared
 * counter, each cycle a fenced read then a write of balance - 1, against
 * all three disciplines. The history must be one chain per discipline,
 * with strictly increasing fences where fences are checked, and fenced
 * must have lost no debit.
 */
#define WRITERS 4
#define CYCLES  200

typedef struct writer {
	void *eng;
	uint16_t id;
	_Atomic uint64_t *next;
	uint64_t accepted[FB_DISCIPLINES];
	char err[512];
} writer;

static void *write_loop(void *arg)
{
	writer *w = arg;
	void *conn;
	if (ops->connect(w->eng, w->id, &conn, w->err, sizeof w->err) != FB_OK)
		return NULL;
	for (int i = 0; i < CYCLES && !w->err[0]; i++) {
		/* relaxed: only uniqueness and growth matter */
		uint64_t t = atomic_fetch_add_explicit(w->next, 1, memory_order_relaxed) + 1;
		for (int d = 0; d < FB_DISCIPLINES && !w->err[0]; d++) {
			fb_store_result r, out;
			fb_io io = ops->read(conn, (fb_discipline)d, 0, t, &r);
			if (io == FB_IO_OK)
				io = ops->write(conn, (fb_discipline)d, 0, r.balance - 1, t, &r,
				                &out);
			if (io == FB_IO_ERROR)
				snprintf(w->err, sizeof w->err, "%s", ops->error(conn));
			else if (io == FB_IO_OK)
				w->accepted[d]++;
		}
	}
	ops->disconnect(conn);
	return NULL;
}

static void writers_leave_one_chain_per_key(const char *url)
{
	fb_engine_config cfg = config(1, 1000000);
	pg p = pg_start(url, &cfg, true, 0);
	_Atomic uint64_t next = 0;
	writer w[WRITERS];
	pthread_t th[WRITERS];
	for (int i = 0; i < WRITERS; i++) {
		w[i] = (writer){.eng = p.eng, .id = (uint16_t)(i + 1), .next = &next};
		check(pthread_create(&th[i], NULL, write_loop, &w[i]) == 0, "pthread_create");
	}
	uint64_t accepted[FB_DISCIPLINES] = {0};
	for (int i = 0; i < WRITERS; i++) {
		pthread_join(th[i], NULL);
		check(!w[i].err[0], "writer %d failed: %s", i + 1, w[i].err);
		for (int d = 0; d < FB_DISCIPLINES; d++)
			accepted[d] += w[i].accepted[d];
	}
	check_eq(accepted[UNFENCED], WRITERS * CYCLES, "unfenced accepts every write");
	rows *rs = history_of(p.conn);
	int at = 0;
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		const char *n = fb_discipline_name((fb_discipline)d);
		int first = at;
		uint64_t max_fence = 0;
		for (; at < rs->n && rs->r[at].d == (fb_discipline)d; at++) {
			const fb_history_row *h = &rs->r[at];
			bool head = at == first;
			check_eq(h->version, at - first + 1, "versions 1..n");
			check_eq(h->before, head ? 1000000 : rs->r[at - 1].after,
			         "before/after chain");
			if (d != UNFENCED)
				check(head || h->fence > rs->r[at - 1].fence,
				      "%s: fence %llu at version %llu after %llu", n,
				      (unsigned long long)h->fence, (unsigned long long)h->version,
				      (unsigned long long)rs->r[at - 1].fence);
			/* the store's stale flag against our own recount */
			check(h->store_stale == (h->fence <= max_fence),
			      "%s: version %llu's stale flag", n, (unsigned long long)h->version);
			if (h->fence > max_fence)
				max_fence = h->fence;
		}
		check_eq(at - first, accepted[d], "one history row per accepted write");
		int64_t bal;
		uint64_t last;
		final_of(&p, (fb_discipline)d, 1, &bal, &last);
		check(at > first, "%s: some writes were accepted", n);
		check_eq(bal, rs->r[at - 1].after, "the final balance is the last row's after");
		check_eq(last, rs->r[at - 1].fence, "the last fence is the last row's");
		if (d == FENCED)
			check_eq(bal, 1000000 - (int64_t)accepted[d], "fenced lost no debit");
	}
	check_eq(at, rs->n, "no rows outside the three disciplines");
	free(rs);
	pg_end(&p);
}

static void test_concurrent_writers_leave_one_chain_per_key(void **state)
{
	(void)state;
	writers_leave_one_chain_per_key(server.url);
}

static void silent(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/* One statement on a plain libpq connection of the test's own. */
static void sql_on(const char *url, const char *sql)
{
	PGconn *c = PQconnectdb(url);
	check(PQstatus(c) == CONNECTION_OK, "connect %s: %s", url, PQerrorMessage(c));
	PQsetNoticeProcessor(c, silent, NULL);
	PGresult *res = PQexec(c, sql);
	check(PQresultStatus(res) == PGRES_COMMAND_OK, "%s: %s", sql, PQerrorMessage(c));
	PQclear(res);
	PQfinish(c);
}

/*
 * A database whose sessions default to REPEATABLE READ, where two
 * concurrent UPDATEs of one row fail the later with 40001: the engine pins
 * READ COMMITTED on every connection, so the writers all succeed or are
 * refused as stale, never FB_IO_ERROR. A database of its own, so that the
 * other tests' sessions keep the server's default whatever happens here.
 */
static void test_isolation_is_pinned_to_read_committed(void **state)
{
	(void)state;
	sql_on(server.url, "DROP DATABASE IF EXISTS fb_repeatable");
	sql_on(server.url, "CREATE DATABASE fb_repeatable");
	sql_on(server.url, "ALTER DATABASE fb_repeatable SET default_transaction_isolation = "
	                   "'repeatable read'");
	char url[sizeof server.url + 32];
	const char *slash = strrchr(server.url, '/');
	snprintf(url, sizeof url, "%.*s/fb_repeatable", (int)(slash - server.url), server.url);

	/* the trap is armed: a session there starts in repeatable read */
	PGconn *c = PQconnectdb(url);
	check(PQstatus(c) == CONNECTION_OK, "connect %s: %s", url, PQerrorMessage(c));
	PGresult *res = PQexec(c, "SHOW default_transaction_isolation");
	check(PQresultStatus(res) == PGRES_TUPLES_OK, "SHOW: %s", PQerrorMessage(c));
	check(strcmp(PQgetvalue(res, 0, 0), "repeatable read") == 0, "the database's default: %s",
	      PQgetvalue(res, 0, 0));
	PQclear(res);
	PQfinish(c);

	writers_leave_one_chain_per_key(url);
	sql_on(server.url, "DROP DATABASE fb_repeatable");
}

/* ---- a phase in one round trip: pipeline mode ------------------------------ */

static void test_a_batch_takes_each_store_s_outcome_on_its_own(void **state)
{
	(void)state;
	fb_engine_config cfg = config(2, 100);
	pg p = pg_start(server.url, &cfg, true, 1);
	fb_test_store_batch_contract(ops, p.conn);
	pg_end(&p);
}

/* Issue 27: the store's fence path above 2^32 (bigint columns, whole). */
static void test_fences_above_2_32_are_whole(void **state)
{
	(void)state;
	fb_engine_config cfg = config(1, 100);
	pg p = pg_start(server.url, &cfg, true, 1);
	fb_test_store_fences_above_2_32(ops, p.conn);
	pg_end(&p);
}

/* A trigger on the account table that acts on write-fenced updates only
 * (`body`: plpgsql); prepare, which drops the tables, removes it. */
static void arm_write_fenced_trigger(const char *body)
{
	char sql[1024];
	snprintf(sql, sizeof sql,
	         "CREATE OR REPLACE FUNCTION fb_test_trap() RETURNS trigger LANGUAGE plpgsql AS "
	         "$$ BEGIN %s RETURN NEW; END $$",
	         body);
	sql_on(server.url, sql);
	sql_on(server.url,
	       "CREATE TRIGGER fb_test_trap BEFORE UPDATE ON fencebench_account "
	       "FOR EACH ROW WHEN (NEW.discipline = 1) EXECUTE FUNCTION fb_test_trap()");
}

/* The server fails the write-fenced statement: with a sync point after
 * each statement it is that statement's transaction alone that aborts,
 * and the fenced and unfenced writes beside it in the pipeline commit. */
static void test_a_server_error_in_a_batch_is_that_store_s_alone(void **state)
{
	(void)state;
	fb_engine_config cfg = config(4, 100);
	pg p = pg_start(server.url, &cfg, true, 1);
	arm_write_fenced_trigger("RAISE EXCEPTION 'fb_test_trap refuses';");
	fb_test_store_batch_one_store_fails(ops, p.conn, 2, 50, false);
	check(strstr(ops->error(p.conn), "fb_test_trap refuses") &&
	              strstr(ops->error(p.conn), "SQLSTATE P0001"),
	      "in the server's own words: %s", ops->error(p.conn));
	pg_end(&p);
}

/* The history rows of store d, key 0, by a plain connection; -1: none. */
static long long history_rows(int d)
{
	PGconn *c = PQconnectdb(server.url);
	char sql[128];
	snprintf(sql, sizeof sql,
	         "SELECT count(*) FROM fencebench_history WHERE discipline = %d AND id = 0", d);
	PGresult *res = PQstatus(c) == CONNECTION_OK ? PQexec(c, sql) : NULL;
	long long n =
	        res && PQresultStatus(res) == PGRES_TUPLES_OK ? atoll(PQgetvalue(res, 0, 0)) : -1;
	PQclear(res);
	PQfinish(c);
	return n;
}

typedef struct lost_write {
	void *conn;
	fb_store_result r;
	fb_io io;
} lost_write;

static void *write_in_thread(void *p)
{
	lost_write *w = p;
	w->io = ops->debit(w->conn, FB_WRITE_FENCED, 0, 1, 5, &w->r);
	return NULL;
}

/*
 * Issue 24, a reply lost after its write committed: the store's
 * connection goes through fencebench's proxy, which holds every byte
 * towards the client; the debit commits (the test sees its history row on
 * a connection of its own), then the proxy resets the connection. The
 * engine connects again (through the proxy), ends the old backend, finds
 * its debit in the history and settles it as accepted, with the version
 * and balances there, without running it twice.
 */
static void test_a_reply_lost_after_the_commit_is_settled_as_accepted(void **state)
{
	(void)state;
	fb_proxy *px = NULL;
	int port = 0;
	char err[512] = "", url[300];
	check_eq(fb_proxy_start("127.0.0.1", server.port, 0, &px, &port, err, sizeof err), FB_OK,
	         err);
	const char *at = strchr(server.url, '@');
	const char *slash = at ? strchr(at, '/') : NULL;
	check(at && slash, "the server's URL is user@host:port/db: %s", server.url);
	snprintf(url, sizeof url, "%.*s127.0.0.1:%d%s", (int)(at + 1 - server.url), server.url,
	         port, slash);
	fb_engine_config cfg = config(1, 100);
	pg p = pg_start(url, &cfg, true, 1);
	fb_proxy_stats st;
	fb_proxy_stats_get(px, &st);
	check_eq(st.conns, 2, "the admin connection, then the worker's (accept number 1)");
	check_eq(fb_proxy_strike(px, FB_PROXY_DELAY, FB_PROXY_TO_CLIENT, UINT64_C(60000000000), 0,
	                         true, 1),
	         1, "the worker's replies held");
	lost_write w = {.conn = p.conn};
	pthread_t t;
	check_eq(pthread_create(&t, NULL, write_in_thread, &w), 0, "the writer's thread");
	/* bounded: the commit is the server's, in well under 30 s */
	long long n = 0;
	for (int i = 0; i < 3000 && n < 1; i++) {
		n = history_rows(FB_WRITE_FENCED);
		if (n < 1)
			nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	check_eq(n, 1, "the debit committed while its reply was held");
	check_eq(fb_proxy_strike(px, FB_PROXY_RESET, FB_PROXY_BOTH, 0, 0, true, 1), 1,
	         "the worker's connection reset");
	pthread_join(t, NULL);
	check(w.io == FB_IO_OK && w.r.ok && w.r.version == 1 && w.r.balance == 99 &&
	              w.r.before == 100 && !w.r.stale,
	      "settled from the history as accepted (%d, version %llu, %lld -> %lld): %s",
	      (int)w.io, (unsigned long long)w.r.version, (long long)w.r.before,
	      (long long)w.r.balance, ops->error(p.conn));
	check_eq(history_rows(FB_WRITE_FENCED), 1, "and not run twice");
	fb_store_result r;
	check(rd(&p, FB_WRITE_FENCED, 0, 5, &r) && r.balance == 99,
	      "the connection made again serves the next call");
	pg_end(&p);
	fb_proxy_stop(px, NULL);
}

typedef struct lost_batch {
	void *conn;
	fb_store_result r[3];
	fb_io io[3];
} lost_batch;

static void *batch_in_thread(void *p)
{
	lost_batch *b = p;
	ops->batch(b->conn, 3, fb_test_copy_batch, 0, 1, b->r, b->io);
	return NULL;
}

/* A debit and its copy in one batch, every reply held by the proxy until
 * all three committed, then the connection reset: each settled as its own
 * history row (the first copy not seen accepted), not both as the last. */
static void test_a_write_and_its_copy_both_lost_are_settled_in_order(void **state)
{
	(void)state;
	fb_proxy *px = NULL;
	int port = 0;
	char err[512] = "", url[300];
	check_eq(fb_proxy_start("127.0.0.1", server.port, 0, &px, &port, err, sizeof err), FB_OK,
	         err);
	const char *at = strchr(server.url, '@');
	const char *slash = at ? strchr(at, '/') : NULL;
	check(at && slash, "the server's URL is user@host:port/db: %s", server.url);
	snprintf(url, sizeof url, "%.*s127.0.0.1:%d%s", (int)(at + 1 - server.url), server.url,
	         port, slash);
	fb_engine_config cfg = config(1, 100);
	pg p = pg_start(url, &cfg, true, 1);
	check_eq(fb_proxy_strike(px, FB_PROXY_DELAY, FB_PROXY_TO_CLIENT, UINT64_C(60000000000), 0,
	                         true, 1),
	         1, "the worker's replies held");
	lost_batch b = {.conn = p.conn};
	pthread_t t;
	check_eq(pthread_create(&t, NULL, batch_in_thread, &b), 0, "the batch's thread");
	long long n = 0;
	for (int i = 0; i < 3000 && n < 2; i++) {
		n = history_rows(FB_UNFENCED);
		if (n < 2)
			nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	check_eq(n, 2, "both copies committed while their replies were held");
	check_eq(fb_proxy_strike(px, FB_PROXY_RESET, FB_PROXY_BOTH, 0, 0, true, 1), 1,
	         "the worker's connection reset");
	pthread_join(t, NULL);
	fb_test_store_copy_settled(b.r, b.io, ops->error(p.conn));
	check_eq(history_rows(FB_UNFENCED), 2, "and none run twice");
	pg_end(&p);
	fb_proxy_stop(px, NULL);
}

/* The backend ends itself in the write-fenced statement, once (as a
 * server that drops a connection mid-batch): the fenced write before it
 * committed at its sync point, the write-fenced one died with the backend,
 * the unfenced one never ran. Issue 24: the engine connects again and
 * settles the two from the history: neither is there, so each is sent
 * again, once, and lands. */
static void test_a_connection_lost_mid_batch_is_settled_from_the_history(void **state)
{
	(void)state;
	fb_engine_config cfg = config(2, 100);
	pg p = pg_start(server.url, &cfg, true, 1);
	sql_on(server.url, "DROP SEQUENCE IF EXISTS fb_test_once");
	sql_on(server.url, "CREATE SEQUENCE fb_test_once");
	arm_write_fenced_trigger("IF nextval('fb_test_once') = 1 THEN "
	                         "PERFORM pg_terminate_backend(pg_backend_pid()); END IF;");
	fb_test_store_batch_lost_after_first(ops, p.conn, true);
	pg q = pg_start(server.url, &cfg, false, 2);
	rows *rs = history_of(q.conn);
	int per[FB_DISCIPLINES] = {0};
	for (int i = 0; i < rs->n; i++)
		per[rs->r[i].d] += rs->r[i].after == 90;
	check(rs->n == 3 && per[0] == 1 && per[1] == 1 && per[2] == 1,
	      "the history holds each store's write once (%d rows)", rs->n);
	free(rs);
	pg_end(&q);
	pg_end(&p);
}

/* ---- prepare ---------------------------------------------------------------- */

static void drop_tables(const char *url)
{
	PGconn *c = PQconnectdb(url);
	check(PQstatus(c) == CONNECTION_OK, "psql connect: %s", PQerrorMessage(c));
	PGresult *res = PQexec(c, "SET client_min_messages = warning; DROP TABLE IF EXISTS "
	                          "fencebench_history, fencebench_account, fencebench_meta");
	check(PQresultStatus(res) == PGRES_COMMAND_OK, "drop: %s", PQerrorMessage(c));
	PQclear(res);
	PQfinish(c);
}

static fb_err prepare_with(const fb_engine_config *cfg, bool fresh, char *err, size_t len)
{
	void *eng;
	fb_err rc = ops->open(cfg, server.url, &eng, err, len);
	check(rc == FB_OK, "open: %s", err);
	rc = ops->prepare(eng, fresh, err, len);
	ops->close(eng);
	return rc;
}

static void test_prepare_not_fresh_joins_a_matching_store_and_refuses_another(void **state)
{
	(void)state;
	char err[1024];
	drop_tables(server.url);
	fb_engine_config cfg = config(4, 100);
	cfg.modes = 1u << FENCED;
	/* an empty database: a later process of a shared run may come first */
	check(prepare_with(&cfg, false, err, sizeof err) == FB_OK, "prepare on nothing: %s", err);
	pg p = pg_start(server.url, &cfg, false, 1);
	fb_store_meta m;
	check(ops->meta(p.conn, &m) == FB_IO_OK, "meta: %s", ops->error(p.conn));
	check_eq(m.initial_balance, 100, "meta balance");
	check_eq(m.amount, 1, "meta amount");
	check_eq(m.keys, 4, "meta keys");
	check_eq(m.op, FB_OP_RMW, "meta op");
	check_eq(m.modes, 1u << FENCED, "meta modes");
	fb_store_result r;
	check(wr(&p, FENCED, 2, 42, 7, &r), "a write before the second process joins");

	fb_engine_config other = cfg;
	other.initial_balance = 200;
	err[0] = 0;
	check_eq(prepare_with(&other, false, err, sizeof err), FB_EINVAL, "another balance");
	check(strstr(err, "initial balance 100 (this run 200)"), "says what differs: %s", err);
	other = cfg;
	other.keys = 8;
	other.amount = 3;
	check_eq(prepare_with(&other, false, err, sizeof err), FB_EINVAL, "another key count");
	check(strstr(err, "4 keys (this run 8)") && strstr(err, "amount 1 (this run 3)"),
	      "names both differences: %s", err);
	check(!strstr(err, "initial balance"), "and nothing that matches: %s", err);

	other = cfg;
	other.modes = ALL_MODES;
	other.client_id = 2;
	check(prepare_with(&other, false, err, sizeof err) == FB_OK, "a matching process joins: %s",
	      err);
	int64_t bal[4];
	uint64_t last[4];
	final_of(&p, FENCED, 4, bal, last);
	check_eq(bal[2], 42, "joining kept the balance written before");
	check_eq(last[2], 7, "and its fence");
	final_of(&p, UNFENCED, 4, bal, last);
	check_eq(bal[3], 100, "the joiner's own disciplines were seeded");
	check(ops->meta(p.conn, &m) == FB_IO_OK, "meta: %s", ops->error(p.conn));
	check_eq(m.modes, ALL_MODES, "the disciplines of both processes");

	check(prepare_with(&other, true, err, sizeof err) == FB_OK, "fresh: %s", err);
	final_of(&p, FENCED, 4, bal, last);
	check_eq(bal[2], 100, "a fresh prepare starts over");
	check(ops->meta(p.conn, &m) == FB_IO_OK, "meta: %s", ops->error(p.conn));
	pg_end(&p);
}

static void test_version_is_the_servers(void **state)
{
	(void)state;
	fb_engine_config cfg = config(1, 100);
	void *eng;
	char err[512], v[64] = "";
	check(ops->open(&cfg, server.url, &eng, err, sizeof err) == FB_OK, "open: %s", err);
	ops->version(eng, v, sizeof v);
	check(v[0] >= '1' && v[0] <= '9' && strchr(v, '.') && !strchr(v, ' '),
	      "a version number: \"%s\"", v);
	ops->close(eng);
}

/* ---- failures ---------------------------------------------------------------- */

/* A port nobody listens on (the kernel's, released at once). */
static int dead_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof a;
	check(bind(fd, (struct sockaddr *)&a, sizeof a) == 0, "bind: %s", strerror(errno));
	check(getsockname(fd, (struct sockaddr *)&a, &len) == 0, "getsockname");
	close(fd);
	return ntohs(a.sin_port);
}

static void test_unreachable_url_is_esys_with_the_password_redacted(void **state)
{
	(void)state;
	fb_engine_config cfg = config(1, 100);
	int port = dead_port();
	char url[256], err[1024], where[64];
	void *eng = (void *)1;
	snprintf(url, sizeof url, "postgres://fencebench:s3cret@127.0.0.1:%d/postgres", port);
	snprintf(where, sizeof where, "127.0.0.1:%d", port);
	check_eq(ops->open(&cfg, url, &eng, err, sizeof err), FB_ESYS, "nothing listens");
	check(eng == NULL, "no engine on failure");
	check(strstr(err, where), "the message names the server: %s", err);
	check(strstr(err, "fencebench:***@"), "and redacts the password: %s", err);
	check(!strstr(err, "s3cret"), "the password is not in: %s", err);

	snprintf(url, sizeof url, "host=127.0.0.1 port=%d user=fencebench password=s3cret", port);
	check_eq(ops->open(&cfg, url, &eng, err, sizeof err), FB_ESYS, "conninfo, nothing listens");
	check(strstr(err, "password=***"), "conninfo redacted: %s", err);
	check(!strstr(err, "s3cret"), "the password is not in: %s", err);

	check_eq(ops->open(&cfg, "host=127.0.0.1 bogus=1", &eng, err, sizeof err), FB_EINVAL,
	         "an unknown conninfo option is the user's mistake");
	check(strstr(err, "bogus"), "and named: %s", err);
	check_eq(ops->open(&cfg, "postgres://u:s3c%zzret@127.0.0.1/x", &eng, err, sizeof err),
	         FB_EINVAL, "a malformed URL");
	check(!strstr(err, "s3c") && !strstr(err, "zzret"), "the password is not in: %s", err);
}

static bool port_free(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	bool ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 1) == 0;
	close(fd);
	return ok;
}

static void check_gone(const fb_server *s, pid_t pid, int port, const char *dir)
{
	struct stat st;
	check(stat(dir, &st) < 0 && errno == ENOENT, "%s is removed", dir);
	check(kill(pid, 0) < 0 && errno == ESRCH, "the postmaster %d is gone", (int)pid);
	check(port_free(port), "port %d is free again", port);
	check_eq(s->pid, 0, "the server forgets its pid");
	check(!s->dir[0], "and its directory");
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static void test_servers_stop_a_server_with_clients_and_clean_up(void **state)
{
	(void)state;
	fb_server s;
	int rc = fb_server_start(FB_SERVER_POSTGRES, &s);
	check_eq(rc, 1, s.why);
	check(s.pid > 0 && s.port > 0, "a pid and a port");
	char where[64];
	snprintf(where, sizeof where, "@127.0.0.1:%d/", s.port);
	check(strstr(s.url, where), "the URL names the port: %s", s.url);
	PGconn *c = PQconnectdb(s.url);
	check(PQstatus(c) == CONNECTION_OK, "connect: %s", PQerrorMessage(c));
	pid_t pid = s.pid;
	int port = s.port;
	char dir[sizeof s.dir];
	memcpy(dir, s.dir, sizeof dir);
	PQsetErrorVerbosity(c, PQERRORS_VERBOSE); /* messages with their SQLSTATE */
	fb_server_stop(&s); /* a client still connected: a fast shutdown ends it */
	check_gone(&s, pid, port, dir);
	/* The server ended the client itself (57P01, which only a fast
	 * shutdown sends), rather than waiting for it to leave (a smart
	 * shutdown) until the SIGKILL fallback killed its backend unheard. */
	PGresult *res = PQexec(c, "SELECT 1");
	check(PQresultStatus(res) == PGRES_FATAL_ERROR, "the client's connection is over");
	check(strstr(PQerrorMessage(c), "57P01"),
	      "ended by the shutdown (terminating connection due to administrator command): %s",
	      PQerrorMessage(c));
	PQclear(res);
	fb_server_stop(&s); /* idempotent */
	PQfinish(c);
}

static void test_server_killed_mid_run_is_io_error_not_a_crash(void **state)
{
	(void)state;
	fb_server s;
	int rc = fb_server_start(FB_SERVER_POSTGRES, &s);
	check_eq(rc, 1, s.why);
	fb_engine_config cfg = config(2, 100);
	pg p = pg_start(s.url, &cfg, true, 1);
	fb_store_result r;
	check(wr(&p, FENCED, 0, 90, 1, &r), "a write while the server lives");
	pid_t pid = s.pid;
	int port = s.port;
	char dir[sizeof s.dir], where[64];
	memcpy(dir, s.dir, sizeof dir);
	snprintf(where, sizeof where, "127.0.0.1:%d", port);

	fb_server_kill(&s);
	check_eq(ops->write(p.conn, FENCED, 0, 80, 2, NULL, &r), FB_IO_ERROR,
	         "a write to a dead server");
	check(strstr(ops->error(p.conn), where), "the error names the server: %s",
	      ops->error(p.conn));
	check_eq(ops->read(p.conn, FENCED, 0, 3, &r), FB_IO_ERROR, "and so does a read");
	check_eq(ops->debit(p.conn, UNFENCED, 0, 1, 3, &r), FB_IO_ERROR, "and a debit");
	int64_t bal[2];
	uint64_t last[2];
	check_eq(ops->final(p.eng, FENCED, 2, bal, last), FB_IO_ERROR, "final on the engine");
	check(strstr(ops->error(p.eng), where), "names the server: %s", ops->error(p.eng));
	rows *rs = calloc(1, sizeof *rs);
	check_eq(ops->history(p.conn, collect, rs), FB_IO_ERROR, "history");
	check_eq(rs->n, 0, "no rows from a dead server");
	free(rs);
	fb_store_meta m;
	check_eq(ops->meta(p.conn, &m), FB_IO_ERROR, "meta");
	char err[512];
	void *conn2 = NULL;
	check_eq(ops->connect(p.eng, 2, &conn2, err, sizeof err), FB_ESYS, "a new connection");
	check(conn2 == NULL, "none handed out");
	pg_end(&p);
	fb_server_stop(&s);
	check_gone(&s, pid, port, dir);
}

/* Whether pid is stopped (state T in /proc/PID/stat). */
static bool is_stopped(pid_t pid)
{
	char path[64], st = 0;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	/* "pid (comm) S ...": the state follows the last ')' */
	char buf[512];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	if (p && p[1] == ' ')
		st = p[2];
	return st == 'T';
}

/*
 * Send sig to the postmaster and to every process it forked: each backend
 * leads a session of its own, so a signal to the process group would miss
 * them, and a stopped postmaster alone still lets the open connections'
 * backends answer. SIGSTOP freezes the whole server, as a stopped
 * container or a partition would; SIGCONT thaws it. How many processes
 * got it.
 */
static int signal_server(pid_t pid, int sig)
{
	/* The postmaster is stopped first and thawed last: a running one may
	 * fork a child (for a connection waiting in its backlog) that the list
	 * below would miss. kill() returns before the postmaster has stopped:
	 * a bounded poll (not a sleep) waits for it. */
	int n = 0;
	if (sig == SIGSTOP) {
		n += kill(pid, sig) == 0;
		for (int i = 0; i < 5000 && !is_stopped(pid); i++)
			nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
	FILE *f = fopen(path, "r");
	if (f) {
		int child;
		while (fscanf(f, "%d", &child) == 1)
			n += kill(child, sig) == 0;
		fclose(f);
	}
	if (sig != SIGSTOP)
		n += kill(pid, sig) == 0;
	return n;
}

typedef struct outcome {
	fb_io io;
	double took;
	char err[768];
} outcome;

#define TIMEOUT_S 0.5

/*
 * A server that stops answering (SIGSTOP): a call gives up at the
 * configured deadline with FB_IO_ERROR and "no reply within 0.5 s", on a
 * worker's connection and on the engine's own; the connection is closed
 * then, so every later call on it fails at once with the same message; and
 * a new connection gives up too (ESYS, after 2 s: the least a connection
 * attempt is given). Nothing is checked until the server runs again, so a
 * failed check never leaves it stopped.
 */
static void test_stopped_server_is_io_error_by_the_deadline_then_fails_fast(void **state)
{
	(void)state;
	fb_server s;
	int rc = fb_server_start(FB_SERVER_POSTGRES, &s);
	check_eq(rc, 1, s.why);
	/* prepared afresh on the default deadline: creating the tables may
	 * take longer than the short one on a loaded host */
	fb_engine_config cfg = config(2, 100), slow = cfg;
	pg_end((pg[]){pg_start(s.url, &slow, true, 1)});
	cfg.timeout_ns = (uint64_t)(TIMEOUT_S * 1e9);
	pg p = pg_start(s.url, &cfg, false, 1);
	fb_store_result r;
	check(wr(&p, FENCED, 0, 90, 1, &r), "a write while the server runs");

	outcome o[6];
	struct timespec t0;
	int frozen = signal_server(s.pid, SIGSTOP);
	/* 0: the next write; 1, 2: later calls on that connection */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	o[0].io = ops->write(p.conn, FENCED, 0, 80, 2, NULL, &r);
	o[0].took = seconds_since(&t0);
	snprintf(o[0].err, sizeof o[0].err, "%s", ops->error(p.conn));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	o[1].io = ops->read(p.conn, FENCED, 0, 3, &r);
	o[1].took = seconds_since(&t0);
	snprintf(o[1].err, sizeof o[1].err, "%s", ops->error(p.conn));
	rows *rs = calloc(1, sizeof *rs);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	o[2].io = ops->history(p.conn, collect, rs);
	o[2].took = seconds_since(&t0);
	snprintf(o[2].err, sizeof o[2].err, "%s", ops->error(p.conn));
	/* 3, 4: the engine's own connection, then a later call on it */
	int64_t bal[2];
	uint64_t last[2];
	clock_gettime(CLOCK_MONOTONIC, &t0);
	o[3].io = ops->final(p.eng, FENCED, 2, bal, last);
	o[3].took = seconds_since(&t0);
	snprintf(o[3].err, sizeof o[3].err, "%s", ops->error(p.eng));
	fb_store_meta m;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	o[4].io = ops->meta(p.eng, &m);
	o[4].took = seconds_since(&t0);
	snprintf(o[4].err, sizeof o[4].err, "%s", ops->error(p.eng));
	/* 5: a new connection */
	void *conn2 = NULL;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fb_err crc = ops->connect(p.eng, 2, &conn2, o[5].err, sizeof o[5].err);
	o[5].took = seconds_since(&t0);
	int thawed = signal_server(s.pid, SIGCONT);

	check(frozen >= 2 && thawed == frozen, "stopped the postmaster and its %d children (%d)",
	      frozen - 1, thawed);
	char where[64];
	snprintf(where, sizeof where, "127.0.0.1:%d", s.port);
	static const char *const what[] = {"the write", "a later read", "a later history",
	                                   "final on the engine", "a later meta"};
	for (int i = 0; i < 5; i++) {
		check_eq(o[i].io, FB_IO_ERROR, what[i]);
		check(strstr(o[i].err, "no reply within 0.5 s") && strstr(o[i].err, where),
		      "%s: the error names the server and the deadline: %s", what[i], o[i].err);
		bool first = i == 0 || i == 3;
		/* The first waits the deadline out; well under the 10 s default
		 * (it is the configured deadline), with room for a loaded host. */
		if (first)
			check(o[i].took >= TIMEOUT_S && o[i].took < TIMEOUT_S + 4,
			      "%s: gave up after %.2f s", what[i], o[i].took);
		else
			check(o[i].took < TIMEOUT_S, "%s: failed at once, not after %.2f s",
			      what[i], o[i].took);
	}
	check_eq(rs->n, 0, "no rows");
	free(rs);
	check_eq(crc, FB_ESYS, "a new connection to a stopped server");
	check(conn2 == NULL, "none handed out");
	check(strstr(o[5].err, "no reply within 2 s"), "a connection gets at least 2 s: %s",
	      o[5].err);
	check(o[5].took >= 2.0 && o[5].took < 6.0, "connect gave up after %.2f s", o[5].took);

	/* the server runs again: a new engine works as before */
	pg_end(&p);
	pg q = pg_start(s.url, &slow, false, 3);
	check(wr(&q, FENCED, 1, 70, 5, &r), "a write once the server runs again");
	pg_end(&q);
	fb_server_stop(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_fenced_read_refuses_below_highest_and_registers),
	        cmocka_unit_test(test_fenced_read_between_a_newer_read_and_its_write_is_refused),
	        cmocka_unit_test(test_write_fenced_and_unfenced_reads_register_nothing),
	        cmocka_unit_test(test_unfenced_stale_is_against_the_highest_accepted_not_the_last),
	        cmocka_unit_test(test_read_registration_prevents_the_lost_update),
	        cmocka_unit_test(test_debit_subtracts_in_the_store_with_the_same_checks),
	        cmocka_unit_test(test_tokens_beyond_the_fence_space_are_refused),
	        cmocka_unit_test(test_history_records_exactly_the_accepted_writes),
	        cmocka_unit_test(test_concurrent_writers_leave_one_chain_per_key),
	        cmocka_unit_test(test_isolation_is_pinned_to_read_committed),
	        cmocka_unit_test(test_a_batch_takes_each_store_s_outcome_on_its_own),
	        cmocka_unit_test(test_fences_above_2_32_are_whole),
	        cmocka_unit_test(test_a_server_error_in_a_batch_is_that_store_s_alone),
	        cmocka_unit_test(test_a_connection_lost_mid_batch_is_settled_from_the_history),
	        cmocka_unit_test(test_a_reply_lost_after_the_commit_is_settled_as_accepted),
	        cmocka_unit_test(test_a_write_and_its_copy_both_lost_are_settled_in_order),
	        cmocka_unit_test(test_prepare_not_fresh_joins_a_matching_store_and_refuses_another),
	        cmocka_unit_test(test_version_is_the_servers),
	        cmocka_unit_test(test_unreachable_url_is_esys_with_the_password_redacted),
	        cmocka_unit_test(test_servers_stop_a_server_with_clients_and_clean_up),
	        cmocka_unit_test(test_server_killed_mid_run_is_io_error_not_a_crash),
	        cmocka_unit_test(test_stopped_server_is_io_error_by_the_deadline_then_fails_fast),
	};
	const size_t n = sizeof tests / sizeof tests[0];
	if (!fb_servers_installed("postgres engine tests", (fb_server_kind[]){FB_SERVER_POSTGRES},
	                          1, n))
		return 0;
	if (fb_server_start(FB_SERVER_POSTGRES, &server) != 1) {
		fprintf(stderr, "test_postgres: cannot start a PostgreSQL server: %s\n",
		        server.why);
		return 1;
	}
	int failed = cmocka_run_group_tests_name("postgres", tests, NULL, NULL);
	fb_server_stop(&server);
	return failed;
}
