/*
 * The adapter engine: --store exec:COMMAND. The fenced column is the
 * user's own store, reached through COMMAND, a program in any language that
 * speaks the adapter protocol (exec_proto.h; the README specifies it) on its
 * standard input and output. The write-fenced and unfenced columns are the
 * in-process stores, driven by the same workers, leases and faults: the
 * controls that prove the faults bit and show what a bare lease loses.
 *
 * One adapter process per connection (each worker's, and fencebench's own
 * for setup, delayed writes and the read-back), started with /bin/sh -c
 * COMMAND in a process group of its own: an adapter is one client of the
 * user's store, as each thread of their service is, so the store sees as
 * many concurrent clients as the run has workers, and an adapter needs no
 * threads, no request ids and no locks of its own. A single shared process
 * would serialize every call and hide exactly the races (a check in one
 * statement, the write in another) the run is there to find.
 */
#ifndef FB_EXEC_H
#define FB_EXEC_H

#include "backend.h"

extern const fb_store_ops fb_exec_store_ops;

/* The lease side, --lease exec:COMMAND (exec_lease.c): the user's own lock
 * service through an adapter of the protocol's lease side. Its conns are
 * adapter connections too: fb_exec_last reads them. */
extern const fb_lease_ops fb_exec_lease_ops;

/* The last exchange on an adapter connection (a conn of fb_exec_store_ops),
 * for `fencebench adapter-test`, which prints the calls that broke a
 * contract: the request line and the reply line, each quoted (printable
 * ASCII, cut with "..." past max bytes; "" when none). broke: the
 * connection failed because the adapter broke the protocol (a reply of the
 * wrong shape, a version that went backwards, output nobody asked for), not
 * because its process exited, hung or answered {"error": ...}. */
typedef struct fb_exec_exchange {
	char request[256];
	char reply[1024];
	bool broke;
} fb_exec_exchange;

void fb_exec_last(void *conn, fb_exec_exchange *x);

/* The same for an engine's own process (its hello, its reset) before
 * connect hands it out; x->request "" once it has. */
void fb_exec_setup_last(void *eng, fb_exec_exchange *x);

/* The operations the adapter's hello offered: bit (1 << fb_exec_op) each
 * (exec_proto.h). */
uint32_t fb_exec_offers(void *eng);

/* The name the adapter's hello gave ("" if none): either side's engine. */
const char *fb_exec_name(void *eng);

#endif
