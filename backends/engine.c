#include "backend.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "etcd.h"
#include "exec.h"
#include "inproc.h"
#include "postgres.h"
#include "redis.h"
#include "redlock.h"
#include "zk.h"

const char *const fb_engine_op_names[FB_EOPS] = {"acquire", "release", "is_held", "read", "write"};

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

bool fb_say(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return false;
}

const char *fb_store_column(const fb_store_ops *ops, void *eng, fb_discipline d)
{
	const char *name = ops && eng && ops->column ? ops->column(eng, d) : NULL;
	return name ? name : fb_discipline_name(d);
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

/*
 * Hide a password: a URL's userinfo "user:secret@" becomes "user:***@" (the
 * userinfo ends at the last '@', since a careless password may hold '/',
 * '?' or '#' unescaped: better to hide too much), and any "password=..." in
 * its query or in a conninfo becomes "password=***" (a conninfo value may
 * be 'quoted'). Everything else is copied; the result is always terminated.
 */
void fb_url_redact(const char *url, char *buf, size_t len)
{
	if (!len)
		return;
	if (!url)
		url = "";
	size_t o = 0;
#define PUT(c)                                                                                     \
	do {                                                                                       \
		if (o + 1 < len)                                                                   \
			buf[o++] = (c);                                                            \
	} while (0)
#define PUTS(s)                                                                                    \
	do {                                                                                       \
		for (const char *p_ = (s); *p_; p_++)                                              \
			PUT(*p_);                                                                  \
	} while (0)
	const char *sep = strstr(url, "://");
	const char *at = sep ? strrchr(sep + 3, '@') : NULL;
	const char *colon = at ? memchr(sep + 3, ':', (size_t)(at - (sep + 3))) : NULL;
	/* redis://SECRET@host: a Redis userinfo without ':' is a password
	 * alone to some clients (Redlock's nodes are Redis); hide all of it
	 * (a PostgreSQL user stays) */
	const char *user = at && !colon &&
	                                   (strncmp(url, "redis://", 8) == 0 ||
	                                    strncmp(url, "redlock://", 10) == 0)
	                           ? sep + 3
	                           : NULL;
	const char *p = url;
	while (*p) {
		if (user && p == user) {
			PUTS("***@");
			p = at + 1;
			continue;
		}
		if (colon && p == colon + 1) {
			PUTS("***@"); /* past the '@': an empty password must not loop */
			p = at + 1;
			continue;
		}
		/* password=VALUE: a conninfo word, or a URL query parameter */
		bool starts =
		        p == url || isspace((unsigned char)p[-1]) || p[-1] == '?' || p[-1] == '&';
		if (starts && strncmp(p, "password", 8) == 0) {
			const char *q = p + 8;
			while (*q == ' ')
				q++;
			if (*q == '=') {
				PUTS("password=***");
				q++;
				while (*q == ' ')
					q++;
				if (*q == '\'') {
					for (q++; *q && *q != '\''; q++)
						if (*q == '\\' && q[1])
							q++;
					if (*q)
						q++;
				} else {
					while (*q && !isspace((unsigned char)*q) && *q != '&')
						q++;
				}
				p = q;
				continue;
			}
		}
		PUT(*p);
		p++;
	}
	buf[o] = 0;
#undef PUT
#undef PUTS
}

uint64_t fb_engine_timeout(const fb_engine_config *cfg)
{
	return cfg->timeout_ns ? cfg->timeout_ns : UINT64_C(10) * 1000000000;
}

void fb_engine_seconds(char *buf, size_t len, uint64_t ns)
{
	snprintf(buf, len, "%.3f", (double)ns / 1e9);
	char *end = buf + strlen(buf);
	while (end > buf && end[-1] == '0')
		*--end = 0;
	if (end > buf && end[-1] == '.')
		end[-1] = 0;
}

void fb_engine_err(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
}

void fb_engine_failv(char *buf, size_t len, const char *url, const char *fmt, va_list ap)
{
	int n = snprintf(buf, len, "%s: ", url);
	if (n >= 0 && (size_t)n < len)
		vsnprintf(buf + n, len - (size_t)n, fmt, ap);
}

const char *fb_engine_lease_problem(const fb_engine_config *cfg, bool service_fences)
{
	if (!cfg->keys)
		return "the engine needs at least one key";
	if (!cfg->ttl_ns)
		return "the lease TTL must be positive";
	if (service_fences && cfg->fence != FB_FENCE_GLOBAL)
		return "--fence per-key does not apply: the service mints the fences, one "
		       "counter for all its keys";
	if (service_fences && cfg->first_fence != 1)
		return "--first-fence does not apply: the service mints the fences, and no "
		       "client sets them";
	if (cfg->first_fence == 0 || cfg->first_fence > FB_FENCE_MAX)
		return "the first fence must be in 1..2^47-1";
	return NULL;
}
