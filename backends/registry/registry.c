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
#include "url.h"
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

static void register_builtin(void)
{
	for (size_t i = 0; i < COUNT(lease_engines); i++)
		fb_registry_add_lease(&builtin, lease_engines[i]);
	for (size_t i = 0; i < COUNT(store_engines); i++)
		fb_registry_add_store(&builtin, store_engines[i]);
}

const fb_registry *fb_registry_builtin(void)
{
	pthread_once(&builtin_once, register_builtin);
	return &builtin;
}

const fb_lease_ops *fb_registry_lease(const fb_registry *r, const char *url)
{
	if (!url || !*url)
		url = "inproc";
	for (size_t i = 0; i < r->nlease; i++)
		if (fb_scheme_is(url, r->lease[i]->scheme))
			return r->lease[i];
	return NULL;
}

const fb_store_ops *fb_registry_store(const fb_registry *r, const char *url)
{
	if (!url || !*url)
		url = "inproc";
	for (size_t i = 0; i < r->nstore; i++)
		if (fb_scheme_is(url, r->store[i]->scheme))
			return r->store[i];
	return NULL;
}

const char *fb_registry_refused(const fb_registry *r, const char *url, bool lease)
{
	for (size_t i = 0; i < r->nrefused; i++)
		if (r->refused[i].lease == lease && r->refused[i].scheme &&
		    fb_scheme_is(url && *url ? url : "inproc", r->refused[i].scheme))
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

/*
 * An engine URL judged before the run starts, as input: its engine known
 * and registered, and the URL one its engine would take (its check_url,
 * on the URL without proxy=1, which is the run's to take off). NULL, or
 * why not, for "--OPT: 'URL' WHY".
 */
const char *fb_registry_judge(const fb_registry *r, const char *url, bool lease, char *why,
                              size_t len)
{
	const void *engine = lease ? (const void *)fb_registry_lease(r, url)
	                           : (const void *)fb_registry_store(r, url);
	if (!engine) {
		/* its engine's ops vector fell short at registration */
		const char *refused = fb_registry_refused(r, url, lease);
		snprintf(why, len, "is not an engine%s%s; valid: %s", refused ? ": " : "",
		         refused ? refused : "", lease ? fb_lease_schemes() : fb_store_schemes());
		return why;
	}
	bool (*check)(const char *, const char **) =
	        lease ? fb_registry_lease(r, url)->check_url : fb_registry_store(r, url)->check_url;
	if (!check || !url)
		return NULL;
	char bare[2048];
	if (fb_url_proxied(url) && !fb_url_without_proxy(url, bare, sizeof bare)) {
		snprintf(why, len, "is too long");
		return why;
	}
	const char *reason = NULL;
	if (check(fb_url_proxied(url) ? bare : url, &reason))
		return NULL;
	snprintf(why, len, "is malformed: %s", reason);
	return why;
}

bool fb_registry_check_urls(const char *lease_url, const char *store_url)
{
	const fb_registry *r = fb_registry_builtin();
	for (int lease = 1; lease >= 0; lease--) {
		const char *url = lease ? lease_url : store_url;
		char why[320], red[256];
		if (!fb_registry_judge(r, url, lease, why, sizeof why))
			continue;
		fb_url_redact(url ? url : "inproc", red, sizeof red);
		fprintf(stderr, "fencebench: --%s: '%s' %s\n", lease ? "lease" : "store", red, why);
		return false;
	}
	return true;
}
