/*
 * The cycle's listeners (issue 26): a compile-time table. Each listener is
 * a header of its own (listen_NAME.h) defining FB_EVS_NAME, the events it
 * takes (1 << fb_event_kind, or'ed); fb_wants_NAME(env), whether it listens
 * in this run (the witness: not under --no-check; the history line: only
 * in the simulator); and fb_on_NAME(env, heard, event), a static inline
 * function that reads the event and its own slot of the worker's fb_heard,
 * never the worker. Adding a listener is its header and one line below:
 * FB_EVS_NAME, fb_wants_NAME, fb_on_NAME, and its slot in fb_heard
 * (event.h) if it keeps one; a field of fb_event if the cycle does not say
 * yet what it needs, filled at the emit site. What must wait (the feed's
 * commit into a full log) stays an operation of the cycle, which calls the
 * listener's own function for it (fb_feed_commit).
 *
 * FB_EMIT(env, heard, KIND, fields...) builds the event only if a listener
 * takes KIND in this run, and calls each one that does directly: with the
 * kind a constant at the emit site the tests fold to the listeners' flags
 * (none, for a kind no listener takes), and no call goes through a pointer.
 * An event nobody hears costs a flag's test, or nothing.
 */
#ifndef FB_LISTENERS_H
#define FB_LISTENERS_H

#include "cycle.h"
#include "event.h"
#include "listen_chain.h"
#include "listen_faults.h"
#include "listen_feed.h"
#include "listen_narrate.h"
#include "listen_outcome.h"
#include "listen_plan.h"
#include "listen_story.h"
#include "listen_witness.h"

#define FB_LISTENERS(X)                                                                            \
	X(witness)                                                                                 \
	X(chain)                                                                                   \
	X(plan)                                                                                    \
	X(narrate)                                                                                 \
	X(faults)                                                                                  \
	X(outcome)                                                                                 \
	X(feed)                                                                                    \
	X(story)

#define FB_LISTEN_WANTS(name) || ((FB_EVS_##name) >> k & 1u && fb_wants_##name(e))
#define FB_LISTEN_CALL(name)                                                                       \
	if ((FB_EVS_##name) >> ev->kind & 1u && fb_wants_##name(e))                                \
		fb_on_##name(e, h, ev);

/* Some listener takes events of kind k in this run. */
static inline __attribute__((always_inline)) bool fb_heard_by(const fb_env *e, unsigned k)
{
	return false FB_LISTENERS(FB_LISTEN_WANTS);
}

static inline __attribute__((always_inline)) void fb_emit(fb_env *e, fb_heard *h,
                                                          const fb_event *ev)
{
	FB_LISTENERS(FB_LISTEN_CALL)
}

#define FB_EMIT(e, h, KIND, ...)                                                                   \
	do {                                                                                       \
		if (fb_heard_by((e), (KIND)))                                                      \
			fb_emit((e), (h), &(fb_event){.kind = (KIND), __VA_ARGS__});               \
	} while (0)

#endif
