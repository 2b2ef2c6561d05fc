#define _GNU_SOURCE
#include "plot.h"
#include "output.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compare.h"
#include "metrics.h"
#include "outfile.h"

/*
 * One color per discipline in every chart (Paul Tol's colour-blind safe
 * "vibrant" set): teal for the store that is safe, orange for the one that
 * only fences writes, red for the bare lease. The floor is a grey dash.
 * The latency phases and sweep rows use blues and magenta, never these.
 */
static const char *const discipline_color[FB_DOC_DISCIPLINES] = {"#009988", "#EE7733", "#CC3311"};
static const int discipline_pt[FB_DOC_DISCIPLINES] = {7, 9, 5};
#define FLOOR_COLOR "#666666"
/* Over time: the cycles a second in the cycle's black, the faults a band
 * of light grey behind them. */
#define OPS_COLOR   "#222222"
#define FAULT_COLOR "#BBBBBB"
#define NOTE_COLOR  "#555555"
/* Filled circle, square, triangle, diamond, then the open ones: a point
 * type per series when a sweep has several. */
static const int series_pt[] = {7, 5, 9, 13, 6, 4, 8, 12};
#define N_SERIES_PT (sizeof series_pt / sizeof series_pt[0])

/* A zero count drawn on a log axis sits on its own tic, labelled 0. */
#define ZERO_AT 0.3

typedef struct prow {
	double threads, pause_rate;
	const char *fence, *dist;
	json_object *at; /* the object holding this row's "run" and "modes" */
} prow;

typedef struct pdoc {
	const char *path;
	json_object *doc;
	fb_doc_kind kind;
	prow *rows;
	size_t n;
	bool vary_threads, vary_fence, vary_dist, vary_pause;
	char machine[320], setup[640];
} pdoc;

/* Rows that share everything but the x key, in x order. */
typedef struct series {
	size_t idx[256];
	size_t n;
	char label[128];
} series;

#define MAX_SERIES 32

typedef enum xkey { X_THREADS, X_PAUSE } xkey;

typedef enum unit { U_COUNT, U_NS } unit;

/* ---- small helpers ---- */

/* s as a gnuplot single-quoted string body: ' doubles, nothing else is
 * special there. */
static const char *sq(char *buf, size_t len, const char *s)
{
	size_t o = 0;
	for (; *s && o + 3 < len; s++) {
		if (*s == '\'')
			buf[o++] = '\'';
		buf[o++] = *s;
	}
	buf[o] = 0;
	return buf;
}

#define SQ(s) sq((char[1024]){0}, 1024, (s))

/* A tic label: 0, 20, 500k, 1.5M; 100 ns, 1 µs, 2.5 ms */
static void tic_label(char *buf, size_t len, unit u, double v)
{
	static const struct {
		double scale;
		const char *count, *ns;
	} steps[] = {{1e9, "G", " s"}, {1e6, "M", " ms"}, {1e3, "k", " µs"}, {1, "", " ns"}};
	if (v == 0) {
		snprintf(buf, len, "0");
		return;
	}
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
		if (fabs(v) >= steps[i].scale || i + 1 == sizeof steps / sizeof steps[0]) {
			snprintf(buf, len, "%.3g%s", v / steps[i].scale,
			         u == U_COUNT ? steps[i].count : steps[i].ns);
			return;
		}
}

static double nice_step(double span, int want)
{
	double raw = span / want, mag = pow(10, floor(log10(raw)));
	static const double m[] = {1, 2, 2.5, 5, 10};
	for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
		if (m[i] * mag >= raw)
			return m[i] * mag;
	return 10 * mag;
}

/*
 * One value axis over [lo, hi] (lo the smallest positive value): log when
 * the data spans more than a decade and a bit, else linear from 0. Tics are
 * written out so their labels carry k/M suffixes or time units.
 */
static void value_axis(FILE *g, const char *ax, unit u, double lo, double hi)
{
	char l[32];
	if (!(hi > 0)) {
		fprintf(g, "set %srange [0:1]\nset %stics ('0' 0)\n", ax, ax);
		return;
	}
	if (lo > 0 && hi / lo >= 20) {
		double a = pow(10, floor(log10(lo))), b = pow(10, ceil(log10(hi)));
		if (b <= a)
			b = a * 10;
		/* padded: gnuplot drops a tic that falls exactly on a log range's end */
		fprintf(g, "set logscale %s 10\nset %srange [%.17g:%.17g]\nset %stics (", ax, ax,
		        a * 0.995, b * 1.005, ax);
		bool first = true;
		for (double d = a; d <= b * 1.0001; d *= 10) {
			tic_label(l, sizeof l, u, d);
			fprintf(g, "%s'%s' %.17g", first ? "" : ", ", l, d);
			first = false;
			for (int k = 2; k < 10 && d * k < b; k++) {
				/* over a few decades, 2 and 5 get a label too */
				bool named = b / a <= 1e3 && (k == 2 || k == 5);
				tic_label(l, sizeof l, u, d * k);
				fprintf(g, ", '%s' %.17g %d", named ? l : "", d * k, named ? 0 : 1);
			}
		}
		fprintf(g, ")\n");
		return;
	}
	double step = nice_step(hi, 6), top = ceil(hi * 1.04 / step) * step;
	fprintf(g, "set %srange [0:%.17g]\nset %stics (", ax, top, ax);
	for (int i = 0; i * step <= top * 1.0001; i++) {
		tic_label(l, sizeof l, u, i * step);
		fprintf(g, "%s'%s' %.17g", i ? ", " : "", l, i * step);
	}
	fprintf(g, ")\n");
}

/* y: counts on a log axis, decades up to hi, a zero on its own tic
 * (ZERO_AT, labelled 0) below 1. */
static void count_axis(FILE *g, double hi)
{
	double top = 10;
	while (top < hi * 1.0001)
		top *= 10;
	char l[32];
	fprintf(g, "set logscale y 10\nset yrange [%g:%.17g]\nset ytics ('0' %g", ZERO_AT * 0.7,
	        top * 1.005, ZERO_AT);
	for (double d = 1; d <= top * 1.0001; d *= 10) {
		tic_label(l, sizeof l, U_COUNT, d);
		fprintf(g, ", '%s' %.17g", l, d);
		for (int m = 2; m < 10 && d * m < top; m++)
			fprintf(g, ", '' %.17g 1", d * m);
	}
	fprintf(g, ")\n");
}

static bool rnum(const prow *r, const char *path, double *v)
{
	return fb_doc_number(r->at, path, v);
}

static double xval(const prow *r, xkey x)
{
	return x == X_THREADS ? r->threads : r->pause_rate;
}

/* The distinct values of the x key, ascending. */
static size_t distinct(const pdoc *pd, xkey x, double *out, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < pd->n; i++) {
		double v = xval(&pd->rows[i], x);
		size_t j = 0;
		while (j < n && out[j] != v)
			j++;
		if (j == n && n < cap)
			out[n++] = v;
	}
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && out[j - 1] > out[j]; j--) {
			double t = out[j];
			out[j] = out[j - 1];
			out[j - 1] = t;
		}
	return n;
}

static bool same_group(const prow *a, const prow *b, xkey x)
{
	return (x == X_THREADS || a->threads == b->threads) &&
	       (x == X_PAUSE || a->pause_rate == b->pause_rate) && !strcmp(a->fence, b->fence) &&
	       !strcmp(a->dist, b->dist);
}

/* What tells a row (or a series) apart from the others: only the keys the
 * sweep varies, the x key excluded. */
static void describe(const pdoc *pd, const prow *r, int skip, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = 0;
#define PART(...)                                                                                  \
	do {                                                                                       \
		int w_ = snprintf(buf + o, len - o, "%s", o ? ", " : "");                          \
		o += w_ > 0 && (size_t)w_ < len - o ? (size_t)w_ : 0;                              \
		w_ = snprintf(buf + o, len - o, __VA_ARGS__);                                      \
		o += w_ > 0 && (size_t)w_ < len - o ? (size_t)w_ : 0;                              \
	} while (0)
	if (pd->vary_threads && skip != X_THREADS)
		PART("%g thread%s", r->threads, r->threads == 1 ? "" : "s");
	if (pd->vary_fence)
		PART("fence %s", r->fence);
	if (pd->vary_dist)
		PART("%s keys", r->dist);
	if (pd->vary_pause && skip != X_PAUSE)
		PART("%g pauses/s", r->pause_rate);
#undef PART
}

/* The rows grouped by everything but x, each group in x order. */
static size_t make_series(const pdoc *pd, xkey x, series *s, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < pd->n; i++) {
		size_t k = 0;
		while (k < n && !same_group(&pd->rows[s[k].idx[0]], &pd->rows[i], x))
			k++;
		if (k == n) {
			if (n == cap)
				continue;
			s[n].n = 0;
			describe(pd, &pd->rows[i], x, s[n].label, sizeof s[n].label);
			n++;
		}
		if (s[k].n < sizeof s[k].idx / sizeof s[k].idx[0])
			s[k].idx[s[k].n++] = i;
	}
	for (size_t k = 0; k < n; k++)
		for (size_t i = 1; i < s[k].n; i++)
			for (size_t j = i; j > 0 && xval(&pd->rows[s[k].idx[j - 1]], x) >
			                                    xval(&pd->rows[s[k].idx[j]], x);
			     j--) {
				size_t t = s[k].idx[j];
				s[k].idx[j] = s[k].idx[j - 1];
				s[k].idx[j - 1] = t;
			}
	return n;
}

/* Do the three disciplines report the same number at path in every row?
 * (They do for throughput and latency: the same workers' cycles drive all
 * three stores.) */
static bool coincide(const pdoc *pd, const char *path)
{
	char p[128];
	for (size_t i = 0; i < pd->n; i++) {
		double ref = 0, v;
		bool have = false;
		for (int d = 0; d < FB_DOC_DISCIPLINES; d++) {
			snprintf(p, sizeof p, "modes.%s.%s", fb_doc_discipline_key[d], path);
			if (!rnum(&pd->rows[i], p, &v))
				continue;
			if (!have)
				ref = v;
			else if (fabs(v - ref) > 1e-9 * fabs(ref))
				return false;
			have = true;
		}
	}
	return true;
}

static bool discipline_present(const pdoc *pd, int d)
{
	char p[64];
	snprintf(p, sizeof p, "modes.%s", fb_doc_discipline_key[d]);
	for (size_t i = 0; i < pd->n; i++)
		if (fb_doc_get(pd->rows[i].at, p))
			return true;
	return false;
}

/* Title, the two lines saying on which machine and with what, and the
 * common look. */
static void frame(FILE *g, const pdoc *pd, int w, const char *title, const char *note)
{
	fprintf(g,
	        "set label 900 '{/:Bold %s}' at screen 0.5, screen 0.955 center font ',18'\n"
	        "set label 901 '%s' at screen 0.5, screen 0.905 center font ',11.5' "
	        "tc rgb '" NOTE_COLOR "' noenhanced\n",
	        title, SQ(pd->machine));
	/* A setup line wider than the chart (about 7.6 px a character at this
	 * size) is cut at both edges: it goes on two lines, broken at the
	 * separator nearest its middle. */
	char one[sizeof pd->setup], two[sizeof pd->setup] = "";
	snprintf(one, sizeof one, "%s", pd->setup);
	size_t chars = 0;
	for (const char *c = one; *c; c++)
		chars += ((unsigned char)*c & 0xC0) != 0x80;
	if (chars * 76 > (size_t)w * 10 * 96 / 100) {
		char *best = NULL, *mid = one + strlen(one) / 2;
		for (char *c = strstr(one, "  ·  "); c; c = strstr(c + 1, "  ·  "))
			if (!best || labs(c - mid) < labs(best - mid))
				best = c;
		if (best) {
			snprintf(two, sizeof two, "%s", best + strlen("  ·  "));
			*best = 0;
		}
	}
	fprintf(g,
	        "set label 902 '%s' at screen 0.5, screen %s center font ',11.5' "
	        "tc rgb '" NOTE_COLOR "' noenhanced\n",
	        SQ(one), two[0] ? "0.875" : "0.87");
	if (two[0])
		fprintf(g,
		        "set label 904 '%s' at screen 0.5, screen 0.845 center font ',11.5' "
		        "tc rgb '" NOTE_COLOR "' noenhanced\n",
		        SQ(two));
	if (note)
		fprintf(g,
		        "set label 903 '%s' at screen 0.012, screen 0.025 left font ',10.5' "
		        "tc rgb '" NOTE_COLOR "' noenhanced\n",
		        SQ(note));
	fprintf(g,
	        "set tmargin at screen 0.81\nset bmargin at screen %s\n"
	        "set border 3 lc rgb '#444444'\nset tics nomirror out scale 0.6\n"
	        "set grid xtics ytics mytics lt 1 lc rgb '#e4e4e4' lw 1, lt 1 lc rgb '#f2f2f2' "
	        "lw 1\n"
	        "set datafile missing '?'\n"
	        "set key opaque box lc rgb '#cccccc' samplen 2.5 spacing 1.15\n",
	        note ? "0.16" : "0.12");
}

/* x: the thread counts, explicit tics, log2 when they span 4x or more. */
static void threads_axis(FILE *g, const pdoc *pd)
{
	double v[64];
	size_t n = distinct(pd, X_THREADS, v, 64);
	if (v[0] > 0 && v[n - 1] / v[0] >= 4)
		fprintf(g, "set logscale x 2\nset xrange [%.17g:%.17g]\n", v[0] / 1.3,
		        v[n - 1] * 1.3);
	else {
		double pad = (v[n - 1] - v[0]) * 0.06;
		fprintf(g, "set xrange [%.17g:%.17g]\n", v[0] - pad, v[n - 1] + pad);
	}
	fprintf(g, "set xtics (");
	for (size_t i = 0; i < n; i++)
		fprintf(g, "%s'%g' %.17g", i ? ", " : "", v[i], v[i]);
	fprintf(g, ")\nset xlabel 'worker threads'\n");
}

/*
 * One column per discipline at mode_path (and the floor, if floor_path),
 * a data block per series. Lines that coincide are drawn wide to narrow
 * (unfenced, write-fenced, fenced), so each colour shows as a stripe.
 */
static void per_discipline(FILE *g, const pdoc *pd, fb_metric_id id, const char *floor_path)
{
	const char *mode_path = fb_metrics[id].json;
	unit u = fb_metrics[id].unit == FB_UNIT_NS ? U_NS : U_COUNT;
	series s[MAX_SERIES];
	size_t ns = make_series(pd, X_THREADS, s, MAX_SERIES);
	/* The key has a column of its own right of the plot, whatever its
	 * length: left to gnuplot, 24 entries took two columns and squeezed
	 * the plot to a sliver. */
	fprintf(g, "set lmargin at screen 0.08\nset rmargin at screen %s\n",
	        ns > 2 ? "0.56" : "0.66");
	double lo = INFINITY, hi = 0;
	bool floor_any = false;
	char p[128];
	for (size_t k = 0; k < ns; k++) {
		fprintf(g, "$s%zu << EOD\n", k);
		for (size_t i = 0; i < s[k].n; i++) {
			const prow *r = &pd->rows[s[k].idx[i]];
			fprintf(g, "%.17g", r->threads);
			for (int d = 0; d < FB_DOC_DISCIPLINES + (floor_path != NULL); d++) {
				double v;
				bool have;
				if (d < FB_DOC_DISCIPLINES) {
					snprintf(p, sizeof p, "modes.%s.%s",
					         fb_doc_discipline_key[d], mode_path);
					have = rnum(r, p, &v);
				} else {
					have = rnum(r, floor_path, &v) && v > 0;
					floor_any |= have;
				}
				if (have && v > 0) {
					lo = v < lo ? v : lo;
					hi = v > hi ? v : hi;
				}
				if (have && (v > 0 || u == U_COUNT))
					fprintf(g, " %.17g", v);
				else
					fprintf(g, " ?");
			}
			fprintf(g, "\n");
		}
		fprintf(g, "EOD\n");
	}
	threads_axis(g, pd);
	value_axis(g, "y", u, lo, hi);
	fprintf(g, "set ylabel '%s'\n", fb_metrics[id].axis);
	bool halo = coincide(pd, mode_path);
	/* Coinciding stores in many series: one key entry a series (its
	 * stripes), the colours said once; else one a line. */
	bool collapse = halo && ns > 2;
	/* drawn last series first, so that the inverted key lists the first
	 * series first and, within it, fenced first */
	fprintf(g, "set key at screen %s, screen 0.81 left top Left reverse invert%s\nplot ",
	        ns > 2 ? "0.58" : "0.68", ns > 2 ? " font ',10'" : "");
	bool first = true;
	for (size_t k = ns; k-- > 0;) {
		int pt = ns > 1 ? series_pt[k % N_SERIES_PT] : -1;
		for (int d = FB_DOC_DISCIPLINES - 1; d >= 0; d--) {
			if (!discipline_present(pd, d))
				continue;
			double lw = halo ? 2.0 + 3.2 * d : 2.2, ps = halo ? 0.8 + 0.6 * d : 1.1;
			char title[192];
			snprintf(title, sizeof title, "%s%s%s",
			         collapse ? "the stores" : fb_doc_discipline_name[d],
			         ns > 1 ? ", " : "", ns > 1 ? s[k].label : "");
			fprintf(g,
			        "%s$s%zu using 1:%d with linespoints lc rgb '%s' lw %.2f pt %d "
			        "ps %.2f ",
			        first ? "" : ", \\\n     ", k, d + 2, discipline_color[d], lw,
			        pt >= 0 ? pt : discipline_pt[d], ps);
			if (collapse && d != FB_DOC_DISCIPLINES - 1)
				fprintf(g, "notitle");
			else
				fprintf(g, "title '%s' noenhanced", SQ(title));
			first = false;
		}
		if (floor_path && floor_any)
			fprintf(g,
			        ", \\\n     $s%zu using 1:5 with linespoints lc rgb '" FLOOR_COLOR
			        "' lw 1.6 dt (7,5) pt %d ps 0.8 title 'floor: raw CAS "
			        "pipeline%s%s' "
			        "noenhanced",
			        k, pt >= 0 ? pt : 6, ns > 1 ? ", " : "",
			        ns > 1 ? SQ(s[k].label) : "");
	}
	/* listed first (the key is inverted): what each colour of a stripe is */
	for (int d = FB_DOC_DISCIPLINES; collapse && d-- > 0;)
		if (discipline_present(pd, d))
			fprintf(g,
			        ", \\\n     NaN with lines lc rgb '%s' lw 4 title '%s%s' "
			        "noenhanced",
			        discipline_color[d], fb_doc_discipline_name[d],
			        d == 0                        ? " (inside)"
			        : d == FB_DOC_DISCIPLINES - 1 ? " (outside)"
			                                      : "");
	fprintf(g, "\n");
}

/* ---- the charts ---- */

typedef int (*chart_fn)(const pdoc *pd, FILE *g, int *w, int *h, char *why, size_t len);

/* A per-discipline chart's width: wider for many series, whose key is
 * wider too. */
static int key_width(const pdoc *pd)
{
	series s[MAX_SERIES];
	return make_series(pd, X_THREADS, s, MAX_SERIES) > 2 ? 1300 : 1100;
}

static bool threads_sweep(const pdoc *pd, char *why, size_t len)
{
	double v[2];
	if (pd->kind == FB_DOC_SWEEP && distinct(pd, X_THREADS, v, 2) >= 2)
		return true;
	snprintf(why, len, "%s",
	         pd->kind == FB_DOC_RUN ? "a single run, not a sweep over threads"
	                                : "the sweep has one thread count");
	return false;
}

static const char *same_workers_note = "The three stores are driven by the same workers' "
                                       "cycles, so their lines coincide (drawn as stripes: "
                                       "fenced inside write-fenced inside unfenced).";

/* Metric id against worker threads, a line per discipline (and series),
 * the floor's beside it where floor_path names it. */
static int chart_threads(const pdoc *pd, FILE *g, int *w, char *why, size_t len, const char *title,
                         fb_metric_id id, const char *floor_path)
{
	if (!threads_sweep(pd, why, len))
		return 1;
	*w = key_width(pd); /* the key sits outside, on the right */
	frame(g, pd, *w, title, coincide(pd, fb_metrics[id].json) ? same_workers_note : NULL);
	per_discipline(g, pd, id, floor_path);
	return 0;
}

static int chart_throughput(const pdoc *pd, FILE *g, int *w, int *h, char *why, size_t len)
{
	(void)h;
	return chart_threads(pd, g, w, why, len, "Throughput against worker threads",
	                     FB_M_THROUGHPUT, fb_metrics[FB_M_FLOOR].json);
}

static int chart_cycle_p99(const pdoc *pd, FILE *g, int *w, int *h, char *why, size_t len)
{
	(void)h;
	return chart_threads(pd, g, w, why, len, "Cycle latency p99 against worker threads",
	                     FB_M_CYCLE_P99, NULL);
}

static const struct {
	const char *key, *label;
	double x; /* 1/(1-p); the max drawn one decade past p99.99 */
} pctl[] = {{"p50", "p50", 2},       {"p90", "p90", 10},       {"p99", "p99", 100},
            {"p999", "p99.9", 1000}, {"p9999", "p99.99", 1e4}, {"max", "max", 1e5}};
#define N_PCTL (sizeof pctl / sizeof pctl[0])

static const char *const phase[] = {"acquire", "write", "cycle"};
static const char *const phase_color[] = {"#0077BB", "#EE3377", "#222222"};

/* The first discipline's histogram (they are the same cycles' in every
 * discipline); false if the row has none. */
static bool latency_of(const prow *r, const char *ph, const char **mode)
{
	char p[128];
	for (int d = 0; d < FB_DOC_DISCIPLINES; d++) {
		snprintf(p, sizeof p, "modes.%s.latency_ns.%s", fb_doc_discipline_key[d], ph);
		if (fb_doc_get(r->at, p)) {
			*mode = fb_doc_discipline_key[d];
			return true;
		}
	}
	return false;
}

/* Blues from light to dark: the i-th of n (thread counts or pause rates). */
static void ramp(char *buf, size_t len, size_t i, size_t n)
{
	static const int from[3] = {0x6b, 0xae, 0xd6}, to[3] = {0x08, 0x30, 0x6b};
	double t = n > 1 ? (double)i / (double)(n - 1) : 1.0;
	int c[3];
	for (int k = 0; k < 3; k++)
		c[k] = (int)lround(from[k] + (to[k] - from[k]) * t);
	snprintf(buf, len, "#%02X%02X%02X", c[0], c[1], c[2]);
}

static void percentile_axis(FILE *g)
{
	fprintf(g, "set logscale x 10\nset xrange [1.5:1.6e5]\nset xtics (");
	for (size_t i = 0; i < N_PCTL; i++)
		fprintf(g, "%s'%s' %g", i ? ", " : "", pctl[i].label, pctl[i].x);
	fprintf(g, ")\nset xlabel 'percentile (spaced by 1/(1 − p); max one step past p99.99)'\n");
}

/* One data block per row and phase: x = 1/(1-p), y = ns. */
static void spectrum_data(FILE *g, const pdoc *pd, double *lo, double *hi)
{
	char p[160];
	for (size_t i = 0; i < pd->n; i++)
		for (size_t f = 0; f < 3; f++) {
			const char *mode;
			if (!latency_of(&pd->rows[i], phase[f], &mode))
				continue;
			fprintf(g, "$r%zu_%zu << EOD\n", i, f);
			for (size_t q = 0; q < N_PCTL; q++) {
				double v;
				snprintf(p, sizeof p, "modes.%s.latency_ns.%s.%s", mode, phase[f],
				         pctl[q].key);
				if (rnum(&pd->rows[i], p, &v) && v > 0) {
					fprintf(g, "%g %.17g\n", pctl[q].x, v);
					*lo = v < *lo ? v : *lo;
					*hi = v > *hi ? v : *hi;
				}
			}
			fprintf(g, "EOD\n");
		}
}

static int chart_latency(const pdoc *pd, FILE *g, int *w, int *h, char *why, size_t len)
{
	const char *mode;
	bool any = false;
	for (size_t i = 0; i < pd->n; i++)
		any |= latency_of(&pd->rows[i], "cycle", &mode);
	if (!any) {
		snprintf(why, len, "no latency histograms in the document");
		return 1;
	}
	double lo = INFINITY, hi = 0, every = 0;
	char note[160] = "The same cycles drive all three stores: one spectrum per phase.";
	json_object *ls = fb_doc_get(pd->doc, "config.latency_sample");
	if (ls && (every = json_object_get_double(ls)) > 1)
		snprintf(note, sizeof note,
		         "One cycle in %g is timed (--sample); the same cycles drive all three "
		         "stores: one spectrum per phase.",
		         every);
	spectrum_data(g, pd, &lo, &hi);
	if (pd->kind == FB_DOC_RUN) {
		frame(g, pd, *w, "Latency percentiles: acquire, write and the whole cycle", note);
		percentile_axis(g);
		value_axis(g, "y", U_NS, lo, hi);
		fprintf(g, "set ylabel 'latency'\nset key top left Left reverse\nplot ");
		for (size_t f = 0; f < 3; f++)
			fprintf(g,
			        "%s$r0_%zu with linespoints lc rgb '%s' lw 2.2 pt %d ps 1.1 "
			        "title '%s'",
			        f ? ", \\\n     " : "", f, phase_color[f], discipline_pt[f],
			        phase[f]);
		fprintf(g, "\n");
		return 0;
	}
	/* A sweep: one panel per phase on a shared latency axis, a line per
	 * row, coloured by thread count (or pause rate), shaped by the rest. */
	/* the key a column of its own right of the three panels (inside the
	 * first, it covered its lines), as wide as its longest label */
	size_t longest = 0;
	for (size_t r = 0; r < pd->n; r++) {
		char label[192];
		describe(pd, &pd->rows[r], -1, label, sizeof label);
		longest = strlen(label) > longest ? strlen(label) : longest;
	}
	int key_px = 110 + (int)longest * 8;
	*w = 1440 + key_px;
	*h = 620;
	double right = 1440.0 / *w;
	xkey primary = pd->vary_threads ? X_THREADS : X_PAUSE;
	double pv[64];
	size_t np = distinct(pd, primary, pv, 64);
	frame(g, pd, *w, "Latency percentiles: acquire, write and cycle, a line per sweep row",
	      note);
	fprintf(g,
	        "set tmargin\nset bmargin\n"
	        "set multiplot layout 1,3 margins 0.06,%.3f,0.16,0.80 spacing 0.04,0\n",
	        right - 0.01);
	percentile_axis(g);
	value_axis(g, "y", U_NS, lo, hi);
	series others[MAX_SERIES];
	size_t nothers = make_series(pd, primary, others, MAX_SERIES);
	for (size_t f = 0; f < 3; f++) {
		if (f == 0) {
			fprintf(g,
			        "set ylabel 'latency'\nset key at screen %.3f, screen 0.80 left "
			        "top Left reverse font ',10.5'\n",
			        right + 0.005);
			fprintf(g, "set title '{/:Bold acquire}' font ',14' offset 0,-0.4\n");
		} else {
			fprintf(g, "unset ylabel\nunset key\nunset label\n");
			fprintf(g, "set title '{/:Bold %s}' font ',14' offset 0,-0.4\n", phase[f]);
		}
		fprintf(g, "plot ");
		bool first = true;
		for (size_t k = 0; k < nothers; k++)
			for (size_t i = 0; i < others[k].n; i++) {
				size_t r = others[k].idx[i];
				if (!latency_of(&pd->rows[r], phase[f], &mode))
					continue;
				size_t c = 0;
				while (c < np && pv[c] != xval(&pd->rows[r], primary))
					c++;
				char color[16], label[192];
				ramp(color, sizeof color, c, np);
				describe(pd, &pd->rows[r], -1, label, sizeof label);
				fprintf(g,
				        "%s$r%zu_%zu with linespoints lc rgb '%s' lw 1.8 pt %d ps "
				        "0.9 "
				        "title '%s' noenhanced",
				        first ? "" : ", \\\n     ", r, f, color,
				        series_pt[k % N_SERIES_PT],
				        SQ(label[0] ? label : "the run"));
				first = false;
			}
		if (first)
			fprintf(g, "NaN notitle");
		fprintf(g, "\n");
	}
	fprintf(g, "unset multiplot\n");
	return 0;
}

static int chart_corruption(const pdoc *pd, FILE *g, int *w, int *h, char *why, size_t len)
{
	*w = 1100; /* the key sits outside, on the right */
	(void)h;
	double xs[64];
	size_t nx = pd->kind == FB_DOC_SWEEP ? distinct(pd, X_PAUSE, xs, 64) : 0;
	if (nx < 2) {
		snprintf(why, len, "%s",
		         pd->kind == FB_DOC_RUN ? "a single run, not a sweep over pause rates"
		                                : "the sweep has one pause rate");
		return 1;
	}
	/* x: the pause rates; log when the non-zero ones span a decade, 0 then
	 * sitting on its own tic left of the smallest. */
	double minnz = 0;
	for (size_t i = 0; i < nx; i++)
		if (xs[i] > 0 && (minnz == 0 || xs[i] < minnz))
			minnz = xs[i];
	bool logx = minnz > 0 && xs[nx - 1] / minnz >= 10;
	double x0 = logx ? minnz / 4 : 0;
	/* a line per discipline and metric; fenced's is the sum of two, named
	 * by the first's label and the second's phrase */
	static const struct {
		int d;
		fb_metric_id m, plus; /* plus: FB_METRICS when none */
		double lw;
		int pt;
	} lines[] = {
	        {2, FB_M_LOST_UPDATES, FB_METRICS, 2.6, 7},
	        {2, FB_M_STALE_ACCEPTED, FB_METRICS, 1.6, 8},
	        {1, FB_M_LOST_UPDATES, FB_METRICS, 2.6, 5},
	        {0, FB_M_STALE_ACCEPTED, FB_M_LOST_UPDATES, 2.6, 13},
	};
	series s[MAX_SERIES];
	size_t ns = make_series(pd, X_PAUSE, s, MAX_SERIES);
	double hi = 0;
	char p[128];
	for (size_t k = 0; k < ns; k++) {
		fprintf(g, "$s%zu << EOD\n", k);
		for (size_t i = 0; i < s[k].n; i++) {
			const prow *r = &pd->rows[s[k].idx[i]];
			fprintf(g, "%.17g", logx && r->pause_rate <= 0 ? x0 : r->pause_rate);
			for (size_t l = 0; l < sizeof lines / sizeof lines[0]; l++) {
				const char *key = fb_doc_discipline_key[lines[l].d];
				double v = 0, v2 = 0;
				bool have;
				snprintf(p, sizeof p, "modes.%s.%s", key,
				         fb_metrics[lines[l].m].json);
				have = rnum(r, p, &v);
				if (lines[l].plus != FB_METRICS) {
					snprintf(p, sizeof p, "modes.%s.%s", key,
					         fb_metrics[lines[l].plus].json);
					have = rnum(r, p, &v2) && have;
					v += v2;
				}
				hi = have && v > hi ? v : hi;
				if (have)
					fprintf(g, " %.17g", v > 0 ? v : ZERO_AT);
				else
					fprintf(g, " ?");
			}
			fprintf(g, "\n");
		}
		fprintf(g, "EOD\n");
	}
	frame(g, pd, *w, "Corruption against pause rate",
	      "Counts over each run; a zero sits on the 0 tic below 1. "
	      "Fenced must stay at 0: anything else is a bug.");
	if (logx)
		fprintf(g, "set logscale x 10\nset xrange [%.17g:%.17g]\n", x0 / 1.6,
		        xs[nx - 1] * 1.6);
	else
		fprintf(g, "set xrange [%.17g:%.17g]\n", xs[0] - (xs[nx - 1] - xs[0]) * 0.05,
		        xs[nx - 1] + (xs[nx - 1] - xs[0]) * 0.05);
	fprintf(g, "set xtics (");
	for (size_t i = 0; i < nx; i++)
		fprintf(g, "%s'%g' %.17g", i ? ", " : "", xs[i], logx && xs[i] <= 0 ? x0 : xs[i]);
	fprintf(g, ")\nset xlabel 'injected pauses per second'\n");
	count_axis(g, hi);
	fprintf(g, "set ylabel 'count (log scale)'\nset key outside right top Left reverse\nplot ");
	bool first = true;
	for (size_t k = 0; k < ns; k++)
		for (size_t li = 0; li < sizeof lines / sizeof lines[0]; li++) {
			if (!discipline_present(pd, lines[li].d))
				continue;
			char title[192];
			const fb_metric *m = &fb_metrics[lines[li].m];
			if (lines[li].plus == FB_METRICS)
				snprintf(title, sizeof title, "%s: %s",
				         fb_doc_discipline_name[lines[li].d], m->phrase);
			else
				snprintf(title, sizeof title, "%s: %s + %s",
				         fb_doc_discipline_name[lines[li].d], m->label,
				         fb_metrics[lines[li].plus].phrase);
			size_t tl = strlen(title);
			snprintf(title + tl, sizeof title - tl, "%s%s", ns > 1 ? ", " : "",
			         ns > 1 ? s[k].label : "");
			fprintf(g,
			        "%s$s%zu using 1:%zu with linespoints lc rgb '%s' lw %.1f pt %d "
			        "ps 1.2 title '%s' noenhanced",
			        first ? "" : ", \\\n     ", k, li + 2,
			        discipline_color[lines[li].d], lines[li].lw,
			        ns > 1 && lines[li].d != 2 ? series_pt[k % N_SERIES_PT]
			                                   : lines[li].pt,
			        SQ(title));
			first = false;
		}
	if (first)
		fprintf(g, "NaN notitle");
	fprintf(g, "\n");
	return 0;
}

/* ---- the time series of a run ---- */

/* The document's "series" (results/README.md): the columns, NULL where
 * absent; n entries. */
typedef struct tseries {
	json_object *t, *rate, *faults;
	json_object *stale[FB_DOC_DISCIPLINES], *lost[FB_DOC_DISCIPLINES];
	size_t n;
	bool any_lost;
} tseries;

static json_object *column(json_object *doc_series, const char *path)
{
	json_object *a = fb_doc_get(doc_series, path);
	return a && json_object_is_type(a, json_type_array) ? a : NULL;
}

/* Entry i of column a, NAN where there is none. */
static double entry(json_object *a, size_t i)
{
	json_object *x =
	        a && i < json_object_array_length(a) ? json_object_array_get_idx(a, i) : NULL;
	return x && (json_object_is_type(x, json_type_int) ||
	             json_object_is_type(x, json_type_double))
	               ? json_object_get_double(x)
	               : NAN;
}

/* v for a data block: '?' (missing) when it is not a number. */
static const char *num(char *buf, size_t len, double v)
{
	snprintf(buf, len, isfinite(v) ? "%.17g" : "?", v);
	return buf;
}

#define NUM(v) num((char[32]){0}, 32, (v))

static bool load_series(const pdoc *pd, tseries *ts, char *why, size_t len)
{
	memset(ts, 0, sizeof *ts);
	if (pd->kind != FB_DOC_RUN) {
		snprintf(why, len, "a sweep: each row's series is in its JSON, charted for runs");
		return false;
	}
	json_object *s = fb_doc_get(pd->doc, "series");
	ts->t = column(s, "t_s");
	ts->n = ts->t ? json_object_array_length(ts->t) : 0;
	if (!ts->n) {
		snprintf(why, len,
		         "no time series in the document (a fencebench older than "
		         "its \"series\")");
		return false;
	}
	ts->rate = column(s, fb_metrics[FB_M_THROUGHPUT].csv); /* the series' name: the CSV's */
	ts->faults = column(s, "faults");
	char p[96];
	for (int d = 0; d < FB_DOC_DISCIPLINES; d++) {
		snprintf(p, sizeof p, "modes.%s.%s", fb_doc_discipline_key[d],
		         fb_metrics[FB_M_STALE_ACCEPTED].json);
		ts->stale[d] = column(s, p);
		snprintf(p, sizeof p, "modes.%s.%s", fb_doc_discipline_key[d],
		         fb_metrics[FB_M_LOST_UPDATES].json);
		ts->lost[d] = column(s, p);
		ts->any_lost |= ts->lost[d] != NULL;
	}
	return true;
}

/*
 * $rate: a line a second: t, ops/s over the second before, and the faults
 * taken in it as a box (its centre, its width, faults/s).
 */
static void rate_block(FILE *g, const tseries *ts, double *hi_ops, double *hi_faults)
{
	double t0 = 0, f0 = 0;
	fprintf(g, "$rate << EOD\n# t_s ops_per_s box_centre box_width faults_per_s\n");
	for (size_t i = 0; i < ts->n; i++) {
		double t = entry(ts->t, i), r = entry(ts->rate, i), f = entry(ts->faults, i);
		double fr = t > t0 ? (f - f0) / (t - t0) : NAN;
		*hi_ops = r > *hi_ops ? r : *hi_ops;
		*hi_faults = fr > *hi_faults ? fr : *hi_faults;
		fprintf(g, "%.17g %s %.17g %.17g %s\n", t, NUM(r), (t0 + t) / 2, t - t0, NUM(fr));
		t0 = t;
		f0 = isfinite(f) ? f : f0;
	}
	fprintf(g, "EOD\n");
}

/*
 * $cum: t, then per discipline the stale writes accepted and the updates
 * lost so far: from nothing at 0 through every second to the totals of
 * "modes" at elapsed_s (counted once the writes in flight had landed), so
 * the lines end at the numbers of the summary table.
 */
/* The two counts the chart follows: k 0 and 1. */
static const fb_metric_id cum_metric[2] = {FB_M_STALE_ACCEPTED, FB_M_LOST_UPDATES};

static void cum_block(FILE *g, const pdoc *pd, const tseries *ts, double hi[2])
{
	char p[96];
	double end = ts->n ? entry(ts->t, ts->n - 1) : 0;
	fb_doc_number(pd->doc, "elapsed_s", &end);
	fprintf(g, "$cum << EOD\n# t_s");
	for (int d = 0; d < FB_DOC_DISCIPLINES; d++)
		fprintf(g, " %s:%s %s:%s", fb_doc_discipline_key[d],
		        fb_metrics[FB_M_STALE_ACCEPTED].json, fb_doc_discipline_key[d],
		        fb_metrics[FB_M_LOST_UPDATES].json);
	fprintf(g, "\n");
	for (size_t i = 0; i <= ts->n + 1; i++) {
		double t = i == 0 ? 0 : i <= ts->n ? entry(ts->t, i - 1) : end;
		fprintf(g, "%.17g", t);
		for (int d = 0; d < FB_DOC_DISCIPLINES; d++)
			for (int k = 0; k < 2; k++) {
				json_object *col = k ? ts->lost[d] : ts->stale[d];
				double v = NAN;
				snprintf(p, sizeof p, "modes.%s.%s", fb_doc_discipline_key[d],
				         fb_metrics[cum_metric[k]].json);
				if (col)
					v = i == 0 ? 0 : i <= ts->n ? entry(col, i - 1) : NAN;
				if (col && i > ts->n && !fb_doc_number(pd->doc, p, &v))
					v = NAN;
				hi[k] = v > hi[k] ? v : hi[k];
				fprintf(g, " %s", NUM(v));
			}
		fprintf(g, "\n");
	}
	fprintf(g, "EOD\n");
}

/* Whether discipline d's column k (0 stale, 1 lost) and e's hold the same
 * numbers throughout: drawn as stripes, e inside d. */
static bool same_column(const tseries *ts, int k, int d, int e)
{
	json_object *a = k ? ts->lost[d] : ts->stale[d], *b = k ? ts->lost[e] : ts->stale[e];
	if (!a || !b)
		return false;
	for (size_t i = 0; i < ts->n; i++)
		if (entry(a, i) != entry(b, i))
			return false;
	return true;
}

/* One panel of the chart: its place on the page, the key beside it. */
static void panel(FILE *g, double top, double bottom, bool bottom_axis)
{
	fprintf(g,
	        "set tmargin at screen %g\nset bmargin at screen %g\n"
	        "set lmargin at screen 0.095\nset rmargin at screen 0.69\n"
	        "set key at screen 0.765, screen %g left top Left reverse\n",
	        top, bottom, top);
	if (bottom_axis)
		fprintf(g, "set format x '%%g'\nset xlabel 'seconds since the start'\n");
	else
		fprintf(g, "set format x ''\nunset xlabel\n");
}

/* Throughput a second, and the faults a second as a grey band behind it
 * (right axis, scaled so that the band keeps to the lower part). */
static void throughput_panel(FILE *g, const tseries *ts)
{
	double hi_ops = 0, hi_faults = 0;
	rate_block(g, ts, &hi_ops, &hi_faults);
	panel(g, 0.83, 0.615, false);
	value_axis(g, "y", U_COUNT, 0, hi_ops);
	fprintf(g, "set ylabel '%s'\n", fb_metrics[FB_M_THROUGHPUT].label);
	double step = nice_step(hi_faults > 0 ? hi_faults : 1, 3);
	fprintf(g, "set y2range [0:%.17g]\nset y2tics (", (hi_faults > 0 ? hi_faults : 1) * 2.5);
	for (int i = 0; i * step <= hi_faults * 1.0001 || i == 0; i++)
		fprintf(g, "%s'%g' %.17g", i ? ", " : "", i * step, i * step);
	fprintf(g,
	        ") nomirror tc rgb '" NOTE_COLOR "'\n"
	        "set y2label 'faults taken per second' tc rgb '" NOTE_COLOR "'\n"
	        "set style fill solid 0.45 noborder\n"
	        "plot $rate using 3:5:4 axes x1y2 with boxes lc rgb '" FAULT_COLOR "' "
	        "title 'faults/s (right axis)', \\\n"
	        "     $rate using 1:2 with linespoints lc rgb '" OPS_COLOR "' lw 2 pt 7 "
	        "ps %.1f title 'ops/s (all stores)'\n"
	        "unset y2tics\nunset y2label\n",
	        ts->n > 60 ? 0.0 : 0.5);
}

/* Stale writes accepted (k 0) or updates lost (k 1) so far, a line per
 * discipline, fenced inside write-fenced inside unfenced where they
 * coincide; on a log axis with 0 on its own tic. */
static void count_panel(FILE *g, const tseries *ts, int k, double hi, double top, double bottom)
{
	panel(g, top, bottom, k == 1);
	count_axis(g, hi);
	fprintf(g, "set ylabel '%s so far (log)'\nplot ", fb_metrics[cum_metric[k]].phrase);
	bool first = true;
	for (int d = FB_DOC_DISCIPLINES - 1; d >= 0; d--) {
		if (!(k ? ts->lost[d] : ts->stale[d]))
			continue;
		int under = 0; /* narrower lines drawn over this one */
		for (int e = 0; e < d; e++)
			under += same_column(ts, k, d, e);
		fprintf(g,
		        "%s$cum using 1:($%d > 0 ? $%d : %g) with linespoints lc rgb '%s' "
		        "lw %.1f pt %d ps %.1f title '%s'",
		        first ? "" : ", \\\n     ", 2 + 2 * d + k, 2 + 2 * d + k, ZERO_AT,
		        discipline_color[d], 2.2 + 3.2 * under, discipline_pt[d],
		        ts->n > 60 ? 0.0 : 0.8, fb_doc_discipline_name[d]);
		first = false;
	}
	if (first)
		fprintf(g, "NaN title 'not checked (--no-check, or a shared run)'");
	fprintf(g, "\n");
}

static int chart_timeseries(const pdoc *pd, FILE *g, int *w, int *h, char *why, size_t len)
{
	tseries ts;
	if (!load_series(pd, &ts, why, len))
		return 1;
	*w = 1100; /* the keys sit outside, on the right */
	*h = 1000;
	frame(g, pd, *w, "Over time: throughput, stale writes accepted and updates lost",
	      "Each line ends at the run's totals, counted once the writes in flight had "
	      "landed. Fenced must stay at 0: anything else is a bug.");
	double hi[2] = {0, 0}, end = 0;
	cum_block(g, pd, &ts, hi);
	fb_doc_number(pd->doc, "elapsed_s", &end);
	fprintf(g, "set xrange [0:%.17g]\nset multiplot\n", end > 0 ? end : 1);
	throughput_panel(g, &ts);
	/* the frame's labels are drawn once, with the first panel */
	fprintf(g, "unset label\n");
	count_panel(g, &ts, 0, hi[0], 0.575, 0.36);
	count_panel(g, &ts, 1, hi[1], 0.32, 0.105);
	fprintf(g, "unset multiplot\n");
	return 0;
}

static const struct {
	const char *name;
	chart_fn fn;
} charts[] = {
        {"throughput", chart_throughput}, {"cycle-p99", chart_cycle_p99},
        {"latency", chart_latency},       {"corruption", chart_corruption},
        {"timeseries", chart_timeseries},
};

/* ---- the document ---- */

/* A config value that is one value: a scalar, or a list of one. */
static json_object *scalar(json_object *v)
{
	if (v && json_object_is_type(v, json_type_array))
		return json_object_array_length(v) == 1 ? json_object_array_get_idx(v, 0) : NULL;
	return v;
}

static bool cfg_num(const pdoc *pd, const char *key, double *v)
{
	json_object *x = scalar(fb_doc_get(fb_doc_get(pd->doc, "config"), key));
	if (!x ||
	    !(json_object_is_type(x, json_type_int) || json_object_is_type(x, json_type_double)))
		return false;
	*v = json_object_get_double(x);
	return true;
}

static const char *cfg_str(const pdoc *pd, const char *key)
{
	json_object *x = scalar(fb_doc_get(fb_doc_get(pd->doc, "config"), key));
	return x && json_object_is_type(x, json_type_string) ? json_object_get_string(x) : NULL;
}

static bool has_fault(const pdoc *pd, const char *name)
{
	json_object *f = fb_doc_get(pd->doc, "config.faults");
	if (!f || !json_object_is_type(f, json_type_array))
		return strcmp(name, "pause") == 0; /* the default */
	for (size_t i = 0; i < json_object_array_length(f); i++) {
		const char *s = json_object_get_string(json_object_array_get_idx(f, i));
		if (s && !strcmp(s, name))
			return true;
	}
	return false;
}

/* "AMD EPYC, 2 cores, Linux 6.1 x86_64, fencebench 0.3.0" and the run's
 * settings that hold for every point of the chart. */
static void describe_setup(pdoc *pd)
{
	const char *cpu = fb_doc_string(pd->doc, "machine.cpu"),
	           *kernel = fb_doc_string(pd->doc, "machine.kernel"),
	           *ver = fb_doc_string(pd->doc, "version"), *s;
	double v, v2, cores = 0;
	size_t o = 0;
	char *b = pd->machine;
	size_t len = sizeof pd->machine;
#define ADD(...)                                                                                   \
	do {                                                                                       \
		int w_ = snprintf(b + o, len - o, __VA_ARGS__);                                    \
		o += w_ > 0 && (size_t)w_ < len - o ? (size_t)w_ : 0;                              \
	} while (0)
	ADD("%s", cpu ? cpu : "unknown CPU");
	if (fb_doc_number(pd->doc, "machine.cores", &cores))
		ADD(", %g cores", cores);
	if (kernel)
		ADD("  ·  %s", kernel);
	if (ver)
		ADD("  ·  fencebench %s", ver);
	b = pd->setup;
	len = sizeof pd->setup;
	o = 0;
	if (!pd->vary_threads && cfg_num(pd, "threads", &v))
		ADD("%g thread%s  ·  ", v, v == 1 ? "" : "s");
	if (cfg_num(pd, "keys", &v))
		ADD("%g keys", v);
	if (!pd->vary_dist && (s = cfg_str(pd, "dist")))
		ADD(" (%s)", s);
	if (cfg_num(pd, "ttl_ms", &v))
		ADD("  ·  ttl %g ms", v);
	if (has_fault(pd, "pause") && !pd->vary_pause && cfg_num(pd, "pause_rate", &v) && v == 0) {
		ADD("  ·  no pauses"); /* a size and a place of none mean nothing */
	} else if (has_fault(pd, "pause")) {
		if (!pd->vary_pause && cfg_num(pd, "pause_rate", &v))
			ADD("  ·  pauses %g/s", v);
		else
			ADD("  ·  pauses");
		if (cfg_num(pd, "pause_min_ms", &v) && cfg_num(pd, "pause_max_ms", &v2))
			ADD(v == v2 ? " × %g ms" : " × %g–%g ms", v, v2);
		if ((s = cfg_str(pd, "fault_at")))
			ADD(" at %s", s);
	}
	static const char *const other[] = {"skew", "delay", "crash", "renew"};
	for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
		if (has_fault(pd, other[i]))
			ADD("  ·  %s faults", other[i]);
	if (!pd->vary_fence && (s = cfg_str(pd, "fence")))
		ADD("  ·  fence %s", s);
	if ((s = cfg_str(pd, "op")))
		ADD("  ·  op %s", s);
	if (cfg_num(pd, "duration_s", &v))
		ADD("  ·  %g s %s", v, pd->kind == FB_DOC_SWEEP ? "per point" : "run");
	if (cfg_num(pd, "seed", &v))
		ADD("  ·  seed %g", v);
	json_object *intr = fb_doc_get(pd->doc, "interrupted");
	if (intr && json_object_get_boolean(intr))
		ADD("  ·  INTERRUPTED (partial numbers)");
#undef ADD
}

static prow row_of(json_object *at, json_object *doc, bool top)
{
	prow r = {0, 0, NULL, NULL, at};
	json_object *src = top ? fb_doc_get(doc, "config") : at;
	fb_doc_number(src, "threads", &r.threads);
	fb_doc_number(src, "pause_rate", &r.pause_rate);
	r.fence = fb_doc_string(src, "fence");
	r.dist = fb_doc_string(src, "dist");
	if (!r.fence)
		r.fence = "-";
	if (!r.dist)
		r.dist = "-";
	return r;
}

static int load_rows(pdoc *pd)
{
	json_object *rows = fb_doc_get(pd->doc, "rows");
	size_t n = pd->kind == FB_DOC_SWEEP ? json_object_array_length(rows) : 1;
	pd->rows = calloc(n ? n : 1, sizeof *pd->rows);
	if (!pd->rows)
		return -1;
	for (size_t i = 0; i < n; i++) {
		json_object *at =
		        pd->kind == FB_DOC_SWEEP ? json_object_array_get_idx(rows, i) : pd->doc;
		if (at && json_object_is_type(at, json_type_object) && fb_doc_get(at, "modes"))
			pd->rows[pd->n++] = row_of(at, pd->doc, pd->kind == FB_DOC_RUN);
	}
	for (size_t i = 1; i < pd->n; i++) {
		const prow *a = &pd->rows[0], *b = &pd->rows[i];
		pd->vary_threads |= a->threads != b->threads;
		pd->vary_pause |= a->pause_rate != b->pause_rate;
		pd->vary_fence |= strcmp(a->fence, b->fence) != 0;
		pd->vary_dist |= strcmp(a->dist, b->dist) != 0;
	}
	return 0;
}

/* ---- gnuplot ---- */

/* Is there a gnuplot on PATH (popen's shell looks it up the same way)? */
static bool gnuplot_found(void)
{
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	char file[4096];
	for (const char *p = path;;) {
		size_t n = strcspn(p, ":");
		/* an empty entry is the current directory, as for the shell */
		snprintf(file, sizeof file, "%.*s/gnuplot", n ? (int)n : 1, n ? p : ".");
		if (access(file, X_OK) == 0)
			return true;
		if (!p[n])
			break;
		p += n + 1;
	}
	return false;
}

/* How the charts are written: svg or png, and whether each chart's
 * script goes beside it. */
typedef struct popts {
	const char *format;
	bool script;
} popts;

/* The lines that head a chart's script: the terminal, the output. */
static void head(FILE *f, const popts *o, int w, int h, const char *out)
{
	if (!strcmp(o->format, "png"))
		fprintf(f,
		        "set terminal pngcairo size %d,%d enhanced font 'sans,10' "
		        "background rgb 'white'\n",
		        w, h);
	else
		fprintf(f,
		        "set terminal svg size %d,%d fixed enhanced font 'sans-serif,13' "
		        "background rgb 'white'\n",
		        w, h);
	fprintf(f, "set encoding utf8\nset output '%s'\n", SQ(out));
}

/* Chart c's script, but for its head, into *body: 0, 1 it does not apply
 * (said on stderr), -1 failed (said). */
static int compose(const pdoc *pd, size_t c, char **body, size_t *blen, int *w, int *h)
{
	char why[256] = "";
	*body = NULL;
	FILE *ms = open_memstream(body, blen);
	if (!ms) {
		fprintf(stderr, "fencebench plot: open_memstream failed, errno=%d (%s)\n", errno,
		        strerror(errno));
		return -1;
	}
	int r = charts[c].fn(pd, ms, w, h, why, sizeof why);
	if (fclose(ms)) {
		free(*body);
		fprintf(stderr, "fencebench plot: out of memory building %s\n", charts[c].name);
		return -1;
	}
	if (r) {
		fprintf(stderr, "fencebench plot: skipped %s: %s\n", charts[c].name, why);
		free(*body);
		return 1;
	}
	return 0;
}

/* gnuplot on a pipe drawing the script into path (by way of path.tmp,
 * renamed once gnuplot exited cleanly): 0, or -1 said on stderr. */
static int draw(const popts *o, const char *body, size_t blen, int w, int h, const char *path)
{
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	/* -d: no gnuplotrc or ~/.gnuplot, so every machine draws the same */
	FILE *gp = popen("gnuplot -d", "w");
	if (!gp) {
		fprintf(stderr, "fencebench plot: popen(gnuplot) failed, errno=%d (%s)\n", errno,
		        strerror(errno));
		return -1;
	}
	head(gp, o, w, h, tmp);
	fwrite(body, 1, blen, gp);
	fprintf(gp, "unset output\n");
	int st = pclose(gp);
	struct stat sb;
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || stat(tmp, &sb) || !sb.st_size) {
		fprintf(stderr, "fencebench plot: gnuplot failed drawing %s (%s)\n", path,
		        st == -1          ? "pclose failed"
		        : !WIFEXITED(st)  ? "killed by a signal"
		        : WEXITSTATUS(st) ? "its error is above"
		                          : "no output");
		unlink(tmp);
		return -1;
	}
	if (rename(tmp, path)) {
		fprintf(stderr, "fencebench plot: cannot write '%s': errno=%d (%s)\n", path, errno,
		        strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* --script: the chart's whole script, data inline, as path (NAME.gp): what
 * `gnuplot NAME.gp` draws again, to adapt. 0, or -1 said on stderr. */
static int write_script(const popts *o, const char *body, size_t blen, int w, int h,
                        const char *chart, const char *path)
{
	char *text = NULL;
	size_t len = 0;
	FILE *ms = open_memstream(&text, &len);
	if (!ms) {
		fprintf(stderr, "fencebench plot: open_memstream failed, errno=%d (%s)\n", errno,
		        strerror(errno));
		return -1;
	}
	fprintf(ms, "# fencebench plot --script: gnuplot %s redraws %s\n", path, chart);
	head(ms, o, w, h, chart);
	fwrite(body, 1, blen, ms);
	fprintf(ms, "unset output\n");
	int rc = fclose(ms) ? -1 : fb_outfile_put(path, text);
	if (rc)
		fprintf(stderr, "fencebench plot: cannot write '%s': errno=%d (%s)\n", path, errno,
		        strerror(errno));
	free(text);
	return rc;
}

/*
 * Render one chart: the script into memory first (a chart that does not
 * apply spawns nothing), then gnuplot draws it, and with --script the
 * script goes beside it. The paths written go to stdout. 0 written, 1
 * skipped, -1 failed (said on stderr).
 */
static int render(const pdoc *pd, size_t c, const char *dir, const char *base, const popts *o)
{
	char *body;
	size_t blen;
	int w = 960, h = 600;
	int r = compose(pd, c, &body, &blen, &w, &h);
	if (r)
		return r;
	char path[4096], script[4096];
	snprintf(path, sizeof path, "%s/%s-%s.%s", dir, base, charts[c].name, o->format);
	snprintf(script, sizeof script, "%s/%s-%s.gp", dir, base, charts[c].name);
	r = draw(o, body, blen, w, h, path);
	if (!r)
		printf("%s\n", path);
	if (!r && o->script && !(r = write_script(o, body, blen, w, h, path, script)))
		printf("%s\n", script);
	fflush(stdout);
	free(body);
	return r;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: fencebench plot FILE.json [-o DIR] [-f svg|png] [--script]\n"
	             "\n"
	             "Charts of a fencebench document, drawn by gnuplot:\n"
	             "  BASE-throughput.svg  ops/s against threads per discipline, the floor "
	             "dashed (sweeps over threads)\n"
	             "  BASE-cycle-p99.svg   cycle p99 latency against threads (sweeps over "
	             "threads)\n"
	             "  BASE-latency.svg     percentiles p50..p99.99 and max of acquire, write "
	             "and cycle (any document)\n"
	             "  BASE-corruption.svg  stale writes accepted and updates lost against the "
	             "pause rate (sweeps over pause rates)\n"
	             "  BASE-timeseries.svg  over the run: ops/s and faults a second, stale "
	             "writes accepted and updates lost so far per discipline (a run)\n"
	             "BASE is FILE without .json; the charts go next to FILE unless -o DIR.\n"
	             "\n"
	             "  -o, --output-dir DIR   write the charts to DIR (created if missing)\n"
	             "  -f, --format FMT       svg (default) or png\n"
	             "      --script           also write each chart's gnuplot script, its data "
	             "inline, as BASE-CHART.gp: `gnuplot BASE-CHART.gp` draws it again, to "
	             "adapt\n"
	             "  -h, --help             this help\n");
}

/* Option a at argv[*i], as -s V, --long V or --long=V: 1 taken into *v, 0
 * not this option, -1 its value is missing (said). */
static int opt_value(int argc, char **argv, int *i, const char *s, const char *l, const char **v)
{
	const char *a = argv[*i];
	size_t n = strlen(l);
	if (!strncmp(a, l, n) && a[n] == '=') {
		*v = a + n + 1;
		return 1;
	}
	if (strcmp(a, s) && strcmp(a, l))
		return 0;
	if (*i + 1 == argc) {
		fprintf(stderr, "fencebench plot: %s needs a value\n", a);
		return -1;
	}
	*v = argv[++*i];
	return 1;
}

/* The command line: -1 go on, else the exit code (help 0, bad input 2). */
static int parse(int argc, char **argv, const char **file, const char **outdir, popts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if ((r = opt_value(argc, argv, &i, "-o", "--output-dir", outdir))) {
			if (r < 0)
				return 2;
		} else if ((r = opt_value(argc, argv, &i, "-f", "--format", &o->format))) {
			if (r < 0)
				return 2;
		} else if (!strcmp(a, "--script")) {
			o->script = true;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "fencebench plot: unknown option '%s' (see --help)\n", a);
			return 2;
		} else if (!*file) {
			*file = a;
		} else {
			fprintf(stderr, "fencebench plot: '%s': one document at a time\n", a);
			return 2;
		}
	}
	if (!*file) {
		fprintf(stderr, "fencebench plot: which document? fencebench plot FILE.json "
		                "[-o DIR]\n");
		return 2;
	}
	if (*outdir && !**outdir) {
		fprintf(stderr, "fencebench plot: -o: empty directory name\n");
		return 2;
	}
	if (strcmp(o->format, "svg") && strcmp(o->format, "png")) {
		fprintf(stderr, "fencebench plot: --format: '%s' is not svg or png\n", o->format);
		return 2;
	}
	return -1;
}

int fb_plot_main(int argc, char **argv)
{
	const char *file = NULL, *outdir = NULL;
	popts o = {"svg", false};
	int parsed = parse(argc, argv, &file, &outdir, &o);
	if (parsed >= 0)
		return parsed;
	char why[512];
	pdoc pd;
	memset(&pd, 0, sizeof pd);
	pd.path = file;
	pd.doc = fb_doc_load(file, &pd.kind, why, sizeof why);
	if (!pd.doc) {
		fprintf(stderr, "fencebench plot: %s\n", why);
		return 2;
	}
	int code = 0;
	char *base = NULL, *dir = NULL;
	if (load_rows(&pd)) {
		fprintf(stderr, "fencebench plot: out of memory\n");
		code = 3;
		goto out;
	}
	if (!pd.n) {
		fprintf(stderr, "fencebench plot: %s: no rows with \"modes\" to draw\n", file);
		code = 2;
		goto out;
	}
	if (!gnuplot_found()) {
		fprintf(stderr, "fencebench plot: gnuplot not found on PATH; install it: apt-get "
		                "install gnuplot-nox\n");
		code = 3;
		goto out;
	}
	describe_setup(&pd);
	const char *slash = strrchr(file, '/');
	base = strdup(slash ? slash + 1 : file);
	dir = outdir  ? strdup(outdir)
	      : slash ? strndup(file, slash == file ? 1 : (size_t)(slash - file))
	              : strdup(".");
	if (!base || !dir) {
		fprintf(stderr, "fencebench plot: out of memory\n");
		code = 3;
		goto out;
	}
	size_t bl = strlen(base);
	if (bl > 5 && !strcmp(base + bl - 5, ".json"))
		base[bl - 5] = 0;
	if (outdir && fb_mkdir_p(dir)) {
		fprintf(stderr, "fencebench plot: cannot create '%s': errno=%d (%s)\n", dir, errno,
		        strerror(errno));
		code = 3;
		goto out;
	}
	if (access(dir, W_OK | X_OK)) {
		fprintf(stderr, "fencebench plot: cannot write to '%s': errno=%d (%s)\n", dir,
		        errno, strerror(errno));
		code = 3;
		goto out;
	}
	/* gnuplot failing mid-script closes the pipe: a write error, not a
	 * signal that kills us before we can say so */
	signal(SIGPIPE, SIG_IGN);
	int written = 0;
	for (size_t c = 0; c < sizeof charts / sizeof charts[0]; c++) {
		int r = render(&pd, c, dir, base, &o);
		if (r < 0) {
			code = 3;
			break;
		}
		written += r == 0;
	}
	if (!code && !written)
		fprintf(stderr, "fencebench plot: no chart applies to %s\n", file);
out:
	free(base);
	free(dir);
	free(pd.rows);
	json_object_put(pd.doc);
	return code;
}
