#include "pg_sql.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

const char *const fb_sql_kind_names[FB_SQL_KINDS] = {"read", "write", "debit", "final", "reset"};

/* The order postgres.c binds each kind's values in. */
static const char *const read_p[] = {"key", "token"};
static const char *const write_p[] = {"balance", "token", "key", "client", "worker"};
static const char *const debit_p[] = {"amount", "token", "key", "client", "worker"};
static const char *const final_p[] = {"key"};
static const char *const reset_p[] = {"keys", "initial_balance"};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

const char *const *fb_sql_params(fb_sql_kind k, int *n)
{
	static const struct {
		const char *const *p;
		int n;
	} t[FB_SQL_KINDS] = {
	        [FB_SQL_READ] = {read_p, COUNT(read_p)},
	        [FB_SQL_WRITE] = {write_p, COUNT(write_p)},
	        [FB_SQL_DEBIT] = {debit_p, COUNT(debit_p)},
	        [FB_SQL_FINAL] = {final_p, COUNT(final_p)},
	        [FB_SQL_RESET] = {reset_p, COUNT(reset_p)},
	};
	*n = t[k].n;
	return t[k].p;
}

/* What each kind must use: the key it works on, the value it writes. */
static const char *const required[FB_SQL_KINDS][2] = {
        [FB_SQL_READ] = {"key", NULL},      [FB_SQL_WRITE] = {"key", "balance"},
        [FB_SQL_DEBIT] = {"key", "amount"}, [FB_SQL_FINAL] = {"key", NULL},
        [FB_SQL_RESET] = {NULL, NULL},
};

void fb_user_sql_free(fb_user_sql *u)
{
	for (int k = 0; k < FB_SQL_RESET; k++)
		free(u->sql[k]);
	for (int i = 0; i < u->nreset; i++)
		free(u->reset[i]);
	memset(u, 0, sizeof *u);
}

/* A growing string. */
typedef struct growing {
	char *s;
	size_t n, cap;
} growing;

static bool put(growing *o, const char *p, size_t n)
{
	if (o->n + n + 1 > o->cap) {
		size_t cap = (o->n + n + 1) * 2;
		char *s = realloc(o->s, cap);
		if (!s)
			return false;
		o->s = s;
		o->cap = cap;
	}
	memcpy(o->s + o->n, p, n);
	o->n += n;
	o->s[o->n] = 0;
	return true;
}

/* The end of a quoted or commented span starting at p (a quote, "--",
 * "/ *" or a dollar-quote's tag; prev the character before it), or NULL if
 * p starts none. Its text is copied as it is: a $name inside a string is
 * not a parameter. */
static const char *span_end(const char *p, char prev)
{
	if (*p == '\'' || *p == '"') {
		bool esc = *p == '\'' && (prev == 'E' || prev == 'e');
		char q = *p;
		for (p++; *p; p++) {
			if (esc && *p == '\\' && p[1]) {
				p++;
				continue;
			}
			if (*p == q) {
				if (p[1] != q)
					return p + 1;
				p++; /* '' or "" inside */
			}
		}
		return p;
	}
	if (p[0] == '-' && p[1] == '-')
		return p + strcspn(p, "\n");
	if (p[0] == '/' && p[1] == '*') {
		int depth = 0; /* PostgreSQL's block comments nest */
		for (; *p; p++) {
			if (p[0] == '/' && p[1] == '*') {
				depth++;
				p++;
			} else if (p[0] == '*' && p[1] == '/') {
				p++;
				if (--depth == 0)
					return p + 1;
			}
		}
		return p;
	}
	if (*p == '$') { /* $$...$$ or $tag$...$tag$ */
		size_t t = 1;
		while (isalnum((unsigned char)p[t]) || p[t] == '_')
			t++;
		if (p[t] != '$' || (t > 1 && isdigit((unsigned char)p[1])))
			return NULL;
		const char *close = strstr(p + t + 1, "$");
		while (close && strncmp(close, p, t + 1) != 0)
			close = strstr(close + 1, "$");
		return close ? close + t + 1 : p + strlen(p);
	}
	return NULL;
}

/* Statement text of kind k with its $names as positional parameters, into
 * *sql (malloc'd); false with why in err. */
static bool rewrite(const char *text, fb_sql_kind k, int line, char **sql, char *err, size_t errlen)
{
	int np;
	const char *const *names = fb_sql_params(k, &np);
	bool used[8] = {false};
	growing o = {0};
	const char *p = text;
	while (*p) {
		const char *end = span_end(p, p == text ? 0 : p[-1]);
		if (end) {
			if (!put(&o, p, (size_t)(end - p)))
				goto oom;
			p = end;
			continue;
		}
		if (*p != '$' || !(isalnum((unsigned char)p[1]) || p[1] == '_')) {
			if (!put(&o, p++, 1))
				goto oom;
			continue;
		}
		if (isdigit((unsigned char)p[1])) {
			free(o.s);
			return fb_say(
			        err, errlen,
			        "line %d: @%s uses a positional parameter ($%c): name it ($key, "
			        "$token...)",
			        line, fb_sql_kind_names[k], p[1]);
		}
		size_t n = 1;
		while (isalnum((unsigned char)p[n]) || p[n] == '_')
			n++;
		int i = 0;
		while (i < np &&
		       (strlen(names[i]) != n - 1 || strncmp(names[i], p + 1, n - 1) != 0))
			i++;
		if (i == np) {
			char takes[96] = "";
			for (int j = 0; j < np; j++)
				snprintf(takes + strlen(takes), sizeof takes - strlen(takes),
				         "%s$%s", j ? ", " : "", names[j]);
			free(o.s);
			return fb_say(err, errlen,
			              "line %d: @%s has no parameter $%.*s (it takes %s)", line,
			              fb_sql_kind_names[k], (int)(n - 1), p + 1, takes);
		}
		char pos[16];
		snprintf(pos, sizeof pos, "$%d", i + 1);
		if (!put(&o, pos, strlen(pos)))
			goto oom;
		used[i] = true;
		p += n;
	}
	for (int r = 0; r < 2; r++) {
		const char *need = required[k][r];
		for (int i = 0; need && i < np; i++)
			if (!strcmp(names[i], need) && !used[i]) {
				free(o.s);
				return fb_say(err, errlen, "line %d: @%s never uses $%s", line,
				              fb_sql_kind_names[k], need);
			}
	}
	*sql = o.s;
	return true;
oom:
	free(o.s);
	return fb_say(err, errlen, "out of memory");
}

static bool name_ok(const char *s, size_t n)
{
	if (!n || n > 13)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
			return false;
	return strncmp(s, "write-fenced", n) != 0 && strncmp(s, "unfenced", n) != 0;
}

/* The statement gathered since the last directive, trimmed of blanks and a
 * final ';', filed under kind k. */
static bool file_statement(fb_user_sql *u, int k, int line, growing *text, char *err, size_t errlen)
{
	char *s = text->s ? text->s : "";
	size_t n = text->n;
	while (n && (isspace((unsigned char)s[n - 1]) || s[n - 1] == ';'))
		n--;
	size_t lead = strspn(s, " \t\r\n");
	if (lead >= n)
		return fb_say(err, errlen, "line %d: @%s has no statement", line,
		              fb_sql_kind_names[k]);
	s[n] = 0;
	char **slot = k == FB_SQL_RESET ? &u->reset[u->nreset] : &u->sql[k];
	if (k == FB_SQL_RESET && u->nreset == FB_SQL_RESETS)
		return fb_say(err, errlen, "line %d: more than %d @reset statements", line,
		              FB_SQL_RESETS);
	if (!rewrite(s + lead, (fb_sql_kind)k, line, slot, err, errlen))
		return false;
	if (k == FB_SQL_RESET)
		u->nreset++;
	return true;
}

bool fb_user_sql_parse(const char *text, fb_user_sql *u, char *err, size_t errlen)
{
	memset(u, 0, sizeof *u);
	growing stmt = {0};
	int kind = -1, at = 0, line = 0;
	bool ok = true;
	for (const char *p = text; ok && *p;) {
		size_t len = strcspn(p, "\n");
		line++;
		const char *q = p + strspn(p, " \t");
		bool directive = q[0] == '-' && q[1] == '-' && q[2 + strspn(q + 2, " \t")] == '@';
		if (directive) {
			if (kind >= 0)
				ok = file_statement(u, kind, at, &stmt, err, errlen);
			stmt.n = 0;
			const char *w = q + 2 + strspn(q + 2, " \t") + 1;
			size_t wn = strcspn(w, " \t\r\n");
			const char *arg = w + wn + strspn(w + wn, " \t");
			size_t an = strcspn(arg, " \t\r\n");
			kind = -1;
			at = line;
			for (int k = 0; k < FB_SQL_KINDS; k++)
				if (strlen(fb_sql_kind_names[k]) == wn &&
				    !strncmp(w, fb_sql_kind_names[k], wn))
					kind = k;
			if (!ok) {
			} else if (wn == 4 && !strncmp(w, "name", 4)) {
				const char *rest = arg + an + strspn(arg + an, " \t\r");
				if (!name_ok(arg, an) || (*rest && *rest != '\n'))
					ok = fb_say(
					        err, errlen,
					        "line %d: @name needs 1 to 13 of A-Z a-z 0-9 . _ - "
					        "(and not a control column's name)",
					        line);
				else
					snprintf(u->name, sizeof u->name, "%.*s", (int)an, arg);
			} else if (kind < 0) {
				ok = fb_say(
				        err, errlen,
				        "line %d: unknown directive @%.*s (@name, @reset, @read, "
				        "@write, @debit, @final)",
				        line, (int)wn, w);
			} else if (kind != FB_SQL_RESET && u->sql[kind]) {
				ok = fb_say(err, errlen, "line %d: a second @%s", line,
				            fb_sql_kind_names[kind]);
			}
		} else if (kind >= 0) {
			ok = put(&stmt, p, len) && put(&stmt, "\n", 1);
			if (!ok)
				fb_say(err, errlen, "out of memory");
		} else if (q[0] && q[0] != '\r' && !(q[0] == '-' && q[1] == '-') && q != p + len) {
			ok = fb_say(err, errlen,
			            "line %d: a statement before any directive (-- @write ...)",
			            line);
		}
		p += len + (p[len] == '\n');
	}
	if (ok && kind >= 0)
		ok = file_statement(u, kind, at, &stmt, err, errlen);
	free(stmt.s);
	return ok;
}

bool fb_user_sql_load(const char *path, fb_user_sql *u, char *err, size_t errlen)
{
	memset(u, 0, sizeof *u);
	FILE *f = fopen(path, "r");
	if (!f)
		return fb_say(err, errlen, "cannot read '%s': errno=%d (%s)", path, errno,
		              strerror(errno));
	char *text = malloc(1 << 20);
	size_t n = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
	bool big = text && n == (1 << 20) - 1 && fgetc(f) != EOF;
	fclose(f);
	if (!text || big) {
		free(text);
		return fb_say(err, errlen, "'%s': %s", path,
		              text ? "larger than 1 MiB" : "out of memory");
	}
	text[n] = 0;
	char why[400];
	bool ok = strlen(text) == n && fb_user_sql_parse(text, u, why, sizeof why);
	if (!ok)
		fb_say(err, errlen, "'%s': %s", path, strlen(text) != n ? "a NUL byte in it" : why);
	free(text);
	return ok;
}

bool fb_user_sql_take(const char *url, char *out, size_t outlen, char *path, size_t pathlen)
{
	path[0] = 0;
	if (strlen(url) >= outlen)
		return false;
	strcpy(out, url);
	bool is_url = strstr(url, "://") != NULL;
	char *q = is_url ? strchr(out, '?') : out;
	for (char *p = q; p && *p;) {
		/* a URL: sql=FILE between '?' or '&' and the next '&'; a
		 * conninfo: a word sql=FILE (FILE maybe 'quoted') */
		bool starts = is_url ? p > q && (p[-1] == '?' || p[-1] == '&')
		                     : p == out || isspace((unsigned char)p[-1]);
		if (!starts || strncmp(p, "sql", 3) != 0) {
			p++;
			continue;
		}
		char *v = p + 3;
		if (!is_url)
			v += strspn(v, " ");
		if (*v != '=') {
			p++;
			continue;
		}
		v++;
		if (!is_url)
			v += strspn(v, " ");
		char *end;
		if (!is_url && *v == '\'') {
			end = strchr(v + 1, '\'');
			end = end ? end + 1 : v + strlen(v);
			snprintf(path, pathlen, "%.*s", (int)(end - v - 2 > 0 ? end - v - 2 : 0),
			         v + 1);
		} else {
			end = v + strcspn(v, is_url ? "&" : " \t");
			snprintf(path, pathlen, "%.*s", (int)(end - v), v);
		}
		if (is_url) { /* drop "sql=FILE" and its '&', or the '?' if it was alone */
			if (*end == '&')
				end++;
			else if (p[-1] == '&' || p[-1] == '?')
				p--;
		}
		memmove(p, end, strlen(end) + 1);
		return true;
	}
	return true;
}
