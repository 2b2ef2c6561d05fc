/*
 * The Redis engine: leases (SET NX PX and a fence counter, minted either by
 * one Lua script or, as the trap of DESIGN section 2, by a separate INCR)
 * and the store (one hash per discipline and key, every check-and-apply one
 * Lua script that also appends the history entry). hiredis, one server
 * connection per worker; every key under the prefix "fb:".
 *
 *   redis://[[user]:password@]host[:port][/db][?fence=script|incr]
 *   redis://SENTINEL[,SENTINEL...][/db]?sentinel=NAME   (issue 24)
 *
 * Through Sentinels, leases and the store alike connect to the master the
 * Sentinels name and follow it across a failover. A connection that broke
 * (a reset) connects again; a write whose reply was lost is settled from
 * the store's history, an acquire's is not known acquired.
 */
#ifndef FB_REDIS_H
#define FB_REDIS_H

#include "backend.h"

extern const fb_lease_ops fb_redis_lease_ops;
extern const fb_store_ops fb_redis_store_ops;

#endif
