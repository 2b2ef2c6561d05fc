#include "redlock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "held.h"
#include "redis_link.h"
#include "scheme_texts.h"
#include "url.h"

/*
 * Keys:
 *   fb:redlock:lock:<k>            on every node: the lock, "c<client>.w<worker>.s<seq>"
 *   fb:redlock:fence[:<k>]         first node, fence=incr: the counter the INCR bumps
 */

#define URLLEN   512
#define LABELLEN 700
#define ERRLEN   1400
#define VALLEN   64
#define ROUND    2 /* commands a round sends to each node, at most */

/*
 * How long one round of SETs may take for the lock to count. Redlock's own
 * rule is that the lock is valid only if the round left some validity
 * (TTL - elapsed - drift > 0); fencebench also gives up a lock whose round
 * took longer than this, because it dates each lease by the round's start
 * on the caller's clock and tells the lease witness it is exact to within
 * it (witness_slack_ns): a lock that began later than that could make the
 * witness see two holders where Redlock had one.
 */
#define ROUND_SLACK_NS (UINT64_C(10) * 1000000)
/* A node jump waits this long at most for a lock it can break, looking
 * every AIM_POLL_NS at the first AIM_KEYS keys. */
#define AIM_NS      (UINT64_C(50) * 1000000)
#define AIM_POLL_NS (UINT64_C(1) * 1000000)
#define AIM_KEYS    16u

/* redis.io's clock-drift allowance for a TTL: 1% of it, and 2 ms for the
 * servers' millisecond expiry. */
static uint64_t drift_of(uint64_t ttl_ns)
{
	return ttl_ns / 100 + 2000000;
}

static const char release_script[] = "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
                                     "  return redis.call('DEL', KEYS[1])\n"
                                     "end\n"
                                     "return 0\n";
static const char renew_script[] = "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
                                   "  return redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
                                   "end\n"
                                   "return 0\n";

typedef enum fence_way { WAY_NONE, WAY_INCR } fence_way;

typedef struct jumper {
	int node;       /* from 0 */
	char file[300]; /* its libfaketime offset file */
} jumper;

typedef struct leng {
	fb_engine_config cfg;
	fb_url u;
	long db;
	fence_way way;
	int nodes, quorum;
	jumper jump[FB_URL_HOSTS];
	int jumps;
	char url[URLLEN];                   /* redacted */
	char label[FB_URL_HOSTS][LABELLEN]; /* "<url> node N (host:port)": its reasons begin so */
	char version[64];
	uint64_t ttl_ms, drift_ns;
	struct lconn *admin;
} leng;

typedef struct lconn {
	const leng *e;
	fb_rlink node[FB_URL_HOSTS];
	uint16_t worker;
	uint64_t seq;
	fb_held_table held; /* text: the lock's value */
	char err[ERRLEN];
	/* the injector's connection only: each faketime node's offset, in s */
	double offset[FB_URL_HOSTS];
	double offset_was[FB_URL_HOSTS]; /* ... before the run: put back at its end */
	bool offset_known[FB_URL_HOSTS];
	unsigned next_jump;
} lconn;

static void lfail(lconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void lfail(lconn *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fb_engine_failv(c->err, sizeof c->err, c->e->url, fmt, ap);
	va_end(ap);
}

/* Not enough nodes answered: say which did not, and why. */
static void no_quorum(lconn *c, const char *what, int answered)
{
	const leng *e = c->e;
	size_t ul = strlen(e->url);
	int n = snprintf(c->err, sizeof c->err, "%s: %s: %d of %d nodes answered, %d needed",
	                 e->url, what, answered, e->nodes, e->quorum);
	size_t o = n > 0 ? (size_t)n : 0;
	for (int i = 0; i < e->nodes && o < sizeof c->err; i++) {
		if (c->node[i].c || !c->node[i].err[0])
			continue;
		/* each node's reason begins with the URL: said once */
		const char *why = c->node[i].err;
		if (strncmp(why, e->url, ul) == 0 && why[ul] == ' ')
			why += ul + 1;
		n = snprintf(c->err + o, sizeof c->err - o, "; %s", why);
		o += n > 0 ? (size_t)n : 0;
	}
}

/* ---- the URL -------------------------------------------------------------- */

static bool parse_jump(leng *e, const char *v, size_t n, const char **why)
{
	const char *colon = memchr(v, ':', n);
	long node;
	*why = "faketime=N:FILE: N the node (1..number of nodes), FILE its libfaketime offset "
	       "file";
	if (!colon || colon + 1 == v + n || e->jumps == FB_URL_HOSTS ||
	    !fb_url_number(v, colon, 1, FB_URL_HOSTS, &node))
		return false;
	jumper *j = &e->jump[e->jumps];
	if (!fb_url_decode(colon + 1, v + n, j->file, sizeof j->file))
		return false;
	j->node = (int)node - 1;
	e->jumps++;
	return true;
}

static bool parse_url(const char *url, leng *e, const char **why)
{
	if (!fb_url_parse(url, "redlock", 6379, FB_URL_HOSTS, &e->u, why)) {
		if (strcmp(*why, "wrong scheme") == 0)
			*why = "expected redlock://[[user]:password@]host:port,host:port,host:port"
			       "[,...][/db][?fence=none|incr][&faketime=N:FILE]";
		return false;
	}
	if (e->u.hosts < 3) {
		*why = "Redlock needs at least three independent nodes (host:port,host:port,...)";
		return false;
	}
	long v = 0;
	if (e->u.path_len > 1 &&
	    !fb_url_number(e->u.path + 1, e->u.path + e->u.path_len, 0, 1000000, &v)) {
		*why = "the database must be a number (/0)";
		return false;
	}
	e->db = v;
	e->way = WAY_NONE;
	static const char *const lists[] = {"faketime", NULL}; /* one per node that jumps */
	if (!fb_url_query_once(e->u.query, lists, why))
		return false;
	const char *at = e->u.query, *name, *val;
	size_t n, vn;
	while (fb_url_option(&at, &name, &n, &val, &vn)) {
		if (fb_url_is(name, n, "fence") && val && fb_url_is(val, vn, "none"))
			e->way = WAY_NONE;
		else if (fb_url_is(name, n, "fence") && val && fb_url_is(val, vn, "incr"))
			e->way = WAY_INCR;
		else if (fb_url_is(name, n, "faketime") && val) {
			if (!parse_jump(e, val, vn, why))
				return false;
		} else {
			*why = "the options are fence=none|incr and faketime=N:FILE";
			return false;
		}
	}
	e->nodes = e->u.hosts;
	e->quorum = e->nodes / 2 + 1;
	for (int i = 0; i < e->jumps; i++)
		if (e->jump[i].node >= e->nodes) {
			*why = "faketime=N:FILE names a node past the last";
			return false;
		}
	return true;
}

static const char *config_problem(const fb_engine_config *cfg, fence_way way)
{
	const char *why = fb_engine_lease_problem(cfg, false);
	if (why)
		return why;
	if (way == WAY_NONE && (cfg->modes & ((1u << FB_FENCED) | (1u << FB_WRITE_FENCED))))
		return "Redlock mints no fence, and the fenced and write-fenced stores check one: "
		       "run --mode unfenced, or bolt a fence on with ?fence=incr (a separate "
		       "INCR after the lock: watch the lease witness)";
	if (way == WAY_NONE && (cfg->fence != FB_FENCE_GLOBAL || cfg->first_fence != 1))
		return "--fence and --first-fence do not apply: ?fence=none mints no fence";
	return NULL;
}

/* ---- rounds over every node -------------------------------------------------- */

/*
 * The same commands to every node at once, then every reply: r[i][j] is
 * node i's reply to command j, NULL for every command of a node that did
 * not answer (its link, now closed, says why). How many nodes answered.
 */
static int round_all(lconn *c, int ncmd, fb_rcmd *cs, redisReply *r[][ROUND])
{
	bool sent[FB_URL_HOSTS];
	for (int i = 0; i < c->e->nodes; i++)
		sent[i] = fb_rl_send(&c->node[i], ncmd, cs);
	int answered = 0;
	for (int i = 0; i < c->e->nodes; i++) {
		if (sent[i] && fb_rl_receive(&c->node[i], ncmd, cs, r[i]))
			answered++;
		else
			for (int j = 0; j < ncmd; j++)
				r[i][j] = NULL;
	}
	return answered;
}

static void free_round(const lconn *c, int ncmd, redisReply *r[][ROUND])
{
	for (int i = 0; i < c->e->nodes; i++)
		fb_rl_free_replies(ncmd, r[i]);
}

static void lock_key(uint32_t key, fb_rcmd *m)
{
	fb_rl_argf(m, "fb:redlock:lock:%" PRIu32, key);
}

/* The compare-and-delete script on every node: how many deleted our
 * lock, or -1 when fewer than a quorum answered. */
static int unlock_all(lconn *c, uint32_t key, const char *val)
{
	fb_rcmd m = {0};
	fb_rl_arg(&m, "EVAL");
	fb_rl_arg(&m, release_script);
	fb_rl_arg(&m, "1");
	lock_key(key, &m);
	fb_rl_arg(&m, val);
	redisReply *r[FB_URL_HOSTS][ROUND];
	int answered = round_all(c, 1, &m, r), deleted = 0;
	for (int i = 0; i < c->e->nodes; i++)
		deleted += r[i][0] && r[i][0]->type == REDIS_REPLY_INTEGER && r[i][0]->integer == 1;
	free_round(c, 1, r);
	if (answered < c->e->quorum) {
		no_quorum(c, "release", answered);
		return -1;
	}
	return deleted;
}

/* ---- the engine ------------------------------------------------------------------ */

static bool dial_all(lconn *c, char *err, size_t errlen, fb_err *rc)
{
	const leng *e = c->e;
	for (int i = 0; i < e->nodes; i++) {
		c->node[i].url = e->label[i];
		c->node[i].timeout_ns = e->cfg.timeout_ns;
		*rc = fb_rl_dial(&c->node[i], e->u.host[i].host, e->u.host[i].port, &e->u, e->db);
		if (*rc != FB_OK) {
			fb_engine_err(err, errlen, c->node[i].err);
			return false;
		}
	}
	return true;
}

static void hang_up(lconn *c)
{
	for (int i = 0; i < FB_URL_HOSTS; i++)
		if (c->node[i].c)
			redisFree(c->node[i].c);
}

/* "7.0.15" from the first node's INFO server. */
static void read_version(leng *e)
{
	snprintf(e->version, sizeof e->version, "unknown");
	fb_rcmd m = {0};
	fb_rl_arg(&m, "INFO");
	fb_rl_arg(&m, "server");
	redisReply *r = fb_rl_run(&e->admin->node[0], &m);
	const char *v =
	        r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "redis_version:") : NULL;
	if (v) {
		v += strlen("redis_version:");
		snprintf(e->version, sizeof e->version, "%.*s, %d nodes", (int)strcspn(v, "\r\n"),
		         v, e->nodes);
	}
	freeReplyObject(r);
}

static fb_err lease_open(const fb_engine_config *cfg, const char *url, void **eng, char *err,
                         size_t errlen)
{
	leng *e = calloc(1, sizeof *e);
	lconn *a = calloc(1, sizeof *a);
	if (!e || !a) {
		free(e);
		free(a);
		fb_engine_err(err, errlen, "out of memory for the Redlock engine");
		return FB_ENOMEM;
	}
	e->cfg = *cfg;
	if (!e->cfg.clock)
		e->cfg.clock = fb_clock_monotonic();
	e->cfg.timeout_ns = fb_engine_timeout(cfg);
	fb_url_redact(url ? url : "", e->url, sizeof e->url);
	e->admin = a;
	a->e = e;
	fb_err rc = FB_EINVAL;
	const char *why = NULL;
	if (!parse_url(url, e, &why) || (why = config_problem(cfg, e->way))) {
		lfail(a, "%s", why);
		fb_engine_err(err, errlen, a->err);
		goto err;
	}
	/* rounded up: a node's expiry is never before the client's t0 + ttl */
	e->ttl_ms = (cfg->ttl_ns + 999999) / 1000000;
	/* redis.io's allowance: 1% of the TTL, and 2 ms for the servers'
	 * millisecond expiry */
	e->drift_ns = drift_of(cfg->ttl_ns);
	if (cfg->ttl_ns <= e->drift_ns + ROUND_SLACK_NS) {
		/* the least whole-ms TTL above its own allowance and a round */
		uint64_t least = 1;
		while (least * 1000000 <= least * 10000 + 2000000 + ROUND_SLACK_NS)
			least++;
		lfail(a,
		      "--ttl must exceed the drift allowance (1%% of it + 2 ms) and a round (%llu "
		      "ms): %llu ms at least",
		      (unsigned long long)(ROUND_SLACK_NS / 1000000), (unsigned long long)least);
		fb_engine_err(err, errlen, a->err);
		goto err;
	}
	for (int i = 0; i < e->nodes; i++) {
		bool v6 = strchr(e->u.host[i].host, ':') != NULL;
		snprintf(e->label[i], sizeof e->label[i], "%s node %d (%s%s%s:%d)", e->url, i + 1,
		         v6 ? "[" : "", e->u.host[i].host, v6 ? "]" : "", e->u.host[i].port);
	}
	if (!dial_all(a, err, errlen, &rc))
		goto err;
	read_version(e);
	*eng = e;
	return FB_OK;
err:
	hang_up(a);
	free(a);
	free(e);
	return rc;
}

static void lease_version(void *eng, char *buf, size_t len)
{
	const leng *e = eng;
	if (len)
		snprintf(buf, len, "%s", e->version);
}

static void lease_close(void *eng)
{
	leng *e = eng;
	if (!e)
		return;
	hang_up(e->admin);
	free(e->admin);
	free(e);
}

/* fence=incr: the fence counter(s), on the first node. */
static bool prepare_counters(leng *e, bool fresh)
{
	fb_rlink *l = &e->admin->node[0];
	uint32_t n = e->cfg.fence == FB_FENCE_GLOBAL ? 1 : e->cfg.keys;
	if (fresh && !fb_rl_scan_delete(l, "fb:redlock:fence*"))
		return false;
	for (uint32_t k = 0; k < n; k++) {
		fb_rcmd m = {0};
		fb_rl_arg(&m, "SET");
		if (e->cfg.fence == FB_FENCE_GLOBAL)
			fb_rl_arg(&m, "fb:redlock:fence");
		else
			fb_rl_argf(&m, "fb:redlock:fence:%" PRIu32, k);
		fb_rl_argf(&m, "%" PRIu64, e->cfg.first_fence - 1);
		if (!fresh)
			fb_rl_arg(&m, "NX");
		if (!fb_rl_run_ok(l, &m))
			return false;
	}
	return true;
}

/* fresh: every lock on every node forgotten, and (fence=incr) the
 * counters started one below first_fence; otherwise (a shared run's later
 * processes) the counters created only if missing. */
static fb_err lease_prepare(void *eng, bool fresh, char *err, size_t errlen)
{
	leng *e = eng;
	for (int i = 0; fresh && i < e->nodes; i++)
		if (!fb_rl_scan_delete(&e->admin->node[i], "fb:redlock:lock:*")) {
			fb_engine_err(err, errlen, e->admin->node[i].err);
			return FB_ESYS;
		}
	if (e->way == WAY_INCR && !prepare_counters(e, fresh)) {
		fb_engine_err(err, errlen, e->admin->node[0].err);
		return FB_ESYS;
	}
	return FB_OK;
}

static fb_err lease_connect(void *eng, uint16_t worker, void **conn, char *err, size_t errlen)
{
	const leng *e = eng;
	lconn *c = calloc(1, sizeof *c);
	if (!c) {
		fb_engine_err(err, errlen, "out of memory for a Redlock connection");
		return FB_ENOMEM;
	}
	c->e = e;
	c->worker = worker;
	fb_err rc;
	if (!dial_all(c, err, errlen, &rc)) {
		hang_up(c);
		free(c);
		return rc;
	}
	*conn = c;
	return FB_OK;
}

static bool write_offset(const char *file, double offset);

static void lease_disconnect(void *conn)
{
	lconn *c = conn;
	if (!c)
		return;
	/* The jumps are the run's: a node left seconds ahead would start the
	 * next run there. Its offset goes back to what it was (said if not). */
	for (int i = 0; i < c->e->nodes; i++)
		if (c->offset_known[i] && c->offset[i] != c->offset_was[i])
			for (int k = 0; k < c->e->jumps; k++)
				if (c->e->jump[k].node == i &&
				    !write_offset(c->e->jump[k].file, c->offset_was[i]))
					fprintf(stderr,
					        "fencebench: node %d: cannot put %s back to %+g s: "
					        "errno=%d (%s)\n",
					        i + 1, c->e->jump[k].file, c->offset_was[i], errno,
					        strerror(errno));
	hang_up(c);
	free(c);
}

static const char *lease_error(void *conn)
{
	const lconn *c = conn;
	return c->err[0] ? c->err : "no error";
}

/* ---- leases ------------------------------------------------------------------------ */

/* "c<client>.w<worker>.s<seq>": the worker. */
static uint16_t owner_of(const redisReply *v)
{
	char buf[VALLEN];
	if (!v || v->type != REDIS_REPLY_STRING || v->len >= sizeof buf)
		return 0;
	memcpy(buf, v->str, v->len);
	buf[v->len] = 0;
	const char *w = strstr(buf, ".w");
	unsigned long x = w ? strtoul(w + 2, NULL, 10) : 0;
	return x <= UINT16_MAX ? (uint16_t)x : 0;
}

/* fence=incr's second step, after cfg->between: INCR on the first node. */
static bool mint(lconn *c, uint32_t key, uint64_t *fence)
{
	const leng *e = c->e;
	if (e->cfg.between)
		e->cfg.between(e->cfg.between_ctx);
	fb_rcmd m = {0};
	fb_rl_arg(&m, "INCR");
	if (e->cfg.fence == FB_FENCE_GLOBAL)
		fb_rl_arg(&m, "fb:redlock:fence");
	else
		fb_rl_argf(&m, "fb:redlock:fence:%" PRIu32, key);
	redisReply *r = fb_rl_run(&c->node[0], &m);
	if (!r) {
		lfail(c, "acquire: the fence's INCR: %s", c->node[0].err);
		return false;
	}
	*fence = r->type == REDIS_REPLY_INTEGER && r->integer > 0 ? (uint64_t)r->integer : 0;
	freeReplyObject(r);
	return true;
}

/*
 * Redlock's acquire: SET NX PX to every node at once, the time the round
 * took on the caller's clock, and the lock is held if a majority said OK
 * and validity (TTL - elapsed - drift) is left, and the round took no
 * longer than ROUND_SLACK_NS. Otherwise the lock is deleted from every
 * node (even those that did not answer OK, as redis.io says), and the key
 * is reported held. expires_at is the end of the validity, t0 + TTL -
 * drift.
 *
 * fence=none's label is the instant the round ended, in microseconds of
 * this host's monotonic clock: a lock begins when its majority-th SET
 * lands, not its first (a round can start before another client's whole
 * tenure and end after it), and only the round's end is sure to be after
 * that. Labels are comparable only between processes on one host.
 */
static fb_acquire lease_acquire(void *conn, uint32_t key, fb_lease *out, fb_lease_stats *st)
{
	lconn *c = conn;
	const leng *e = c->e;
	(void)st; /* no CAS here */
	if (key >= e->cfg.keys) {
		lfail(c, "acquire: key %" PRIu32 " out of range", key);
		return FB_ACQ_ERROR;
	}
	char val[VALLEN];
	snprintf(val, sizeof val, "c%" PRIu32 ".w%u.s%" PRIu64, e->cfg.client_id, c->worker,
	         ++c->seq);
	fb_rcmd cs[ROUND] = {{0}};
	fb_rl_arg(&cs[0], "SET");
	lock_key(key, &cs[0]);
	fb_rl_arg(&cs[0], val);
	fb_rl_arg(&cs[0], "NX");
	fb_rl_arg(&cs[0], "PX");
	fb_rl_argf(&cs[0], "%" PRIu64, e->ttl_ms);
	fb_rl_arg(&cs[1], "GET"); /* ours where the SET won, the holder's elsewhere */
	lock_key(key, &cs[1]);
	redisReply *r[FB_URL_HOSTS][ROUND];
	uint64_t t0 = fb_clock_now(e->cfg.clock);
	int answered = round_all(c, ROUND, cs, r);
	uint64_t elapsed = fb_clock_now(e->cfg.clock) - t0;
	uint64_t label = fb_clock_now(fb_clock_monotonic()) / 1000 + 1;
	int ok = 0;
	uint16_t holder = 0;
	for (int i = 0; i < e->nodes; i++) {
		bool won = r[i][0] && r[i][0]->type == REDIS_REPLY_STATUS &&
		           strcmp(r[i][0]->str, "OK") == 0;
		ok += won;
		if (!won && !holder)
			holder = owner_of(r[i][1]);
	}
	free_round(c, ROUND, r);
	bool valid = elapsed + e->drift_ns < e->cfg.ttl_ns && elapsed <= ROUND_SLACK_NS;
	if (answered < e->quorum || ok < e->quorum || !valid) {
		int undone = ok ? unlock_all(c, key, val) : 0;
		if (answered < e->quorum) {
			no_quorum(c, "acquire", answered);
			return FB_ACQ_ERROR;
		}
		if (undone < 0)
			return FB_ACQ_ERROR;
		*out = (fb_lease){.owner = holder}; /* as the first node that refused says */
		return FB_HELD;
	}
	uint64_t fence = 0;
	if (e->way == WAY_INCR && !mint(c, key, &fence)) {
		(void)unlock_all(c, key, val);
		return FB_ACQ_ERROR;
	}
	if (e->way == WAY_NONE)
		fence = label;
	if (!fence || fence > FB_FENCE_MAX) {
		if (unlock_all(c, key, val) < 0)
			return FB_ACQ_ERROR;
		if (!fence) {
			lfail(c, "acquire: INCR gave no counter");
			return FB_ACQ_ERROR;
		}
		return FB_EXHAUSTED;
	}
	*out = (fb_lease){.fence = fence,
	                  .owner = c->worker,
	                  .expires_at = t0 + e->cfg.ttl_ns - e->drift_ns,
	                  .service_at = t0,
	                  .answered_at = t0 + elapsed};
	fb_held_put(&c->held, key, fence, 0, val);
	return FB_ACQUIRED;
}

static fb_io lease_release(void *conn, uint32_t key, const fb_lease *l, fb_lease *freed)
{
	(void)freed; /* it cannot say which word it freed */
	lconn *c = conn;
	fb_held *h = fb_held_find(&c->held, key, l->fence);
	if (!h)
		return FB_IO_REFUSED;
	int deleted = unlock_all(c, key, h->text);
	if (deleted < 0)
		return FB_IO_ERROR;
	h->used = false;
	return deleted >= c->e->quorum ? FB_IO_OK : FB_IO_REFUSED;
}

/* GET (and PTTL) of the key on every node: which value a quorum holds,
 * and the soonest of those nodes' expiries. Its replies into r. */
static int look(lconn *c, uint32_t key, redisReply *r[][ROUND])
{
	fb_rcmd cs[ROUND] = {{0}};
	fb_rl_arg(&cs[0], "GET");
	lock_key(key, &cs[0]);
	fb_rl_arg(&cs[1], "PTTL");
	lock_key(key, &cs[1]);
	return round_all(c, ROUND, cs, r);
}

/* How many nodes hold exactly val. */
static int holding(const lconn *c, redisReply *r[][ROUND], const char *val, size_t len)
{
	int n = 0;
	for (int i = 0; i < c->e->nodes; i++)
		n += r[i][0] && r[i][0]->type == REDIS_REPLY_STRING && r[i][0]->len == len &&
		     memcmp(r[i][0]->str, val, len) == 0;
	return n;
}

static fb_io lease_is_held(void *conn, uint32_t key, const fb_lease *l)
{
	lconn *c = conn;
	fb_held *h = fb_held_find(&c->held, key, l->fence);
	if (!h)
		return FB_IO_REFUSED;
	redisReply *r[FB_URL_HOSTS][ROUND];
	int answered = look(c, key, r);
	int n = holding(c, r, h->text, strlen(h->text));
	free_round(c, ROUND, r);
	if (answered < c->e->quorum) {
		no_quorum(c, "is_held", answered);
		return FB_IO_ERROR;
	}
	return n >= c->e->quorum ? FB_IO_OK : FB_IO_REFUSED;
}

/* The compare-and-PEXPIRE script on every node: renewed if a quorum
 * extended it within the validity. */
static fb_io lease_renew(void *conn, uint32_t key, const fb_lease *l, fb_lease *out)
{
	lconn *c = conn;
	const leng *e = c->e;
	fb_held *h = fb_held_find(&c->held, key, l->fence);
	if (!h)
		return FB_IO_REFUSED;
	fb_rcmd m = {0};
	fb_rl_arg(&m, "EVAL");
	fb_rl_arg(&m, renew_script);
	fb_rl_arg(&m, "1");
	lock_key(key, &m);
	fb_rl_arg(&m, h->text);
	fb_rl_argf(&m, "%" PRIu64, e->ttl_ms);
	redisReply *r[FB_URL_HOSTS][ROUND];
	uint64_t t0 = fb_clock_now(e->cfg.clock);
	int answered = round_all(c, 1, &m, r), ok = 0;
	uint64_t elapsed = fb_clock_now(e->cfg.clock) - t0;
	for (int i = 0; i < e->nodes; i++)
		ok += r[i][0] && r[i][0]->type == REDIS_REPLY_INTEGER && r[i][0]->integer == 1;
	free_round(c, 1, r);
	if (answered < e->quorum) {
		no_quorum(c, "renew", answered);
		return FB_IO_ERROR;
	}
	if (ok < e->quorum || elapsed + e->drift_ns >= e->cfg.ttl_ns)
		return FB_IO_REFUSED;
	if (out) {
		*out = *l;
		out->expires_at = t0 + e->cfg.ttl_ns - e->drift_ns;
	}
	return FB_IO_OK;
}

/* The value a quorum of nodes holds, if any: its worker (no fence: the
 * value carries none), expiring with the soonest of those nodes. */
static fb_io lease_peek(void *conn, uint32_t key, fb_lease *out)
{
	lconn *c = conn;
	*out = (fb_lease){0};
	redisReply *r[FB_URL_HOSTS][ROUND];
	uint64_t now = fb_clock_now(c->e->cfg.clock);
	int answered = look(c, key, r);
	for (int i = 0; i < c->e->nodes && !out->owner; i++) {
		redisReply *v = r[i][0];
		if (!v || v->type != REDIS_REPLY_STRING ||
		    holding(c, r, v->str, v->len) < c->e->quorum)
			continue;
		out->owner = owner_of(v);
		for (int j = 0; j < c->e->nodes; j++) {
			redisReply *p = r[j][1], *w = r[j][0];
			if (!p || p->type != REDIS_REPLY_INTEGER || p->integer < 0 || !w ||
			    w->type != REDIS_REPLY_STRING || w->len != v->len ||
			    memcmp(w->str, v->str, v->len) != 0)
				continue;
			uint64_t exp = now + (uint64_t)p->integer * 1000000u;
			if (!out->expires_at || exp < out->expires_at)
				out->expires_at = exp;
		}
	}
	free_round(c, ROUND, r);
	if (answered < c->e->quorum) {
		no_quorum(c, "peek", answered);
		return FB_IO_ERROR;
	}
	return FB_IO_OK;
}

/* CLIENT PAUSE on every node: the whole service stops. */
static fb_io lease_server_pause(void *conn, uint64_t ns)
{
	lconn *c = conn;
	fb_rcmd m = {0};
	fb_rl_arg(&m, "CLIENT");
	fb_rl_arg(&m, "PAUSE");
	fb_rl_argf(&m, "%" PRIu64, ns / 1000000 ? (ns + 999999) / 1000000 : 1);
	redisReply *r[FB_URL_HOSTS][ROUND];
	int answered = round_all(c, 1, &m, r);
	free_round(c, 1, r);
	if (answered < c->e->nodes) {
		no_quorum(c, "CLIENT PAUSE", answered);
		return FB_IO_ERROR;
	}
	return FB_IO_OK;
}

/* ---- the node-jump fault ----------------------------------------------------------- */

/* A faketime node's offset as its file says ("+2.5", "-1", "+0"); false
 * if the file holds something else (an absolute date: not ours to move). */
static bool read_offset(const char *file, double *out)
{
	FILE *f = fopen(file, "r");
	if (!f)
		return false;
	char buf[64] = "";
	bool ok = fgets(buf, sizeof buf, f) != NULL;
	fclose(f);
	char *end;
	double v = ok && (buf[0] == '+' || buf[0] == '-') ? strtod(buf, &end) : 0;
	ok = ok && (buf[0] == '+' || buf[0] == '-') && end != buf && (*end == '\n' || !*end);
	*out = v;
	return ok;
}

/* Write "+<offset>" to file through a temporary and a rename: libfaketime,
 * reading it at every clock read, never sees half a file. */
static bool write_offset(const char *file, double offset)
{
	char tmp[320];
	snprintf(tmp, sizeof tmp, "%s.fb-tmp", file);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return false;
	bool ok = fprintf(f, "%+.6f\n", offset) > 0;
	ok = fclose(f) == 0 && ok;
	return ok && rename(tmp, file) == 0;
}

/*
 * Whether some lock (of the first AIM_KEYS keys) is held, now, on a bare
 * majority that includes node: a jump of that node's clock then takes the
 * majority from its holder while the holder still believes its lock
 * valid, which is the whole of Kleppmann's scenario. A holder of every
 * node loses nothing to one jump.
 */
static bool bare_majority_on(lconn *c, int node)
{
	const leng *e = c->e;
	uint32_t keys = e->cfg.keys < AIM_KEYS ? e->cfg.keys : AIM_KEYS;
	for (uint32_t key = 0; key < keys; key++) {
		fb_rcmd m = {0};
		fb_rl_arg(&m, "GET");
		lock_key(key, &m);
		redisReply *r[FB_URL_HOSTS][ROUND];
		(void)round_all(c, 1, &m, r);
		const redisReply *v = r[node][0];
		bool bare = v && v->type == REDIS_REPLY_STRING &&
		            holding(c, r, v->str, v->len) == e->quorum;
		free_round(c, 1, r);
		if (bare)
			return true;
	}
	return false;
}

/*
 * Step one faketime node's clock forward by ns (the nodes named in the
 * URL take turns): its keys, whose expiry is on its wall clock, expire ns
 * early. Aimed: the jump waits, AIM_NS at most, for a lock held on a bare
 * majority that includes the node (then it certainly makes two holders
 * once another client tries), and jumps anyway when none came. ns 0 only
 * checks that some node can be stepped. REFUSED (why in the error) when
 * the URL names none, or its file holds no offset.
 */
static fb_io lease_node_jump(void *conn, uint64_t ns)
{
	lconn *c = conn;
	const leng *e = c->e;
	if (!e->jumps) {
		lfail(c,
		      "no node runs under libfaketime: start one with LD_PRELOAD=libfaketime.so.1 "
		      "FAKETIME_TIMESTAMP_FILE=FILE FAKETIME_NO_CACHE=1 and name it in the URL "
		      "with ?faketime=N:FILE (README: Redlock)");
		return FB_IO_REFUSED;
	}
	const jumper *j = &e->jump[c->next_jump++ % (unsigned)e->jumps];
	if (!c->offset_known[j->node] && !read_offset(j->file, &c->offset[j->node])) {
		lfail(c, "node %d: %s does not hold a libfaketime offset (+SECONDS)", j->node + 1,
		      j->file);
		return FB_IO_REFUSED;
	}
	if (!c->offset_known[j->node])
		c->offset_was[j->node] = c->offset[j->node];
	c->offset_known[j->node] = true;
	if (!ns)
		return FB_IO_OK;
	uint64_t until = fb_clock_now(fb_clock_monotonic()) + AIM_NS;
	while (!bare_majority_on(c, j->node) && fb_clock_now(fb_clock_monotonic()) < until)
		fb_sleep_ns(AIM_POLL_NS);
	double next = c->offset[j->node] + (double)ns / 1e9;
	if (!write_offset(j->file, next)) {
		lfail(c, "node %d: cannot write %s: errno=%d (%s)", j->node + 1, j->file, errno,
		      strerror(errno));
		return FB_IO_ERROR;
	}
	c->offset[j->node] = next;
	return FB_IO_OK;
}

static bool redlock_check_url(const char *url, const char **why)
{
	leng *e = calloc(1, sizeof *e);
	if (!e)
		return true; /* open will say it */
	bool ok = parse_url(url, e, why);
	free(e);
	return ok;
}

const fb_lease_ops fb_redlock_lease_ops = {
        FB_LEASE_OPS_HEAD,
        .scheme = "redlock",
        .name = "Redlock",
        .url = FB_REDLOCK_URL,
        .help = FB_REDLOCK_HELP,
        .remote = true,
        .open = lease_open,
        .check_url = redlock_check_url,
        .version = lease_version,
        .prepare = lease_prepare,
        .close = lease_close,
        .connect = lease_connect,
        .disconnect = lease_disconnect,
        .error = lease_error,
        .acquire = lease_acquire,
        .release = lease_release,
        .is_held = lease_is_held,
        .renew = lease_renew,
        .peek = lease_peek,
        .server_pause = lease_server_pause,
        .node_jump = lease_node_jump,
        .witness_slack_ns = ROUND_SLACK_NS,
        .validity_short_ns = drift_of,
};
