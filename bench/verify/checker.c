#define _GNU_SOURCE
#include "checker.h"
#include "verdict.h"

#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * Walk state of a key, one 16-byte word: lo = next_version << 48 | max
 * fence, hi = balance after the last walked write. A thread walks record v
 * by CAS from (v, max, bal) to (v + 1, max', bal'); the winner alone adds
 * to the tallies, so each record counts exactly once.
 */
#define WALK_FENCE_MASK FB_FENCE_MAX
#define TAG_PUBLISHED   (UINT64_C(1) << 16)

typedef struct rec {
	_Atomic uint64_t tag; /* version | TAG_PUBLISHED once the fields are in */
	_Atomic uint64_t fence;
	_Atomic int64_t read, replaced, written;
} rec;

typedef struct ckey {
	alignas(FB_PAD_LINE) fb_atomic_u128 walk;
	/* Records in the ring not yet walked. A write committed in order steps
	 * the walk itself and never touches the ring; it looks here for
	 * records that arrived early and wait behind it. */
	_Atomic uint64_t parked;
	/* Commits parked on `seq` (a futex) until the walk makes room in the
	 * ring: a stepper that sees waiters bumps seq and wakes them. */
	_Atomic uint32_t waiters, seq;
	/* Accepted writes whose version the walk had already taken from
	 * another write: two writers shared one commit version. */
	_Atomic uint64_t dups;
	/* Records walked = wraps * 2^16 + next_version - 1: the walk's own
	 * 16-bit position counts them, and the winner of the step past version
	 * 65535 counts the wrap (a locked add once in 65536, not every time). */
	_Atomic uint64_t wraps, stale, breaks;
	_Atomic int64_t lost_amount;
	rec *ring;
} ckey;

struct fb_checker {
	ckey *k;
	rec *rings;
	uint32_t keys;
	uint32_t ring; /* records per key, a power of two <= 2^14 */
	/* ring + in_flight: no legitimate version is this far ahead of the
	 * walk (mod 2^16), so one that is, is behind it: a duplicate */
	uint32_t window;
	/* the first duplicate: 1 << 63 | key << 16 | version; 0: none */
	_Atomic uint64_t first_dup;
	/* a commit's wait: given up when *abort is set or after max_wait */
	const _Atomic int *abort;
	const fb_clock *clk;
	uint64_t max_wait;
};

fb_err fb_checker_create(uint32_t keys, uint32_t in_flight, int64_t initial_balance,
                         fb_checker **out)
{
	if (!keys)
		return FB_EINVAL;
	/* 2^18 records in all (10 MiB) where keys allow, at most 2^14 and at
	 * least 4 a key: a key among many sees few commits while one writer
	 * sleeps. */
	uint32_t ring = 1u << 14;
	while (ring > 4 && (uint64_t)ring * keys > (1u << 18))
		ring >>= 1;
	/*
	 * Versions are 16-bit. A commit parks only within `ring` of the walk,
	 * and at most in_flight more versions are held by writers not yet
	 * committed, so a legitimate version is less than ring + in_flight
	 * ahead of the walk. Whatever lies beyond is behind it: a second write
	 * with a version the walk already took. Keep at least FB_BEHIND of the
	 * 2^16 for that judgement.
	 */
	while (ring > 4 && (uint64_t)ring + in_flight + FB_CHECKER_BEHIND > (1u << 16))
		ring >>= 1;
	if ((uint64_t)ring + in_flight + FB_CHECKER_BEHIND > (1u << 16))
		return FB_EINVAL;
	fb_checker *c = calloc(1, sizeof *c);
	if (!c)
		return FB_ENOMEM;
	c->k = aligned_alloc(FB_PAD_LINE, (size_t)keys * sizeof *c->k);
	c->rings = malloc((size_t)keys * ring * sizeof *c->rings);
	if (!c->k || !c->rings) {
		fb_checker_destroy(c);
		return FB_ENOMEM;
	}
	/* Written now, every page: only records that arrive early land in the
	 * ring, so its pages would otherwise fault in one by one through the
	 * run (a page fault inside a measured cycle, and a resident set that
	 * grows for minutes: the soak's leak check saw it). The volatile
	 * stores: the compiler may turn a memset of fresh memory into a calloc,
	 * which touches nothing. */
	size_t bytes = (size_t)keys * ring * sizeof *c->rings;
	memset(c->rings, 0, bytes);
	for (size_t b = 0; b < bytes; b += 4096)
		((volatile char *)c->rings)[b] = 0;
	c->keys = keys;
	c->ring = ring;
	c->window = ring + in_flight;
	atomic_init(&c->first_dup, 0);
	for (uint32_t i = 0; i < keys; i++) {
		ckey *k = &c->k[i];
		atomic_init(&k->walk, ((fb_u128){UINT64_C(1) << 48, (uint64_t)initial_balance}));
		atomic_init(&k->parked, 0);
		atomic_init(&k->waiters, 0);
		atomic_init(&k->seq, 0);
		atomic_init(&k->dups, 0);
		atomic_init(&k->wraps, 0);
		atomic_init(&k->stale, 0);
		atomic_init(&k->breaks, 0);
		atomic_init(&k->lost_amount, 0);
		k->ring = &c->rings[(size_t)i * ring];
	}
	*out = c;
	return FB_OK;
}

void fb_checker_destroy(fb_checker *c)
{
	if (!c)
		return;
	free(c->k);
	free(c->rings);
	free(c);
}

static inline uint16_t walk_next(fb_u128 w)
{
	return (uint16_t)(w.lo >> 48);
}

/* Whether `version` lies behind the walk: the walk took it already. */
static inline bool behind(const fb_checker *c, uint16_t version, uint16_t next)
{
	return (uint16_t)(version - next) >= c->window;
}

/* ---- parking: a futex per key ---- */

static void futex_wait(_Atomic uint32_t *word, uint32_t seen, uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
	/* EAGAIN (seq moved), EINTR, ETIMEDOUT: the caller looks again */
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* After this thread stepped key k's walk: wake the commits parked for room.
 * seq_cst on `waiters`: pairs with the waiter's increment and its load of
 * the walk (either it sees this step, or this load sees it waiting). */
static inline void wake_waiters(ckey *k)
{
	if (atomic_load_explicit(&k->waiters, memory_order_seq_cst)) {
		atomic_fetch_add_explicit(&k->seq, 1, memory_order_release);
		futex_wake(&k->seq);
	}
}

/* A write with a version the walk already took: count it once, keep the
 * run's first as the example the verdict names. */
static void duplicate(fb_checker *c, uint32_t key, uint16_t version)
{
	atomic_fetch_add_explicit(&c->k[key].dups, 1, memory_order_relaxed);
	uint64_t none = 0;
	atomic_compare_exchange_strong_explicit(&c->first_dup, &none,
	                                        UINT64_C(1) << 63 | (uint64_t)key << 16 | version,
	                                        memory_order_relaxed, memory_order_relaxed);
}

/* Walk key k as far as published records go. */
static bool advance_from(fb_checker *c, uint32_t key, fb_u128 w);

/* Where the walk goes from w by a record of fence and written. */
static inline fb_u128 step(fb_u128 w, uint64_t fence, int64_t written)
{
	uint64_t max = w.lo & WALK_FENCE_MASK;
	return (fb_u128){(uint64_t)(uint16_t)(walk_next(w) + 1) << 48 | (fence > max ? fence : max),
	                 (uint64_t)written};
}

/* The tallies of one record, by the thread whose CAS stepped the walk past
 * it from w: each record counts exactly once. */
static void tally(ckey *k, fb_u128 w, uint64_t fence, int64_t read, int64_t replaced)
{
	if (walk_next(w) == UINT16_MAX)
		atomic_fetch_add_explicit(&k->wraps, 1, memory_order_relaxed);
	if (fence <= (w.lo & WALK_FENCE_MASK))
		atomic_fetch_add_explicit(&k->stale, 1, memory_order_relaxed);
	if (replaced != (int64_t)w.hi)
		atomic_fetch_add_explicit(&k->breaks, 1, memory_order_relaxed);
	if (replaced != read)
		atomic_fetch_add_explicit(&k->lost_amount, read - replaced, memory_order_relaxed);
}

/* Walk key k as far as published records go. */
static void advance(fb_checker *c, uint32_t key)
{
	if (advance_from(c, key, atomic_load_explicit(&c->k[key].walk, memory_order_acquire)))
		wake_waiters(&c->k[key]);
}

/*
 * Walk key k as far as published records go, starting from a guess of the
 * walk word (a wrong guess costs one failed CAS, which returns the truth).
 * True if it stepped the walk at all.
 *
 * A parked record is claimed before the walk steps past it: the one thread
 * that clears its tag owns it, reads it and steps. So no tag outlives its
 * record: in-order commits never write their slot, and a tag left behind
 * would match again when its 16-bit version comes round, 2^16 commits on
 * (a walker paused between stepping and clearing saw exactly that). While
 * claimed the walk cannot pass the record by any other record of its
 * version, unless one was a duplicate: a claim whose step finds the walk
 * gone past (the truth, from the failed CAS) is that duplicate, and is
 * counted, never tagged again. A claim on a stale guess of the walk (the
 * walk short of that version) is handed back.
 */
static bool advance_from(fb_checker *c, uint32_t key, fb_u128 w)
{
	ckey *k = &c->k[key];
	bool moved = false;
	for (;;) {
		uint16_t v = walk_next(w);
		rec *r = &k->ring[v & (c->ring - 1)];
		uint64_t tag = v | TAG_PUBLISHED;
		/* seq_cst (the load, and the claim's CAS): pairs with a parker's
		 * seq_cst tag CAS and walk load, so either this walker sees
		 * the record or its parker sees this walker's step; acquire
		 * makes the fields below the ones the parker wrote */
		if (atomic_load_explicit(&r->tag, memory_order_seq_cst) != tag ||
		    !atomic_compare_exchange_strong_explicit(&r->tag, &tag, 0, memory_order_seq_cst,
		                                             memory_order_seq_cst))
			return moved; /* not there yet, or another walker has it */
		uint64_t fence = atomic_load_explicit(&r->fence, memory_order_relaxed);
		int64_t read = atomic_load_explicit(&r->read, memory_order_relaxed);
		int64_t replaced = atomic_load_explicit(&r->replaced, memory_order_relaxed);
		int64_t written = atomic_load_explicit(&r->written, memory_order_relaxed);
		bool stepped = false;
		while (walk_next(w) == v) {
			fb_u128 next = step(w, fence, written);
			if (atomic_compare_exchange_weak_explicit(&k->walk, &w, next,
			                                          memory_order_seq_cst,
			                                          memory_order_seq_cst)) {
				tally(k, w, fence, read, replaced);
				atomic_fetch_sub_explicit(&k->parked, 1, memory_order_relaxed);
				w = next;
				stepped = moved = true;
				break;
			}
		}
		if (stepped)
			continue;
		if (behind(c, v, walk_next(w))) {
			/* the walk took version v from another write */
			atomic_fetch_sub_explicit(&k->parked, 1, memory_order_relaxed);
			duplicate(c, key, v);
			return moved;
		}
		/* w was stale: the record waits for the walk, tagged again */
		atomic_store_explicit(&r->tag, v | TAG_PUBLISHED, memory_order_seq_cst);
		return moved;
	}
}

void fb_checker_bound(fb_checker *c, const _Atomic int *abort, const fb_clock *clk,
                      uint64_t max_wait_ns)
{
	c->abort = abort;
	c->clk = clk;
	c->max_wait = max_wait_ns;
}

uint32_t fb_checker_waiting(fb_checker *c, uint32_t key)
{
	return atomic_load_explicit(&c->k[key].waiters, memory_order_relaxed);
}

void fb_checker_wake(fb_checker *c)
{
	for (uint32_t i = 0; i < c->keys; i++) {
		atomic_fetch_add_explicit(&c->k[i].seq, 1, memory_order_release);
		if (atomic_load_explicit(&c->k[i].waiters, memory_order_seq_cst))
			futex_wake(&c->k[i].seq);
	}
}

bool fb_checker_wait_expired(fb_checker_wait *wt, uint16_t walk, uint64_t now, uint64_t max_wait)
{
	if (!wt->waiting || walk != wt->walk) {
		/* the walk moved: what holds it back now is a later writer,
		 * whose own hold starts counting here */
		wt->waiting = true;
		wt->walk = walk;
		wt->since = now;
		return false;
	}
	return now - wt->since > max_wait;
}

/* The fast path of a commit: the walk waits right at this version. */
static inline bool commit_in_order(fb_checker *c, uint32_t key, uint16_t version, uint64_t fence,
                                   int64_t read, int64_t replaced, int64_t written,
                                   uint64_t prev_max, fb_u128 *w)
{
	ckey *k = &c->k[key];
	/*
	 * The previous write left the balance this one replaced and, where it
	 * carried the store's highest fence (write-fenced, unfenced), that
	 * fence: guess that word and step it with this record, sparing the
	 * load and the ring. A wrong guess costs the failed CAS, which returns
	 * the truth (a fenced read registers a higher token: there it misses).
	 */
	*w = (fb_u128){(uint64_t)version << 48 | (prev_max & FB_FENCE_MAX), (uint64_t)replaced};
	while (walk_next(*w) == version) {
		fb_u128 next = step(*w, fence, written);
		/* seq_cst, and the load of parked after it: a record parked
		 * meanwhile is seen here, or its writer's walk sees this step */
		if (atomic_compare_exchange_weak_explicit(&k->walk, w, next, memory_order_seq_cst,
		                                          memory_order_seq_cst)) {
			tally(k, *w, fence, read, replaced);
			if (atomic_load_explicit(&k->parked, memory_order_seq_cst))
				advance_from(c, key, next);
			wake_waiters(k);
			return true;
		}
	}
	return false;
}

/*
 * Park an early record in the ring, where version v reuses the slot of
 * v - ring (the walk is past that one: the caller made sure). The slot is
 * taken by CAS from empty: a record of the same version there already is
 * a duplicate. Then, if the walk meanwhile went past v by another record of
 * v, the record is one too: taken back and counted, unless a walker
 * claimed it first (its step then finds the same and counts it).
 */
static void park(fb_checker *c, uint32_t key, uint16_t version, uint64_t fence, int64_t read,
                 int64_t replaced, int64_t written)
{
	ckey *k = &c->k[key];
	rec *r = &k->ring[version & (c->ring - 1)];
	uint64_t mine = version | TAG_PUBLISHED;
	for (;;) {
		uint64_t tag = atomic_load_explicit(&r->tag, memory_order_seq_cst);
		if (tag == mine) { /* the same version parked twice */
			duplicate(c, key, version);
			return;
		}
		if (!tag)
			break;
		/* A record of another lap that nobody will walk: a duplicate
		 * the protocol above should never leave; take it and count it. */
		if (atomic_compare_exchange_strong_explicit(&r->tag, &tag, 0, memory_order_seq_cst,
		                                            memory_order_seq_cst)) {
			atomic_fetch_sub_explicit(&k->parked, 1, memory_order_relaxed);
			duplicate(c, key, (uint16_t)(tag & 0xffff));
		}
	}
	atomic_store_explicit(&r->fence, fence, memory_order_relaxed);
	atomic_store_explicit(&r->read, read, memory_order_relaxed);
	atomic_store_explicit(&r->replaced, replaced, memory_order_relaxed);
	atomic_store_explicit(&r->written, written, memory_order_relaxed);
	uint64_t empty = 0;
	/* seq_cst (release at least): publishes the four fields with the tag.
	 * Only a parker fills an empty slot, and only one of this version can
	 * win it: a loser of the same version is its duplicate. */
	if (!atomic_compare_exchange_strong_explicit(&r->tag, &empty, mine, memory_order_seq_cst,
	                                             memory_order_seq_cst)) {
		if (empty == mine)
			duplicate(c, key, version);
		else
			park(c, key, version, fence, read, replaced, written);
		return;
	}
	atomic_fetch_add_explicit(&k->parked, 1, memory_order_seq_cst);
	/* seq_cst: pairs with the in-order path's CAS and its load of parked */
	fb_u128 w = atomic_load_explicit(&k->walk, memory_order_seq_cst);
	if (behind(c, version, walk_next(w))) {
		uint64_t t = mine;
		if (atomic_compare_exchange_strong_explicit(&r->tag, &t, 0, memory_order_seq_cst,
		                                            memory_order_seq_cst)) {
			atomic_fetch_sub_explicit(&k->parked, 1, memory_order_relaxed);
			duplicate(c, key, version);
		}
		return;
	}
	if (advance_from(c, key, w))
		wake_waiters(k);
}

bool fb_checker_try_commit(fb_checker *c, uint32_t key, uint16_t version, uint64_t fence,
                           int64_t read, int64_t replaced, int64_t written, uint64_t prev_max)
{
	fb_u128 w;
	if (commit_in_order(c, key, version, fence, read, replaced, written, prev_max, &w))
		return true;
	/* w is the walk as the failed CAS found it */
	if (behind(c, version, walk_next(w))) {
		duplicate(c, key, version);
		return true;
	}
	if ((uint16_t)(version - walk_next(w)) >= c->ring) {
		advance(c, key); /* help: the ring may hold what lets the walk on */
		w = atomic_load_explicit(&c->k[key].walk, memory_order_acquire);
		if (walk_next(w) == version)
			return fb_checker_try_commit(c, key, version, fence, read, replaced,
			                             written, prev_max);
		if (behind(c, version, walk_next(w))) {
			duplicate(c, key, version);
			return true;
		}
		if ((uint16_t)(version - walk_next(w)) >= c->ring)
			return false; /* the ring is full: earlier versions are still to come */
	}
	park(c, key, version, fence, read, replaced, written);
	return true;
}

bool fb_checker_commit(fb_checker *c, uint32_t key, uint16_t version, uint64_t fence, int64_t read,
                       int64_t replaced, int64_t written, uint64_t prev_max, uint64_t *stalls)
{
	fb_u128 w;
	if (commit_in_order(c, key, version, fence, read, replaced, written, prev_max, &w))
		return true; /* the common case, without a call */
	if (fb_checker_try_commit(c, key, version, fence, read, replaced, written, prev_max))
		return true;
	/*
	 * The ring is full: a writer holds an earlier version (paused, or its
	 * reply in flight). Park on the key's futex until a step makes room.
	 * The bound counts from the walk's last move, not from the start of
	 * the wait: a chain of paused holders, each releasing the walk to the
	 * next, is progress, and only one hold at a time can stand in front.
	 */
	ckey *k = &c->k[key];
	fb_checker_wait wt = {0};
	(*stalls)++;
	/* seq_cst: pairs with the stepper's load of waiters (wake_waiters) */
	atomic_fetch_add_explicit(&k->waiters, 1, memory_order_seq_cst);
	bool done = false;
	for (;;) {
		uint32_t seen = atomic_load_explicit(&k->seq, memory_order_acquire);
		if (fb_checker_try_commit(c, key, version, fence, read, replaced, written,
		                          prev_max)) {
			done = true;
			break;
		}
		uint16_t walk = walk_next(atomic_load_explicit(&k->walk, memory_order_seq_cst));
		uint64_t now = c->clk ? fb_clock_now(c->clk) : 0;
		if ((c->abort && atomic_load_explicit(c->abort, memory_order_relaxed)) ||
		    (c->clk && fb_checker_wait_expired(&wt, walk, now, c->max_wait)))
			break; /* a version that never comes: the caller says why */
		/* a timeout only to look at the abort flag and the bound again */
		uint64_t nap = FB_CHECKER_NAP_NS;
		if (c->clk && wt.waiting && c->max_wait - (now - wt.since) < nap)
			nap = c->max_wait - (now - wt.since) + 1;
		futex_wait(&k->seq, seen, nap);
	}
	atomic_fetch_sub_explicit(&k->waiters, 1, memory_order_relaxed);
	return done;
}

void fb_checker_drain(fb_checker *c)
{
	for (uint32_t i = 0; i < c->keys; i++)
		advance(c, i);
}

void fb_checker_key(fb_checker *c, uint32_t key, fb_check_key *out)
{
	ckey *k = &c->k[key];
	fb_u128 w = atomic_load_explicit(&k->walk, memory_order_acquire);
	/* exact once the walkers are done (the wrap is counted after its step) */
	out->checked =
	        (atomic_load_explicit(&k->wraps, memory_order_relaxed) << 16) + walk_next(w) - 1;
	out->stale_accepted = atomic_load_explicit(&k->stale, memory_order_relaxed);
	out->lost_amount = atomic_load_explicit(&k->lost_amount, memory_order_relaxed);
	out->chain_breaks = atomic_load_explicit(&k->breaks, memory_order_relaxed);
	out->duplicates = atomic_load_explicit(&k->dups, memory_order_relaxed);
	out->max_fence = w.lo & WALK_FENCE_MASK;
	out->balance = (int64_t)w.hi;
	out->next_version = walk_next(w);
}

void fb_checker_so_far(fb_checker *c, uint64_t *stale, int64_t *lost_amount)
{
	*stale = 0;
	*lost_amount = 0;
	for (uint32_t i = 0; i < c->keys; i++) {
		*stale += atomic_load_explicit(&c->k[i].stale, memory_order_relaxed);
		*lost_amount += atomic_load_explicit(&c->k[i].lost_amount, memory_order_relaxed);
	}
}

/* The first reason the history and the store disagree (fb_disagree). */
#define disagree(v, ...)                                                                           \
	fb_disagree(&(v)->agrees, (v)->disagreement, sizeof(v)->disagreement, __VA_ARGS__)

void fb_checker_verdict(fb_checker *c, bool fenced, const int64_t *balance,
                        const uint64_t *last_fence, int64_t initial_balance, int64_t amount,
                        uint64_t accepted, uint64_t store_stale, fb_check_verdict *v,
                        fb_check_key_fn per_key, void *ctx)
{
	*v = (fb_check_verdict){.agrees = true};
	fb_checker_drain(c);
	/* A shared version first: the chain break and the count that follow
	 * from it are its consequences. */
	uint64_t first = atomic_load_explicit(&c->first_dup, memory_order_relaxed);
	if (first) {
		v->dup_key = (uint32_t)(first >> 16 & 0xffffffff);
		v->dup_version = (uint16_t)first;
		disagree(
		        v,
		        "key %u: two accepted writes share version %u (the store's check-and-apply "
		        "is not one atomic step)",
		        v->dup_key, v->dup_version);
	}
	int64_t ledger_sum = 0, hist_sum = 0;
	for (uint32_t k = 0; k < c->keys; k++) {
		fb_check_key ck;
		fb_checker_key(c, k, &ck);
		int64_t bal = balance[k];
		/* What the balance is above what the accepted debits left: the
		 * debits whose effect is missing. Duplicates were accepted too. */
		int64_t ledger =
		        bal - (initial_balance - (int64_t)(ck.checked + ck.duplicates) * amount);
		uint64_t last = last_fence[k];
		if (per_key)
			per_key(ctx, k, &ck, bal, ledger, last);
		v->checked += ck.checked;
		v->stale_accepted += ck.stale_accepted;
		v->chain_breaks += ck.chain_breaks;
		v->duplicates += ck.duplicates;
		ledger_sum += ledger;
		hist_sum += ck.lost_amount;
		fb_key_disagree(&v->agrees, v->disagreement, sizeof v->disagreement, k, fenced,
		                ledger, ck.lost_amount, ck.balance, bal, ck.max_fence, last);
	}
	v->lost_updates = ledger_sum / amount;
	v->lost_history = hist_sum / amount;
	if (v->checked + v->duplicates != accepted)
		disagree(v, "the history holds %llu accepted writes, the store reported %llu",
		         (unsigned long long)(v->checked + v->duplicates),
		         (unsigned long long)accepted);
	if (v->stale_accepted != store_stale)
		disagree(v, "the checker found %llu stale writes accepted, the store %llu",
		         (unsigned long long)v->stale_accepted, (unsigned long long)store_stale);
	if (v->chain_breaks)
		disagree(v, "%llu writes did not replace the balance the previous one left",
		         (unsigned long long)v->chain_breaks);
}
