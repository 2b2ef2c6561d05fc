#include "check.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "compare.h"
#include "history.h"
#include "metrics.h"
#include "options.h"
#include "outfile.h"
#include "output.h"
#include "registry.h"

#define G(v) fb_grouped((char[48]){0}, 48, (double)(v))

/* Everything one check holds, from the open store to the verdicts. */
typedef struct check {
	const fb_check_opts *o;
	FILE *out, *err;
	const fb_store_ops *ops;
	char url[512]; /* redacted */
	char server[128];
	fb_store_meta meta;
	fb_history *h;
	fb_history_verdict v[FB_DISCIPLINES], total;
	bool progress;
	uint64_t next_progress;
	bool client_oom;
	char column[FB_DISCIPLINES][16]; /* each discipline's heading (an adapter's "yours") */
} check;

static const char *col(const check *c, int d)
{
	return c->column[d][0] ? c->column[d] : fb_discipline_name((fb_discipline)d);
}

#define PROGRESS_EVERY (UINT64_C(1) << 20)

static void on_row(void *ctx, const fb_history_row *r)
{
	check *c = ctx;
	if (fb_history_feed(c->h, r) != FB_OK)
		c->client_oom = true;
	if (c->progress && fb_history_rows(c->h) >= c->next_progress) {
		c->next_progress += PROGRESS_EVERY;
		fprintf(c->err, "\rfencebench check: %s rows of history read",
		        G(fb_history_rows(c->h)));
		fflush(c->err);
	}
}

/* An engine's message, which may already begin with the (redacted) URL:
 * the error lines name the URL themselves, once. */
static const char *reason(const check *c, const char *why)
{
	if (!why || !*why)
		return "no reason given";
	size_t n = strlen(c->url);
	if (n && strncmp(why, c->url, n) == 0 && why[n] == ':') {
		why += n + 1;
		while (*why == ' ')
			why++;
	}
	return why;
}

/* The runtime error line, `fencebench: check: URL: reason` (exit 3). */
static int runtime(check *c, const char *why)
{
	why = reason(c, why);
	if (c->progress)
		fprintf(c->err, "\r%-72s\r", "");
	fprintf(c->err, "fencebench: check: %s: %s\n", c->url, why);
	return 3;
}

static const char *conn_error(const check *c, void *conn)
{
	const char *e = conn && c->ops->error ? c->ops->error(conn) : NULL;
	return e && *e ? e : "the server gave no reason";
}

/* ---- the table ---- */

/* A history's number for the table's row of metric k (metrics.h). */
static long long value(const fb_history_verdict *v, fb_metric_id k)
{
	switch (k) {
	case FB_M_HISTORY_ROWS:
		return (long long)v->rows;
	case FB_M_STALE_ACCEPTED:
		return (long long)v->stale_accepted;
	case FB_M_STORE_STALE:
		return (long long)v->store_stale;
	case FB_M_LOST_HISTORY:
		return (long long)v->lost_history;
	case FB_M_LOST_UPDATES:
		return (long long)v->lost_updates;
	case FB_M_VERSION_GAPS:
		return (long long)v->version_gaps;
	case FB_M_OUT_OF_ORDER:
		return (long long)v->out_of_order;
	case FB_M_CHAIN_BREAKS:
		return (long long)v->chain_breaks;
	case FB_M_FOREIGN_ROWS:
		return (long long)v->foreign;
	default:
		return 0;
	}
}

#define LABEL_W 28

static void print_table(check *c)
{
	static const fb_metric_id rows[] = {
	        FB_M_HISTORY_ROWS, FB_M_STALE_ACCEPTED, FB_M_STORE_STALE,
	        FB_M_LOST_HISTORY, FB_M_LOST_UPDATES,   FB_M_VERSION_GAPS,
	        FB_M_OUT_OF_ORDER, FB_M_CHAIN_BREAKS,   FB_M_FOREIGN_ROWS,
	};
	FILE *out = c->out;
	fprintf(out, "\n%-*s", LABEL_W, "");
	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (c->v[d].on)
			fprintf(out, " %13s", col(c, d));
	fprintf(out, "\n");
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const fb_metric *m = &fb_metrics[rows[i]];
		const char *label = m->check_label ? m->check_label : m->label;
		const char *note = m->check_note ? m->check_note : m->note;
		bool any = false;
		for (int d = 0; d < FB_DISCIPLINES; d++)
			any |= c->v[d].on && value(&c->v[d], rows[i]) != 0;
		if (m->show == FB_SHOW_IF_ANY && !any)
			continue;
		fprintf(out, "%-*s", LABEL_W, label);
		for (int d = 0; d < FB_DISCIPLINES; d++)
			if (c->v[d].on)
				fprintf(out, " %13s", G(value(&c->v[d], rows[i])));
		fprintf(out, "%s%s\n", note ? "   " : "", note ? note : "");
	}
	fprintf(out, "%-*s", LABEL_W, "clients");
	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (c->v[d].on)
			fprintf(out, " %13s", G(c->v[d].clients));
	fprintf(out, "   <- processes that wrote\n%-*s", LABEL_W, "checker agrees");
	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (c->v[d].on)
			fprintf(out, " %13s", c->v[d].agrees ? "yes" : "NO");
	fprintf(out, "\n");
}

#define CLIENTS_SHOWN 32

/* Writes per client id: a shared run's processes, one line each. */
static void print_clients(check *c)
{
	size_t n = fb_history_clients(c->h, NULL, 0);
	if (!n)
		return;
	fb_history_client shown[CLIENTS_SHOWN];
	size_t got = fb_history_clients(c->h, shown, CLIENTS_SHOWN);
	FILE *out = c->out;
	fprintf(out, "\n%-*s", LABEL_W, "writes per client");
	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (c->v[d].on)
			fprintf(out, " %13s", col(c, d));
	fprintf(out, "\n");
	for (size_t i = 0; i < got && i < CLIENTS_SHOWN; i++) {
		char label[32];
		snprintf(label, sizeof label, "  client %u", shown[i].id);
		fprintf(out, "%-*s", LABEL_W, label);
		for (int d = 0; d < FB_DISCIPLINES; d++)
			if (c->v[d].on)
				fprintf(out, " %13s", G(shown[i].writes[d]));
		fprintf(out, "\n");
	}
	if (n > CLIENTS_SHOWN)
		fprintf(out, "  ... and %s more clients (--json lists them all)\n",
		        G(n - CLIENTS_SHOWN));
	if (c->client_oom)
		fprintf(out, "  (out of memory counting clients: these numbers are short)\n");
}

/* What broke, for a VIOLATED line: the nonzero counts, or the disagreement. */
static void violations(char *buf, size_t len, const fb_history_verdict *v, bool lost)
{
	size_t o = 0;
	buf[0] = 0;
#define ADD(cond, ...)                                                                             \
	do {                                                                                       \
		if ((cond) && o < len) {                                                           \
			int w_ = snprintf(buf + o, len - o, "%s", o ? ", " : "");                  \
			o += w_ > 0 ? (size_t)w_ : 0;                                              \
			if (o < len) {                                                             \
				w_ = snprintf(buf + o, len - o, __VA_ARGS__);                      \
				o += w_ > 0 ? (size_t)w_ : 0;                                      \
			}                                                                          \
		}                                                                                  \
	} while (0)
	ADD(v->stale_accepted, "%s stale writes accepted", G(v->stale_accepted));
	/* below zero the books do not balance: the disagreement says why */
	ADD(lost && (v->lost_updates > 0 || v->lost_history > 0), "%s updates lost",
	    G(v->lost_updates > v->lost_history ? v->lost_updates : v->lost_history));
	ADD(v->version_gaps, "%s writes missing from the history", G(v->version_gaps));
	ADD(v->chain_breaks, "%s chain breaks", G(v->chain_breaks));
	ADD(!o && !v->agrees, "the history disagrees with the store");
#undef ADD
}

/* Each history's first stale write, as far as a history can tell it: who
 * wrote it, whose newer write it went behind, what it erased. */
static void print_stories(check *c)
{
	static const fb_discipline order[] = {FB_UNFENCED, FB_WRITE_FENCED, FB_FENCED};
	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
		const fb_history_story *s = &c->v[order[i]].first;
		if (!c->v[order[i]].on || !s->found)
			continue;
		fprintf(c->out,
		        "first stale write in the %s history, key %u: w%u (client %u) wrote with "
		        "fence %llu (version %llu) after w%u (client %u) had written fence %llu "
		        "(version %llu)",
		        col(c, order[i]), s->key, s->worker, s->client,
		        (unsigned long long)s->fence, (unsigned long long)s->version,
		        s->newer_worker, s->newer_client, (unsigned long long)s->newer_fence,
		        (unsigned long long)s->newer_version);
		if (s->erased > 0)
			fprintf(c->out, ", erasing %s %s", G(s->erased),
			        s->erased == 1 ? "debit" : "debits");
		fprintf(c->out, " (a history keeps no times)\n");
	}
}

/* The verdict lines in the run's words. */
static void print_verdicts(check *c)
{
	FILE *out = c->out;
	char why[256];
	bool any_disagrees = false;
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		const fb_history_verdict *v = &c->v[d];
		if (v->on && !v->agrees) {
			fprintf(out, "%s: CHECKER DISAGREES: %s\n", col(c, d), v->disagreement);
			any_disagrees = true;
		}
	}
	if (!any_disagrees && !c->total.agrees)
		fprintf(out, "history: CHECKER DISAGREES: %s\n", c->total.disagreement);
	const fb_history_verdict *f = &c->v[FB_FENCED], *w = &c->v[FB_WRITE_FENCED],
	                         *u = &c->v[FB_UNFENCED];
	if (f->on) {
		if (fb_history_failed(FB_FENCED, f)) {
			violations(why, sizeof why, f, true);
			fprintf(out, "%s: VIOLATED !!! (%s)\n", col(c, FB_FENCED), why);
		} else if (!f->rows) {
			fprintf(out, "%s: no violation, but vacuous: the history holds no write\n",
			        col(c, FB_FENCED));
		} else {
			fprintf(out,
			        "%s: SAFE (%s writes re-verified: none stale, no update lost, "
			        "none missing)\n",
			        col(c, FB_FENCED), G(f->rows));
		}
	}
	if (w->on) {
		if (fb_history_failed(FB_WRITE_FENCED, w)) {
			violations(why, sizeof why, w, false);
			fprintf(out, "write-fenced: VIOLATED !!! (%s)\n", why);
		} else if (w->lost_updates) {
			fb_say_write_fenced_lost(out, w->lost_updates);
		} else {
			fprintf(out, "write-fenced: no stale write, no update lost%s\n",
			        c->meta.op == FB_OP_DEBIT
			                ? " (the store subtracts: nothing to lose)"
			        : !w->rows ? " (vacuous: the history holds no write)"
			                   : "");
		}
	}
	if (u->on) {
		if (u->stale_accepted || u->lost_updates)
			fb_say_unfenced_corrupted(out, u->stale_accepted, u->lost_updates);
		else
			fprintf(out, "unfenced: no corruption observed%s\n",
			        u->rows ? "" : " (vacuous: the history holds no write)");
	}
	print_stories(c);
}

/* ---- JSON ---- */

static json_object *j_u(uint64_t v)
{
	return json_object_new_uint64(v);
}

static json_object *j_i(int64_t v)
{
	return json_object_new_int64(v);
}

/* Metric k of a history at check's key for it. */
static void j_metric(json_object *o, const fb_history_verdict *v, fb_metric_id k)
{
	long long x = value(v, k);
	json_object_object_add(o, fb_metrics[k].check_json,
	                       fb_metrics[k].unit == FB_UNIT_SIGNED ? j_i(x) : j_u((uint64_t)x));
}

static json_object *j_verdict(check *c, const fb_history_verdict *v, int d,
                              const fb_history_client *cl, size_t ncl)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "column", json_object_new_string(col(c, d)));
	j_metric(o, v, FB_M_HISTORY_ROWS);
	j_metric(o, v, FB_M_STALE_ACCEPTED);
	j_metric(o, v, FB_M_STORE_STALE);
	json_object_object_add(o, "stale_flags_agree", json_object_new_boolean(v->stale_agrees));
	json_object_object_add(o, "stale_flag_mismatches", j_u(v->flag_mismatches));
	static const fb_metric_id after[] = {FB_M_LOST_UPDATES, FB_M_LOST_HISTORY,
	                                     FB_M_VERSION_GAPS, FB_M_OUT_OF_ORDER,
	                                     FB_M_CHAIN_BREAKS, FB_M_FOREIGN_ROWS};
	for (size_t i = 0; i < sizeof after / sizeof after[0]; i++)
		j_metric(o, v, after[i]);
	json_object_object_add(o, "keys_written", j_u(v->keys_written));
	json_object_object_add(o, "max_fence", j_u(v->max_fence));
	json_object_object_add(o, "clients", j_u(v->clients));
	json_object *pc = json_object_new_object();
	for (size_t i = 0; i < ncl; i++) {
		uint64_t n = 0;
		for (int k = 0; k < FB_DISCIPLINES; k++)
			if (d < 0 ? c->v[k].on : k == d)
				n += cl[i].writes[k];
		if (!n)
			continue;
		char id[16];
		snprintf(id, sizeof id, "%u", cl[i].id);
		json_object_object_add(pc, id, j_u(n));
	}
	json_object_object_add(o, "writes_per_client", pc);
	json_object_object_add(o, "checker_agrees", json_object_new_boolean(v->agrees));
	if (d >= 0 && v->first.found) {
		const fb_history_story *st = &v->first;
		json_object *f = json_object_new_object();
		json_object_object_add(f, "key", j_u(st->key));
		json_object_object_add(f, "version", j_u(st->version));
		json_object_object_add(f, "fence", j_u(st->fence));
		json_object_object_add(f, "client", j_u(st->client));
		json_object_object_add(f, "worker", j_u(st->worker));
		json_object_object_add(f, "newer_fence", j_u(st->newer_fence));
		json_object_object_add(f, "newer_version", j_u(st->newer_version));
		json_object_object_add(f, "newer_client", j_u(st->newer_client));
		json_object_object_add(f, "newer_worker", j_u(st->newer_worker));
		json_object_object_add(f, "erased_debits", j_i(st->erased > 0 ? st->erased : 0));
		json_object_object_add(o, "first_stale", f);
	}
	if (!v->agrees)
		json_object_object_add(o, "disagreement", json_object_new_string(v->disagreement));
	if (d >= 0)
		json_object_object_add(
		        o, "verdict",
		        json_object_new_string(fb_history_outcome((fb_discipline)d, v)));
	return o;
}

/* The document: schema FB_DOC_SCHEMA (2), kind "check", the store, the run's meta, per
 * discipline the numbers and the verdict, the total, the exit code. */
static int write_json(check *c, int code)
{
	size_t ncl = fb_history_clients(c->h, NULL, 0);
	fb_history_client *cl = calloc(ncl ? ncl : 1, sizeof *cl);
	if (!cl) {
		fprintf(c->err, "fencebench: check: out of memory writing '%s'\n", c->o->json);
		return -1;
	}
	ncl = fb_history_clients(c->h, cl, ncl);
	char stamp[32], iso[64];
	fb_clock_wall_stamp(stamp, sizeof stamp, iso, sizeof iso);
	json_object *doc = json_object_new_object();
	json_object_object_add(doc, "schema", j_u(FB_DOC_SCHEMA));
	json_object_object_add(doc, "tool", json_object_new_string("fencebench"));
	json_object_object_add(doc, "version", json_object_new_string(FB_VERSION));
	json_object_object_add(doc, "kind", json_object_new_string("check"));
	json_object_object_add(doc, "checked_at", json_object_new_string(iso));
	json_object *st = json_object_new_object();
	json_object_object_add(st, "url", json_object_new_string(c->url));
	json_object_object_add(st, "engine", json_object_new_string(c->ops->name));
	json_object_object_add(st, "scheme", json_object_new_string(c->ops->scheme));
	json_object_object_add(st, "server_version", json_object_new_string(c->server));
	json_object_object_add(doc, "store", st);
	json_object *m = json_object_new_object();
	json_object_object_add(m, "initial_balance", j_i(c->meta.initial_balance));
	json_object_object_add(m, "amount", j_i(c->meta.amount));
	json_object_object_add(m, "keys", j_u(c->meta.keys));
	json_object_object_add(m, "op",
	                       json_object_new_string(c->meta.op == FB_OP_DEBIT ? "debit" : "rmw"));
	json_object *ml = json_object_new_array();
	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (c->v[d].on)
			json_object_array_add(
			        ml, json_object_new_string(fb_discipline_key((fb_discipline)d)));
	json_object_object_add(m, "modes", ml);
	json_object_object_add(doc, "meta", m);
	json_object *modes = json_object_new_object();
	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (c->v[d].on)
			json_object_object_add(modes, fb_discipline_key((fb_discipline)d),
			                       j_verdict(c, &c->v[d], d, cl, ncl));
	json_object_object_add(doc, "modes", modes);
	json_object_object_add(doc, "total", j_verdict(c, &c->total, -1, cl, ncl));
	json_object_object_add(doc, "exit_code", j_u((uint64_t)code));
	free(cl);
	const char *text = json_object_to_json_string_ext(
	        doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
	int rc = fb_outfile_put(c->o->json, text);
	if (rc)
		fprintf(c->err, "fencebench: check: --json: cannot write '%s': errno=%d (%s)\n",
		        c->o->json, errno, strerror(errno));
	json_object_put(doc);
	return rc;
}

/* ---- the check ---- */

/* Read the finals of every discipline of the run and close its books. */
static int finish(check *c, void *conn)
{
	uint32_t keys = c->meta.keys;
	int64_t *bal = calloc(keys, sizeof *bal);
	uint64_t *last = calloc(keys, sizeof *last);
	int code = 0;
	if (!bal || !last) {
		code = runtime(c, "out of memory for the final balances");
		goto out;
	}
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		if (!(c->meta.modes & (1u << d)))
			continue;
		if (c->ops->final(conn, (fb_discipline)d, keys, bal, last) != FB_IO_OK) {
			char why[512];
			snprintf(why, sizeof why, "reading the %s final balances: %s", col(c, d),
			         conn_error(c, conn));
			code = runtime(c, why);
			goto out;
		}
		fb_history_finish(c->h, (fb_discipline)d, bal, last, &c->v[d], NULL, NULL);
	}
	fb_history_total(c->h, &c->total);
out:
	free(bal);
	free(last);
	return code;
}

/*
 * Open the store without preparing it (prepare would reset it), read what
 * the run recorded (meta), stream the history through the offline checker,
 * read every discipline's finals, then report. Every failure to talk to
 * the server is a runtime error (3); a store that keeps no history is a
 * usage error (2).
 */
int fb_check_store(const fb_store_ops *ops, const fb_check_opts *o)
{
	check c = {.o = o, .out = o->out ? o->out : stdout, .err = o->err ? o->err : stderr};
	fb_url_redact(o->url, c.url, sizeof c.url);
	c.ops = ops ? ops : fb_store_engine(o->url);
	if (!c.ops) {
		fprintf(c.err, "fencebench check: --store '%s': unknown scheme; use %s\n", c.url,
		        fb_store_schemes());
		return 2;
	}
	if (!c.ops->history) {
		fprintf(c.err,
		        "fencebench check: --store '%s': the %s store keeps no history of its "
		        "writes; check needs a redis:// or postgres:// store\n",
		        c.url, c.ops->name);
		return 2;
	}
	/* A reader's configuration: client 0, one connection. The engines
	 * refuse to open without a key and a discipline, but nothing here
	 * shapes what is read: the run's meta, read below, says how many keys
	 * in which disciplines. */
	fb_engine_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.threads = 1;
	cfg.keys = 1;
	cfg.modes = (1u << FB_DISCIPLINES) - 1;
	cfg.amount = 1;
	void *eng = NULL, *conn = NULL;
	char err[512] = "";
	int code = 0;
	fb_err e = c.ops->open(&cfg, o->url, &eng, err, sizeof err);
	if (e != FB_OK) {
		if (e == FB_EINVAL) {
			fprintf(c.err, "fencebench check: --store '%s': %s\n", c.url,
			        reason(&c, *err ? err : "malformed"));
			return 2;
		}
		return runtime(&c, err);
	}
	if (c.ops->keeps_history && !c.ops->keeps_history(eng, err, sizeof err)) {
		fprintf(c.err, "fencebench check: --store '%s': %s\n", c.url, reason(&c, err));
		c.ops->close(eng);
		return 2;
	}
	for (int d = 0; d < FB_DISCIPLINES; d++)
		snprintf(c.column[d], sizeof c.column[d], "%s",
		         fb_store_column(c.ops, eng, (fb_discipline)d));
	snprintf(c.server, sizeof c.server, "?");
	if (c.ops->version)
		c.ops->version(eng, c.server, sizeof c.server);
	if (c.ops->connect(eng, 0, &conn, err, sizeof err) != FB_OK) {
		code = runtime(&c, err);
		conn = NULL;
		goto out;
	}
	fb_io io = c.ops->meta ? c.ops->meta(conn, &c.meta) : FB_IO_REFUSED;
	if (io == FB_IO_ERROR) {
		code = runtime(&c, conn_error(&c, conn));
		goto out;
	}
	if (io != FB_IO_OK) {
		code = runtime(&c, "no fencebench run recorded here");
		goto out;
	}
	c.meta.own_versions = c.ops->own_versions ? c.ops->own_versions(eng) : 0;
	e = fb_history_create(&c.meta, &c.h);
	if (e != FB_OK) {
		snprintf(err, sizeof err,
		         e == FB_EINVAL
		                 ? "the run's record is malformed (keys %u, amount %lld, "
		                   "disciplines %#x)"
		                 : "out of memory for %u keys (amount %lld, disciplines %#x)",
		         c.meta.keys, (long long)c.meta.amount, c.meta.modes);
		code = runtime(&c, err);
		goto out;
	}
	c.progress = !o->quiet && isatty(fileno(c.err));
	c.next_progress = PROGRESS_EVERY;
	io = c.ops->history(conn, on_row, &c);
	if (c.progress)
		fprintf(c.err, "\r%-72s\r", "");
	c.progress = false;
	if (io != FB_IO_OK) {
		snprintf(err, sizeof err, "reading the history: %s", conn_error(&c, conn));
		code = runtime(&c, err);
		goto out;
	}
	code = finish(&c, conn);
	if (code)
		goto out;
	c.ops->disconnect(conn);
	conn = NULL;
	c.ops->close(eng);
	eng = NULL;

	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (fb_history_failed((fb_discipline)d, &c.v[d]))
			code = 1;
	if (!c.total.agrees)
		code = 1;
	FILE *out = c.out;
	if (!o->quiet) {
		fprintf(out, "fencebench %s check  %s  (%s %s)\n", FB_VERSION, c.url, c.ops->name,
		        c.server);
		fprintf(out, "the run: %u keys, initial balance %s, debit %s, op %s, disciplines",
		        c.meta.keys, G(c.meta.initial_balance), G(c.meta.amount),
		        c.meta.op == FB_OP_DEBIT ? "debit" : "rmw");
		for (int d = 0, n = 0; d < FB_DISCIPLINES; d++)
			if (c.v[d].on)
				fprintf(out, "%s %s", n++ ? "," : "", col(&c, d));
		fprintf(out, "\n");
		print_table(&c);
		print_clients(&c);
		fprintf(out, "\n");
	}
	print_verdicts(&c);
	fprintf(out, "\n%s:", code ? "FAIL !!!" : "PASS");
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		const fb_history_verdict *v = &c.v[d];
		if (v->on)
			fprintf(out, " %s %s=%llu %s=%llu %s=%lld agree=%s;", col(&c, d),
			        fb_metrics[FB_M_HISTORY_ROWS].verdict, (unsigned long long)v->rows,
			        fb_metrics[FB_M_STALE_ACCEPTED].verdict,
			        (unsigned long long)v->stale_accepted,
			        fb_metrics[FB_M_LOST_UPDATES].verdict, (long long)v->lost_updates,
			        v->agrees ? "yes" : "NO");
	}
	fprintf(out, " store: %s\n", c.url);
	fflush(out);
	if (o->json && write_json(&c, code))
		code = 3;
out:
	if (conn)
		c.ops->disconnect(conn);
	if (eng)
		c.ops->close(eng);
	fb_history_destroy(c.h);
	return code;
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: fencebench check --store URL [--json FILE] [-q]\n"
	        "\n"
	        "Re-verify, after a run (or after every process of a shared run finished),\n"
	        "the history of accepted writes a real store recorded in the same step as\n"
	        "each write, with the checker's rules and not the store's: stale writes\n"
	        "accepted (and whether the store flagged the same ones), versions missing,\n"
	        "breaks in the chain of balances, lost updates from the history and from the\n"
	        "final balances, writes per client. The store is only read, never reset.\n"
	        "\n"
	        "  --store URL   the store the run wrote to: %s\n"
	        "                (the in-process store keeps no history)\n"
	        "  --json FILE   also write the numbers as a JSON document (kind \"check\")\n"
	        "  -q, --quiet   the verdict lines only: no table, no progress\n"
	        "  -h, --help    this text\n"
	        "\n"
	        "Exit 0 when the fenced disciplines are clean and the history agrees with the\n"
	        "store, 1 when a fenced discipline was violated or the history disagrees with\n"
	        "the store, 2 for a usage error, 3 when the store cannot be read or holds no\n"
	        "run.\n",
	        fb_store_schemes());
}

/* --name VALUE or --name=VALUE at argv[*i]: the value, or NULL when a
 * value is missing (the error said). */
static const char *value_of(int argc, char **argv, int *i, const char *name, const char *what)
{
	const char *a = argv[*i];
	size_t n = strlen(name);
	if (a[n] == '=')
		return a + n + 1;
	if (*i + 1 < argc) {
		(*i)++;
		return argv[*i];
	}
	fprintf(stderr, "fencebench check: %s needs a %s\n", name, what);
	return NULL;
}

static bool is_opt(const char *a, const char *name)
{
	size_t n = strlen(name);
	return strncmp(a, name, n) == 0 && (a[n] == 0 || a[n] == '=');
}

int fb_check_main(int argc, char **argv)
{
	fb_check_opts o = {0};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			o.quiet = true;
		} else if (is_opt(a, "--store")) {
			if (!(o.url = value_of(argc, argv, &i, "--store", "URL")))
				return 2;
		} else if (is_opt(a, "--json")) {
			if (!(o.json = value_of(argc, argv, &i, "--json", "FILE")))
				return 2;
			if (!*o.json) {
				fprintf(stderr, "fencebench check: --json '': needs a file name\n");
				return 2;
			}
		} else if (a[0] == '-') {
			fprintf(stderr, "fencebench check: unknown option '%s' (see --help)\n", a);
			return 2;
		} else {
			fprintf(stderr,
			        "fencebench check: '%s': unexpected argument; the store is given "
			        "with --store URL\n",
			        a);
			return 2;
		}
	}
	if (!o.url) {
		fprintf(stderr, "fencebench check: --store URL is required (%s)\n",
		        fb_store_schemes());
		return 2;
	}
	return fb_check_store(NULL, &o);
}
