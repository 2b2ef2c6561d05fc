#define _GNU_SOURCE
#include "zk.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>

#include "held.h"
#include "scheme_texts.h"
#include "url.h"

/*
 * The tree (all under the prefix, so a fresh prepare touches nothing else):
 *   <prefix>                      persistent
 *   <prefix>/<k>                  persistent: key k's lock node
 *   <prefix>/<k>/c<client>.w<worker>-<seq>
 *                                 EPHEMERAL_SEQUENTIAL: a lock request; the
 *                                 lowest <seq> holds the lock
 *
 * The fence is the holder's node's czxid. A zxid is one counter for the
 * whole ensemble (epoch << 32 | counter), given to every write in the
 * order the leader commits it: a lock node created after the previous
 * holder's node was deleted (released, or its session expired) has a
 * higher czxid, so fences only grow, for a key and across keys. The
 * sequence suffix is no fence: it is the parent's own child counter (its
 * cversion), a signed 32-bit number that starts again at 0 whenever the
 * lock node is recreated, and means nothing beside another node's.
 */

/*
 * How long the create of a lock request may take, on the caller's clock,
 * for the lock to count. A lease is dated, for the lease witness, by the
 * instant its create was sent (witness_slack_ns says it is exact to within
 * this): the server touches the session when the request enters its
 * pipeline, after that instant, and expires it no sooner than the session
 * timeout after its last touch; the next holder's node is created after
 * the expiry deleted this one, and so before that holder's reply. A lock
 * whose create took longer is withdrawn and tried again, SLOW_TRIES times
 * at most, then the key is reported held, as Redlock gives up a slow
 * round: dated by its send, it could seem to begin before the lease it
 * followed had ended.
 */
#define ACQUIRE_SLACK_NS (UINT64_C(10) * 1000000)
#define SLOW_TRIES       4

#define URLLEN            512
#define ERRLEN            640
#define PATHLEN           512
#define CONNECT_TIMEOUT_S 2
/* Issue 24: with several servers, one call waits this long at most (or
 * the engine's timeout, if shorter) for an answer, its session
 * reconnecting meanwhile, before it counts as the service refusing. */
#define MEMBER_WAIT_NS (UINT64_C(2) * 1000000000)
#define PREP_CHUNK     512
#define DEFAULT_PREFIX "/fencebench"

/*
 * Under ThreadSanitizer only. The single-threaded client formats the
 * server's address into one static buffer (format_endpoint_info) on its
 * connection-error paths, whichever handle it is, for log messages; with
 * one handle per worker thread, two workers reconnecting at once write it
 * together. The buffer only feeds the library's log, which is silenced
 * here, and nothing of ours reads it: that library's own interceptor
 * reports are suppressed, nothing else.
 */
#if defined(__SANITIZE_THREAD__)
#define FB_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FB_TSAN 1
#endif
#endif
#ifdef FB_TSAN
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void)
{
	return "called_from_lib:libzookeeper_st.so\n";
}
#endif

/* ---- the engine and its sessions ---------------------------------------- */

typedef struct zeng zeng;

/*
 * One ZooKeeper session on the single-threaded client: its I/O runs only
 * inside the calls below (drive), on the thread that owns it. Nothing
 * pings while that thread is elsewhere, or paused: exactly a real
 * client process's behaviour under a stop-the-world pause.
 */
typedef struct zsess {
	zhandle_t *zh; /* NULL: no session (never opened, or closed) */
	const zeng *e;
	int outstanding; /* requests whose completion has not run yet */
	int last_errno;  /* the last system error the client met connecting */
	bool lost;       /* issue 24: the last call had no answer (no session, a timeout) */
	char err[ERRLEN];
} zsess;

struct zeng {
	fb_engine_config cfg;
	char hosts[1200]; /* host:port,host:port for zookeeper_init */
	char prefix[256];
	char url[URLLEN]; /* redacted */
	int timeout_ms;   /* the session timeout: --ttl, as the server negotiated it */
	bool ensemble;    /* issue 24: several hosts */
	char version[96];
	zsess admin;
};

/* One asynchronous request's outcome. Lives in its owner (a connection or
 * the prepare's array) until the session that sent it is closed: a
 * completion can run as late as zookeeper_close. */
typedef struct zop {
	zsess *s;
	int rc;
	bool done;
	struct Stat stat;
	char name[PATHLEN]; /* create: the node made; children: the lowest child */
	int32_t children;   /* children: how many */
	bool keep;          /* children: keep every name, in names (malloc'd) */
	char **names;
	int32_t nnames;
} zop;

/* A worker's connection: its session and the lock nodes it holds. */
typedef struct zconn {
	const zeng *e;
	zsess s;
	uint16_t worker;
	fb_held_table held;
	uint64_t down_since; /* issue 24: monotonic ns since calls went unanswered; 0: answered */
	zop op[2];
} zconn;

static void zfail(zsess *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void zfail(zsess *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fb_engine_failv(s->err, sizeof s->err, s->e->url, fmt, ap);
	va_end(ap);
}

static uint64_t now_ns(const zeng *e)
{
	return fb_clock_now(e->cfg.clock);
}

static void no_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	(void)zh, (void)type, (void)state, (void)path, (void)ctx;
}

/* The library logs through one global buffer in its single-threaded
 * build: silenced once, before any session exists (our errors say what
 * went wrong). */
static void quiet_library(void)
{
	zoo_set_debug_level((ZooLogLevel)0);
}

static void sess_close(zsess *s)
{
	if (s->zh)
		zookeeper_close(s->zh); /* runs what is outstanding with ZCLOSING */
	s->zh = NULL;
	s->outstanding = 0;
}

static bool sess_dead(const zsess *s)
{
	if (!s->zh)
		return true;
	int st = zoo_state(s->zh);
	return st == ZOO_EXPIRED_SESSION_STATE || st == ZOO_AUTH_FAILED_STATE;
}

/*
 * Run the session's I/O until `until` holds (nothing outstanding, or the
 * session connected) or the deadline passes. A signal (the injector's
 * pause) interrupting the wait is not an error: the loop goes on. False
 * when the deadline passed.
 */
enum until { UNTIL_ANSWERED, UNTIL_SETTLED };

static bool drive(zsess *s, enum until until, uint64_t deadline)
{
	for (;;) {
		if (sess_dead(s))
			return true; /* what was outstanding ran with an error */
		int st = zoo_state(s->zh);
		if (until == UNTIL_ANSWERED ? s->outstanding == 0 : st == ZOO_CONNECTED_STATE)
			return true;
		uint64_t now = now_ns(s->e);
		if (now >= deadline)
			return false;
		int fd = -1, interest = 0;
		struct timeval tv = {0, 0};
		int rc = zookeeper_interest(s->zh, &fd, &interest, &tv);
		if (rc == ZCONNECTIONLOSS || rc == ZSYSTEMERROR)
			s->last_errno = errno;
		if (rc == ZINVALIDSTATE)
			continue; /* expired: sess_dead says so */
		uint64_t left = deadline - now;
		uint64_t wait = (uint64_t)tv.tv_sec * 1000000000u + (uint64_t)tv.tv_usec * 1000u;
		if (wait > left || (fd < 0 && wait == 0))
			wait = wait > left ? left : 1000000;
		int ms = (int)((wait + 999999) / 1000000);
		int events = 0;
		if (fd >= 0) {
			struct pollfd p = {
			        .fd = fd,
			        .events = (short)(((interest & ZOOKEEPER_READ) ? POLLIN : 0) |
			                          ((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0))};
			int n = poll(&p, 1, ms);
			if (n < 0 && errno != EINTR) {
				zfail(s, "poll failed, errno=%d (%s)", errno, strerror(errno));
				return false;
			}
			if (n > 0) {
				if (p.revents & (POLLIN | POLLHUP | POLLERR))
					events |= ZOOKEEPER_READ;
				if (p.revents & POLLOUT)
					events |= ZOOKEEPER_WRITE;
			}
		} else {
			fb_sleep_ns(wait);
		}
		rc = zookeeper_process(s->zh, events);
		if (rc == ZCONNECTIONLOSS || rc == ZSYSTEMERROR)
			s->last_errno = errno;
	}
}

/* "no reply within 2 s", with the last connection error the client met. */
static void timed_out(zsess *s, const char *what, uint64_t limit_ns)
{
	char secs[32];
	s->lost = true;
	if (s->e->ensemble && limit_ns > MEMBER_WAIT_NS)
		limit_ns = MEMBER_WAIT_NS; /* what call_deadline gave it */
	fb_engine_seconds(secs, sizeof secs, limit_ns);
	if (s->last_errno)
		zfail(s, "%s: no answer within %s s (last connection error: errno=%d, %s)", what,
		      secs, s->last_errno, strerror(s->last_errno));
	else
		zfail(s, "%s: no answer within %s s", what, secs);
}

/*
 * A new session, connected, or false (s->err says why). The server
 * negotiates the timeout within its minSessionTimeout..maxSessionTimeout
 * (2 and 20 ticks by default): the engine checked at open that it grants
 * exactly the TTL.
 */
static bool sess_open(zsess *s, uint64_t limit_ns)
{
	sess_close(s);
	s->last_errno = 0;
	s->zh = zookeeper_init(s->e->hosts, no_watcher, s->e->timeout_ms, NULL, s, 0);
	if (!s->zh) {
		zfail(s, "zookeeper_init failed, errno=%d (%s)", errno, strerror(errno));
		s->lost = true;
		return false;
	}
	if (!drive(s, UNTIL_SETTLED, now_ns(s->e) + limit_ns)) {
		timed_out(s, "no session", limit_ns);
		sess_close(s);
		return false;
	}
	if (sess_dead(s)) {
		zfail(s, "the server refused the session");
		s->lost = true; /* an ensemble's server without a quorum does */
		sess_close(s);
		return false;
	}
	return true;
}

/* A live session, reconnecting (same session) or opening a new one. */
static bool sess_ready(zsess *s, uint64_t deadline)
{
	if (!sess_dead(s) && drive(s, UNTIL_SETTLED, deadline) && !sess_dead(s))
		return true;
	uint64_t now = now_ns(s->e);
	uint64_t left = deadline > now ? deadline - now : 0;
	return sess_open(s, left > 0 ? left : 1);
}

/* ---- requests ---------------------------------------------------------- */

static zop *op_start(zsess *s, zop *o)
{
	*o = (zop){.s = s};
	s->outstanding++;
	return o;
}

static void op_end(zop *o, int rc)
{
	o->rc = rc;
	o->done = true;
	o->s->outstanding--;
}

/* The sequence number a sequential node's name ends with. */
static long long seq_of(const char *name)
{
	size_t n = strlen(name);
	return n >= 10 ? atoll(name + n - 10) : -1;
}

static void on_created(int rc, const char *value, const struct Stat *stat, const void *data)
{
	zop *o = (zop *)data;
	if (rc == ZOK && value && stat) {
		snprintf(o->name, sizeof o->name, "%s", value);
		o->stat = *stat;
	}
	op_end(o, rc);
}

static void on_children(int rc, const struct String_vector *v, const void *data)
{
	zop *o = (zop *)data;
	if (rc == ZOK && v) {
		o->children = v->count;
		long long low = -1;
		for (int32_t i = 0; i < v->count; i++) {
			long long q = seq_of(v->data[i]);
			if (low < 0 || (q >= 0 && q < low)) {
				low = q;
				snprintf(o->name, sizeof o->name, "%s", v->data[i]);
			}
		}
		if (o->keep && v->count > 0 &&
		    (o->names = calloc((size_t)v->count, sizeof *o->names)))
			for (int32_t i = 0; i < v->count; i++)
				if ((o->names[o->nnames] = strdup(v->data[i])))
					o->nnames++;
	}
	op_end(o, rc);
}

static void on_stat(int rc, const struct Stat *stat, const void *data)
{
	zop *o = (zop *)data;
	if (rc == ZOK && stat)
		o->stat = *stat;
	op_end(o, rc);
}

static void on_void(int rc, const void *data)
{
	op_end((zop *)data, rc);
}

typedef enum zkind { Z_CHILDREN, Z_EXISTS, Z_DELETE } zkind;

static int submit(zsess *s, zkind k, const char *path, zop *o)
{
	op_start(s, o);
	int rc = k == Z_CHILDREN ? zoo_aget_children(s->zh, path, 0, on_children, o)
	         : k == Z_EXISTS ? zoo_aexists(s->zh, path, 0, on_stat, o)
	                         : zoo_adelete(s->zh, path, -1, on_void, o);
	if (rc != ZOK)
		op_end(o, rc);
	return rc;
}

/* What one request on the current session came to. */
typedef enum zres {
	Z_ANSWERED, /* o->rc is the server's answer */
	Z_GONE,     /* the session expired: every lock it held is gone */
	Z_NOANSWER, /* nothing within the deadline: s->err says why */
} zres;

/* The link failed, not the request: ZRUNTIMEINCONSISTENCY is the client
 * finding a reply out of order (seen when an ensemble's leader dies with
 * requests in flight, issue 24), which it answers by dropping the
 * connection, as it does a lost one. */
static bool lost_link(int rc)
{
	return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZCLOSING ||
	       rc == ZRUNTIMEINCONSISTENCY;
}

/*
 * One request, answered on the session that sent it. A lost connection
 * is not an answer: the client reconnects the same session, and the
 * request is sent again (every kind here is safe to repeat: a repeated
 * delete finding nothing means the first one landed, since nobody else
 * deletes a live session's node). An expired session is Z_GONE.
 */
static zres one_op(zsess *s, zkind k, const char *path, zop *o, uint64_t deadline, const char *what)
{
	bool again = false;
	for (;;) {
		if (sess_dead(s))
			return Z_GONE;
		int rc = submit(s, k, path, o);
		if (rc == ZOK && !drive(s, UNTIL_ANSWERED, deadline)) {
			timed_out(s, what, fb_engine_timeout(&s->e->cfg));
			sess_close(s); /* the late answer must not land anywhere */
			return Z_NOANSWER;
		}
		rc = o->rc;
		if (rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE || sess_dead(s)) {
			sess_close(s);
			return Z_GONE;
		}
		if (!lost_link(rc)) {
			if (again && k == Z_DELETE && rc == ZNONODE)
				o->rc = ZOK;
			return Z_ANSWERED;
		}
		if (!drive(s, UNTIL_SETTLED, deadline)) {
			timed_out(s, what, fb_engine_timeout(&s->e->cfg));
			sess_close(s);
			return Z_NOANSWER;
		}
		again = true;
	}
}

/* ---- the URL and the engine --------------------------------------------- */

/*
 * zk://host:port[,host:port...][/prefix]: the hosts for zookeeper_init
 * (IPv6 in brackets) and the prefix, which must be a plain absolute path.
 */
static bool parse_url(const char *url, zeng *e, const char **why)
{
	fb_url u;
	if (!fb_url_parse(url, "zk", 2181, FB_URL_HOSTS, &u, why)) {
		if (strcmp(*why, "wrong scheme") == 0)
			*why = "expected zk://host:port[,host:port...][/prefix]";
		return false;
	}
	if (u.has_pass) {
		*why = "ZooKeeper digest authentication is not supported: no user:password@";
		return false;
	}
	if (u.query) {
		*why = "zk:// takes no options (no ?...)";
		return false;
	}
	size_t o = 0;
	for (int i = 0; i < u.hosts; i++) {
		bool v6 = strchr(u.host[i].host, ':') != NULL;
		int n = snprintf(e->hosts + o, sizeof e->hosts - o, "%s%s%s%s:%d", i ? "," : "",
		                 v6 ? "[" : "", u.host[i].host, v6 ? "]" : "", u.host[i].port);
		if (n < 0 || (size_t)n >= sizeof e->hosts - o) {
			*why = "too many hosts";
			return false;
		}
		o += (size_t)n;
	}
	e->ensemble = u.hosts > 1;
	snprintf(e->prefix, sizeof e->prefix, "%s", DEFAULT_PREFIX);
	if (u.path_len > 1) {
		if (u.path_len >= sizeof e->prefix || u.path[u.path_len - 1] == '/' ||
		    memmem(u.path, u.path_len, "//", 2)) {
			*why = "the prefix must be a path like /fencebench (no trailing or double "
			       "/)";
			return false;
		}
		for (size_t i = 0; i < u.path_len; i++)
			if (u.path[i] == '%' || (unsigned char)u.path[i] <= ' ') {
				*why = "the prefix must be plain characters, no escapes or spaces";
				return false;
			}
		memcpy(e->prefix, u.path, u.path_len);
		e->prefix[u.path_len] = 0;
	}
	return true;
}

/* "Zookeeper version: 3.8.0-..." from the srvr four-letter word on the
 * server the admin session is connected to ("unknown" if it is not
 * allowed: 4lw.commands.whitelist). */
static void read_version(zeng *e)
{
	snprintf(e->version, sizeof e->version, "unknown");
	struct sockaddr_storage a;
	socklen_t alen = sizeof a;
	if (!zookeeper_get_connected_host(e->admin.zh, (struct sockaddr *)&a, &alen))
		return;
	int fd = socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	struct timeval tv = {1, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	char buf[512];
	size_t got = 0;
	if (connect(fd, (struct sockaddr *)&a, alen) == 0 && write(fd, "srvr", 4) == 4) {
		ssize_t n;
		while (got + 1 < sizeof buf && (n = read(fd, buf + got, sizeof buf - 1 - got)) > 0)
			got += (size_t)n;
	}
	close(fd);
	buf[got] = 0;
	const char *v = strstr(buf, "version: ");
	if (!v)
		return;
	v += strlen("version: ");
	size_t n = strcspn(v, "-, \r\n");
	if (n > 32)
		n = 32;
	snprintf(e->version, sizeof e->version, "%.*s (session timeout %d ms)", (int)n, v,
	         e->timeout_ms);
}

/* Why a configuration cannot be served, or NULL. */
static const char *config_problem(const fb_engine_config *cfg)
{
	const char *why = fb_engine_lease_problem(cfg, true);
	if (!why && (cfg->ttl_ns % 1000000 || cfg->ttl_ns / 1000000 > INT_MAX))
		why = "--ttl is the session timeout, in whole milliseconds";
	return why;
}

static fb_err lease_open(const fb_engine_config *cfg, const char *url, void **eng, char *err,
                         size_t errlen)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, quiet_library);
	zeng *e = calloc(1, sizeof *e);
	if (!e) {
		fb_engine_err(err, errlen, "out of memory for the ZooKeeper engine");
		return FB_ENOMEM;
	}
	e->cfg = *cfg;
	if (!e->cfg.clock)
		e->cfg.clock = fb_clock_monotonic();
	e->cfg.timeout_ns = fb_engine_timeout(cfg);
	fb_url_redact(url ? url : "", e->url, sizeof e->url);
	e->admin.e = e;
	const char *why = config_problem(cfg);
	fb_err rc = FB_EINVAL;
	if (why || !parse_url(url, e, &why)) {
		zfail(&e->admin, "%s", why);
		goto err;
	}
	e->timeout_ms = (int)(cfg->ttl_ns / 1000000);
	rc = FB_ESYS;
	if (!sess_open(&e->admin, (uint64_t)CONNECT_TIMEOUT_S * 1000000000u))
		goto err;
	int got = zoo_recv_timeout(e->admin.zh);
	if (got != e->timeout_ms) {
		zfail(&e->admin,
		      "--ttl %d ms: the server negotiated a session timeout of %d ms instead; it "
		      "grants minSessionTimeout..maxSessionTimeout (2 and 20 x tickTime unless "
		      "set): pick a --ttl in its range, or lower the server's tickTime",
		      e->timeout_ms, got);
		rc = FB_EINVAL;
		goto err;
	}
	read_version(e);
	*eng = e;
	return FB_OK;
err:
	fb_engine_err(err, errlen, e->admin.err);
	sess_close(&e->admin);
	free(e);
	return rc;
}

static void lease_version(void *eng, char *buf, size_t len)
{
	const zeng *e = eng;
	if (len)
		snprintf(buf, len, "%s", e->version);
}

static void lease_close(void *eng)
{
	zeng *e = eng;
	if (!e)
		return;
	sess_close(&e->admin);
	free(e);
}

/* ---- prepare ------------------------------------------------------------ */

static void lock_node(const zeng *e, uint32_t key, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%" PRIu32, e->prefix, key);
}

/*
 * n requests at once on the admin session, waited for together; false
 * (err set) if the session broke or the deadline passed, or a request
 * failed with a code other than the ones `ok` allows.
 */
static bool batch_wait(zeng *e, zop *ops, int n, int ok1, int ok2, const char *what)
{
	zsess *s = &e->admin;
	if (!drive(s, UNTIL_ANSWERED, now_ns(e) + e->cfg.timeout_ns)) {
		timed_out(s, what, e->cfg.timeout_ns);
		sess_close(s);
		return false;
	}
	for (int i = 0; i < n; i++)
		if (ops[i].rc != ZOK && ops[i].rc != ok1 && ops[i].rc != ok2) {
			zfail(s, "%s: %s", what, zerror(ops[i].rc));
			s->lost = lost_link(ops[i].rc);
			return false;
		}
	return true;
}

/* Create path and each parent it lacks (persistent, open ACL). */
static bool create_path(zeng *e, const char *path)
{
	char part[PATHLEN];
	for (const char *p = strchr(path + 1, '/');; p = strchr(p + 1, '/')) {
		size_t n = p ? (size_t)(p - path) : strlen(path);
		snprintf(part, sizeof part, "%.*s", (int)n, path);
		zop o;
		op_start(&e->admin, &o);
		int rc = zoo_acreate2(e->admin.zh, part, "", 0, &ZOO_OPEN_ACL_UNSAFE,
		                      ZOO_PERSISTENT, on_created, &o);
		if (rc != ZOK)
			op_end(&o, rc);
		if (!batch_wait(e, &o, 1, ZNODEEXISTS, ZNODEEXISTS, "create the prefix"))
			return false;
		if (!p)
			return true;
	}
}

/* Fresh: every lock request under keys [k0, k0 + n) deleted: the lists
 * pipelined, then the deletes. */
static bool forget_chunk(zeng *e, uint32_t k0, int n, zop *ops)
{
	zsess *s = &e->admin;
	char path[PATHLEN];
	for (int i = 0; i < n; i++) {
		lock_node(e, k0 + (uint32_t)i, path, sizeof path);
		op_start(s, &ops[i])->keep = true;
		int rc = zoo_aget_children(s->zh, path, 0, on_children, &ops[i]);
		if (rc != ZOK)
			op_end(&ops[i], rc);
	}
	bool ok = batch_wait(e, ops, n, ZNONODE, ZNONODE, "list the lock requests");
	size_t total = 0;
	for (int i = 0; i < n; i++)
		total += (size_t)ops[i].nnames;
	zop *dels = ok && total ? calloc(total, sizeof *dels) : NULL;
	if (ok && total && !dels) {
		zfail(s, "out of memory deleting the lock requests");
		ok = false;
	}
	size_t d = 0;
	for (int i = 0; i < n; i++) {
		lock_node(e, k0 + (uint32_t)i, path, sizeof path);
		for (int32_t j = 0; j < ops[i].nnames; j++) {
			char child[PATHLEN * 2];
			snprintf(child, sizeof child, "%s/%s", path, ops[i].names[j]);
			if (dels)
				submit(s, Z_DELETE, child, &dels[d++]);
			free(ops[i].names[j]);
		}
		free(ops[i].names);
		ops[i].names = NULL;
		ops[i].nnames = 0;
	}
	if (ok && d)
		ok = batch_wait(e, dels, (int)d, ZNONODE, ZNONODE, "delete a lock request");
	if (!ok)
		sess_close(s); /* before dels goes: its completions must not outlive it */
	free(dels);
	return ok;
}

/*
 * fresh: delete every lock request under the prefix (a crashed run's,
 * whose sessions have not expired yet, or anyone's); then create the lock
 * nodes that are missing, in pipelined batches. Fences cannot be
 * forgotten: zxids only grow, and so the first fence is whatever the
 * ensemble's next zxid is.
 */
static bool prepare_once(zeng *e, bool fresh, zop *ops);

static fb_err lease_prepare(void *eng, bool fresh, char *err, size_t errlen)
{
	zeng *e = eng;
	zop *ops = calloc(PREP_CHUNK, sizeof *ops);
	if (!ops) {
		fb_engine_err(err, errlen, "out of memory preparing ZooKeeper");
		return FB_ENOMEM;
	}
	/* Each step is idempotent (a node that exists, a request already
	 * gone, are fine), so a link lost on the way (a server just started,
	 * slow to answer its first requests within the session's timeout,
	 * which is --ttl) is another try on a new session, until the
	 * engine's timeout. */
	uint64_t until = now_ns(e) + fb_engine_timeout(&e->cfg);
	bool ok;
	do {
		e->admin.lost = false;
		ok = prepare_once(e, fresh, ops);
		if (!ok && e->admin.lost)
			sess_close(&e->admin); /* the next try on a new session */
	} while (!ok && e->admin.lost && now_ns(e) < until);
	sess_close(&e->admin); /* done with: it must not keep ops' addresses */
	free(ops);
	if (!ok) {
		fb_engine_err(err, errlen, e->admin.err);
		return FB_ESYS;
	}
	return FB_OK;
}

static bool prepare_once(zeng *e, bool fresh, zop *ops)
{
	bool ok = sess_ready(&e->admin, now_ns(e) + e->cfg.timeout_ns) && create_path(e, e->prefix);
	for (uint32_t k = 0; ok && k < e->cfg.keys;) {
		int n = e->cfg.keys - k < PREP_CHUNK ? (int)(e->cfg.keys - k) : PREP_CHUNK;
		if (fresh && !forget_chunk(e, k, n, ops)) {
			ok = false;
			break;
		}
		char path[PATHLEN];
		for (int i = 0; i < n; i++) {
			lock_node(e, k + (uint32_t)i, path, sizeof path);
			op_start(&e->admin, &ops[i]);
			int rc = zoo_acreate2(e->admin.zh, path, "", 0, &ZOO_OPEN_ACL_UNSAFE,
			                      ZOO_PERSISTENT, on_created, &ops[i]);
			if (rc != ZOK)
				op_end(&ops[i], rc);
		}
		ok = batch_wait(e, ops, n, ZNODEEXISTS, ZNODEEXISTS, "create the lock nodes");
		k += (uint32_t)n;
	}
	return ok;
}

/* ---- connections -------------------------------------------------------- */

static fb_err lease_connect(void *eng, uint16_t worker, void **conn, char *err, size_t errlen)
{
	const zeng *e = eng;
	zconn *c = calloc(1, sizeof *c);
	if (!c) {
		fb_engine_err(err, errlen, "out of memory for a ZooKeeper connection");
		return FB_ENOMEM;
	}
	c->e = e;
	c->s.e = e;
	c->worker = worker;
	if (!sess_open(&c->s, (uint64_t)CONNECT_TIMEOUT_S * 1000000000u)) {
		fb_engine_err(err, errlen, c->s.err);
		free(c);
		return FB_ESYS;
	}
	*conn = c;
	return FB_OK;
}

static void lease_disconnect(void *conn)
{
	zconn *c = conn;
	if (!c)
		return;
	sess_close(&c->s);
	free(c);
}

static const char *lease_error(void *conn)
{
	const zconn *c = conn;
	return c->s.err[0] ? c->s.err : "no error";
}

/* "c<client>.w<worker>-<seq>": the worker. */
static uint16_t owner_of(const char *name)
{
	const char *w = strstr(name, ".w");
	unsigned long x = w ? strtoul(w + 2, NULL, 10) : 0;
	return x <= UINT16_MAX ? (uint16_t)x : 0;
}

/* The service's ctime (ms of the leader's wall clock) on the caller's
 * clock, as the start of a lease whose expiry is at least a TTL later. */
static uint64_t on_caller_clock(const zeng *e, int64_t ctime_ms)
{
	int64_t off = (int64_t)now_ns(e) - (int64_t)fb_clock_now(fb_clock_realtime());
	int64_t at = ctime_ms * 1000000 + off;
	return at > 0 ? (uint64_t)at : 0;
}

/* ---- leases ------------------------------------------------------------- */

/*
 * A request of this worker's (c<client>.w<worker>-) found by a listing
 * taken before this session created one: left by a session the worker
 * closed after a lost connection or a timeout, whose close the server
 * never saw (zookeeper_close sends nothing while disconnected). It lives
 * until that session expires, a timeout later, and if it is the lowest
 * the worker would find its own dead request holding the key. It held no
 * lock anyone was told of (the acquire that made it never returned it),
 * so deleting it frees nothing that is in use.
 */
static bool left_by_me(const zconn *c, const char *name)
{
	char me[32];
	int n = snprintf(me, sizeof me, "c%" PRIu32 ".w%u-", c->e->cfg.client_id, c->worker);
	return n > 0 && strncmp(name, me, (size_t)n) == 0;
}

/* Delete dir/name, a request left_by_me: TRY_AGAIN, or TRY_DONE with
 * *res an error when the server did not answer. */
static int clear_left(zconn *c, const char *dir, const char *name, fb_acquire *res,
                      uint64_t deadline)
{
	char path[PATHLEN * 2];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (one_op(&c->s, Z_DELETE, path, &c->op[0], deadline, "acquire: clear") == Z_NOANSWER) {
		*res = FB_ACQ_ERROR;
		return 1;
	}
	return 0;
}

typedef enum attempt { TRY_AGAIN, TRY_DONE, TRY_SLOW } attempt;

/*
 * One try of the recipe on a live session. First a read: if the key's
 * lock node has children, someone holds or is taking it (HELD, at the
 * cost of one read, where the recipe's create-then-look would write
 * twice). Then the create and the listing, pipelined (a session's
 * requests are answered in order, so the list includes the new node):
 * the lowest sequence holds. Otherwise the request is deleted: a try-lock
 * does not queue. A lock whose create took longer than ACQUIRE_SLACK_NS
 * is deleted too (TRY_SLOW). Any trouble with the session ends it, which deletes a
 * request it may have left, and the caller tries again on a new one.
 */
static attempt try_acquire(zconn *c, uint32_t key, fb_lease *out, fb_acquire *res,
                           uint64_t deadline)
{
	const zeng *e = c->e;
	zsess *s = &c->s;
	char dir[PATHLEN], path[PATHLEN + 32];
	lock_node(e, key, dir, sizeof dir);
	zres z = one_op(s, Z_CHILDREN, dir, &c->op[0], deadline, "acquire");
	if (z == Z_NOANSWER) {
		*res = FB_ACQ_ERROR;
		return TRY_DONE;
	}
	if (z == Z_GONE)
		return TRY_AGAIN;
	if (c->op[0].rc == ZNONODE) {
		zfail(s, "acquire: %s does not exist: the lease service was not prepared", dir);
		*res = FB_ACQ_ERROR;
		return TRY_DONE;
	}
	if (c->op[0].rc != ZOK) {
		zfail(s, "acquire: list %s: %s", dir, zerror(c->op[0].rc));
		*res = FB_ACQ_ERROR;
		return TRY_DONE;
	}
	if (c->op[0].children && left_by_me(c, c->op[0].name)) {
		char name[PATHLEN];
		snprintf(name, sizeof name, "%s", c->op[0].name);
		return clear_left(c, dir, name, res, deadline) ? TRY_DONE : TRY_AGAIN;
	}
	if (c->op[0].children) {
		*out = (fb_lease){.owner = owner_of(c->op[0].name)};
		*res = FB_HELD;
		return TRY_DONE;
	}
	uint64_t sent = now_ns(e);
	snprintf(path, sizeof path, "%s/c%" PRIu32 ".w%u-", dir, e->cfg.client_id, c->worker);
	zop *made = op_start(s, &c->op[0]);
	int rc = zoo_acreate2(s->zh, path, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL,
	                      on_created, made);
	if (rc != ZOK)
		op_end(made, rc);
	if (rc == ZOK)
		submit(s, Z_CHILDREN, dir, &c->op[1]);
	if (!drive(s, UNTIL_ANSWERED, deadline)) {
		timed_out(s, "acquire", e->cfg.timeout_ns);
		sess_close(s);
		*res = FB_ACQ_ERROR;
		return TRY_DONE;
	}
	if (rc != ZOK || made->rc != ZOK || c->op[1].rc != ZOK) {
		int bad = rc != ZOK ? rc : made->rc != ZOK ? made->rc : c->op[1].rc;
		if (lost_link(bad) || bad == ZSESSIONEXPIRED || bad == ZINVALIDSTATE ||
		    sess_dead(s)) {
			sess_close(s); /* a request it may have made dies with it */
			return TRY_AGAIN;
		}
		zfail(s, "acquire: create under %s: %s", dir, zerror(bad));
		*res = FB_ACQ_ERROR;
		return TRY_DONE;
	}
	const char *mine = strrchr(made->name, '/');
	mine = mine ? mine + 1 : made->name;
	if (strcmp(mine, c->op[1].name) != 0) {
		uint16_t holder = owner_of(c->op[1].name);
		char gone[PATHLEN], low[PATHLEN];
		snprintf(gone, sizeof gone, "%s", made->name);
		snprintf(low, sizeof low, "%s", c->op[1].name);
		z = one_op(s, Z_DELETE, gone, &c->op[0], deadline, "acquire: withdraw");
		if (z == Z_NOANSWER) {
			*res = FB_ACQ_ERROR;
			return TRY_DONE;
		}
		if (left_by_me(c, low))
			return clear_left(c, dir, low, res, deadline) ? TRY_DONE : TRY_AGAIN;
		*out = (fb_lease){.owner = holder}; /* Z_GONE: the request went with it */
		*res = FB_HELD;
		return TRY_DONE;
	}
	uint64_t fence = (uint64_t)made->stat.czxid;
	if (made->stat.czxid <= 0 || fence > FB_FENCE_MAX) {
		z = one_op(s, Z_DELETE, made->name, &c->op[1], deadline, "acquire: withdraw");
		*res = z == Z_NOANSWER ? FB_ACQ_ERROR : FB_EXHAUSTED;
		return TRY_DONE;
	}
	if (now_ns(e) - sent > ACQUIRE_SLACK_NS) {
		z = one_op(s, Z_DELETE, made->name, &c->op[1], deadline, "acquire: withdraw");
		*res = FB_ACQ_ERROR;
		return z == Z_NOANSWER ? TRY_DONE : TRY_SLOW;
	}
	/* The session expires no sooner than the TTL after the server last
	 * heard from it, which is after `sent`. Not the node's ctime: the
	 * server stamps it when the create leaves its queue, after it touched
	 * the session, and under load that is many milliseconds later (seen:
	 * 10.9 ms, and the session expired 7 ms before ctime + timeout). */
	*out = (fb_lease){.fence = fence,
	                  .owner = c->worker,
	                  .expires_at = sent + e->cfg.ttl_ns,
	                  .service_at = sent};
	fb_held_put(&c->held, key, fence, 0, made->name);
	*res = FB_ACQUIRED;
	return TRY_DONE;
}

/* Issue 24: a call's deadline: the engine's timeout, or with several
 * servers MEMBER_WAIT_NS at most (a server killed or stopped under the
 * session: the client moves to another, or the call counts as refused). */
static uint64_t call_deadline(zconn *c)
{
	uint64_t t = c->e->cfg.timeout_ns;
	if (c->e->ensemble && t > MEMBER_WAIT_NS)
		t = MEMBER_WAIT_NS;
	c->s.lost = false;
	return now_ns(c->e) + t;
}

/*
 * Issue 24: with several servers, a call no server answered in time (its
 * session lost, or an election under way) is the service refusing, not a
 * dead engine: true, and the caller answers as a refusal (the lock not
 * granted; a release or a renewal not known done, which the session's
 * expiry settles). Only when nothing has answered for the engine's
 * timeout is it the run's failure (false, the error says so).
 */
static bool ride_out(zconn *c)
{
	if (!c->e->ensemble || !c->s.lost)
		return false;
	char last[ERRLEN], why[ERRLEN];
	snprintf(last, sizeof last, "%s", c->s.err);
	if (fb_engine_ride_out(&c->down_since, &c->e->cfg, "server", last, why, sizeof why))
		return true;
	zfail(&c->s, "%s", why);
	return false;
}

/* A call answered: the service is up. */
static void answered(zconn *c)
{
	if (!c->s.lost)
		c->down_since = 0;
}

static fb_acquire lease_acquire(void *conn, uint32_t key, fb_lease *out, fb_lease_stats *st)
{
	zconn *c = conn;
	(void)st; /* no CAS here */
	if (key >= c->e->cfg.keys) {
		zfail(&c->s, "acquire: key %" PRIu32 " out of range", key);
		return FB_ACQ_ERROR;
	}
	uint64_t deadline = call_deadline(c);
	fb_acquire res = FB_ACQ_ERROR;
	for (int slow = 0;;) {
		attempt a = sess_ready(&c->s, deadline) ? try_acquire(c, key, out, &res, deadline)
		                                        : TRY_DONE;
		if (a == TRY_DONE && res == FB_ACQ_ERROR && ride_out(c)) {
			*out = (fb_lease){0}; /* not granted, as far as this worker knows */
			return FB_HELD;
		}
		if (a == TRY_DONE) {
			answered(c);
			return res;
		}
		if (a == TRY_SLOW && ++slow == SLOW_TRIES) {
			*out = (fb_lease){0}; /* withdrawn: nobody holds it */
			return FB_HELD;
		}
	}
}

/* Delete our lock node: OK, or REFUSED when the session (and so the
 * node) is gone or the node was deleted by someone else. */
static fb_io lease_release(void *conn, uint32_t key, const fb_lease *l, fb_lease *freed)
{
	(void)freed; /* it cannot say which word it freed */
	zconn *c = conn;
	fb_held *h = fb_held_find(&c->held, key, l->fence);
	if (!h)
		return FB_IO_REFUSED;
	h->used = false;
	uint64_t deadline = call_deadline(c);
	zres z = one_op(&c->s, Z_DELETE, h->text, &c->op[0], deadline, "release");
	if (z == Z_NOANSWER) /* issue 24: not known released; the session's expiry frees it */
		return ride_out(c) ? FB_IO_REFUSED : FB_IO_ERROR;
	answered(c);
	return z == Z_ANSWERED && c->op[0].rc == ZOK ? FB_IO_OK : FB_IO_REFUSED;
}

/* Our node, still there and still our session's: a round trip that the
 * server also counts as the session's heartbeat. */
static fb_io still_ours(zconn *c, uint32_t key, const fb_lease *l)
{
	fb_held *h = fb_held_find(&c->held, key, l->fence);
	if (!h || sess_dead(&c->s))
		return FB_IO_REFUSED;
	int64_t session = zoo_client_id(c->s.zh)->client_id;
	uint64_t deadline = call_deadline(c);
	zres z = one_op(&c->s, Z_EXISTS, h->text, &c->op[0], deadline, "is_held");
	if (z == Z_NOANSWER) /* issue 24: not known held, not held */
		return ride_out(c) ? FB_IO_REFUSED : FB_IO_ERROR;
	answered(c);
	return z == Z_ANSWERED && c->op[0].rc == ZOK && c->op[0].stat.ephemeralOwner == session
	               ? FB_IO_OK
	               : FB_IO_REFUSED;
}

static fb_io lease_is_held(void *conn, uint32_t key, const fb_lease *l)
{
	return still_ours(conn, key, l);
}

/* A session's lease is extended by any answered request: the exists. */
static fb_io lease_renew(void *conn, uint32_t key, const fb_lease *l, fb_lease *out)
{
	zconn *c = conn;
	uint64_t sent = now_ns(c->e);
	fb_io io = still_ours(c, key, l);
	if (io == FB_IO_OK && out) {
		*out = *l;
		out->expires_at = sent + c->e->cfg.ttl_ns;
	}
	return io;
}

/* The lowest request under the key's lock node: its owner and czxid, and
 * an expiry about a TTL after its creation: for the story only, as the
 * session can expire before ctime + TTL (see ACQUIRE_SLACK_NS). */
static fb_io lease_peek(void *conn, uint32_t key, fb_lease *out)
{
	zconn *c = conn;
	const zeng *e = c->e;
	*out = (fb_lease){0};
	uint64_t deadline = now_ns(e) + e->cfg.timeout_ns;
	char dir[PATHLEN], low[PATHLEN * 2];
	lock_node(e, key, dir, sizeof dir);
	for (;;) {
		if (!sess_ready(&c->s, deadline))
			return FB_IO_ERROR;
		zres z = one_op(&c->s, Z_CHILDREN, dir, &c->op[0], deadline, "peek");
		if (z == Z_NOANSWER)
			return FB_IO_ERROR;
		if (z == Z_GONE)
			continue;
		if (c->op[0].rc != ZOK || !c->op[0].children)
			return FB_IO_OK;
		snprintf(low, sizeof low, "%s/%s", dir, c->op[0].name);
		out->owner = owner_of(c->op[0].name);
		z = one_op(&c->s, Z_EXISTS, low, &c->op[1], deadline, "peek");
		if (z == Z_NOANSWER)
			return FB_IO_ERROR;
		if (z == Z_ANSWERED && c->op[1].rc == ZOK) {
			out->fence = (uint64_t)c->op[1].stat.czxid;
			out->service_at = (uint64_t)c->op[1].stat.ctime * 1000000u;
			out->expires_at = on_caller_clock(e, c->op[1].stat.ctime) + e->cfg.ttl_ns;
		}
		return FB_IO_OK;
	}
}

static bool zk_check_url(const char *url, const char **why)
{
	zeng *e = calloc(1, sizeof *e);
	if (!e)
		return true; /* open will say it */
	bool ok = parse_url(url, e, why);
	free(e);
	return ok;
}

const fb_lease_ops fb_zk_lease_ops = {
        FB_LEASE_OPS_HEAD,
        .scheme = "zk",
        .name = "ZooKeeper",
        .url = FB_ZK_URL,
        .help = FB_ZK_URL,
        .remote = true,
        .open = lease_open,
        .check_url = zk_check_url,
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
        .witness_slack_ns = ACQUIRE_SLACK_NS,
};
