/*
 * Listener: the fault accounting, the vacuity proof. Which faults hit each
 * cycle and what they did: the cycles under each fault whose lease was
 * taken over, and those that made a stale attempt (refused or not), in its
 * slot (fb_heard.takeovers, .stale_attempts), summed after the join.
 */
#ifndef FB_LISTEN_FAULTS_H
#define FB_LISTEN_FAULTS_H

#include "cycle.h"
#include "event.h"

#define FB_EVS_faults (1u << FB_EV_RELEASED)

static inline bool fb_wants_faults(const fb_env *e)
{
	(void)e;
	return true;
}

static inline __attribute__((always_inline)) void fb_on_faults(fb_env *e, fb_heard *h,
                                                               const fb_event *ev)
{
	(void)e;
	for (int f = 0; ev->faulted && f < FB_FAULTS; f++) {
		if (!(ev->faulted & (1u << f)) || f == FB_FAULT_DELAY)
			continue; /* a delayed write's outcome is the delay line's */
		if (ev->flag)
			fb_counter_add(&h->takeovers[f], 1);
		if (ev->stale)
			fb_counter_add(&h->stale_attempts[f], 1);
	}
}

#endif
