#include "backend.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "exec.h"
#include "inproc.h"
#include "postgres.h"
#include "redis.h"

const char *const fb_engine_op_names[FB_EOPS] = {"acquire", "release", "is_held", "read", "write"};

static const fb_lease_ops *const lease_engines[] = {&fb_inproc_lease_ops, &fb_redis_lease_ops};
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
	return "inproc, redis://HOST:PORT/DB";
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
	 * alone to some clients; hide all of it (a PostgreSQL user stays) */
	const char *user = at && !colon && strncmp(url, "redis://", 8) == 0 ? sep + 3 : NULL;
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
