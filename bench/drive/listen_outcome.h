/*
 * Listener: the outcome tracker. What each store did with the cycle's
 * writes (the last copy's outcome and the first copy's, the fence each
 * store had seen as it answered; a stale write's newer fence and the debits
 * it erased), kept once in its slot (fb_heard.outs)
 * for the two listeners that read it: the checker feed adds the outcomes
 * to each record it commits, the story tells them of a stale write. Heard
 * before either (listeners.h), whenever either listens: not under
 * --no-check (the feed listens only when the story does too).
 */
#ifndef FB_LISTEN_OUTCOME_H
#define FB_LISTEN_OUTCOME_H

#include "cycle.h"
#include "event.h"

#define FB_EVS_outcome (1u << FB_EV_ACQUIRED | 1u << FB_EV_UNWRITTEN | 1u << FB_EV_WRITTEN)

_Static_assert(2 * FB_DISCIPLINES + 1 <= sizeof(uint64_t),
               "the outcomes and the copied flag are cleared in one store");

static inline bool fb_wants_outcome(const fb_env *e)
{
	return e->witnessing; /* the story's; the feed's (e->checking) implies it */
}

static inline __attribute__((always_inline)) void fb_on_outcome(fb_env *e, fb_heard *h,
                                                                const fb_event *ev)
{
	(void)e;
	fb_outcome_heard *o = &h->outs;
	switch ((fb_event_kind)ev->kind) {
	case FB_EV_ACQUIRED: /* a new cycle's writes (the fences seen stay) */
		o->clear = 0;
		return;
	case FB_EV_UNWRITTEN: /* its read refused: the read's outcome is the store's */
		o->outcome[ev->d] = o->outcome0[ev->d] = ev->outcome;
		o->highest[ev->d] = ev->highest;
		return;
	case FB_EV_WRITTEN: {
		if (ev->outcome == FB_EV_IN_FLIGHT)
			return;
		uint64_t highest = ev->res->highest;
		o->highest[ev->d] = highest;
		o->copied |= ev->copy;
		if (!ev->copy)
			o->highest0[ev->d] = highest;
		if (ev->outcome == FB_EV_NO_ANSWER)
			return;
		o->outcome[ev->d] = ev->outcome;
		if (!ev->copy)
			o->outcome0[ev->d] = ev->outcome;
		if (ev->outcome == FB_OUT_STALE) { /* the story's (newer, erased) */
			o->newer = highest;
			o->erased = ev->read - ev->res->before;
		}
		return;
	}
	default:
		return;
	}
}

#endif
