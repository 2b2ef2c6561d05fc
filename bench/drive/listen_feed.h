/*
 * Listener: the checker feed (bench/verify/feed.h). Every accepted write of
 * the cycle is kept as a record in its slot (fb_heard.feed); the cycle's
 * commit (fb_feed_commit, after the release) puts them in the worker's log
 * for the checkers to walk, with what each store did with the cycle's
 * writes as the outcome tracker kept it (listen_outcome.h). Only while the checkers see every write
 * (fb_env.checking).
 */
#ifndef FB_LISTEN_FEED_H
#define FB_LISTEN_FEED_H

#include <string.h>

#include "cycle.h"
#include "event.h"

#define FB_EVS_feed (1u << FB_EV_ACQUIRED | 1u << FB_EV_WRITTEN)

static inline bool fb_wants_feed(const fb_env *e)
{
	return e->checking;
}

/* An accepted write's record, made in place at r: what the store said of
 * it (res), written with fence from the balance read, at wrote_at; all but
 * its outcomes, which the caller sets (a cycle's at its commit, from the
 * outcome tracker: fb_feed_fill). Each record is made here: a cycle's
 * (fb_on_feed) and a delayed write's as it lands (fb_feed_landed). Field by
 * field, never through a temporary: gcc builds a compound literal's small
 * fields on the stack and reads them back 16 bytes at a time, and each
 * such read of stores still in flight stalls the worker (store-to-load
 * forwarding fails), three times a record: 29% of the worker loop's
 * samples at -t 1 (perf annotate). */
static inline void fb_feed_record(fb_check_rec *r, uint64_t fence, int64_t read,
                                  const fb_store_result *res, uint64_t wrote_at, uint32_t key,
                                  uint16_t writer, uint8_t d)
{
	r->fence = fence;
	r->read = read;
	r->replaced = res->before;
	r->written = res->balance;
	r->wrote_at = wrote_at;
	r->version = res->version;
	r->key = key;
	r->held = 0;
	r->writer = writer;
	r->d = d;
	r->delayed = 0;
	r->resent = 0;
}

/* A delayed write that landed accepted at `landed` (fb_cycle_deliver): its
 * cycle is over, so it carries no lease age, and what this store did is
 * the only outcome it knows. */
static inline void fb_feed_landed(fb_check_rec *r, const fb_delayed_write *dw, int64_t read,
                                  const fb_store_result *res, uint64_t landed)
{
	fb_feed_record(r, dw->fence, read, res, landed, dw->key, dw->worker, dw->mode);
	r->delayed = 1;
	memset(r->outcome, 0, sizeof r->outcome);
	r->outcome[dw->mode] = res->stale ? FB_OUT_STALE : FB_OUT_ACCEPTED;
}

static inline __attribute__((always_inline)) void fb_on_feed(fb_env *e, fb_heard *h,
                                                             const fb_event *ev)
{
	fb_feed_heard *f = &h->feed;
	switch ((fb_event_kind)ev->kind) {
	case FB_EV_ACQUIRED: /* a new cycle */
		f->ntodo = f->done = 0;
		return;
	case FB_EV_WRITTEN:
		if (ev->outcome != FB_OUT_ACCEPTED && ev->outcome != FB_OUT_STALE)
			return;
		/* its cycle's outcomes are added as it is logged (fb_feed_fill) */
		fb_check_rec *r = &f->todo[f->ntodo++];
		fb_feed_record(r, ev->fence, ev->read, ev->res, ev->now, ev->key, ev->worker,
		               ev->d);
		r->held = fb_check_held(ev->now, ev->lease->expires_at - e->cfg->ttl_ns);
		r->resent = ev->copy;
		return;
	default:
		return;
	}
}

/* The cycle's next record into slot, with what the cycle did at every
 * store as the outcome tracker kept it (o, listen_outcome.h): a resent
 * write's first copy, what that copy did (the same as the last copy's
 * where nothing was resent). */
static inline void fb_feed_fill(fb_feed_heard *f, const fb_outcome_heard *o, fb_check_rec *slot)
{
	const fb_check_rec *r = &f->todo[f->done++];
	*slot = *r;
	/* r's resent, not slot's: the slot's line may still be on its way from
	 * the consumer's core, and a load from it waits for the line */
	memcpy(slot->outcome, r->resent ? o->outcome : o->outcome0, sizeof slot->outcome);
}

/*
 * Wide logs: the cycle's records that are near their walks go first, none
 * waiting, the rest keeping their order. A producer that waits for one
 * walk must not hold a record that another walk waits for: at thousands
 * of threads a worker preempted for seconds mid-cycle writes its stores
 * far apart in their walks, and two such producers, each holding what the
 * other's walk waits for, would wait for each other until the run ends.
 * A record of one walk never passes an earlier one of the same walk: its
 * version is higher, so it is near only if that one is.
 */
static inline void fb_feed_put_near(fb_feed_heard *f, const fb_outcome_heard *o,
                                    fb_feed_log *log)
{
	for (uint8_t j = f->done; j < f->ntodo; j++) {
		fb_check_rec *slot;
		if (!fb_feed_near_now(log, &f->todo[j]) || !(slot = fb_feed_slot(log)))
			continue;
		if (j != f->done) {
			fb_check_rec r = f->todo[j];
			memmove(&f->todo[f->done + 1], &f->todo[f->done],
			        (size_t)(j - f->done) * sizeof r);
			f->todo[f->done] = r;
		}
		fb_feed_fill(f, o, slot);
		fb_feed_put(log);
	}
}

/*
 * The cycle's commit, after its release: the kept records to the worker's
 * log, published together. A full log waits for room when e->blocking
 * (threads: held by a walk, bounded); else false: try again later (the
 * simulator yields). True: done (or the wait was given up: the run failed).
 */
static inline __attribute__((always_inline)) bool fb_feed_commit(fb_env *e, fb_heard *h,
                                                                 fb_feed_log *log, uint64_t *stalls)
{
	fb_feed_heard *f = &h->feed;
	const fb_outcome_heard *o = &h->outs;
	while (f->done < f->ntodo) {
		fb_check_rec *slot = NULL;
		bool kept = false;
		if (log->wide && e->blocking) {
			fb_feed_put_near(f, o, log);
			if (f->done == f->ntodo)
				break;
		}
		if (fb_feed_near(log, &f->todo[f->done], e->blocking, stalls) &&
		    !(slot = fb_feed_slot(log)) && fb_feed_room(log, e->blocking, stalls))
			continue;
		if (!slot) {
			if (!e->blocking)
				return false;
			/* the run stopped: the rest to the spill, for the last pass */
			if (!(slot = fb_feed_spill(log)))
				break; /* the wait was given up: the run has failed */
			kept = true;
		}
		fb_feed_fill(f, o, slot);
		if (!kept)
			fb_feed_put(log);
	}
	if (f->ntodo)
		fb_feed_publish(log);
	return true;
}

#endif
