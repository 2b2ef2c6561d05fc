/*
 * Listener: the simulator's history line. What each step's reads and
 * writes did, kept in the worker's narration slot as their events say, for
 * the line the simulator writes after the step (sim.c h_step). Only while
 * the simulator narrates (fb_env.narrating).
 */
#ifndef FB_LISTEN_NARRATE_H
#define FB_LISTEN_NARRATE_H

#include <string.h>

#include "cycle.h"
#include "event.h"

#define FB_EVS_narrate (1u << FB_EV_ACQUIRED | 1u << FB_EV_READ | 1u << FB_EV_WRITTEN)

static inline bool fb_wants_narrate(const fb_env *e)
{
	return e->narrating;
}

static inline __attribute__((always_inline)) void fb_on_narrate(fb_env *e, fb_heard *h,
                                                                const fb_event *ev)
{
	(void)e;
	fb_narration *n = &h->narr;
	switch ((fb_event_kind)ev->kind) {
	case FB_EV_ACQUIRED: /* a new cycle's writes */
		n->sent = false;
		memset(n->outcome, 0, sizeof n->outcome);
		return;
	case FB_EV_READ:
		n->served[ev->d] = ev->served;
		n->bal[ev->d] = ev->balance;
		n->highest[ev->d] = ev->highest;
		return;
	case FB_EV_WRITTEN:
		if (ev->outcome == FB_EV_IN_FLIGHT) {
			n->sent = true;
			return;
		}
		if (ev->outcome != FB_EV_NO_ANSWER)
			n->outcome[ev->d] = ev->outcome;
		if (!ev->batched) { /* the store's answer to a write sent alone */
			n->balance = ev->res->balance;
			n->version = ev->res->version;
		}
		return;
	default:
		return;
	}
}

#endif
