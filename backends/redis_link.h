/*
 * One hiredis connection with a deadline on every command and the last
 * failure kept as "<url>: <reason>": what the Redis engine and Redlock's
 * nodes share. A link whose reply did not come (a timeout, a lost
 * connection) is closed at once, so a late reply is never read as a later
 * command's, and every later command on it fails at once with that reason.
 */
#ifndef FB_REDIS_LINK_H
#define FB_REDIS_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "backend.h"
#include "url.h"

#define FB_RL_ERRLEN            640
#define FB_RL_ARGS              16
#define FB_RL_ARGLEN            64
#define FB_RL_CONNECT_TIMEOUT_S 2

typedef struct fb_rlink {
	redisContext *c;     /* NULL once closed (l->err says why) */
	const char *url;     /* redacted; the engine's */
	uint64_t timeout_ns; /* a command's */
	bool broke;          /* closed because the connection broke, not a timeout
	                        (issue 24: a reset; the engine may connect again) */
	char err[FB_RL_ERRLEN];
} fb_rlink;

/* A command's arguments: v[0..n) with their lengths; numbers and built key
 * names are formatted into the command's own buffers. */
typedef struct fb_rcmd {
	int n;
	const char *v[FB_RL_ARGS];
	size_t len[FB_RL_ARGS];
	char buf[FB_RL_ARGS][FB_RL_ARGLEN];
} fb_rcmd;

/* l->err = "<url>: <formatted reason>". */
void fb_rl_fail(fb_rlink *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* No reply came: say why (hiredis' reason, or the timeout) and close. */
void fb_rl_lost(fb_rlink *l);

void fb_rl_arg(fb_rcmd *c, const char *s);
void fb_rl_argf(fb_rcmd *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

redisReply *fb_rl_command(fb_rlink *l, int n, const char **v, const size_t *len);
/* NULL or an error reply: fail the link (freeing r) and return false. */
bool fb_rl_good(fb_rlink *l, redisReply *r, const char *what);
redisReply *fb_rl_run(fb_rlink *l, fb_rcmd *c);
bool fb_rl_run_ok(fb_rlink *l, fb_rcmd *c);
/* n commands in one write, their n replies into out; false (all freed) if
 * any is missing or an error. */
bool fb_rl_pipeline(fb_rlink *l, int n, fb_rcmd *cs, redisReply **out);
/* The pipeline's halves, for several links at once: send writes the n
 * commands out (without waiting), receive reads their n replies. */
bool fb_rl_send(fb_rlink *l, int n, fb_rcmd *cs);
bool fb_rl_receive(fb_rlink *l, int n, fb_rcmd *cs, redisReply **out);
/* The n replies to commands sent, each as it came (an error reply is
 * returned, not judged), into out; how many came. A reply that did not
 * come (a lost connection, the timeout) closes the link, l->err saying
 * why: that one and every later one is NULL. */
int fb_rl_receive_each(fb_rlink *l, int n, redisReply **out);
void fb_rl_free_replies(int n, redisReply **r);

/* Connect (2 s), set the command timeout, AUTH with auth's user and
 * password when it has one, SELECT db when not 0. FB_ESYS (no server, or
 * it refused us) or FB_EINVAL (no such database), l->err saying why. */
fb_err fb_rl_dial(fb_rlink *l, const char *host, int port, const fb_url *auth, long db);

/* Reply element i as an integer (an integer, or a string of digits). */
bool fb_rl_el_int(const redisReply *r, size_t i, long long *out);

/* Delete every key matching pattern (SCAN + UNLINK, DEL on old servers). */
bool fb_rl_scan_delete(fb_rlink *l, const char *pattern);

/* A script call: fb_rl_eval_begin reserves argv[0..1] and sets the key
 * count; fb_rl_eval sends EVALSHA sha, and EVAL body once if the server
 * lost its script cache (NOSCRIPT). The reply or NULL. */
void fb_rl_eval_begin(fb_rcmd *c, int nkeys);
redisReply *fb_rl_eval(fb_rlink *l, const char *sha, const char *body, const char *name,
                       fb_rcmd *c);
/* The halves of fb_rl_eval, for a script call sent in a pipeline: evalsha
 * makes c an EVALSHA of sha; noscript takes its reply r and, where the
 * server lost its script cache, frees it and sends c again as EVAL body,
 * returning that reply (else r itself). */
void fb_rl_evalsha(fb_rcmd *c, const char *sha);
redisReply *fb_rl_noscript(fb_rlink *l, const char *body, fb_rcmd *c, redisReply *r);

#endif
