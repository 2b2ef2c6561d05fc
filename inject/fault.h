/*
 * The fault catalogue (DESIGN section 4): what can go wrong around a lease,
 * where in the worker's cycle it strikes, and how a client may check its
 * lease before writing. Shared by the real-thread injector and the
 * deterministic simulator.
 */
#ifndef FB_FAULT_H
#define FB_FAULT_H

#include <stdbool.h>

typedef enum fb_fault {
	FB_FAULT_PAUSE,        /* the holder is suspended past the TTL: the GC pause */
	FB_FAULT_SKEW,         /* a clock lies: the worker's runs slow or jumps back (it
	                          believes a dead lease is live); a wall-clock lease
	                          service's steps forward (leases die early) */
	FB_FAULT_DELAY,        /* a write already sent is delivered after the TTL */
	FB_FAULT_CRASH,        /* the holder dies holding the lease; the TTL must free it */
	FB_FAULT_RENEW,        /* a late heartbeat: the renewal races the expiry and the
	                          client believes it extended a lease already taken */
	FB_FAULT_RETRY,        /* a write's acknowledgement is lost: the client sends the
	                          same write again, with the same fence (contract 5) */
	FB_FAULT_SERVER_PAUSE, /* the lease service itself stops answering for a
	                          while (Redis CLIENT PAUSE): every client's lease
	                          call waits, and leases run out meanwhile */
	/* issue 14: a node of a lease service made of independent nodes has its
	 * clock jump forward (a Redlock node under libfaketime), so the leases
	 * it keeps expire early and a second client can win a majority */
	FB_FAULT_NODE_JUMP,
	/* issue 24: the network on the real path, through fencebench's own
	 * TCP proxy (an engine URL's ?proxy=1): one connection's direction, or
	 * both, carries nothing for a while; or its bytes arrive late */
	FB_FAULT_PARTITION,
	FB_FAULT_WIRE_DELAY,
	/* ... or the connection is torn down (an RST both ways): the call in
	 * flight has an unknown outcome, and the client must connect again */
	FB_FAULT_WIRE_RESET,
	/* issue 24: a user's own command starts a fault and heals it
	 * (--nemesis exec:COMMAND): any cluster, faulted the same way */
	FB_FAULT_NEMESIS,
	FB_FAULTS
} fb_fault;

extern const char *const fb_fault_names[FB_FAULTS];

/* The faults struck outside the workers, counted for the cycles that span
 * them: the wire's three and the nemesis, FB_FAULT_PARTITION onwards. */
#define FB_FAULTS_OUTSIDE (FB_FAULT_NEMESIS - FB_FAULT_PARTITION + 1)

/* A fault of the wire through fencebench's proxy (issue 24). */
static inline bool fb_fault_wire(int f)
{
	return f >= FB_FAULT_PARTITION && f <= FB_FAULT_WIRE_RESET;
}

/* Which way a wire fault holds bytes (a plan's "at" for partition and
 * wire-delay): both, towards the server, towards the client. */
typedef enum fb_wire_dir {
	FB_WIRE_BOTH,
	FB_WIRE_TO_SERVER,
	FB_WIRE_TO_CLIENT,
	FB_WIRE_DIRS
} fb_wire_dir;

extern const char *const fb_wire_dir_names[FB_WIRE_DIRS];

/* Where in the cycle a fault strikes. */
typedef enum fb_fault_at {
	FB_AT_ANY,           /* a signal at whatever instant it arrives */
	FB_AT_AFTER_READ,    /* between the read and the lease check */
	FB_AT_AFTER_CHECK,   /* between the lease check and the write: the TOCTOU */
	FB_AT_TAKEOVER,      /* after-read, and the next holder of the key is held at
	                        its own point until after this one wakes */
	FB_AT_MIX,           /* each fault picks one of the four above; half of its
	                        takeovers are takeover-read (by the pause length's
	                        parity: the seed's stream stays the same) */
	FB_AT_TAKEOVER_READ, /* before the read, and the next holder of the key is
	                        held after its own read until after this one wakes:
	                        this stale holder's read falls between the newer
	                        holder's read and its write (issue 27, item 4) */
	FB_AT_COUNT
} fb_fault_at;

extern const char *const fb_fault_at_names[FB_AT_COUNT];

/* What a worker checks just before writing. */
typedef enum fb_check_lease {
	FB_CHECK_NONE,    /* nothing: write under whatever lease it has */
	FB_CHECK_IS_HELD, /* ask the lease service: is_held() (contract 6) */
	FB_CHECK_LOCAL,   /* its own clock against TTL since the acquire, as
	                     Redlock clients compute validity */
	FB_CHECK_COUNT
} fb_check_lease;

extern const char *const fb_check_lease_names[FB_CHECK_COUNT];

/* The clock the lease service computes expiry on. */
typedef enum fb_lease_clock {
	FB_LEASE_CLOCK_MONOTONIC, /* never steps */
	FB_LEASE_CLOCK_REALTIME,  /* the wall clock: NTP steps it, and skew faults do */
	FB_LEASE_CLOCK_COUNT
} fb_lease_clock_kind;

extern const char *const fb_lease_clock_names[FB_LEASE_CLOCK_COUNT];

#endif
