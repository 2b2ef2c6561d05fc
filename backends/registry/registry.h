/*
 * The engine registry (registry.c): which engine serves a URL, and the
 * schemes it knows. Above the engines: the options, the drivers and the
 * tools include it; no engine does.
 */
#ifndef FB_REGISTRY_H
#define FB_REGISTRY_H

#include "backend.h"

/*
 * Registration: an engine's ops vector joins a registry only if it was
 * built against this build's version and size of its struct
 * (FB_LEASE_OPS_HEAD, backend.h) and carries every required op; else it
 * is refused, and the reason names the engine and what it lacks ("the
 * lease engine "zk" is refused: it has no peek (a required op)").
 */
#define FB_REGISTRY_MAX 16
typedef struct fb_registry {
	const fb_lease_ops *lease[FB_REGISTRY_MAX];
	const fb_store_ops *store[FB_REGISTRY_MAX];
	size_t nlease, nstore;
	struct {
		bool lease;
		const char *scheme; /* NULL: it had none */
		char why[200];
	} refused[FB_REGISTRY_MAX];
	size_t nrefused;
} fb_registry;

bool fb_registry_add_lease(fb_registry *r, const fb_lease_ops *ops);
bool fb_registry_add_store(fb_registry *r, const fb_store_ops *ops);

/* The engine in r for a URL's scheme ("inproc" or NULL: the in-process
 * one); NULL for one r does not hold. */
const fb_lease_ops *fb_registry_lease(const fb_registry *r, const char *url);
const fb_store_ops *fb_registry_store(const fb_registry *r, const char *url);

/* Why r refused the engine of url's scheme, or NULL when it refused none. */
const char *fb_registry_refused(const fb_registry *r, const char *url, bool lease);

/* fencebench's own engines, registered on first use. */
const fb_registry *fb_registry_builtin(void);

/* The engine for a URL's scheme ("inproc" or NULL: the in-process one);
 * NULL for an unknown scheme. */
const fb_lease_ops *fb_lease_engine(const char *url);
const fb_store_ops *fb_store_engine(const char *url);

/* The registered engines' URLs, "inproc, redis://HOST:PORT/DB, ...": for
 * the error line; written from the engines' own (url), in the registry's
 * order. */
const char *fb_lease_schemes(void);
const char *fb_store_schemes(void);

/* The same for --help, each engine's help: "inproc (default), ..., or
 * exec:COMMAND: ...". */
const char *fb_lease_engines_help(void);
const char *fb_store_engines_help(void);

#endif
