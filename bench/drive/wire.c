#define _GNU_SOURCE
#include "wire.h"

#include <stdio.h>
#include <string.h>

#include "url.h"

/* The engines' default ports: a host without one is relayed to these. */
static int default_port(const char *scheme, size_t n)
{
	static const struct {
		const char *scheme;
		int port;
	} ports[] = {{"redis", 6379}, {"redlock", 6379},  {"etcd", 2379},
	             {"zk", 2181},    {"postgres", 5432}, {"postgresql", 5432}};
	for (size_t i = 0; i < sizeof ports / sizeof ports[0]; i++)
		if (fb_url_is(scheme, n, ports[i].scheme))
			return ports[i].port;
	return 0;
}

fb_err fb_wire_url(fb_wire *w, const char *side, const char *url, char *out, size_t outlen,
                   char *err, size_t errlen)
{
	if (!url || !fb_url_proxied(url)) {
		snprintf(out, outlen, "%s", url ? url : "");
		return FB_OK;
	}
	const char *sep = strstr(url, "://");
	size_t sn = (size_t)(sep - url);
	char scheme[32];
	int dport = sn < sizeof scheme ? default_port(url, sn) : 0;
	if (!dport) {
		snprintf(err, errlen,
		         "proxy=1: only a TCP engine's URL can be relayed (redis, redlock, etcd, "
		         "zk, postgres)");
		return FB_EINVAL;
	}
	memcpy(scheme, url, sn);
	scheme[sn] = 0;
	fb_url u;
	const char *why = NULL;
	if (!fb_url_parse(url, scheme, dport, FB_URL_HOSTS, &u, &why)) {
		snprintf(err, errlen, "proxy=1: the URL is not scheme://host[:port]...: %s", why);
		return FB_EINVAL;
	}
	if (w->n + u.hosts > FB_WIRE_PROXIES) {
		snprintf(err, errlen, "proxy=1: at most %d hosts are relayed in all",
		         FB_WIRE_PROXIES);
		return FB_EINVAL;
	}
	/* scheme://userinfo@ as given, its escapes untouched */
	const char *auth = sep + 3;
	const char *hosts_end = auth + strcspn(auth, "/?");
	const char *hp = auth;
	for (const char *p = auth; p < hosts_end; p++)
		if (*p == '@')
			hp = p + 1;
	size_t o = (size_t)snprintf(out, outlen, "%.*s", (int)(hp - url), url);
	for (int i = 0; i < u.hosts && o < outlen; i++) {
		int port = 0;
		fb_err r = fb_proxy_start(u.host[i].host, u.host[i].port, 0, &w->px[w->n], &port,
		                          err, errlen);
		if (r)
			return r;
		w->side[w->n] = side;
		snprintf(w->upstream[w->n], sizeof w->upstream[w->n], "%s:%d", u.host[i].host,
		         u.host[i].port);
		w->n++;
		o += (size_t)snprintf(out + o, outlen - o, "%s127.0.0.1:%d", i ? "," : "", port);
	}
	if (u.path_len && o < outlen)
		o += (size_t)snprintf(out + o, outlen - o, "%.*s", (int)u.path_len, u.path);
	/* the query without proxy=1 */
	const char *at = u.query, *name, *val;
	size_t n, vn;
	bool first = true;
	while (o < outlen && fb_url_option(&at, &name, &n, &val, &vn)) {
		if (fb_url_is(name, n, "proxy") && val && fb_url_is(val, vn, "1"))
			continue;
		o += (size_t)snprintf(out + o, outlen - o, "%c%.*s", first ? '?' : '&',
		                      (int)(at - name), name);
		first = false;
	}
	if (o >= outlen) {
		snprintf(err, errlen, "proxy=1: the URL is too long");
		return FB_EINVAL;
	}
	return FB_OK;
}

void fb_wire_close(fb_wire *w, uint64_t ttl_ns)
{
	for (int i = 0; i < w->n; i++) {
		fb_proxy_stats st;
		fb_proxy_stop(w->px[i], &st);
		/* late by half a TTL: the relay alone could have let a lease run
		 * out, a fault nobody injected */
		if (st.worst_late_ns >= ttl_ns / 2 || st.full_unfaulted)
			fprintf(stderr,
			        "fencebench: %s: the proxy to %s could not keep up: %llu sends "
			        "went "
			        "out more than %llu ms after they were due (worst %.1f ms); its "
			        "buffers filled %llu times with no fault holding them\n",
			        w->side[i], w->upstream[i], (unsigned long long)st.late,
			        (unsigned long long)(FB_PROXY_LATE_NS / 1000000),
			        (double)st.worst_late_ns / 1e6,
			        (unsigned long long)st.full_unfaulted);
		w->px[i] = NULL;
	}
	w->n = 0;
}
