/*
 * What the engines share (backend.h's helpers): every engine may call
 * these, and this file includes no engine (the registry, registry/, is the
 * one that knows them all).
 */
#include "backend.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *const fb_engine_op_names[FB_EOPS] = {"acquire", "release", "is_held", "read", "write"};

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

bool fb_engine_ride_out(uint64_t *down_since, const fb_engine_config *cfg, const char *member,
                        const char *last, char *why, size_t len)
{
	uint64_t now = fb_clock_now(fb_clock_monotonic());
	if (!*down_since)
		*down_since = now;
	if (now - *down_since <= fb_engine_timeout(cfg))
		return true;
	char secs[32];
	fb_engine_seconds(secs, sizeof secs, fb_engine_timeout(cfg));
	snprintf(why, len, "no %s answered for %s s; the last: %.300s", member, secs, last);
	return false;
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
