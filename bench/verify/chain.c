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
	uint64_t start, slack;
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
	if (!c->bucket || !c->started) {
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

/* A word of (fence, word_owner) is the lease x's: the word carried its
 * holder (expired) or no one (released), in a correct table. */
static bool owns(const ent *x, uint16_t word_owner)
{
	return !word_owner || x->rec.owner == word_owner;
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

/* Both ends of a link are in: the lease x->rec, and the acquire that
 * replaced its word (x->by_*). Judged, and x freed. */
static void link_judged(fb_chain *c, ent *x)
{
	const fb_chain_rec *p = &x->rec;
	c->c.links++;
	if (fb_judge_overlap(p->end == FB_CHAIN_RELEASED, p->expires_at, x->by_at, c->slack, false,
	                     0, 0)) {
		c->c.overlaps++;
		note(c, FB_CHAIN_OVERLAP, p->key, x->by_fence, p->fence);
	}
	drop(c, x);
}

/* r replaced the word (r->replaced, r->replaced_owner): linked to its lease
 * if that is in and waiting, else kept until it comes. */
static bool link_back(fb_chain *c, const fb_chain_rec *r)
{
	uint32_t key = r->key;
	uint64_t R = r->replaced;
	ent *p = lease_of(c, key, R, r->replaced_owner);
	if (!p && R == c->start && !r->replaced_owner) {
		uint8_t bit = (uint8_t)(1u << (key & 7));
		if (!(c->started[key >> 3] & bit)) { /* the key's first word */
			c->started[key >> 3] |= bit;
			c->c.links++;
			return true;
		}
	}
	if (!p && !(p = make(c, key, R)))
		return false; /* its lease is not in yet: r waits for it */
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
	ent *x = replacer_of(c, r);
	bool waited = x;
	if (!x && !(x = make(c, r->key, r->fence)))
		return false;
	x->have = true;
	x->rec = *r;
	if (waited)
		link_judged(c, x);
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

bool fb_chain_finish(fb_chain *c, bool complete)
{
	if (c->broken || !complete)
		return false;
	for (uint32_t i = 0; i < c->n; i++) {
		const ent *x = &c->e[i];
		if (!x->used || x->have)
			continue;
		/* replaced, and its lease never logged: a word no acquire made,
		 * or one another acquire had replaced already */
		forked(c, x->key, x->by_fence, x->fence);
	}
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
