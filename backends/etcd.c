#include "etcd.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "held.h"
#include "scheme_texts.h"
#include "url.h"

/*
 * Keys (all under the prefix, so a fresh prepare deletes nothing else):
 *   <prefix>/lock/<k>   the lock entry, attached to its holder's lease:
 *                       "c<client>.w<worker>.l<lease id>"
 *   <prefix>/last/<k>   the same value, put by the same transaction with
 *                       no lease: its previous version's mod_revision is
 *                       the fence of the lease this acquire replaced, as
 *                       etcd itself reports it (fb_lease.replaced)
 *
 * The gateway's JSON: keys and values are base64, 64-bit integers are
 * strings, and a field at its default (0, false, empty) is left out.
 */

#define URLLEN             512
#define ERRLEN             640
#define KEYLEN             300
#define VALLEN             64
#define BODYLEN            4096
#define CONNECT_TIMEOUT_MS 2000L
/* Issue 24: with several members, one request waits this long at most
 * (or the engine's timeout, if shorter) before the next member is asked:
 * a stopped member accepts connections and never answers. */
#define MEMBER_TIMEOUT_MS 2000L
#define DEFAULT_PREFIX    "fencebench"

typedef struct eeng eeng;

/* One HTTP client (its own keep-alive connection) and the last failure. */
typedef struct econn {
	const eeng *e;
	CURL *curl;
	struct curl_slist *headers;
	int at; /* the endpoint in use */
	/* issue 24, several members: the last call failed as a member's death
	 * or an election explains (no answer, or a 5xx: "leader changed"), and
	 * since when none has answered (monotonic ns; 0: the last call did) */
	bool unavailable;
	uint64_t down_since;
	char *body;
	size_t len, cap;
	char err[ERRLEN];
	uint16_t worker;
	fb_held_table held;
} econn;

struct eeng {
	fb_engine_config cfg;
	char endpoint[FB_URL_HOSTS][300]; /* http://host:port */
	int endpoints;
	char prefix[200];
	char url[URLLEN]; /* redacted */
	int64_t ttl_s;
	char version[64];
	econn admin;
};

static void efail(econn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void efail(econn *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fb_engine_failv(c->err, sizeof c->err, c->e->url, fmt, ap);
	va_end(ap);
}

/* ---- base64 and JSON ------------------------------------------------------ */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void b64_encode(const char *s, char *out, size_t len)
{
	size_t n = strlen(s), o = 0;
	for (size_t i = 0; i < n && o + 5 < len; i += 3) {
		unsigned v = (unsigned char)s[i] << 16;
		if (i + 1 < n)
			v |= (unsigned char)s[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)s[i + 2];
		out[o++] = b64[v >> 18 & 63];
		out[o++] = b64[v >> 12 & 63];
		out[o++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? b64[v & 63] : '=';
	}
	out[o] = 0;
}

/* Decode a base64 value (short values only: ours) into out; "" if it is
 * not base64. */
static void b64_decode(const char *s, char *out, size_t len)
{
	size_t o = 0;
	unsigned v = 0;
	int bits = 0;
	for (; *s && *s != '='; s++) {
		const char *p = strchr(b64, *s);
		if (!p || !*s) {
			o = 0;
			break;
		}
		v = v << 6 | (unsigned)(p - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o + 1 < len)
				out[o++] = (char)(v >> bits & 0xff);
		}
	}
	out[o] = 0;
}

/* The object at a dotted path, or NULL: a field left out at its default. */
static json_object *jget(json_object *o, const char *path)
{
	char part[64];
	while (o && *path) {
		size_t n = strcspn(path, ".");
		if (n >= sizeof part)
			return NULL;
		memcpy(part, path, n);
		part[n] = 0;
		if (!json_object_object_get_ex(o, part, &o))
			return NULL;
		path += n + (path[n] == '.');
	}
	return o;
}

/* A 64-bit integer the gateway writes as a string (or a number); absent
 * is its default, 0. */
static int64_t jint(json_object *o, const char *path)
{
	json_object *v = jget(o, path);
	if (!v)
		return 0;
	if (json_object_is_type(v, json_type_string))
		return strtoll(json_object_get_string(v), NULL, 10);
	return json_object_get_int64(v);
}

static bool jbool(json_object *o, const char *path)
{
	json_object *v = jget(o, path);
	return v && json_object_get_boolean(v);
}

/* The first kv of a range result (o: the response, or a response_range). */
static json_object *first_kv(json_object *o)
{
	json_object *kvs = jget(o, "kvs");
	return kvs && json_object_is_type(kvs, json_type_array) && json_object_array_length(kvs)
	               ? json_object_array_get_idx(kvs, 0)
	               : NULL;
}

/* ---- HTTP ------------------------------------------------------------------- */

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	econn *c = ctx;
	size_t add = size * n;
	if (c->len + add + 1 > c->cap) {
		size_t cap = (c->len + add + 1) * 2;
		char *b = realloc(c->body, cap);
		if (!b)
			return 0; /* libcurl fails the transfer: CURLE_WRITE_ERROR */
		c->body = b;
		c->cap = cap;
	}
	memcpy(c->body + c->len, p, add);
	c->len += add;
	c->body[c->len] = 0;
	return add;
}

static bool client_init(econn *c, const eeng *e)
{
	c->e = e;
	c->curl = curl_easy_init();
	c->headers = curl_slist_append(NULL, "Content-Type: application/json");
	if (!c->curl || !c->headers)
		return false;
	uint64_t ms = e->cfg.timeout_ns / 1000000;
	if (e->endpoints > 1 && (!ms || ms > MEMBER_TIMEOUT_MS))
		ms = MEMBER_TIMEOUT_MS;
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM */
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, (long)(ms ? ms : 1));
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS,
	                 ms && (long)ms < CONNECT_TIMEOUT_MS ? (long)ms : CONNECT_TIMEOUT_MS);
	curl_easy_setopt(c->curl, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->headers);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, c);
	return true;
}

static void client_free(econn *c)
{
	if (c->curl)
		curl_easy_cleanup(c->curl);
	curl_slist_free_all(c->headers);
	free(c->body);
	c->curl = NULL;
	c->headers = NULL;
	c->body = NULL;
}

typedef enum eres {
	E_OK,      /* 200: *out is the response */
	E_REFUSED, /* the server said no (an error status): *out is its error */
	E_ERROR,   /* no answer, or not JSON: c->err says why */
} eres;

/*
 * POST body (JSON) to path, or GET when body is NULL. A member that
 * refuses the connection (the request never left) is skipped for the next
 * one; anything else that fails is the call's failure: a request that may
 * have been applied is never sent twice. *out is the parsed answer (put
 * it) for E_OK and E_REFUSED. With several members, a call that failed
 * as a member's death or an election explains (no answer at all, or a
 * 5xx) marks the connection unavailable and moves it to the next member
 * for the next call (issue 24).
 */
static eres call_once(econn *c, const char *path, const char *body, json_object **out,
                      const char *what, long *http);

static eres call(econn *c, const char *path, const char *body, json_object **out, const char *what)
{
	long http = 0;
	eres r = call_once(c, path, body, out, what, &http);
	c->unavailable = c->e->endpoints > 1 && (r == E_ERROR ? http == 0 : http >= 500);
	if (c->unavailable)
		c->at = (c->at + 1) % c->e->endpoints;
	else
		c->down_since = 0;
	return r;
}

static eres call_once(econn *c, const char *path, const char *body, json_object **out,
                      const char *what, long *http)
{
	*out = NULL;
	CURLcode rc = CURLE_COULDNT_CONNECT;
	long status = 0;
	for (int tries = 0; tries < c->e->endpoints && rc == CURLE_COULDNT_CONNECT; tries++) {
		char url[400];
		snprintf(url, sizeof url, "%s%s", c->e->endpoint[c->at], path);
		c->len = 0;
		curl_easy_setopt(c->curl, CURLOPT_URL, url);
		if (body) {
			curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
		} else {
			curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
		}
		rc = curl_easy_perform(c->curl);
		if (rc == CURLE_COULDNT_CONNECT && c->e->endpoints > 1)
			c->at = (c->at + 1) % c->e->endpoints;
	}
	if (rc != CURLE_OK) {
		char secs[32];
		fb_engine_seconds(secs, sizeof secs, c->e->cfg.timeout_ns);
		if (rc == CURLE_OPERATION_TIMEDOUT)
			efail(c, "%s: no answer within %s s", what, secs);
		else
			efail(c, "%s: %s", what, curl_easy_strerror(rc));
		return E_ERROR;
	}
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
	*http = status;
	*out = c->len ? json_tokener_parse(c->body) : NULL;
	if (!*out) {
		efail(c, "%s: HTTP %ld, and not the gateway's JSON: %.80s", what, status,
		      c->len ? c->body : "(empty)");
		return E_ERROR;
	}
	if (status == 200)
		return E_OK;
	const char *msg = json_object_get_string(jget(*out, "message"));
	efail(c, "%s: HTTP %ld: %s", what, status, msg ? msg : c->body);
	return E_REFUSED;
}

/* call(), where only E_OK will do: anything else is the call's error. */
static json_object *call_ok(econn *c, const char *path, const char *body, const char *what)
{
	json_object *o;
	eres r = call(c, path, body, &o, what);
	if (r == E_OK)
		return o;
	json_object_put(o);
	return NULL;
}

/*
 * Issue 24: with several members, a call that failed because its member
 * died, stopped answering or lost its leader is the service refusing, not
 * a dead engine: true, and the caller answers as a refusal (an acquire
 * not granted, a release or renewal not known done: the lease's TTL ends
 * it). Only when no member has answered for the engine's timeout is the
 * failure the run's (false, c->err says so).
 */
static bool ride_out(econn *c)
{
	if (!c->unavailable)
		return false;
	char last[ERRLEN], why[ERRLEN];
	snprintf(last, sizeof last, "%s", c->err);
	if (fb_engine_ride_out(&c->down_since, &c->e->cfg, "member", last, why, sizeof why))
		return true;
	efail(c, "%s", why);
	return false;
}

/* ---- the URL and the engine --------------------------------------------------- */

static bool parse_url(const char *url, eeng *e, const char **why)
{
	fb_url u;
	if (!fb_url_parse(url, "etcd", 2379, FB_URL_HOSTS, &u, why)) {
		if (strcmp(*why, "wrong scheme") == 0)
			*why = "expected etcd://host:port[,host:port...][/prefix]";
		return false;
	}
	if (u.has_pass) {
		*why = "etcd authentication is not supported: no user:password@";
		return false;
	}
	if (u.query) {
		*why = "etcd:// takes no options (no ?...)";
		return false;
	}
	for (int i = 0; i < u.hosts; i++) {
		bool v6 = strchr(u.host[i].host, ':') != NULL;
		snprintf(e->endpoint[i], sizeof e->endpoint[i], "http://%s%s%s:%d", v6 ? "[" : "",
		         u.host[i].host, v6 ? "]" : "", u.host[i].port);
	}
	e->endpoints = u.hosts;
	snprintf(e->prefix, sizeof e->prefix, "%s", DEFAULT_PREFIX);
	if (u.path_len > 1) {
		if (u.path_len - 1 >= sizeof e->prefix) {
			*why = "the prefix is too long";
			return false;
		}
		for (size_t i = 1; i < u.path_len; i++)
			if (u.path[i] == '%' || u.path[i] == '/' ||
			    (unsigned char)u.path[i] <= ' ') {
				*why = "the prefix must be one plain word (no /, escapes or "
				       "spaces)";
				return false;
			}
		memcpy(e->prefix, u.path + 1, u.path_len - 1);
		e->prefix[u.path_len - 1] = 0;
	}
	return true;
}

static const char *config_problem(const fb_engine_config *cfg)
{
	const char *why = fb_engine_lease_problem(cfg, true);
	if (!why && (cfg->ttl_ns < 1000000000u || cfg->ttl_ns % 1000000000u))
		why = "--ttl: etcd leases are whole seconds (1s at the very least, and only "
		      "where the server's election timeout allows it)";
	return why;
}

static void global_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

/*
 * The smallest TTL this server grants: ask for ours and see what comes
 * back (a grant below the minimum is silently raised to it), then revoke
 * the probe. FB_EINVAL when it is more than --ttl.
 */
static fb_err probe_ttl(eeng *e)
{
	econn *c = &e->admin;
	char body[64];
	snprintf(body, sizeof body, "{\"TTL\":\"%" PRId64 "\"}", e->ttl_s);
	json_object *g = call_ok(c, "/v3/lease/grant", body, "lease grant");
	if (!g)
		return FB_ESYS;
	int64_t id = jint(g, "ID"), got = jint(g, "TTL");
	json_object_put(g);
	snprintf(body, sizeof body, "{\"ID\":\"%" PRId64 "\"}", id);
	json_object *r = NULL;
	(void)call(c, "/v3/lease/revoke", body, &r, "lease revoke");
	json_object_put(r);
	if (got == e->ttl_s)
		return FB_OK;
	efail(c,
	      "--ttl %" PRId64 "s: this etcd grants no lease shorter than %" PRId64
	      " s (its minimum: 1.5 election timeouts, rounded up to a whole second; 2 s "
	      "with etcd's default 1 s election timeout): use --ttl %" PRId64 "s or more",
	      e->ttl_s, got, got);
	return FB_EINVAL;
}

static fb_err lease_open(const fb_engine_config *cfg, const char *url, void **eng, char *err,
                         size_t errlen)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, global_init);
	eeng *e = calloc(1, sizeof *e);
	if (!e) {
		fb_engine_err(err, errlen, "out of memory for the etcd engine");
		return FB_ENOMEM;
	}
	e->cfg = *cfg;
	if (!e->cfg.clock)
		e->cfg.clock = fb_clock_monotonic();
	e->cfg.timeout_ns = fb_engine_timeout(cfg);
	e->ttl_s = (int64_t)(cfg->ttl_ns / 1000000000u);
	fb_url_redact(url ? url : "", e->url, sizeof e->url);
	e->admin.e = e;
	fb_err rc = FB_EINVAL;
	const char *why = config_problem(cfg);
	if (why || !parse_url(url, e, &why)) {
		efail(&e->admin, "%s", why);
		goto err;
	}
	rc = FB_ENOMEM;
	if (!client_init(&e->admin, e)) {
		efail(&e->admin, "cannot set up libcurl");
		goto err;
	}
	rc = FB_ESYS;
	json_object *v = call_ok(&e->admin, "/version", NULL, "version");
	if (!v)
		goto err;
	const char *ver = json_object_get_string(jget(v, "etcdserver"));
	snprintf(e->version, sizeof e->version, "%s", ver ? ver : "unknown");
	json_object_put(v);
	rc = probe_ttl(e);
	if (rc != FB_OK)
		goto err;
	*eng = e;
	return FB_OK;
err:
	fb_engine_err(err, errlen, e->admin.err);
	client_free(&e->admin);
	free(e);
	return rc;
}

static void lease_version(void *eng, char *buf, size_t len)
{
	const eeng *e = eng;
	if (len)
		snprintf(buf, len, "%s", e->version);
}

static void lease_close(void *eng)
{
	eeng *e = eng;
	if (!e)
		return;
	client_free(&e->admin);
	free(e);
}

/* <prefix>/<what>/<key>, base64. */
static void key_b64(const eeng *e, const char *what, uint32_t key, char *out, size_t len)
{
	char k[KEYLEN];
	snprintf(k, sizeof k, "%s/%s/%" PRIu32, e->prefix, what, key);
	b64_encode(k, out, len);
}

/* fresh: delete every key under the prefix (a crashed run's lock entries,
 * and the last-holder records). Revisions cannot be forgotten: the first
 * fence is the cluster's next revision. */
static fb_err lease_prepare(void *eng, bool fresh, char *err, size_t errlen)
{
	eeng *e = eng;
	if (!fresh)
		return FB_OK; /* entries are created by the acquires themselves */
	char from[KEYLEN], to[KEYLEN], lo[KEYLEN * 2], hi[KEYLEN * 2], body[BODYLEN];
	snprintf(from, sizeof from, "%s/", e->prefix);
	snprintf(to, sizeof to, "%s0", e->prefix); /* '/' + 1 */
	b64_encode(from, lo, sizeof lo);
	b64_encode(to, hi, sizeof hi);
	snprintf(body, sizeof body, "{\"key\":\"%s\",\"range_end\":\"%s\"}", lo, hi);
	json_object *r = call_ok(&e->admin, "/v3/kv/deleterange", body, "prepare: delete");
	if (!r) {
		fb_engine_err(err, errlen, e->admin.err);
		return FB_ESYS;
	}
	json_object_put(r);
	return FB_OK;
}

/* ---- connections ---------------------------------------------------------------- */

static fb_err lease_connect(void *eng, uint16_t worker, void **conn, char *err, size_t errlen)
{
	const eeng *e = eng;
	econn *c = calloc(1, sizeof *c);
	if (!c || !client_init(c, e)) {
		if (c)
			client_free(c);
		free(c);
		fb_engine_err(err, errlen, "out of memory for an etcd connection");
		return FB_ENOMEM;
	}
	c->worker = worker;
	*conn = c;
	return FB_OK;
}

static void lease_disconnect(void *conn)
{
	econn *c = conn;
	if (!c)
		return;
	client_free(c);
	free(c);
}

static const char *lease_error(void *conn)
{
	const econn *c = conn;
	return c->err[0] ? c->err : "no error";
}

/* A lock entry's holder: the worker in its value, its fence the entry's
 * mod_revision. */
static void holder_of(json_object *kv, fb_lease *out)
{
	char val[VALLEN] = "";
	*out = (fb_lease){.fence = (uint64_t)jint(kv, "mod_revision")};
	const char *v = json_object_get_string(jget(kv, "value"));
	if (v)
		b64_decode(v, val, sizeof val);
	const char *w = strstr(val, ".w");
	unsigned long x = w ? strtoul(w + 2, NULL, 10) : 0;
	out->owner = x <= UINT16_MAX ? (uint16_t)x : 0;
}

static fb_io revoke(econn *c, int64_t lease, const char *what)
{
	char body[64];
	snprintf(body, sizeof body, "{\"ID\":\"%" PRId64 "\"}", lease);
	json_object *r;
	eres res = call(c, "/v3/lease/revoke", body, &r, what);
	json_object_put(r);
	return res == E_OK ? FB_IO_OK : res == E_REFUSED ? FB_IO_REFUSED : FB_IO_ERROR;
}

/* ---- leases ---------------------------------------------------------------------- */

/*
 * How long a granted lease may wait for its transaction: the lease's TTL
 * runs from the grant, the fence from the transaction, and the witness
 * dates the lease by one instant, taken as equal to within this (the
 * engine's witness_slack_ns). A lease that waited longer (its worker
 * paused in between, or a slow grant) is revoked and the acquire begins
 * again, as a client that wants a whole TTL would do.
 */
#define GRANT_SLACK_NS (UINT64_C(10) * 1000000)

/*
 * One try: a read of the entry first (held, and nothing is written).
 * Otherwise grant a lease and, in one transaction, create the entry on it
 * if it is still absent (and put the last-holder record, whose previous
 * version says what this lease replaced). A transaction that found the
 * entry taken (someone came in between) revokes the unused lease and
 * reports the holder the transaction saw.
 *
 * service_at is the caller's clock as the transaction left (etcd's
 * replies carry no time), and the transaction committed within
 * GRANT_SLACK_NS of it (a slower one is withdrawn): the lease, granted at
 * most GRANT_SLACK_NS before, expires no sooner than a TTL after it, less
 * that. expires_at counts from the grant. Four withdrawn tries in a row
 * (a starved machine) answer held, with no holder named.
 */
typedef enum attempt { TRY_AGAIN, TRY_DONE } attempt;

static attempt try_acquire(econn *c, uint32_t key, fb_lease *out, fb_acquire *res)
{
	const eeng *e = c->e;
	char lock[KEYLEN * 2], last[KEYLEN * 2], body[BODYLEN];
	key_b64(e, "lock", key, lock, sizeof lock);
	key_b64(e, "last", key, last, sizeof last);
	snprintf(body, sizeof body, "{\"key\":\"%s\"}", lock);
	*res = FB_ACQ_ERROR;
	json_object *r = call_ok(c, "/v3/kv/range", body, "acquire: range");
	if (!r)
		return TRY_DONE;
	json_object *kv = first_kv(r);
	if (kv) {
		holder_of(kv, out);
		json_object_put(r);
		*res = FB_HELD;
		return TRY_DONE;
	}
	json_object_put(r);
	uint64_t granted = fb_clock_now(e->cfg.clock);
	snprintf(body, sizeof body, "{\"TTL\":\"%" PRId64 "\"}", e->ttl_s);
	json_object *g = call_ok(c, "/v3/lease/grant", body, "acquire: lease grant");
	if (!g)
		return TRY_DONE;
	int64_t lease = jint(g, "ID");
	json_object_put(g);
	uint64_t sent = fb_clock_now(e->cfg.clock);
	if (sent - granted > GRANT_SLACK_NS) {
		if (revoke(c, lease, "acquire: revoke a stale grant") == FB_IO_ERROR)
			return TRY_DONE;
		return TRY_AGAIN;
	}
	char val[VALLEN], val64[VALLEN * 2];
	snprintf(val, sizeof val, "c%" PRIu32 ".w%u.l%" PRId64, e->cfg.client_id, c->worker, lease);
	b64_encode(val, val64, sizeof val64);
	snprintf(body, sizeof body,
	         "{\"compare\":[{\"key\":\"%s\",\"target\":\"CREATE\",\"result\":\"EQUAL\","
	         "\"create_revision\":\"0\"}],"
	         "\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\",\"lease\":"
	         "\"%" PRId64
	         "\"}},{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\",\"prev_kv\":true}}],"
	         "\"failure\":[{\"request_range\":{\"key\":\"%s\"}}]}",
	         lock, lock, val64, lease, last, val64, lock);
	json_object *t;
	eres tr = call(c, "/v3/kv/txn", body, &t, "acquire: txn");
	if (tr == E_REFUSED && strstr(c->err, "requested lease not found")) {
		/* The grant expired before the transaction reached the server (a
		 * transaction in flight longer than the TTL: a loaded machine).
		 * etcd refused the whole transaction, so no lock was taken: try
		 * again, as a grant found stale above is. */
		json_object_put(t);
		c->err[0] = 0;
		return TRY_AGAIN;
	}
	if (tr != E_OK) {
		json_object_put(t);
		return TRY_DONE;
	}
	/* The lock is taken when the transaction commits, somewhere between
	 * its send and its reply: dated by the send, it must be within the
	 * slack of it, or the witness could read a late commit as an older
	 * acquisition (seen under load: a transaction answered 30 ms after
	 * its send, its revision above a later-sent one's). A slow one is
	 * withdrawn: its lease revoked (the lock goes with it), tried again. */
	if (jbool(t, "succeeded") && fb_clock_now(e->cfg.clock) - sent > GRANT_SLACK_NS) {
		json_object_put(t);
		if (revoke(c, lease, "acquire: revoke a lock taken too slowly to date") ==
		    FB_IO_ERROR)
			return TRY_DONE;
		return TRY_AGAIN;
	}
	if (!jbool(t, "succeeded")) {
		json_object *resp = json_object_array_get_idx(jget(t, "responses"), 0);
		kv = first_kv(jget(resp, "response_range"));
		if (kv)
			holder_of(kv, out);
		else
			*out = (fb_lease){0}; /* gone already: try again */
		json_object_put(t);
		if (revoke(c, lease, "acquire: revoke the unused lease") != FB_IO_ERROR)
			*res = FB_HELD;
		return TRY_DONE;
	}
	uint64_t fence = (uint64_t)jint(t, "header.revision");
	json_object *put = json_object_array_get_idx(jget(t, "responses"), 1);
	uint64_t replaced = (uint64_t)jint(put, "response_put.prev_kv.mod_revision");
	json_object_put(t);
	if (!fence || fence > FB_FENCE_MAX) {
		if (revoke(c, lease, "acquire: revoke") != FB_IO_ERROR)
			*res = FB_EXHAUSTED;
		return TRY_DONE;
	}
	*out = (fb_lease){.fence = fence,
	                  .owner = c->worker,
	                  .expires_at = granted + e->cfg.ttl_ns,
	                  .service_at = sent,
	                  .replaced = replaced};
	fb_held_put(&c->held, key, fence, lease, NULL);
	*res = FB_ACQUIRED;
	return TRY_DONE;
}

static fb_acquire lease_acquire(void *conn, uint32_t key, fb_lease *out, fb_lease_stats *st)
{
	econn *c = conn;
	(void)st; /* no CAS here */
	if (key >= c->e->cfg.keys) {
		efail(c, "acquire: key %" PRIu32 " out of range", key);
		return FB_ACQ_ERROR;
	}
	fb_acquire res;
	for (int slow = 0; try_acquire(c, key, out, &res) == TRY_AGAIN;)
		if (++slow == 4) { /* a busy machine: the key counts as held, no holder named */
			*out = (fb_lease){0};
			return FB_HELD;
		}
	/* issue 24: a member gone or an election under way: not granted, as
	 * far as this worker knows (a transaction that did commit leaves a
	 * lock its TTL ends, like a crashed holder's) */
	if (res == FB_ACQ_ERROR && ride_out(c)) {
		*out = (fb_lease){0};
		return FB_HELD;
	}
	return res;
}

/* Revoke our lease: it deletes the entry only if the entry is still on
 * it. A lease already gone (expired) is refused. */
static fb_io lease_release(void *conn, uint32_t key, const fb_lease *l, fb_lease *freed)
{
	(void)freed; /* it cannot say which word it freed */
	econn *c = conn;
	fb_held *h = fb_held_find(&c->held, key, l->fence);
	if (!h)
		return FB_IO_REFUSED;
	fb_io io = revoke(c, h->id, "release");
	if (io != FB_IO_OK && ride_out(c))
		io = FB_IO_REFUSED; /* issue 24: not known released; its TTL frees it */
	if (io != FB_IO_ERROR)
		h->used = false;
	return io;
}

/* The entry exists and is on our lease (a lease past its TTL that the
 * leader has not revoked yet still holds it: etcd says so). */
static fb_io lease_is_held(void *conn, uint32_t key, const fb_lease *l)
{
	econn *c = conn;
	fb_held *h = fb_held_find(&c->held, key, l->fence);
	if (!h)
		return FB_IO_REFUSED;
	char lock[KEYLEN * 2], body[BODYLEN];
	key_b64(c->e, "lock", key, lock, sizeof lock);
	snprintf(body, sizeof body, "{\"key\":\"%s\"}", lock);
	json_object *r = call_ok(c, "/v3/kv/range", body, "is_held");
	if (!r) /* issue 24: a member gone: not known held, not held */
		return ride_out(c) ? FB_IO_REFUSED : FB_IO_ERROR;
	json_object *kv = first_kv(r);
	bool ours = kv && jint(kv, "lease") == h->id;
	json_object_put(r);
	return ours ? FB_IO_OK : FB_IO_REFUSED;
}

/* One keep-alive: the lease lives a TTL from the leader's receipt of it;
 * an expired one answers with no TTL. */
static fb_io lease_renew(void *conn, uint32_t key, const fb_lease *l, fb_lease *out)
{
	econn *c = conn;
	fb_held *h = fb_held_find(&c->held, key, l->fence);
	if (!h)
		return FB_IO_REFUSED;
	uint64_t sent = fb_clock_now(c->e->cfg.clock);
	char body[64];
	snprintf(body, sizeof body, "{\"ID\":\"%" PRId64 "\"}", h->id);
	json_object *r = call_ok(c, "/v3/lease/keepalive", body, "renew");
	if (!r) /* issue 24: a member gone: not known renewed */
		return ride_out(c) ? FB_IO_REFUSED : FB_IO_ERROR;
	bool alive = jint(r, "result.TTL") > 0;
	json_object_put(r);
	if (alive && out) {
		*out = *l;
		out->expires_at = sent + c->e->cfg.ttl_ns;
	}
	return alive ? FB_IO_OK : FB_IO_REFUSED;
}

/* The entry's holder and fence, and its lease's remaining TTL (whole
 * seconds, rounded down: the expiry is as coarse, and never late). */
static fb_io lease_peek(void *conn, uint32_t key, fb_lease *out)
{
	econn *c = conn;
	*out = (fb_lease){0};
	char lock[KEYLEN * 2], body[BODYLEN];
	key_b64(c->e, "lock", key, lock, sizeof lock);
	snprintf(body, sizeof body, "{\"key\":\"%s\"}", lock);
	uint64_t now = fb_clock_now(c->e->cfg.clock);
	json_object *r = call_ok(c, "/v3/kv/range", body, "peek");
	if (!r)
		return FB_IO_ERROR;
	json_object *kv = first_kv(r);
	int64_t lease = kv ? jint(kv, "lease") : 0;
	if (kv)
		holder_of(kv, out);
	json_object_put(r);
	if (!lease)
		return FB_IO_OK;
	snprintf(body, sizeof body, "{\"ID\":\"%" PRId64 "\"}", lease);
	json_object *t = call_ok(c, "/v3/lease/timetolive", body, "peek: timetolive");
	if (!t)
		return FB_IO_ERROR;
	/* whole seconds left, rounded down (0 within the last one); a lease
	 * gone has no grantedTTL */
	int64_t left = jint(t, "TTL");
	bool alive = jint(t, "grantedTTL") > 0 && left >= 0;
	json_object_put(t);
	if (alive)
		out->expires_at = now + (uint64_t)left * 1000000000u;
	return FB_IO_OK;
}

static bool etcd_check_url(const char *url, const char **why)
{
	eeng *e = calloc(1, sizeof *e);
	if (!e)
		return true; /* open will say it */
	bool ok = parse_url(url, e, why);
	free(e);
	return ok;
}

const fb_lease_ops fb_etcd_lease_ops = {
        FB_LEASE_OPS_HEAD,
        .scheme = "etcd",
        .name = "etcd",
        .url = FB_ETCD_URL,
        .help = FB_ETCD_URL,
        .remote = true,
        .open = lease_open,
        .check_url = etcd_check_url,
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
        .witness_slack_ns = GRANT_SLACK_NS,
};
