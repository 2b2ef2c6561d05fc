#include "redis_link.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define SCAN_COUNT "1000"

void fb_rl_fail(fb_rlink *l, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fb_engine_failv(l->err, sizeof l->err, l->url, fmt, ap);
	va_end(ap);
}

/* Did the context fail by its read (or write) timeout? hiredis 0.14
 * reports the socket's EAGAIN as an I/O error in strerror's words; later
 * versions have an error code of their own. */
static bool timed_out(const redisContext *c)
{
#ifdef REDIS_ERR_TIMEOUT
	if (c->err == REDIS_ERR_TIMEOUT)
		return true;
#endif
	char again[128] = "", block[128] = "";
	if (c->err != REDIS_ERR_IO || strerror_r(EAGAIN, again, sizeof again) != 0 ||
	    strerror_r(EWOULDBLOCK, block, sizeof block) != 0)
		return false;
	return strcmp(c->errstr, again) == 0 || strcmp(c->errstr, block) == 0;
}

/*
 * No reply came: the connection failed (hiredis says why in errstr), or
 * the reply did not come within the timeout. Either way the connection is
 * closed: a late reply must never be read as a later command's, and every
 * later call on the link then fails at once, its error still this one.
 */
void fb_rl_lost(fb_rlink *l)
{
	if (!l->c)
		return; /* closed by an earlier failure: l->err says why */
	l->broke = !timed_out(l->c);
	if (!l->broke) {
		char s[32];
		fb_engine_seconds(s, sizeof s, l->timeout_ns);
		fb_rl_fail(l, "no reply within %s s", s);
	} else if (l->c->err) {
		fb_rl_fail(l, "%s", l->c->errstr[0] ? l->c->errstr : "connection failed");
	} else {
		fb_rl_fail(l, "no reply");
	}
	redisFree(l->c);
	l->c = NULL;
}

void fb_rl_arg(fb_rcmd *c, const char *s)
{
	if (c->n >= FB_RL_ARGS)
		return; /* a programming error; the server answers "wrong number" */
	c->v[c->n] = s;
	c->len[c->n] = strlen(s);
	c->n++;
}

void fb_rl_argf(fb_rcmd *c, const char *fmt, ...)
{
	if (c->n >= FB_RL_ARGS)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->buf[c->n], FB_RL_ARGLEN, fmt, ap);
	va_end(ap);
	fb_rl_arg(c, c->buf[c->n]);
}

/* One command on the link, NULL if it is closed or the command got no
 * reply (fb_rl_good() then says why). */
redisReply *fb_rl_command(fb_rlink *l, int n, const char **v, const size_t *len)
{
	return l->c ? redisCommandArgv(l->c, n, v, len) : NULL;
}

/* Check one reply: NULL (no answer) or an error reply fail the link and
 * return false (the reply is freed). */
bool fb_rl_good(fb_rlink *l, redisReply *r, const char *what)
{
	if (!r) {
		fb_rl_lost(l);
		return false;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		fb_rl_fail(l, "%s: %.*s", what, (int)r->len, r->str);
		freeReplyObject(r);
		return false;
	}
	return true;
}

/* One command, its reply or NULL (l->err says why). */
redisReply *fb_rl_run(fb_rlink *l, fb_rcmd *c)
{
	redisReply *r = fb_rl_command(l, c->n, c->v, c->len);
	return fb_rl_good(l, r, c->v[0]) ? r : NULL;
}

/* A command whose reply is not needed beyond "not an error". */
bool fb_rl_run_ok(fb_rlink *l, fb_rcmd *c)
{
	redisReply *r = fb_rl_run(l, c);
	if (!r)
		return false;
	freeReplyObject(r);
	return true;
}

bool fb_rl_send(fb_rlink *l, int n, fb_rcmd *cs)
{
	if (!l->c)
		return false; /* closed by an earlier failure: l->err says why */
	for (int i = 0; i < n; i++)
		if (redisAppendCommandArgv(l->c, cs[i].n, cs[i].v, cs[i].len) != REDIS_OK) {
			fb_rl_lost(l);
			return false;
		}
	for (int done = 0; !done;)
		if (redisBufferWrite(l->c, &done) != REDIS_OK) {
			fb_rl_lost(l);
			return false;
		}
	return true;
}

bool fb_rl_receive(fb_rlink *l, int n, fb_rcmd *cs, redisReply **out)
{
	/* every reply read, errors or not: the replies still due belong to
	 * these commands, not to the next one */
	bool open = l->c != NULL; /* closed: l->err says why */
	bool ok = fb_rl_receive_each(l, n, out) == n && open;
	for (int i = 0; ok && i < n; i++)
		if (!fb_rl_good(l, out[i], cs[i].v[0])) {
			out[i] = NULL;
			ok = false;
		}
	if (!ok)
		for (int i = 0; i < n; i++) {
			freeReplyObject(out[i]);
			out[i] = NULL;
		}
	return ok;
}

int fb_rl_receive_each(fb_rlink *l, int n, redisReply **out)
{
	int got = 0;
	for (; got < n && l->c; got++) {
		void *r = NULL;
		if (redisGetReply(l->c, &r) != REDIS_OK) {
			fb_rl_lost(l);
			break;
		}
		out[got] = r;
	}
	for (int i = got; i < n; i++)
		out[i] = NULL;
	return got;
}

/*
 * Send n commands in one write, then read the n replies into out. False
 * (every reply freed, l->err set) if any is missing or an error.
 */
bool fb_rl_pipeline(fb_rlink *l, int n, fb_rcmd *cs, redisReply **out)
{
	for (int i = 0; i < n; i++)
		out[i] = NULL;
	return fb_rl_send(l, n, cs) && fb_rl_receive(l, n, cs, out);
}

void fb_rl_free_replies(int n, redisReply **r)
{
	for (int i = 0; i < n; i++)
		freeReplyObject(r[i]);
}

/*
 * Connect (2 s), set the command timeout (l->timeout_ns), AUTH and SELECT.
 * On failure the link is closed, l->err says why, and the error is FB_ESYS
 * (no server, or it refused us) or FB_EINVAL (no such database).
 */
fb_err fb_rl_dial(fb_rlink *l, const char *host, int port, const fb_url *auth, long db)
{
	/* at least 1 ms: a zero timeval is no timeout at all */
	uint64_t us = l->timeout_ns / 1000 > 1000 ? l->timeout_ns / 1000 : 1000;
	struct timeval ct = {FB_RL_CONNECT_TIMEOUT_S, 0},
	               rt = {.tv_sec = (time_t)(us / 1000000),
	                     .tv_usec = (suseconds_t)(us % 1000000)};
	l->broke = false;
	l->c = redisConnectWithTimeout(host, port, ct);
	if (!l->c) {
		fb_rl_fail(l, "cannot allocate a hiredis context");
		return FB_ENOMEM;
	}
	fb_err e = FB_ESYS;
	if (l->c->err) {
		fb_rl_lost(l);
		goto err;
	}
	if (redisSetTimeout(l->c, rt) != REDIS_OK) {
		fb_rl_lost(l);
		goto err;
	}
	(void)redisEnableKeepAlive(l->c);
	if (auth && auth->has_pass) {
		fb_rcmd c = {0};
		fb_rl_arg(&c, "AUTH");
		if (auth->user[0])
			fb_rl_arg(&c, auth->user);
		fb_rl_arg(&c, auth->pass);
		if (!fb_rl_run_ok(l, &c))
			goto err;
	}
	if (db) {
		fb_rcmd c = {0};
		fb_rl_arg(&c, "SELECT");
		fb_rl_argf(&c, "%ld", db);
		if (!fb_rl_run_ok(l, &c)) {
			if (l->c && !l->c->err) /* an error reply, not a lost link */
				e = FB_EINVAL;
			goto err;
		}
	}
	return FB_OK;
err:
	if (l->c)
		redisFree(l->c);
	l->c = NULL;
	return e;
}

/* Reply element i as an integer: an integer reply, or a string of digits
 * (what HMGET and the scripts' copied fields give). */
bool fb_rl_el_int(const redisReply *r, size_t i, long long *out)
{
	if (r->type != REDIS_REPLY_ARRAY || i >= r->elements)
		return false;
	const redisReply *x = r->element[i];
	if (x->type == REDIS_REPLY_INTEGER) {
		*out = x->integer;
		return true;
	}
	if (x->type != REDIS_REPLY_STRING || !x->len || x->len > 20)
		return false;
	char buf[24], *end;
	memcpy(buf, x->str, x->len);
	buf[x->len] = 0;
	errno = 0;
	*out = strtoll(buf, &end, 10);
	return !errno && *end == 0;
}

/*
 * Delete every key matching pattern: SCAN in batches and UNLINK each
 * batch (DEL where the server predates UNLINK). Never FLUSHDB: the
 * database may hold the user's own keys.
 */
bool fb_rl_scan_delete(fb_rlink *l, const char *pattern)
{
	char cursor[32] = "0";
	do {
		fb_rcmd c = {0};
		fb_rl_arg(&c, "SCAN");
		fb_rl_arg(&c, cursor);
		fb_rl_arg(&c, "MATCH");
		fb_rl_arg(&c, pattern);
		fb_rl_arg(&c, "COUNT");
		fb_rl_arg(&c, SCAN_COUNT);
		redisReply *r = fb_rl_run(l, &c);
		if (!r)
			return false;
		if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		    r->element[0]->type != REDIS_REPLY_STRING ||
		    r->element[0]->len >= sizeof cursor ||
		    r->element[1]->type != REDIS_REPLY_ARRAY) {
			freeReplyObject(r);
			fb_rl_fail(l, "SCAN: unexpected reply");
			return false;
		}
		memcpy(cursor, r->element[0]->str, r->element[0]->len);
		cursor[r->element[0]->len] = 0;
		const redisReply *ks = r->element[1];
		if (ks->elements) {
			size_t n = ks->elements + 1;
			const char **argv = malloc(n * sizeof *argv);
			size_t *lens = malloc(n * sizeof *lens);
			bool ok = argv && lens;
			if (ok) {
				for (size_t i = 0; i < ks->elements; i++) {
					argv[i + 1] = ks->element[i]->str;
					lens[i + 1] = ks->element[i]->len;
				}
				for (int pass = 0; pass < 2; pass++) {
					argv[0] = pass ? "DEL" : "UNLINK";
					lens[0] = strlen(argv[0]);
					redisReply *d = fb_rl_command(l, (int)n, argv, lens);
					bool retry = !pass && d && d->type == REDIS_REPLY_ERROR &&
					             strstr(d->str, "unknown command");
					if (retry) {
						freeReplyObject(d);
						continue;
					}
					ok = fb_rl_good(l, d, argv[0]);
					if (ok)
						freeReplyObject(d);
					break;
				}
			} else {
				fb_rl_fail(l, "out of memory deleting %s", pattern);
			}
			free(argv);
			free(lens);
			if (!ok) {
				freeReplyObject(r);
				return false;
			}
		}
		freeReplyObject(r);
	} while (strcmp(cursor, "0") != 0);
	return true;
}

void fb_rl_evalsha(fb_rcmd *c, const char *sha)
{
	c->v[0] = "EVALSHA";
	c->len[0] = strlen("EVALSHA");
	c->v[1] = sha;
	c->len[1] = 40;
}

redisReply *fb_rl_noscript(fb_rlink *l, const char *body, fb_rcmd *c, redisReply *r)
{
	if (!r || r->type != REDIS_REPLY_ERROR || strncmp(r->str, "NOSCRIPT", 8) != 0)
		return r;
	freeReplyObject(r);
	c->v[0] = "EVAL";
	c->len[0] = strlen("EVAL");
	c->v[1] = body;
	c->len[1] = strlen(body);
	return fb_rl_command(l, c->n, c->v, c->len);
}

redisReply *fb_rl_eval(fb_rlink *l, const char *sha, const char *body, const char *name, fb_rcmd *c)
{
	fb_rl_evalsha(c, sha);
	redisReply *r = fb_rl_noscript(l, body, c, fb_rl_command(l, c->n, c->v, c->len));
	return fb_rl_good(l, r, name) ? r : NULL;
}

void fb_rl_eval_begin(fb_rcmd *c, int nkeys)
{
	c->n = 2;
	fb_rl_argf(c, "%d", nkeys);
}
