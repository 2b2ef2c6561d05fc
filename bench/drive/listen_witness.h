/*
 * Listener: the lease witness (bench/verify/witness.h). It hears every
 * acquire, every refusal naming a live holder, every renewal and every
 * release, on the service's own clock, and counts what they contradict in
 * its slot (fb_heard.witness). It says nothing back to the cycle: the
 * stores' refusals are judged by what was sent (fb_env_sending), a fence
 * handed out twice included.
 */
#ifndef FB_LISTEN_WITNESS_H
#define FB_LISTEN_WITNESS_H

#include "cycle.h"
#include "event.h"

#define FB_EVS_witness                                                                             \
	(1u << FB_EV_ACQUIRED | 1u << FB_EV_HELD | 1u << FB_EV_RENEWING | 1u << FB_EV_RENEWED |    \
	 1u << FB_EV_RELEASING)

/* The lease's end as the witness keeps it: its acquisition + TTL; for an
 * engine that states a shorter validity, the end it stated plus the
 * shortfall (the same, for a correct engine; later, for one that forgot
 * it, which the witness then judges on the reply). */
static inline uint64_t fb_witness_end(const fb_env *e, const fb_lease *l)
{
	return e->validity_short && l->answered_at ? l->expires_at + e->validity_short
	                                           : l->service_at + e->cfg->ttl_ns;
}

static inline bool fb_wants_witness(const fb_env *e)
{
	return e->witnessing;
}

static inline __attribute__((always_inline)) void fb_on_witness(fb_env *e, fb_heard *h,
                                                                const fb_event *ev)
{
	const fb_lease *l = ev->lease;
	switch ((fb_event_kind)ev->kind) {
	case FB_EV_ACQUIRED: /* on the service's own clock */
		fb_witness_acquired_answered(e->witness, ev->key, l->fence, l->replaced,
		                             fb_witness_end(e, l), l->answered_at, &h->witness,
		                             &h->wmemo);
		fb_witness_granted(e->witness, ev->key, l->fence, l->expires_at, l->judged_at,
		                   &h->witness);
		return;
	case FB_EV_HELD: /* held past its TTL, by the service's own instant? */
		fb_witness_refused(e->witness, ev->key, l->fence, l->expires_at, l->judged_at,
		                   &h->witness);
		return;
	case FB_EV_RENEWING:
		/* What the witness needs to judge the renewal: the newest holder
		 * it heard of, and when it went out on the in-process table's own
		 * clock (a monotonic one: a wall clock stepped back between this
		 * reading and the table's would make a rightful renewal look late).
		 * In process the table says which word the renewal replaced: the
		 * newest is not needed (nor its 16-byte load, a locked one). */
		h->newest_at = h->newest = 0;
		if (e->lops->remote)
			h->newest = fb_witness_newest(e->witness, ev->key, &h->newest_at);
		h->sent_at = !e->lops->remote && !e->stepping ? fb_clock_now(e->clock) : 0;
		return;
	case FB_EV_RENEWED:
		if (e->lops->remote) /* an engine's renewal copies the lease it renewed */
			fb_witness_renewed(e->witness, ev->key, l->fence, l->service_at, h->newest,
			                   h->newest_at, h->sent_at, l->expires_at, &h->witness);
		else
			fb_witness_renewed_over(e->witness, ev->key, l->fence, l->owner,
			                        ev->renewed->replaced, ev->renewed->replaced_owner,
			                        h->sent_at, l->expires_at, &h->witness);
		fb_witness_granted(e->witness, ev->key, l->fence, ev->renewed->expires_at,
		                   ev->renewed->judged_at, &h->witness);
		return;
	case FB_EV_RELEASING:
		fb_witness_releasing(e->witness, ev->key, l->fence);
		return;
	default:
		return;
	}
}

#endif
