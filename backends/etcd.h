/*
 * The etcd lease engine, through etcd's JSON gateway (/v3/..., etcd 3.4
 * and later) with libcurl and json-c: no C gRPC client is packaged. An
 * acquire grants a lease for the TTL, then one transaction creates the
 * key's lock entry, attached to that lease, only if it is absent
 * (create_revision == 0). The fence is the revision at which that put
 * committed: one counter for the cluster. Release revokes the lease,
 * which deletes the entry only if it is still that lease's.
 *
 *   etcd://host:port[,host:port...][/prefix]      (prefix default fencebench)
 *
 * Lease TTLs are whole seconds, and a server grants none shorter than its
 * minimum (1.5 election timeouts, rounded up to a second: 2 s with etcd's
 * defaults); open refuses a --ttl it cannot honour.
 */
#ifndef FB_ETCD_H
#define FB_ETCD_H

#include "backend.h"

extern const fb_lease_ops fb_etcd_lease_ops;

#endif
