/*
 * The outcome tracker and the checker feed (bench/drive/listen_outcome.h,
 * listen_feed.h), heard in the table's order (listeners.h): each record the
 * feed commits says what its cycle's write did at every store, and a cycle
 * whose acknowledgements were lost wrote twice. A record of the first copy
 * must carry what the first copies did, a record of the resent copy what
 * the last copies did: the story reads these outcomes off the record of a
 * stale write's newer write, and a record that carried the other copy's
 * would tell, of a write the fenced store accepted, that it refused it.
 */
#include <stdlib.h>
#include <string.h>

#include "fbtest.h"
#include "listeners.h"

enum { F = FB_FENCED, WF = FB_WRITE_FENCED, U = FB_UNFENCED, NONE = 0xff };

/* One cycle as the cycle emits it: at each store in turn its first copy's
 * outcome (NONE: the cycle wrote nothing there) and, where the
 * acknowledgement was lost, its resent copy's. */
typedef struct script {
	const char *name;
	uint8_t first[FB_DISCIPLINES];
	uint8_t copy[FB_DISCIPLINES]; /* NONE: not resent */
} script;

typedef struct fixture {
	fb_env e;
	fb_config cfg;
	fb_heard h;
	fb_lease l;
	fb_store_result res;
} fixture;

static void hear(fixture *x, const fb_event *ev)
{
	/* the table's order: the tracker before the feed, which reads it */
	fb_on_outcome(&x->e, &x->h, ev);
	fb_on_feed(&x->e, &x->h, ev);
}

static void written(fixture *x, int d, bool copy, uint8_t outcome)
{
	fb_event ev = {.kind = FB_EV_WRITTEN,
	               .d = (uint8_t)d,
	               .outcome = outcome,
	               .copy = copy,
	               .worker = 1,
	               .key = 3,
	               .fence = x->l.fence,
	               .now = x->l.service_at + 1000,
	               .read = 100,
	               .res = &x->res,
	               .lease = &x->l};
	hear(x, &ev);
}

static bool accepted(uint8_t o)
{
	return o == FB_OUT_ACCEPTED || o == FB_OUT_STALE;
}

/* Run one scripted cycle and check every record it commits. */
static void run_cycle(fixture *x, const script *s, uint64_t fence)
{
	x->l.fence = fence;
	x->l.service_at = fence * 1000000;
	x->l.expires_at = x->l.service_at + x->cfg.ttl_ns;
	hear(x, &(fb_event){.kind = FB_EV_ACQUIRED, .key = 3, .fence = fence, .lease = &x->l});
	/* what the records must be, in the order written: one for each copy
	 * a store accepted */
	struct {
		int d;
		bool resent;
	} want[2 * FB_DISCIPLINES];
	int n = 0;
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		if (s->first[d] == NONE) /* not written this cycle: no event */
			continue;
		written(x, d, false, s->first[d]);
		if (accepted(s->first[d]))
			want[n].d = d, want[n++].resent = false;
		if (s->copy[d] != NONE) {
			written(x, d, true, s->copy[d]);
			if (accepted(s->copy[d]))
				want[n].d = d, want[n++].resent = true;
		}
	}
	fb_feed_heard *f = &x->h.feed;
	check(f->ntodo == n, "%s: %d records kept, %d copies accepted", s->name, f->ntodo, n);
	for (int i = 0; i < n; i++) {
		fb_check_rec r;
		fb_feed_fill(f, &x->h.outs, &r);
		check(r.fence == fence && r.key == 3 && r.d == want[i].d &&
		              (bool)r.resent == want[i].resent,
		      "%s: record %d is store %d's %s copy (it is store %u's, resent %u)", s->name,
		      i, want[i].d, want[i].resent ? "resent" : "first", r.d, r.resent);
		const uint8_t *copy_did = r.resent ? s->copy : s->first;
		for (int d = 0; d < FB_DISCIPLINES; d++) {
			/* a store not resent to: its one copy is the first and the last;
			 * one not written to this cycle did nothing (whatever it did
			 * in the cycle before) */
			uint8_t did = copy_did[d] != NONE   ? copy_did[d]
			              : s->first[d] != NONE ? s->first[d]
			                                    : FB_OUT_NONE;
			check(r.outcome[d] == did,
			      "%s: the %s copy's record says %u at store %d, where that copy did "
			      "%u",
			      s->name, r.resent ? "resent" : "first", r.outcome[d], d, did);
		}
	}
	check(f->done == f->ntodo, "%s: every record committed", s->name);
}

static void test_each_record_carries_what_its_own_copy_did(void **state)
{
	(void)state;
	fixture *x = calloc(1, sizeof *x);
	check(x != NULL, "calloc");
	x->cfg.ttl_ns = 10000000;
	x->e.cfg = &x->cfg;
	x->e.witnessing = x->e.checking = true;
	const uint8_t ACC = FB_OUT_ACCEPTED, ST = FB_OUT_STALE, REJ = FB_OUT_REJECTED;
	const script scripts[] = {
	        {"no ack lost", {ACC, ACC, ST}, {NONE, NONE, NONE}},
	        /* the fenced stores rightly refuse the copy: an equal token */
	        {"acks lost", {ACC, ACC, ACC}, {REJ, REJ, ACC}},
	        {"a stale write resent", {REJ, ST, ST}, {REJ, REJ, ST}},
	        {"one store resent to", {ACC, ACC, ACC}, {NONE, NONE, ACC}},
	        {"only the copy landed", {REJ, FB_OUT_REFUSED, REJ}, {ACC, NONE, ACC}},
	        {"one store not written", {ACC, NONE, ACC}, {NONE, NONE, NONE}},
	        {"after a resent cycle, one not written", {ACC, ACC, NONE}, {NONE, NONE, NONE}},
	        {"acks lost at two stores", {ACC, NONE, ACC}, {REJ, NONE, ACC}},
	        {"none lost, none written but one", {NONE, NONE, ACC}, {NONE, NONE, NONE}},
	};
	uint64_t fence = 10;
	for (size_t i = 0; i < sizeof scripts / sizeof *scripts; i++)
		run_cycle(x, &scripts[i], fence++);
	free(x);
}

/* A delayed write that landed (fb_feed_landed): its record says the network
 * held it, carries no lease age and no resent copy, and knows only what
 * the one store it reached did with it. */
static void test_a_landed_delayed_write_is_recorded_as_one(void **state)
{
	(void)state;
	const fb_delayed_write dw = {.fence = 41, .key = 5, .worker = 3, .mode = WF};
	for (int stale = 0; stale <= 1; stale++) {
		fb_store_result res = {.before = 7, .balance = 6, .version = 12, .stale = stale};
		fb_check_rec r;
		memset(&r, 0xa5, sizeof r);
		fb_feed_landed(&r, &dw, 7, &res, 9000);
		check(r.delayed == 1 && r.resent == 0 && r.held == 0, "stale %d: delayed %u", stale,
		      r.delayed);
		check(r.fence == 41 && r.key == 5 && r.writer == 3 && r.d == WF && r.read == 7 &&
		              r.replaced == 7 && r.written == 6 && r.version == 12 &&
		              r.wrote_at == 9000,
		      "stale %d: the write as it landed", stale);
		for (int d = 0; d < FB_DISCIPLINES; d++) {
			uint8_t want = d != WF ? 0 : stale ? FB_OUT_STALE : FB_OUT_ACCEPTED;
			check(r.outcome[d] == want, "stale %d: store %d's outcome %u, not %u",
			      stale, d, r.outcome[d], want);
		}
	}
}

/* The witness's listener on a renewal: in process it judges by the word
 * the table says the renewal replaced, its fence and its owner (a fence
 * handed out twice has two holders); a remote engine's renewal copies the
 * lease it renewed, so there the word is never read. */
static void test_a_renewal_is_judged_by_the_word_it_replaced_in_process_only(void **state)
{
	(void)state;
	static const struct {
		uint64_t replaced;
		uint16_t owner;
		uint64_t taken; /* renewed for a non-holder, in process */
	} cases[] = {
	        {5, 2, 0}, /* its own word */
	        {5, 3, 1}, /* its fence's twin, another holder's */
	        {5, 0, 1}, /* its own word, released */
	        {6, 4, 1}, /* a newer holder's */
	};
	const fb_lease_ops local = {.remote = false}, remote = {.remote = true};
	for (int far = 0; far <= 1; far++)
		for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
			fixture *x = calloc(1, sizeof *x);
			check(x != NULL, "calloc");
			x->cfg.ttl_ns = 10000000;
			x->e.cfg = &x->cfg;
			x->e.witnessing = true;
			x->e.stepping = true; /* no clock read: renewals are not judged late */
			x->e.lops = far ? &remote : &local;
			check_eq(fb_witness_create(4, x->cfg.ttl_ns, 50000, &x->e.witness), FB_OK,
			         "witness creation");
			x->l = (fb_lease){.fence = 5,
			                  .owner = 2,
			                  .service_at = 1000000,
			                  .expires_at = 11000000};
			fb_lease r = x->l;
			r.replaced = cases[i].replaced;
			r.replaced_owner = cases[i].owner;
			r.expires_at = 15000000;
			fb_on_witness(&x->e, &x->h,
			              &(fb_event){.kind = FB_EV_RENEWING,
			                          .key = 3,
			                          .fence = 5,
			                          .lease = &x->l});
			fb_on_witness(&x->e, &x->h,
			              &(fb_event){.kind = FB_EV_RENEWED,
			                          .key = 3,
			                          .fence = 5,
			                          .lease = &x->l,
			                          .renewed = &r});
			uint64_t want = far ? 0 : cases[i].taken;
			check(x->h.witness.renew_taken == want,
			      "%s, over fence %llu of owner %u: %llu renewed for a non-holder, not "
			      "%llu",
			      far ? "remote" : "in process", (unsigned long long)cases[i].replaced,
			      cases[i].owner, (unsigned long long)x->h.witness.renew_taken,
			      (unsigned long long)want);
			fb_witness_destroy(x->e.witness);
			free(x);
		}
}

/*
 * The lease chain's listener (listen_chain.h): a lease of fence 5, owner 2,
 * acquired at 1 ms over (4, owner 1) and valid to 11 ms, renewed and ended
 * as each case says; then a successor that replaced its word at `next`. The
 * chain judges the link by what the listener recorded: its own renewals
 * only, and a release only of its own word (fence and owner).
 */
static void test_the_chain_hears_a_lease_from_its_acquire_to_its_end(void **state)
{
	(void)state;
	enum { MSEC = 1000000 };
	static const struct {
		const char *what;
		uint64_t renew_over; /* 0: no renewal; else the word it replaced: */
		uint16_t renew_owner;
		int end;        /* 0 released, 1 refused (taken over), 2 died, 3 held at the end */
		uint64_t freed; /* released: the word its release freed */
		uint16_t freed_owner;
		uint64_t next_ms; /* the successor's acquire */
		uint64_t overlaps;
	} cases[] = {
	        {"released, renewed to 15 ms", 5, 2, 0, 5, 2, 13, 0},
	        {"taken over, renewed to 15 ms", 5, 2, 1, 0, 0, 13, 1},
	        {"taken over, renewed over another's word", 6, 4, 1, 0, 0, 13, 0},
	        {"taken over, renewed over its fence's twin", 5, 3, 1, 0, 0, 13, 0},
	        {"its release freed another's word", 0, 0, 0, 6, 4, 9, 1},
	        {"its release freed its fence's twin", 0, 0, 0, 5, 3, 9, 1},
	        {"died, taken before its expiry", 0, 0, 2, 0, 0, 9, 1},
	        {"died, taken after its expiry", 0, 0, 2, 0, 0, 12, 0},
	        {"still held at the end, taken before its expiry", 0, 0, 3, 0, 0, 9, 1},
	        {"taken over, renewed over its owner's other fence", 6, 2, 1, 0, 0, 13, 0},
	        {"its release freed its owner's other fence", 0, 0, 0, 6, 2, 9, 1},
	        {"taken over, renewed to 15 ms, then (the clock stepped back) to 12 ms", 5, 2, 1, 0,
	         0, 13, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		fixture *x = calloc(1, sizeof *x);
		check(x != NULL, "calloc");
		x->cfg.ttl_ns = 10 * MSEC;
		x->e.cfg = &x->cfg;
		check_eq(fb_chain_create(8, 0, 0, &x->e.chain), FB_OK, "chain creation");
		/* the predecessor: fence 4 of owner 1, held to 5 ms and never released */
		fb_chain_rec prev = {.fence = 4,
		                     .at = 0,
		                     .expires_at = 5 * MSEC,
		                     .key = 3,
		                     .owner = 1,
		                     .end = FB_CHAIN_HELD};
		check_eq(fb_chain_take(x->e.chain, &prev), FB_OK, "the predecessor");
		x->l = (fb_lease){.fence = 5,
		                  .owner = 2,
		                  .replaced = 4,
		                  .replaced_owner = 1,
		                  .expires_at = 11 * MSEC};
		fb_on_chain(
		        &x->e, &x->h,
		        &(fb_event){.kind = FB_EV_ACQUIRED, .key = 3, .fence = 5, .lease = &x->l});
		check(x->h.chain.at == 1 * MSEC && x->h.chain.replaced_owner == 1,
		      "acquired at %llu ns over owner %u's word", (unsigned long long)x->h.chain.at,
		      x->h.chain.replaced_owner);
		/* renewed to 15 ms; where the clock stepped back, then to 12 ms:
		 * the last counts */
		static const uint64_t to_ms[] = {15, 12};
		int renewals = !cases[i].renew_over ? 0 : strstr(cases[i].what, "stepped") ? 2 : 1;
		for (int n = 0; n < renewals; n++) {
			fb_lease r = {.fence = 5,
			              .owner = 2,
			              .replaced = cases[i].renew_over,
			              .replaced_owner = cases[i].renew_owner,
			              .expires_at = to_ms[n] * MSEC};
			fb_on_chain(&x->e, &x->h,
			            &(fb_event){.kind = FB_EV_RENEWED,
			                        .key = 3,
			                        .fence = 5,
			                        .lease = &x->l,
			                        .renewed = &r});
		}
		fb_lease freed = {.fence = cases[i].freed, .owner = cases[i].freed_owner};
		if (cases[i].end == 3)
			; /* still held when the run ends: the flush hands it over */
		else if (cases[i].end == 2)
			fb_on_chain(&x->e, &x->h,
			            &(fb_event){.kind = FB_EV_DIED, .key = 3, .fence = 5});
		else
			fb_on_chain(&x->e, &x->h,
			            &(fb_event){.kind = FB_EV_RELEASED,
			                        .key = 3,
			                        .fence = 5,
			                        .flag = cases[i].end == 1,
			                        .freed = &freed});
		fb_chain_flush(&x->e, &x->h); /* handed over already: nothing more */
		fb_chain_rec next = {.fence = 8,
		                     .replaced = 5,
		                     .at = cases[i].next_ms * MSEC,
		                     .expires_at = (cases[i].next_ms + 10) * MSEC,
		                     .key = 3,
		                     .owner = 3,
		                     .end = FB_CHAIN_RELEASED};
		check_eq(fb_chain_take(x->e.chain, &next), FB_OK, "the successor");
		check(fb_chain_finish(x->e.chain, true), "judged");
		const fb_chain_counts *k = fb_chain_counts_of(x->e.chain);
		check(k->records == 3 && k->links == 3 && k->overlaps == 1 + cases[i].overlaps &&
		              !k->forks,
		      "%s: %llu records, %llu links, %llu overlaps (want %llu: the lease's own "
		      "over fence 4, then %llu), %llu forks",
		      cases[i].what, (unsigned long long)k->records, (unsigned long long)k->links,
		      (unsigned long long)k->overlaps, (unsigned long long)(1 + cases[i].overlaps),
		      (unsigned long long)cases[i].overlaps, (unsigned long long)k->forks);
		fb_chain_destroy(x->e.chain);
		free(x);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_each_record_carries_what_its_own_copy_did),
	        cmocka_unit_test(test_a_landed_delayed_write_is_recorded_as_one),
	        cmocka_unit_test(test_a_renewal_is_judged_by_the_word_it_replaced_in_process_only),
	        cmocka_unit_test(test_the_chain_hears_a_lease_from_its_acquire_to_its_end),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
