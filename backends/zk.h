/*
 * The ZooKeeper lease engine: the standard lock recipe, one session per
 * worker. A lock is an EPHEMERAL_SEQUENTIAL child of the key's lock node;
 * the lowest sequence holds; release deletes it. The lease is the session
 * (its TTL the negotiated session timeout, which must equal --ttl), and
 * the fence is the lock node's creation zxid (czxid): one counter for the
 * whole ensemble, ordered with every other write.
 *
 *   zk://host:port[,host:port...][/prefix]        (prefix default /fencebench)
 *
 * The single-threaded C client (libzookeeper_st), driven by the worker
 * itself: a paused worker's session sends no heartbeat, as a paused
 * process's would not, so a pause past the session timeout does cost the
 * holder its lock.
 */
#ifndef FB_ZK_H
#define FB_ZK_H

#include "backend.h"

extern const fb_lease_ops fb_zk_lease_ops;

#endif
