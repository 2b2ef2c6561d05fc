/*
 * Listener: the story of the run's first corruption (bench/report/story.c
 * tells it). It keeps no slot: what each store did with the cycle's
 * writes, and the newer write its stale write went behind, are the outcome
 * tracker's (listen_outcome.h). When the cycle wrote stale
 * (FB_EV_STALE), or a delayed write landed stale (FB_EV_LANDED), the run's
 * first such write, and its first of the article's shape, are told into
 * fb_env.first and .shaped, and the checkers asked to keep the newer write
 * it went behind. Not under --no-check.
 */
#ifndef FB_LISTEN_STORY_H
#define FB_LISTEN_STORY_H

#include <string.h>

#include "cycle.h"
#include "event.h"

#define FB_EVS_story (1u << FB_EV_STALE | 1u << FB_EV_LANDED)

static inline bool fb_wants_story(const fb_env *e)
{
	return e->witnessing; /* not under --no-check */
}

/* What the story tells of a stale write, from its event: a copy of the
 * fields it reads, so that the event itself never leaves the emitter's
 * inlined dispatch (its address passed out of line would keep every
 * event of the cycle in memory, zeroed and filled, instead of in
 * registers). */
typedef struct fb_story_facts {
	uint8_t kind, d; /* FB_EV_STALE or FB_EV_LANDED; the event's d */
	uint16_t worker;
	uint32_t key, faulted, where;
	uint64_t fence, cycle, arg, extra, now, highest;
	int64_t read, before;
	const fb_lease *lease;
	void *conn;
} fb_story_facts;

/* The stale write of the cycle (FB_EV_STALE, s: its worker's slot) or of
 * the delivery (FB_EV_LANDED, s NULL): the story's, if it is the run's
 * first, or its first of the article's shape. Cold: once or twice a run. */
void fb_story_heard_stale(fb_env *e, const fb_outcome_heard *o, const fb_story_facts *f);

static inline __attribute__((always_inline)) void fb_on_story(fb_env *e, fb_heard *h,
                                                              const fb_event *ev)
{
	switch ((fb_event_kind)ev->kind) {
	case FB_EV_STALE:
	case FB_EV_LANDED: { /* LANDED: the store's answer; STALE: none */
		const fb_store_result *r = ev->kind == FB_EV_LANDED ? ev->res : NULL;
		fb_story_facts f = {ev->kind,    ev->d,
		                    ev->worker,  ev->key,
		                    ev->faulted, ev->where,
		                    ev->fence,   ev->cycle,
		                    ev->arg,     ev->extra,
		                    ev->now,     r ? r->highest : 0,
		                    ev->read,    r ? r->before : 0,
		                    ev->lease,   ev->conn};
		fb_story_heard_stale(e, h ? &h->outs : NULL, &f);
		return;
	}
	default:
		return;
	}
}

#endif
