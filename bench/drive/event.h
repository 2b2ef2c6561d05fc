/*
 * The cycle's events (issue 26, DESIGN section 8): one typed event at each
 * named point of a worker's cycle, for the listeners (listeners.h) to take.
 * A listener reads the event, and its own per-worker slot (fb_heard), never
 * the worker: what it needs to know is in the event.
 *
 * An event is built on the emitter's stack and handed by pointer to a
 * static inline dispatch over a compile-time table: with the kind a
 * constant at each emit site, a listener that does not take the kind costs
 * nothing, and none is called through a pointer.
 */
#ifndef FB_EVENT_H
#define FB_EVENT_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "chain.h"
#include "checker.h"
#include "inject.h"
#include "witness.h"

/* The named points, in the cycle's order. */
typedef enum fb_event_kind {
	FB_EV_ACQUIRED,  /* the lease granted: key, fence, lease */
	FB_EV_HELD,      /* the lease refused, held by another: key, lease (its holder's) */
	FB_EV_READ,      /* store d's read: served or refused (served, balance, highest) */
	FB_EV_FAULT,     /* a fault taken by the worker: fault, at, arg, extra, cycle */
	FB_EV_RENEWING,  /* a late heartbeat about to be sent: key, lease */
	FB_EV_RENEWED,   /* ... and extended: key, lease (the old), renewed (the new) */
	FB_EV_DIED,      /* crashed holding its lease: key, fence */
	FB_EV_CHECKED,   /* the lease check: checked */
	FB_EV_UNWRITTEN, /* store d gets no write, its read refused: outcome, highest */
	FB_EV_WRITTEN,   /* store d's write (or its resent copy): its outcome */
	FB_EV_STALE,     /* the writes done, one of them accepted stale: the story's facts */
	FB_EV_RELEASING, /* about to release: key, fence, lease */
	FB_EV_RELEASED,  /* released: taken_over, stale, faulted (the faults that hit) */
	FB_EV_LANDED,    /* a delayed write landed stale (heard with no slot: h is NULL) */
	FB_EVS
} fb_event_kind;

/* The written event's outcome: the store's (fb_outcome_t: accepted,
 * accepted-stale, rejected, refused ...), or one of these. */
#define FB_EV_IN_FLIGHT 0xfe /* held by a delay: its outcome is the delivery's */
#define FB_EV_NO_ANSWER 0xff /* sent, never answered: indeterminate */

typedef struct fb_event {
	uint8_t kind;    /* fb_event_kind */
	uint8_t d;       /* READ, (UN)WRITTEN, LANDED: the store (fb_discipline); STALE: the
	                  * cycle's first store (the rotation of fb_env.active) */
	uint8_t outcome; /* WRITTEN: fb_outcome_t, or FB_EV_IN_FLIGHT / FB_EV_NO_ANSWER;
	                  * UNWRITTEN: the refused read's, judged (FB_OUT_READ_REFUSED ...) */
	uint8_t fault;   /* FAULT: fb_fault */
	uint8_t at;      /* FAULT: fb_fault_at */
	bool served;     /* READ: served (else refused) */
	bool copy;       /* WRITTEN: a resent copy */
	bool batched;    /* READ, WRITTEN: one of a phase sent in one round trip */
	bool flag;       /* CHECKED: passed; RELEASED: taken over */
	bool stale;      /* RELEASED: the cycle made a stale attempt */
	uint16_t worker; /* its id, from 1 */
	uint32_t key;
	uint32_t faulted; /* RELEASED, STALE: the faults that hit the cycle (1 << fb_fault) */
	uint32_t where;   /* STALE: the last pause's place (fb_fault_port.last_where) */
	uint64_t fence;
	uint64_t cycle;      /* FAULT: the worker's cycle; STALE: the outside faults' log
	                      * count when its acquire began (fb_env.outside_seq) */
	uint64_t arg, extra; /* FAULT: the plan entry's; STALE: the last pause's instant
	                      * and length; LANDED: when it was issued (arg) */
	uint64_t now;        /* WRITTEN, STALE, LANDED: the instant on the lease clock */
	int64_t balance;     /* READ: the balance read */
	int64_t read;        /* WRITTEN, LANDED: the balance the write was computed from */
	uint64_t highest;    /* READ, UNWRITTEN: the fence the store had seen */
	/* WRITTEN, LANDED: the store's answer (balance written, before, highest,
	 * version), read where it lies: copied into the event, its fields cost
	 * a load and a spill each on the worker's path */
	const fb_store_result *res;
	const fb_lease *lease;   /* ACQUIRED, HELD, RENEWING, RENEWED, WRITTEN, STALE, RELEASING */
	const fb_lease *renewed; /* RENEWED */
	const fb_lease *freed;   /* RELEASED: the word its release freed (zero: none, or the
	                          * engine cannot say); NULL where no chain listens */
	void *conn; /* STALE, LANDED: the lease connection to ask (fb_lease_ops.peek) */
} fb_event;

/* The simulator's history line's part of a step (listen_narrate.h): what
 * the step's reads and writes did, as their events said. */
typedef struct fb_narration {
	bool sent; /* a write of this cycle went in flight */
	bool served[FB_DISCIPLINES];
	uint8_t outcome[FB_DISCIPLINES]; /* this cycle's, by the last copy */
	int64_t bal[FB_DISCIPLINES];
	uint64_t highest[FB_DISCIPLINES];
	int64_t balance; /* the last write answered alone (not in a batch) */
	uint64_t version;
} fb_narration;

/* The outcome tracker's slot (listen_outcome.h), read by the feed and the
 * story: what each store did with the cycle's writes, kept once for both.
 * The outcomes and the copied flag fill one word: the cycle's start clears
 * them in one store. */
typedef struct fb_outcome_heard {
	union {
		struct {
			uint8_t outcome[FB_DISCIPLINES];  /* by the last copy */
			uint8_t outcome0[FB_DISCIPLINES]; /* ... after a resent write's first copy */
			bool copied;                      /* a write of the cycle was resent */
		};
		uint64_t clear;
	};
	uint64_t highest[FB_DISCIPLINES];  /* the fence each store had seen, as it answered */
	uint64_t highest0[FB_DISCIPLINES]; /* ... to a resent write's first copy */
	/* a stale write's: set by its WRITTEN, before the cycle's STALE (no
	 * clearing at the cycle's start) */
	uint64_t newer; /* the fence it went behind */
	int64_t erased; /* ... and the debits it erased */
} fb_outcome_heard;

/* The checker feed's slot (listen_feed.h): the cycle's accepted writes as
 * records, for its commit (which adds the tracker's outcomes). */
typedef struct fb_feed_heard {
	fb_check_rec todo[2 * FB_DISCIPLINES];
	uint8_t ntodo, done; /* records kept; ... and committed */
} fb_feed_heard;

/* Each listener's per-worker slot: written only by the listeners, on the
 * worker's thread (or its driver's step); read after the join. */
typedef struct fb_heard {
	fb_witness_counts witness;
	fb_witness_memo wmemo;
	fb_chain_rec chain; /* the lease it holds, for the chain (listen_chain.h) */
	bool chain_open;    /* ... not handed over yet */
	uint64_t newest, newest_at, sent_at; /* a renewal's, from RENEWING to RENEWED */
	fb_narration narr;
	fb_counter takeovers[FB_FAULTS];      /* cycles under the fault whose lease was taken */
	fb_counter stale_attempts[FB_FAULTS]; /* cycles under the fault that wrote stale */
	fb_outcome_heard outs;
	fb_feed_heard feed;
} fb_heard;

#endif
