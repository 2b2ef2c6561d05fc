/*
 * The scenario parser: text in, steps out, no I/O. Every input byte is
 * checked before it is used, every number is parsed by hand against a
 * bound (no strtol, no locale, no overflow), lines are copied into a fixed
 * buffer only after their length is checked, and every failure path frees
 * what it built: a libFuzzer harness can call fb_scenario_parse on
 * arbitrary bytes.
 */
#include "scenario.h"

#include "duration.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct word {
	const char *s;
	uint32_t col;
} word;

typedef struct parser {
	fb_scenario *sc;
	const char *name;
	char *err;
	size_t errlen;
	uint32_t line;
	uint32_t eol; /* column just past the line's last word */
	uint64_t now; /* the clock as the script has moved it so far */
	bool started; /* a statement other than a setting was seen */
	uint32_t setting_line[4];
	bool has_action;
	size_t last_action;
	/* per client, a bit per key: an acquire / a read of it came before */
	uint32_t acquired[FB_SCENARIO_CLIENTS_MAX];
	uint32_t read[FB_SCENARIO_CLIENTS_MAX];
} parser;

static const char *const store_names[FB_DISCIPLINES] = {"fenced", "write-fenced", "unfenced"};

/* Record "NAME:LINE:COL: message" and return FB_EINVAL. */
__attribute__((format(printf, 3, 4))) static fb_err fail(parser *p, uint32_t col, const char *fmt,
                                                         ...)
{
	if (!p->err || !p->errlen)
		return FB_EINVAL;
	int n = snprintf(p->err, p->errlen, "%s:%u:%u: ", p->name, p->line, col);
	if (n >= 0 && (size_t)n < p->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return FB_EINVAL;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_upper(char c)
{
	return c >= 'A' && c <= 'Z';
}

static bool is_alpha(char c)
{
	return is_upper(c) || (c >= 'a' && c <= 'z');
}

/*
 * An optional '-' (only when min < 0) and decimal digits, within
 * [min, max]; both bounds are at most 2^62 in magnitude. Returns 0, -1 if
 * it is not a number, -2 if it is out of range.
 */
static int parse_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
	bool neg = false;
	if (*s == '-' && min < 0) {
		neg = true;
		s++;
	}
	if (!is_digit(*s))
		return -1;
	uint64_t limit = neg ? (uint64_t)-min : (uint64_t)max, v = 0;
	bool over = false;
	for (; is_digit(*s); s++) {
		unsigned d = (unsigned)(*s - '0');
		if (d > limit || v > (limit - d) / 10)
			over = true;
		else
			v = v * 10 + d;
	}
	if (*s)
		return -1;
	int64_t r = neg ? -(int64_t)v : (int64_t)v;
	if (over || r < min || r > max)
		return -2;
	*out = r;
	return 0;
}

/* A duration word, or a message saying why it is not one. */
static fb_err duration(parser *p, const word *w, uint64_t *ns)
{
	/* "at 0" and a unit on every other time, exact to the nanosecond */
	switch (fb_duration_read(w->s, FB_DURATION_EXACT | FB_DURATION_ZERO_OK,
	                         FB_SCENARIO_TIME_MAX, ns)) {
	case 0:
		return FB_OK;
	case FB_DURATION_INEXACT:
		return fail(p, w->col, "'%s' is finer than a nanosecond", w->s);
	case FB_DURATION_TOO_LARGE:
		return fail(p, w->col, "'%s' is longer than a year", w->s);
	default:
		return fail(p, w->col,
		            "'%s' is not a duration: 0, or a number with a unit ns, us, ms, s, "
		            "m or h (31ms, 1.5s)",
		            w->s);
	}
}

/* An integer word in [min, max], or a message naming `what` and the range. */
static fb_err number(parser *p, const word *w, int64_t min, int64_t max, const char *what,
                     int64_t *out)
{
	switch (parse_int(w->s, min, max, out)) {
	case 0:
		return FB_OK;
	case -2:
		return fail(p, w->col, "%s '%s' is out of range (%lld..%lld)", what, w->s,
		            (long long)min, (long long)max);
	default:
		return fail(p, w->col, "%s '%s' is not a%s integer", what, w->s,
		            min < 0 ? "n" : " non-negative");
	}
}

static fb_err fence_number(parser *p, const word *w, uint64_t *out)
{
	int64_t v;
	fb_err e = number(p, w, 0, (int64_t)FB_FENCE_MAX, "fence", &v);
	*out = (uint64_t)v;
	return e;
}

/* Client names start with an upper-case letter (that is how a line is
 * told to be a client action); keys start with any letter. */
static bool valid_name(const char *s, bool client)
{
	size_t n = strlen(s);
	if (n == 0 || n > FB_SCENARIO_NAME_MAX || !(client ? is_upper(s[0]) : is_alpha(s[0])))
		return false;
	for (size_t i = 1; i < n; i++) {
		char c = s[i];
		if (!(is_alpha(c) || is_digit(c) || c == '_' || c == '-' ||
		      (!client && (c == '.' || c == ':'))))
			return false;
	}
	return true;
}

/* Index of a client or key name; a new one is added only when add is
 * true (actions name them, expectations only refer to them). */
static fb_err intern(parser *p, const word *w, bool client, bool add, uint8_t *out)
{
	fb_scenario *sc = p->sc;
	const char *what = client ? "client" : "key";
	if (!valid_name(w->s, client))
		return fail(
		        p, w->col,
		        client ? "'%s' is not a client name: an upper-case letter, then letters, "
		                 "digits, '_' or '-', at most %d in all"
		               : "'%s' is not a key name: a letter, then letters, digits, '_', "
		                 "'-', "
		                 "'.' or ':', at most %d in all",
		        w->s, FB_SCENARIO_NAME_MAX);
	uint32_t *n = client ? &sc->nclients : &sc->nkeys;
	char(*names)[FB_SCENARIO_NAME_MAX + 1] = client ? sc->clients : sc->keys;
	for (uint32_t i = 0; i < *n; i++)
		if (!strcmp(names[i], w->s)) {
			*out = (uint8_t)i;
			return FB_OK;
		}
	if (!add)
		return fail(p, w->col, "unknown %s '%s': no action before this line names it", what,
		            w->s);
	uint32_t max = client ? FB_SCENARIO_CLIENTS_MAX : FB_SCENARIO_KEYS_MAX;
	if (*n >= max)
		return fail(p, w->col, "too many %ss: '%s' would be the %uth (at most %u)", what,
		            w->s, *n + 1, max);
	memcpy(names[*n], w->s, strlen(w->s) + 1);
	*out = (uint8_t)(*n)++;
	return FB_OK;
}

/* Word i must exist: `needs` says what belongs there. */
static fb_err need(parser *p, int n, int i, const char *what, const char *needs)
{
	if (i < n)
		return FB_OK;
	return fail(p, p->eol, "%s needs %s", what, needs);
}

static fb_err no_more(parser *p, const word *w, int n, int i, const char *what)
{
	if (i >= n)
		return FB_OK;
	return fail(p, w[i].col, "unexpected '%s' after %s", w[i].s, what);
}

/* Add a step, growing the array by doubling up to FB_SCENARIO_STEPS_MAX. */
static fb_err append(parser *p, const fb_scenario_step *st)
{
	fb_scenario *sc = p->sc;
	if (sc->nsteps >= FB_SCENARIO_STEPS_MAX)
		return fail(p, st->col, "more than %d statements", FB_SCENARIO_STEPS_MAX);
	if (sc->nsteps == sc->cap) {
		size_t cap = sc->cap ? sc->cap * 2 : 32;
		fb_scenario_step *s = realloc(sc->steps, cap * sizeof *s);
		if (!s) {
			snprintf(p->err, p->errlen, "%s: out of memory", p->name);
			return FB_ENOMEM;
		}
		sc->steps = s;
		sc->cap = cap;
	}
	sc->steps[sc->nsteps++] = *st;
	return FB_OK;
}

/* ttl, first-fence, balance, fence: once each, and before anything else,
 * so a scenario's whole timeline runs under one configuration. */
static fb_err setting(parser *p, const word *w, int n, int which)
{
	static const char *const names[] = {"ttl", "first-fence", "balance", "fence"};
	fb_scenario *sc = p->sc;
	fb_err e;
	if (p->started)
		return fail(p, w[0].col,
		            "'%s' is a setting: settings go before the first action, clock move "
		            "or expectation",
		            w[0].s);
	if (p->setting_line[which])
		return fail(p, w[0].col, "'%s' is set twice (first on line %u)", w[0].s,
		            p->setting_line[which]);
	p->setting_line[which] = p->line;
	static const char *const needs[] = {"a duration (30ms)", "a number (33)", "a number (100)",
	                                    "global or per-key"};
	if ((e = need(p, n, 1, names[which], needs[which])) ||
	    (e = no_more(p, w, n, 2, names[which])))
		return e;
	int64_t v;
	switch (which) {
	case 0:
		if ((e = duration(p, &w[1], &sc->ttl_ns)))
			return e;
		if (sc->ttl_ns == 0)
			return fail(p, w[1].col, "ttl must be above 0");
		return FB_OK;
	case 1:
		if ((e = number(p, &w[1], 1, (int64_t)FB_FENCE_MAX, "first-fence", &v)))
			return e;
		sc->first_fence = (uint64_t)v;
		return FB_OK;
	case 2:
		return number(p, &w[1], -FB_SCENARIO_VALUE_MAX, FB_SCENARIO_VALUE_MAX, "balance",
		              &sc->balance);
	default:
		if (!strcmp(w[1].s, "global"))
			sc->source = FB_FENCE_GLOBAL;
		else if (!strcmp(w[1].s, "per-key"))
			sc->source = FB_FENCE_PER_KEY;
		else
			return fail(p, w[1].col, "fence source '%s': global or per-key", w[1].s);
		return FB_OK;
	}
}

/* `at D`, `advance D`: the clock only moves forward, and stays in a year. */
static fb_err clock_move(parser *p, const word *w, int n, fb_scenario_op op)
{
	fb_scenario_step st = {.op = op, .line = p->line, .col = w[0].col};
	fb_err e;
	if ((e = need(p, n, 1, w[0].s, "a duration (31ms)")) || (e = no_more(p, w, n, 2, w[1].s)) ||
	    (e = duration(p, &w[1], &st.ns)))
		return e;
	if (op == FB_SCENARIO_AT && st.ns < p->now) {
		char at[32];
		fb_scenario_format_ns(at, sizeof at, p->now);
		return fail(p, w[1].col,
		            "the clock is at %s already: it only moves forward (or use advance)",
		            at);
	}
	uint64_t t = op == FB_SCENARIO_AT ? st.ns : p->now + st.ns;
	if (t > FB_SCENARIO_TIME_MAX)
		return fail(p, w[1].col, "the clock would pass a year");
	p->now = t;
	return append(p, &st);
}

static const struct {
	const char *name;
	fb_scenario_op op;
} verbs[] = {{"acquire", FB_SCENARIO_ACQUIRE}, {"is-held", FB_SCENARIO_IS_HELD},
             {"renew", FB_SCENARIO_RENEW},     {"release", FB_SCENARIO_RELEASE},
             {"read", FB_SCENARIO_READ},       {"write", FB_SCENARIO_WRITE},
             {"debit", FB_SCENARIO_DEBIT},     {"pause", FB_SCENARIO_PAUSE}};

static const char *verb_name(fb_scenario_op op)
{
	for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
		if (verbs[i].op == op)
			return verbs[i].name;
	return "?";
}

/* The value of `write KEY V`: a number, or read / read-N / read+N. */
static fb_err write_value(parser *p, const word *w, fb_scenario_step *st)
{
	if (strncmp(w->s, "read", 4) != 0) {
		st->source = FB_SCENARIO_VALUE;
		return number(p, w, -FB_SCENARIO_VALUE_MAX, FB_SCENARIO_VALUE_MAX, "value",
		              &st->value);
	}
	st->source = FB_SCENARIO_FROM_READ;
	const char *s = w->s + 4;
	st->value = 0;
	if (*s == 0)
		return FB_OK;
	if ((*s != '-' && *s != '+') || parse_int(s + 1, 0, FB_SCENARIO_VALUE_MAX, &st->value))
		return fail(p, w->col, "'%s' is not a value: a number, read, read-N or read+N",
		            w->s);
	if (*s == '-')
		st->value = -st->value;
	return FB_OK;
}

/* `C VERB ...`: a client's action. */
static fb_err action(parser *p, const word *w, int n)
{
	fb_scenario_step st = {.line = p->line, .col = w[0].col};
	fb_err e;
	if ((e = intern(p, &w[0], true, true, &st.client)) ||
	    (e = need(p, n, 1, w[0].s,
	              "an action: acquire, is-held, renew, release, read, write, debit or pause")))
		return e;
	size_t v = 0;
	while (v < sizeof verbs / sizeof verbs[0] && strcmp(verbs[v].name, w[1].s))
		v++;
	if (v == sizeof verbs / sizeof verbs[0])
		return fail(p, w[1].col,
		            "unknown action '%s': acquire, is-held, renew, release, read, write, "
		            "debit or pause",
		            w[1].s);
	st.op = verbs[v].op;
	const char *verb = verbs[v].name;
	if (st.op == FB_SCENARIO_PAUSE) {
		if ((e = need(p, n, 2, verb, "a duration (31ms)")) ||
		    (e = no_more(p, w, n, 3, w[2].s)) || (e = duration(p, &w[2], &st.ns)))
			return e;
		if (p->now + st.ns > FB_SCENARIO_TIME_MAX)
			return fail(p, w[2].col, "the clock would pass a year");
		p->now += st.ns;
		p->started = true;
		return append(p, &st);
	}
	if ((e = need(p, n, 2, verb, "a KEY")) || (e = intern(p, &w[2], false, true, &st.key)))
		return e;
	int i = 3;
	if (st.op == FB_SCENARIO_WRITE) {
		if ((e = need(p, n, 3, "write KEY", "a value: a number, read, read-N or read+N")) ||
		    (e = write_value(p, &w[3], &st)))
			return e;
		if (st.source == FB_SCENARIO_FROM_READ && !(p->read[st.client] & 1u << st.key))
			return fail(p, w[3].col,
			            "'%s' needs a read: %s has not read %s before this line",
			            w[3].s, w[0].s, w[2].s);
		i = 4;
	} else if (st.op == FB_SCENARIO_DEBIT) {
		if ((e = need(p, n, 3, "debit KEY", "an amount")) ||
		    (e = number(p, &w[3], 0, FB_SCENARIO_VALUE_MAX, "amount", &st.value)))
			return e;
		i = 4;
	}
	bool store_op = st.op == FB_SCENARIO_READ || st.op == FB_SCENARIO_WRITE ||
	                st.op == FB_SCENARIO_DEBIT;
	if (store_op && i < n && !strcmp(w[i].s, "fence")) {
		if ((e = need(p, n, i + 1, "fence", "a number")) ||
		    (e = fence_number(p, &w[i + 1], &st.token)))
			return e;
		st.has_token = true;
		i += 2;
	}
	if ((e = no_more(p, w, n, i, w[i - 1].s)))
		return e;
	if (store_op && !st.has_token && !(p->acquired[st.client] & 1u << st.key))
		return fail(p, w[1].col,
		            "%s has no fence for %s: no '%s acquire %s' before this line (or add "
		            "'fence N')",
		            w[0].s, w[2].s, w[0].s, w[2].s);
	if (st.op == FB_SCENARIO_ACQUIRE)
		p->acquired[st.client] |= 1u << st.key;
	if (st.op == FB_SCENARIO_READ)
		p->read[st.client] |= 1u << st.key;
	p->started = true;
	p->has_action = true;
	p->last_action = p->sc->nsteps;
	return append(p, &st);
}

/* One word of an expectation about a store operation's outcome. */
static bool outcome_word(fb_scenario_op of, const word *w, fb_scenario_want *want, int64_t *value)
{
	if (of == FB_SCENARIO_READ) {
		if (!strcmp(w->s, "ok"))
			*want = FB_SCENARIO_OK;
		else if (!strcmp(w->s, "refused"))
			*want = FB_SCENARIO_NOT_OK;
		else if (!parse_int(w->s, -(INT64_C(1) << 62), INT64_C(1) << 62, value))
			*want = FB_SCENARIO_NUMBER;
		else
			return false;
		return true;
	}
	if (of == FB_SCENARIO_WRITE || of == FB_SCENARIO_DEBIT) {
		static const struct {
			const char *s;
			fb_scenario_want w;
		} outs[] = {{"accepted", FB_SCENARIO_ACCEPTED},
		            {"rejected", FB_SCENARIO_REJECTED},
		            {"skipped", FB_SCENARIO_SKIPPED}};
		for (size_t i = 0; i < 3; i++)
			if (!strcmp(w->s, outs[i].s)) {
				*want = outs[i].w;
				return true;
			}
		return false;
	}
	if (of == FB_SCENARIO_EXPECT_VERDICT) {
		static const struct {
			const char *s;
			fb_scenario_want w;
		} outs[] = {{"safe", FB_SCENARIO_SAFE},
		            {"lost", FB_SCENARIO_LOST},
		            {"corrupted", FB_SCENARIO_CORRUPTED}};
		for (size_t i = 0; i < 3; i++)
			if (!strcmp(w->s, outs[i].s)) {
				*want = outs[i].w;
				return true;
			}
		return false;
	}
	/* balance, last-fence, highest: a number */
	if (parse_int(w->s, -(INT64_C(1) << 62), INT64_C(1) << 62, value))
		return false;
	*want = FB_SCENARIO_NUMBER;
	return true;
}

/* "STORE WANT [STORE WANT]..." from word i on; STORE may be "all". */
static fb_err store_pairs(parser *p, const word *w, int n, int i, fb_scenario_op of,
                          const char *what, const char *wants, fb_scenario_step *st)
{
	fb_err e;
	if ((e = need(p, n, i, what, "a store: fenced, write-fenced, unfenced or all")))
		return e;
	for (; i < n; i += 2) {
		int d = 0;
		bool all = !strcmp(w[i].s, "all");
		while (d < FB_DISCIPLINES && strcmp(w[i].s, store_names[d]))
			d++;
		if (!all && d == FB_DISCIPLINES)
			return fail(p, w[i].col,
			            "unknown store '%s': fenced, write-fenced, unfenced or all",
			            w[i].s);
		if ((e = need(p, n, i + 1, w[i].s, wants)))
			return e;
		fb_scenario_want want;
		int64_t value = 0;
		if (!outcome_word(of, &w[i + 1], &want, &value))
			return fail(p, w[i + 1].col, "'%s': %s expects %s", w[i + 1].s, what,
			            wants);
		for (int k = 0; k < FB_DISCIPLINES; k++) {
			if (!all && k != d)
				continue;
			if (st->want[k] != FB_SCENARIO_ANY)
				return fail(p, w[i].col, "%s is named twice", store_names[k]);
			st->want[k] = want;
			st->want_value[k] = value;
		}
	}
	return FB_OK;
}

/*
 * `expect ...`. A client's fence and the state of a key (balance,
 * last-fence, highest, verdict) can be checked anywhere; an outcome (expect
 * acquire/read/...) must name the verb of the latest action before it, so
 * a script cannot check one action while meaning another.
 */
static fb_err expect(parser *p, const word *w, int n)
{
	fb_scenario_step st = {.line = p->line, .col = w[0].col};
	fb_err e;
	p->started = true;
	if ((e = need(p, n, 1, "expect",
	              "what: a client's fence, acquire, is-held, renew, release, read, write, "
	              "debit, balance, last-fence, highest or verdict")))
		return e;
	const char *what = w[1].s;
	if (is_upper(what[0])) {
		st.op = FB_SCENARIO_EXPECT_FENCE;
		if ((e = intern(p, &w[1], true, false, &st.client)))
			return e;
		if (n < 3 || strcmp(w[2].s, "fence"))
			return n < 3 ? fail(p, p->eol, "expect %s needs 'fence N'", what)
			             : fail(p, w[2].col, "'%s': expect %s fence [KEY] N", w[2].s,
			                    what);
		int i = 3;
		if (n >= 5) {
			if ((e = intern(p, &w[3], false, false, &st.key)))
				return e;
			st.has_key = true;
			i = 4;
		}
		uint64_t f;
		if ((e = need(p, n, i, "expect fence", "a number")) ||
		    (e = no_more(p, w, n, i + 1, w[i].s)) || (e = fence_number(p, &w[i], &f)))
			return e;
		st.value = (int64_t)f;
		return append(p, &st);
	}
	static const struct {
		const char *name;
		fb_scenario_op op;
	} kinds[] = {{"balance", FB_SCENARIO_EXPECT_BALANCE},
	             {"last-fence", FB_SCENARIO_EXPECT_LAST_FENCE},
	             {"highest", FB_SCENARIO_EXPECT_HIGHEST},
	             {"verdict", FB_SCENARIO_EXPECT_VERDICT}};
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		if (strcmp(what, kinds[k].name))
			continue;
		st.op = kinds[k].op;
		if (st.op == FB_SCENARIO_EXPECT_VERDICT) {
			if ((e = store_pairs(p, w, n, 2, st.op, "expect verdict",
			                     "safe, lost or corrupted", &st)))
				return e;
			return append(p, &st);
		}
		if ((e = need(p, n, 2, what, "a KEY")) ||
		    (e = intern(p, &w[2], false, false, &st.key)) ||
		    (e = store_pairs(p, w, n, 3, st.op, what, "a number", &st)))
			return e;
		return append(p, &st);
	}
	size_t v = 0;
	while (v < sizeof verbs / sizeof verbs[0] && strcmp(verbs[v].name, what))
		v++;
	if (v == sizeof verbs / sizeof verbs[0] || verbs[v].op == FB_SCENARIO_PAUSE)
		return fail(p, w[1].col,
		            "unknown expectation '%s': a client's fence, acquire, is-held, renew, "
		            "release, read, write, debit, balance, last-fence, highest or verdict",
		            what);
	st.op = FB_SCENARIO_EXPECT_RESULT;
	st.of = verbs[v].op;
	if (!p->has_action)
		return fail(p, w[1].col, "expect %s: no action before it", what);
	const fb_scenario_step *prev = &p->sc->steps[p->last_action];
	if (prev->op != st.of)
		return fail(p, w[1].col, "expect %s: the previous action (line %u) is %s", what,
		            prev->line, verb_name(prev->op));
	st.of_step = (uint32_t)p->last_action;
	st.client = prev->client;
	st.key = prev->key;
	if (st.of == FB_SCENARIO_READ || st.of == FB_SCENARIO_WRITE || st.of == FB_SCENARIO_DEBIT) {
		const char *wants = st.of == FB_SCENARIO_READ ? "a number, ok or refused"
		                                              : "accepted, rejected or skipped";
		if ((e = store_pairs(p, w, n, 2, st.of, w[1].s, wants, &st)))
			return e;
		return append(p, &st);
	}
	bool yes_no = st.of == FB_SCENARIO_IS_HELD;
	const char *ok = yes_no ? "yes" : "ok", *no = yes_no ? "no" : "refused";
	if ((e = need(p, n, 2, what, yes_no ? "yes or no" : "ok or refused")) ||
	    (e = no_more(p, w, n, 3, w[2].s)))
		return e;
	if (!strcmp(w[2].s, ok))
		st.want[0] = FB_SCENARIO_OK;
	else if (!strcmp(w[2].s, no))
		st.want[0] = FB_SCENARIO_NOT_OK;
	else
		return fail(p, w[2].col, "'%s': expect %s %s or %s", w[2].s, what, ok, no);
	return append(p, &st);
}

/* One line, already checked for length; buf is its own NUL-terminated copy. */
static fb_err statement(parser *p, char *buf, size_t n)
{
	/* Comments first: after '#' any byte goes. */
	char *hash = memchr(buf, '#', n);
	if (hash)
		n = (size_t)(hash - buf);
	buf[n] = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)buf[i];
		if (c != ' ' && c != '\t' && (c < 0x21 || c > 0x7e))
			return fail(p, (uint32_t)i + 1,
			            "unexpected byte 0x%02x (statements are ASCII)", c);
	}
	word w[FB_SCENARIO_WORDS_MAX];
	int nw = 0;
	for (size_t i = 0; i < n;) {
		if (buf[i] == ' ' || buf[i] == '\t') {
			buf[i++] = 0;
			continue;
		}
		if (nw == FB_SCENARIO_WORDS_MAX)
			return fail(p, (uint32_t)i + 1, "more than %d words on a line",
			            FB_SCENARIO_WORDS_MAX);
		w[nw].s = buf + i;
		w[nw].col = (uint32_t)i + 1;
		nw++;
		while (i < n && buf[i] != ' ' && buf[i] != '\t')
			i++;
		p->eol = (uint32_t)i + 1;
	}
	if (nw == 0)
		return FB_OK;
	static const char *const settings[] = {"ttl", "first-fence", "balance", "fence"};
	for (int s = 0; s < 4; s++)
		if (!strcmp(w[0].s, settings[s]))
			return setting(p, w, nw, s);
	if (!strcmp(w[0].s, "at") || !strcmp(w[0].s, "advance")) {
		p->started = true;
		return clock_move(p, w, nw,
		                  !strcmp(w[0].s, "at") ? FB_SCENARIO_AT : FB_SCENARIO_ADVANCE);
	}
	if (!strcmp(w[0].s, "expect"))
		return expect(p, w, nw);
	if (is_upper(w[0].s[0]))
		return action(p, w, nw);
	return fail(p, w[0].col,
	            "unknown statement '%s': a setting (ttl, first-fence, balance, fence), at, "
	            "advance, expect, or a client action (A acquire KEY)",
	            w[0].s);
}

fb_err fb_scenario_parse(const char *text, size_t len, const char *name, fb_scenario **out,
                         char *err, size_t errlen)
{
	char empty[1];
	parser p = {.name = name ? name : "scenario", .err = err, .errlen = errlen};
	if (!err || !errlen) {
		p.err = empty;
		p.errlen = sizeof empty;
	}
	p.err[0] = 0;
	*out = NULL;
	fb_scenario *sc = calloc(1, sizeof *sc);
	if (!sc || !(sc->name = strdup(p.name))) {
		free(sc);
		snprintf(p.err, p.errlen, "%s: out of memory", p.name);
		return FB_ENOMEM;
	}
	sc->ttl_ns = 30 * UINT64_C(1000000);
	sc->first_fence = 33;
	sc->balance = 100;
	sc->source = FB_FENCE_GLOBAL;
	p.sc = sc;
	fb_err e = FB_OK;
	for (size_t pos = 0; pos < len && e == FB_OK;) {
		const char *start = text + pos;
		const char *nl = memchr(start, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - start) : len - pos;
		pos += n + (nl != NULL);
		if (p.line == UINT32_MAX) {
			e = fail(&p, 1, "too many lines");
			break;
		}
		p.line++;
		if (n > 0 && start[n - 1] == '\r')
			n--;
		if (n > FB_SCENARIO_LINE_MAX) {
			e = fail(&p, FB_SCENARIO_LINE_MAX + 1, "line longer than %d bytes",
			         FB_SCENARIO_LINE_MAX);
			break;
		}
		char buf[FB_SCENARIO_LINE_MAX + 1];
		memcpy(buf, start, n);
		buf[n] = 0;
		e = statement(&p, buf, n);
	}
	if (e != FB_OK) {
		fb_scenario_free(sc);
		return e;
	}
	*out = sc;
	return FB_OK;
}

void fb_scenario_free(fb_scenario *s)
{
	if (!s)
		return;
	free(s->name);
	free(s->steps);
	free(s);
}

void fb_scenario_format_ns(char *buf, size_t len, uint64_t ns)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = {{"h", UINT64_C(3600000000000)},
	             {"m", UINT64_C(60000000000)},
	             {"s", 1000000000},
	             {"ms", 1000000},
	             {"us", 1000}};
	if (ns == 0) {
		snprintf(buf, len, "0");
		return;
	}
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (ns % units[i].ns == 0) {
			snprintf(buf, len, "%llu%s", (unsigned long long)(ns / units[i].ns),
			         units[i].unit);
			return;
		}
	snprintf(buf, len, "%lluns", (unsigned long long)ns);
}

/* Append to buf at *at, never past len. */
void fb_scenario_append(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
	if (*at >= len)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf + *at, len - *at, fmt, ap);
	va_end(ap);
	if (n > 0)
		*at += (size_t)n;
}

const char *fb_scenario_want_word(fb_scenario_op of, fb_scenario_want w)
{
	switch (w) {
	case FB_SCENARIO_OK:
		return of == FB_SCENARIO_IS_HELD ? "yes" : "ok";
	case FB_SCENARIO_NOT_OK:
		return of == FB_SCENARIO_IS_HELD ? "no" : "refused";
	case FB_SCENARIO_ACCEPTED:
		return "accepted";
	case FB_SCENARIO_REJECTED:
		return "rejected";
	case FB_SCENARIO_SKIPPED:
		return "skipped";
	case FB_SCENARIO_SAFE:
		return "safe";
	case FB_SCENARIO_LOST:
		return "lost";
	case FB_SCENARIO_CORRUPTED:
		return "corrupted";
	default:
		return "?";
	}
}

/* " fenced X write-fenced Y ...", or " all X" when the three agree. */
static void add_wants(char *buf, size_t len, size_t *at, const fb_scenario_step *st,
                      fb_scenario_op of)
{
	bool same = true;
	for (int d = 1; d < FB_DISCIPLINES; d++)
		same = same && st->want[d] == st->want[0] && st->want_value[d] == st->want_value[0];
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		if (st->want[d] == FB_SCENARIO_ANY)
			continue;
		fb_scenario_append(buf, len, at, " %s ", same ? "all" : store_names[d]);
		if (st->want[d] == FB_SCENARIO_NUMBER)
			fb_scenario_append(buf, len, at, "%lld", (long long)st->want_value[d]);
		else
			fb_scenario_append(buf, len, at, "%s",
			                   fb_scenario_want_word(of, st->want[d]));
		if (same)
			break;
	}
}

void fb_scenario_step_format(const fb_scenario *s, const fb_scenario_step *st, char *buf,
                             size_t len)
{
	size_t at = 0;
	char d[32];
	if (!len)
		return;
	buf[0] = 0;
	const char *key = st->key < s->nkeys ? s->keys[st->key] : "?";
	const char *client = st->client < s->nclients ? s->clients[st->client] : "?";
	switch (st->op) {
	case FB_SCENARIO_AT:
	case FB_SCENARIO_ADVANCE:
	case FB_SCENARIO_PAUSE:
		fb_scenario_format_ns(d, sizeof d, st->ns);
		fb_scenario_append(buf, len, &at, "%s %s",
		                   st->op == FB_SCENARIO_AT        ? "at"
		                   : st->op == FB_SCENARIO_ADVANCE ? "advance"
		                                                   : "pause",
		                   d);
		break;
	case FB_SCENARIO_ACQUIRE:
	case FB_SCENARIO_IS_HELD:
	case FB_SCENARIO_RENEW:
	case FB_SCENARIO_RELEASE:
	case FB_SCENARIO_READ:
	case FB_SCENARIO_WRITE:
	case FB_SCENARIO_DEBIT:
		fb_scenario_append(buf, len, &at, "%s %s", verb_name(st->op), key);
		if (st->op == FB_SCENARIO_DEBIT)
			fb_scenario_append(buf, len, &at, " %lld", (long long)st->value);
		if (st->op == FB_SCENARIO_WRITE && st->source == FB_SCENARIO_VALUE)
			fb_scenario_append(buf, len, &at, " %lld", (long long)st->value);
		else if (st->op == FB_SCENARIO_WRITE && st->value)
			fb_scenario_append(buf, len, &at, " read%+lld", (long long)st->value);
		else if (st->op == FB_SCENARIO_WRITE)
			fb_scenario_append(buf, len, &at, " read");
		if (st->has_token)
			fb_scenario_append(buf, len, &at, " fence %llu",
			                   (unsigned long long)st->token);
		break;
	case FB_SCENARIO_EXPECT_FENCE:
		fb_scenario_append(buf, len, &at, "expect %s fence ", client);
		if (st->has_key)
			fb_scenario_append(buf, len, &at, "%s ", key);
		fb_scenario_append(buf, len, &at, "%lld", (long long)st->value);
		break;
	case FB_SCENARIO_EXPECT_RESULT:
		fb_scenario_append(buf, len, &at, "expect %s", verb_name(st->of));
		if (st->of == FB_SCENARIO_READ || st->of == FB_SCENARIO_WRITE ||
		    st->of == FB_SCENARIO_DEBIT)
			add_wants(buf, len, &at, st, st->of);
		else
			fb_scenario_append(buf, len, &at, " %s",
			                   fb_scenario_want_word(st->of, st->want[0]));
		break;
	case FB_SCENARIO_EXPECT_BALANCE:
	case FB_SCENARIO_EXPECT_LAST_FENCE:
	case FB_SCENARIO_EXPECT_HIGHEST:
		fb_scenario_append(buf, len, &at, "expect %s %s",
		                   st->op == FB_SCENARIO_EXPECT_BALANCE      ? "balance"
		                   : st->op == FB_SCENARIO_EXPECT_LAST_FENCE ? "last-fence"
		                                                             : "highest",
		                   key);
		add_wants(buf, len, &at, st, st->op);
		break;
	case FB_SCENARIO_EXPECT_VERDICT:
		fb_scenario_append(buf, len, &at, "expect verdict");
		add_wants(buf, len, &at, st, st->op);
		break;
	}
}
