/*
 * The engines' schemes (schemes.h): a table of names and texts, no engine.
 * Each row repeats its engine's ops vector (scheme, url, help and the
 * flags); test_backend fails when one drifts from the registry.
 */
#include "schemes.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

const fb_scheme fb_lease_scheme_table[] = {
        {"inproc", "inproc", "inproc (default)", false, false, false},
        {"redis", "redis://HOST:PORT/DB",
         "redis://[:PASS@]HOST:PORT/DB (with ?fence=incr for the two-step SET-then-INCR "
         "fence; or the master of Sentinels HOST:PORT,HOST:PORT,.../DB?sentinel=NAME, "
         "followed across a failover)",
         true, true, false},
        {"zk", "zk://HOST:PORT[,...][/PREFIX]", "zk://HOST:PORT[,...][/PREFIX]", true, false,
         false},
        {"etcd", "etcd://HOST:PORT[,...][/PREFIX]", "etcd://HOST:PORT[,...][/PREFIX]", true, false,
         false},
        {"redlock", "redlock://HOST:PORT,HOST:PORT,HOST:PORT[,...]",
         "redlock://HOST:PORT,HOST:PORT,HOST:PORT[,...][?fence=none|incr][&faketime=N:FILE]", true,
         true, true},
        {"exec", "exec:COMMAND (an adapter to your own lock service)",
         "exec:COMMAND: your own lock service, through an adapter program that speaks the "
         "lease side of the protocol (README.md, Bring your own lock service; --ttl in "
         "whole milliseconds)",
         true, false, false},
};
const size_t fb_lease_scheme_count = sizeof fb_lease_scheme_table / sizeof fb_lease_scheme_table[0];

const fb_scheme fb_store_scheme_table[] = {
        {"inproc", "inproc", "inproc (default)", false, false, false},
        {"redis", "redis://HOST:PORT/DB",
         "redis://HOST:PORT/DB (or the master of Sentinels "
         "HOST:PORT,HOST:PORT,.../DB?sentinel=NAME, followed across a failover)",
         true, false, false},
        {"postgres", "postgres://USER@HOST:PORT/DB or a libpq conninfo",
         "postgres://USER@HOST:PORT/DB or a libpq conninfo (?sql=FILE, or sql=FILE in a "
         "conninfo: your own statements on your own table as the fenced column; see YOUR "
         "OWN SQL)",
         true, false, false},
        {"exec", "exec:COMMAND (an adapter to your own store)",
         "exec:COMMAND: your own store as the fenced column (beside in-process controls), "
         "through an adapter program that speaks JSON lines on stdin and stdout (the "
         "protocol: fencebench(1), ADAPTER PROTOCOL, or README.md, Bring your own store)",
         true, false, false},
};
const size_t fb_store_scheme_count = sizeof fb_store_scheme_table / sizeof fb_store_scheme_table[0];

/* The scheme of a URL and its length (schemes.h, fb_scheme_is). */
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

bool fb_scheme_is(const char *url, const char *scheme)
{
	size_t n;
	const char *s = scheme_of(url, &n);
	if (n == strlen(scheme) && strncmp(s, scheme, n) == 0)
		return true;
	/* libpq takes both spellings */
	return strcmp(scheme, "postgres") == 0 && n == strlen("postgresql") &&
	       strncmp(s, "postgresql", n) == 0;
}

static const fb_scheme *find(const fb_scheme *t, size_t n, const char *url)
{
	if (!url || !*url)
		url = "inproc";
	for (size_t i = 0; i < n; i++)
		if (fb_scheme_is(url, t[i].scheme))
			return &t[i];
	return NULL;
}

const fb_scheme *fb_lease_scheme(const char *url)
{
	return find(fb_lease_scheme_table, fb_lease_scheme_count, url);
}

const fb_scheme *fb_store_scheme(const char *url)
{
	return find(fb_store_scheme_table, fb_store_scheme_count, url);
}

static pthread_once_t lists_once = PTHREAD_ONCE_INIT;
static char lease_urls[1024], store_urls[1024], lease_help[2048], store_help[2048];

/* The rows' url (or help) joined by sep, the last by last_sep. */
static void join(char *buf, size_t len, const fb_scheme *t, size_t n, bool help, const char *sep,
                 const char *last_sep)
{
	size_t o = 0;
	buf[0] = 0;
	for (size_t i = 0; i < n && o < len; i++) {
		int k = snprintf(buf + o, len - o, "%s%s",
		                 i == 0       ? ""
		                 : i + 1 == n ? last_sep
		                              : sep,
		                 help ? t[i].help : t[i].url);
		o += k > 0 ? (size_t)k : 0;
	}
}

static void make_lists(void)
{
	join(lease_urls, sizeof lease_urls, fb_lease_scheme_table, fb_lease_scheme_count, false,
	     ", ", ", ");
	join(lease_help, sizeof lease_help, fb_lease_scheme_table, fb_lease_scheme_count, true,
	     ", ", ", or ");
	join(store_urls, sizeof store_urls, fb_store_scheme_table, fb_store_scheme_count, false,
	     ", ", ", ");
	join(store_help, sizeof store_help, fb_store_scheme_table, fb_store_scheme_count, true,
	     ", ", ", or ");
}

const char *fb_lease_schemes(void)
{
	pthread_once(&lists_once, make_lists);
	return lease_urls;
}

const char *fb_store_schemes(void)
{
	pthread_once(&lists_once, make_lists);
	return store_urls;
}

const char *fb_lease_engines_help(void)
{
	pthread_once(&lists_once, make_lists);
	return lease_help;
}

const char *fb_store_engines_help(void)
{
	pthread_once(&lists_once, make_lists);
	return store_help;
}
