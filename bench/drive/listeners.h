/*
 * The cycle's listeners (issue 26): a compile-time table. Each listener is
 * a header of its own (listen_NAME.h) defining FB_EVS_NAME, the events it
 * takes (1 << fb_event_kind, or'ed), and fb_on_NAME(env, heard, event), a
 * static inline function that reads the event and its own slot of the
 * worker's fb_heard, never the worker. Adding a listener is its header and
 * one line below.
 *
 * fb_emit calls each listener that takes the event's kind directly: with
 * the kind a constant at the emit site the test folds away, and no call
 * goes through a pointer.
 */
#ifndef FB_LISTENERS_H
#define FB_LISTENERS_H

#include "cycle.h"
#include "event.h"
#include "listen_faults.h"
#include "listen_narrate.h"
#include "listen_plan.h"
#include "listen_witness.h"

#define FB_LISTENERS(X) \
	X(witness)     \
	X(plan)        \
	X(narrate)     \
	X(faults)

#define FB_LISTEN_CALL(name)                      \
	if ((FB_EVS_##name) >> ev->kind & 1u)     \
		fb_on_##name(e, h, ev);

static inline __attribute__((always_inline)) void fb_emit(fb_env *e, fb_heard *h,
                                                          const fb_event *ev)
{
	FB_LISTENERS(FB_LISTEN_CALL)
}

#endif
