/*
 * Listener: the story's stale write (listen_story.h), told from the event
 * and the listener's slot. Cold: once or twice a run.
 */
#include "listen_story.h"

#include <pthread.h>

/* Ask the checkers to keep the stale write (key, fence) and the newer write
 * it went behind. Before the write is logged: the consumer that walks it
 * sees the claim. */
static void watch(fb_check_watch *wt, uint32_t key, uint64_t fence)
{
	wt->key = key;
	wt->fence = fence;
	atomic_store_explicit(&wt->armed, 1, memory_order_release); /* key and fence first */
}

/* Without a checker: the lease slot still names the newer holder if it has
 * not moved on (conn: the event's lease connection). */
static void peek_newer(fb_env *e, void *conn, fb_first_corruption *fc)
{
	fb_lease now;
	if (!e->checking && e->lops->peek(conn, fc->key, &now) == FB_IO_OK &&
	    now.fence == fc->newer_fence) {
		fc->newer_owner = now.owner;
		fc->newer_acquired_at = now.expires_at - e->cfg->ttl_ns;
	}
}

/* What the cycle's stale write did at each store: a resent write's first
 * copy where that copy was stale somewhere (the checker's watch keeps the
 * first stale record of a key and fence, so the story tells that copy). */
static const uint8_t *told_outcome(const fb_outcome_heard *o, const uint64_t **highest)
{
	for (int d = 0; o->copied && d < FB_DISCIPLINES; d++)
		if (o->outcome0[d] == FB_OUT_STALE) {
			*highest = o->highest0;
			return o->outcome0;
		}
	*highest = o->highest;
	return o->outcome;
}

/* Issue 24: the first outside fault (the wire's, the nemesis's) logged
 * since this cycle's acquire began (since: the log's count then), if the
 * log still holds it: the first that can have held this writer back; and
 * the nemesis faults logged before it, which can have re-minted the
 * writer's fence. */
static void tell_outside(fb_env *e, uint64_t since, fb_first_corruption *fc)
{
	pthread_mutex_lock(&e->outside_mu);
	uint64_t s = since + 1;
	const fb_outside_fault *o = &e->outside[s % FB_OUTSIDE_LOG];
	if (fc->fault < 0 && o->seq == s) { /* logged, and not yet written over */
		fc->fault = (int)o->fault;
		fc->fault_at = o->at;
		fc->fault_ns = o->ns;
		fc->fault_where = o->what;
	}
	/* the nemesis faults before the acquire, if the log still holds them:
	 * a failover re-mints fences after its fault (story.c judges which,
	 * if any, was under way between the two acquires) */
	int n = 0;
	uint64_t keep[FB_STORY_BEFORE];
	for (uint64_t q = since; q > 0 && n < FB_STORY_BEFORE; q--) {
		const fb_outside_fault *b = &e->outside[q % FB_OUTSIDE_LOG];
		if (b->seq != q)
			break; /* written over: older ones are gone too */
		if (b->fault == FB_FAULT_NEMESIS)
			keep[n++] = q;
	}
	for (int i = 0; i < n; i++) { /* oldest first */
		const fb_outside_fault *b = &e->outside[keep[n - 1 - i] % FB_OUTSIDE_LOG];
		fc->before[i].at = b->at;
		fc->before[i].end = b->end;
		fc->before[i].name = b->what;
	}
	fc->nbefore = (uint8_t)n;
	pthread_mutex_unlock(&e->outside_mu);
}

/* The cycle as the story's stale write: who, what, the fault, what each
 * store did. */
static void tell(fb_env *e, const fb_outcome_heard *o, const fb_story_facts *ev,
                 fb_first_corruption *fc)
{
	*fc = (fb_first_corruption){.found = true,
	                            .key = ev->key,
	                            .writer = ev->worker,
	                            .fault = -1,
	                            .fence = ev->fence,
	                            .expires_at = ev->lease->expires_at,
	                            .acquired_at = ev->lease->expires_at - e->cfg->ttl_ns,
	                            .wrote_at = ev->now,
	                            .newer_fence = o->newer,
	                            .erased = o->erased,
	                            .t0 = e->t0};
	const uint64_t *highest;
	memcpy(fc->outcome, told_outcome(o, &highest), sizeof fc->outcome);
	memcpy(fc->highest, highest, sizeof fc->highest);
	for (int i = 0; i < e->nactive; i++) {
		int j = ev->d + i;
		fc->order[i] = (uint8_t)e->active[j >= e->nactive ? j - e->nactive : j];
	}
	for (int f = 0; f < FB_FAULTS; f++)
		if (ev->faulted & (1u << f)) {
			fc->fault = f;
			break;
		}
	if (e->wiring) /* issue 24 */
		tell_outside(e, ev->cycle, fc);
	if (fc->fault == FB_FAULT_PAUSE) {
		fc->fault_at = ev->arg;
		fc->fault_ns = ev->extra;
		fc->fault_where = ev->where;
	}
	peek_newer(e, ev->conn, fc);
}

/* The article's shape: the unfenced store took the stale write, the fenced
 * one refused it (its write, or the read before it). */
static bool article_shaped(const fb_outcome_heard *o)
{
	const uint64_t *h;
	const uint8_t *t = told_outcome(o, &h);
	uint8_t f = t[FB_FENCED];
	return t[FB_UNFENCED] == FB_OUT_STALE && (f == FB_OUT_REJECTED || f == FB_OUT_READ_REFUSED);
}

/* A delayed write landed stale, the run's first corruption: its story. */
static void tell_landed(fb_env *e, const fb_story_facts *ev)
{
	fb_discipline d = (fb_discipline)ev->d;
	fb_first_corruption *fc = &e->first;
	*fc = (fb_first_corruption){.found = true,
	                            .key = ev->key,
	                            .writer = ev->worker,
	                            .fault = FB_FAULT_DELAY,
	                            .fence = ev->fence,
	                            .wrote_at = ev->now,
	                            .fault_at = ev->arg,
	                            .fault_ns = ev->now > ev->arg ? ev->now - ev->arg : 0,
	                            .newer_fence = ev->highest,
	                            .erased = ev->read - ev->before,
	                            .t0 = e->t0};
	fc->outcome[d] = FB_OUT_STALE;
	fc->highest[d] = ev->highest;
	fc->order[0] = (uint8_t)d;
	peek_newer(e, ev->conn, fc);
	watch(&e->watch_first, ev->key, ev->fence);
}

void fb_story_heard_stale(fb_env *e, const fb_outcome_heard *o, const fb_story_facts *ev)
{
	if (ev->kind == FB_EV_LANDED) {
		if (fb_claim_once(&e->first_claimed))
			tell_landed(e, ev);
		return;
	}
	if (fb_claim_once(&e->first_claimed)) {
		tell(e, o, ev, &e->first);
		watch(&e->watch_first, ev->key, ev->fence);
	}
	if (article_shaped(o) && fb_claim_once(&e->shape_claimed)) {
		tell(e, o, ev, &e->shaped);
		watch(&e->watch_shaped, ev->key, ev->fence);
	}
}
