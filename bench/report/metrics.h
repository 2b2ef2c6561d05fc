/*
 * The reported numbers, each named once (issue 26): its key, the label of
 * its row, its path in the JSON documents, its unit, which way is better,
 * and where a view shows it differently, that too (the note after the run
 * table's row, the disciplines that have it, `fencebench check`'s own
 * label and key). The run table and JSON, `compare`, `check`'s table and
 * `plot` read their names from here; the order of each view's rows stays
 * the view's own.
 */
#ifndef FB_METRICS_H
#define FB_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "result.h"

typedef enum fb_metric_id {
	/* a discipline's numbers, in the order a run document lists them
	 * under modes.<discipline> (bench/report/report.c's j_mode) */
	FB_M_OPS,
	FB_M_ACQUIRED,
	FB_M_CONTENDED,
	FB_M_WRITES,
	FB_M_ACCEPTED,
	FB_M_REJECTED_STALE,
	FB_M_READS_REFUSED,
	FB_M_STALE_ACCEPTED,
	FB_M_LOST_UPDATES,
	FB_M_ZOMBIE_WRITES,
	FB_M_FALSE_REJECTIONS,
	FB_M_STALE_READS,
	FB_M_CONTROL_CHANCES,
	FB_M_REFUSED_OTHER,
	FB_M_UNJUDGED,
	FB_M_DUPLICATES,
	FB_M_INDETERMINATE,
	FB_M_THROUGHPUT,
	FB_M_CAS_RETRIES,
	FB_M_CYCLE_P50,
	FB_M_CYCLE_P99,
	FB_M_CYCLE_P999,
	FB_M_STORE_STALE,
	FB_M_LOST_HISTORY,
	FB_M_CHAIN_BREAKS,
	/* `fencebench check`'s alone: a history's */
	FB_M_HISTORY_ROWS,
	FB_M_VERSION_GAPS,
	FB_M_OUT_OF_ORDER,
	FB_M_FOREIGN_ROWS,
	/* the run's, at a path from the document's top */
	FB_M_ELAPSED,
	FB_M_FAIRNESS,
	FB_M_CAS_PER_OP,
	FB_M_FLOOR,
	FB_M_FLOOR_RATIO,
	FB_METRICS
} fb_metric_id;

typedef enum fb_metric_unit {
	FB_UNIT_COUNT,  /* a count, never below zero */
	FB_UNIT_SIGNED, /* a count that a broken store's books can take below zero */
	FB_UNIT_OPS_S,  /* operations a second */
	FB_UNIT_NS,     /* nanoseconds */
	FB_UNIT_S,      /* seconds */
	FB_UNIT_RATIO,  /* a ratio of two figures */
	FB_UNIT_PER_OP, /* a count per operation */
} fb_metric_unit;

/* Which way is better, comparing two runs: NEITHER where the number
 * measures what the faults did, not how well the system took them. */
typedef enum fb_metric_better {
	FB_BETTER_NEITHER,
	FB_BETTER_LOWER,
	FB_BETTER_HIGHER,
} fb_metric_better;

/* When a table shows the row. */
typedef enum fb_metric_show {
	FB_SHOW_ALWAYS,
	FB_SHOW_IF_ANY,       /* some discipline shown has a non-zero count */
	FB_SHOW_IF_INCOMPLETE /* the run stopped short (an engine died) */
} fb_metric_show;

/* Where fb_metric_get reads it in an fb_results. */
typedef enum fb_metric_from {
	FB_FROM_NONE, /* computed by its view (a rate, a percentile) or not a run's */
	FB_FROM_MODE, /* res->mode[d], at `at` */
	FB_FROM_RUN,  /* res itself, at `at`: the same in every discipline */
} fb_metric_from;

typedef struct fb_metric {
	const char *key;   /* its name */
	const char *label; /* its row in the run table and in compare (NULL: none shows it) */
	const char *note;  /* after the run table's row, or NULL */
	/* in a run document: under modes.<discipline> unless from_top, else from
	 * the document's top; NULL where the document has none */
	const char *json;
	bool from_top;
	/* in prose and charts: "stale writes accepted" */
	const char *phrase;
	/* a chart's axis, where a chart draws it */
	const char *axis;
	/* its column in the CSV time series (results/README.md), or NULL; the
	 * JSON's "series" names the throughput a second by it too */
	const char *csv;
	/* `fencebench check`: its row (NULL: label), its note (NULL: note) and
	 * its key in check's document (NULL: check shows none) */
	const char *check_label, *check_note, *check_json;
	/* its name on the closing verdict line (a run's, check's: "stale" in
	 * "stale=0"), or NULL: the line does not show it */
	const char *verdict;
	fb_metric_unit unit;
	fb_metric_better better;
	fb_metric_show show;
	/* the disciplines that have it (1u << d; 0: all): the run table shows
	 * "-" for the others, compare no row */
	unsigned only;
	bool needs_check; /* unknown (null, "-") where no history checker ran */
	fb_metric_from from;
	size_t at;
} fb_metric;

extern const fb_metric fb_metrics[FB_METRICS];

/* Whether discipline d has metric id (the table's `only`). */
bool fb_metric_applies(fb_metric_id id, int d);

/* The value of metric id for discipline d of a run, into *v; false when
 * it is unknown (not checked) or not read from the results (FB_FROM_NONE). */
bool fb_metric_get(const fb_results *res, int d, fb_metric_id id, int64_t *v);

#endif
