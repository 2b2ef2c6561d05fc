#include "redis.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

#include "redis_link.h"
#include "scheme_texts.h"

/*
 * Keys (all under "fb:", so a fresh prepare never touches anything else in
 * the user's database):
 *   fb:lease:<k>            the lease, expiring at its TIME + ttl: "c<client>.w<worker>.f<fence>"
 *                           (script), or "c<client>.w<worker>.s<seq>" (incr)
 *                           until its mint appends ".f<fence>"
 *   fb:fence, fb:fence:<k>  the fence counter: global, or one per key
 *   fb:fence:last:<k>       the fence of the key's last acquire (what the next replaces)
 *   fb:acct:<d>:<k>         hash {balance, last, highest, version}
 *   fb:hist:<d>:<k>         list, one "version fence before after stale
 *                           client worker" per accepted write, in order
 *   fb:meta                 hash {balance, amount, keys, op, modes}
 * <d> is the discipline's JSON spelling (fenced, write_fenced, unfenced).
 */

#define URLLEN     512
#define HELD_SLOTS 8
#define VALLEN     64
#define PIPE_CHUNK 128
#define HIST_CHUNK 1000
#define MARKS      64 /* a store connection's versions remembered, per store */
/* issue 24: how long a plain link whose connection broke dials its server
 * again, and how many times one call connects again before it gives up */
#define RELINK_NS    UINT64_C(1000000000)
#define RELINK_TRIES 5

/* ---- the scripts ------------------------------------------------------- */

/*
 * Every number that goes back into a key or a reply as text is formatted
 * with string.format('%d'): Lua 5.1 numbers are doubles, and concatenating
 * one prints "%.14g", which turns a 15-digit fence into 1.4073748835533e+14.
 * Balances are copied as the server's own strings, never through a double.
 */
enum { S_ACQUIRE, S_TAKE, S_MINT, S_RELEASE, S_RENEW, S_INIT, S_READ, S_WRITE, SCRIPTS };

typedef struct script {
	const char *name;
	const char *body;
} script;

static const script scripts[SCRIPTS] = {
        /* KEYS: lease, counter, the key's last fence. ARGV: value prefix,
         * ttl ms, FB_FENCE_MAX. Taking the key and minting its fence are
         * one server step: no holder can carry a fence older than its
         * predecessor's. The reply carries the fence the key's last
         * acquire had (GETSET of the last fence, in the same step): what
         * this one replaced, for the lease witness. */
        [S_ACQUIRE] = {"acquire",
                       "if redis.replicate_commands then redis.replicate_commands() end\n"
                       "local t = redis.call('TIME')\n"
                       "local v = redis.call('GET', KEYS[1])\n"
                       "if v then return {0, v, redis.call('PTTL', KEYS[1])} end\n"
                       "local f = redis.call('INCR', KEYS[2])\n"
                       "if f > tonumber(ARGV[3]) then return {2, f} end\n"
                       "redis.call('SET', KEYS[1], ARGV[1] .. '.f' .. string.format('%d', f))\n"
                       "redis.call('PEXPIREAT', KEYS[1], string.format('%d',"
                       " t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[2])))\n"
                       "local p = redis.call('GETSET', KEYS[3], string.format('%d', f))\n"
                       "return {1, f, t[1], t[2], tonumber(p) or 0}\n"},
        /* KEYS: lease. ARGV: our value, ttl ms. The incr strategy's first
         * step: take the key (SET NX) and nothing else; its fence comes in
         * a later step (S_MINT). As in S_ACQUIRE, the expiry is TIME + ttl
         * from the TIME the lease reports as its start, so the lease
         * witness, ordering leases by that TIME, sees the expiry the
         * server enforces (a SET ... PX would count from the server's
         * cached time, up to a stall earlier). Reply: {1, sec, usec}, or
         * {0, holder's value or '', PTTL}. */
        [S_TAKE] = {"take",
                    "if redis.replicate_commands then redis.replicate_commands() end\n"
                    "local t = redis.call('TIME')\n"
                    "if not redis.call('SET', KEYS[1], ARGV[1], 'NX') then\n"
                    "  return {0, redis.call('GET', KEYS[1]) or '', redis.call('PTTL', KEYS[1])}\n"
                    "end\n"
                    "redis.call('PEXPIREAT', KEYS[1], string.format('%d',"
                    " t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[2])))\n"
                    "return {1, t[1], t[2]}\n"},
        /* KEYS: lease, counter. ARGV: our value, FB_FENCE_MAX. The incr
         * strategy's second step, a separate server step after the SET:
         * INCR, and if the lease is still ours, write the fence into its
         * value (KEEPTTL: the expiry S_TAKE set) so that peek and a contender can see it. The
         * trap stands: the fence is minted after, not with, the SET.
         * Reply: fence, tagged (1/0). */
        [S_MINT] =
                {"mint",
                 "local f = redis.call('INCR', KEYS[2])\n"
                 "local p = tonumber(redis.call('GETSET', KEYS[3], string.format('%d', f))) or 0\n"
                 "if f <= tonumber(ARGV[2]) and redis.call('GET', KEYS[1]) == ARGV[1] then\n"
                 "  redis.call('SET', KEYS[1], ARGV[1] .. '.f' .. string.format('%d', f),"
                 " 'KEEPTTL')\n"
                 "  return {f, 1, p}\n"
                 "end\n"
                 "return {f, 0, p}\n"},
        /* KEYS: lease. ARGV: our value. Compare-and-delete. */
        [S_RELEASE] = {"release", "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
                                  "  redis.call('DEL', KEYS[1]) return 1\n"
                                  "end\n"
                                  "return 0\n"},
        /* KEYS: lease. ARGV: our value, ttl ms. Compare-and-PEXPIRE. */
        [S_RENEW] = {"renew", "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
                              "  redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1\n"
                              "end\n"
                              "return 0\n"},
        /* KEYS: meta. ARGV: balance, amount, keys, op, modes, then the
         * three disciplines' account prefixes. A meta that exists must
         * agree; every selected account that is missing is created. One
         * step, so two processes preparing at once cannot interleave. */
        [S_INIT] = {"init",
                    "local m = redis.call('HMGET', KEYS[1], 'balance', 'amount', 'keys', 'modes')\n"
                    "if m[1] then\n"
                    "  if m[1] ~= ARGV[1] or m[2] ~= ARGV[2] or m[3] ~= ARGV[3] then\n"
                    "    return {0, m[1], m[2] or '', m[3] or ''}\n"
                    "  end\n"
                    "  local all = bit.bor(tonumber(m[4] or '0'), tonumber(ARGV[5]))\n"
                    "  redis.call('HSET', KEYS[1], 'modes', string.format('%d', all))\n"
                    "else\n"
                    "  redis.call('HSET', KEYS[1], 'balance', ARGV[1], 'amount', ARGV[2],"
                    " 'keys', ARGV[3], 'op', ARGV[4], 'modes', ARGV[5])\n"
                    "end\n"
                    "local modes, keys = tonumber(ARGV[5]), tonumber(ARGV[3])\n"
                    "for d = 0, 2 do\n"
                    "  if bit.band(modes, bit.lshift(1, d)) ~= 0 then\n"
                    "    for k = 0, keys - 1 do\n"
                    "      local a = ARGV[6 + d] .. string.format('%d', k)\n"
                    "      if redis.call('EXISTS', a) == 0 then\n"
                    "        redis.call('HSET', a, 'balance', ARGV[1], 'last', '0',"
                    " 'highest', '0', 'version', '0')\n"
                    "      end\n"
                    "    end\n"
                    "  end\n"
                    "end\n"
                    "return {1}\n"},
        /* KEYS: account. ARGV: token, fenced (1/0). A fenced read below the
         * highest fence seen is refused; otherwise it registers its token.
         * Reply: ok, balance, last, highest (before), version. */
        [S_READ] = {"read",
                    "local h = redis.call('HMGET', KEYS[1], 'balance', 'last', 'highest', "
                    "'version')\n"
                    "if not h[1] then return redis.error_reply('ERR ' .. KEYS[1] .. "
                    "' does not exist: the store was not prepared') end\n"
                    "if ARGV[2] == '1' then\n"
                    "  local t = tonumber(ARGV[1])\n"
                    "  local high = tonumber(h[3])\n"
                    "  if t < high then return {0, h[1], h[2], h[3], h[4]} end\n"
                    "  if t > high then redis.call('HSET', KEYS[1], 'highest', ARGV[1]) end\n"
                    "end\n"
                    "return {1, h[1], h[2], h[3], h[4]}\n"},
        /* KEYS: account, history. ARGV: discipline (f, w, u), op (set,
         * debit), balance or increment, token, client, worker. Compare,
         * apply and record in one step. The store's own staleness is the
         * token against the highest fence accepted before: the last one
         * in the fenced disciplines (accepted fences only grow there), the
         * highest in unfenced (whose reads register nothing).
         * Reply: ok, balance after, before, last, highest (before),
         * version, stale. */
        [S_WRITE] = {"write",
                     "local h = redis.call('HMGET', KEYS[1], 'balance', 'last', 'highest', "
                     "'version')\n"
                     "if not h[1] then return redis.error_reply('ERR ' .. KEYS[1] .. "
                     "' does not exist: the store was not prepared') end\n"
                     "local t = tonumber(ARGV[4])\n"
                     "local last = tonumber(h[2])\n"
                     "local high = tonumber(h[3])\n"
                     "local ok = true\n"
                     "if ARGV[1] == 'f' then ok = t >= high and t > last\n"
                     "elseif ARGV[1] == 'w' then ok = t > last end\n"
                     "if not ok then return {0, h[1], h[1], h[2], h[3], h[4], 1} end\n"
                     "local top = last\n"
                     "if ARGV[1] == 'u' then top = high end\n"
                     "local stale = 0\n"
                     "if t <= top then stale = 1 end\n"
                     "local after = ARGV[3]\n"
                     "if ARGV[2] == 'debit' then\n"
                     "  redis.call('HINCRBY', KEYS[1], 'balance', ARGV[3])\n"
                     "  after = redis.call('HGET', KEYS[1], 'balance')\n"
                     "else\n"
                     "  redis.call('HSET', KEYS[1], 'balance', after)\n"
                     "end\n"
                     "local v = string.format('%d', redis.call('HINCRBY', KEYS[1], 'version', 1))\n"
                     "if t > high then\n"
                     "  redis.call('HSET', KEYS[1], 'last', ARGV[4], 'highest', ARGV[4])\n"
                     "else\n"
                     "  redis.call('HSET', KEYS[1], 'last', ARGV[4])\n"
                     "end\n"
                     "redis.call('RPUSH', KEYS[2], v .. ' ' .. ARGV[4] .. ' ' .. h[1] .. ' ' .. "
                     "after .. ' ' .. stale .. ' ' .. ARGV[5] .. ' ' .. ARGV[6])\n"
                     "return {1, after, h[1], h[2], h[3], v, stale}\n"},
};

/* ---- the URL ----------------------------------------------------------- */

typedef enum fence_way {
	WAY_SCRIPT, /* acquire and mint in one script */
	WAY_INCR,   /* SET NX PX, then INCR: the trap */
} fence_way;

typedef struct rurl {
	fb_url u; /* the host, and the user and password if any */
	long db;
	fence_way way;
	char sentinel[64]; /* issue 24: the master's name; the hosts are its Sentinels */
} rurl;

/*
 * redis://[[user]:password@]host[:port][/db][?fence=script|incr], with
 * %XX escapes in user and password and an IPv6 host in brackets. On
 * failure *why says what is wrong (never quoting the password).
 */
static bool parse_url(const char *url, rurl *u, const char **why)
{
	memset(u, 0, sizeof *u);
	u->way = WAY_SCRIPT;
	const char *usage =
	        "expected redis://[[user]:password@]host[:port][/db][?fence=script|incr]"
	        " or redis://SENTINEL[,SENTINEL...][/db]?sentinel=NAME";
	if (!fb_url_parse(url, "redis", 6379, FB_URL_HOSTS, &u->u, why)) {
		if (!url || strncmp(url, "redis://", 8) != 0 || strcmp(*why, "wrong scheme") == 0)
			*why = usage;
		return false;
	}
	long v;
	if (u->u.path_len > 1 &&
	    !fb_url_number(u->u.path + 1, u->u.path + u->u.path_len, 0, 1000000, &v)) {
		*why = "the database must be a number (redis://host:port/0)";
		return false;
	}
	if (u->u.path_len > 1)
		u->db = v;
	if (!fb_url_query_once(u->u.query, NULL, why))
		return false;
	const char *at = u->u.query, *name, *val;
	size_t n, vn;
	while (fb_url_option(&at, &name, &n, &val, &vn)) {
		if (fb_url_is(name, n, "fence") && val && fb_url_is(val, vn, "script"))
			u->way = WAY_SCRIPT;
		else if (fb_url_is(name, n, "fence") && val && fb_url_is(val, vn, "incr"))
			u->way = WAY_INCR;
		else if (fb_url_is(name, n, "sentinel") && val && vn > 0 &&
		         vn < sizeof u->sentinel &&
		         strspn(val, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456"
		                     "789-_.") >= vn) {
			memcpy(u->sentinel, val, vn); /* issue 24 */
			u->sentinel[vn] = 0;
		} else {
			*why = "the options are fence=script or fence=incr, and sentinel=NAME (a "
			       "master's name: the hosts are its Sentinels)";
			return false;
		}
	}
	if (u->u.hosts > 1 && !u->sentinel[0]) {
		*why = "one host only (several are Sentinels: add ?sentinel=NAME)";
		return false;
	}
	return true;
}

/* ---- Sentinel discovery (issue 24) ------------------------------------- */

/*
 * The master's address as the first Sentinel that answers names it
 * (SENTINEL get-master-addr-by-name), into host and *port. False with
 * l->err saying why (no Sentinel answered, or none knows the name).
 */
static bool discover(fb_rlink *l, const rurl *u, char *host, size_t len, int *port)
{
	char why[FB_RL_ERRLEN] = "";
	for (int i = 0; i < u->u.hosts; i++) {
		fb_rlink s = {.url = l->url, .timeout_ns = UINT64_C(1000000000)};
		if (fb_rl_dial(&s, u->u.host[i].host, u->u.host[i].port, NULL, 0) != FB_OK) {
			size_t n = strlen(l->url); /* s.err is "<url>: <reason>" */
			const char *reason = strncmp(s.err, l->url, n) == 0 ? s.err + n + 2 : s.err;
			snprintf(why, sizeof why,
			         "%.200s: no Sentinel answered (the last, at %.100s:%d: %.200s)",
			         l->url, u->u.host[i].host, u->u.host[i].port, reason);
			continue;
		}
		fb_rcmd c = {0};
		fb_rl_arg(&c, "SENTINEL");
		fb_rl_arg(&c, "get-master-addr-by-name");
		fb_rl_arg(&c, u->sentinel);
		redisReply *r = fb_rl_run(&s, &c);
		bool ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
		          r->element[0]->type == REDIS_REPLY_STRING &&
		          r->element[1]->type == REDIS_REPLY_STRING;
		if (ok) {
			snprintf(host, len, "%s", r->element[0]->str);
			*port = atoi(r->element[1]->str);
		} else if (r || s.c) {
			snprintf(why, sizeof why,
			         "%s: the Sentinel at %s:%d knows no master named '%s'", l->url,
			         u->u.host[i].host, u->u.host[i].port, u->sentinel);
		} else {
			snprintf(why, sizeof why, "%s", s.err);
		}
		freeReplyObject(r);
		if (s.c)
			redisFree(s.c);
		if (ok)
			return true;
	}
	snprintf(l->err, sizeof l->err, "%s", why);
	return false;
}

/* Connect l to the server: the URL's host, or the master its Sentinels
 * name (and which says ROLE master: a Sentinel may still name a dead or
 * demoted one during a failover). */
static fb_err dial_server(fb_rlink *l, const rurl *u)
{
	if (!u->sentinel[0])
		return fb_rl_dial(l, u->u.host[0].host, u->u.host[0].port, &u->u, u->db);
	char host[256];
	int port;
	if (!discover(l, u, host, sizeof host, &port))
		return FB_ESYS;
	fb_err rc = fb_rl_dial(l, host, port, &u->u, u->db);
	if (rc != FB_OK)
		return rc;
	fb_rcmd c = {0};
	fb_rl_arg(&c, "ROLE");
	redisReply *r = fb_rl_run(l, &c);
	bool master = r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
	              r->element[0]->type == REDIS_REPLY_STRING &&
	              strcmp(r->element[0]->str, "master") == 0;
	freeReplyObject(r);
	if (master)
		return FB_OK;
	if (l->c) {
		fb_rl_fail(l, "%s:%d, which its Sentinels name master '%s', is not one (yet)", host,
		           port, u->sentinel);
		redisFree(l->c);
		l->c = NULL;
	}
	return FB_ESYS;
}

/*
 * A link that failed mid-run connects again, as real clients do, and what
 * it connects to is what the URL names now: a Sentinel-discovered link
 * follows the failover (any failure: the old master may answer READONLY),
 * asking the Sentinels again every 50 ms until the master they name
 * answers as master, for up to timeout_ns; a plain one whose connection
 * broke (issue 24: a reset, not a timeout, nor a server's error reply)
 * dials the same server again, for up to RELINK_NS. True: connected
 * again. The call that failed is not retried here: its outcome is
 * unknown, and the caller settles it or reports the conservative one.
 */
/* l->err without the URL fb_rl_fail put in front, to quote in another. */
static const char *unprefixed(const fb_rlink *l, const char *err)
{
	size_t n = l->url ? strlen(l->url) : 0;
	return n && strncmp(err, l->url, n) == 0 && strncmp(err + n, ": ", 2) == 0 ? err + n + 2
	                                                                           : err;
}

static bool follow(fb_rlink *l, const rurl *u)
{
	if (!u->sentinel[0] && (l->c || !l->broke))
		return false;
	uint64_t bound = u->sentinel[0] || l->timeout_ns < RELINK_NS ? l->timeout_ns : RELINK_NS;
	if (l->c) {
		redisFree(l->c);
		l->c = NULL;
	}
	char first[FB_RL_ERRLEN];
	snprintf(first, sizeof first, "%s", l->err);
	uint64_t t0 = fb_clock_now(fb_clock_monotonic());
	for (;;) {
		if (dial_server(l, u) == FB_OK) {
			l->err[0] = 0;
			return true;
		}
		if (fb_clock_now(fb_clock_monotonic()) - t0 > bound) {
			char last[FB_RL_ERRLEN];
			snprintf(last, sizeof last, "%s", l->err);
			fb_rl_fail(l, "lost (%.200s), and no %s answered after it: %.200s",
			           unprefixed(l, first),
			           u->sentinel[0] ? "master named by the Sentinels" : "server",
			           unprefixed(l, last));
			return false;
		}
		fb_sleep_ns(50000000);
	}
}

/* ---- the engine -------------------------------------------------------- */

/* The server's id of the link's connection (CLIENT ID, Redis 5); 0 when
 * the server has none; -1 when the link was lost asking, before any call
 * was sent on it: there is nothing of it to end. */
static long long client_id(fb_rlink *l)
{
	const char *v[2] = {"CLIENT", "ID"};
	size_t len[2] = {6, 2};
	redisReply *r = fb_rl_command(l, 2, v, len);
	long long id = r && r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
	if (!r) {
		fb_rl_lost(l);
		id = -1;
	}
	freeReplyObject(r);
	return id;
}

/* The server instance's run_id (INFO server): a server restarted, from
 * an older RDB maybe, has a new one. "" when not told; false: the link
 * was lost asking. */
static bool run_id(fb_rlink *l, char *out, size_t len)
{
	out[0] = 0;
	const char *v[2] = {"INFO", "server"};
	size_t n[2] = {4, 6};
	redisReply *r = fb_rl_command(l, 2, v, n);
	if (!r) {
		fb_rl_lost(l);
		return false;
	}
	const char *at = r->type == REDIS_REPLY_STRING ? strstr(r->str, "run_id:") : NULL;
	if (at) {
		at += 7;
		size_t k = strcspn(at, "\r\n");
		snprintf(out, len, "%.*s", (int)(k < len ? k : len - 1), at);
	}
	freeReplyObject(r);
	return true;
}

/* One engine (lease or store): the run's configuration, the parsed URL and
 * one admin connection for prepare and version. Read-only once prepared:
 * the workers' connections read it from their own threads. */
typedef struct reng {
	fb_engine_config cfg;
	rurl u;
	bool store;
	char url[URLLEN]; /* redacted */
	fb_rlink admin;
	char version[32];
	char sha[SCRIPTS][41];
} reng;

/* A worker's connection: its own server connection, and (leases) the value
 * of each lease it holds, which release, is_held and renew compare. */
typedef struct held {
	bool used;
	uint32_t key;
	uint64_t fence;
	char val[VALLEN];
} held;

typedef struct store_mark {
	uint32_t key1;
	uint64_t version, highest;
} store_mark;

typedef struct rconn {
	const reng *e;
	fb_rlink l;
	uint16_t worker;
	uint64_t seq;
	unsigned next;
	held held[HELD_SLOTS];
	/* issue 24, the store's: the server's CLIENT ID of this connection
	 * (0: unknown), and per store the last write it saw accepted (key,
	 * token) and how many copies of it (a resent copy is a write of its
	 * own): what a write whose reply was lost is settled against; -1: the
	 * link was lost asking, nothing sent on it to end */
	long long cid;
	char run_id[48]; /* INFO server's run_id at connect ("" unknown) */
	struct {
		uint32_t key;
		uint64_t token;
		unsigned copies;
	} acked[FB_DISCIPLINES];
	/* Per store, a direct-mapped cache of the latest version a reply on
	 * this connection showed for a key (key + 1; 0: empty), and the
	 * store's highest fence then: a lost write's history row, if any, is
	 * at or after that version's row, so its settle reads from there on,
	 * never only a window of the latest rows (1,000 rows on a busy key
	 * pass within a reconnect). A copy's reply does not move it: the row
	 * of the first copy this connection saw accepted stays in range. */
	store_mark mark[FB_DISCIPLINES][MARKS];
} rconn;

/* SCRIPT LOAD every script; the SHAs are the scripts' (content hashes), so
 * a reload finds the same ones. */
static bool load_scripts(reng *e)
{
	for (int i = 0; i < SCRIPTS; i++) {
		fb_rcmd c = {0};
		fb_rl_arg(&c, "SCRIPT");
		fb_rl_arg(&c, "LOAD");
		fb_rl_arg(&c, scripts[i].body);
		redisReply *r = fb_rl_run(&e->admin, &c);
		if (!r)
			return false;
		bool ok = r->type == REDIS_REPLY_STRING && r->len == 40;
		/* written once, at open: the workers' connections read it */
		if (ok && !e->sha[i][0])
			memcpy(e->sha[i], r->str, 41);
		else if (ok && memcmp(e->sha[i], r->str, 40) != 0)
			ok = false;
		freeReplyObject(r);
		if (!ok) {
			fb_rl_fail(&e->admin, "SCRIPT LOAD %s: unexpected reply", scripts[i].name);
			return false;
		}
	}
	return true;
}

/* "redis_version:7.0.15" from INFO server. */
static void read_version(reng *e)
{
	snprintf(e->version, sizeof e->version, "unknown");
	fb_rcmd c = {0};
	fb_rl_arg(&c, "INFO");
	fb_rl_arg(&c, "server");
	redisReply *r = fb_rl_run(&e->admin, &c);
	if (!r)
		return;
	const char *v = r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS
	                        ? strstr(r->str, "redis_version:")
	                        : NULL;
	if (v) {
		v += strlen("redis_version:");
		size_t n = strcspn(v, "\r\n");
		if (n >= sizeof e->version)
			n = sizeof e->version - 1;
		memcpy(e->version, v, n);
		e->version[n] = 0;
	}
	freeReplyObject(r);
}

/*
 * Open either engine: check the configuration and the URL (FB_EINVAL, the
 * URL named with its password redacted), connect the admin connection
 * (FB_ESYS: "<url>: <hiredis reason>"), read the version and load the
 * scripts.
 */
static fb_err open_engine(const fb_engine_config *cfg, const char *url, bool store, void **eng,
                          char *err, size_t errlen)
{
	reng *e = calloc(1, sizeof *e);
	if (!e) {
		fb_engine_err(err, errlen, "out of memory for the Redis engine");
		return FB_ENOMEM;
	}
	e->cfg = *cfg;
	e->store = store;
	if (!e->cfg.clock)
		e->cfg.clock = fb_clock_monotonic();
	fb_url_redact(url ? url : "", e->url, sizeof e->url);
	e->admin.url = e->url;
	e->admin.timeout_ns = fb_engine_timeout(cfg);
	const char *why = NULL;
	fb_err rc = FB_EINVAL;
	if (!parse_url(url, &e->u, &why))
		goto bad;
	why = NULL;
	if (!cfg->keys)
		why = "the engine needs at least one key";
	else if (!store && !cfg->ttl_ns)
		why = "the lease TTL must be positive";
	else if (!store && (cfg->first_fence == 0 || cfg->first_fence > FB_FENCE_MAX))
		why = "the first fence must be in 1..2^47-1";
	else if (store && (!cfg->modes || cfg->modes >= 1u << FB_DISCIPLINES))
		why = "no store discipline selected (or an unknown one)";
	if (why)
		goto bad;
	rc = dial_server(&e->admin, &e->u);
	if (rc != FB_OK)
		goto err;
	read_version(e);
	if (!load_scripts(e)) {
		rc = FB_ESYS;
		goto err;
	}
	*eng = e;
	return FB_OK;
bad:
	fb_rl_fail(&e->admin, "%s", why);
err:
	fb_engine_err(err, errlen, e->admin.err);
	if (e->admin.c)
		redisFree(e->admin.c);
	free(e);
	return rc;
}

static void engine_version(void *eng, char *buf, size_t len)
{
	const reng *e = eng;
	if (len)
		snprintf(buf, len, "%s", e->version);
}

static void engine_close(void *eng)
{
	reng *e = eng;
	if (!e)
		return;
	if (e->admin.c)
		redisFree(e->admin.c);
	free(e);
}

static fb_err engine_connect(void *eng, uint16_t worker, void **conn, char *err, size_t errlen)
{
	const reng *e = eng;
	rconn *c = calloc(1, sizeof *c);
	if (!c) {
		fb_engine_err(err, errlen, "out of memory for a Redis connection");
		return FB_ENOMEM;
	}
	c->e = e;
	c->l.url = e->url;
	c->l.timeout_ns = e->admin.timeout_ns;
	c->worker = worker;
	fb_err rc = dial_server(&c->l, &e->u);
	if (rc != FB_OK) {
		fb_engine_err(err, errlen, c->l.err);
		free(c);
		return rc;
	}
	if (e->store) {
		c->cid = client_id(&c->l);
		if (c->l.c)
			run_id(&c->l, c->run_id, sizeof c->run_id);
	}
	*conn = c;
	return FB_OK;
}

static void engine_disconnect(void *conn)
{
	rconn *c = conn;
	if (!c)
		return;
	if (c->l.c)
		redisFree(c->l.c);
	free(c);
}

static const char *engine_error(void *conn)
{
	const rconn *c = conn;
	return c->l.err[0] ? c->l.err : "no error";
}

/* EVALSHA the script, EVAL once where the server lost its cache. */
static redisReply *eval(fb_rlink *l, const reng *e, int s, fb_rcmd *c)
{
	return fb_rl_eval(l, e->sha[s], scripts[s].body, scripts[s].name, c);
}

/* ---- leases ------------------------------------------------------------ */

static fb_err lease_open(const fb_engine_config *cfg, const char *url, void **eng, char *err,
                         size_t errlen)
{
	return open_engine(cfg, url, false, eng, err, errlen);
}

static void counter_key(const reng *e, uint32_t key, fb_rcmd *c)
{
	if (e->cfg.fence == FB_FENCE_GLOBAL)
		fb_rl_arg(c, "fb:fence");
	else
		fb_rl_argf(c, "fb:fence:%" PRIu32, key);
}

/*
 * fresh: forget every lease and fence (fb:lease:*, fb:fence*), then start
 * the counter(s) one below first_fence, so the first fence minted is
 * first_fence. Otherwise (a shared run's other processes) only create the
 * counters that are missing.
 */
static fb_err lease_prepare(void *eng, bool fresh, char *err, size_t errlen)
{
	reng *e = eng;
	fb_rlink *l = &e->admin;
	if (!load_scripts(e))
		goto err;
	if (fresh && (!fb_rl_scan_delete(l, "fb:lease:*") || !fb_rl_scan_delete(l, "fb:fence*")))
		goto err;
	uint32_t n = e->cfg.fence == FB_FENCE_GLOBAL ? 1 : e->cfg.keys;
	fb_rcmd *cs = malloc(PIPE_CHUNK * sizeof *cs);
	redisReply *rs[PIPE_CHUNK];
	if (!cs) {
		fb_rl_fail(l, "out of memory");
		goto err;
	}
	for (uint32_t k = 0; k < n;) {
		int m = 0;
		for (; m < PIPE_CHUNK && k < n; m++, k++) {
			cs[m].n = 0;
			fb_rl_arg(&cs[m], "SET");
			counter_key(e, k, &cs[m]);
			fb_rl_argf(&cs[m], "%" PRIu64, e->cfg.first_fence - 1);
			if (!fresh)
				fb_rl_arg(&cs[m], "NX");
		}
		if (!fb_rl_pipeline(l, m, cs, rs)) {
			free(cs);
			goto err;
		}
		fb_rl_free_replies(m, rs);
	}
	free(cs);
	return FB_OK;
err:
	fb_engine_err(err, errlen, l->err);
	return FB_ESYS;
}

/* "c<client>.w<worker>.f<fence>": the worker, and the fence where the
 * value carries one (0 otherwise: the incr strategy's values). */
static void parse_value(const char *v, size_t len, uint16_t *owner, uint64_t *fence)
{
	char buf[VALLEN];
	*owner = 0;
	*fence = 0;
	if (len >= sizeof buf)
		return;
	memcpy(buf, v, len);
	buf[len] = 0;
	const char *w = strstr(buf, ".w"), *f = strstr(buf, ".f");
	if (w) {
		unsigned long x = strtoul(w + 2, NULL, 10);
		*owner = x <= UINT16_MAX ? (uint16_t)x : 0;
	}
	if (f)
		*fence = strtoull(f + 2, NULL, 10);
}

static void remember(rconn *c, uint32_t key, uint64_t fence, const char *val)
{
	held *h = NULL;
	for (int i = 0; i < HELD_SLOTS && !h; i++)
		if (c->held[i].used && c->held[i].key == key)
			h = &c->held[i];
	for (int i = 0; i < HELD_SLOTS && !h; i++)
		if (!c->held[i].used)
			h = &c->held[i];
	if (!h)
		h = &c->held[c->next++ % HELD_SLOTS];
	*h = (held){.used = true, .key = key, .fence = fence};
	snprintf(h->val, sizeof h->val, "%s", val);
}

static held *find_held(rconn *c, uint32_t key, uint64_t fence)
{
	for (int i = 0; i < HELD_SLOTS; i++)
		if (c->held[i].used && c->held[i].key == key && c->held[i].fence == fence)
			return &c->held[i];
	return NULL;
}

/*
 * The value this connection stored for lease l of key: remembered at
 * acquire, or (script strategy) rebuilt, since there (client, owner,
 * fence) determine it. False: not a lease this connection can prove.
 */
static bool value_of(rconn *c, uint32_t key, const fb_lease *l, char *val, size_t len)
{
	held *h = find_held(c, key, l->fence);
	if (h) {
		snprintf(val, len, "%s", h->val);
		return true;
	}
	if (c->e->u.way != WAY_SCRIPT || !l->owner)
		return false;
	snprintf(val, len, "c%" PRIu32 ".w%u.f%" PRIu64, c->e->cfg.client_id, l->owner, l->fence);
	return true;
}

static uint64_t ttl_ms(const reng *e)
{
	/* rounded up: the server's expiry is never before the client's
	 * now + ttl */
	return (e->cfg.ttl_ns + 999999) / 1000000;
}

static uint64_t pttl_to_expiry(uint64_t now, long long pttl)
{
	return pttl >= 0 ? now + (uint64_t)pttl * 1000000 : 0;
}

/* The whole acquire and mint in one script. */
static fb_acquire acquire_script(rconn *c, uint32_t key, fb_lease *out, uint64_t now)
{
	const reng *e = c->e;
	fb_rcmd m = {0};
	fb_rl_eval_begin(&m, 3);
	fb_rl_argf(&m, "fb:lease:%" PRIu32, key);
	counter_key(e, key, &m);
	fb_rl_argf(&m, "fb:fence:last:%" PRIu32, key);
	fb_rl_argf(&m, "c%" PRIu32 ".w%u", e->cfg.client_id, c->worker);
	fb_rl_argf(&m, "%" PRIu64, ttl_ms(e));
	fb_rl_argf(&m, "%" PRIu64, (uint64_t)FB_FENCE_MAX);
	redisReply *r = eval(&c->l, e, S_ACQUIRE, &m);
	if (!r)
		return FB_ACQ_ERROR;
	long long tag, a = 0, s = 0, us = 0, p = 0;
	fb_acquire res = FB_ACQ_ERROR;
	if (!fb_rl_el_int(r, 0, &tag))
		goto bad;
	if (tag == 1) {
		if (!fb_rl_el_int(r, 1, &a) || !fb_rl_el_int(r, 2, &s) ||
		    !fb_rl_el_int(r, 3, &us) || !fb_rl_el_int(r, 4, &p) || a <= 0 || p < 0)
			goto bad;
		*out = (fb_lease){.fence = (uint64_t)a,
		                  .owner = c->worker,
		                  .expires_at = now + e->cfg.ttl_ns,
		                  .service_at = (uint64_t)s * 1000000000u + (uint64_t)us * 1000u,
		                  .replaced = (uint64_t)p};
		char val[VALLEN];
		snprintf(val, sizeof val, "c%" PRIu32 ".w%u.f%lld", e->cfg.client_id, c->worker, a);
		remember(c, key, out->fence, val);
		res = FB_ACQUIRED;
	} else if (tag == 0) {
		if (r->elements != 3 || r->element[1]->type != REDIS_REPLY_STRING ||
		    !fb_rl_el_int(r, 2, &a))
			goto bad;
		*out = (fb_lease){.expires_at = pttl_to_expiry(now, a)};
		parse_value(r->element[1]->str, r->element[1]->len, &out->owner, &out->fence);
		res = FB_HELD;
	} else if (tag == 2) {
		res = FB_EXHAUSTED;
	} else {
		goto bad;
	}
	freeReplyObject(r);
	return res;
bad:
	freeReplyObject(r);
	fb_rl_fail(&c->l, "acquire: unexpected reply");
	return FB_ACQ_ERROR;
}

static fb_io release_value(rconn *c, uint32_t key, const char *val);

/*
 * The trap: take the key (S_TAKE: SET NX, expiring at the server's TIME
 * plus the TTL), then cfg->between (the fault point), then a separate step that
 * INCRs the counter (the mint script, which also tags the lease with its
 * fence if it is still ours). A holder paused between the two mints its
 * fence after a successor that acquired later: a newer fence on an older
 * lease.
 */
static fb_acquire acquire_incr(rconn *c, uint32_t key, fb_lease *out, uint64_t now)
{
	const reng *e = c->e;
	char val[VALLEN];
	snprintf(val, sizeof val, "c%" PRIu32 ".w%u.s%" PRIu64, e->cfg.client_id, c->worker,
	         ++c->seq);
	fb_rcmd t = {0};
	fb_rl_eval_begin(&t, 1);
	fb_rl_argf(&t, "fb:lease:%" PRIu32, key);
	fb_rl_arg(&t, val);
	fb_rl_argf(&t, "%" PRIu64, ttl_ms(e));
	redisReply *r = eval(&c->l, e, S_TAKE, &t);
	if (!r)
		return FB_ACQ_ERROR;
	fb_acquire res = FB_ACQ_ERROR;
	long long tag, s, us, pttl;
	if (!fb_rl_el_int(r, 0, &tag))
		goto bad;
	if (tag == 0) { /* held: on contention, the holder's expiry and owner */
		if (r->elements != 3 || r->element[1]->type != REDIS_REPLY_STRING ||
		    !fb_rl_el_int(r, 2, &pttl))
			goto bad;
		*out = (fb_lease){.expires_at = pttl_to_expiry(now, pttl)};
		if (r->element[1]->len)
			parse_value(r->element[1]->str, r->element[1]->len, &out->owner,
			            &out->fence);
		else
			out->expires_at = 0; /* gone already: try again */
		freeReplyObject(r);
		return FB_HELD;
	}
	if (tag != 1 || !fb_rl_el_int(r, 1, &s) || !fb_rl_el_int(r, 2, &us))
		goto bad;
	freeReplyObject(r);
	if (e->cfg.between)
		e->cfg.between(e->cfg.between_ctx);
	fb_rcmd m = {0};
	fb_rl_eval_begin(&m, 3);
	fb_rl_argf(&m, "fb:lease:%" PRIu32, key);
	counter_key(e, key, &m);
	fb_rl_argf(&m, "fb:fence:last:%" PRIu32, key);
	fb_rl_arg(&m, val);
	fb_rl_argf(&m, "%" PRIu64, (uint64_t)FB_FENCE_MAX);
	redisReply *f = eval(&c->l, e, S_MINT, &m);
	if (!f)
		return FB_ACQ_ERROR;
	long long fence, tagged, prev;
	if (!fb_rl_el_int(f, 0, &fence) || !fb_rl_el_int(f, 1, &tagged) ||
	    !fb_rl_el_int(f, 2, &prev) || fence <= 0 || prev < 0) {
		freeReplyObject(f);
		fb_rl_fail(&c->l, "mint: unexpected reply");
		return FB_ACQ_ERROR;
	}
	freeReplyObject(f);
	if ((uint64_t)fence > FB_FENCE_MAX)
		return release_value(c, key, val) == FB_IO_ERROR ? FB_ACQ_ERROR : FB_EXHAUSTED;
	*out = (fb_lease){.fence = (uint64_t)fence,
	                  .owner = c->worker,
	                  .expires_at = now + e->cfg.ttl_ns,
	                  .service_at = (uint64_t)s * 1000000000u + (uint64_t)us * 1000u,
	                  .replaced = (uint64_t)prev};
	/* the value the key holds now, if it is still ours */
	if (tagged == 1) {
		size_t n = strlen(val);
		snprintf(val + n, sizeof val - n, ".f%lld", fence);
	}
	remember(c, key, out->fence, val);
	return FB_ACQUIRED;
bad:
	freeReplyObject(r);
	fb_rl_fail(&c->l, "acquire: unexpected reply");
	return res;
}

/*
 * expires_at is the client's clock read before the request leaves plus
 * the TTL: the server's own expiry (from its receipt, TTL rounded up to
 * ms) is never earlier. service_at is the server's TIME of the
 * acquisition.
 */
static fb_acquire lease_acquire(void *conn, uint32_t key, fb_lease *out, fb_lease_stats *st)
{
	rconn *c = conn;
	(void)st; /* no CAS here: the counters stay 0 */
	if (key >= c->e->cfg.keys) {
		fb_rl_fail(&c->l, "acquire: key %" PRIu32 " out of range", key);
		return FB_ACQ_ERROR;
	}
	uint64_t now = fb_clock_now(c->e->cfg.clock);
	fb_acquire a = c->e->u.way == WAY_SCRIPT ? acquire_script(c, key, out, now)
	                                         : acquire_incr(c, key, out, now);
	/* issue 24: across a failover or a reset, an acquire whose reply was
	 * lost did not give this worker the lease, as far as it knows: the
	 * conservative answer (if it did, the lease runs out like a crashed
	 * holder's, and no one reports it to the witness: no false alarm) */
	if (a == FB_ACQ_ERROR && follow(&c->l, &c->e->u)) {
		*out = (fb_lease){0};
		return FB_HELD;
	}
	return a;
}

/* Compare-and-delete by value. */
static fb_io release_value(rconn *c, uint32_t key, const char *val)
{
	fb_rcmd m = {0};
	fb_rl_eval_begin(&m, 1);
	fb_rl_argf(&m, "fb:lease:%" PRIu32, key);
	fb_rl_arg(&m, val);
	redisReply *r = eval(&c->l, c->e, S_RELEASE, &m);
	if (!r)
		return FB_IO_ERROR;
	if (r->type != REDIS_REPLY_INTEGER) {
		freeReplyObject(r);
		fb_rl_fail(&c->l, "release: unexpected reply");
		return FB_IO_ERROR;
	}
	fb_io res = r->integer == 1 ? FB_IO_OK : FB_IO_REFUSED;
	freeReplyObject(r);
	return res;
}

static fb_io lease_release(void *conn, uint32_t key, const fb_lease *l, fb_lease *freed)
{
	(void)freed; /* it cannot say which word it freed */
	rconn *c = conn;
	char val[VALLEN];
	if (!value_of(c, key, l, val, sizeof val))
		return FB_IO_REFUSED;
	fb_io res = release_value(c, key, val);
	if (res == FB_IO_ERROR && follow(&c->l, &c->e->u))
		res = FB_IO_REFUSED; /* issue 24: not known released; its TTL frees it */
	held *h = find_held(c, key, l->fence);
	if (h && res != FB_IO_ERROR)
		h->used = false;
	return res;
}

static fb_io lease_is_held(void *conn, uint32_t key, const fb_lease *l)
{
	rconn *c = conn;
	char val[VALLEN];
	if (!value_of(c, key, l, val, sizeof val))
		return FB_IO_REFUSED;
	fb_rcmd m = {0};
	fb_rl_arg(&m, "GET");
	fb_rl_argf(&m, "fb:lease:%" PRIu32, key);
	redisReply *r = fb_rl_run(&c->l, &m);
	if (!r) /* issue 24: across a failover or a reset, not known held: not held */
		return follow(&c->l, &c->e->u) ? FB_IO_REFUSED : FB_IO_ERROR;
	fb_io res = r->type == REDIS_REPLY_STRING && r->len == strlen(val) &&
	                            memcmp(r->str, val, r->len) == 0
	                    ? FB_IO_OK
	                    : FB_IO_REFUSED;
	freeReplyObject(r);
	return res;
}

static fb_io lease_renew(void *conn, uint32_t key, const fb_lease *l, fb_lease *out)
{
	rconn *c = conn;
	char val[VALLEN];
	if (!value_of(c, key, l, val, sizeof val))
		return FB_IO_REFUSED;
	uint64_t now = fb_clock_now(c->e->cfg.clock);
	fb_rcmd m = {0};
	fb_rl_eval_begin(&m, 1);
	fb_rl_argf(&m, "fb:lease:%" PRIu32, key);
	fb_rl_arg(&m, val);
	fb_rl_argf(&m, "%" PRIu64, ttl_ms(c->e));
	redisReply *r = eval(&c->l, c->e, S_RENEW, &m);
	if (!r) /* issue 24: across a failover or a reset, not known renewed */
		return follow(&c->l, &c->e->u) ? FB_IO_REFUSED : FB_IO_ERROR;
	if (r->type != REDIS_REPLY_INTEGER) {
		freeReplyObject(r);
		fb_rl_fail(&c->l, "renew: unexpected reply");
		return FB_IO_ERROR;
	}
	fb_io res = r->integer == 1 ? FB_IO_OK : FB_IO_REFUSED;
	freeReplyObject(r);
	if (res == FB_IO_OK && out) {
		*out = *l;
		out->expires_at = now + c->e->cfg.ttl_ns;
	}
	return res;
}

static fb_io lease_peek(void *conn, uint32_t key, fb_lease *out)
{
	rconn *c = conn;
	uint64_t now = fb_clock_now(c->e->cfg.clock);
	fb_rcmd cs[2] = {{0}};
	fb_rl_arg(&cs[0], "GET");
	fb_rl_argf(&cs[0], "fb:lease:%" PRIu32, key);
	fb_rl_arg(&cs[1], "PTTL");
	fb_rl_arg(&cs[1], cs[0].v[1]);
	redisReply *r[2];
	if (!fb_rl_pipeline(&c->l, 2, cs, r) &&
	    (!follow(&c->l, &c->e->u) || !fb_rl_pipeline(&c->l, 2, cs, r)))
		return FB_IO_ERROR; /* issue 24: asked again across a failover */
	*out = (fb_lease){0};
	if (r[0]->type == REDIS_REPLY_STRING) {
		parse_value(r[0]->str, r[0]->len, &out->owner, &out->fence);
		if (r[1]->type == REDIS_REPLY_INTEGER)
			out->expires_at = pttl_to_expiry(now, r[1]->integer);
	}
	fb_rl_free_replies(2, r);
	return FB_IO_OK;
}

/* CLIENT PAUSE <ms> ALL (Redis 6.2); older servers take no mode. */
static fb_io lease_server_pause(void *conn, uint64_t ns)
{
	rconn *c = conn;
	fb_rcmd m = {0};
	fb_rl_arg(&m, "CLIENT");
	fb_rl_arg(&m, "PAUSE");
	fb_rl_argf(&m, "%" PRIu64, ns / 1000000 ? (ns + 999999) / 1000000 : 1);
	fb_rl_arg(&m, "ALL");
	redisReply *r = fb_rl_command(&c->l, m.n, m.v, m.len);
	if (r && r->type == REDIS_REPLY_ERROR) {
		freeReplyObject(r);
		r = fb_rl_command(&c->l, m.n - 1, m.v, m.len);
	}
	if (!fb_rl_good(&c->l, r, "CLIENT PAUSE"))
		return FB_IO_ERROR;
	freeReplyObject(r);
	return FB_IO_OK;
}

static bool redis_check_url(const char *url, const char **why)
{
	rurl u;
	return parse_url(url, &u, why);
}

const fb_lease_ops fb_redis_lease_ops = {
        FB_LEASE_OPS_HEAD,
        .scheme = "redis",
        .name = "Redis",
        .url = FB_REDIS_URL,
        .help = FB_REDIS_LEASE_HELP,
        .remote = true,
        .open = lease_open,
        .check_url = redis_check_url,
        .version = engine_version,
        .prepare = lease_prepare,
        .close = engine_close,
        .connect = engine_connect,
        .disconnect = engine_disconnect,
        .error = engine_error,
        .acquire = lease_acquire,
        .release = lease_release,
        .is_held = lease_is_held,
        .renew = lease_renew,
        .peek = lease_peek,
        .server_pause = lease_server_pause,
};

/* ---- the store --------------------------------------------------------- */

static fb_err store_open(const fb_engine_config *cfg, const char *url, void **eng, char *err,
                         size_t errlen)
{
	return open_engine(cfg, url, true, eng, err, errlen);
}

/*
 * fresh: delete every account, history and the meta (fb:acct:*, fb:hist:*,
 * fb:meta), then create them. Otherwise the init script alone: it refuses
 * a meta recorded with another balance, amount or key count (FB_EINVAL,
 * naming what differs) and creates only the accounts that are missing.
 */
static fb_err store_prepare(void *eng, bool fresh, char *err, size_t errlen)
{
	reng *e = eng;
	fb_rlink *l = &e->admin;
	fb_err rc = FB_ESYS;
	if (!load_scripts(e))
		goto err;
	if (fresh) {
		fb_rcmd del = {0};
		fb_rl_arg(&del, "DEL");
		fb_rl_arg(&del, "fb:meta");
		if (!fb_rl_scan_delete(l, "fb:acct:*") || !fb_rl_scan_delete(l, "fb:hist:*") ||
		    !fb_rl_run_ok(l, &del))
			goto err;
	}
	fb_rcmd m = {0};
	fb_rl_eval_begin(&m, 1);
	fb_rl_arg(&m, "fb:meta");
	fb_rl_argf(&m, "%" PRId64, e->cfg.initial_balance);
	fb_rl_argf(&m, "%" PRId64, e->cfg.amount);
	fb_rl_argf(&m, "%" PRIu32, e->cfg.keys);
	fb_rl_argf(&m, "%d", e->cfg.op);
	fb_rl_argf(&m, "%" PRIu32, e->cfg.modes);
	for (int d = 0; d < FB_DISCIPLINES; d++)
		fb_rl_argf(&m, "fb:acct:%s:", fb_discipline_key((fb_discipline)d));
	redisReply *r = eval(l, e, S_INIT, &m);
	if (!r)
		goto err;
	long long tag;
	if (!fb_rl_el_int(r, 0, &tag)) {
		freeReplyObject(r);
		fb_rl_fail(l, "init: unexpected reply");
		goto err;
	}
	if (tag == 0) {
		char diff[400] = "";
		size_t o = 0;
		const char *name[] = {"initial balance", "amount", "keys"};
		char mine[3][24];
		snprintf(mine[0], sizeof mine[0], "%" PRId64, e->cfg.initial_balance);
		snprintf(mine[1], sizeof mine[1], "%" PRId64, e->cfg.amount);
		snprintf(mine[2], sizeof mine[2], "%" PRIu32, e->cfg.keys);
		for (size_t i = 0; i < 3 && i + 1 < r->elements; i++) {
			const redisReply *x = r->element[i + 1];
			if (x->type != REDIS_REPLY_STRING ||
			    (x->len == strlen(mine[i]) && memcmp(x->str, mine[i], x->len) == 0))
				continue;
			int n = snprintf(diff + o, sizeof diff - o, "%s%s %.*s (this run: %s)",
			                 o ? ", " : "", name[i], (int)(x->len > 40 ? 40 : x->len),
			                 x->str, mine[i]);
			if (n > 0 && (size_t)n < sizeof diff - o)
				o += (size_t)n;
		}
		fb_rl_fail(
		        l,
		        "fb:meta was prepared for another run: %s; share it with the same options "
		        "or prepare it fresh",
		        diff);
		rc = FB_EINVAL;
		freeReplyObject(r);
		goto err;
	}
	freeReplyObject(r);
	return FB_OK;
err:
	fb_engine_err(err, errlen, l->err);
	return rc;
}

static const char *const op_name[] = {
        [FB_STORE_READ] = "read", [FB_STORE_WRITE] = "write", [FB_STORE_DEBIT] = "debit"};

/*
 * What must be settled before an operation of store d is sent: a
 * discipline or key out of range (FB_IO_ERROR), a token no lease can mint
 * (refused, not stale, as the in-process store does), a debit that cannot
 * be negated. False with *io and *r the outcome: nothing to send.
 */
static bool store_sendable(rconn *c, fb_store_verb op, fb_discipline d, uint32_t key,
                           uint64_t token, int64_t value, fb_store_result *r, fb_io *io)
{
	*r = (fb_store_result){.token = token};
	*io = FB_IO_ERROR;
	if ((unsigned)d >= FB_DISCIPLINES || key >= c->e->cfg.keys)
		fb_rl_fail(&c->l, "%s: discipline %d / key %" PRIu32 " out of range", op_name[op],
		           (int)d, key);
	else if (token > FB_FENCE_MAX)
		*io = FB_IO_REFUSED;
	else if (op == FB_STORE_DEBIT && value == INT64_MIN)
		fb_rl_fail(&c->l, "debit: amount out of range");
	else
		return true;
	return false;
}

/* The script call of an operation: the read script (KEYS account; ARGV
 * token, fenced) or the write script (KEYS account, history; ARGV
 * discipline, op, value, token, client, worker). */
static void store_call(const rconn *c, fb_store_verb op, fb_discipline d, uint32_t key,
                       uint64_t token, int64_t value, fb_rcmd *m)
{
	static const char *const mode[FB_DISCIPLINES] = {"f", "w", "u"};
	m->n = 0;
	fb_rl_eval_begin(m, op == FB_STORE_READ ? 1 : 2);
	fb_rl_evalsha(m, c->e->sha[op == FB_STORE_READ ? S_READ : S_WRITE]);
	fb_rl_argf(m, "fb:acct:%s:%" PRIu32, fb_discipline_key(d), key);
	if (op == FB_STORE_READ) {
		fb_rl_argf(m, "%" PRIu64, token);
		fb_rl_arg(m, d == FB_FENCED ? "1" : "0");
		return;
	}
	fb_rl_argf(m, "fb:hist:%s:%" PRIu32, fb_discipline_key(d), key);
	fb_rl_arg(m, mode[d]);
	fb_rl_arg(m, op == FB_STORE_DEBIT ? "debit" : "set");
	fb_rl_argf(m, "%" PRId64, op == FB_STORE_DEBIT ? -value : value);
	fb_rl_argf(m, "%" PRIu64, token);
	fb_rl_argf(m, "%" PRIu32, c->e->cfg.client_id);
	fb_rl_argf(m, "%u", c->worker);
}

/* A write store d accepted, in this connection's own count. */
static void note_acked(rconn *c, fb_discipline d, uint32_t key, uint64_t token)
{
	if (c->acked[d].key != key || c->acked[d].token != token)
		c->acked[d].copies = 0;
	c->acked[d].key = key;
	c->acked[d].token = token;
	c->acked[d].copies++;
}

/*
 * An operation's reply x (freed here) as store d's outcome. NULL: no reply
 * came (the link says why); an error reply is the server's, named with
 * its store ("write-fenced write: ..."). Read replies: ok, balance, last,
 * highest (before), version; write replies: ok, balance after, before,
 * last, highest (before), version, stale.
 */
static fb_io store_reply(rconn *c, fb_store_verb op, fb_discipline d, uint32_t key, uint64_t token,
                         redisReply *x, fb_store_result *r)
{
	char what[48];
	snprintf(what, sizeof what, "%s %s", fb_discipline_name(d), op_name[op]);
	if (!fb_rl_good(&c->l, x, what))
		return FB_IO_ERROR;
	long long v[7] = {0}; /* ok, after, before, last, high, version, stale */
	static const int at[2][7] = {{0, 1, 1, 2, 3, 4, -1}, {0, 1, 2, 3, 4, 5, 6}};
	const int *el = at[op != FB_STORE_READ];
	bool good = true;
	for (int i = 0; i < 7; i++)
		good = good && (el[i] < 0 || fb_rl_el_int(x, (size_t)el[i], &v[i]));
	freeReplyObject(x);
	if (!good) {
		fb_rl_fail(&c->l, "%s: unexpected reply", what);
		return FB_IO_ERROR;
	}
	*r = (fb_store_result){.ok = v[0] == 1,
	                       .stale = v[6] == 1,
	                       .version = (uint64_t)v[5],
	                       .balance = v[1],
	                       .before = v[2],
	                       .token = token,
	                       .highest = (uint64_t)v[4],
	                       .highest_written = d != FB_FENCED || v[4] == v[3]};
	bool copy = op != FB_STORE_READ && c->acked[d].copies && c->acked[d].key == key &&
	            c->acked[d].token == token;
	if (!copy) {
		c->mark[d][key % MARKS].key1 = key + 1;
		c->mark[d][key % MARKS].version = (uint64_t)v[5];
		c->mark[d][key % MARKS].highest = (uint64_t)v[4];
	}
	if (r->ok && op != FB_STORE_READ)
		note_acked(c, d, key, token);
	return r->ok ? FB_IO_OK : FB_IO_REFUSED;
}

/* One operation in its own round trip. */
static fb_io store_once(rconn *c, fb_store_verb op, fb_discipline d, uint32_t key, uint64_t token,
                        int64_t value, fb_store_result *r)
{
	fb_io io;
	if (!store_sendable(c, op, d, key, token, value, r, &io))
		return io;
	fb_rcmd m;
	store_call(c, op, d, key, token, value, &m);
	int s = op == FB_STORE_READ ? S_READ : S_WRITE;
	redisReply *x =
	        fb_rl_noscript(&c->l, scripts[s].body, &m, fb_rl_command(&c->l, m.n, m.v, m.len));
	return store_reply(c, op, d, key, token, x, r);
}

/* ---- a lost reply, settled (issue 24) ---- */

static bool parse_row(const redisReply *x, fb_history_row *h);

/*
 * Connect a store connection again after its link failed (a reset, or a
 * failover through the Sentinels). On the same server the old connection
 * is killed first (CLIENT KILL ID): a command it sent that the server has
 * not run yet then never runs, so what the history says next is final.
 * False: no server answered, or the link failed again (l->err says why).
 */
/* The link connected again given up for good: what the lost call did is
 * not known and cannot be settled (l->err says why); every later call on
 * it fails at once. */
static bool unsettleable(rconn *c)
{
	redisFree(c->l.c);
	c->l.c = NULL;
	c->l.broke = false; /* not to be connected again */
	return false;
}

static bool store_relink(rconn *c)
{
	long long old = c->cid;
	bool sentinel = c->e->u.sentinel[0] != 0;
	if (!follow(&c->l, &c->e->u))
		return false;
	/* Which server answers now: plain, the same address, so another
	 * run_id is a restart (from an older snapshot maybe: the history no
	 * longer says what ran); through Sentinel, another run_id is another
	 * master (a failover), whose history the old connection cannot reach,
	 * and the same run_id the master a timeout left, where the old
	 * connection may still run the lost call: ended first, as plain. */
	char now[sizeof c->run_id] = "";
	if (c->run_id[0] && !run_id(&c->l, now, sizeof now))
		return false;
	bool same = c->run_id[0] && strcmp(now, c->run_id) == 0;
	if (!sentinel && c->run_id[0] && !same) {
		fb_rl_fail(&c->l,
		           "server restarted (run_id %.40s, was %.40s): a write whose "
		           "reply was lost cannot be settled",
		           now[0] ? now : "unknown", c->run_id);
		return unsettleable(c);
	}
	if (sentinel && (!c->run_id[0] || !now[0])) {
		fb_rl_fail(&c->l, "the master gave no run_id (INFO server), so whether the "
		                  "lost call's master answers again is not known: a write whose "
		                  "reply was lost cannot be settled");
		return unsettleable(c);
	}
	if (sentinel && !same) {
		memcpy(c->run_id, now, sizeof now);
	} else if (old == 0) {
		/* no id to kill by: the old connection may still run the lost
		 * call after the history is read */
		fb_rl_fail(&c->l, "cannot end the old connection: the server gave it no "
		                  "CLIENT ID, so a write whose reply was lost cannot be settled");
		return unsettleable(c);
	} else if (old > 0) {
		/* The filter form answers the number it killed (0: gone
		 * already); an error reply (NOPERM for an ACL user without
		 * CLIENT) means the old connection may still run the lost call
		 * after the history is read. */
		fb_rcmd m = {0};
		fb_rl_arg(&m, "CLIENT");
		fb_rl_arg(&m, "KILL");
		fb_rl_arg(&m, "ID");
		fb_rl_argf(&m, "%lld", old);
		redisReply *r = fb_rl_command(&c->l, m.n, m.v, m.len);
		if (!r) {
			fb_rl_lost(&c->l);
			return false;
		}
		bool killed = r->type == REDIS_REPLY_INTEGER;
		if (!killed)
			fb_rl_fail(&c->l,
			           "cannot end the old connection: CLIENT KILL ID %lld: %.200s",
			           old, r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
		freeReplyObject(r);
		if (!killed)
			return unsettleable(c);
	}
	c->cid = client_id(&c->l); /* 0: the next relink cannot settle */
	return c->l.c != NULL;
}

/*
 * A write whose reply was lost, on the link connected again: the history
 * the write appends in its own step says whether it landed. One copy more
 * of (key, token) from this worker than this connection saw accepted is
 * the lost write, accepted, its outcome as the history tells it (the
 * highest fence before it: the history's highest before it, which is the
 * store's own in unfenced and write-fenced; in fenced, reads may have
 * raised it within what the write still passed). None: it never ran, and
 * it is sent again, a write of its own whose reply is its outcome.
 */
static fb_io store_settle(rconn *c, fb_store_verb op, fb_discipline d, uint32_t key, uint64_t token,
                          int64_t value, fb_store_result *r)
{
	char hist[64];
	snprintf(hist, sizeof hist, "fb:hist:%s:%" PRIu32, fb_discipline_key(d), key);
	/* the old connection is ended, so the lost write's row, if it ran, is
	 * in the history now; rows appended while it is read are others' */
	fb_rcmd m = {0};
	redisReply *x = NULL;
	bool good = true;
	/* from the row of the version this connection saw last before the
	 * write (every row when it saw none): the highest fence before that
	 * row is the store's highest then in unfenced (whose reads register
	 * nothing); in the fenced two, accepted fences only grow, so the row
	 * itself is the highest before the next */
	const store_mark *mk = &c->mark[d][key % MARKS];
	bool marked = mk->key1 == key + 1 && mk->version;
	long long from = marked ? (long long)mk->version - 1 : 0;
	/* The first copy this connection has not seen accepted is this write:
	 * a later copy is one sent again after it (issue 24). */
	unsigned acked =
	        c->acked[d].key == key && c->acked[d].token == token ? c->acked[d].copies : 0;
	unsigned copies = 0;
	fb_history_row mine = {0};
	uint64_t top = marked && d == FB_UNFENCED ? mk->highest : 0, top_mine = 0, prev = 0,
	         last_mine = 0;
	for (long long at = from, got = HIST_CHUNK; good && got == HIST_CHUNK; at += HIST_CHUNK) {
		long long to = at + HIST_CHUNK - 1;
		m.n = 0;
		fb_rl_arg(&m, "LRANGE");
		fb_rl_arg(&m, hist);
		fb_rl_argf(&m, "%lld", at);
		fb_rl_argf(&m, "%lld", to);
		x = fb_rl_run(&c->l, &m);
		if (!x)
			return FB_IO_ERROR;
		good = x->type == REDIS_REPLY_ARRAY;
		got = good ? (long long)x->elements : 0;
		for (size_t i = 0; good && i < x->elements; i++) {
			fb_history_row h;
			good = parse_row(x->element[i], &h);
			if (good && h.fence == token && h.client == c->e->cfg.client_id &&
			    h.worker == c->worker) {
				if (copies++ == acked) {
					mine = h;
					top_mine = top;
					last_mine = prev;
				}
			}
			if (good && h.fence > top)
				top = h.fence;
			prev = h.fence;
		}
		freeReplyObject(x);
	}
	if (!good) {
		fb_rl_fail(&c->l, "%s %s: its history is not what the write appends",
		           fb_discipline_name(d), op_name[op]);
		return FB_IO_ERROR;
	}
	/* Fewer copies than seen accepted: the store lost a write it
	 * acknowledged (asynchronous replication, a failover). Sent again,
	 * it could be accepted twice and blamed on fencing: its outcome is
	 * left unknown, the store's loss, not fencing's. */
	if (copies < acked) {
		fb_rl_fail(&c->l,
		           "%s %s: its reply was lost, and the history holds %u copies of it "
		           "where %u were seen accepted: the store lost an acknowledged write (a "
		           "failover?), so its outcome is unknown",
		           fb_discipline_name(d), op_name[op], copies, acked);
		return FB_IO_ERROR;
	}
	if (copies <= acked)
		return store_once(c, op, d, key, token, value, r);
	*r = (fb_store_result){.ok = true,
	                       .stale = mine.store_stale,
	                       .version = mine.version,
	                       .balance = mine.after,
	                       .before = mine.before,
	                       .token = token,
	                       .highest = top_mine,
	                       .highest_written = d != FB_FENCED || top_mine == last_mine};
	note_acked(c, d, key, token);
	return FB_IO_OK;
}

/* The operation again on a link connected again: a read is asked again, a
 * write settled. */
static fb_io store_again(rconn *c, fb_store_verb op, fb_discipline d, uint32_t key, uint64_t token,
                         int64_t value, fb_store_result *r)
{
	return op == FB_STORE_READ ? store_once(c, op, d, key, token, value, r)
	                           : store_settle(c, op, d, key, token, value, r);
}

/* Whether a failed call may be tried again on a link connected again: the
 * connection broke (a reset), or a Sentinel may name a new master. */
static bool relinkable(const rconn *c)
{
	return c->e->u.sentinel[0] || (!c->l.c && c->l.broke);
}

static fb_io store_one(rconn *c, fb_store_verb op, fb_discipline d, uint32_t key, uint64_t token,
                       int64_t value, fb_store_result *r)
{
	fb_io io = store_once(c, op, d, key, token, value, r);
	for (int t = 0; io == FB_IO_ERROR && t < RELINK_TRIES && relinkable(c); t++)
		if (store_relink(c))
			io = store_again(c, op, d, key, token, value, r);
	return io;
}

static fb_io store_read(void *conn, fb_discipline d, uint32_t key, uint64_t token,
                        fb_store_result *r)
{
	/* fenced: refused below the highest fence seen, registered otherwise */
	return store_one(conn, FB_STORE_READ, d, key, token, 0, r);
}

static fb_io store_write(void *conn, fb_discipline d, uint32_t key, int64_t balance, uint64_t token,
                         const fb_store_result *read, fb_store_result *r)
{
	(void)read; /* the server decides on its own state */
	return store_one(conn, FB_STORE_WRITE, d, key, token, balance, r);
}

static fb_io store_debit(void *conn, fb_discipline d, uint32_t key, int64_t amount, uint64_t token,
                         fb_store_result *r)
{
	return store_one(conn, FB_STORE_DEBIT, d, key, token, amount, r);
}

/*
 * A phase's operations in one round trip: every call that can be sent
 * goes out in one write (a pipeline, no MULTI: each script is its own
 * server step), then the replies are taken in order, each as store_one
 * takes its own. A script the server lost from its cache goes again as
 * EVAL once every reply is in. The first failure's reason is the one
 * left on the link: the store it names is the one that failed first.
 */
static void store_batch(void *conn, int n, const fb_store_op *ops, uint32_t key, uint64_t token,
                        fb_store_result *r, fb_io *io)
{
	rconn *c = conn;
	fb_rcmd m[FB_BATCH_MAX];
	redisReply *x[FB_BATCH_MAX];
	int sent[FB_BATCH_MAX], ns = 0;
	for (int i = 0; i < n; i++)
		if (store_sendable(c, ops[i].verb, ops[i].d, key, token, ops[i].value, &r[i],
		                   &io[i])) {
			store_call(c, ops[i].verb, ops[i].d, key, token, ops[i].value, &m[ns]);
			sent[ns++] = i;
		}
	if (!ns)
		return;
	if (fb_rl_send(&c->l, ns, m))
		fb_rl_receive_each(&c->l, ns, x);
	else
		for (int j = 0; j < ns; j++)
			x[j] = NULL;
	char first[FB_RL_ERRLEN] = "";
	for (int j = 0; j < ns; j++) {
		int i = sent[j], s = ops[i].verb == FB_STORE_READ ? S_READ : S_WRITE;
		x[j] = fb_rl_noscript(&c->l, scripts[s].body, &m[j], x[j]);
		io[i] = store_reply(c, ops[i].verb, ops[i].d, key, token, x[j], &r[i]);
		if (io[i] == FB_IO_ERROR && !first[0])
			memcpy(first, c->l.err, sizeof first);
	}
	/* issue 24: a reset or a failover mid-batch; each call it left
	 * unanswered is asked again or settled, in order */
	for (int t = 0; first[0] && t < RELINK_TRIES && relinkable(c); t++) {
		bool linked = store_relink(c);
		memcpy(first, c->l.err, sizeof first); /* "" when linked */
		for (int j = 0; linked && j < ns; j++) {
			int i = sent[j];
			if (io[i] != FB_IO_ERROR)
				continue;
			io[i] = store_again(c, ops[i].verb, ops[i].d, key, token, ops[i].value,
			                    &r[i]);
			if (io[i] == FB_IO_ERROR && !first[0])
				memcpy(first, c->l.err, sizeof first);
		}
	}
	if (first[0])
		memcpy(c->l.err, first, sizeof first);
}

/* Each key's balance and last accepted fence: HMGETs pipelined in chunks. */
static fb_io final_once(rconn *c, fb_discipline d, uint32_t keys, int64_t *balance,
                        uint64_t *last_fence)
{
	if ((unsigned)d >= FB_DISCIPLINES) {
		fb_rl_fail(&c->l, "final: discipline %d out of range", (int)d);
		return FB_IO_ERROR;
	}
	fb_rcmd *cs = malloc(PIPE_CHUNK * sizeof *cs);
	redisReply *rs[PIPE_CHUNK];
	if (!cs) {
		fb_rl_fail(&c->l, "out of memory");
		return FB_IO_ERROR;
	}
	for (uint32_t k = 0; k < keys;) {
		uint32_t k0 = k;
		int m = 0;
		for (; m < PIPE_CHUNK && k < keys; m++, k++) {
			cs[m].n = 0;
			fb_rl_arg(&cs[m], "HMGET");
			fb_rl_argf(&cs[m], "fb:acct:%s:%" PRIu32, fb_discipline_key(d), k);
			fb_rl_arg(&cs[m], "balance");
			fb_rl_arg(&cs[m], "last");
		}
		if (!fb_rl_pipeline(&c->l, m, cs, rs)) {
			free(cs);
			return FB_IO_ERROR;
		}
		for (int i = 0; i < m; i++) {
			long long b, f;
			if (!fb_rl_el_int(rs[i], 0, &b) || !fb_rl_el_int(rs[i], 1, &f)) {
				fb_rl_fail(&c->l,
				           "final: fb:acct:%s:%" PRIu32 " missing or malformed",
				           fb_discipline_key(d), k0 + (uint32_t)i);
				fb_rl_free_replies(m, rs);
				free(cs);
				return FB_IO_ERROR;
			}
			if (balance)
				balance[k0 + (uint32_t)i] = b;
			if (last_fence)
				last_fence[k0 + (uint32_t)i] = (uint64_t)f;
		}
		fb_rl_free_replies(m, rs);
	}
	free(cs);
	return FB_IO_OK;
}

/* Read again on a link connected again (issue 24: a reset may have struck
 * the connection while it stood idle during the run). */
static fb_io store_final(void *conn, fb_discipline d, uint32_t keys, int64_t *balance,
                         uint64_t *last_fence)
{
	rconn *c = conn;
	fb_io io = final_once(c, d, keys, balance, last_fence);
	for (int t = 0; io == FB_IO_ERROR && t < RELINK_TRIES && relinkable(c); t++)
		if (store_relink(c))
			io = final_once(c, d, keys, balance, last_fence);
	return io;
}

static fb_io store_meta(void *conn, fb_store_meta *out)
{
	rconn *c = conn;
	fb_rcmd m = {0};
	fb_rl_arg(&m, "HMGET");
	fb_rl_arg(&m, "fb:meta");
	fb_rl_arg(&m, "balance");
	fb_rl_arg(&m, "amount");
	fb_rl_arg(&m, "keys");
	fb_rl_arg(&m, "op");
	fb_rl_arg(&m, "modes");
	redisReply *r = fb_rl_run(&c->l, &m);
	for (int t = 0; !r && t < RELINK_TRIES && relinkable(c); t++) /* issue 24 */
		if (store_relink(c))
			r = fb_rl_run(&c->l, &m);
	if (!r)
		return FB_IO_ERROR;
	long long v[5];
	for (size_t i = 0; i < 5; i++)
		if (!fb_rl_el_int(r, i, &v[i])) {
			bool absent = r->type == REDIS_REPLY_ARRAY && r->elements == 5 &&
			              r->element[0]->type == REDIS_REPLY_NIL;
			freeReplyObject(r);
			fb_rl_fail(&c->l, absent ? "no fb:meta: the store was never prepared"
			                         : "fb:meta is malformed");
			return absent ? FB_IO_REFUSED : FB_IO_ERROR;
		}
	freeReplyObject(r);
	*out = (fb_store_meta){.initial_balance = v[0],
	                       .amount = v[1],
	                       .keys = (uint32_t)v[2],
	                       .op = (int)v[3],
	                       .modes = (uint32_t)v[4]};
	return FB_IO_OK;
}

/* "version fence before after stale client worker" */
static bool parse_row(const redisReply *x, fb_history_row *h)
{
	char buf[160], *p = buf, *end;
	if (x->type != REDIS_REPLY_STRING || x->len >= sizeof buf)
		return false;
	memcpy(buf, x->str, x->len);
	buf[x->len] = 0;
	long long v[7];
	for (int i = 0; i < 7; i++) {
		if (i && *p != ' ')
			return false;
		errno = 0;
		v[i] = strtoll(p, &end, 10);
		if (errno || end == p)
			return false;
		p = end;
	}
	if (*p || v[0] <= 0 || v[1] < 0 || (v[4] != 0 && v[4] != 1) || v[5] < 0 || v[6] < 0)
		return false;
	h->version = (uint64_t)v[0];
	h->fence = (uint64_t)v[1];
	h->before = v[2];
	h->after = v[3];
	h->store_stale = v[4] == 1;
	h->client = (uint32_t)v[5];
	h->worker = (uint32_t)v[6];
	return true;
}

/*
 * Every accepted write the store recorded, ordered by discipline, key and
 * version: for each discipline and key that fb:meta names, the history
 * list read in chunks (RPUSHed by the write script, so already in version
 * order).
 */
static fb_io store_history(void *conn, void (*row)(void *ctx, const fb_history_row *h), void *ctx)
{
	rconn *c = conn;
	fb_store_meta meta;
	fb_io io = store_meta(c, &meta);
	if (io != FB_IO_OK)
		return io;
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		if (!(meta.modes & (1u << d)))
			continue;
		for (uint32_t k = 0; k < meta.keys; k++) {
			for (long long at = 0;; at += HIST_CHUNK) {
				fb_rcmd m = {0};
				fb_rl_arg(&m, "LRANGE");
				fb_rl_argf(&m, "fb:hist:%s:%" PRIu32,
				           fb_discipline_key((fb_discipline)d), k);
				fb_rl_argf(&m, "%lld", at);
				fb_rl_argf(&m, "%lld", at + HIST_CHUNK - 1);
				redisReply *r = fb_rl_run(&c->l, &m);
				/* issue 24: this chunk again, on a link connected again */
				for (int t = 0; !r && t < RELINK_TRIES && relinkable(c); t++)
					if (store_relink(c))
						r = fb_rl_run(&c->l, &m);
				if (!r)
					return FB_IO_ERROR;
				if (r->type != REDIS_REPLY_ARRAY) {
					freeReplyObject(r);
					fb_rl_fail(&c->l, "LRANGE: unexpected reply");
					return FB_IO_ERROR;
				}
				for (size_t i = 0; i < r->elements; i++) {
					fb_history_row h = {.d = (fb_discipline)d, .key = k};
					if (!parse_row(r->element[i], &h)) {
						fb_rl_fail(&c->l,
						           "fb:hist:%s:%" PRIu32
						           " entry %lld is malformed",
						           fb_discipline_key((fb_discipline)d), k,
						           at + (long long)i);
						freeReplyObject(r);
						return FB_IO_ERROR;
					}
					row(ctx, &h);
				}
				size_t got = r->elements;
				freeReplyObject(r);
				if (got < HIST_CHUNK)
					break;
			}
		}
	}
	return FB_IO_OK;
}

const fb_store_ops fb_redis_store_ops = {
        FB_STORE_OPS_HEAD,
        .scheme = "redis",
        .name = "Redis",
        .url = FB_REDIS_URL,
        .help = FB_REDIS_STORE_HELP,
        .remote = true,
        .open = store_open,
        .check_url = redis_check_url,
        .version = engine_version,
        .prepare = store_prepare,
        .close = engine_close,
        .connect = engine_connect,
        .disconnect = engine_disconnect,
        .error = engine_error,
        .read = store_read,
        .write = store_write,
        .debit = store_debit,
        .batch = store_batch,
        .final = store_final,
        .history = store_history,
        .meta = store_meta,
};
