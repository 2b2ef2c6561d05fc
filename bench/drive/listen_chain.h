/*
 * Listener: the lease chain (bench/verify/chain.h). It keeps each lease of
 * the worker's as one record in its slot (fb_heard.chain), from the acquire
 * (the word it replaced, on the table's own instants) through its own
 * renewals to its end (released, refused, died), and hands it to the chain
 * then. Only where the table says which word each change replaced (the
 * in-process table), and only where a chain was made (fb_env.chain: the
 * simulator's, judged beside the CAS witness until it replaces it, issue
 * 26). A lease still held when the run ends is handed over by the driver
 * (fb_chain_flush).
 */
#ifndef FB_LISTEN_CHAIN_H
#define FB_LISTEN_CHAIN_H

#include "chain.h"
#include "cycle.h"
#include "event.h"

#define FB_EVS_chain                                                                               \
	(1u << FB_EV_ACQUIRED | 1u << FB_EV_RENEWED | 1u << FB_EV_DIED | 1u << FB_EV_RELEASED)

static inline bool fb_wants_chain(const fb_env *e)
{
	return e->chain;
}

/* The slot's lease, if it holds one, to the chain, ended as `end`. */
static inline void fb_chain_hand(fb_env *e, fb_heard *h, fb_chain_end end)
{
	if (!h->chain_open)
		return;
	h->chain_open = false;
	h->chain.end = (uint8_t)end;
	if (fb_chain_take(e->chain, &h->chain) != FB_OK)
		e->chain_lost = true;
}

static inline void fb_on_chain(fb_env *e, fb_heard *h, const fb_event *ev)
{
	const fb_lease *l = ev->lease;
	switch ((fb_event_kind)ev->kind) {
	case FB_EV_ACQUIRED:
		h->chain = (fb_chain_rec){.fence = l->fence,
		                          .replaced = l->replaced,
		                          .at = l->expires_at - e->cfg->ttl_ns,
		                          .expires_at = l->expires_at,
		                          .key = ev->key,
		                          .owner = l->owner,
		                          .replaced_owner = l->replaced_owner};
		h->chain_open = true;
		return;
	case FB_EV_RENEWED:
		/* its own word's new expiry, the last the table gave (not the
		 * largest: a clock stepped back gives an earlier one, and the
		 * table then lets the next holder in by it); a renewal over
		 * another's word gives its own word nothing */
		if (ev->renewed->replaced == l->fence && ev->renewed->replaced_owner == l->owner)
			h->chain.expires_at = ev->renewed->expires_at;
		return;
	case FB_EV_DIED:
		fb_chain_hand(e, h, FB_CHAIN_HELD);
		return;
	case FB_EV_RELEASED: {
		const fb_lease *f = ev->freed;
		fb_chain_end end = ev->flag ? FB_CHAIN_HELD /* refused: taken over */
		                   : f->fence == h->chain.fence && f->owner == h->chain.owner
		                           ? FB_CHAIN_RELEASED
		                           : FB_CHAIN_FREED_ANY;
		fb_chain_hand(e, h, end);
		return;
	}
	default:
		return;
	}
}

/* The run is over: every lease still held, to the chain. */
static inline void fb_chain_flush(fb_env *e, fb_heard *h)
{
	if (e->chain)
		fb_chain_hand(e, h, FB_CHAIN_HELD);
}

#endif
