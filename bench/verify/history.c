#include "history.h"
#include "judge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A key's walk: what the rows so far left. 64 bytes, so a million keys in
 * three disciplines stay under 200 MB. */
typedef struct hkey {
	uint64_t rows, stale;
	uint64_t last_version; /* 0 before the first row */
	uint64_t max_fence;    /* 0 before the first row: a fence 0 is stale */
	int64_t balance;       /* the last row's after, the initial balance before */
	int64_t lost_amount;
	uint64_t top_version; /* the row that carried max_fence: for the story */
	uint32_t top_client;
	uint16_t top_worker;
} hkey;

typedef struct hmode {
	hkey *k; /* meta.keys of them; NULL for a discipline outside the meta */
	fb_history_verdict v;
} hmode;

/* Open addressing on the client id; used slots have used = true. */
typedef struct cslot {
	bool used;
	fb_history_client c;
} cslot;

struct fb_history {
	fb_store_meta meta;
	hmode m[FB_DISCIPLINES];
	cslot *clients;
	size_t ccap, cn; /* slots (a power of two), slots used */
	uint64_t fed;
	uint64_t foreign; /* rows of a discipline outside the meta */
	char foreign_why[200];
};

/* The balance a row's client read: it computed after = read - amount
 * (wrapping: the store may be broken). */
static inline int64_t read_of(const fb_history *h, const fb_history_row *r)
{
	return fb_judge_add(r->after, h->meta.amount);
}

/* The first reason the history and the store disagree (fb_disagree). */
#define disagree(v, ...)                                                                           \
	fb_disagree(&(v)->agrees, (v)->disagreement, sizeof(v)->disagreement, __VA_ARGS__)

fb_err fb_history_create(const fb_store_meta *meta, fb_history **out)
{
	uint32_t modes = meta->modes & ((1u << FB_DISCIPLINES) - 1);
	if (!meta->keys || !modes || !meta->amount)
		return FB_EINVAL;
	fb_history *h = calloc(1, sizeof *h);
	if (!h)
		return FB_ENOMEM;
	h->meta = *meta;
	h->meta.modes = modes;
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		hmode *m = &h->m[d];
		m->v.agrees = m->v.stale_agrees = true;
		if (!(modes & (1u << d)))
			continue;
		m->v.on = true;
		m->k = calloc(meta->keys, sizeof *m->k);
		if (!m->k) {
			fb_history_destroy(h);
			return FB_ENOMEM;
		}
		for (uint32_t k = 0; k < meta->keys; k++)
			m->k[k].balance = meta->initial_balance;
	}
	*out = h;
	return FB_OK;
}

void fb_history_destroy(fb_history *h)
{
	if (!h)
		return;
	for (int d = 0; d < FB_DISCIPLINES; d++)
		free(h->m[d].k);
	free(h->clients);
	free(h);
}

static size_t slot_of(uint32_t id, size_t cap)
{
	/* Fibonacci hashing: client ids are small consecutive numbers */
	return (size_t)(((uint64_t)id * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & (cap - 1);
}

/* The client's slot, made on first sight; NULL when the table cannot grow. */
static fb_history_client *client(fb_history *h, uint32_t id)
{
	if (h->ccap) {
		for (size_t i = slot_of(id, h->ccap);; i = (i + 1) & (h->ccap - 1)) {
			if (!h->clients[i].used)
				break;
			if (h->clients[i].c.id == id)
				return &h->clients[i].c;
		}
	}
	if ((h->cn + 1) * 2 > h->ccap) {
		size_t cap = h->ccap ? h->ccap * 2 : 16;
		cslot *t = calloc(cap, sizeof *t);
		if (!t)
			return NULL;
		for (size_t j = 0; j < h->ccap; j++) {
			if (!h->clients[j].used)
				continue;
			size_t i = slot_of(h->clients[j].c.id, cap);
			while (t[i].used)
				i = (i + 1) & (cap - 1);
			t[i] = h->clients[j];
		}
		free(h->clients);
		h->clients = t;
		h->ccap = cap;
	}
	size_t i = slot_of(id, h->ccap);
	while (h->clients[i].used)
		i = (i + 1) & (h->ccap - 1);
	h->clients[i].used = true;
	h->clients[i].c.id = id;
	h->cn++;
	return &h->clients[i].c;
}

/*
 * One row through the key's walk, in the checker's order: its place in the
 * version sequence, then the chain of balances, then its fence against the
 * key's earlier ones (and the store's own flag), then the debits it erased.
 * A row out of order still moves the walk on: the checks that follow it
 * compare with the row that came before it in the stream.
 */
fb_err fb_history_feed(fb_history *h, const fb_history_row *r)
{
	h->fed++;
	if ((unsigned)r->d >= FB_DISCIPLINES || !h->m[r->d].v.on) {
		if (!h->foreign++)
			snprintf(h->foreign_why, sizeof h->foreign_why,
			         "a row of discipline %d, which the run did not select (key %u, "
			         "version %llu, client %u)",
			         (int)r->d, r->key, (unsigned long long)r->version, r->client);
		return FB_OK;
	}
	hmode *m = &h->m[r->d];
	fb_history_verdict *v = &m->v;
	if (r->key >= h->meta.keys) {
		v->foreign++;
		disagree(v, "a row for key %u, beyond the run's %u keys (version %llu, client %u)",
		         r->key, h->meta.keys, (unsigned long long)r->version, r->client);
		return FB_OK;
	}
	hkey *k = &m->k[r->key];
	fb_history_client *c = client(h, r->client);
	if (c)
		c->writes[r->d]++;
	v->rows++;
	if (!k->rows++)
		v->keys_written++;

	/* a store that numbers its own writes may leave gaps: the chain of
	 * balances below still finds a lost write */
	bool own = h->meta.own_versions >> r->d & 1;
	/* versions start at 1: a version 0 is at or below the start */
	fb_judge_order order = fb_judge_version(r->version, true, k->last_version, own);
	if (order == FB_JUDGE_GAP) {
		uint64_t missing = r->version - k->last_version - 1;
		v->version_gaps += missing;
		disagree(v,
		         "key %u: version %llu follows version %llu: the history lost %llu writes",
		         r->key, (unsigned long long)r->version,
		         (unsigned long long)k->last_version, (unsigned long long)missing);
	} else if (order == FB_JUDGE_TWICE) {
		v->out_of_order++;
		disagree(v,
		         "key %u: version %llu after version %llu: a row out of order or recorded "
		         "twice",
		         r->key, (unsigned long long)r->version,
		         (unsigned long long)k->last_version);
	}
	if (r->version > k->last_version)
		k->last_version = r->version;

	if (fb_judge_chain_break(r->before, k->balance)) {
		v->chain_breaks++;
		if (k->rows == 1)
			disagree(
			        v,
			        "key %u version %llu: replaced balance %lld, but every key started "
			        "at %lld",
			        r->key, (unsigned long long)r->version, (long long)r->before,
			        (long long)h->meta.initial_balance);
		else
			disagree(v,
			         "key %u version %llu: replaced balance %lld, but the previous "
			         "write "
			         "left %lld",
			         r->key, (unsigned long long)r->version, (long long)r->before,
			         (long long)k->balance);
	}

	bool stale = fb_judge_stale(r->fence, true, k->max_fence);
	if (stale) {
		k->stale++;
		v->stale_accepted++;
		if (!v->first.found)
			v->first = (fb_history_story){true,
			                              r->key,
			                              r->version,
			                              r->fence,
			                              r->client,
			                              r->worker,
			                              k->max_fence,
			                              k->top_version,
			                              k->top_client,
			                              k->top_worker,
			                              fb_judge_erased(read_of(h, r), r->before)};
	}
	if (r->store_stale)
		v->store_stale++;
	if (stale != r->store_stale) {
		v->flag_mismatches++;
		v->stale_agrees = false;
		if (stale)
			disagree(v,
			         "key %u version %llu (fence %llu, client %u): stale, an earlier "
			         "write had fence %llu, but the store did not flag it",
			         r->key, (unsigned long long)r->version,
			         (unsigned long long)r->fence, r->client,
			         (unsigned long long)k->max_fence);
		else
			disagree(
			        v,
			        "key %u version %llu (fence %llu, client %u): flagged stale by the "
			        "store, but every earlier fence was below it (highest %llu)",
			        r->key, (unsigned long long)r->version,
			        (unsigned long long)r->fence, r->client,
			        (unsigned long long)k->max_fence);
	}
	if (!stale) {
		k->max_fence = r->fence;
		k->top_version = r->version;
		k->top_client = r->client;
		k->top_worker = (uint16_t)r->worker;
	}
	if (r->fence > v->max_fence)
		v->max_fence = r->fence;

	/* whatever lay between what the client read and `before` it wrote over */
	k->lost_amount = fb_judge_add(k->lost_amount, fb_judge_erased(read_of(h, r), r->before));
	k->balance = r->after;
	return c ? FB_OK : FB_ENOMEM;
}

uint64_t fb_history_rows(const fb_history *h)
{
	return h->fed;
}

static uint32_t clients_in(const fb_history *h, int d)
{
	uint32_t n = 0;
	for (size_t i = 0; i < h->ccap; i++) {
		const cslot *s = &h->clients[i];
		if (!s->used)
			continue;
		if (d < 0 ? s->c.writes[0] || s->c.writes[1] || s->c.writes[2] : s->c.writes[d] > 0)
			n++;
	}
	return n;
}

/*
 * The books of discipline d against the store's finals, as
 * fb_checker_verdict closes the in-run checker's: per key the ledger (what
 * the final balance is above what the accepted debits left) against the
 * history's own lost amount, the history's last balance against the
 * store's, and in the two fenced disciplines the highest fence against the
 * store's last accepted one; then the stale counts.
 */
void fb_history_finish(fb_history *h, fb_discipline d, const int64_t *final_balance,
                       const uint64_t *last_fence, fb_history_verdict *v, fb_history_key_fn per_key,
                       void *ctx)
{
	if ((unsigned)d >= FB_DISCIPLINES) {
		*v = (fb_history_verdict){.agrees = true, .stale_agrees = true};
		return;
	}
	hmode *m = &h->m[d];
	if (m->v.on && !m->v.finished) {
		fb_history_verdict *mv = &m->v;
		bool fenced = d != FB_UNFENCED;
		fb_judge_sums sums = {0, 0};
		for (uint32_t i = 0; i < h->meta.keys; i++) {
			const hkey *k = &m->k[i];
			fb_judge_walked walked = {k->rows, k->lost_amount, k->balance,
			                          k->max_fence};
			int64_t ledger = fb_judge_close_key(
			        &mv->agrees, mv->disagreement, sizeof mv->disagreement, i, fenced,
			        h->meta.initial_balance, h->meta.amount, &walked, final_balance[i],
			        last_fence[i], &sums);
			if (per_key) {
				fb_history_key hk = {k->rows, k->stale, k->max_fence, k->balance,
				                     k->lost_amount};
				per_key(ctx, d, i, &hk, final_balance[i], ledger, last_fence[i]);
			}
		}
		mv->lost_updates = sums.lost / h->meta.amount;
		mv->lost_history = sums.erased / h->meta.amount;
		if (mv->stale_accepted != mv->store_stale)
			disagree(mv,
			         "the checker found %llu stale writes accepted, the store flagged "
			         "%llu",
			         (unsigned long long)mv->stale_accepted,
			         (unsigned long long)mv->store_stale);
		mv->finished = true;
	}
	fb_history_verdict_of(h, d, v);
}

void fb_history_verdict_of(const fb_history *h, fb_discipline d, fb_history_verdict *v)
{
	if ((unsigned)d >= FB_DISCIPLINES) {
		*v = (fb_history_verdict){.agrees = true, .stale_agrees = true};
		return;
	}
	*v = h->m[d].v;
	v->clients = clients_in(h, (int)d);
}

void fb_history_total(const fb_history *h, fb_history_verdict *t)
{
	*t = (fb_history_verdict){
	        .on = true, .finished = true, .agrees = true, .stale_agrees = true};
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		const fb_history_verdict *v = &h->m[d].v;
		if (!v->on)
			continue;
		t->finished &= v->finished;
		t->rows += v->rows;
		t->stale_accepted += v->stale_accepted;
		t->store_stale += v->store_stale;
		t->flag_mismatches += v->flag_mismatches;
		t->version_gaps += v->version_gaps;
		t->out_of_order += v->out_of_order;
		t->chain_breaks += v->chain_breaks;
		t->foreign += v->foreign;
		t->lost_history += v->lost_history;
		t->lost_updates += v->lost_updates;
		t->keys_written += v->keys_written;
		if (v->max_fence > t->max_fence)
			t->max_fence = v->max_fence;
		t->stale_agrees &= v->stale_agrees;
		if (!v->agrees)
			disagree(t, "%s: %s", fb_discipline_name((fb_discipline)d),
			         v->disagreement);
	}
	t->foreign += h->foreign;
	if (h->foreign)
		disagree(t, "%llu rows outside the run's disciplines, the first %s",
		         (unsigned long long)h->foreign, h->foreign_why);
	t->clients = clients_in(h, -1);
}

static int by_id(const void *a, const void *b)
{
	uint32_t x = ((const fb_history_client *)a)->id, y = ((const fb_history_client *)b)->id;
	return (x > y) - (x < y);
}

size_t fb_history_clients(const fb_history *h, fb_history_client *out, size_t max)
{
	if (!out || !max)
		return h->cn;
	/* every client, sorted, then the first max of them: a few hundred at most */
	fb_history_client *all = malloc((h->cn ? h->cn : 1) * sizeof *all);
	size_t n = 0;
	if (!all)
		return 0;
	for (size_t i = 0; i < h->ccap; i++)
		if (h->clients[i].used)
			all[n++] = h->clients[i].c;
	qsort(all, n, sizeof *all, by_id);
	memcpy(out, all, (n < max ? n : max) * sizeof *out);
	free(all);
	return n;
}

bool fb_history_failed(fb_discipline d, const fb_history_verdict *v)
{
	if (!v->on)
		return false;
	return fb_judge_fails(d, v->stale_accepted, v->lost_updates || v->lost_history, v->agrees);
}

const char *fb_history_outcome(fb_discipline d, const fb_history_verdict *v)
{
	switch (d) {
	case FB_FENCED:
		return fb_history_failed(d, v) ? "violated" : "safe";
	case FB_WRITE_FENCED:
		return fb_history_failed(d, v) ? "violated"
		       : v->lost_updates       ? "lost_updates"
		                               : "safe";
	default:
		return !v->agrees                             ? "disagrees"
		       : v->stale_accepted || v->lost_updates ? "corrupted"
		                                              : "clean";
	}
}
