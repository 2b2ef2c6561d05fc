/*
 * The in-process engine: the lease table of core/lease.c and one core/store.c
 * store per discipline, behind the ops vectors. The default, and the one
 * every other engine is measured against: no server, no round trip.
 */
#ifndef FB_INPROC_H
#define FB_INPROC_H

#include "backend.h"

extern const fb_lease_ops fb_inproc_lease_ops;
extern const fb_store_ops fb_inproc_store_ops;

#endif
