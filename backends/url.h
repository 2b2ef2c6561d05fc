/*
 * Engine URLs, parsed once for every engine:
 *
 *   scheme://[[user]:password@]host[:port][,host[:port]...][/path][?query]
 *
 * with %XX escapes in user and password, IPv6 hosts in brackets, and one
 * or more hosts (a ZooKeeper ensemble, etcd members, Redlock's nodes). The
 * parser never quotes a password in its reasons; fb_url_redact (backend.h)
 * is how a URL is shown.
 */
#ifndef FB_URL_H
#define FB_URL_H

#include <stdbool.h>
#include <stddef.h>

#define FB_URL_HOSTS 16

typedef struct fb_url_host {
	char host[256];
	int port;
} fb_url_host;

typedef struct fb_url {
	char user[128];
	char pass[256];
	bool has_pass; /* a userinfo "[user]:password@" was given */
	fb_url_host host[FB_URL_HOSTS];
	int hosts;
	/* [path, path + path_len): from the '/' after the hosts up to '?'
	 * (path_len 0: none); query: after '?', NULL when there is none. Both
	 * point into the parsed URL. */
	const char *path;
	size_t path_len;
	const char *query;
} fb_url;

/*
 * Parse url, which must begin with "<scheme>://", taking at most max_hosts
 * hosts (each without a port gets default_port). False with *why set
 * (a phrase, never the password) if it is malformed; a fragment (#...) is
 * refused.
 */
bool fb_url_parse(const char *url, const char *scheme, int default_port, int max_hosts, fb_url *u,
                  const char **why);

/* Digits only, [s, e), in [lo, hi]. */
bool fb_url_number(const char *s, const char *e, long lo, long hi, long *out);

/* Copy [s, e) into out with %XX decoded; false if it does not fit, an
 * escape is malformed or decodes to NUL. */
bool fb_url_decode(const char *s, const char *e, char *out, size_t len);

/*
 * The query's next "name=value" (or bare "name") from *at (start with
 * u->query), its parts as [name, name + name_len) and [value, value +
 * value_len) (value NULL when there is no '='); false at the end.
 */
bool fb_url_option(const char **at, const char **name, size_t *name_len, const char **value,
                   size_t *value_len);

/* False with *why set if a query ("a=1&b=2", NULL: none) names one
 * parameter twice, but for those in lists (NULL-terminated, or NULL),
 * which may repeat: the last of two would win silently. Every engine whose
 * URL takes a query asks it. */
bool fb_url_query_once(const char *query, const char *const *lists, const char **why);

/* Does the URL ask to be relayed through fencebench's own TCP proxy
 * (issue 24: proxy=1 among its query options)? */
bool fb_url_proxied(const char *url);

/* The URL as its engine reads it once relayed: url less its proxy=1
 * option, in out. False when it does not fit. */
bool fb_url_without_proxy(const char *url, char *out, size_t len);

/* Does [s, s + n) spell word exactly? */
bool fb_url_is(const char *s, size_t n, const char *word);

#endif
