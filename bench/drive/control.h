/*
 * Issue 27: the write-fenced control that stops being one. Under --op rmw a
 * write-fenced store (the article's write-only check) must lose an update
 * whenever two writes it has to accept land in this order:
 *
 *   B's read is served; then write A is sent and replied; then B's write is
 *   sent; and each of A and B carried a fence above every write fence sent
 *   to that store on the key before it was sent, with none higher sent by
 *   its reply (so a correct write-fenced store, which admits a token above
 *   the highest it has written, accepted both).
 *
 * Then B's write replaced a balance newer than the one B read, and the
 * ledger (one fixed amount a write) counts at least one debit lost: a
 * chain of writes each computed from the balance the previous one left
 * would be the only way to lose none. Such a B write is a chance. A
 * correct store loses an update at every chance, so one chance with no
 * update lost is enough to say the control is not one (DESIGN: a verdict
 * on the comparison, exit 1). Judged on fencebench's own record of what it
 * sent and what came back, with no timing; writes delivered late by the
 * network and resent copies are no chance (the count only misses some).
 * Only when refusals are judged (every call is this process's).
 */
#ifndef FB_CONTROL_H
#define FB_CONTROL_H

#include "cycle.h"

static inline bool control_on(const fb_env *e, fb_discipline d)
{
	return d == FB_WRITE_FENCED && e->wf_judged;
}

/*
 * No locked instruction: the key's write order is read off the fences
 * themselves. The cycle records every fence sent to the store before the
 * call goes (cycle.c's `sending`, a max), and a write that had to be
 * accepted carries a fence above every one sent before it: so it was sent
 * after B's read exactly when its fence is above the highest sent when
 * the read was served. The highest such fence replied so far is a max
 * kept by plain stores: a reply held up between reading the record and
 * writing it can set it back (until a higher fence comes), which can only
 * hide chances, never make one (every fence kept there is one that had to
 * be accepted, and was replied).
 */

/* Store d served this cycle's read: the highest write fence sent to it on
 * the key so far. */
static inline void control_read(fb_worker *w, fb_discipline d)
{
	if (control_on(w->env, d))
		w->wf_read_at =
		        atomic_load_explicit(fb_env_sent(w->env, w->key, d), memory_order_seq_cst);
}

/* The cycle's (first) write to store d is about to be sent: above every
 * write fence sent before it? and the highest fence of a write that had
 * to be accepted, replied so far. Before `sending` records it. */
static inline void control_send(fb_worker *w, fb_discipline d)
{
	fb_env *e = w->env;
	if (!control_on(e, d))
		return;
	uint64_t before = atomic_load_explicit(fb_env_sent(e, w->key, d), memory_order_seq_cst);
	w->wf_above = before < w->l.fence;
	/* acquire: pairs with the reply's release, which came after it */
	w->wf_seen = atomic_load_explicit(&fb_env_marks(e, w->key)->wf, memory_order_acquire);
	w->wf_armed = true;
}

/* Its reply came back (accepted or not: what a correct store had to do is
 * judged by what was sent). Another lease that sent the same fence (one
 * handed out twice) recorded it before its call went: if that call came
 * first, a correct store refused this one. */
static inline void control_reply(fb_worker *w, fb_discipline d, fb_mode_counters *mc)
{
	fb_env *e = w->env;
	if (!control_on(e, d) || !w->wf_armed)
		return;
	w->wf_armed = false;
	if (!w->wf_above ||
	    atomic_load_explicit(fb_env_sent(e, w->key, d), memory_order_seq_cst) != w->l.fence ||
	    fb_env_sent_twice(e, w->key, d, w->l.fence))
		return; /* a correct store may have refused it */
	if (w->wf_seen > w->wf_read_at)
		fb_counter_add(&mc->control_chances, 1);
	_Atomic uint64_t *hi = &fb_env_marks(e, w->key)->wf;
	/* release: this reply before the fence that says it came */
	if (atomic_load_explicit(hi, memory_order_relaxed) < w->l.fence)
		atomic_store_explicit(hi, w->l.fence, memory_order_release);
}

#endif
