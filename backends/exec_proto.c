#include "exec_proto.h"

#include <stdio.h>
#include <string.h>

const char *const fb_exec_op_names[FB_XOPS] = {"hello", "reset",   "read",    "write",   "debit",
                                               "final", "meta",    "history", "acquire", "release",
                                               "renew", "is_held", "peek"};

/* ---- the parser ------------------------------------------------------- */

/* Nesting the parser follows inside a value it skips: deeper is refused,
 * so the recursion stays bounded whatever the input. */
#define DEPTH_MAX 16

typedef struct jp {
	const char *p, *end, *start;
	char *out; /* decoded names and strings */
	size_t cap, used;
	char *err;
	size_t errlen;
} jp;

static bool bad(jp *j, const char *what)
{
	return fb_say(j->err, j->errlen, "%s at byte %zu", what, (size_t)(j->p - j->start));
}

static void ws(jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static bool put(jp *j, char c)
{
	if (j->used >= j->cap)
		return bad(j, "no room to decode"); /* a caller's cap below len + 1 */
	j->out[j->used++] = c;
	return true;
}

/* A code point as UTF-8. */
static bool put_utf8(jp *j, uint32_t c)
{
	if (c < 0x80)
		return put(j, (char)c);
	if (c < 0x800)
		return put(j, (char)(0xc0 | c >> 6)) && put(j, (char)(0x80 | (c & 0x3f)));
	if (c < 0x10000)
		return put(j, (char)(0xe0 | c >> 12)) && put(j, (char)(0x80 | (c >> 6 & 0x3f))) &&
		       put(j, (char)(0x80 | (c & 0x3f)));
	return put(j, (char)(0xf0 | c >> 18)) && put(j, (char)(0x80 | (c >> 12 & 0x3f))) &&
	       put(j, (char)(0x80 | (c >> 6 & 0x3f))) && put(j, (char)(0x80 | (c & 0x3f)));
}

/* The length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned char c = p[0];
	size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
	if (c < 0xc2 || c > 0xf4 || (size_t)(end - p) < n)
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f) ||
	    (c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f))
		return 0;
	return n;
}

static int hex4(const char *p)
{
	int v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		int d = c >= '0' && c <= '9'   ? c - '0'
		        : c >= 'a' && c <= 'f' ? c - 'a' + 10
		        : c >= 'A' && c <= 'F' ? c - 'A' + 10
		                               : -1;
		if (d < 0)
			return -1;
		v = v << 4 | d;
	}
	return v;
}

/* A \u escape at j->p (past the backslash and the u), as a code point:
 * a surrogate pair is one; a lone surrogate or U+0000 is refused (a NUL
 * would cut the C string it is decoded into). */
static bool unicode_escape(jp *j, uint32_t *cp)
{
	int hi = j->end - j->p >= 4 ? hex4(j->p) : -1;
	if (hi < 0)
		return bad(j, "a \\u escape without four hex digits");
	j->p += 4;
	if (hi >= 0xdc00 && hi <= 0xdfff)
		return bad(j, "a lone low surrogate");
	if (hi >= 0xd800 && hi <= 0xdbff) {
		int lo = j->end - j->p >= 6 && j->p[0] == '\\' && j->p[1] == 'u' ? hex4(j->p + 2)
		                                                                 : -1;
		if (lo < 0xdc00 || lo > 0xdfff)
			return bad(j, "a high surrogate without its low one");
		j->p += 6;
		*cp = 0x10000 + ((uint32_t)(hi - 0xd800) << 10) + (uint32_t)(lo - 0xdc00);
		return true;
	}
	if (hi == 0)
		return bad(j, "a NUL character (\\u0000)");
	*cp = (uint32_t)hi;
	return true;
}

/* A string at j->p (its opening quote), decoded into j->out when keep (then
 * *s and *n say where), else only checked. */
static bool string(jp *j, bool keep, const char **s, size_t *n)
{
	j->p++;
	size_t at = j->used;
	for (;;) {
		if (j->p >= j->end)
			return bad(j, "a string without its closing quote");
		unsigned char c = (unsigned char)*j->p;
		if (c == '"')
			break;
		if (c < 0x20)
			return bad(j, "a control character in a string");
		if (c >= 0x80) {
			size_t len = utf8_len((const unsigned char *)j->p,
			                      (const unsigned char *)j->end);
			if (!len)
				return bad(j, "a byte that is not UTF-8");
			for (size_t i = 0; keep && i < len; i++)
				if (!put(j, j->p[i]))
					return false;
			j->p += len;
			continue;
		}
		j->p++;
		if (c != '\\') {
			if (keep && !put(j, (char)c))
				return false;
			continue;
		}
		if (j->p >= j->end)
			return bad(j, "a string without its closing quote");
		char e = *j->p++;
		static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
		const char *k = strchr(from, e);
		uint32_t cp = 0;
		if (e && k) {
			if (keep && !put(j, to[k - from]))
				return false;
		} else if (e == 'u') {
			if (!unicode_escape(j, &cp) || (keep && !put_utf8(j, cp)))
				return false;
		} else {
			j->p--;
			return bad(j, "an unknown escape in a string");
		}
	}
	j->p++;
	if (keep) {
		if (!put(j, 0))
			return false;
		*s = j->out + at;
		*n = j->used - at - 1;
	}
	return true;
}

/* A number: an integer (exact, or FB_J_BIG out of int64 range) unless it
 * has a fraction or an exponent. */
static bool number(jp *j, fb_jfield *f)
{
	bool neg = *j->p == '-';
	if (neg)
		j->p++;
	if (j->p >= j->end || *j->p < '0' || *j->p > '9')
		return bad(j, "a malformed number");
	uint64_t mag = 0;
	bool big = false;
	if (*j->p == '0') {
		j->p++;
		if (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			return bad(j, "a number with a leading zero");
	} else {
		for (; j->p < j->end && *j->p >= '0' && *j->p <= '9'; j->p++) {
			unsigned d = (unsigned)(*j->p - '0');
			if (mag > (UINT64_MAX - d) / 10)
				big = true;
			else
				mag = mag * 10 + d;
		}
	}
	bool real = false;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return bad(j, "a fraction without digits");
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
		real = true;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return bad(j, "an exponent without digits");
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
		real = true;
	}
	if (!f)
		return true;
	if (real) {
		f->type = FB_J_NUMBER;
	} else if (big || mag > (uint64_t)INT64_MAX + neg) {
		f->type = FB_J_BIG;
	} else {
		f->type = FB_J_INT;
		/* -2^63 has no positive twin: negate in unsigned arithmetic */
		f->i = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	}
	return true;
}

static bool literal(jp *j, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0)
		return bad(j, "not JSON");
	j->p += n;
	return true;
}

static bool value(jp *j, fb_jfield *f, int depth);

/* An array at j->p; f (a top-level member, else NULL) counts its
 * elements and keeps the strings among them. */
static bool array(jp *j, fb_jfield *f, int depth)
{
	j->p++;
	if (f) {
		f->type = FB_J_ARRAY;
		f->s = j->out + j->used;
	}
	ws(j);
	if (j->p < j->end && *j->p == ']') {
		j->p++;
		return true;
	}
	for (;;) {
		ws(j);
		if (f && j->p < j->end && *j->p == '"') {
			const char *s;
			size_t n;
			if (!string(j, true, &s, &n))
				return false;
			f->strings++;
		} else if (!value(j, NULL, depth + 1)) {
			return false;
		}
		if (f)
			f->items++;
		ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == ']') {
			j->p++;
			return true;
		}
		return bad(j, "an array without ',' or ']'");
	}
}

/* The members of an object at j->p: kept in r when r (the top level),
 * else only checked. */
static bool object(jp *j, fb_reply *r, int depth)
{
	j->p++;
	ws(j);
	if (j->p < j->end && *j->p == '}') {
		j->p++;
		return true;
	}
	for (;;) {
		ws(j);
		if (j->p >= j->end || *j->p != '"')
			return bad(j, "a member without a quoted name");
		fb_jfield *f = NULL;
		const char *name = NULL;
		size_t n = 0;
		if (!string(j, r != NULL, &name, &n))
			return false;
		if (r) {
			if (fb_reply_get(r, name))
				return fb_say(j->err, j->errlen,
				              "the field \"%.40s\" is given twice", name);
			if (r->n == FB_REPLY_FIELDS)
				return fb_say(j->err, j->errlen, "more than %d fields",
				              FB_REPLY_FIELDS);
			f = &r->f[r->n];
			memset(f, 0, sizeof *f);
			f->name = name;
		}
		ws(j);
		if (j->p >= j->end || *j->p != ':')
			return bad(j, "a member without ':'");
		j->p++;
		ws(j);
		if (!value(j, f, depth + 1))
			return false;
		if (r)
			r->n++;
		ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == '}') {
			j->p++;
			return true;
		}
		return bad(j, "an object without ',' or '}'");
	}
}

/* Any value; f (a top-level member) records it, else it is only checked. */
static bool value(jp *j, fb_jfield *f, int depth)
{
	if (depth > DEPTH_MAX)
		return bad(j, "values nested too deep");
	if (j->p >= j->end)
		return bad(j, "a value missing");
	switch (*j->p) {
	case '{':
		if (f)
			f->type = FB_J_OBJECT;
		return object(j, NULL, depth);
	case '[':
		return array(j, f, depth);
	case '"':
		if (f)
			f->type = FB_J_STRING;
		return string(j, f != NULL, f ? &f->s : NULL, f ? &f->len : NULL);
	case 't':
	case 'f':
		if (f) {
			f->type = FB_J_BOOL;
			f->b = *j->p == 't';
		}
		return literal(j, *j->p == 't' ? "true" : "false");
	case 'n':
		if (f)
			f->type = FB_J_NULL;
		return literal(j, "null");
	default:
		if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))
			return number(j, f);
		return bad(j, "not JSON");
	}
}

bool fb_reply_parse(fb_reply *r, const char *line, size_t len, char *scratch, size_t cap, char *err,
                    size_t errlen)
{
	r->n = 0;
	jp j = {line, line + len, line, scratch, cap, 0, err, errlen};
	ws(&j);
	if (j.p >= j.end)
		return fb_say(err, errlen, "an empty line");
	if (*j.p != '{')
		return fb_say(err, errlen, "it does not begin with '{'");
	if (!object(&j, r, 0))
		return false;
	ws(&j);
	if (j.p != j.end)
		return bad(&j, "bytes after the object");
	return true;
}

const fb_jfield *fb_reply_get(const fb_reply *r, const char *name)
{
	for (unsigned i = 0; i < r->n; i++)
		if (strcmp(r->f[i].name, name) == 0)
			return &r->f[i];
	return NULL;
}

/* ---- what each reply must hold ---------------------------------------- */

static const char *const type_names[] = {
        [FB_J_NULL] = "null",
        [FB_J_BOOL] = "a boolean",
        [FB_J_INT] = "an integer",
        [FB_J_BIG] = "an integer beyond 64 bits",
        [FB_J_NUMBER] = "a number with a fraction",
        [FB_J_STRING] = "a string",
        [FB_J_ARRAY] = "an array",
        [FB_J_OBJECT] = "an object",
};

/* The member name of type t, or false with why: missing, or another type. */
static bool typed(const fb_reply *r, const char *name, fb_jtype t, const fb_jfield **f, char *err,
                  size_t errlen)
{
	*f = fb_reply_get(r, name);
	if (!*f)
		return fb_say(err, errlen, "no \"%s\"", name);
	if ((*f)->type != t)
		return fb_say(err, errlen, "\"%s\" is %s, not %s", name, type_names[(*f)->type],
		              type_names[t]);
	return true;
}

/* An integer member in [lo, hi]. */
static bool integer(const fb_reply *r, const char *name, int64_t lo, int64_t hi, int64_t *out,
                    char *err, size_t errlen)
{
	const fb_jfield *f;
	if (!typed(r, name, FB_J_INT, &f, err, errlen))
		return false;
	if (f->i < lo || f->i > hi)
		return fb_say(err, errlen, "\"%s\" is %lld, outside %lld..%lld", name,
		              (long long)f->i, (long long)lo, (long long)hi);
	*out = f->i;
	return true;
}

/* An optional fence member: absent leaves *out as it is. */
static bool fence_opt(const fb_reply *r, const char *name, uint64_t *out, char *err, size_t errlen)
{
	int64_t v;
	if (!fb_reply_get(r, name))
		return true;
	if (!integer(r, name, 0, (int64_t)FB_FENCE_MAX, &v, err, errlen))
		return false;
	*out = (uint64_t)v;
	return true;
}

static bool boolean(const fb_reply *r, const char *name, bool *out, char *err, size_t errlen)
{
	const fb_jfield *f;
	if (!typed(r, name, FB_J_BOOL, &f, err, errlen))
		return false;
	*out = f->b;
	return true;
}

const char *fb_exec_error_of(const fb_reply *r)
{
	const fb_jfield *f = fb_reply_get(r, "error");
	if (!f)
		return NULL;
	return f->type == FB_J_STRING ? f->s : "(an error that is not a string)";
}

void fb_exec_ops_list(uint32_t ops, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = 0;
	for (int i = FB_XOP_HELLO + 1; i < FB_XOPS; i++) /* every adapter says hello */
		if (ops & (1u << i) && o < len)
			o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? ", " : "",
			                      fb_exec_op_names[i]);
	if (!o)
		snprintf(buf, len, "none");
}

/* A string member, if present, into buf: at most max bytes, each one
 * allowed by ok(); what is wrong, else. */
static bool text(const fb_reply *r, const char *name, size_t max, bool (*ok)(char), char *buf,
                 char *err, size_t errlen)
{
	const fb_jfield *f;
	buf[0] = 0;
	if (!fb_reply_get(r, name))
		return true;
	if (!typed(r, name, FB_J_STRING, &f, err, errlen))
		return false;
	if (!f->len || f->len > max)
		return fb_say(err, errlen, "\"%s\" must be 1 to %zu characters long", name, max);
	for (size_t i = 0; i < f->len; i++)
		if (!ok(f->s[i]))
			return fb_say(err, errlen, "\"%s\" holds a character it may not (0x%02x)",
			              name, (unsigned char)f->s[i]);
	memcpy(buf, f->s, f->len + 1);
	return true;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

static bool printable(char c)
{
	return c >= 0x20 && c < 0x7f;
}

/* What both sides' hellos hold: protocol, ops, name, version; side, the
 * "side" the reply must give ("store" may go unsaid). */
static bool hello_of(const fb_reply *r, fb_exec_hello *h, const char *side, int64_t protocol,
                     char *err, size_t errlen)
{
	memset(h, 0, sizeof *h);
	const fb_jfield *said = fb_reply_get(r, "side");
	if (said && said->type != FB_J_STRING)
		return fb_say(err, errlen, "\"side\" is %s, not a string", type_names[said->type]);
	const char *is = said ? said->s : "store";
	bool lease = strcmp(side, "lease") == 0;
	if (strcmp(is, side) != 0)
		return fb_say(err, errlen,
		              "its hello says \"side\": \"%.20s\": it is not a %s adapter (give a "
		              "store adapter to --store, a lease adapter to --lease)",
		              is, side);
	if (!integer(r, "protocol", 0, INT64_MAX, &h->protocol, err, errlen))
		return false;
	if (h->protocol != protocol)
		return fb_say(err, errlen,
		              "it speaks %sprotocol %lld; this fencebench speaks %sprotocol %lld",
		              lease ? "lease " : "", (long long)h->protocol, lease ? "lease " : "",
		              (long long)protocol);
	const fb_jfield *ops;
	if (!typed(r, "ops", FB_J_ARRAY, &ops, err, errlen))
		return false;
	if (ops->strings != ops->items)
		return fb_say(err, errlen, "\"ops\" must be an array of strings");
	const char *s = ops->s;
	for (uint32_t i = 0; i < ops->strings; i++, s += strlen(s) + 1)
		for (int k = 0; k < FB_XOPS; k++)
			if (strcmp(s, fb_exec_op_names[k]) == 0)
				h->ops |= 1u << k;
	h->ops |= 1u << FB_XOP_HELLO; /* it just answered one */
	return text(r, "name", FB_EXEC_NAME_MAX, name_char, h->name, err, errlen) &&
	       text(r, "version", sizeof h->version - 1, printable, h->version, err, errlen);
}

bool fb_exec_hello_of(const fb_reply *r, fb_exec_hello *h, char *err, size_t errlen)
{
	bool fenced = true;
	if (!hello_of(r, h, "store", FB_EXEC_PROTOCOL, err, errlen) ||
	    (fb_reply_get(r, "fenced_reads") && !boolean(r, "fenced_reads", &fenced, err, errlen)))
		return false;
	h->unfenced_reads = !fenced;
	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (d != FB_FENCED && strcmp(h->name, fb_discipline_name((fb_discipline)d)) == 0)
			return fb_say(err, errlen,
			              "\"name\" is \"%s\", a control column's: choose another",
			              h->name);
	return true;
}

bool fb_exec_lease_hello_of(const fb_reply *r, fb_exec_hello *h, char *err, size_t errlen)
{
	return hello_of(r, h, "lease", FB_EXEC_LEASE_PROTOCOL, err, errlen);
}

bool fb_exec_acquire_of(const fb_reply *r, fb_exec_acquired *a, char *err, size_t errlen)
{
	memset(a, 0, sizeof *a);
	int64_t fence = 0, owner = 0, ttl = 0;
	if (!boolean(r, "ok", &a->ok, err, errlen))
		return false;
	if (!a->ok) {
		if (!fence_opt(r, "fence", &a->fence, err, errlen) ||
		    (fb_reply_get(r, "owner") &&
		     !integer(r, "owner", 0, UINT16_MAX, &owner, err, errlen)))
			return false;
		a->owner = (uint16_t)owner;
		return true;
	}
	if (!integer(r, "fence", 1, (int64_t)FB_FENCE_MAX, &fence, err, errlen)) {
		char why[160];
		snprintf(why, sizeof why, "%s", err);
		return fb_say(err, errlen, "%s (a granted acquire needs \"fence\")", why);
	}
	a->fence = (uint64_t)fence;
	a->said_replaced = fb_reply_get(r, "replaced") != NULL;
	if (!fence_opt(r, "replaced", &a->replaced, err, errlen) ||
	    (fb_reply_get(r, "ttl_ms") && !integer(r, "ttl_ms", 1, INT64_MAX, &ttl, err, errlen)))
		return false;
	a->ttl_ms = (uint64_t)ttl;
	return true;
}

bool fb_exec_lease_ok_of(const fb_reply *r, bool *ok, char *err, size_t errlen)
{
	return boolean(r, "ok", ok, err, errlen);
}

bool fb_exec_peek_of(const fb_reply *r, bool *held, uint16_t *owner, uint64_t *fence,
                     uint64_t *left_ms, char *err, size_t errlen)
{
	int64_t o = 0, left = 0;
	*owner = 0;
	*fence = *left_ms = 0;
	if (!boolean(r, "held", held, err, errlen))
		return false;
	if (!*held)
		return true;
	if (!integer(r, "owner", 0, UINT16_MAX, &o, err, errlen) ||
	    !integer(r, "fence", 1, (int64_t)FB_FENCE_MAX, &left, err, errlen))
		return false;
	*owner = (uint16_t)o;
	*fence = (uint64_t)left;
	if (!integer(r, "ttl_ms", 0, INT64_MAX, &left, err, errlen))
		return false;
	*left_ms = (uint64_t)left;
	return true;
}

bool fb_exec_ok_of(const fb_reply *r, char *err, size_t errlen)
{
	bool ok;
	if (!boolean(r, "ok", &ok, err, errlen))
		return false;
	return ok || fb_say(err, errlen, "\"ok\" is false");
}

bool fb_exec_result_of(const fb_reply *r, fb_exec_op op, uint64_t token, fb_store_result *res,
                       int64_t *version, char *err, size_t errlen)
{
	memset(res, 0, sizeof *res);
	res->token = token;
	*version = 0;
	bool ok;
	uint64_t seen = 0, last = 0;
	if (!boolean(r, "ok", &ok, err, errlen) || !fence_opt(r, "seen", &seen, err, errlen) ||
	    !fence_opt(r, "last_fence", &last, err, errlen))
		return false;
	res->ok = ok;
	if (ok && op == FB_XOP_READ) {
		if (!integer(r, "balance", INT64_MIN, INT64_MAX, &res->balance, err, errlen))
			return fb_say(err, errlen, "a served read needs \"balance\", an integer");
		res->before = res->balance;
	} else if (ok) {
		if (!integer(r, "before", INT64_MIN, INT64_MAX, &res->before, err, errlen) ||
		    !integer(r, "balance", INT64_MIN, INT64_MAX, &res->balance, err, errlen) ||
		    !integer(r, "version", 1, INT64_MAX, version, err, errlen)) {
			char why[160];
			snprintf(why, sizeof why, "%s", err);
			return fb_say(
			        err, errlen,
			        "%s (an accepted %s needs \"before\", \"balance\", \"version\" "
			        "and \"last_fence\")",
			        why, fb_exec_op_names[op]);
		}
		if (!fb_reply_get(r, "last_fence"))
			return fb_say(err, errlen,
			              "no \"last_fence\" (an accepted %s needs \"before\", "
			              "\"balance\", \"version\" and \"last_fence\")",
			              fb_exec_op_names[op]);
		res->version = (uint64_t)*version;
		res->stale = token <= last; /* the store's own record, not the checker's */
	} else if (op != FB_XOP_READ) {
		res->stale = true; /* as core/store.c: a refused write is the stale one */
	}
	const fb_jfield *why = fb_reply_get(r, "reason");
	if (why && (ok || why->type != FB_J_STRING))
		return fb_say(err, errlen, "\"reason\" belongs to a refusal, as a string");
	if (why) { /* refused for the store's own reason, not the token */
		res->other = true;
		res->stale = false;
	}
	res->highest = seen > last ? seen : last;
	res->highest_written = last >= seen;
	return true;
}

bool fb_exec_final_of(const fb_reply *r, int64_t *balance, uint64_t *last_fence, char *err,
                      size_t errlen)
{
	int64_t last;
	if (!integer(r, "balance", INT64_MIN, INT64_MAX, balance, err, errlen) ||
	    !integer(r, "last_fence", 0, (int64_t)FB_FENCE_MAX, &last, err, errlen))
		return false;
	*last_fence = (uint64_t)last;
	return true;
}

bool fb_exec_meta_of(const fb_reply *r, fb_store_meta *m, char *err, size_t errlen)
{
	int64_t keys;
	const fb_jfield *cycle;
	memset(m, 0, sizeof *m);
	if (!integer(r, "keys", 1, UINT32_MAX, &keys, err, errlen) ||
	    !integer(r, "initial_balance", INT64_MIN, INT64_MAX, &m->initial_balance, err,
	             errlen) ||
	    !integer(r, "amount", 1, INT64_MAX, &m->amount, err, errlen) ||
	    !typed(r, "cycle", FB_J_STRING, &cycle, err, errlen))
		return false;
	bool rmw = strcmp(cycle->s, "rmw") == 0;
	if (!rmw && strcmp(cycle->s, "debit") != 0)
		return fb_say(err, errlen, "\"cycle\" must be \"rmw\" or \"debit\"");
	m->keys = (uint32_t)keys;
	m->op = rmw ? 0 : 1; /* fb_op: FB_OP_RMW, FB_OP_DEBIT */
	m->modes = 1u << FB_FENCED;
	return true;
}

bool fb_exec_row_of(const fb_reply *r, fb_history_row *h, bool *end, char *err, size_t errlen)
{
	memset(h, 0, sizeof *h);
	*end = false;
	if (fb_reply_get(r, "end"))
		return boolean(r, "end", end, err, errlen) &&
		       (*end || fb_say(err, errlen, "\"end\" is false"));
	int64_t key, version, fence, last, worker = 0;
	if (!integer(r, "key", 0, UINT32_MAX, &key, err, errlen) ||
	    !integer(r, "version", 1, INT64_MAX, &version, err, errlen) ||
	    !integer(r, "fence", 0, (int64_t)FB_FENCE_MAX, &fence, err, errlen) ||
	    !integer(r, "last_fence", 0, (int64_t)FB_FENCE_MAX, &last, err, errlen) ||
	    !integer(r, "before", INT64_MIN, INT64_MAX, &h->before, err, errlen) ||
	    !integer(r, "after", INT64_MIN, INT64_MAX, &h->after, err, errlen) ||
	    (fb_reply_get(r, "worker") &&
	     !integer(r, "worker", 0, UINT32_MAX, &worker, err, errlen)))
		return false;
	h->d = FB_FENCED;
	h->key = (uint32_t)key;
	h->version = (uint64_t)version;
	h->fence = (uint64_t)fence;
	h->store_stale = fence <= last;
	h->worker = (uint32_t)worker;
	return true;
}

void fb_exec_quote(const char *line, size_t len, size_t max, char *buf, size_t buflen)
{
	size_t o = 0;
	if (!buflen)
		return;
	for (size_t i = 0; i < len && i < max; i++) {
		unsigned char c = (unsigned char)line[i];
		char one[8];
		int n = c >= 0x20 && c < 0x7f && c != '\\'
		                ? snprintf(one, sizeof one, "%c", c)
		                : snprintf(one, sizeof one, "\\x%02x", c);
		if (o + (size_t)n + 4 >= buflen)
			break;
		memcpy(buf + o, one, (size_t)n);
		o += (size_t)n;
	}
	if (len > max) { /* cut: said, with the whole length when there is room */
		int n = snprintf(buf + o, buflen - o, "... (%zu bytes in all)", len);
		if (n < 0 || (size_t)n >= buflen - o)
			n = snprintf(buf + o, buflen - o, "...");
		if (n > 0 && (size_t)n < buflen - o)
			o += (size_t)n;
	}
	buf[o] = 0;
}
