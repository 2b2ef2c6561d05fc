/*
 * The engine registry: the one file that includes every engine, on its own
 * floor above them (backends/registry/: no engine can include registry.h,
 * the build's include paths see to it).
 */
#include "registry.h"

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

const fb_lease_ops *fb_lease_engine(const char *url)
{
	if (!url || !*url)
		return &fb_inproc_lease_ops;
	for (size_t i = 0; i < COUNT(lease_engines); i++)
		if (scheme_is(url, lease_engines[i]->scheme))
			return lease_engines[i];
	return NULL;
}

const fb_store_ops *fb_store_engine(const char *url)
{
	if (!url || !*url)
		return &fb_inproc_store_ops;
	for (size_t i = 0; i < COUNT(store_engines); i++)
		if (scheme_is(url, store_engines[i]->scheme))
			return store_engines[i];
	return NULL;
}

const char *fb_lease_schemes(void)
{
	return "inproc, redis://HOST:PORT/DB, zk://HOST:PORT[,...][/PREFIX], "
	       "etcd://HOST:PORT[,...][/PREFIX], redlock://HOST:PORT,HOST:PORT,HOST:PORT[,...], "
	       "exec:COMMAND (an adapter to your own lock service)";
}

const char *fb_store_schemes(void)
{
	return "inproc, redis://HOST:PORT/DB, postgres://USER@HOST:PORT/DB or a libpq conninfo, "
	       "exec:COMMAND (an adapter to your own store)";
}
