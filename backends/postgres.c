#include "postgres.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "pg_sql.h"
#include "scheme_texts.h"
#include "url.h"

/*
 * The tables. One row per (discipline, key): balance, last_fence (the last
 * accepted write's fence), seen (the highest fence the row has seen: fenced
 * reads register theirs, every accepted write raises it to its own) and
 * version (accepted writes so far). The prev_* columns are scratch: an
 * UPDATE copies the values it replaces there, because the right-hand sides
 * of SET read the very row version being updated (after a lock wait too:
 * READ COMMITTED re-evaluates them on the newest version), so RETURNING
 * them is the race-free way to learn what a write replaced. fillfactor
 * leaves room on each page for HOT updates: no index column ever changes.
 *
 * The history is written by the same statement as the balance, so a
 * write whose reply was lost is still there, or not, for the checker.
 */
#define ACCOUNT_COLUMNS                                                                            \
	"(discipline smallint NOT NULL, id int NOT NULL, balance bigint NOT NULL,"                 \
	" last_fence bigint NOT NULL DEFAULT 0, seen bigint NOT NULL DEFAULT 0,"                   \
	" version bigint NOT NULL DEFAULT 0, prev_balance bigint, prev_fence bigint,"              \
	" prev_seen bigint, PRIMARY KEY (discipline, id)) WITH (fillfactor = 50)"
#define HISTORY_COLUMNS                                                                            \
	"(discipline smallint NOT NULL, id int NOT NULL, version bigint NOT NULL,"                 \
	" fence bigint NOT NULL, before bigint NOT NULL, after bigint NOT NULL,"                   \
	" stale boolean NOT NULL, client int NOT NULL, worker int NOT NULL,"                       \
	" at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (discipline, id, version))"
#define META_COLUMNS                                                                               \
	"(one boolean PRIMARY KEY DEFAULT true CHECK (one), initial_balance bigint NOT NULL,"      \
	" amount bigint NOT NULL, keys int NOT NULL, op int NOT NULL, modes int NOT NULL)"

/* cfg->timeout_ns of 0; and the least a connection attempt is given (libpq's
 * own floor for connect_timeout) */
#define DEFAULT_TIMEOUT_NS (UINT64_C(10) * 1000000000)
/* issue 24: how long a connection that broke is dialled again, and how
 * many times one call connects again before it gives up */
#define RELINK_NS      (UINT64_C(1) * 1000000000)
#define RELINK_TRIES   5
#define MIN_CONNECT_NS (UINT64_C(2) * 1000000000)

/* pg_type OIDs of the parameters (server/catalog/pg_type_d.h, not in libpq-fe.h) */
#define INT8OID 20
#define INT4OID 23

typedef struct pg_engine pg_engine;

/* One server connection and its last failure. pg is NULL once a call went
 * unanswered past the deadline: the connection was closed, and every later
 * call fails at once with that call's message. */
typedef struct pg_conn {
	PGconn *pg;
	pg_engine *e;
	uint16_t worker;
	const char *doing; /* the store operation under way ("fenced write"), or NULL */
	char err[768];
	/* issue 24: the server's pid of this connection's backend; whether
	 * the connection broke (libpq may not say so yet, or a pipeline cut
	 * short closed it already); and per store the last write this
	 * connection saw accepted (key, token) and how many copies of it:
	 * what a write whose reply was lost is settled against */
	int pid;
	/* pg_postmaster_start_time() in microseconds at the first connect (0:
	 * unknown): a server restarted since cannot settle from its history
	 * what the lost connection ran */
	long long started;
	bool lost;
	struct {
		uint32_t key;
		uint64_t token;
		unsigned copies;
	} acked[FB_DISCIPLINES];
} pg_conn;

/*
 * The engine keeps the admin connection for prepare and version. It is the
 * struct's first member, so the engine itself is a valid context for
 * final, history, meta and error, which need no prepared statement.
 */
struct pg_engine {
	pg_conn admin;
	fb_engine_config cfg;
	uint64_t timeout_ns; /* cfg.timeout_ns, or the default */
	char *url;           /* as libpq takes it: without sql=FILE */
	char redacted[512];
	char version[64]; /* the server's, read at open */
	/* sql=FILE: the fenced column is the user's own statements on their
	 * own table (pg_sql.h); fencebench's tables keep the other columns */
	bool own;
	fb_user_sql user;
	char sql_path[256];
	uint32_t table_modes; /* the disciplines fencebench's tables hold */
};

/* The first line of a libpq message, without its trailing newline. */
static void first_line(const char *msg, char *buf, size_t len)
{
	if (!msg || !*msg)
		msg = "unknown error";
	size_t n = strcspn(msg, "\n");
	if (n >= len)
		n = len - 1;
	memcpy(buf, msg, n);
	buf[n] = 0;
}

/* DROP ... IF EXISTS and friends talk; a benchmark's stderr is not theirs. */
static void quiet(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

/*
 * A failed call: FB_IO_ERROR, with the reason in c->err. A server error
 * names its SQLSTATE; a failure without one (no result, or a result libpq
 * made up itself) is a lost connection, described by libpq's message.
 * Either way a write's outcome is unknown to us: the caller counts it as
 * indeterminate and the history says later what happened. A server error
 * names the store operation it answered (c->doing), if any.
 */
static fb_io fail(pg_conn *c, PGresult *res)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	char line[512];
	if (state && PQstatus(c->pg) == CONNECTION_OK) {
		/* the server's own error: the store operation's it answered */
		first_line(PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY), line, sizeof line);
		fb_say(c->err, sizeof c->err, "%s: %s%s%s (SQLSTATE %s)", c->e->redacted,
		       c->doing ? c->doing : "", c->doing ? ": " : "", line, state);
	} else {
		first_line(res && *PQresultErrorMessage(res) ? PQresultErrorMessage(res)
		                                             : PQerrorMessage(c->pg),
		           line, sizeof line);
		fb_say(c->err, sizeof c->err, "%s: %s", c->e->redacted, line);
	}
	PQclear(res);
	return FB_IO_ERROR;
}

/* ---- calls with a deadline ------------------------------------------------ */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

static uint64_t deadline_of(const pg_conn *c)
{
	return now_ns() + c->e->timeout_ns;
}

/* ns as seconds, without trailing zeros: "10", "0.5", "2.25". */
static void seconds(char *buf, size_t len, uint64_t ns)
{
	fb_say(buf, len, "%.3f", (double)ns / 1e9);
	char *end = buf + strlen(buf);
	while (end > buf && end[-1] == '0')
		*--end = 0;
	if (end > buf && end[-1] == '.')
		end[-1] = 0;
}

static void say_no_reply(char *buf, size_t len, const pg_engine *e, uint64_t ns)
{
	char s[32];
	seconds(s, sizeof s, ns);
	fb_say(buf, len, "%s: no reply within %s s", e->redacted, s);
}

/* Wait until pg's socket is ready for events: 1 ready, 0 the deadline
 * passed, -1 poll failed (errno says why). */
static int wait_for(PGconn *pg, short events, uint64_t deadline)
{
	for (;;) {
		uint64_t now = now_ns();
		/* Past the deadline, one last look without waiting: the caller
		 * itself may have been suspended (a pause fault lands in the
		 * middle of a call) while the reply arrived in time. */
		uint64_t ms = now >= deadline ? 0 : (deadline - now + 999999) / 1000000;
		struct pollfd p = {.fd = PQsocket(pg), .events = events};
		if (p.fd < 0) {
			errno = EBADF;
			return -1;
		}
		int n = poll(&p, 1, ms > INT_MAX ? INT_MAX : (int)ms);
		if (n == 0 && now >= deadline)
			return 0;
		if (n > 0)
			return 1;
		if (n < 0 && errno != EINTR)
			return -1;
	}
}

/*
 * No reply by the deadline (a stopped server, a partition): the connection
 * is closed, since a reply still on its way must not be taken for a later
 * call's, and every later call on it fails at once with this message.
 */
static fb_io timed_out(pg_conn *c)
{
	PQfinish(c->pg);
	c->pg = NULL;
	say_no_reply(c->err, sizeof c->err, c->e, c->e->timeout_ns);
	return FB_IO_ERROR;
}

/* wait_for's answer as a call's outcome: FB_IO_OK ready; otherwise
 * FB_IO_ERROR with c->err set. */
static fb_io waited(pg_conn *c, int w)
{
	if (w > 0)
		return FB_IO_OK;
	if (w == 0)
		return timed_out(c);
	fb_say(c->err, sizeof c->err, "%s: poll: %s", c->e->redacted, strerror(errno));
	return FB_IO_ERROR;
}

/* Push a sent query out to the server (non-blocking connection). */
static fb_io flush_by(pg_conn *c, uint64_t deadline)
{
	for (;;) {
		int r = PQflush(c->pg);
		if (r == 0)
			return FB_IO_OK;
		if (r < 0) {
			/* issue 24: a send or a read that failed is a connection
			 * that broke (libpq may tell its status only at the next
			 * read) */
			c->lost = true;
			return fail(c, NULL);
		}
		/* the server may be waiting for us to read before it reads on */
		if (waited(c, wait_for(c->pg, POLLOUT | POLLIN, deadline)) != FB_IO_OK)
			return FB_IO_ERROR;
		if (!PQconsumeInput(c->pg)) {
			c->lost = true;
			return fail(c, NULL);
		}
	}
}

/* Wait until the next PQgetResult will not block. */
static fb_io ready_by(pg_conn *c, uint64_t deadline)
{
	while (PQisBusy(c->pg)) {
		if (waited(c, wait_for(c->pg, POLLIN, deadline)) != FB_IO_OK)
			return FB_IO_ERROR;
		if (!PQconsumeInput(c->pg)) {
			c->lost = true; /* issue 24 */
			return fail(c, NULL);
		}
	}
	return FB_IO_OK;
}

static bool failed(const PGresult *res)
{
	ExecStatusType st = PQresultStatus(res);
	return st == PGRES_FATAL_ERROR || st == PGRES_NONFATAL_ERROR || st == PGRES_BAD_RESPONSE;
}

/*
 * The rest of a call whose query `sent` (PQsend*'s return) went into the
 * connection's buffer: flush it and read every result up to the end, so
 * that the connection is free for the next call, all by the deadline. The
 * result (the first failed one, else the last), or NULL with c->err set:
 * a server error, a lost connection or no reply in time. `rows`: a
 * statement that returns rows (PGRES_TUPLES_OK); otherwise any success.
 */
static PGresult *finish(pg_conn *c, uint64_t deadline, int sent, bool rows)
{
	if (!c->pg) /* closed by an earlier call's timeout: its message stands */
		return NULL;
	if (!sent) {
		c->lost = true; /* issue 24: libpq refused to send on it */
		fail(c, NULL);
		return NULL;
	}
	if (flush_by(c, deadline) != FB_IO_OK)
		return NULL;
	PGresult *keep = NULL;
	for (;;) {
		if (ready_by(c, deadline) != FB_IO_OK) {
			PQclear(keep);
			return NULL;
		}
		PGresult *res = PQgetResult(c->pg);
		if (!res)
			break;
		if (!keep || !failed(keep)) {
			PQclear(keep);
			keep = res;
		} else {
			PQclear(res);
		}
	}
	if (!keep || failed(keep) || (rows && PQresultStatus(keep) != PGRES_TUPLES_OK)) {
		fail(c, keep);
		return NULL;
	}
	return keep;
}

/* One or more SQL statements without parameters. */
static PGresult *query(pg_conn *c, const char *sql, bool rows)
{
	uint64_t deadline = deadline_of(c);
	return finish(c, deadline, c->pg && PQsendQuery(c->pg, sql), rows);
}

/*
 * Open a connection, by the deadline (at least MIN_CONNECT_NS: libpq's
 * own floor for connect_timeout): URL or conninfo alike (expand_dbname).
 * Then make it non-blocking (every call waits in poll, against its
 * deadline) and pin READ COMMITTED, whatever the database's default: the
 * statements rely on its re-evaluation of an UPDATE on the newest row
 * version after a lock wait, where REPEATABLE READ or SERIALIZABLE would
 * fail concurrent writers with 40001.
 */
static void scrub(char *msg, const char *redacted);

static fb_err dial(pg_engine *e, uint16_t worker, pg_conn *c, char *err, size_t errlen)
{
	c->e = e;
	c->worker = worker;
	c->err[0] = 0;
	const char *const keys[] = {"dbname", NULL};
	const char *const vals[] = {e->url, NULL};
	c->pg = PQconnectStartParams(keys, vals, 1);
	if (!c->pg) {
		fb_say(err, errlen, "%s: out of memory for a connection", e->redacted);
		return FB_ENOMEM;
	}
	uint64_t limit = e->timeout_ns > MIN_CONNECT_NS ? e->timeout_ns : MIN_CONNECT_NS;
	uint64_t deadline = now_ns() + limit;
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;
	while (PQstatus(c->pg) != CONNECTION_BAD && st != PGRES_POLLING_OK &&
	       st != PGRES_POLLING_FAILED) {
		int w = wait_for(c->pg, st == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline);
		if (w == 0) {
			say_no_reply(err, errlen, e, limit);
			goto fail;
		}
		if (w < 0) {
			fb_say(err, errlen, "%s: poll: %s", e->redacted, strerror(errno));
			goto fail;
		}
		st = PQconnectPoll(c->pg);
	}
	if (PQstatus(c->pg) != CONNECTION_OK) {
		char line[512];
		first_line(PQerrorMessage(c->pg), line, sizeof line);
		/* libpq splits a URL at its first '@': a password holding one
		 * comes back quoted as part of the host */
		scrub(line, e->redacted);
		fb_say(err, errlen, "%s: %s", e->redacted, line);
		goto fail;
	}
	PQsetNoticeProcessor(c->pg, quiet, NULL);
	c->pid = PQbackendPID(c->pg);
	c->lost = false;
	if (PQsetnonblocking(c->pg, 1) != 0) {
		fail(c, NULL);
		fb_say(err, errlen, "%s", c->err);
		goto fail;
	}
	PGresult *res = query(c,
	                      "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ "
	                      "COMMITTED",
	                      false);
	if (!res) {
		fb_say(err, errlen, "%s", c->err);
		goto fail;
	}
	PQclear(res);
	return FB_OK;
fail:
	PQfinish(c->pg); /* NULL after a timeout: PQfinish ignores it */
	c->pg = NULL;
	return FB_ESYS;
}

/*
 * Mask in libpq's complaint about a malformed URL every quoted fragment the
 * redacted URL does not contain: such a fragment can only have come from
 * the password ("invalid percent-encoded token: "...").
 */
static void scrub(char *msg, const char *redacted)
{
	for (char *q = strchr(msg, '"'); q; q = strchr(q, '"')) {
		char *end = strchr(q + 1, '"');
		if (!end)
			break;
		char frag[512];
		size_t n = (size_t)(end - q - 1);
		if (n >= sizeof frag)
			n = sizeof frag - 1;
		memcpy(frag, q + 1, n);
		frag[n] = 0;
		if (n && !strstr(redacted, frag)) {
			memmove(q + 4, end, strlen(end) + 1);
			memcpy(q + 1, "***", 3);
			end = q + 4;
		}
		q = end + 1;
	}
}

static void pg_close(void *eng);

static fb_err pg_open(const fb_engine_config *cfg, const char *url, void **eng, char *err,
                      size_t errlen)
{
	*eng = NULL;
	if (!url)
		url = "";
	pg_engine *e = calloc(1, sizeof *e);
	char *bare = malloc(strlen(url) + 1);
	if (!e || !bare ||
	    !fb_user_sql_take(url, bare, strlen(url) + 1, e->sql_path, sizeof e->sql_path) ||
	    !(e->url = strdup(bare))) {
		free(e);
		free(bare);
		fb_say(err, errlen, "out of memory");
		return FB_ENOMEM;
	}
	free(bare);
	e->cfg = *cfg;
	e->timeout_ns = cfg->timeout_ns ? cfg->timeout_ns : DEFAULT_TIMEOUT_NS;
	fb_url_redact(url, e->redacted, sizeof e->redacted);
	e->own = e->sql_path[0] != 0;
	e->table_modes = cfg->modes & ~(e->own ? 1u << FB_FENCED : 0u);
	char why[480];
	if (e->own && !fb_user_sql_load(e->sql_path, &e->user, why, sizeof why)) {
		fb_say(err, errlen, "%s: sql=%s", e->redacted, why);
		pg_close(e);
		return FB_EINVAL;
	}
	url = e->url;

	/* A URL libpq cannot parse is the user's typo, not an unreachable server. */
	char *perr = NULL;
	PQconninfoOption *opts = PQconninfoParse(url, &perr);
	if (!opts) {
		char line[512];
		first_line(perr ? perr : "malformed URL or conninfo", line, sizeof line);
		scrub(line, e->redacted);
		fb_say(err, errlen, "%s: %s", e->redacted, line);
		PQfreemem(perr);
		pg_close(e);
		return FB_EINVAL;
	}
	PQconninfoFree(opts);

	fb_err rc = dial(e, 0, &e->admin, err, errlen);
	if (rc != FB_OK) {
		pg_close(e);
		return rc;
	}
	/* "15.13 (Debian 15.13-0+deb12u1)": the number is the version */
	const char *v = PQparameterStatus(e->admin.pg, "server_version");
	fb_say(e->version, sizeof e->version, "%.*s", v ? (int)strcspn(v, " ") : 1, v ? v : "?");
	*eng = e;
	return FB_OK;
}

static void pg_version(void *eng, char *buf, size_t len)
{
	pg_engine *e = eng;
	fb_say(buf, len, "%s", e->version);
}

static void pg_close(void *eng)
{
	pg_engine *e = eng;
	if (!e)
		return;
	PQfinish(e->admin.pg);
	fb_user_sql_free(&e->user);
	free(e->url);
	free(e);
}

/* ---- prepare -------------------------------------------------------------- */

/* One statement on the admin connection; false with err set on failure. */
static bool exec_ok(pg_engine *e, const char *sql, char *err, size_t errlen)
{
	PGresult *res = query(&e->admin, sql, false);
	if (res) {
		PQclear(res);
		return true;
	}
	fb_say(err, errlen, "%s", e->admin.err);
	return false;
}

/* End prepare's failed transaction, if the connection still can: the
 * error already reported stays the admin connection's. */
static void rollback(pg_engine *e)
{
	if (!e->admin.pg || PQstatus(e->admin.pg) != CONNECTION_OK)
		return;
	char keep[sizeof e->admin.err];
	memcpy(keep, e->admin.err, sizeof keep);
	PQclear(query(&e->admin, "ROLLBACK", false));
	if (e->admin.pg) /* a timeout's message is the newer news */
		memcpy(e->admin.err, keep, sizeof keep);
}

/*
 * The meta row against this run: false, with what differs in err, when a
 * store prepared for another balance, amount or key count would mix two
 * runs' numbers. A different op or set of disciplines is fine: the rows
 * and the history tell each discipline's story on their own.
 */
static bool meta_matches(pg_engine *e, const fb_store_meta *m, char *err, size_t errlen)
{
	const fb_engine_config *c = &e->cfg;
	char diff[384] = "";
	size_t o = 0;
	if (m->initial_balance != c->initial_balance)
		o += (size_t)snprintf(diff + o, sizeof diff - o,
		                      "%sinitial balance %lld (this run %lld)", o ? ", " : "",
		                      (long long)m->initial_balance, (long long)c->initial_balance);
	if (o < sizeof diff && m->amount != c->amount)
		o += (size_t)snprintf(diff + o, sizeof diff - o, "%samount %lld (this run %lld)",
		                      o ? ", " : "", (long long)m->amount, (long long)c->amount);
	if (o < sizeof diff && m->keys != c->keys)
		o += (size_t)snprintf(diff + o, sizeof diff - o, "%s%u keys (this run %u)",
		                      o ? ", " : "", m->keys, c->keys);
	if (!o)
		return true;
	fb_say(err, errlen,
	       "%s: the store was prepared with %s; prepare it afresh or run with its settings",
	       e->redacted, diff);
	return false;
}

static fb_io read_meta(pg_conn *c, fb_store_meta *out);

/*
 * Seed the selected disciplines' missing keys at the initial balance. One
 * statement per discipline and chunk of keys, each its own transaction:
 * every call is answered well within the deadline, where a million keys at
 * once would take seconds (and, inside prepare's transaction, would hold
 * every other process of a shared run waiting on the lock that long). In
 * ascending (discipline, key) order, so two processes seeding at once wait
 * at worst for each other's chunk, and never deadlock.
 */
#define SEED_CHUNK 32768u

static bool seed(pg_engine *e, char *err, size_t errlen)
{
	const fb_engine_config *c = &e->cfg;
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		if (!(e->table_modes & (1u << d)))
			continue;
		for (uint32_t lo = 0; lo < c->keys; lo += SEED_CHUNK) {
			uint32_t hi = c->keys - lo > SEED_CHUNK ? lo + SEED_CHUNK - 1 : c->keys - 1;
			char sql[512];
			fb_say(sql, sizeof sql,
			       "INSERT INTO fencebench_account (discipline, id, balance)"
			       " SELECT %d, k, %lld FROM generate_series(%u, %u) AS k"
			       " ON CONFLICT DO NOTHING",
			       d, (long long)c->initial_balance, lo, hi);
			if (!exec_ok(e, sql, err, errlen))
				return false;
		}
	}
	return true;
}

/* ---- the user's own statements (sql=FILE) ------------------------------- */

/* The columns each of the user's statements must return. */
static const char *const user_columns[FB_SQL_RESET][4] = {
        [FB_SQL_READ] = {"balance"},
        [FB_SQL_WRITE] = {"before", "balance", "version", "last_fence"},
        [FB_SQL_DEBIT] = {"before", "balance", "version", "last_fence"},
        [FB_SQL_FINAL] = {"balance", "last_fence"},
};

/* The types fencebench binds each kind's parameters as (pg_sql.h's order). */
static const Oid *user_types(fb_sql_kind k)
{
	static const Oid write_types[] = {INT8OID, INT8OID, INT4OID, INT4OID, INT4OID};
	static const Oid read_types[] = {INT4OID, INT8OID};
	static const Oid final_types[] = {INT4OID};
	static const Oid reset_types[] = {INT4OID, INT8OID};
	return k == FB_SQL_READ    ? read_types
	       : k == FB_SQL_FINAL ? final_types
	       : k == FB_SQL_RESET ? reset_types
	                           : write_types;
}

/* A server's refusal of the user's statement is bad input (FB_EINVAL);
 * a connection that failed is not (FB_ESYS). */
static fb_err user_refused(pg_engine *e, const char *what, char *err, size_t errlen)
{
	size_t n = strlen(e->redacted);
	const char *why = strncmp(e->admin.err, e->redacted, n) == 0 && e->admin.err[n] == ':'
	                          ? e->admin.err + n + 2
	                          : e->admin.err;
	fb_say(err, errlen, "%s: sql=%s: %s: %s", e->redacted, e->sql_path, what, why);
	return e->admin.pg && PQstatus(e->admin.pg) == CONNECTION_OK ? FB_EINVAL : FB_ESYS;
}

/* Before anything is written: the statements the run needs are there (the
 * parameters were checked as the file was read). */
static fb_err needed_user_sql(pg_engine *e, char *err, size_t errlen)
{
	const fb_user_sql *u = &e->user;
	bool debit = e->cfg.op == 1;
	const char *miss = !u->sql[FB_SQL_FINAL]             ? "@final"
	                   : !u->nreset                      ? "@reset"
	                   : debit && !u->sql[FB_SQL_DEBIT]  ? "@debit"
	                   : !debit && !u->sql[FB_SQL_READ]  ? "@read"
	                   : !debit && !u->sql[FB_SQL_WRITE] ? "@write"
	                                                     : NULL;
	if (!miss)
		return FB_OK;
	fb_say(err, errlen, "%s: sql=%s has no %s: a run with --op %s needs @reset, %s and @final",
	       e->redacted, e->sql_path, miss, debit ? "debit" : "rmw",
	       debit ? "@debit" : "@read, @write");
	return FB_EINVAL;
}

/* "before, balance, version and last_fence" */
static void columns_list(const char *const *want, char *buf, size_t len)
{
	buf[0] = 0;
	for (int c = 0; c < 4 && want[c]; c++)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%s",
		         !c                     ? ""
		         : c < 3 && want[c + 1] ? ", "
		                                : " and ",
		         want[c]);
}

/*
 * After the resets (which may create the user's table): the server prepares
 * each statement (syntax, tables, parameter types) and each returns the
 * columns fencebench reads. Either failing is the user's to fix:
 * FB_EINVAL, with the server's reason.
 */
static fb_err check_user_sql(pg_engine *e, char *err, size_t errlen)
{
	for (int k = 0; k < FB_SQL_RESET; k++) {
		const char *sql = e->user.sql[k];
		if (!sql)
			continue;
		char name[32], what[32];
		int np;
		fb_sql_params((fb_sql_kind)k, &np);
		fb_say(name, sizeof name, "fb_user_%s", fb_sql_kind_names[k]);
		fb_say(what, sizeof what, "@%s", fb_sql_kind_names[k]);
		PGresult *res = finish(&e->admin, deadline_of(&e->admin),
		                       e->admin.pg && PQsendPrepare(e->admin.pg, name, sql, np,
		                                                    user_types((fb_sql_kind)k)),
		                       false);
		if (res) {
			PQclear(res);
			res = finish(&e->admin, deadline_of(&e->admin),
			             PQsendDescribePrepared(e->admin.pg, name), false);
		}
		if (!res)
			return user_refused(e, what, err, errlen);
		const char *const *want = user_columns[k];
		for (int c = 0; c < 4 && want[c]; c++) {
			if (PQfnumber(res, want[c]) >= 0)
				continue;
			char has[256] = "", must[96];
			for (int f = 0; f < PQnfields(res); f++)
				snprintf(has + strlen(has), sizeof has - strlen(has), "%s%s",
				         f ? ", " : "", PQfname(res, f));
			columns_list(want, must, sizeof must);
			fb_say(err, errlen,
			       "%s: sql=%s: %s returns (%s), no column \"%s\": it must return %s",
			       e->redacted, e->sql_path, what, has, want[c], must);
			PQclear(res);
			return FB_EINVAL;
		}
		PQclear(res);
	}
	return FB_OK;
}

/* The user's resets, in order, each with ($keys, $initial_balance), when
 * the run is fresh; then the statements, checked. */
static fb_err reset_user(pg_engine *e, bool fresh, char *err, size_t errlen)
{
	char keys[16], bal[24];
	snprintf(keys, sizeof keys, "%u", e->cfg.keys);
	snprintf(bal, sizeof bal, "%lld", (long long)e->cfg.initial_balance);
	const char *vals[2] = {keys, bal};
	for (int i = 0; fresh && i < e->user.nreset; i++) {
		PGresult *res =
		        finish(&e->admin, deadline_of(&e->admin),
		               e->admin.pg && PQsendQueryParams(e->admin.pg, e->user.reset[i], 2,
		                                                user_types(FB_SQL_RESET), vals,
		                                                NULL, NULL, 0),
		               false);
		if (!res) {
			char what[32];
			fb_say(what, sizeof what, "@reset %d of %d", i + 1, e->user.nreset);
			return user_refused(e, what, err, errlen);
		}
		PQclear(res);
	}
	return check_user_sql(e, err, errlen);
}

/* Column col of row 0 of a result of the user's `what`, as an integer; a
 * column that is missing, NULL or not an integer fails the call. */
static bool user_int(pg_conn *c, const PGresult *res, const char *what, const char *col, int64_t *v)
{
	int f = PQfnumber(res, col);
	if (f < 0 || PQgetisnull(res, 0, f)) {
		fb_say(c->err, sizeof c->err, "%s: sql=%s: %s returned %s \"%s\"", c->e->redacted,
		       c->e->sql_path, what, f < 0 ? "no column" : "NULL for", col);
		return false;
	}
	const char *s = PQgetvalue(res, 0, f);
	char *end;
	errno = 0;
	*v = strtoll(s, &end, 10);
	if (errno || end == s || *end) {
		fb_say(c->err, sizeof c->err,
		       "%s: sql=%s: %s returned \"%s\" = '%.40s', not an integer", c->e->redacted,
		       c->e->sql_path, what, col, s);
		return false;
	}
	return true;
}

/* How many rows the user's statement touched: none is a refusal, one the
 * key's row, more a statement that is not about one key. */
static bool user_rows(pg_conn *c, const PGresult *res, const char *what, uint32_t key)
{
	int n = PQntuples(res);
	if (n <= 1)
		return true;
	fb_say(c->err, sizeof c->err,
	       "%s: sql=%s: %s returned %d rows for key %u: one key, one row", c->e->redacted,
	       c->e->sql_path, what, n, key);
	return false;
}

/* An accepted write of the user's (its one row): what the checker needs. */
static fb_io user_applied(pg_conn *c, PGresult *res, const char *what, uint32_t key, uint64_t token,
                          fb_store_result *r)
{
	int64_t version, last;
	if (!user_rows(c, res, what, key)) {
		PQclear(res);
		return FB_IO_ERROR;
	}
	if (PQntuples(res) == 0) {
		PQclear(res);
		r->stale = true;
		return FB_IO_REFUSED;
	}
	bool ok = user_int(c, res, what, "before", &r->before) &&
	          user_int(c, res, what, "balance", &r->balance) &&
	          user_int(c, res, what, "version", &version) &&
	          user_int(c, res, what, "last_fence", &last);
	PQclear(res);
	if (!ok)
		return FB_IO_ERROR;
	r->ok = true;
	r->version = (uint64_t)version;
	r->stale = last >= 0 && token <= (uint64_t)last; /* the store's own record */
	r->highest = last > 0 ? (uint64_t)last : 0;
	r->highest_written = true;
	return FB_IO_OK;
}

/*
 * The tables and the meta row in one transaction, serialized against other
 * fencebench processes preparing the same database by an advisory lock: a
 * shared run's processes may all start at once, and CREATE TABLE IF NOT
 * EXISTS is not safe against a concurrent twin. Then the keys, after the
 * commit (seed).
 */
static fb_err pg_prepare(void *eng, bool fresh, char *err, size_t errlen)
{
	pg_engine *e = eng;
	const fb_engine_config *c = &e->cfg;
	const char *ine = fresh ? "" : "IF NOT EXISTS ";
	char sql[2048];
	fb_err rc = e->own ? needed_user_sql(e, err, errlen) : FB_OK;
	if (rc != FB_OK)
		return rc;
	if (!exec_ok(e, "BEGIN", err, errlen))
		return FB_ESYS;
	if (!exec_ok(e, "SELECT pg_advisory_xact_lock(hashtext('fencebench prepare'))", err,
	             errlen))
		goto fail;
	if (fresh && !exec_ok(e,
	                      "DROP TABLE IF EXISTS fencebench_history, fencebench_account, "
	                      "fencebench_meta",
	                      err, errlen))
		goto fail;
	fb_say(sql, sizeof sql,
	       "CREATE TABLE %sfencebench_account " ACCOUNT_COLUMNS "; "
	       "CREATE TABLE %sfencebench_history " HISTORY_COLUMNS "; "
	       "CREATE TABLE %sfencebench_meta " META_COLUMNS,
	       ine, ine, ine);
	if (!exec_ok(e, sql, err, errlen))
		goto fail;
	fb_say(sql, sizeof sql,
	       "INSERT INTO fencebench_meta (initial_balance, amount, keys, op, modes)"
	       " VALUES (%lld, %lld, %u, %d, %u) ON CONFLICT (one) DO NOTHING",
	       (long long)c->initial_balance, (long long)c->amount, c->keys, c->op, e->table_modes);
	if (!exec_ok(e, sql, err, errlen))
		goto fail;
	if (!fresh) {
		fb_store_meta m;
		if (read_meta(&e->admin, &m) != FB_IO_OK) {
			fb_say(err, errlen, "%s", e->admin.err);
			goto fail;
		}
		if (!meta_matches(e, &m, err, errlen)) {
			rollback(e);
			return FB_EINVAL;
		}
		fb_say(sql, sizeof sql, "UPDATE fencebench_meta SET modes = modes | %u",
		       e->table_modes);
		if (!exec_ok(e, sql, err, errlen))
			goto fail;
	}
	if (!exec_ok(e, "COMMIT", err, errlen))
		goto fail;
	if (!seed(e, err, errlen))
		return FB_ESYS;
	return e->own ? reset_user(e, fresh, err, errlen) : FB_OK;
fail:
	rollback(e);
	return FB_ESYS;
}

/* ---- workers -------------------------------------------------------------- */

/*
 * The statements, one per discipline and kind. The discipline's rule is
 * the WHERE clause; a refused operation touches no row. Parameters:
 *   write/debit  $1 balance or amount, $2 token, $3 key, $4 client, $5 worker
 *   fenced read  $1 key, $2 token;  other reads  $1 key
 * Each result row: version, balance, prev_balance, prev_fence, prev_seen,
 * stale (writes); balance, prev_seen, last_fence, version (reads).
 */
static const char *const rule[FB_DISCIPLINES] = {
        [FB_FENCED] = " AND last_fence < $2 AND seen <= $2",
        [FB_WRITE_FENCED] = " AND last_fence < $2",
        [FB_UNFENCED] = "",
};

/* The store's own staleness verdict: token <= the highest fence accepted
 * before. Accepted fences only grow in the fenced disciplines, so there
 * that is the last one; unfenced reads register nothing, so there `seen`
 * is the highest ever accepted. */
static const char *const stale_expr[FB_DISCIPLINES] = {
        [FB_FENCED] = "prev_fence >= $2",
        [FB_WRITE_FENCED] = "prev_fence >= $2",
        [FB_UNFENCED] = "prev_seen >= $2",
};

static void write_sql(char *buf, size_t len, fb_discipline d, bool debit)
{
	fb_say(buf, len,
	       "WITH u AS (UPDATE fencebench_account"
	       " SET prev_balance = balance, prev_fence = last_fence, prev_seen = seen,"
	       " balance = %s, last_fence = $2, seen = greatest(seen, $2), version = version + 1"
	       " WHERE discipline = %d AND id = $3%s"
	       " RETURNING version, balance, prev_balance, prev_fence, prev_seen, %s AS stale),"
	       " h AS (INSERT INTO fencebench_history"
	       " (discipline, id, version, fence, before, after, stale, client, worker)"
	       " SELECT %d, $3, version, $2, prev_balance, balance, stale, $4, $5 FROM u)"
	       " SELECT version, balance, prev_balance, prev_fence, prev_seen, stale FROM u",
	       debit ? "balance - $1" : "$1", (int)d, rule[d], stale_expr[d], (int)d);
}

static void read_sql(char *buf, size_t len, fb_discipline d)
{
	if (d == FB_FENCED)
		fb_say(buf, len,
		       "UPDATE fencebench_account SET prev_seen = seen, seen = $2"
		       " WHERE discipline = %d AND id = $1 AND seen <= $2"
		       " RETURNING balance, prev_seen, last_fence, version",
		       (int)d);
	else
		fb_say(buf, len,
		       "SELECT balance, seen, last_fence, version FROM fencebench_account"
		       " WHERE discipline = %d AND id = $1",
		       (int)d);
}

enum { ST_WRITE, ST_DEBIT, ST_READ, ST_FINAL /* the user's only */ };

static void statement_name(char *buf, size_t len, int kind, fb_discipline d)
{
	fb_say(buf, len, "fb_%c%d", "wdrf"[kind], (int)d);
}

static fb_err prepare_statements(pg_conn *c, char *err, size_t errlen)
{
	static const Oid write_types[] = {INT8OID, INT8OID, INT4OID, INT4OID, INT4OID};
	static const Oid read_types[] = {INT4OID, INT8OID};
	static const fb_sql_kind user_kind[] = {FB_SQL_WRITE, FB_SQL_DEBIT, FB_SQL_READ,
	                                        FB_SQL_FINAL};
	const fb_user_sql *u = c->e->own ? &c->e->user : NULL;
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		bool user = u && d == FB_FENCED;
		for (int kind = ST_WRITE; kind <= (user ? ST_FINAL : ST_READ); kind++) {
			char name[16], sql[1024];
			const char *text = sql;
			if (user)
				text = u->sql[user_kind[kind]];
			else if (kind == ST_READ)
				read_sql(sql, sizeof sql, (fb_discipline)d);
			else
				write_sql(sql, sizeof sql, (fb_discipline)d, kind == ST_DEBIT);
			if (!text) /* a statement the run does not use */
				continue;
			statement_name(name, sizeof name, kind, (fb_discipline)d);
			int n = kind == ST_FINAL ? 1 : kind != ST_READ ? 5 : d == FB_FENCED ? 2 : 1;
			uint64_t deadline = deadline_of(c);
			PGresult *res = finish(c, deadline,
			                       PQsendPrepare(c->pg, name, text, n,
			                                     user ? user_types(user_kind[kind])
			                                     : kind == ST_READ ? read_types
			                                                       : write_types),
			                       false);
			if (!res) {
				fb_say(err, errlen, "%s", c->err);
				return FB_ESYS;
			}
			PQclear(res);
		}
	}
	return FB_OK;
}

static long long scalar(pg_conn *c, const char *sql);
#define STARTED_SQL "SELECT (extract(epoch FROM pg_postmaster_start_time()) * 1000000)::bigint"

static fb_err pg_connect(void *eng, uint16_t worker, void **conn, char *err, size_t errlen)
{
	pg_engine *e = eng;
	*conn = NULL;
	pg_conn *c = calloc(1, sizeof *c);
	if (!c) {
		fb_say(err, errlen, "out of memory");
		return FB_ENOMEM;
	}
	fb_err rc = dial(e, worker, c, err, errlen);
	if (rc == FB_OK)
		rc = prepare_statements(c, err, errlen);
	if (rc != FB_OK) {
		PQfinish(c->pg);
		free(c);
		return rc;
	}
	long long st = scalar(c, STARTED_SQL);
	c->started = st > 0 ? st : 0;
	*conn = c;
	return FB_OK;
}

static void pg_disconnect(void *conn)
{
	pg_conn *c = conn;
	if (!c)
		return;
	PQfinish(c->pg);
	free(c);
}

static const char *pg_error(void *conn)
{
	pg_conn *c = conn;
	return c->err[0] ? c->err : "no error";
}

static int64_t i64(const PGresult *res, int row, int col)
{
	return strtoll(PQgetvalue(res, row, col), NULL, 10);
}

static bool bad_discipline(pg_conn *c, fb_discipline d)
{
	if ((unsigned)d < FB_DISCIPLINES)
		return false;
	fb_say(c->err, sizeof c->err, "%s: no discipline %d", c->e->redacted, (int)d);
	return true;
}

/* An operation's prepared statement and its parameters, as text. */
typedef struct pg_call {
	char name[16];
	char doing[32]; /* "fenced write": what a server error answered */
	char v[5][24];
	const char *vals[5];
	int n;
} pg_call;

/*
 * What must be settled before an operation of store d is sent: a
 * discipline out of range (FB_IO_ERROR), a token no lease service mints
 * (refused, as core/store.c refuses it). False with *io and *r the outcome:
 * nothing to send. Otherwise the call, into q:
 *   write/debit  $1 balance or amount, $2 token, $3 key, $4 client, $5 worker
 *   fenced read  $1 key, $2 token;  other reads  $1 key
 */
static bool sendable(pg_conn *c, int kind, fb_discipline d, uint32_t key, int64_t value,
                     uint64_t token, fb_store_result *r, fb_io *io, pg_call *q)
{
	memset(r, 0, sizeof *r);
	r->token = token;
	*io = FB_IO_ERROR;
	if (bad_discipline(c, d))
		return false;
	if (token > FB_FENCE_MAX) {
		*io = FB_IO_REFUSED;
		return false;
	}
	static const char *const what[] = {"write", "debit", "read"};
	statement_name(q->name, sizeof q->name, kind, d);
	fb_say(q->doing, sizeof q->doing, "%s %s", fb_discipline_name(d), what[kind]);
	int at = 0;
	if (kind != ST_READ)
		snprintf(q->v[at++], sizeof q->v[0], "%lld", (long long)value);
	else
		snprintf(q->v[at++], sizeof q->v[0], "%u", key);
	if (kind != ST_READ || d == FB_FENCED)
		snprintf(q->v[at++], sizeof q->v[0], "%llu", (unsigned long long)token);
	if (kind != ST_READ) {
		snprintf(q->v[at++], sizeof q->v[0], "%u", key);
		snprintf(q->v[at++], sizeof q->v[0], "%u", c->e->cfg.client_id);
		snprintf(q->v[at++], sizeof q->v[0], "%u", (unsigned)c->worker);
	}
	for (int i = 0; i < at; i++)
		q->vals[i] = q->v[i];
	q->n = at;
	return true;
}

static int send_call(pg_conn *c, const pg_call *q)
{
	return c->pg && PQsendQueryPrepared(c->pg, q->name, q->n, q->vals, NULL, NULL, 0);
}

/* The user's read: no row is a refusal; one row serves its balance (and,
 * if it returns them, the fences the key had seen and accepted). */
static fb_io user_read(pg_conn *c, PGresult *res, uint32_t key, fb_store_result *r)
{
	if (!user_rows(c, res, "@read", key)) {
		PQclear(res);
		return FB_IO_ERROR;
	}
	if (PQntuples(res) == 0) {
		PQclear(res);
		return FB_IO_REFUSED;
	}
	int64_t seen = 0, last = 0;
	bool ok = user_int(c, res, "@read", "balance", &r->balance) &&
	          (PQfnumber(res, "seen") < 0 || user_int(c, res, "@read", "seen", &seen)) &&
	          (PQfnumber(res, "last_fence") < 0 ||
	           user_int(c, res, "@read", "last_fence", &last));
	PQclear(res);
	if (!ok)
		return FB_IO_ERROR;
	r->ok = true;
	r->before = r->balance;
	r->highest = (uint64_t)(seen > last ? seen : last);
	r->highest_written = last >= seen;
	return FB_IO_OK;
}

/* A write store d accepted, in this connection's own count. */
static void note_acked(pg_conn *c, fb_discipline d, uint32_t key, uint64_t token)
{
	if (c->acked[d].key != key || c->acked[d].token != token)
		c->acked[d].copies = 0;
	c->acked[d].key = key;
	c->acked[d].token = token;
	c->acked[d].copies++;
}

/*
 * An operation's result (cleared here) as store d's outcome. NULL: it
 * failed, c->err says why. A write or debit that touched no row was
 * refused; a fenced read that touched none was refused below the highest
 * fence seen; any other read that finds no row means an unprepared store.
 * Write rows: version, balance, prev_balance, prev_fence, prev_seen, stale;
 * read rows: balance, prev_seen (seen, unfenced), last_fence, version.
 */
static fb_io outcome(pg_conn *c, int kind, fb_discipline d, uint32_t key, uint64_t token,
                     PGresult *res, fb_store_result *r)
{
	if (!res)
		return FB_IO_ERROR;
	if (d == FB_FENCED && c->e->own) /* the user's statements, judged as theirs */
		return kind == ST_READ
		               ? user_read(c, res, key, r)
		               : user_applied(c, res, kind == ST_DEBIT ? "@debit" : "@write", key,
		                              token, r);
	if (PQntuples(res) != 1) {
		PQclear(res);
		if (kind != ST_READ) {
			r->stale = true; /* as core/store.c: a refused write is the stale one */
			return FB_IO_REFUSED;
		}
		if (d == FB_FENCED)
			return FB_IO_REFUSED;
		fb_say(c->err, sizeof c->err, "%s: no %s row for key %u: is the store prepared?",
		       c->e->redacted, fb_discipline_name(d), key);
		return FB_IO_ERROR;
	}
	bool read = kind == ST_READ;
	uint64_t fence = (uint64_t)i64(res, 0, read ? 2 : 3),
	         seen = (uint64_t)i64(res, 0, read ? 1 : 4);
	r->ok = true;
	r->version = (uint64_t)i64(res, 0, read ? 3 : 0);
	r->balance = i64(res, 0, read ? 0 : 1);
	r->before = i64(res, 0, read ? 0 : 2);
	r->highest = fence > seen ? fence : seen;
	r->highest_written = fence >= seen;
	r->stale = !read && PQgetvalue(res, 0, 5)[0] == 't';
	PQclear(res);
	if (!read)
		note_acked(c, d, key, token);
	return FB_IO_OK;
}

/*
 * One operation, one statement in its own round trip: a write or a debit
 * decides, applies and records itself in the history, or touches nothing
 * (refused); a fenced read is an UPDATE that registers its token unless a
 * higher one was seen; the other reads are a plain SELECT.
 */
static fb_io one_once(pg_conn *c, int kind, fb_discipline d, uint32_t key, int64_t value,
                      uint64_t token, fb_store_result *r)
{
	pg_call q;
	fb_io io;
	if (!sendable(c, kind, d, key, value, token, r, &io, &q))
		return io;
	uint64_t deadline = deadline_of(c);
	c->doing = q.doing;
	PGresult *res = finish(c, deadline, send_call(c, &q), true);
	c->doing = NULL;
	return outcome(c, kind, d, key, token, res, r);
}

/* ---- a lost reply, settled (issue 24) ---- */

/* The connection broke (a reset, a backend that died; libpq may have
 * been told first, or a pipeline cut short closed it): not a timeout
 * (which closes it too, saying so), nor a server's error (which leaves it
 * open). */
static bool broke(const pg_conn *c)
{
	return c->lost || (c->pg && PQstatus(c->pg) == CONNECTION_BAD);
}

/* A plain statement's single integer (the first column of its one row);
 * -1 when it failed (c->err says why). */
static long long scalar(pg_conn *c, const char *sql)
{
	PGresult *res = query(c, sql, true);
	if (!res)
		return -1;
	long long v = PQntuples(res) == 1 && !PQgetisnull(res, 0, 0) ? i64(res, 0, 0) : -1;
	PQclear(res);
	return v;
}

/*
 * Connect a connection that broke again: dialled for up to RELINK_NS, its
 * statements prepared; then its old backend is ended and waited for
 * (pg_terminate_backend, then until pg_stat_activity no longer lists it,
 * for up to the timeout), so that a transaction it still ran is committed
 * or rolled back for good before the history is asked. False: c->err says
 * why.
 */
static bool relink(pg_conn *c)
{
	int old = c->pid;
	char first[sizeof c->err];
	memcpy(first, c->err, sizeof first);
	PQfinish(c->pg);
	c->pg = NULL;
	char err[sizeof c->err] = "";
	uint64_t t0 = now_ns();
	while (dial(c->e, c->worker, c, err, sizeof err) != FB_OK ||
	       prepare_statements(c, err, sizeof err) != FB_OK) {
		PQfinish(c->pg);
		c->pg = NULL;
		if (now_ns() - t0 > RELINK_NS) {
			fb_say(c->err, sizeof c->err,
			       "lost (%.300s), and the server did not answer after it: %.300s",
			       first, err);
			return false;
		}
		fb_sleep_ns(50000000);
	}
	long long st = scalar(c, STARTED_SQL);
	if (st < 0)
		return false;
	if (c->started && st != c->started) {
		fb_say(c->err, sizeof c->err,
		       "%s: server restarted (lost: %.300s): a write whose reply was lost cannot "
		       "be "
		       "settled",
		       c->e->redacted, first);
		PQfinish(c->pg);
		c->pg = NULL;
		c->lost = false; /* not to be connected again */
		return false;
	}
	/* the new backend may have been given the old one's pid, which is then
	 * gone: ending it would end this connection */
	if (old <= 0 || old == PQbackendPID(c->pg))
		return true;
	char sql[160];
	fb_say(sql, sizeof sql, "SELECT pg_terminate_backend(%d)::int", old);
	if (scalar(c, sql) < 0)
		return false;
	fb_say(sql, sizeof sql,
	       "SELECT count(*) FROM pg_stat_activity WHERE pid = %d AND pid <> pg_backend_pid()",
	       old);
	uint64_t deadline = deadline_of(c);
	long long n;
	while ((n = scalar(c, sql)) > 0 && now_ns() < deadline)
		fb_sleep_ns(10000000);
	if (n > 0) /* else c->err says why the query failed */
		fb_say(c->err, sizeof c->err,
		       "%s: the backend of a lost connection (pid %d) did not end", c->e->redacted,
		       old);
	return n == 0;
}

/*
 * A write whose reply was lost, on the connection made again: the history
 * the write inserts in its own statement says whether it committed. One
 * copy more of (key, token) from this worker than this connection saw
 * accepted is the lost write, accepted, as the history tells it (the
 * highest fence before it: the history's highest before it; in fenced,
 * reads may have raised it within what the write still passed). None: it
 * never committed, and it is sent again, a write of its own. The user's
 * own statements (sql=FILE) keep no history here: not settled.
 */
static fb_io settle(pg_conn *c, int kind, fb_discipline d, uint32_t key, int64_t value,
                    uint64_t token, fb_store_result *r)
{
	if (kind == ST_READ)
		return one_once(c, kind, d, key, value, token, r);
	if (d == FB_FENCED && c->e->own) {
		fb_say(c->err, sizeof c->err,
		       "%s: %s write: its reply was lost, and your own SQL keeps no history to "
		       "settle it from",
		       c->e->redacted, fb_discipline_name(d));
		return FB_IO_ERROR;
	}
	char sql[640];
	fb_say(sql, sizeof sql,
	       "SELECT version, after, before, stale,"
	       " (SELECT coalesce(max(fence), 0) FROM fencebench_history p"
	       "  WHERE p.discipline = h.discipline AND p.id = h.id AND p.version < h.version),"
	       " (SELECT coalesce(max(fence), 0) FROM fencebench_history p"
	       "  WHERE p.discipline = h.discipline AND p.id = h.id AND p.version = h.version - 1)"
	       " FROM fencebench_history h WHERE discipline = %d AND id = %u AND fence = %llu"
	       " AND client = %u AND worker = %u ORDER BY version",
	       (int)d, key, (unsigned long long)token, c->e->cfg.client_id, (unsigned)c->worker);
	PGresult *res = query(c, sql, true);
	if (!res)
		return FB_IO_ERROR;
	int copies = PQntuples(res);
	int acked =
	        c->acked[d].key == key && c->acked[d].token == token ? (int)c->acked[d].copies : 0;
	if (copies <= acked) {
		PQclear(res);
		return one_once(c, kind, d, key, value, token, r);
	}
	int i = acked; /* the first copy not seen accepted: later ones were sent after it */
	uint64_t top = (uint64_t)i64(res, i, 4), last = (uint64_t)i64(res, i, 5);
	*r = (fb_store_result){.ok = true,
	                       .stale = PQgetvalue(res, i, 3)[0] == 't',
	                       .version = (uint64_t)i64(res, i, 0),
	                       .balance = i64(res, i, 1),
	                       .before = i64(res, i, 2),
	                       .token = token,
	                       .highest = top,
	                       .highest_written = top == last};
	PQclear(res);
	note_acked(c, d, key, token);
	return FB_IO_OK;
}

static fb_io one(pg_conn *c, int kind, fb_discipline d, uint32_t key, int64_t value, uint64_t token,
                 fb_store_result *r)
{
	fb_io io = one_once(c, kind, d, key, value, token, r);
	for (int t = 0; io == FB_IO_ERROR && t < RELINK_TRIES && broke(c); t++)
		if (relink(c))
			io = settle(c, kind, d, key, value, token, r);
	return io;
}

static fb_io pg_write(void *conn, fb_discipline d, uint32_t key, int64_t balance, uint64_t token,
                      const fb_store_result *read, fb_store_result *r)
{
	(void)read; /* the in-process store's hint; the server decides on its own row */
	return one(conn, ST_WRITE, d, key, balance, token, r);
}

static fb_io pg_debit(void *conn, fb_discipline d, uint32_t key, int64_t amount, uint64_t token,
                      fb_store_result *r)
{
	return one(conn, ST_DEBIT, d, key, amount, token, r);
}

static fb_io pg_read(void *conn, fb_discipline d, uint32_t key, uint64_t token, fb_store_result *r)
{
	return one(conn, ST_READ, d, key, 0, token, r);
}

/* ---- a phase in one round trip: libpq's pipeline mode ------------------- */

#if defined(LIBPQ_HAS_PIPELINING) && !defined(FB_PG_NO_PIPELINE)
#define PG_PIPELINE 1
#ifdef LIBPQ_HAS_SEND_PIPELINE_SYNC
#define sync_point PQsendPipelineSync /* libpq 17: queued, flushed once after the last */
#else
#define sync_point PQpipelineSync /* flushes as it goes */
#endif

/*
 * Queue the n calls, each followed by its own sync point, and push them
 * out. The sync after each statement is what keeps it its own transaction:
 * a pipeline segment without one runs as one implicit transaction, which
 * would hold every row it touched until the last statement and let one
 * store's error abort the others'. The calls queued (the rest failed to
 * queue, c->err says why).
 */
static int pipeline_send(pg_conn *c, int n, const pg_call *q, uint64_t deadline)
{
	if (!c->pg) /* closed by an earlier call's timeout: its message stands */
		return 0;
	if (!PQenterPipelineMode(c->pg)) {
		fail(c, NULL);
		return 0;
	}
	int queued = 0;
	while (queued < n && send_call(c, &q[queued]) && sync_point(c->pg))
		queued++;
	if (queued < n) {
		fail(c, NULL);
		/* a statement queued without its sync point must never run; a
		 * connection that refused to take one broke (issue 24: made
		 * again, its old backend ended, before anything is settled) */
		c->lost = true;
		PQfinish(c->pg);
		c->pg = NULL;
		return queued;
	}
	return flush_by(c, deadline) == FB_IO_OK ? queued : 0;
}

/*
 * The next statement's result, once its sync point has come back (the
 * statement's transaction is over: committed, or not at all). NULL, with
 * c->err set (naming c->doing for a server error), if it failed or the
 * connection went before the sync point came: the outcome is unknown.
 */
static PGresult *pipeline_result(pg_conn *c, uint64_t deadline)
{
	PGresult *keep = NULL;
	bool synced = false;
	int ends = 0;
	while (c->pg && !synced && ready_by(c, deadline) == FB_IO_OK) {
		PGresult *res = PQgetResult(c->pg);
		/* NULL ends the statement's results; twice running, or on a
		 * broken connection, no sync point is coming */
		if (!res && (PQstatus(c->pg) != CONNECTION_OK || ++ends > 1))
			break;
		if (!res)
			continue;
		ends = 0;
		synced = PQresultStatus(res) == PGRES_PIPELINE_SYNC;
		if (synced || keep)
			PQclear(res);
		else
			keep = res;
	}
	if (synced && keep && PQresultStatus(keep) == PGRES_TUPLES_OK)
		return keep;
	if (c->pg)
		fail(c, keep); /* the server's error, or lost before the sync point */
	else
		PQclear(keep); /* timed out: c->err says so */
	return NULL;
}

/*
 * A phase's operations in one round trip: every statement that can be sent
 * queued with its own sync point, sent in one go, then each result taken
 * in order as `one` takes its own. The first failure's reason is the one
 * left on the connection. Back out of pipeline mode after, so that the
 * single calls find the connection as they left it.
 */
static void pg_batch(void *conn, int n, const fb_store_op *ops, uint32_t key, uint64_t token,
                     fb_store_result *r, fb_io *io)
{
	static const int kind_of[] = {[FB_STORE_READ] = ST_READ,
	                              [FB_STORE_WRITE] = ST_WRITE,
	                              [FB_STORE_DEBIT] = ST_DEBIT};
	pg_conn *c = conn;
	pg_call q[FB_BATCH_MAX];
	int kind[FB_BATCH_MAX], sent[FB_BATCH_MAX], ns = 0;
	for (int i = 0; i < n; i++) {
		kind[i] = kind_of[ops[i].verb];
		if (sendable(c, kind[i], ops[i].d, key, ops[i].value, token, &r[i], &io[i], &q[ns]))
			sent[ns++] = i;
	}
	if (!ns)
		return;
	uint64_t deadline = deadline_of(c);
	int queued = pipeline_send(c, ns, q, deadline);
	char first[sizeof c->err] = "";
	for (int j = 0; j < ns; j++) {
		int i = sent[j];
		c->doing = q[j].doing;
		PGresult *res = j < queued ? pipeline_result(c, deadline) : NULL;
		c->doing = NULL;
		io[i] = outcome(c, kind[i], ops[i].d, key, token, res, &r[i]);
		if (io[i] == FB_IO_ERROR && !first[0])
			memcpy(first, c->err, sizeof first);
	}
	bool lost = broke(c); /* issue 24: settled below, once made again */
	if (!lost && c->pg && PQpipelineStatus(c->pg) != PQ_PIPELINE_OFF &&
	    !PQexitPipelineMode(c->pg)) {
		if (!first[0])
			fail(c, NULL);
		PQfinish(c->pg); /* results still due: no later call could trust it */
		c->pg = NULL;
	}
	/* a reset mid-batch: each call it left unanswered is asked again or
	 * settled, in order, one statement at a time */
	for (int t = 0; lost && t < RELINK_TRIES; t++) {
		lost = false;
		if (!relink(c)) { /* a reset may strike the new one too */
			memcpy(first, c->err, sizeof first);
			lost = broke(c);
			continue;
		}
		first[0] = 0;
		for (int j = 0; j < ns && !lost; j++) {
			int i = sent[j];
			if (io[i] != FB_IO_ERROR)
				continue;
			io[i] = settle(c, kind[i], ops[i].d, key, ops[i].value, token, &r[i]);
			if (io[i] == FB_IO_ERROR && !first[0])
				memcpy(first, c->err, sizeof first);
			lost = io[i] == FB_IO_ERROR && broke(c);
		}
	}
	if (first[0])
		memcpy(c->err, first, sizeof first);
}

#endif

/* ---- after the run: plain statements, so any connection serves ----------- */

/* The user's @final, once a key: its row's balance and last fence. */
static fb_io user_final(pg_conn *c, uint32_t keys, int64_t *balance, uint64_t *last_fence)
{
	char name[16];
	statement_name(name, sizeof name, ST_FINAL, FB_FENCED);
	for (uint32_t k = 0; k < keys; k++) {
		char kv[16];
		snprintf(kv, sizeof kv, "%u", k);
		const char *vals[1] = {kv};
		PGresult *res = finish(
		        c, deadline_of(c),
		        c->pg && PQsendQueryPrepared(c->pg, name, 1, vals, NULL, NULL, 0), true);
		if (!res)
			return FB_IO_ERROR;
		int64_t last;
		bool ok = PQntuples(res) == 1 &&
		          user_int(c, res, "@final", "balance", &balance[k]) &&
		          user_int(c, res, "@final", "last_fence", &last);
		if (PQntuples(res) != 1)
			fb_say(c->err, sizeof c->err,
			       "%s: sql=%s: @final returned %d rows for key %u", c->e->redacted,
			       c->e->sql_path, PQntuples(res), k);
		PQclear(res);
		if (!ok)
			return FB_IO_ERROR;
		last_fence[k] = (uint64_t)last;
	}
	return FB_IO_OK;
}

static fb_io final_once(pg_conn *c, fb_discipline d, uint32_t keys, int64_t *balance,
                        uint64_t *last_fence)
{
	if (bad_discipline(c, d))
		return FB_IO_ERROR;
	if (d == FB_FENCED && c->e->own)
		return user_final(c, keys, balance, last_fence);
	char dv[8], kv[16];
	snprintf(dv, sizeof dv, "%d", (int)d);
	snprintf(kv, sizeof kv, "%u", keys);
	const char *vals[2] = {dv, kv};
	uint64_t deadline = deadline_of(c);
	PGresult *res = finish(
	        c, deadline,
	        c->pg && PQsendQueryParams(c->pg,
	                                   "SELECT id, balance, last_fence FROM fencebench_account"
	                                   " WHERE discipline = $1::smallint AND id >= 0"
	                                   " AND id < $2::int ORDER BY id",
	                                   2, NULL, vals, NULL, NULL, 0),
	        true);
	if (!res)
		return FB_IO_ERROR;
	int n = PQntuples(res);
	bool whole = n >= 0 && (uint32_t)n == keys;
	for (int i = 0; whole && i < n; i++) {
		whole = i64(res, i, 0) == i;
		balance[i] = i64(res, i, 1);
		last_fence[i] = (uint64_t)i64(res, i, 2);
	}
	PQclear(res);
	if (!whole) {
		fb_say(c->err, sizeof c->err, "%s: %d %s rows for %u keys: is the store prepared?",
		       c->e->redacted, n, fb_discipline_name(d), keys);
		return FB_IO_ERROR;
	}
	return FB_IO_OK;
}

/* Read again on a connection made again (issue 24: a reset may have
 * struck it while it stood idle during the run). */
static fb_io pg_final(void *conn, fb_discipline d, uint32_t keys, int64_t *balance,
                      uint64_t *last_fence)
{
	pg_conn *c = conn;
	fb_io io = final_once(c, d, keys, balance, last_fence);
	for (int t = 0; io == FB_IO_ERROR && t < RELINK_TRIES && broke(c); t++)
		if (relink(c))
			io = final_once(c, d, keys, balance, last_fence);
	return io;
}

/*
 * Streamed one row at a time (single-row mode): a long run's history is
 * millions of rows, which PQexec would hold in memory all at once. The
 * deadline is per result, not for the whole: a long history takes long to
 * read, but the server must not go silent.
 */
static fb_io pg_history(void *conn, void (*row)(void *ctx, const fb_history_row *h), void *ctx)
{
	pg_conn *c = conn;
	if (!c->pg)
		return FB_IO_ERROR; /* closed by an earlier timeout */
	/* sql=FILE: the fenced column is the user's table, not this history's */
	char sql[256];
	fb_say(sql, sizeof sql,
	       "SELECT discipline, id, version, fence, before, after, stale, client, worker"
	       " FROM fencebench_history WHERE discipline <> %d ORDER BY discipline, id, version",
	       c->e->own ? (int)FB_FENCED : -1);
	if (!PQsendQuery(c->pg, sql))
		return fail(c, NULL);
	/* Should single-row mode be refused, the rows come in one result:
	 * the loop serves both. */
	PQsetSingleRowMode(c->pg);
	if (flush_by(c, deadline_of(c)) != FB_IO_OK)
		return FB_IO_ERROR;
	fb_io rc = FB_IO_OK;
	/* every result up to the NULL is read, failed or not, or the
	 * connection would stay busy */
	for (;;) {
		if (ready_by(c, deadline_of(c)) != FB_IO_OK)
			return FB_IO_ERROR;
		PGresult *res = PQgetResult(c->pg);
		if (!res)
			break;
		ExecStatusType st = PQresultStatus(res);
		if (st != PGRES_SINGLE_TUPLE && st != PGRES_TUPLES_OK) {
			if (rc == FB_IO_OK) {
				rc = fail(c, res);
				continue;
			}
		} else if (rc == FB_IO_OK) {
			for (int i = 0; i < PQntuples(res); i++) {
				fb_history_row h = {
				        .d = (fb_discipline)i64(res, i, 0),
				        .key = (uint32_t)i64(res, i, 1),
				        .version = (uint64_t)i64(res, i, 2),
				        .fence = (uint64_t)i64(res, i, 3),
				        .before = i64(res, i, 4),
				        .after = i64(res, i, 5),
				        .store_stale = PQgetvalue(res, i, 6)[0] == 't',
				        .client = (uint32_t)i64(res, i, 7),
				        .worker = (uint32_t)i64(res, i, 8),
				};
				row(ctx, &h);
			}
		}
		PQclear(res);
	}
	if (rc == FB_IO_OK && PQstatus(c->pg) != CONNECTION_OK)
		return fail(c, NULL);
	return rc;
}

/* FB_IO_REFUSED: no meta row (the store was never prepared). */
static fb_io read_meta(pg_conn *c, fb_store_meta *out)
{
	PGresult *res = query(
	        c, "SELECT initial_balance, amount, keys, op, modes FROM fencebench_meta", true);
	if (!res)
		return FB_IO_ERROR;
	if (PQntuples(res) != 1) {
		PQclear(res);
		fb_say(c->err, sizeof c->err,
		       "%s: the store has no meta row: it was never prepared", c->e->redacted);
		return FB_IO_REFUSED;
	}
	out->initial_balance = i64(res, 0, 0);
	out->amount = i64(res, 0, 1);
	out->keys = (uint32_t)i64(res, 0, 2);
	out->op = (int)i64(res, 0, 3);
	out->modes = (uint32_t)i64(res, 0, 4);
	PQclear(res);
	return FB_IO_OK;
}

/* sql=FILE: the fenced column is the user's, named by its @name. */
static const char *pg_column(void *eng, fb_discipline d)
{
	const pg_engine *e = eng;
	if (d != FB_FENCED || !e->own)
		return NULL;
	return e->user.name[0] ? e->user.name : "yours";
}

/* With sql=FILE the fenced column is the user's table, which keeps no
 * history: whichever run wrote the meta row, `check` reads the controls. */
static fb_io pg_meta(void *conn, fb_store_meta *out)
{
	pg_conn *c = conn;
	fb_io io = read_meta(c, out);
	if (io == FB_IO_OK && c->e->own)
		out->modes &= ~(1u << FB_FENCED);
	return io;
}

/* sql=FILE: the user's statements number their writes as they will. */
static uint32_t pg_own_versions(void *eng)
{
	return ((pg_engine *)eng)->own ? 1u << FB_FENCED : 0;
}

/* What open judges before it dials: libpq's parse of the URL or conninfo,
 * and a URL's query naming a parameter once. The reason lives in a static
 * buffer: this runs once, in the main thread, before any worker. */
static bool pg_check_url(const char *url, const char **why)
{
	static char reason[512];
	char bare[4096], sql[1024];
	if (!fb_user_sql_take(url, bare, sizeof bare, sql, sizeof sql))
		return true; /* open will say it */
	const char *q = strstr(url, "://") ? strchr(url, '?') : NULL;
	if (q && !fb_url_query_once(q + 1, NULL, why))
		return false;
	char *perr = NULL;
	PQconninfoOption *opts = PQconninfoParse(bare, &perr);
	if (opts) {
		PQconninfoFree(opts);
		return true;
	}
	char red[1024];
	fb_url_redact(url, red, sizeof red);
	first_line(perr ? perr : "malformed URL or conninfo", reason, sizeof reason);
	scrub(reason, red);
	PQfreemem(perr);
	*why = reason;
	return false;
}

const fb_store_ops fb_pg_store_ops = {
        FB_STORE_OPS_HEAD,
        .scheme = "postgres",
        .name = "PostgreSQL",
        .url = FB_POSTGRES_URL,
        .help = FB_POSTGRES_HELP,
        .remote = true,
        .open = pg_open,
        .check_url = pg_check_url,
        .version = pg_version,
        .prepare = pg_prepare,
        .close = pg_close,
        .connect = pg_connect,
        .disconnect = pg_disconnect,
        .error = pg_error,
        .read = pg_read,
        .write = pg_write,
        .debit = pg_debit,
#ifdef PG_PIPELINE
        .batch = pg_batch,
#endif
        .final = pg_final,
        .history = pg_history,
        .meta = pg_meta,
        .own_versions = pg_own_versions,
        .column = pg_column,
};
