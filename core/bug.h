/*
 * Planted bugs: deliberately broken variants of the lease table and the
 * store, selectable at run time (--bug), so the tests can prove the
 * checkers catch what they claim to catch (locktorture's lock_busted).
 * Never on unless asked for, and announced loudly when it is.
 */
#ifndef FB_BUG_H
#define FB_BUG_H

typedef enum fb_bug {
	FB_BUG_NONE,
	FB_BUG_GE_STORE,           /* store: >= instead of > (an equal token passes) */
	FB_BUG_TWO_STEP,           /* lease: the fence minted in a second step after the acquire */
	FB_BUG_IGNORE_EXPIRY,      /* lease: acquire takes a lease that is still live */
	FB_BUG_BLIND_RELEASE,      /* lease: release without the owner/fence check */
	FB_BUG_TRUST_CLIENT,       /* store: fenced trusts the client's is_held(), checks nothing */
	FB_BUG_UNREGISTERED_READS, /* store: fenced forgets to register reads */
	FB_BUG_BATCH_FENCES,       /* lease: fences pre-allocated per thread in batches */
	FB_BUG_REFUSE_HOLDER,      /* store: fenced refuses one token in 64, newest or not */
	FB_BUG_APPLY_REFUSED,      /* store: fenced applies one refused write in 8 all the same */
	FB_BUG_STALE_READ,         /* store: fenced checks a read against the last accepted
	                              fence, not the highest seen (issue 27) */
	FB_BUG_LONG_LEASE,         /* lease: a slot holds its key for twice the TTL it grants */
	FB_BUG_RENEW_ANY,          /* lease: a renewal succeeds for a non-holder, or expired */
	FB_BUG_CONTROL_READS,      /* store: the write-fenced control registers reads */
	FB_BUG_SLOW_CORE,          /* clock: the lease clock reads 2 ms behind on one core */
	FB_BUG_CONTROL_CONFLICT,   /* store: the write-fenced control registers reads and calls
	                              its refusals a conflict of its own, not stale */
	FB_BUGS
} fb_bug;

extern const char *const fb_bug_names[FB_BUGS];
extern const char *const fb_bug_what[FB_BUGS];

#endif
