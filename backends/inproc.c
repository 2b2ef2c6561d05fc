#include "inproc.h"

#include <stdio.h>
#include <stdlib.h>

#include "scheme_texts.h"

/* ---- leases ------------------------------------------------------------ */

typedef struct lease_engine {
	fb_lease_table *table;
	fb_fence_source source;
	uint64_t ttl_ns;
} lease_engine;

/*
 * A slot word this worker left by releasing a key: a guess for its next
 * acquire of that key, sparing the load (key + 1: 0 is empty). A few
 * entries, direct-mapped: a hit is likeliest where workers keep to their
 * own keys. Per-key fences only: with the global source the slot's next
 * fence comes from the counter, not from the word.
 */
#define RECENT 64
typedef struct released_word {
	uint64_t key;
	fb_lease lease;
} released_word;

typedef struct lease_conn {
	lease_engine *e;
	uint16_t worker;
	released_word recent[RECENT];
} lease_conn;

static fb_err lease_open(const fb_engine_config *cfg, const char *url, void **eng, char *err,
                         size_t errlen)
{
	(void)url;
	lease_engine *e = calloc(1, sizeof *e);
	fb_lease_config lc = {.keys = cfg->keys,
	                      .ttl_ns = cfg->ttl_ns,
	                      .source = cfg->fence,
	                      .first_fence = cfg->first_fence,
	                      .clock = cfg->clock,
	                      .bug = cfg->bug,
	                      .between = cfg->between,
	                      .between_ctx = cfg->between_ctx};
	if (!e || fb_lease_table_create(&lc, &e->table) != FB_OK) {
		free(e);
		snprintf(err, errlen, "out of memory for %u lease slots", cfg->keys);
		return FB_ENOMEM;
	}
	e->source = cfg->fence;
	e->ttl_ns = cfg->ttl_ns;
	*eng = e;
	return FB_OK;
}

static void lease_version(void *eng, char *buf, size_t len)
{
	(void)eng;
	snprintf(buf, len, "%s", FB_VERSION);
}

static fb_err lease_prepare(void *eng, bool fresh, char *err, size_t errlen)
{
	(void)eng, (void)fresh, (void)err, (void)errlen;
	return FB_OK; /* created fresh by open */
}

static void lease_close(void *eng)
{
	lease_engine *e = eng;
	if (!e)
		return;
	fb_lease_table_destroy(e->table);
	free(e);
}

static fb_err lease_connect(void *eng, uint16_t worker, void **conn, char *err, size_t errlen)
{
	lease_conn *c = calloc(1, sizeof *c);
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return FB_ENOMEM;
	}
	c->e = eng;
	c->worker = worker;
	*conn = c;
	return FB_OK;
}

static void lease_disconnect(void *conn)
{
	free(conn);
}

static const char *no_error(void *conn)
{
	(void)conn;
	return "no error";
}

static fb_acquire lease_acquire(void *conn, uint32_t key, fb_lease *out, fb_lease_stats *st)
{
	lease_conn *c = conn;
	released_word *rw = &c->recent[key % RECENT];
	const fb_lease *guess =
	        rw->key == key + 1 && c->e->source == FB_FENCE_PER_KEY ? &rw->lease : NULL;
	fb_acquire a = fb_lease_acquire_from(c->e->table, key, c->worker, guess, out, st);
	rw->key = 0; /* used or wrong: either way spent */
	out->service_at = out->expires_at - c->e->ttl_ns;
	return a;
}

static fb_io lease_release(void *conn, uint32_t key, const fb_lease *l, fb_lease *freed)
{
	lease_conn *c = conn;
	if (!fb_lease_release_lease(c->e->table, key, l, freed))
		return FB_IO_REFUSED;
	/* the slot now reads (fence, no owner, no expiry) */
	c->recent[key % RECENT] = (released_word){key + 1, {.fence = l->fence}};
	return FB_IO_OK;
}

static fb_io lease_is_held(void *conn, uint32_t key, const fb_lease *l)
{
	lease_conn *c = conn;
	(void)l;
	return fb_lease_is_held(c->e->table, key, c->worker) ? FB_IO_OK : FB_IO_REFUSED;
}

static fb_io lease_renew(void *conn, uint32_t key, const fb_lease *l, fb_lease *out)
{
	lease_conn *c = conn;
	if (!fb_lease_renew(c->e->table, key, c->worker, l->fence, out))
		return FB_IO_REFUSED;
	out->service_at = l->service_at;
	return FB_IO_OK;
}

static fb_io lease_peek(void *conn, uint32_t key, fb_lease *out)
{
	lease_conn *c = conn;
	*out = fb_lease_peek(c->e->table, key);
	out->service_at = out->expires_at - c->e->ttl_ns;
	return FB_IO_OK;
}

static void *lease_side(void *eng, size_t *stride, size_t *room)
{
	lease_engine *e = eng;
	return fb_lease_table_side(e->table, stride, room);
}

const fb_lease_ops fb_inproc_lease_ops = {
        FB_LEASE_OPS_HEAD, /* its texts: scheme_texts.h, as the scheme table's */
        .scheme = "inproc",
        .name = "in-process",
        .url = FB_INPROC_URL,
        .help = FB_INPROC_HELP,
        .remote = false,
        .open = lease_open,
        .version = lease_version,
        .prepare = lease_prepare,
        .close = lease_close,
        .connect = lease_connect,
        .disconnect = lease_disconnect,
        .error = no_error,
        .acquire = lease_acquire,
        .release = lease_release,
        .is_held = lease_is_held,
        .renew = lease_renew,
        .peek = lease_peek,
        .server_pause = NULL,
        .side = lease_side,
};

/* ---- stores ------------------------------------------------------------ */

typedef struct store_engine {
	fb_store *s[FB_DISCIPLINES];
} store_engine;

static fb_err store_open(const fb_engine_config *cfg, const char *url, void **eng, char *err,
                         size_t errlen)
{
	(void)url;
	store_engine *e = calloc(1, sizeof *e);
	if (!e)
		goto oom;
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		if (!(cfg->modes & (1u << d)))
			continue;
		if (fb_store_create((fb_discipline)d, cfg->keys, cfg->initial_balance, &e->s[d]))
			goto oom;
		fb_store_plant(e->s[d], cfg->bug);
	}
	*eng = e;
	return FB_OK;
oom:
	if (e)
		for (int d = 0; d < FB_DISCIPLINES; d++)
			fb_store_destroy(e->s[d]);
	free(e);
	snprintf(err, errlen, "out of memory for %u records", cfg->keys);
	return FB_ENOMEM;
}

static void store_close(void *eng)
{
	store_engine *e = eng;
	if (!e)
		return;
	for (int d = 0; d < FB_DISCIPLINES; d++)
		fb_store_destroy(e->s[d]);
	free(e);
}

/*
 * A worker's own: the record word its last debit of a key left, a guess
 * for its next debit of that key that spares the load (the stores are
 * lock-free; this is all a connection holds). Direct-mapped, key + 1.
 */
#define STORE_MEMO 64
typedef struct store_memo {
	uint64_t key1;
	fb_store_result last;
} store_memo;

typedef struct store_conn {
	store_engine *e;
	store_memo memo[FB_DISCIPLINES][STORE_MEMO];
} store_conn;

static fb_err store_connect(void *eng, uint16_t worker, void **conn, char *err, size_t errlen)
{
	(void)worker;
	store_conn *c = calloc(1, sizeof *c);
	if (!c) {
		snprintf(err, errlen, "out of memory for a store connection");
		return FB_ENOMEM;
	}
	c->e = eng;
	*conn = c;
	return FB_OK;
}

static void store_disconnect(void *conn)
{
	free(conn);
}

static fb_io store_read(void *conn, fb_discipline d, uint32_t key, uint64_t token,
                        fb_store_result *r)
{
	store_conn *c = conn;
	return fb_store_read(c->e->s[d], key, token, r) ? FB_IO_OK : FB_IO_REFUSED;
}

static fb_io store_write(void *conn, fb_discipline d, uint32_t key, int64_t balance, uint64_t token,
                         const fb_store_result *read, fb_store_result *r)
{
	store_conn *c = conn;
	fb_store *s = c->e->s[d];
	bool ok = read ? fb_store_write_after(s, key, balance, token, read, r)
	               : fb_store_write(s, key, balance, token, r);
	return ok ? FB_IO_OK : FB_IO_REFUSED;
}

static fb_io store_debit(void *conn, fb_discipline d, uint32_t key, int64_t amount, uint64_t token,
                         fb_store_result *r)
{
	store_conn *c = conn;
	fb_store *s = c->e->s[d];
	store_memo *m = &c->memo[d][key % STORE_MEMO];
	bool ok = m->key1 == (uint64_t)key + 1
	                  ? fb_store_debit_after(s, key, amount, token, &m->last, r)
	                  : fb_store_debit(s, key, amount, token, r);
	m->key1 = (uint64_t)key + 1; /* what it left, for the next debit */
	m->last = *r;
	return ok ? FB_IO_OK : FB_IO_REFUSED;
}

static fb_io store_final(void *conn, fb_discipline d, uint32_t keys, int64_t *balance,
                         uint64_t *last_fence)
{
	store_conn *c = conn;
	fb_store_final(c->e->s[d], keys, balance, last_fence);
	return FB_IO_OK;
}

const fb_store_ops fb_inproc_store_ops = {
        FB_STORE_OPS_HEAD,
        .scheme = "inproc",
        .name = "in-process",
        .url = FB_INPROC_URL,
        .help = FB_INPROC_HELP,
        .remote = false,
        .open = store_open,
        .version = lease_version,
        .prepare = lease_prepare,
        .close = store_close,
        .connect = store_connect,
        .disconnect = store_disconnect,
        .error = no_error,
        .read = store_read,
        .write = store_write,
        .debit = store_debit,
        .final = store_final,
        .history = NULL, /* the run's own checker sees every write */
        .meta = NULL,
};
