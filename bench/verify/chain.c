#include "chain.h"
#include "judge.h"

#include <stdlib.h>

/*
 * Each end of a link that waits for the other is an entry, found by (key,
 * fence) through a chained hash: a lease's own record (have), or an acquire
 * that replaced the word of a lease not in yet (by_*). Once both ends are
 * in, the link is judged and the entry freed. A key's start word is no
 * lease: a bit a key says it was replaced. An acquire left waiting at the
 * end replaced a word that no lease's record names as its own (another
 * acquire had replaced it, or it carried a fence its owner never
 * acquired): a fork.
 */

typedef struct ent {
	uint64_t fence;
	uint32_t key;
	uint32_t next;                    /* bucket chain, or the free list: index + 1, 0 none */
	bool used;                        /* not on the free list */
	bool have;                        /* rec is the lease's own record; else an acquire that
	                                   * replaced its word waits for it (by_*) */
	uint16_t by_owner, by_word_owner; /* the acquire's owner; the word's as it said */
	uint64_t by_fence, by_at;
	fb_chain_rec rec;
} ent;

struct fb_chain {
	ent *e;
	uint32_t n, cap, free; /* entries made, room, the free list's head (+1) */
	uint32_t *bucket;      /* index + 1 of a chain's first */
	uint32_t nbucket;
	uint8_t *started; /* a bit a key: its start word was replaced */
	/* A key's lease whose replacer has not come, kept in line: records
	 * come mostly in a key's slot order (each holder logs as its lease
	 * ends, before the next holder's can), so a record links to the one
	 * before it here and waits here in turn, with no entry made. The
	 * entries hold the rest: a lease whose key's place was taken, and the
	 * replacers that came before their lease (nby of them). */
	fb_chain_rec *last;
	uint8_t *inl; /* last[key] holds one */
	uint64_t nby;
	uint64_t start, slack;
	uint32_t keys;
	bool broken; /* a record not kept: nothing more is judged */
	fb_chain_counts c;
	fb_chain_example first[FB_CHAIN_KINDS];
};

fb_err fb_chain_create(uint32_t keys, uint64_t start, uint64_t slack, fb_chain **out)
{
	fb_chain *c = calloc(1, sizeof *c);
	if (!c)
		return FB_ENOMEM;
	c->start = start;
	c->slack = slack;
	c->nbucket = 1024;
	c->bucket = calloc(c->nbucket, sizeof *c->bucket);
	c->started = calloc((size_t)keys / 8 + 1, 1);
	c->last = malloc((size_t)keys * sizeof *c->last + 1);
	c->inl = calloc((size_t)keys + 1, 1);
	c->keys = keys;
	if (!c->bucket || !c->started || !c->last || !c->inl) {
		fb_chain_destroy(c);
		return FB_ENOMEM;
	}
	*out = c;
	return FB_OK;
}

void fb_chain_destroy(fb_chain *c)
{
	if (!c)
		return;
	free(c->e);
	free(c->bucket);
	free(c->started);
	free(c->last);
	free(c->inl);
	free(c);
}

static void note(fb_chain *c, fb_chain_kind k, uint32_t key, uint64_t fence, uint64_t other)
{
	fb_chain_example *x = &c->first[k];
	if (!x->found)
		*x = (fb_chain_example){true, key, fence, other};
}

static uint32_t hash(uint32_t key, uint64_t fence, uint32_t nbucket)
{
	uint64_t h = (fence ^ (uint64_t)key << 40 ^ key) * UINT64_C(0x9e3779b97f4a7c15);
	return (uint32_t)(h >> 32) & (nbucket - 1);
}

/* Double the buckets once they hold twice as many entries. */
static bool grow(fb_chain *c)
{
	if (c->c.waiting < 2 * (uint64_t)c->nbucket)
		return true;
	uint32_t nb = 2 * c->nbucket;
	uint32_t *b = calloc(nb, sizeof *b);
	if (!b)
		return false;
	for (uint32_t i = 0; i < c->nbucket; i++)
		for (uint32_t j = c->bucket[i]; j;) {
			ent *x = &c->e[j - 1];
			uint32_t next = x->next, h = hash(x->key, x->fence, nb);
			x->next = b[h];
			b[h] = j;
			j = next;
		}
	free(c->bucket);
	c->bucket = b;
	c->nbucket = nb;
	return true;
}

/* A new entry for (key, fence), linked in: NULL, no memory. */
static ent *make(fb_chain *c, uint32_t key, uint64_t fence)
{
	if (!grow(c))
		return NULL;
	uint32_t i;
	if (c->free) {
		i = c->free - 1;
		c->free = c->e[i].next;
	} else {
		if (c->n == c->cap) {
			uint32_t cap = c->cap ? 2 * c->cap : 256;
			ent *e = cap > c->cap ? realloc(c->e, (size_t)cap * sizeof *e) : NULL;
			if (!e)
				return NULL;
			c->e = e;
			c->cap = cap;
		}
		i = c->n++;
	}
	ent *x = &c->e[i];
	uint32_t h = hash(key, fence, c->nbucket);
	*x = (ent){.fence = fence, .key = key, .next = c->bucket[h], .used = true};
	c->bucket[h] = i + 1;
	c->c.waiting++;
	return x;
}

static void drop(fb_chain *c, ent *x)
{
	uint32_t i = (uint32_t)(x - c->e) + 1;
	for (uint32_t *p = &c->bucket[hash(x->key, x->fence, c->nbucket)]; *p;
	     p = &c->e[*p - 1].next)
		if (*p == i) {
			*p = x->next;
			break;
		}
	x->used = false;
	x->next = c->free;
	c->free = i;
	c->c.waiting--;
}

/* A word of (fence, word_owner) is the lease r's: the word carried its
 * holder (expired) or no one (released), in a correct table. */
static bool owns_rec(const fb_chain_rec *r, uint16_t word_owner)
{
	return !word_owner || r->owner == word_owner;
}

static bool owns(const ent *x, uint16_t word_owner)
{
	return owns_rec(&x->rec, word_owner);
}

/* The lease of (key, fence) whose word (word_owner's) no acquire has
 * replaced yet: its record in. NULL: none. */
static ent *lease_of(fb_chain *c, uint32_t key, uint64_t fence, uint16_t word_owner)
{
	for (uint32_t j = c->bucket[hash(key, fence, c->nbucket)]; j; j = c->e[j - 1].next) {
		ent *x = &c->e[j - 1];
		if (x->key == key && x->fence == fence && x->have && owns(x, word_owner))
			return x;
	}
	return NULL;
}

/* An acquire that replaced the word of r's lease, waiting for r: one whose
 * word r could have held, not r's own (a lease with the fence of the word
 * it replaced waits for itself otherwise). If several wait (the word was
 * replaced twice: a fork, whichever links), the first acquired. A replacer
 * that came while r's record was in has linked already, so which one links,
 * and so whether an overlap of a forked word is counted, can depend on the
 * order the records came in; a fork is counted in every order. NULL: none. */
static ent *replacer_of(fb_chain *c, const fb_chain_rec *r)
{
	ent *best = NULL;
	for (uint32_t j = c->bucket[hash(r->key, r->fence, c->nbucket)]; j; j = c->e[j - 1].next) {
		ent *x = &c->e[j - 1];
		if (x->key != r->key || x->fence != r->fence || x->have ||
		    (x->by_word_owner && x->by_word_owner != r->owner) ||
		    (x->by_fence == r->fence && x->by_owner == r->owner))
			continue;
		if (!best || x->by_at < best->by_at)
			best = x;
	}
	return best;
}

static void forked(fb_chain *c, uint32_t key, uint64_t fence, uint64_t replaced)
{
	c->c.forks++;
	note(c, FB_CHAIN_FORK, key, fence, replaced);
}

/* Both ends of a link are in: the lease p, and the acquire that replaced
 * its word (fence, at). */
static void judge_link(fb_chain *c, const fb_chain_rec *p, uint64_t fence, uint64_t at)
{
	c->c.links++;
	if (fb_judge_fence_twice(fence, p->fence)) {
		c->c.twice++;
		note(c, FB_CHAIN_TWICE, p->key, fence, p->fence);
	} else if (fb_judge_regression(fence, p->fence)) { /* in slot order: no clock */
		c->c.inverted++;
		note(c, FB_CHAIN_INVERTED, p->key, fence, p->fence);
	}
	if (fb_judge_overlap(p->end == FB_CHAIN_RELEASED, p->expires_at, at, c->slack, false, 0,
	                     0)) {
		c->c.overlaps++;
		note(c, FB_CHAIN_OVERLAP, p->key, fence, p->fence);
	}
}

/* The same, of an entry: the lease x->rec and its replacer x->by_*; x freed. */
static void link_judged(fb_chain *c, ent *x)
{
	judge_link(c, &x->rec, x->by_fence, x->by_at);
	drop(c, x);
}

/* r replaced the word (r->replaced, r->replaced_owner): linked to its lease
 * if that is in and waiting, else kept until it comes. */
static bool link_back(fb_chain *c, const fb_chain_rec *r)
{
	uint32_t key = r->key;
	uint64_t R = r->replaced;
	const fb_chain_rec *in = &c->last[key];
	if (c->inl[key] && in->fence == R && owns_rec(in, r->replaced_owner)) {
		judge_link(c, in, r->fence, r->at); /* the common case: in slot order */
		c->inl[key] = 0;
		c->c.waiting--;
		return true;
	}
	ent *p = lease_of(c, key, R, r->replaced_owner);
	if (!p && R == c->start && !r->replaced_owner) {
		uint8_t bit = (uint8_t)(1u << (key & 7));
		if (!(c->started[key >> 3] & bit)) { /* the key's first word */
			c->started[key >> 3] |= bit;
			c->c.links++;
			return true;
		}
	}
	if (!p) { /* its lease is not in yet: r waits for it */
		if (!(p = make(c, key, R)))
			return false;
		c->nby++;
	}
	p->by_word_owner = r->replaced_owner;
	p->by_owner = r->owner;
	p->by_fence = r->fence;
	p->by_at = r->at;
	if (p->have)
		link_judged(c, p);
	return true;
}

/* r's own end of its link: linked to its replacer if that is in, else
 * kept until it comes. */
static bool link_forward(fb_chain *c, const fb_chain_rec *r)
{
	ent *x = c->nby ? replacer_of(c, r) : NULL;
	if (x) {
		c->nby--;
		x->have = true;
		x->rec = *r;
		link_judged(c, x);
		return true;
	}
	if (!c->inl[r->key]) {
		c->last[r->key] = *r;
		c->inl[r->key] = 1;
		c->c.waiting++;
		return true;
	}
	if (!(x = make(c, r->key, r->fence)))
		return false;
	x->have = true;
	x->rec = *r;
	return true;
}

fb_err fb_chain_take(fb_chain *c, const fb_chain_rec *r)
{
	if (c->broken)
		return FB_ENOMEM;
	c->c.records++;
	if (!link_back(c, r) || !link_forward(c, r)) {
		c->broken = true;
		return FB_ENOMEM;
	}
	return FB_OK;
}

/* The lease that put a forked word in the slot: its owner's, which
 * replaced the same word (key, fence) and never linked (its own word was
 * never the slot's). Found through a table of the leases left, by (key,
 * the word it replaced, owner), built once at the end. */
typedef struct left_index {
	const fb_chain_rec **at; /* NULL: empty */
	uint32_t mask;
} left_index;

static uint32_t left_hash(uint32_t key, uint64_t replaced, uint16_t owner, uint32_t mask)
{
	return hash(key ^ (uint32_t)owner << 20, replaced, mask + 1);
}

static void left_put(left_index *ix, const fb_chain_rec *y)
{
	uint32_t h = left_hash(y->key, y->replaced, y->owner, ix->mask);
	while (ix->at[h])
		h = (h + 1) & ix->mask;
	ix->at[h] = y;
}

static void left_build(const fb_chain *c, left_index *ix)
{
	uint64_t n = c->c.waiting;
	uint32_t size = 16;
	while (size < 2 * n + 2)
		size *= 2;
	if (!(ix->at = calloc(size, sizeof *ix->at)))
		return;
	ix->mask = size - 1;
	for (uint32_t i = 0; i < c->n; i++)
		if (c->e[i].used && c->e[i].have)
			left_put(ix, &c->e[i].rec);
	for (uint32_t k = 0; k < c->keys; k++)
		if (c->inl[k])
			left_put(ix, &c->last[k]);
}

/* The fork x (an acquire that replaced the word (x->fence, by_word_owner)
 * no lease's record claims), named by the lease that put that word there. */
static void fork_named(fb_chain *c, const left_index *ix, const ent *x)
{
	forked(c, x->key, x->by_fence, x->fence);
	if (!x->by_word_owner || !ix->at) { /* a released word names no one */
		note(c, FB_CHAIN_UNNAMED, x->key, x->by_fence, x->fence);
		return;
	}
	uint32_t h = left_hash(x->key, x->fence, x->by_word_owner, ix->mask);
	for (; ix->at[h]; h = (h + 1) & ix->mask) {
		const fb_chain_rec *y = ix->at[h];
		if (y->key != x->key || y->replaced != x->fence || y->owner != x->by_word_owner)
			continue;
		if (fb_judge_fence_twice(x->by_fence, y->fence)) {
			c->c.forks_twice++;
			c->c.twice++;
			note(c, FB_CHAIN_TWICE, x->key, x->by_fence, y->fence);
			return;
		}
		if (y->fence > x->by_fence && fb_judge_inversion(x->by_at, y->at, c->slack)) {
			c->c.forks_inverted++;
			c->c.inverted++;
			note(c, FB_CHAIN_INVERTED, x->key, x->by_fence, y->fence);
			return;
		}
	}
	note(c, FB_CHAIN_UNNAMED, x->key, x->by_fence, x->fence);
}

bool fb_chain_finish(fb_chain *c, bool complete)
{
	if (c->broken || !complete)
		return false;
	left_index ix = {0};
	left_build(c, &ix); /* no memory (ix.at NULL): every fork counted, unnamed */
	for (uint32_t i = 0; i < c->n; i++) {
		const ent *x = &c->e[i];
		if (!x->used || x->have)
			continue;
		/* replaced, and its lease never logged: a word no acquire made,
		 * or one another acquire had replaced already */
		fork_named(c, &ix, x);
	}
	free(ix.at);
	return true;
}

const fb_chain_counts *fb_chain_counts_of(const fb_chain *c)
{
	return &c->c;
}

void fb_chain_example_of(const fb_chain *c, fb_chain_kind k, fb_chain_example *out)
{
	*out = c->first[k];
}
