/*
 * The engines' schemes (schemes.c), without the engines: which URLs --lease
 * and --store accept, what each engine's --help and error line say, and the
 * few facts of an engine the options decide by (a remote engine, a lease
 * service that can pause its server or jump a node's clock). The options
 * include this alone, so a parser's fuzzer links no client library; the
 * registry (registry.c) holds the engines, and test_backend checks that
 * every row here is a registered engine's, in its order, saying the same.
 */
#ifndef FB_SCHEMES_H
#define FB_SCHEMES_H

#include <stdbool.h>
#include <stddef.h>

typedef struct fb_scheme {
	const char *scheme; /* as the engine's ops vector: "redis", "exec", "inproc" */
	const char *url;    /* the ops vector's url: for the error line */
	const char *help;   /* the ops vector's help: for --help */
	bool remote;        /* its calls are round trips */
	bool server_pause;  /* a lease service that pauses its server (--faults server-pause) */
	bool node_jump;     /* a lease service that jumps a node's clock (--faults node-jump) */
} fb_scheme;

extern const fb_scheme fb_lease_scheme_table[];
extern const size_t fb_lease_scheme_count;
extern const fb_scheme fb_store_scheme_table[];
extern const size_t fb_store_scheme_count;

/* The row for a URL's scheme ("inproc" or NULL: the in-process one); NULL
 * for a scheme no engine has. */
const fb_scheme *fb_lease_scheme(const char *url);
const fb_scheme *fb_store_scheme(const char *url);

/*
 * Whether url is of scheme: "exec" for "exec:COMMAND" (whatever the command
 * holds), what precedes "://", or the whole word ("inproc"). A libpq
 * conninfo ("host=... dbname=...") has no scheme but an '=': it is
 * "postgres"'s, as is "postgresql://".
 */
bool fb_scheme_is(const char *url, const char *scheme);

/* The schemes' URLs, "inproc, redis://HOST:PORT/DB, ...": for the error
 * line, in the registry's order. */
const char *fb_lease_schemes(void);
const char *fb_store_schemes(void);

/* The same for --help, each engine's help: "inproc (default), ..., or
 * exec:COMMAND: ...". */
const char *fb_lease_engines_help(void);
const char *fb_store_engines_help(void);

#endif
