#include "url.h"

#include <stdio.h>
#include <string.h>

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool fb_url_decode(const char *s, const char *e, char *out, size_t len)
{
	size_t o = 0;
	for (; s < e; s++) {
		int c = (unsigned char)*s;
		if (c == '%') {
			if (e - s < 3 || hexval(s[1]) < 0 || hexval(s[2]) < 0)
				return false;
			c = hexval(s[1]) * 16 + hexval(s[2]);
			if (!c)
				return false;
			s += 2;
		}
		if (o + 1 >= len)
			return false;
		out[o++] = (char)c;
	}
	out[o] = 0;
	return true;
}

bool fb_url_number(const char *s, const char *e, long lo, long hi, long *out)
{
	if (s == e || e - s > 10)
		return false;
	long v = 0;
	for (; s < e; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (*s - '0');
	}
	if (v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

bool fb_url_is(const char *s, size_t n, const char *word)
{
	return n == strlen(word) && strncmp(s, word, n) == 0;
}

/* One host[:port] or [v6][:port] in [hp, end). */
static bool parse_host(const char *hp, const char *end, int default_port, fb_url_host *h,
                       const char **why)
{
	const char *host_end, *port = NULL;
	if (*hp == '[') {
		host_end = memchr(hp, ']', (size_t)(end - hp));
		if (!host_end || host_end == hp + 1) {
			*why = "an IPv6 host needs [address]";
			return false;
		}
		if (host_end + 1 < end) {
			if (host_end[1] != ':') {
				*why = "junk after the IPv6 address";
				return false;
			}
			port = host_end + 2;
		}
		hp++;
	} else {
		host_end = memchr(hp, ':', (size_t)(end - hp));
		if (host_end)
			port = host_end + 1;
		else
			host_end = end;
	}
	if (host_end == hp || (size_t)(host_end - hp) >= sizeof h->host) {
		*why = "no host (or a host too long)";
		return false;
	}
	for (const char *p = hp; p < host_end; p++)
		if (!(strchr("-._:%", *p) || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z'))) {
			*why = "the host has a character a host name cannot have";
			return false;
		}
	memcpy(h->host, hp, (size_t)(host_end - hp));
	h->host[host_end - hp] = 0;
	h->port = default_port;
	long v;
	if (port) {
		if (!fb_url_number(port, end, 1, 65535, &v)) {
			*why = "the port must be a number in 1..65535";
			return false;
		}
		h->port = (int)v;
	}
	return true;
}

bool fb_url_parse(const char *url, const char *scheme, int default_port, int max_hosts, fb_url *u,
                  const char **why)
{
	memset(u, 0, sizeof *u);
	size_t sl = strlen(scheme);
	if (!url || strncmp(url, scheme, sl) != 0 || strncmp(url + sl, "://", 3) != 0) {
		*why = "wrong scheme";
		return false;
	}
	const char *auth = url + sl + 3;
	const char *end = auth + strcspn(auth, "/?#");
	if (strchr(url, '#')) {
		*why = "a fragment (#...) means nothing here";
		return false;
	}
	/* the userinfo ends at the last '@': a careless password may hold one */
	const char *at = NULL;
	for (const char *p = auth; p < end; p++)
		if (*p == '@')
			at = p;
	const char *hp = auth;
	if (at) {
		const char *colon = memchr(auth, ':', (size_t)(at - auth));
		if (!colon) {
			*why = "user info needs a password: [user]:password@";
			return false;
		}
		if (!fb_url_decode(auth, colon, u->user, sizeof u->user) ||
		    !fb_url_decode(colon + 1, at, u->pass, sizeof u->pass)) {
			*why = "user or password malformed (bad %XX escape, or too long)";
			return false;
		}
		if (!u->pass[0]) {
			*why = "empty password";
			return false;
		}
		u->has_pass = true;
		hp = at + 1;
	}
	for (;;) {
		const char *next = memchr(hp, ',', (size_t)(end - hp));
		const char *he = next ? next : end;
		if (u->hosts == max_hosts || u->hosts == FB_URL_HOSTS) {
			*why = max_hosts == 1 ? "one host only" : "too many hosts";
			return false;
		}
		if (!parse_host(hp, he, default_port, &u->host[u->hosts], why))
			return false;
		u->hosts++;
		if (!next)
			break;
		hp = next + 1;
	}
	const char *p = end;
	if (*p == '/') {
		u->path = p;
		u->path_len = strcspn(p, "?");
		p += u->path_len;
	}
	if (*p == '?')
		u->query = p + 1;
	return true;
}

bool fb_url_query_once(const char *query, const char *const *lists, const char **why)
{
	const char *at = query, *name, *val;
	size_t n, vn;
	while (fb_url_option(&at, &name, &n, &val, &vn)) {
		bool list = false;
		for (int i = 0; lists && lists[i]; i++)
			list |= fb_url_is(name, n, lists[i]);
		if (list)
			continue;
		const char *at2 = at, *name2, *val2;
		size_t n2, vn2;
		while (fb_url_option(&at2, &name2, &n2, &val2, &vn2))
			if (n2 == n && !memcmp(name, name2, n)) {
				/* the last would win silently, as with a repeated option */
				*why = "a query parameter is given twice (give each once)";
				return false;
			}
	}
	return true;
}

bool fb_url_option(const char **at, const char **name, size_t *name_len, const char **value,
                   size_t *value_len)
{
	const char *p = *at;
	while (p && *p == '&')
		p++;
	if (!p || !*p)
		return false;
	size_t n = strcspn(p, "&");
	const char *eq = memchr(p, '=', n);
	*name = p;
	*name_len = eq ? (size_t)(eq - p) : n;
	*value = eq ? eq + 1 : NULL;
	*value_len = eq ? n - (size_t)(eq + 1 - p) : 0;
	*at = p + n;
	return true;
}

bool fb_url_proxied(const char *url)
{
	const char *sep = url ? strstr(url, "://") : NULL;
	const char *q = sep ? strchr(sep, '?') : NULL;
	if (!q)
		return false;
	const char *at = q + 1, *name, *val;
	size_t n, vn;
	while (fb_url_option(&at, &name, &n, &val, &vn))
		if (fb_url_is(name, n, "proxy") && val && fb_url_is(val, vn, "1"))
			return true;
	return false;
}

bool fb_url_without_proxy(const char *url, char *out, size_t len)
{
	const char *sep = strstr(url, "://");
	const char *q = sep ? strchr(sep, '?') : NULL;
	size_t o = (size_t)snprintf(out, len, "%.*s", q ? (int)(q - url) : (int)strlen(url), url);
	const char *at = q ? q + 1 : NULL, *name, *val;
	size_t n, vn;
	bool first = true;
	while (at && o < len && fb_url_option(&at, &name, &n, &val, &vn)) {
		if (fb_url_is(name, n, "proxy") && val && fb_url_is(val, vn, "1"))
			continue;
		o += (size_t)snprintf(out + o, len - o, "%c%.*s", first ? '?' : '&',
		                      (int)(at - name), name);
		first = false;
	}
	return o < len;
}
