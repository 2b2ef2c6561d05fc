/*
 * The wire between fencebench and a lease service or a store, made
 * faultable (issue 24, item 4): a TCP relay on 127.0.0.1 that an engine's
 * URL is pointed at (?proxy=1), one relay thread per upstream address, and
 * the network's faults on the real path instead of in the client:
 *
 *   partition: one direction of a connection (or both) carries nothing for
 *              D; the bytes are held, as TCP holds and resends them, and
 *              come out when it heals, in order
 *   delay:     every byte that crosses in the next D arrives D late (the
 *              article's 90-second packet)
 *   reset:     the connection is torn down with an RST on both sides
 *
 * Each direction of each connection buffers at most `cap` bytes; a full
 * buffer stops the relay reading from that side (TCP's own back-pressure,
 * so a held direction never grows without bound). A relay that cannot keep
 * up says so in its stats: bytes that went out more than FB_PROXY_LATE_NS
 * after they were due, and the worst lateness.
 */
#ifndef FB_PROXY_H
#define FB_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* Directions, as a bit set. */
#define FB_PROXY_TO_SERVER 1u
#define FB_PROXY_TO_CLIENT 2u
#define FB_PROXY_BOTH      3u

#define FB_PROXY_CAP_DEFAULT (1u << 20) /* bytes per direction of a connection */
#define FB_PROXY_LATE_NS     UINT64_C(10000000)

typedef enum fb_proxy_fault {
	FB_PROXY_PARTITION,
	FB_PROXY_DELAY,
	FB_PROXY_RESET,
} fb_proxy_fault;

typedef struct fb_proxy_stats {
	uint64_t conns;          /* connections accepted */
	uint64_t refused;        /* ... that the upstream refused, or past the table's room */
	uint64_t bytes[2];       /* relayed to the server, to the client */
	uint64_t faults[3];      /* by fb_proxy_fault, taken */
	uint64_t full;           /* times a direction's buffer filled (reading stopped) */
	uint64_t full_unfaulted; /* ... while no fault held it: the far side is slow */
	uint64_t late;           /* chunks sent more than FB_PROXY_LATE_NS after due */
	uint64_t worst_late_ns;  /* the worst of them */
} fb_proxy_stats;

typedef struct fb_proxy fb_proxy;

/*
 * Listen on 127.0.0.1 (an ephemeral port, into *port) and relay every
 * connection to host:upstream_port (a name or an address; resolved once,
 * here). cap: bytes buffered per direction of a connection (0: the
 * default). FB_ESYS with "call: reason" in err when it cannot.
 */
fb_err fb_proxy_start(const char *host, int upstream_port, size_t cap, fb_proxy **out, int *port,
                      char *err, size_t errlen);

/*
 * Strike a fault on one live connection: the one accepted `seq`-th (from
 * 0) when exact, else one drawn by `pick` among those that carried bytes
 * most recently (within 100 ms of the last traffic), else among all.
 * dirs: FB_PROXY_TO_SERVER | FB_PROXY_TO_CLIENT; ns: its length (reset:
 * unused). The connection's accept number, or -1 when none is live.
 * Any thread.
 */
int64_t fb_proxy_strike(fb_proxy *p, fb_proxy_fault f, unsigned dirs, uint64_t ns, uint64_t pick,
                        bool exact, uint64_t seq);

/* What it did so far (any thread). */
void fb_proxy_stats_get(fb_proxy *p, fb_proxy_stats *st);

/* Heal every fault (held bytes go out at once), stop the thread, close
 * every connection, free. *st gets the totals when not NULL. */
void fb_proxy_stop(fb_proxy *p, fb_proxy_stats *st);

#endif
