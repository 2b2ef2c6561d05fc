/*
 * The engine registry (registry.c): which engine serves a URL, and
 * whether it takes the URL. Above the engines: the drivers, main and the
 * tools include it; no engine does, nor do the options, which know the
 * schemes alone (schemes.h).
 */
#ifndef FB_REGISTRY_H
#define FB_REGISTRY_H

#include "backend.h"
#include "schemes.h"

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

/* An engine URL as the run will open it, judged as input: NULL, or why
 * not ("is not an engine...; valid: ...", "is malformed: ...") for the
 * line "--lease: 'URL' WHY" (the URL shown redacted). */
const char *fb_registry_judge(const fb_registry *r, const char *url, bool lease, char *why,
                              size_t len);

/* Both of a run's engine URLs judged by the built-in registry; on the
 * first that fails, its one line on stderr and false (exit 2: input). */
bool fb_registry_check_urls(const char *lease_url, const char *store_url);

#endif
