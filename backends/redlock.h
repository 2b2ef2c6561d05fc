/*
 * Redlock, as redis.io documents it, over three or more independent
 * redis-servers (hiredis): SET key value NX PX ttl on every node at once;
 * the lock is held if a majority said OK within the validity time (the
 * TTL less the time the round took and a clock-drift allowance); release
 * is the compare-and-delete script on every node. Redlock mints no fence,
 * which is the lesson; the URL says how one is bolted on:
 *
 *   redlock://[[user]:password@]host:port,host:port,host:port[,...][/db]
 *             [?fence=none|incr][&faketime=N:FILE]
 *
 * fence=none (the default): no fence. The fenced stores are refused; the
 * unfenced store and the checker get a label, the instant the lock was
 * known held on this host's monotonic clock, that no lease service handed
 * out.
 * fence=incr: after the majority, a separate INCR on the first node: the
 * two-step trap, with the engine config's `between` hook in the gap.
 * faketime=N:FILE: node N (from 1) runs under libfaketime reading its
 * offset from FILE (FAKETIME_TIMESTAMP_FILE, FAKETIME_NO_CACHE=1): the
 * node-jump fault steps that node's clock forward by writing FILE.
 */
#ifndef FB_REDLOCK_H
#define FB_REDLOCK_H

#include "backend.h"

extern const fb_lease_ops fb_redlock_lease_ops;

#endif
