/*
 * The Redis engine: leases (SET NX PX and a fence counter, minted either by
 * one Lua script or, as the trap of DESIGN section 2, by a separate INCR)
 * and the store (one hash per discipline and key, every check-and-apply one
 * Lua script that also appends the history entry). hiredis, one server
 * connection per worker; every key under the prefix "fb:".
 *
 *   redis://[[user]:password@]host[:port][/db][?fence=script|incr]
 */
#ifndef FB_REDIS_H
#define FB_REDIS_H

#include "backend.h"

extern const fb_lease_ops fb_redis_lease_ops;
extern const fb_store_ops fb_redis_store_ops;

#endif
