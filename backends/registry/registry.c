/*
 * The engine registry: the one file that includes every engine, on its own
 * floor above them (backends/registry/: no engine can include registry.h,
 * the build's include paths see to it).
 */
#include "registry.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "etcd.h"
#include "exec.h"
#include "inproc.h"
#include "postgres.h"
#include "redis.h"
#include "redlock.h"
#include "zk.h"

static const fb_lease_ops *const lease_engines[] = {&fb_inproc_lease_ops,  &fb_redis_lease_ops,
                                                    &fb_zk_lease_ops,      &fb_etcd_lease_ops,
                                                    &fb_redlock_lease_ops, &fb_exec_lease_ops};
static const fb_store_ops *const store_engines[] = {&fb_inproc_store_ops, &fb_redis_store_ops,
                                                    &fb_pg_store_ops, &fb_exec_store_ops};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* A vector refused: false, with why naming the engine and what it lacks. */
static bool refuse(fb_registry *r, bool lease, const char *scheme, const char *fmt,
                   const char *what, unsigned long a, unsigned long b)
{
	char msg[128];
	snprintf(msg, sizeof msg, fmt, what, a, b);
	if (r->nrefused < FB_REGISTRY_MAX) {
		r->refused[r->nrefused].lease = lease;
		r->refused[r->nrefused].scheme = scheme;
		snprintf(r->refused[r->nrefused].why, sizeof r->refused[r->nrefused].why,
		         "the %s engine \"%s\" is refused: %s", lease ? "lease" : "store",
		         scheme ? scheme : "?", msg);
		r->nrefused++;
	}
	return false;
}

/* The checks every vector passes, of either kind: built against this
 * build's version and size, a scheme and a name, room in the table. */
#define CHECK_HEAD(lease, ops, ver, bytes)                                                         \
	do {                                                                                       \
		if (!(ops)->scheme || !*(ops)->scheme)                                             \
			return refuse(r, lease, NULL, "it has no %s", "scheme", 0, 0);             \
		if ((ops)->version_of_ops != (ver))                                                \
			return refuse(r, lease, (ops)->scheme, "%s %lu, this build's is %lu",      \
			              "its ops vector is version",                                 \
			              (unsigned long)(ops)->version_of_ops, (unsigned long)(ver)); \
		if ((ops)->size != (bytes))                                                        \
			return refuse(r, lease, (ops)->scheme, "%s %lu bytes, this build's %lu",   \
			              "its ops vector is", (unsigned long)(ops)->size,             \
			              (unsigned long)(bytes));                                     \
		if (!(ops)->name)                                                                  \
			return refuse(r, lease, (ops)->scheme, "it has no %s", "name", 0, 0);      \
	} while (0)
/* A required op, by its name. */
#define REQUIRE(lease, ops, op)                                                                    \
	do {                                                                                       \
		if (!(ops)->op)                                                                    \
			return refuse(r, lease, (ops)->scheme, "it has no %s (a required op)",     \
			              #op, 0, 0);                                                  \
	} while (0)

bool fb_registry_add_lease(fb_registry *r, const fb_lease_ops *ops)
{
	CHECK_HEAD(true, ops, FB_LEASE_OPS_VERSION, sizeof(fb_lease_ops));
	REQUIRE(true, ops, url);
	REQUIRE(true, ops, help);
	REQUIRE(true, ops, open);
	REQUIRE(true, ops, version);
	REQUIRE(true, ops, prepare);
	REQUIRE(true, ops, close);
	REQUIRE(true, ops, connect);
	REQUIRE(true, ops, disconnect);
	REQUIRE(true, ops, error);
	REQUIRE(true, ops, acquire);
	REQUIRE(true, ops, release);
	REQUIRE(true, ops, is_held);
	REQUIRE(true, ops, renew);
	REQUIRE(true, ops, peek);
	if (r->nlease == FB_REGISTRY_MAX)
		return refuse(r, true, ops->scheme, "%s", "the registry is full", 0, 0);
	r->lease[r->nlease++] = ops;
	return true;
}

bool fb_registry_add_store(fb_registry *r, const fb_store_ops *ops)
{
	CHECK_HEAD(false, ops, FB_STORE_OPS_VERSION, sizeof(fb_store_ops));
	REQUIRE(false, ops, url);
	REQUIRE(false, ops, help);
	REQUIRE(false, ops, open);
	REQUIRE(false, ops, version);
	REQUIRE(false, ops, prepare);
	REQUIRE(false, ops, close);
	REQUIRE(false, ops, connect);
	REQUIRE(false, ops, disconnect);
	REQUIRE(false, ops, error);
	REQUIRE(false, ops, read);
	REQUIRE(false, ops, write);
	REQUIRE(false, ops, debit);
	REQUIRE(false, ops, final);
	if (r->nstore == FB_REGISTRY_MAX)
		return refuse(r, false, ops->scheme, "%s", "the registry is full", 0, 0);
	r->store[r->nstore++] = ops;
	return true;
}

static fb_registry builtin;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;
/* the lists written from the registered engines: each one's url for the
 * error line, each one's help for --help */
static char lease_urls[1024], store_urls[1024], lease_help[2048], store_help[2048];

/* The n words in buf, joined by sep, the last by last_sep. */
static void join(char *buf, size_t len, const char *const *w, size_t n, const char *sep,
                 const char *last_sep)
{
	size_t o = 0;
	buf[0] = 0;
	for (size_t i = 0; i < n && o < len; i++) {
		int k = snprintf(buf + o, len - o, "%s%s", i == 0 ? "" : i + 1 == n ? last_sep : sep,
		                 w[i]);
		o += k > 0 ? (size_t)k : 0;
	}
}

static void register_builtin(void)
{
	const char *url[FB_REGISTRY_MAX], *help[FB_REGISTRY_MAX];
	for (size_t i = 0; i < COUNT(lease_engines); i++)
		fb_registry_add_lease(&builtin, lease_engines[i]);
	for (size_t i = 0; i < COUNT(store_engines); i++)
		fb_registry_add_store(&builtin, store_engines[i]);
	for (size_t i = 0; i < builtin.nlease; i++) {
		url[i] = builtin.lease[i]->url;
		help[i] = builtin.lease[i]->help;
	}
	join(lease_urls, sizeof lease_urls, url, builtin.nlease, ", ", ", ");
	join(lease_help, sizeof lease_help, help, builtin.nlease, ", ", ", or ");
	for (size_t i = 0; i < builtin.nstore; i++) {
		url[i] = builtin.store[i]->url;
		help[i] = builtin.store[i]->help;
	}
	join(store_urls, sizeof store_urls, url, builtin.nstore, ", ", ", ");
	join(store_help, sizeof store_help, help, builtin.nstore, ", ", ", or ");
}

const fb_registry *fb_registry_builtin(void)
{
	pthread_once(&builtin_once, register_builtin);
	return &builtin;
}

/*
 * The scheme of a URL: "exec" for "exec:COMMAND" (whatever the command
 * holds), what precedes "://", or the whole word "inproc". A libpq
 * conninfo ("host=... dbname=...") has no scheme but an '=': it is
 * PostgreSQL's. *len is the scheme's length.
 */
static const char *scheme_of(const char *url, size_t *len)
{
	if (strncmp(url, "exec:", 5) == 0) {
		*len = 4;
		return url;
	}
	const char *sep = strstr(url, "://");
	if (sep) {
		*len = (size_t)(sep - url);
		return url;
	}
	if (strchr(url, '=')) {
		*len = strlen("postgres");
		return "postgres";
	}
	*len = strlen(url);
	return url;
}

static bool scheme_is(const char *url, const char *scheme)
{
	size_t n;
	const char *s = scheme_of(url, &n);
	if (n == strlen(scheme) && strncmp(s, scheme, n) == 0)
		return true;
	/* libpq takes both spellings */
	return strcmp(scheme, "postgres") == 0 && n == strlen("postgresql") &&
	       strncmp(s, "postgresql", n) == 0;
}

const fb_lease_ops *fb_registry_lease(const fb_registry *r, const char *url)
{
	if (!url || !*url)
		url = "inproc";
	for (size_t i = 0; i < r->nlease; i++)
		if (scheme_is(url, r->lease[i]->scheme))
			return r->lease[i];
	return NULL;
}

const fb_store_ops *fb_registry_store(const fb_registry *r, const char *url)
{
	if (!url || !*url)
		url = "inproc";
	for (size_t i = 0; i < r->nstore; i++)
		if (scheme_is(url, r->store[i]->scheme))
			return r->store[i];
	return NULL;
}

const char *fb_registry_refused(const fb_registry *r, const char *url, bool lease)
{
	for (size_t i = 0; i < r->nrefused; i++)
		if (r->refused[i].lease == lease && r->refused[i].scheme &&
		    scheme_is(url && *url ? url : "inproc", r->refused[i].scheme))
			return r->refused[i].why;
	return NULL;
}

const fb_lease_ops *fb_lease_engine(const char *url)
{
	return fb_registry_lease(fb_registry_builtin(), url);
}

const fb_store_ops *fb_store_engine(const char *url)
{
	return fb_registry_store(fb_registry_builtin(), url);
}

const char *fb_lease_schemes(void)
{
	fb_registry_builtin();
	return lease_urls;
}

const char *fb_store_schemes(void)
{
	fb_registry_builtin();
	return store_urls;
}

const char *fb_lease_engines_help(void)
{
	fb_registry_builtin();
	return lease_help;
}

const char *fb_store_engines_help(void)
{
	fb_registry_builtin();
	return store_help;
}
