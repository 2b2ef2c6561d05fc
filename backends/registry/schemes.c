/*
 * The engines' schemes (schemes.h): a table of names and texts, no engine.
 * The texts are the engines' own (scheme_texts.h, which their ops vectors
 * use too); the names and flags repeat their ops vectors, and test_backend
 * fails when one drifts from the registry.
 */
#include "schemes.h"

#include "scheme_texts.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

const fb_scheme fb_lease_scheme_table[] = {
        {"inproc", FB_INPROC_URL, FB_INPROC_HELP, false, false, false},
        {"redis", FB_REDIS_URL, FB_REDIS_LEASE_HELP, true, true, false},
        {"zk", FB_ZK_URL, FB_ZK_URL, true, false, false},
        {"etcd", FB_ETCD_URL, FB_ETCD_URL, true, false, false},
        {"redlock", FB_REDLOCK_URL, FB_REDLOCK_HELP, true, true, true},
        {"exec", FB_EXEC_LEASE_URL, FB_EXEC_LEASE_HELP, true, false, false},
};
const size_t fb_lease_scheme_count = sizeof fb_lease_scheme_table / sizeof fb_lease_scheme_table[0];

const fb_scheme fb_store_scheme_table[] = {
        {"inproc", FB_INPROC_URL, FB_INPROC_HELP, false, false, false},
        {"redis", FB_REDIS_URL, FB_REDIS_STORE_HELP, true, false, false},
        {"postgres", FB_POSTGRES_URL, FB_POSTGRES_HELP, true, false, false},
        {"exec", FB_EXEC_STORE_URL, FB_EXEC_STORE_HELP, true, false, false},
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
