#define _GNU_SOURCE
#include "compare.h"
#include "metrics.h"
#include "output.h"

#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const fb_doc_discipline_key[FB_DOC_DISCIPLINES] = {"fenced", "write_fenced",
                                                               "unfenced"};
const char *const fb_doc_discipline_name[FB_DOC_DISCIPLINES] = {"fenced", "write-fenced",
                                                                "unfenced"};

/* ---- reading documents ---- */

/* The whole file, NUL-terminated; NULL with errno set on failure. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (n + 1 >= cap) {
			char *more = realloc(buf, cap * 2);
			if (!more) {
				free(buf);
				buf = NULL;
				errno = ENOMEM;
				break;
			}
			buf = more;
			cap *= 2;
		}
		size_t r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
		if (r == 0) {
			if (ferror(f)) {
				int e = errno;
				free(buf);
				buf = NULL;
				errno = e ? e : EIO;
			}
			break;
		}
	}
	fclose(f);
	if (buf) {
		buf[n] = 0;
		*len = n;
	}
	return buf;
}

/* json-c prints a value compactly; used in messages and config values. */
static const char *compact(json_object *o)
{
	return o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	                                                     JSON_C_TO_STRING_NOSLASHESCAPE)
	         : "missing";
}

/* Parse text as one JSON value with nothing but whitespace after it. */
static json_object *parse(const char *path, const char *text, size_t n, char *why, size_t len)
{
	if (n > INT_MAX) {
		snprintf(why, len, "%s: too large to be a fencebench document (%zu bytes)", path,
		         n);
		return NULL;
	}
	json_tokener *tok = json_tokener_new();
	if (!tok) {
		snprintf(why, len, "%s: json_tokener_new failed", path);
		return NULL;
	}
	json_object *doc = json_tokener_parse_ex(tok, text, (int)n);
	enum json_tokener_error e = json_tokener_get_error(tok);
	size_t end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!doc || e != json_tokener_success) {
		json_object_put(doc);
		if (e == json_tokener_continue || e == json_tokener_success)
			snprintf(why, len, "%s: malformed JSON (it ends before the document does)",
			         path);
		else
			snprintf(why, len, "%s: malformed JSON (%s, near byte %zu)", path,
			         json_tokener_error_desc(e), end);
		return NULL;
	}
	for (size_t i = end; i < n; i++)
		if (!strchr(" \t\r\n", text[i])) {
			json_object_put(doc);
			snprintf(why, len, "%s: malformed JSON (trailing data at byte %zu)", path,
			         i);
			return NULL;
		}
	return doc;
}

/* ---- judging a document's values ---- */

/* The fields of a discipline that the readers use: counts and rates, each a
 * finite number not below zero where present (lost_updates may be null: a
 * run that did not check). */
static const fb_metric_id mode_counts[] = {
        FB_M_OPS,           FB_M_ACQUIRED,       FB_M_CONTENDED,     FB_M_WRITES,
        FB_M_ACCEPTED,      FB_M_REJECTED_STALE, FB_M_READS_REFUSED, FB_M_STALE_ACCEPTED,
        FB_M_ZOMBIE_WRITES, FB_M_CAS_RETRIES,    FB_M_THROUGHPUT,    FB_M_FALSE_REJECTIONS,
};
static const char *const lat_phases[] = {"acquire", "write", "cycle"};
static const char *const lat_points[] = {"p50", "p90", "p99", "p999", "p9999", "max"};

/* "rows[3].modes.fenced.x: "fast" is not a number" into why, false. */
static bool bad_value(char *why, size_t len, const char *file, const char *at, const char *field,
                      json_object *v, const char *what)
{
	snprintf(why, len, "%s: %s%s%s: %s %s", file, at, *at ? "." : "", field, compact(v), what);
	return false;
}

/* The value at field of o, if there: a finite number, and not below zero
 * unless signed. */
static bool number_ok(json_object *o, const char *field, bool may_be_null, bool is_signed,
                      const char *file, const char *at, char *why, size_t len)
{
	json_object *v = fb_doc_get(o, field);
	if (!v && !json_object_object_get_ex(o, field, NULL))
		return true; /* absent: a reader that needs it says so itself */
	if (!v)
		return may_be_null ? true
		                   : bad_value(why, len, file, at, field, v, "is not a number");
	if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
		return bad_value(why, len, file, at, field, v, "is not a number");
	double x = json_object_get_double(v);
	if (!isfinite(x))
		return bad_value(why, len, file, at, field, v, "is not a finite number");
	if (!is_signed && x < 0)
		return bad_value(why, len, file, at, field, v, "is below zero");
	return true;
}

/* A "modes" object: every discipline present an object of sound numbers. */
static bool modes_ok(json_object *modes, const char *file, const char *at, char *why, size_t len)
{
	if (!modes || !json_object_is_type(modes, json_type_object)) {
		snprintf(why, len, "%s: %s%smodes: %s%s", file, at, *at ? "." : "",
		         modes ? compact(modes) : "", modes ? " is not an object" : "is missing");
		return false;
	}
	int found = 0;
	for (int d = 0; d < FB_DOC_DISCIPLINES; d++) {
		json_object *m = fb_doc_get(modes, fb_doc_discipline_key[d]);
		if (!m)
			continue;
		char here[160];
		snprintf(here, sizeof here, "%s%smodes.%s", at, *at ? "." : "",
		         fb_doc_discipline_key[d]);
		if (!json_object_is_type(m, json_type_object)) {
			snprintf(why, len, "%s: %s: %s is not an object", file, here, compact(m));
			return false;
		}
		found++;
		for (size_t i = 0; i < sizeof mode_counts / sizeof *mode_counts; i++)
			if (!number_ok(m, fb_metrics[mode_counts[i]].json, false, false, file, here,
			               why, len))
				return false;
		if (!number_ok(m, fb_metrics[FB_M_LOST_UPDATES].json, true, true, file, here, why,
		               len))
			return false;
		for (size_t p = 0; p < 3; p++)
			for (size_t q = 0; q < sizeof lat_points / sizeof *lat_points; q++) {
				char f[64];
				snprintf(f, sizeof f, "latency_ns.%s.%s", lat_phases[p],
				         lat_points[q]);
				json_object *ph = fb_doc_get(m, "latency_ns");
				if (ph && !json_object_is_type(ph, json_type_object))
					return bad_value(why, len, file, here, "latency_ns", ph,
					                 "is not an object");
				if (!number_ok(m, f, false, false, file, here, why, len))
					return false;
			}
	}
	if (!found) {
		snprintf(why, len,
		         "%s: %s%smodes: no discipline in it (fenced, write_fenced, unfenced)",
		         file, at, *at ? "." : "");
		return false;
	}
	return true;
}

/* A positive whole number at o.field. */
static bool count_ok(json_object *o, const char *field, const char *file, const char *at, char *why,
                     size_t len)
{
	json_object *v = fb_doc_get(o, field);
	if (!v || !json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 1)
		return bad_value(why, len, file, at, field, v, "is not a positive whole number");
	return true;
}

/* A column of a run's "series" at path, if there: an array of numbers
 * (null where a count was not kept). */
static bool series_column_ok(json_object *series, const char *path, const char *file, char *why,
                             size_t len)
{
	json_object *a = fb_doc_get(series, path);
	char at[128];
	snprintf(at, sizeof at, "series.%s", path);
	if (!a)
		return true; /* absent (or null): the chart says it has none */
	if (!json_object_is_type(a, json_type_array)) {
		snprintf(why, len, "%s: %s: %s is not an array of numbers", file, at, compact(a));
		return false;
	}
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		json_object *x = json_object_array_get_idx(a, i);
		if (!x || json_object_is_type(x, json_type_int) ||
		    json_object_is_type(x, json_type_double))
			continue;
		snprintf(why, len, "%s: %s[%zu]: %s is not a number", file, at, i, compact(x));
		return false;
	}
	return true;
}

/* A run's "series" (results/README.md), if there: an object of columns,
 * each an array of numbers. A wrong type is a damaged document, named by
 * its path, never a chart skipped as if the series were missing. */
static bool series_ok(json_object *doc, const char *file, char *why, size_t len)
{
	json_object *s = NULL;
	if (!json_object_object_get_ex(doc, "series", &s) || !s)
		return true;
	if (!json_object_is_type(s, json_type_object)) {
		snprintf(why, len, "%s: series: %s is not an object", file, compact(s));
		return false;
	}
	const char *const cols[] = {"t_s", fb_metrics[FB_M_OPS].json,
	                            fb_metrics[FB_M_THROUGHPUT].csv, "faults"};
	for (size_t i = 0; i < sizeof cols / sizeof *cols; i++)
		if (!series_column_ok(s, cols[i], file, why, len))
			return false;
	json_object *modes = NULL;
	if (!json_object_object_get_ex(s, "modes", &modes) || !modes)
		return true;
	if (!json_object_is_type(modes, json_type_object)) {
		snprintf(why, len, "%s: series.modes: %s is not an object", file, compact(modes));
		return false;
	}
	json_object_object_foreach(modes, name, m)
	{
		char path[160];
		if (!m || !json_object_is_type(m, json_type_object)) {
			snprintf(why, len, "%s: series.modes.%s: %s is not an object", file, name,
			         compact(m));
			return false;
		}
		json_object_object_foreach(m, col, v)
		{
			(void)v;
			snprintf(path, sizeof path, "modes.%s.%s", name, col);
			if (!series_column_ok(s, path, file, why, len))
				return false;
		}
	}
	return true;
}

/* Every value the readers take from a run or a sweep, judged: the first
 * that is wrong is named by its path, so no chart or ratio is drawn from it
 * silently. */
static bool values_ok(json_object *doc, fb_doc_kind kind, const char *file, char *why, size_t len)
{
	if (kind == FB_DOC_RUN)
		return count_ok(doc, "config.threads", file, "", why, len) &&
		       modes_ok(fb_doc_get(doc, "modes"), file, "", why, len) &&
		       series_ok(doc, file, why, len);
	json_object *rows = fb_doc_get(doc, "rows");
	size_t n = json_object_array_length(rows);
	if (!n) {
		snprintf(why, len, "%s: a sweep of no rows: nothing to read", file);
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *row = json_object_array_get_idx(rows, i);
		char at[32];
		snprintf(at, sizeof at, "rows[%zu]", i);
		if (!row || !json_object_is_type(row, json_type_object)) {
			snprintf(why, len, "%s: %s: %s is not an object", file, at, compact(row));
			return false;
		}
		if (!count_ok(row, "threads", file, at, why, len) ||
		    !number_ok(row, "pause_rate", false, false, file, at, why, len) ||
		    !modes_ok(fb_doc_get(row, "modes"), file, at, why, len))
			return false;
	}
	return true;
}

json_object *fb_doc_load(const char *path, fb_doc_kind *kind, char *why, size_t len)
{
	size_t n = 0;
	char *text = slurp(path, &n);
	if (!text) {
		snprintf(why, len, "%s: cannot read: errno=%d (%s)", path, errno, strerror(errno));
		return NULL;
	}
	json_object *doc = parse(path, text, n, why, len);
	free(text);
	if (!doc)
		return NULL;
	if (!json_object_is_type(doc, json_type_object)) {
		snprintf(why, len, "%s: not a fencebench document (the top level is not an object)",
		         path);
		goto refuse;
	}
	const char *tool = fb_doc_string(doc, "tool");
	if (!tool || strcmp(tool, "fencebench") != 0) {
		snprintf(why, len,
		         "%s: not a fencebench document (\"tool\" is %s, expected \"fencebench\")",
		         path, compact(fb_doc_get(doc, "tool")));
		goto refuse;
	}
	json_object *schema = fb_doc_get(doc, "schema");
	if (!schema || !json_object_is_type(schema, json_type_int) ||
	    json_object_get_int64(schema) < FB_DOC_SCHEMA_MIN ||
	    json_object_get_int64(schema) > FB_DOC_SCHEMA) {
		snprintf(why, len, "%s: \"schema\" is %s; this fencebench reads schemas %d to %d",
		         path, compact(schema), FB_DOC_SCHEMA_MIN, FB_DOC_SCHEMA);
		goto refuse;
	}
	const char *k = fb_doc_string(doc, "kind");
	json_object *rows = fb_doc_get(doc, "rows"), *modes = fb_doc_get(doc, "modes");
	/* Documents written before "kind" existed are told apart by shape. */
	if (k ? strcmp(k, "sweep") == 0 : rows != NULL) {
		if (!rows || !json_object_is_type(rows, json_type_array)) {
			snprintf(why, len, "%s: a sweep without a \"rows\" array", path);
			goto refuse;
		}
		*kind = FB_DOC_SWEEP;
	} else if (k ? strcmp(k, "run") == 0 : modes != NULL) {
		if (!modes || !json_object_is_type(modes, json_type_object)) {
			snprintf(why, len, "%s: a run without a \"modes\" object", path);
			goto refuse;
		}
		*kind = FB_DOC_RUN;
	} else {
		snprintf(why, len, "%s: \"kind\" is %s, neither a run nor a sweep", path,
		         compact(fb_doc_get(doc, "kind")));
		goto refuse;
	}
	if (!values_ok(doc, *kind, path, why, len))
		goto refuse;
	return doc;
refuse:
	json_object_put(doc);
	return NULL;
}

json_object *fb_doc_get(json_object *o, const char *path)
{
	char key[128];
	while (o && *path) {
		size_t n = strcspn(path, ".");
		if (n >= sizeof key || !json_object_is_type(o, json_type_object))
			return NULL;
		memcpy(key, path, n);
		key[n] = 0;
		json_object *next = NULL;
		if (!json_object_object_get_ex(o, key, &next))
			return NULL;
		o = next;
		path += n + (path[n] == '.');
	}
	return o;
}

bool fb_doc_number(json_object *o, const char *path, double *v)
{
	json_object *x = fb_doc_get(o, path);
	if (!x ||
	    !(json_object_is_type(x, json_type_int) || json_object_is_type(x, json_type_double)))
		return false;
	*v = json_object_get_double(x);
	return true;
}

const char *fb_doc_string(json_object *o, const char *path)
{
	json_object *x = fb_doc_get(o, path);
	return x && json_object_is_type(x, json_type_string) ? json_object_get_string(x) : NULL;
}

/* ---- formatting ---- */

/* ns -> "311 ns", "1.25 us", "48.1 ms", "2.50 s" */
static const char *duration(char *buf, size_t len, double ns)
{
	static const struct {
		double ns;
		const char *unit;
	} units[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "us"}};
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (ns >= units[i].ns) {
			double v = ns / units[i].ns;
			snprintf(buf, len,
			         v >= 100  ? "%.0f %s"
			         : v >= 10 ? "%.1f %s"
			                   : "%.2f %s",
			         v, units[i].unit);
			return buf;
		}
	snprintf(buf, len, "%.0f ns", ns);
	return buf;
}

/* B/A as "0.82x"; "-" when either is missing or both are zero, "inf" when
 * only A is. */
static const char *ratio(char *buf, size_t len, bool ha, double a, bool hb, double b)
{
	if (!ha || !hb || (a == 0 && b == 0))
		snprintf(buf, len, "-");
	else if (a == 0)
		snprintf(buf, len, "inf");
	else {
		double r = b / a;
		double m = fabs(r);
		snprintf(buf, len,
		         m == 0     ? "%.2fx"
		         : m < 0.01 ? "%.4fx"
		         : m < 10   ? "%.2fx"
		         : m < 100  ? "%.1fx"
		                    : "%.0fx",
		         r);
	}
	return buf;
}

typedef enum value_kind { V_COUNT, V_NS, V_FRAC, V_PER_OP } value_kind;

/* How compare shows a number of this unit. */
static value_kind kind_of(fb_metric_unit u)
{
	switch (u) {
	case FB_UNIT_NS:
		return V_NS;
	case FB_UNIT_S:
	case FB_UNIT_RATIO:
		return V_FRAC;
	case FB_UNIT_PER_OP:
		return V_PER_OP;
	case FB_UNIT_COUNT:
	case FB_UNIT_SIGNED:
	case FB_UNIT_OPS_S:
		break;
	}
	return V_COUNT;
}

static const char *value(char *buf, size_t len, value_kind k, bool have, double v)
{
	if (!have)
		snprintf(buf, len, "-");
	else if (k == V_COUNT)
		fb_grouped(buf, len, v);
	else if (k == V_NS)
		duration(buf, len, v);
	else if (k == V_FRAC)
		snprintf(buf, len, "%.2f", v);
	else
		snprintf(buf, len, v == 0 ? "0" : fabs(v) < 0.01 ? "%.5f" : "%.3f", v);
	return buf;
}

#define LABEL_W 24
#define VALUE_W 16
#define RATIO_W 9

static void line(const char *label, value_kind k, bool ha, double a, bool hb, double b)
{
	char va[48], vb[48], r[32];
	printf("  %-*s %*s %*s %*s\n", LABEL_W - 2, label, VALUE_W, value(va, sizeof va, k, ha, a),
	       VALUE_W, value(vb, sizeof vb, k, hb, b), RATIO_W, ratio(r, sizeof r, ha, a, hb, b));
}

/* Metric id's line: its value in A, in B, B/A. */
static void line_of(fb_metric_id id, bool ha, double a, bool hb, double b)
{
	line(fb_metrics[id].label, kind_of(fb_metrics[id].unit), ha, a, hb, b);
}

/* Metric id read from two objects (two disciplines, or two documents). */
static void line_at(fb_metric_id id, json_object *a, json_object *b)
{
	double va = 0, vb = 0;
	const char *path = fb_metrics[id].json;
	bool ha = fb_doc_number(a, path, &va), hb = fb_doc_number(b, path, &vb);
	line_of(id, ha, va, hb, vb);
}

/* A config value as a person reads it: lists joined by commas. */
static void show(char *buf, size_t len, json_object *v)
{
	if (!v) {
		snprintf(buf, len, "(absent)");
	} else if (json_object_is_type(v, json_type_string)) {
		snprintf(buf, len, "%s", json_object_get_string(v));
	} else if (json_object_is_type(v, json_type_double) ||
	           json_object_is_type(v, json_type_int)) {
		snprintf(buf, len, "%.15g", json_object_get_double(v));
	} else if (json_object_is_type(v, json_type_array)) {
		size_t o = 0;
		buf[0] = 0;
		for (size_t i = 0; i < json_object_array_length(v) && o + 1 < len; i++) {
			char one[128];
			show(one, sizeof one, json_object_array_get_idx(v, i));
			int w = snprintf(buf + o, len - o, "%s%s", i ? "," : "", one);
			o = w < 0 ? len : o + (size_t)w >= len ? len - 1 : o + (size_t)w;
		}
	} else if (json_object_is_type(v, json_type_null)) {
		snprintf(buf, len, "-");
	} else {
		snprintf(buf, len, "%s", compact(v));
	}
}

static bool same(json_object *a, json_object *b)
{
	if (!a || !b)
		return a == b;
	bool na = json_object_is_type(a, json_type_int) || json_object_is_type(a, json_type_double);
	bool nb = json_object_is_type(b, json_type_int) || json_object_is_type(b, json_type_double);
	if (na && nb)
		return json_object_get_double(a) == json_object_get_double(b);
	return strcmp(compact(a), compact(b)) == 0;
}

/* Every key of section (config, machine) whose value differs, A's keys in
 * A's order, then those only B has. */
static void differences(const char *title, json_object *a, json_object *b)
{
	json_object *sa = fb_doc_get(a, title), *sb = fb_doc_get(b, title);
	int n = 0;
	char va[512], vb[512], head[64];
	for (int pass = 0; pass < 2; pass++) {
		json_object *from = pass ? sb : sa, *other = pass ? sa : sb;
		if (!from || !json_object_is_type(from, json_type_object))
			continue;
		json_object_object_foreach(from, key, v)
		{
			json_object *w = NULL;
			bool in_other = other && json_object_object_get_ex(other, key, &w);
			if (pass && in_other)
				continue; /* shown in the first pass */
			json_object *x = pass ? NULL : v, *y = pass ? v : (in_other ? w : NULL);
			if (!pass && in_other && same(v, w))
				continue;
			if (!n++) {
				snprintf(head, sizeof head, "%s differences", title);
				printf("\n%-*s %*s %*s\n", LABEL_W, head, VALUE_W, "A", VALUE_W,
				       "B");
			}
			show(va, sizeof va, x);
			show(vb, sizeof vb, y);
			printf("  %-*s %*s %*s\n", LABEL_W - 2, key, VALUE_W, va, VALUE_W, vb);
		}
	}
	if (!n)
		printf("\n%s: the same\n", title);
}

/* "A: path  run of 2026-...  fencebench 0.3.0  AMD EPYC, 2 cores" */
static void header(const char *tag, const char *path, json_object *doc, fb_doc_kind kind)
{
	const char *at = fb_doc_string(doc, "started_at"), *ver = fb_doc_string(doc, "version"),
	           *cpu = fb_doc_string(doc, "machine.cpu");
	double cores = 0;
	printf("%s: %s  %s", tag, path, kind == FB_DOC_RUN ? "run" : "sweep");
	if (kind == FB_DOC_SWEEP) {
		json_object *rows = fb_doc_get(doc, "rows");
		printf(" of %zu rows", json_object_array_length(rows));
	}
	if (at)
		printf(" started %s", at);
	if (ver)
		printf("  fencebench %s", ver);
	if (cpu)
		printf("  %s", cpu);
	if (fb_doc_number(doc, "machine.cores", &cores))
		printf(", %.0f cores", cores);
	json_object *intr = fb_doc_get(doc, "interrupted");
	if (intr && json_object_get_boolean(intr))
		printf("  INTERRUPTED");
	printf("\n");
}

/* ---- two runs ---- */

/* CAS retries per op: a run-wide count, repeated in every mode. */
static bool cas_per_op(json_object *doc, double *v)
{
	double retries = 0, ops = 0;
	for (int d = 0; d < FB_DOC_DISCIPLINES; d++) {
		json_object *m = fb_doc_get(fb_doc_get(doc, "modes"), fb_doc_discipline_key[d]);
		if (m && fb_doc_number(m, fb_metrics[FB_M_CAS_RETRIES].json, &retries) &&
		    (fb_doc_number(doc, "run.ops", &ops) ||
		     fb_doc_number(m, fb_metrics[FB_M_OPS].json, &ops))) {
			*v = ops > 0 ? retries / ops : 0;
			return true;
		}
	}
	return false;
}

static void compare_runs(json_object *a, json_object *b)
{
	static const fb_metric_id rows[] = {
	        FB_M_THROUGHPUT,     FB_M_ACCEPTED,     FB_M_REJECTED_STALE, FB_M_READS_REFUSED,
	        FB_M_STALE_ACCEPTED, FB_M_LOST_UPDATES, FB_M_ZOMBIE_WRITES,  FB_M_CYCLE_P50,
	        FB_M_CYCLE_P99,      FB_M_CYCLE_P999,
	};
	printf("\n%-*s %*s %*s %*s\n", LABEL_W, "", VALUE_W, "A", VALUE_W, "B", RATIO_W, "B/A");
	for (int d = 0; d < FB_DOC_DISCIPLINES; d++) {
		json_object *ma = fb_doc_get(fb_doc_get(a, "modes"), fb_doc_discipline_key[d]);
		json_object *mb = fb_doc_get(fb_doc_get(b, "modes"), fb_doc_discipline_key[d]);
		if (!ma && !mb)
			continue;
		printf("%s%s\n", fb_doc_discipline_name[d],
		       !ma   ? " (only in B)"
		       : !mb ? " (only in A)"
		             : "");
		for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
			if (fb_metric_applies(rows[i], d))
				line_at(rows[i], ma, mb);
	}
	printf("run-wide\n");
	line_at(FB_M_ELAPSED, a, b);
	line_at(FB_M_FAIRNESS, a, b);
	double ca = 0, cb = 0;
	bool ha = cas_per_op(a, &ca), hb = cas_per_op(b, &cb);
	line_of(FB_M_CAS_PER_OP, ha, ca, hb, cb);
	double fa = 0, fb = 0;
	ha = fb_doc_number(a, fb_metrics[FB_M_FLOOR_RATIO].json, &fa);
	hb = fb_doc_number(b, fb_metrics[FB_M_FLOOR_RATIO].json, &fb);
	if (ha || hb)
		line_of(FB_M_FLOOR_RATIO, ha, fa, hb, fb);
	else
		printf("  %-*s %*s\n", LABEL_W - 2, fb_metrics[FB_M_FLOOR_RATIO].label,
		       VALUE_W * 2 + 1, "not measured");
}

/* ---- two sweeps ---- */

typedef struct row_key {
	double threads, pause_rate;
	const char *fence, *dist;
} row_key;

static row_key key_of(json_object *row)
{
	row_key k = {0, 0, fb_doc_string(row, "fence"), fb_doc_string(row, "dist")};
	fb_doc_number(row, "threads", &k.threads);
	fb_doc_number(row, "pause_rate", &k.pause_rate);
	if (!k.fence)
		k.fence = "-";
	if (!k.dist)
		k.dist = "-";
	return k;
}

static bool key_eq(row_key x, row_key y)
{
	return x.threads == y.threads && fabs(x.pause_rate - y.pause_rate) < 1e-9 &&
	       strcmp(x.fence, y.fence) == 0 && strcmp(x.dist, y.dist) == 0;
}

static void print_key(row_key k)
{
	printf("%7.0f  %-8s %-12s %8g", k.threads, k.fence, k.dist, k.pause_rate);
}

static void print_unmatched(const char *which, row_key k)
{
	printf("only in %s: threads %g, fence %s, dist %s, pause rate %g/s\n", which, k.threads,
	       k.fence, k.dist, k.pause_rate);
}

static void compare_sweeps(json_object *a, json_object *b)
{
	json_object *ra = fb_doc_get(a, "rows"), *rb = fb_doc_get(b, "rows");
	size_t na = json_object_array_length(ra), nb = json_object_array_length(rb);
	bool *used = calloc(nb ? nb : 1, sizeof *used);
	bool *matched = calloc(na ? na : 1, sizeof *matched);
	double logsum[FB_DOC_DISCIPLINES] = {0};
	int nlog[FB_DOC_DISCIPLINES] = {0};
	size_t n = 0;
	if (!used || !matched) {
		fprintf(stderr, "fencebench compare: out of memory\n");
		goto out;
	}
	printf("\nthroughput B/A, rows matched by (threads, fence, dist, pause rate)\n");
	printf("%7s  %-8s %-12s %8s", "threads", "fence", "dist", "pause/s");
	for (int d = 0; d < FB_DOC_DISCIPLINES; d++)
		printf(" %13s", fb_doc_discipline_name[d]);
	printf("\n");
	for (size_t i = 0; i < na; i++) {
		json_object *x = json_object_array_get_idx(ra, i);
		row_key k = key_of(x);
		size_t j = 0;
		while (j < nb && (used[j] || !key_eq(k, key_of(json_object_array_get_idx(rb, j)))))
			j++;
		if (j == nb)
			continue;
		used[j] = matched[i] = true;
		n++;
		json_object *y = json_object_array_get_idx(rb, j);
		print_key(k);
		for (int d = 0; d < FB_DOC_DISCIPLINES; d++) {
			char path[64], r[32];
			snprintf(path, sizeof path, "modes.%s.%s", fb_doc_discipline_key[d],
			         fb_metrics[FB_M_THROUGHPUT].json);
			double va = 0, vb = 0;
			bool ha = fb_doc_number(x, path, &va), hb = fb_doc_number(y, path, &vb);
			printf(" %13s", ratio(r, sizeof r, ha, va, hb, vb));
			if (ha && hb && va > 0 && vb > 0) {
				logsum[d] += log(vb / va);
				nlog[d]++;
			}
		}
		printf("\n");
	}
	if (n > 1) {
		printf("%-39s", "geometric mean");
		for (int d = 0; d < FB_DOC_DISCIPLINES; d++) {
			char r[32];
			double g = nlog[d] ? exp(logsum[d] / nlog[d]) : 0;
			printf(" %13s", ratio(r, sizeof r, nlog[d] > 0, 1, nlog[d] > 0, g));
		}
		printf("\n");
	}
	printf("\nmatched %zu of A's %zu rows and B's %zu\n", n, na, nb);
	for (size_t i = 0; i < na; i++)
		if (!matched[i])
			print_unmatched("A", key_of(json_object_array_get_idx(ra, i)));
	for (size_t j = 0; j < nb; j++)
		if (!used[j])
			print_unmatched("B", key_of(json_object_array_get_idx(rb, j)));
out:
	free(used);
	free(matched);
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: fencebench compare A.json B.json\n"
	        "\n"
	        "Two fencebench documents side by side with B/A ratios: two runs (per\n"
	        "discipline throughput, writes, stale accepted, lost updates, zombie writes,\n"
	        "cycle latency; fairness, CAS retries per op, the floor ratio) or two sweeps\n"
	        "(throughput ratio per discipline for each row matched by threads, fence,\n"
	        "dist and pause rate), then every configuration key whose value differs.\n"
	        "Exit 2 for an unreadable or malformed file, a schema other than %d, a\n"
	        "document of another tool, or a run compared with a sweep.\n",
	        FB_DOC_SCHEMA);
}

int fb_compare_main(int argc, char **argv)
{
	const char *file[2] = {NULL, NULL};
	int nfile = 0;
	bool dashdash = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!dashdash && (!strcmp(a, "-h") || !strcmp(a, "--help"))) {
			usage(stdout);
			return 0;
		}
		if (!dashdash && !strcmp(a, "--")) {
			dashdash = true;
		} else if (!dashdash && a[0] == '-' && a[1]) {
			fprintf(stderr, "fencebench compare: unknown option '%s' (see --help)\n",
			        a);
			return 2;
		} else if (nfile < 2) {
			file[nfile++] = a;
		} else {
			fprintf(stderr,
			        "fencebench compare: '%s': expected exactly two documents, A and "
			        "B\n",
			        a);
			return 2;
		}
	}
	if (nfile != 2) {
		fprintf(stderr, "fencebench compare: expected two documents: fencebench compare "
		                "A.json B.json\n");
		return 2;
	}
	char why[512];
	fb_doc_kind ka, kb;
	json_object *a = fb_doc_load(file[0], &ka, why, sizeof why), *b = NULL;
	if (a)
		b = fb_doc_load(file[1], &kb, why, sizeof why);
	if (!a || !b) {
		fprintf(stderr, "fencebench compare: %s\n", why);
		json_object_put(a);
		return 2;
	}
	int code = 0;
	if (ka != kb) {
		fprintf(stderr,
		        "fencebench compare: %s is a %s and %s a %s; compare two runs or two "
		        "sweeps\n",
		        file[0], ka == FB_DOC_RUN ? "run" : "sweep", file[1],
		        kb == FB_DOC_RUN ? "run" : "sweep");
		code = 2;
		goto out;
	}
	header("A", file[0], a, ka);
	header("B", file[1], b, kb);
	if (ka == FB_DOC_RUN)
		compare_runs(a, b);
	else
		compare_sweeps(a, b);
	differences("config", a, b);
	differences("machine", a, b);
	fflush(stdout);
out:
	json_object_put(a);
	json_object_put(b);
	return code;
}
