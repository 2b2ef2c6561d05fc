/*
 * The scenario runner and `fencebench scenario`: executes parsed steps on a
 * manual clock, one lease table and three stores, through the public APIs
 * of core/ only. It keeps its own books (the highest fence each store
 * accepted, the balance each store should hold if every accepted operation
 * had its intended effect), independent of the stores' own verdicts, and
 * judges each store from them by the rules of judge.h (bench/verify), as
 * the run's checker does. Nothing here reads real time.
 */
#include "scenario.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "judge.h"

#define CLIENTS FB_SCENARIO_CLIENTS_MAX
#define KEYS    FB_SCENARIO_KEYS_MAX
#define STORES  FB_DISCIPLINES

/* What one store did with the last store action. */
typedef struct outcome {
	bool ok;          /* read served / write accepted */
	bool stale;       /* accepted although its fence was <= one already accepted */
	bool skipped;     /* a write from a read this store had refused */
	int64_t balance;  /* read: the balance read; write: the balance after */
	uint64_t highest; /* the highest fence the store had seen before */
} outcome;

/* The runner's own book of one key in one store. */
typedef struct book {
	int64_t expected; /* the balance every accepted operation's intent leads to */
	uint64_t max_accepted;
	bool any_accepted;
} book;

typedef struct tally {
	uint32_t accepted, stale_accepted, rejected, refused, skipped;
	uint64_t first_stale, first_stale_after; /* the first stale write accepted */
} tally;

typedef struct world {
	const fb_scenario *sc;
	FILE *out, *err;
	fb_clock_manual clock;
	fb_lease_table *leases;
	fb_store *store[STORES];
	/* what each client knows: its fence per key (kept after its lease
	 * expires: that is the zombie's token), its latest fence, its reads */
	uint64_t fence[CLIENTS][KEYS];
	bool has_fence[CLIENTS][KEYS];
	uint64_t latest[CLIENTS];
	bool has_latest[CLIENTS];
	int64_t read[CLIENTS][KEYS][STORES];
	bool read_ok[CLIENTS][KEYS][STORES];
	book books[STORES][KEYS];
	tally tallies[STORES];
	/* the last action's outcome, for `expect VERB ...` */
	bool last_ok;
	outcome last[STORES];
	uint32_t expectations, failed;
	int who_w, action_w;
} world;

enum { TIME_W = 8, FENCE_W = 5, CELL_W = 24 };

static const char *const store_names[STORES] = {"fenced", "write-fenced", "unfenced"};

/* Milliseconds, exact: 31ms, 30.5ms, 0.0015ms. */
static void fmt_time(char *buf, size_t len, uint64_t ns)
{
	uint64_t ms = ns / 1000000, frac = ns % 1000000;
	if (!frac) {
		snprintf(buf, len, "%llums", (unsigned long long)ms);
		return;
	}
	char f[8];
	snprintf(f, sizeof f, "%06llu", (unsigned long long)frac);
	for (int i = 5; i > 0 && f[i] == '0'; i--)
		f[i] = 0;
	snprintf(buf, len, "%llu.%sms", (unsigned long long)ms, f);
}

static uint64_t now(world *w)
{
	return fb_clock_now(&w->clock.base);
}

static const char *owner_name(world *w, uint16_t owner)
{
	return owner >= 1 && owner <= w->sc->nclients ? w->sc->clients[owner - 1] : "?";
}

/*
 * One timeline row: time, who, action, fence, then either three store
 * cells or one text spanning them. Trailing blanks are trimmed.
 */
static void row(world *w, const char *time, const char *who, const char *action, const char *fence,
                const char *const *cells, const char *span)
{
	char line[1024];
	int n = snprintf(line, sizeof line, "%*s  %-*s  %-*s  %*s  ", TIME_W, time, w->who_w, who,
	                 w->action_w, action, FENCE_W, fence);
	for (int d = 0; cells && d < STORES && n > 0 && (size_t)n < sizeof line; d++)
		n += snprintf(line + n, sizeof line - (size_t)n, "%-*s  ", CELL_W, cells[d]);
	if (span && n > 0 && (size_t)n < sizeof line)
		n += snprintf(line + n, sizeof line - (size_t)n, "%s", span);
	size_t end = n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
	while (end > 0 && line[end - 1] == ' ')
		end--;
	fprintf(w->out, "%.*s\n", (int)end, line);
}

static void fence_text(char *buf, size_t len, bool has, uint64_t fence)
{
	if (has)
		snprintf(buf, len, "%llu", (unsigned long long)fence);
	else
		snprintf(buf, len, "-");
}

/* A runtime error in the script: one line on err, exit code 2. */
static int script_error(world *w, const fb_scenario_step *st, const char *what)
{
	fflush(w->out);
	fprintf(w->err, "%s:%u:%u: %s\n", w->sc->name, st->line, st->col, what);
	return 2;
}

/* After the clock moved from `from`: one note per lease that expired on
 * the way, in order of expiry. */
static void note_expiries(world *w, uint64_t from)
{
	uint64_t to = now(w), done = from;
	for (;;) {
		uint64_t next = UINT64_MAX;
		for (uint32_t k = 0; k < w->sc->nkeys; k++) {
			fb_lease l = fb_lease_peek(w->leases, k);
			if (l.owner && l.expires_at > done && l.expires_at <= to &&
			    l.expires_at < next)
				next = l.expires_at;
		}
		if (next == UINT64_MAX)
			return;
		for (uint32_t k = 0; k < w->sc->nkeys; k++) {
			fb_lease l = fb_lease_peek(w->leases, k);
			if (!l.owner || l.expires_at != next)
				continue;
			char t[32], text[128];
			fmt_time(t, sizeof t, next);
			snprintf(text, sizeof text, "%s's lease on %s (fence %llu) expires",
			         owner_name(w, l.owner), w->sc->keys[k],
			         (unsigned long long)l.fence);
			row(w, t, "", "", "", NULL, text);
		}
		done = next;
	}
}

/* at, advance, pause: move the manual clock, then say which leases lapsed. */
static int clock_step(world *w, const fb_scenario_step *st, const char *t, const char *action)
{
	uint64_t from = now(w);
	if (st->op == FB_SCENARIO_AT)
		fb_clock_manual_set(&w->clock, st->ns);
	else
		fb_clock_manual_advance(&w->clock, st->ns);
	char to[32], span[64];
	fmt_time(to, sizeof to, now(w));
	snprintf(span, sizeof span, st->op == FB_SCENARIO_PAUSE ? "asleep until %s" : "clock -> %s",
	         to);
	row(w, t, st->op == FB_SCENARIO_PAUSE ? w->sc->clients[st->client] : "", action, "", NULL,
	    span);
	note_expiries(w, from);
	return 0;
}

/* acquire, is-held, renew, release: one outcome, from the lease table. */
static int lease_step(world *w, const fb_scenario_step *st, const char *t, const char *action)
{
	const char *who = w->sc->clients[st->client];
	uint16_t owner = (uint16_t)(st->client + 1);
	uint32_t key = st->key;
	char fence[24] = "-", span[160], until[32];
	bool has = w->has_fence[st->client][key];
	uint64_t mine = w->fence[st->client][key];
	fb_lease l = {0};
	switch (st->op) {
	case FB_SCENARIO_ACQUIRE: {
		fb_lease_stats stats = {0};
		fb_acquire a = fb_lease_acquire(w->leases, key, owner, &l, &stats);
		w->last_ok = a == FB_ACQUIRED;
		fmt_time(until, sizeof until, l.expires_at);
		if (a == FB_ACQUIRED) {
			w->fence[st->client][key] = w->latest[st->client] = l.fence;
			w->has_fence[st->client][key] = w->has_latest[st->client] = true;
			fence_text(fence, sizeof fence, true, l.fence);
			snprintf(span, sizeof span, "acquired, expires at %s", until);
		} else if (a == FB_HELD) {
			snprintf(span, sizeof span, "refused: %s holds it (fence %llu) until %s",
			         owner_name(w, l.owner), (unsigned long long)l.fence, until);
		} else {
			snprintf(span, sizeof span, "refused: the fence space is exhausted");
		}
		break;
	}
	case FB_SCENARIO_IS_HELD:
		w->last_ok = fb_lease_is_held(w->leases, key, owner);
		l = fb_lease_peek(w->leases, key);
		fence_text(fence, sizeof fence, has, mine);
		fmt_time(until, sizeof until, l.expires_at);
		if (w->last_ok)
			snprintf(span, sizeof span, "yes (until %s)", until);
		else if (!l.owner)
			snprintf(span, sizeof span, "no (free)");
		else if (l.owner == owner)
			snprintf(span, sizeof span, "no (expired at %s)", until);
		else
			snprintf(span, sizeof span, "no (%s's lease, fence %llu, %s %s)",
			         owner_name(w, l.owner), (unsigned long long)l.fence,
			         l.expires_at > now(w) ? "until" : "expired at", until);
		break;
	case FB_SCENARIO_RENEW:
		w->last_ok = has && fb_lease_renew(w->leases, key, owner, mine, &l);
		fence_text(fence, sizeof fence, has, mine);
		if (w->last_ok) {
			fmt_time(until, sizeof until, l.expires_at);
			snprintf(span, sizeof span, "renewed, expires at %s", until);
		} else {
			snprintf(span, sizeof span, "refused: not %s's live lease", who);
		}
		break;
	default:
		w->last_ok = has && fb_lease_release(w->leases, key, owner, mine);
		fence_text(fence, sizeof fence, has, mine);
		snprintf(span, sizeof span, w->last_ok ? "released" : "refused: not %s's lease",
		         who);
		break;
	}
	row(w, t, who, action, fence, NULL, span);
	return 0;
}

/*
 * The runner's own account of an accepted write: stale if a fence at
 * least as high was already accepted on that key (fb_judge_stale); the
 * expected balance moves by the operation's intent (a debit subtracts,
 * read-N subtracts N from whatever the store holds, an explicit value
 * sets it).
 */
static void account(world *w, int d, const fb_scenario_step *st, uint64_t token, outcome *o)
{
	book *b = &w->books[d][st->key];
	tally *t = &w->tallies[d];
	if (!o->ok) {
		t->rejected++;
		return;
	}
	t->accepted++;
	o->stale = fb_judge_stale(token, b->any_accepted, b->max_accepted);
	if (o->stale && !t->stale_accepted++) {
		t->first_stale = token;
		t->first_stale_after = b->max_accepted;
	}
	if (!o->stale)
		b->max_accepted = token;
	b->any_accepted = true;
	if (st->op == FB_SCENARIO_DEBIT)
		b->expected -= st->value;
	else if (st->source == FB_SCENARIO_FROM_READ)
		b->expected += st->value;
	else
		b->expected = st->value;
}

/* read, write, debit: the same token to the three stores. */
static int store_step(world *w, const fb_scenario_step *st, const char *t, const char *action)
{
	uint32_t c = st->client, k = st->key;
	if (!st->has_token && !w->has_fence[c][k]) {
		char msg[160];
		snprintf(msg, sizeof msg,
		         "%s has no fence for %s: its acquire was refused (or add 'fence N')",
		         w->sc->clients[c], w->sc->keys[k]);
		return script_error(w, st, msg);
	}
	uint64_t token = st->has_token ? st->token : w->fence[c][k];
	char cell[STORES][64], fence[24];
	const char *cells[STORES];
	for (int d = 0; d < STORES; d++) {
		outcome *o = &w->last[d];
		fb_store_result r;
		memset(o, 0, sizeof *o);
		cells[d] = cell[d];
		if (st->op == FB_SCENARIO_READ) {
			o->ok = fb_store_read(w->store[d], k, token, &r);
			o->balance = r.balance;
			o->highest = r.highest;
			w->read_ok[c][k][d] = o->ok;
			w->read[c][k][d] = r.balance;
			if (o->ok) {
				snprintf(cell[d], sizeof cell[d], "read %lld",
				         (long long)r.balance);
			} else {
				w->tallies[d].refused++;
				snprintf(cell[d], sizeof cell[d], "refused read (%llu seen)",
				         (unsigned long long)r.highest);
			}
			continue;
		}
		if (st->op == FB_SCENARIO_WRITE && st->source == FB_SCENARIO_FROM_READ &&
		    !w->read_ok[c][k][d]) {
			o->skipped = true;
			w->tallies[d].skipped++;
			snprintf(cell[d], sizeof cell[d], "skipped (read refused)");
			continue;
		}
		if (st->op == FB_SCENARIO_DEBIT)
			o->ok = fb_store_debit(w->store[d], k, st->value, token, &r);
		else
			o->ok = fb_store_write(w->store[d], k,
			                       st->source == FB_SCENARIO_FROM_READ
			                               ? w->read[c][k][d] + st->value
			                               : st->value,
			                       token, &r);
		o->balance = r.balance;
		o->highest = r.highest;
		account(w, d, st, token, o);
		if (o->ok)
			snprintf(cell[d], sizeof cell[d], "%s -> %lld",
			         o->stale ? "ACCEPTED stale" : "accepted", (long long)r.balance);
		else
			snprintf(cell[d], sizeof cell[d], "REJECTED stale (%llu seen)",
			         (unsigned long long)r.highest);
	}
	fence_text(fence, sizeof fence, true, token);
	row(w, t, w->sc->clients[c], action, fence, cells, NULL);
	return 0;
}

/* Whether key k's balance in store d is what the book says it should be. */
static bool balanced(world *w, int d, uint32_t k)
{
	return fb_judge_books_of(fb_judge_ledger(fb_store_balance(w->store[d], k),
	                                         w->books[d][k].expected)) == FB_JUDGE_BALANCED;
}

/* The verdict on store d so far: a balance the book does not explain
 * either way (above it: debits lost; below it: more applied than
 * accepted) is an update lost. */
static fb_scenario_want verdict(world *w, int d)
{
	if (w->tallies[d].stale_accepted)
		return FB_SCENARIO_CORRUPTED;
	for (uint32_t k = 0; k < w->sc->nkeys; k++)
		if (!balanced(w, d, k))
			return FB_SCENARIO_LOST;
	return FB_SCENARIO_SAFE;
}

static const char *want_text(fb_scenario_op of, fb_scenario_want want, int64_t v, char *buf,
                             size_t len)
{
	if (want == FB_SCENARIO_NUMBER) {
		snprintf(buf, len, "%lld", (long long)v);
		return buf;
	}
	const char *w = fb_scenario_want_word(of, want);
	return strcmp(w, "?") ? w : "anything";
}

/* What store d did, in the words of an expectation about op `of`. */
static fb_scenario_want got_outcome(const outcome *o, fb_scenario_op of)
{
	if (of == FB_SCENARIO_READ)
		return o->ok ? FB_SCENARIO_NUMBER : FB_SCENARIO_NOT_OK;
	if (o->skipped)
		return FB_SCENARIO_SKIPPED;
	return o->ok ? FB_SCENARIO_ACCEPTED : FB_SCENARIO_REJECTED;
}

/* Whether one store's actual (got, value) meets the wanted one. */
static bool meets(fb_scenario_want want, int64_t wv, fb_scenario_want got, int64_t gv)
{
	if (want == FB_SCENARIO_OK && got == FB_SCENARIO_NUMBER)
		return true; /* a read served, whatever it read */
	return want == got && (want != FB_SCENARIO_NUMBER || wv == gv);
}

/*
 * Check an expectation now. A failure is printed in the timeline and as
 * one line on err: "NAME:LINE: expect ...: what happened".
 */
static void expect_step(world *w, const fb_scenario_step *st, const char *text)
{
	char why[512] = "";
	size_t at = 0;
	bool ok = true;
	w->expectations++;
	if (st->op == FB_SCENARIO_EXPECT_FENCE) {
		const char *who = w->sc->clients[st->client];
		bool has =
		        st->has_key ? w->has_fence[st->client][st->key] : w->has_latest[st->client];
		uint64_t f = st->has_key ? w->fence[st->client][st->key] : w->latest[st->client];
		ok = has && f == (uint64_t)st->value;
		if (!has)
			snprintf(why, sizeof why, "no fence (%s acquired %s)", who,
			         st->has_key ? "no lease on it" : "nothing");
		else if (!ok)
			snprintf(why, sizeof why, "%llu", (unsigned long long)f);
	} else if (st->op == FB_SCENARIO_EXPECT_RESULT &&
	           !(st->of == FB_SCENARIO_READ || st->of == FB_SCENARIO_WRITE ||
	             st->of == FB_SCENARIO_DEBIT)) {
		ok = (st->want[0] == FB_SCENARIO_OK) == w->last_ok;
		if (!ok)
			snprintf(why, sizeof why, "%s",
			         want_text(st->of, w->last_ok ? FB_SCENARIO_OK : FB_SCENARIO_NOT_OK,
			                   0, NULL, 0));
	} else {
		for (int d = 0; d < STORES; d++) {
			if (st->want[d] == FB_SCENARIO_ANY)
				continue;
			fb_scenario_want got = FB_SCENARIO_NUMBER;
			int64_t gv = 0;
			fb_scenario_op of = st->op;
			switch (st->op) {
			case FB_SCENARIO_EXPECT_RESULT:
				of = st->of;
				got = got_outcome(&w->last[d], of);
				gv = w->last[d].balance;
				break;
			case FB_SCENARIO_EXPECT_BALANCE:
				gv = fb_store_balance(w->store[d], st->key);
				break;
			case FB_SCENARIO_EXPECT_LAST_FENCE:
				gv = (int64_t)fb_store_last_fence(w->store[d], st->key);
				break;
			case FB_SCENARIO_EXPECT_HIGHEST:
				gv = (int64_t)fb_store_highest(w->store[d], st->key);
				break;
			default:
				got = verdict(w, d);
				break;
			}
			if (meets(st->want[d], st->want_value[d], got, gv))
				continue;
			ok = false;
			char b1[32];
			const char *g = want_text(of, got, gv, b1, sizeof b1);
			if (at < sizeof why)
				at += (size_t)snprintf(why + at, sizeof why - at, "%s%s %s%s",
				                       at ? ", " : "", store_names[d],
				                       of == FB_SCENARIO_READ &&
				                                       got == FB_SCENARIO_NUMBER
				                               ? "read "
				                               : "",
				                       g);
		}
	}
	if (ok) {
		row(w, "", "ok", text, "", NULL, NULL);
		return;
	}
	w->failed++;
	char line[768];
	snprintf(line, sizeof line, "%s: got %s", text, why);
	row(w, "", "FAIL", line, "", NULL, NULL);
	fflush(w->out);
	fprintf(w->err, "%s:%u:%u: expectation failed: %s: got %s\n", w->sc->name, st->line,
	        st->col, text, why);
}

/*
 * One store's verdict line: the final balances, then why. Corrupted: a
 * stale write was accepted (the first one's fence and the fence it went
 * behind). Updates lost: no stale write, but a balance differs from the
 * runner's book. Either way each key whose balance differs says what it
 * should be.
 */
static fb_scenario_want print_verdict(world *w, int d)
{
	tally *t = &w->tallies[d];
	fb_scenario_want v = verdict(w, d);
	char text[768];
	size_t at = 0;
	uint32_t n = w->sc->nkeys;
	const char *sep = n > 1 ? "; " : ", ";
	fb_scenario_append(text, sizeof text, &at, "%s",
	                   n == 0   ? "no key used"
	                   : n == 1 ? "balance"
	                            : "balances");
	for (uint32_t k = 0; k < n; k++) {
		int64_t b = fb_store_balance(w->store[d], k);
		if (n > 1)
			fb_scenario_append(text, sizeof text, &at, "%s%s %lld", k ? ", " : " ",
			                   w->sc->keys[k], (long long)b);
		else
			fb_scenario_append(text, sizeof text, &at, " %lld", (long long)b);
	}
	if (v == FB_SCENARIO_CORRUPTED && t->stale_accepted == 1)
		fb_scenario_append(text, sizeof text, &at,
		                   "%sa stale write was accepted: fence %llu after %llu", sep,
		                   (unsigned long long)t->first_stale,
		                   (unsigned long long)t->first_stale_after);
	else if (v == FB_SCENARIO_CORRUPTED)
		fb_scenario_append(
		        text, sizeof text, &at,
		        "%s%u stale writes were accepted, the first: fence %llu after %llu", sep,
		        t->stale_accepted, (unsigned long long)t->first_stale,
		        (unsigned long long)t->first_stale_after);
	if (v != FB_SCENARIO_SAFE) {
		for (uint32_t k = 0; k < n; k++) {
			int64_t l = w->books[d][k].expected;
			if (!balanced(w, d, k))
				fb_scenario_append(text, sizeof text, &at, "%s%s%sshould be %lld",
				                   sep, n > 1 ? w->sc->keys[k] : "",
				                   n > 1 ? " " : "", (long long)l);
			sep = ", ";
		}
		if (v == FB_SCENARIO_LOST)
			fb_scenario_append(
			        text, sizeof text, &at,
			        ": no write went backwards, but the reads were not fenced");
	} else {
		if (t->rejected)
			fb_scenario_append(text, sizeof text, &at, "%s%u stale write%s rejected",
			                   sep, t->rejected, t->rejected == 1 ? "" : "s");
		sep = ", ";
		if (t->refused)
			fb_scenario_append(text, sizeof text, &at, "%s%u read%s refused", sep,
			                   t->refused, t->refused == 1 ? "" : "s");
		if (t->skipped)
			fb_scenario_append(text, sizeof text, &at, "%s%u write%s skipped", sep,
			                   t->skipped, t->skipped == 1 ? "" : "s");
	}
	fprintf(w->out, "%s: %s (%s)\n", store_names[d],
	        v == FB_SCENARIO_SAFE   ? "SAFE"
	        : v == FB_SCENARIO_LOST ? "UPDATES LOST"
	                                : "CORRUPTED",
	        text);
	return v;
}

/* The verdict lines; returns true when the fenced disciplines held. */
static bool print_verdicts(world *w)
{
	bool held = true;
	fprintf(w->out, "\n");
	for (int d = 0; d < STORES; d++) {
		fb_scenario_want v = print_verdict(w, d);
		if (fb_judge_fails((fb_discipline)d, v == FB_SCENARIO_CORRUPTED,
		                   v == FB_SCENARIO_LOST, true))
			held = false;
	}
	return held;
}

/* Column widths from the scenario itself, so the rows line up. */
static void widths(world *w)
{
	w->who_w = 4; /* "FAIL" */
	for (uint32_t c = 0; c < w->sc->nclients; c++) {
		int n = (int)strlen(w->sc->clients[c]);
		if (n > w->who_w)
			w->who_w = n;
	}
	w->action_w = 6;
	for (size_t i = 0; i < w->sc->nsteps; i++) {
		const fb_scenario_step *st = &w->sc->steps[i];
		if (st->op >= FB_SCENARIO_EXPECT_FENCE)
			continue;
		char buf[256];
		fb_scenario_step_format(w->sc, st, buf, sizeof buf);
		int n = (int)strlen(buf);
		if (n > w->action_w)
			w->action_w = n;
	}
}

/* The header, every step in order, the verdicts and the summary line;
 * returns the exit code. A script error stops the run at its step. */
static int run_steps(world *w)
{
	const fb_scenario *sc = w->sc;
	char ttl[32];
	fb_scenario_format_ns(ttl, sizeof ttl, sc->ttl_ns);
	fprintf(w->out, "scenario %s  ttl %s  first fence %llu  fence %s  balance %lld\n\n",
	        sc->name, ttl, (unsigned long long)sc->first_fence,
	        fb_fence_source_name(sc->source), (long long)sc->balance);
	widths(w);
	const char *heads[STORES] = {"fenced", "write-fenced", "unfenced"};
	row(w, "time", "who", "action", "fence", heads, NULL);
	for (size_t i = 0; i < sc->nsteps; i++) {
		const fb_scenario_step *st = &sc->steps[i];
		char t[32], action[256];
		fmt_time(t, sizeof t, now(w));
		fb_scenario_step_format(sc, st, action, sizeof action);
		int code = 0;
		switch (st->op) {
		case FB_SCENARIO_AT:
		case FB_SCENARIO_ADVANCE:
		case FB_SCENARIO_PAUSE:
			code = clock_step(w, st, t, action);
			break;
		case FB_SCENARIO_ACQUIRE:
		case FB_SCENARIO_IS_HELD:
		case FB_SCENARIO_RENEW:
		case FB_SCENARIO_RELEASE:
			code = lease_step(w, st, t, action);
			break;
		case FB_SCENARIO_READ:
		case FB_SCENARIO_WRITE:
		case FB_SCENARIO_DEBIT:
			code = store_step(w, st, t, action);
			break;
		default:
			expect_step(w, st, action);
			break;
		}
		if (code)
			return code;
	}
	bool held = print_verdicts(w);
	fprintf(w->out, "\n");
	if (!held)
		fprintf(w->out, "FAIL: a fenced discipline was not safe (a forged fence in the "
		                "script, or a bug in fencebench)\n");
	if (w->failed)
		fprintf(w->out, "FAIL: %u of %u expectations failed\n", w->failed, w->expectations);
	else if (w->expectations)
		fprintf(w->out, "PASS: %u expectation%s met\n", w->expectations,
		        w->expectations == 1 ? "" : "s");
	else
		fprintf(w->out, "no expectations: a demonstration, not a test\n");
	return w->failed || !held ? 1 : 0;
}

int fb_scenario_run(const fb_scenario *sc, FILE *out, FILE *err)
{
	world *w = calloc(1, sizeof *w);
	int code = 3;
	if (!w) {
		fprintf(err, "%s: out of memory\n", sc->name);
		return 3;
	}
	w->sc = sc;
	w->out = out;
	w->err = err;
	fb_clock_manual_init(&w->clock, 0);
	uint32_t keys = sc->nkeys ? sc->nkeys : 1;
	fb_lease_config cfg = {.keys = keys,
	                       .ttl_ns = sc->ttl_ns,
	                       .source = sc->source,
	                       .first_fence = sc->first_fence,
	                       .clock = &w->clock.base};
	fb_err e = fb_lease_table_create(&cfg, &w->leases);
	if (e != FB_OK) {
		fprintf(err, "%s: cannot create the lease table: %s\n", sc->name, fb_strerror(e));
		goto out;
	}
	for (int d = 0; d < STORES; d++) {
		e = fb_store_create((fb_discipline)d, keys, sc->balance, &w->store[d]);
		if (e != FB_OK) {
			fprintf(err, "%s: cannot create the %s store: %s\n", sc->name,
			        store_names[d], fb_strerror(e));
			goto out;
		}
		for (uint32_t k = 0; k < keys; k++)
			w->books[d][k].expected = sc->balance;
	}
	code = run_steps(w);
out:
	for (int d = 0; d < STORES; d++)
		fb_store_destroy(w->store[d]);
	fb_lease_table_destroy(w->leases);
	free(w);
	return code;
}

/* ---- the built-ins ---------------------------------------------------- */

#define SETTINGS "ttl 30ms\nfirst-fence 33\nbalance 100\n\n"

const fb_scenario_builtin fb_scenario_builtins[] = {
        {"kleppmann",
         "the article's diagram: A (33) pauses past its lease, B (34) debits, A debits late",
         "# Kleppmann's diagram (2016): a lease is not mutual exclusion.\n"
         "# A gets fence 33 and pauses (GC, a page fault, SIGSTOP, a delayed packet)\n"
         "# past its TTL; B gets 34 and debits 10; A wakes and debits 10 with 33.\n" SETTINGS
         "A acquire acct\n"
         "expect acquire ok\n"
         "expect A fence 33\n"
         "A pause 31ms          # stop-the-world: the lease expires at 30ms\n"
         "B acquire acct\n"
         "expect B fence 34\n"
         "B debit acct 10\n"
         "expect debit all accepted\n"
         "A debit acct 10       # A wakes and writes with its old fence\n"
         "expect debit fenced rejected write-fenced rejected unfenced accepted\n"
         "expect balance acct fenced 90 write-fenced 90 unfenced 80\n"
         "expect last-fence acct fenced 34 write-fenced 34 unfenced 33\n"
         "expect verdict fenced safe write-fenced safe unfenced corrupted\n"},
        {"contract-1", "while A's lease is live, B cannot acquire (the NX part)",
         "# Contract 1: while the lease is live, B cannot acquire: the NX in\n"
         "# SET key val NX PX ttl. Without this there is no lock at all.\n" SETTINGS
         "A acquire acct:1\n"
         "expect acquire ok\n"
         "expect A fence 33\n"
         "B acquire acct:1\n"
         "expect acquire refused\n"
         "A is-held acct:1\n"
         "expect is-held yes\n"
         "B is-held acct:1\n"
         "expect is-held no\n"},
        {"contract-2", "the TTL gives liveness: after 31ms B acquires with fence 34",
         "# Contract 2: the TTL is a liveness feature. After 31ms A is no longer the\n"
         "# holder; B acquires, and its fence, 34, is strictly greater than 33.\n" SETTINGS
         "A acquire acct:1\n"
         "expect A fence 33\n"
         "at 30ms\n"
         "A is-held acct:1\n"
         "expect is-held no     # expires_at <= now: the lease is over\n"
         "at 31ms\n"
         "A is-held acct:1\n"
         "expect is-held no\n"
         "B acquire acct:1\n"
         "expect acquire ok\n"
         "expect B fence 34\n"},
        {"contract-3", "fencing off: A's late debit with 33 lands, balance 80",
         "# Contract 3: turn fencing off. Same pause: B debits 10 with token 34, A\n"
         "# wakes and debits 10 with token 33. The unfenced store accepts both:\n"
         "# balance 80, and the last write carried 33. B's update was overwritten,\n"
         "# or the account charged twice, depending on how you read the ledger.\n" SETTINGS
         "A acquire acct:1\n"
         "A pause 31ms\n"
         "B acquire acct:1\n"
         "B debit acct:1 10\n"
         "expect debit unfenced accepted\n"
         "A debit acct:1 10\n"
         "expect debit unfenced accepted\n"
         "expect balance acct:1 unfenced 80\n"
         "expect last-fence acct:1 unfenced 33\n"
         "expect verdict unfenced corrupted\n"},
        {"contract-4", "fencing on: A's debit with 33 is stale, balance 90, last fence 34",
         "# Contract 4: the same sequence with fencing on. B's debit is accepted,\n"
         "# A's returns stale. The balance stays 90 and the last fence is 34.\n" SETTINGS
         "A acquire acct:1\n"
         "A pause 31ms\n"
         "B acquire acct:1\n"
         "B debit acct:1 10\n"
         "expect debit fenced accepted write-fenced accepted\n"
         "A debit acct:1 10\n"
         "expect debit fenced rejected write-fenced rejected\n"
         "expect balance acct:1 fenced 90 write-fenced 90\n"
         "expect last-fence acct:1 fenced 34 write-fenced 34\n"
         "expect verdict fenced safe write-fenced safe\n"},
        {"contract-5", "an equal token is stale: 40 is accepted once, then rejected",
         "# Contract 5: an equal token is stale: > not >=. Token 40 is accepted once,\n"
         "# then rejected. A retry must be idempotent at the business layer (the same\n"
         "# debit id), not by sending the same fence again as a second debit.\n" SETTINGS
         "C debit acct:1 5 fence 40\n"
         "expect debit all accepted\n"
         "C debit acct:1 5 fence 40\n"
         "expect debit fenced rejected write-fenced rejected unfenced accepted\n"
         "expect balance acct:1 fenced 95 write-fenced 95 unfenced 90\n"
         "expect last-fence acct:1 fenced 40 write-fenced 40\n"},
        {"contract-6", "is-held just before the write is theater: fencing still rejects",
         "# Contract 6: the TOCTOU the interviewer will poke. A checks is-held at\n"
         "# t=0 and it says yes; A pauses between its check and its write; B\n"
         "# acquires and writes; A writes with its old fence. Fencing still rejects\n"
         "# it: the check was theater.\n" SETTINGS "A acquire acct:1\n"
         "A is-held acct:1\n"
         "expect is-held yes\n"
         "A pause 31ms          # between the check and the write\n"
         "B acquire acct:1\n"
         "expect B fence 34\n"
         "B debit acct:1 10\n"
         "A debit acct:1 10\n"
         "expect debit fenced rejected write-fenced rejected unfenced accepted\n"
         "expect last-fence acct:1 fenced 34 write-fenced 34\n"
         "expect balance acct:1 fenced 90 write-fenced 90 unfenced 80\n"},
        {"rmw", "read-modify-write: write-fenced accepts both 99s and loses a debit",
         "# The step the article leaves out: a read-modify-write needs its read\n"
         "# fenced too. A (33) reads 100 and pauses past its lease; B (34) reads\n"
         "# 100; A wakes and writes 99 (33 > none accepted); B writes 99 (34 > 33).\n"
         "# No write went backwards, yet one debit is lost. The fenced store\n"
         "# registered 34 on B's read, so it refuses A's write.\n" SETTINGS "A acquire acct\n"
         "expect A fence 33\n"
         "A read acct\n"
         "expect read all 100\n"
         "A pause 31ms\n"
         "B acquire acct\n"
         "expect B fence 34\n"
         "B read acct\n"
         "expect read all 100\n"
         "A write acct read-1\n"
         "expect write fenced rejected write-fenced accepted unfenced accepted\n"
         "B write acct read-1\n"
         "expect write all accepted\n"
         "expect balance acct all 99\n"
         "expect verdict fenced safe write-fenced lost unfenced lost\n"
         "A read acct           # and A's later read with 33 is refused as well\n"
         "expect read fenced refused write-fenced 99 unfenced 99\n"},
        {NULL, NULL, NULL},
};

/* ---- the command ------------------------------------------------------ */

static const char help_text[] =
        "usage: fencebench scenario NAME|FILE\n"
        "       fencebench scenario --list | --show NAME | --help\n"
        "\n"
        "Runs a scripted timeline on a manual clock: one lease table, and three stores\n"
        "side by side (fenced, write-fenced, unfenced) that every read, write and debit\n"
        "goes to with the same fence. Prints each step, what each store did, and a\n"
        "verdict per store. Exit 0: every expectation held; 1: one failed, or fenced\n"
        "storage was not safe; 2: bad input (FILE:LINE:COL: what is wrong).\n"
        "\n"
        "One statement per line; '#' starts a comment. Clients are names that start\n"
        "with an upper-case letter (A, B, Worker-2), keys start with a letter (acct:1).\n"
        "Durations are 0 or a number with a unit: ns us ms s m h (31ms, 1.5s).\n"
        "\n"
        "settings, before anything else:\n"
        "  ttl D                  lease time to live (default 30ms)\n"
        "  first-fence N          the first fence minted (default 33, the article's)\n"
        "  balance N              every key's initial balance (default 100)\n"
        "  fence global|per-key   fence source (default global)\n"
        "the clock (it starts at 0 and only moves forward):\n"
        "  at D                   set it\n"
        "  advance D              move it on\n"
        "  C pause D              client C sleeps: the clock moves on by D\n"
        "actions:\n"
        "  C acquire KEY          SET KEY C NX PX ttl; a success mints C's fence for KEY\n"
        "  C is-held KEY          the client-side check\n"
        "  C renew KEY            extend C's lease if it is still live\n"
        "  C release KEY          compare-and-delete by (C, C's fence)\n"
        "  C read KEY             read the balance with C's fence\n"
        "  C write KEY V          write V with C's fence: a number, or read-N, read+N,\n"
        "                         read (C's last read of KEY in that store; a store that\n"
        "                         refused the read skips the write)\n"
        "  C debit KEY N          the store subtracts N\n"
        "  read, write and debit take 'fence N' at the end to send token N instead.\n"
        "expectations (STORE: fenced, write-fenced, unfenced or all):\n"
        "  expect C fence [KEY] N                     C's latest fence (for KEY)\n"
        "  expect acquire|renew|release ok|refused    the previous action's outcome\n"
        "  expect is-held yes|no\n"
        "  expect read STORE N|ok|refused ...\n"
        "  expect write|debit STORE accepted|rejected|skipped ...\n"
        "  expect balance|last-fence|highest KEY STORE N ...\n"
        "  expect verdict STORE safe|lost|corrupted ...\n"
        "      the verdict so far. corrupted: a stale write was accepted; lost: a\n"
        "      balance the accepted writes do not explain (a lost update)\n"
        "\n"
        "A failed expectation prints what was expected and what happened, and the run\n"
        "exits 1. See the built-ins: fencebench scenario --list, --show kleppmann.\n";

static const fb_scenario_builtin *find_builtin(const char *name)
{
	for (const fb_scenario_builtin *b = fb_scenario_builtins; b->name; b++)
		if (!strcmp(b->name, name))
			return b;
	return NULL;
}

static void list_names(FILE *f)
{
	for (const fb_scenario_builtin *b = fb_scenario_builtins; b->name; b++)
		fprintf(f, "%s%s", b == fb_scenario_builtins ? "" : ", ", b->name);
}

static int unknown_builtin(const char *name)
{
	fprintf(stderr, "scenario: no built-in scenario or file '%s'; built-ins: ", name);
	list_names(stderr);
	fprintf(stderr, "\n");
	return 2;
}

/* The whole file, at most 1 MiB; NULL with one line on stderr otherwise. */
static char *read_file(const char *path, size_t *len)
{
	enum { MAX = 1 << 20 };
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "scenario: cannot open '%s': %s\n", path, strerror(errno));
		return NULL;
	}
	char *buf = malloc(MAX + 1);
	if (!buf) {
		fprintf(stderr, "scenario: '%s': out of memory\n", path);
		fclose(f);
		return NULL;
	}
	*len = fread(buf, 1, MAX + 1, f);
	int failed = ferror(f), saved = errno;
	fclose(f);
	if (failed) {
		fprintf(stderr, "scenario: cannot read '%s': %s\n", path, strerror(saved));
		free(buf);
		return NULL;
	}
	if (*len > MAX) {
		fprintf(stderr, "scenario: '%s' is larger than 1 MiB\n", path);
		free(buf);
		return NULL;
	}
	return buf;
}

/*
 * NAME is a built-in if one has that name; otherwise a file, except that a
 * bare word naming no file (no '/' or '.') is taken for a mistyped built-in
 * and answered with the list of valid names. Either way bad input is exit 2.
 */
int fb_scenario_main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "scenario: needs a NAME or FILE (fencebench scenario --help)\n");
		return 2;
	}
	const char *arg = argv[1];
	if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
		fputs(help_text, stdout);
		return 0;
	}
	if (!strcmp(arg, "--list")) {
		for (const fb_scenario_builtin *b = fb_scenario_builtins; b->name; b++)
			printf("%-12s %s\n", b->name, b->summary);
		return 0;
	}
	if (!strcmp(arg, "--show")) {
		if (argc != 3) {
			fprintf(stderr, "scenario: --show needs one NAME\n");
			return 2;
		}
		const fb_scenario_builtin *b = find_builtin(argv[2]);
		if (!b)
			return unknown_builtin(argv[2]);
		fputs(b->text, stdout);
		return 0;
	}
	if (arg[0] == '-' && arg[1]) {
		fprintf(stderr, "scenario: unknown option '%s' (fencebench scenario --help)\n",
		        arg);
		return 2;
	}
	if (argc > 2) {
		fprintf(stderr, "scenario: unexpected argument '%s'\n", argv[2]);
		return 2;
	}
	const fb_scenario_builtin *b = find_builtin(arg);
	char *text = NULL;
	size_t len;
	if (b) {
		len = strlen(b->text);
	} else {
		/* A bare word that is no file was meant as a built-in's name. */
		if (!strpbrk(arg, "./") && access(arg, F_OK) != 0)
			return unknown_builtin(arg);
		if (!(text = read_file(arg, &len)))
			return 2;
	}
	char err[512];
	fb_scenario *sc;
	fb_err e = fb_scenario_parse(b ? b->text : text, len, arg, &sc, err, sizeof err);
	free(text);
	if (e != FB_OK) {
		fprintf(stderr, "%s\n", err);
		return e == FB_ENOMEM ? 3 : 2;
	}
	if (b)
		printf("%s: %s\n", b->name, b->summary);
	int code = fb_scenario_run(sc, stdout, stderr);
	fb_scenario_free(sc);
	return code;
}
