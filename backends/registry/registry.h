/*
 * The engine registry (registry.c): which engine serves a URL, and the
 * schemes it knows. Above the engines: the options, the drivers and the
 * tools include it; no engine does.
 */
#ifndef FB_REGISTRY_H
#define FB_REGISTRY_H

#include "backend.h"

/* The engine for a URL's scheme ("inproc" or NULL: the in-process one);
 * NULL for an unknown scheme. */
const fb_lease_ops *fb_lease_engine(const char *url);
const fb_store_ops *fb_store_engine(const char *url);

/* "inproc, redis" / "inproc, redis, postgres": for the error line. */
const char *fb_lease_schemes(void);
const char *fb_store_schemes(void);

#endif
