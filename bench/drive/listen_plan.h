/*
 * Listener: the plan log (inject/plan.h). Every fault a worker takes in its
 * cycle is written down as a plan entry, for --plan-out to replay.
 */
#ifndef FB_LISTEN_PLAN_H
#define FB_LISTEN_PLAN_H

#include "cycle.h"
#include "event.h"

#define FB_EVS_plan (1u << FB_EV_FAULT)

static inline bool fb_wants_plan(const fb_env *e)
{
	(void)e;
	return true;
}

static inline void fb_on_plan(fb_env *e, fb_heard *h, const fb_event *ev)
{
	(void)h;
	fb_plan_entry p = {ev->cycle, ev->arg, ev->extra,       ev->worker,
	                   ev->fault, ev->at,  FB_PHASE_HOLDING};
	fb_plan_log_add(e->log, &p);
}

#endif
