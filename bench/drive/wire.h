/*
 * Issue 24: an engine URL that asks for ?proxy=1 is relayed through
 * fencebench's own TCP proxy (inject/proxy.h), one per host, so the
 * injector's partition and wire-delay faults strike the real wire between
 * the workers and that engine. Any engine whose URL is
 * scheme://[userinfo@]host[:port][,host[:port]...][/path][?query] can be.
 */
#ifndef FB_WIRE_H
#define FB_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "proxy.h"

#define FB_WIRE_PROXIES 32 /* the lease's and the store's hosts together */

typedef struct fb_wire {
	fb_proxy *px[FB_WIRE_PROXIES];
	const char *side[FB_WIRE_PROXIES]; /* "--lease", "--store" */
	char upstream[FB_WIRE_PROXIES][280];
	int n;
} fb_wire;

/*
 * When url asks for a proxy: start one for each of its hosts (appended to
 * w) and write into out the URL pointed at them, proxy=1 left out.
 * Otherwise copy url into out. FB_EINVAL (a URL that is not
 * scheme://host..., or too many hosts) or FB_ESYS, the reason in err.
 */
fb_err fb_wire_url(fb_wire *w, const char *side, const char *url, char *out, size_t outlen,
                   char *err, size_t errlen);

/* Stop every proxy, saying on stderr which one could not keep up: sent
 * something half a TTL (ttl_ns) after it was due, or filled a buffer that
 * no fault held (the far side was slower than the near one). */
void fb_wire_close(fb_wire *w, uint64_t ttl_ns);

#endif
