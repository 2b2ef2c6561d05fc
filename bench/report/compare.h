/*
 * Reading fencebench's JSON documents (schemas 1 and 2, results/README.md), and
 * `fencebench compare A.json B.json`: two runs, or two sweeps, side by side
 * with B/A ratios. The readers are shared with `fencebench plot`.
 *
 * The documents are a public interface: everything here goes by the names
 * the schema fixes and tolerates fields it does not know, or that a run did
 * not measure (the floor).
 */
#ifndef FB_COMPARE_H
#define FB_COMPARE_H

#include <stdbool.h>
#include <stddef.h>

struct json_object;

/* The schemas this fencebench reads: 1 and 2 (2 renamed keys no reader
 * here uses: the faults' server-pause is server_pause). */
#define FB_DOC_SCHEMA_MIN 1
#define FB_DOC_SCHEMA     2

typedef enum fb_doc_kind {
	FB_DOC_RUN,   /* one run: top-level "run" and "modes" */
	FB_DOC_SWEEP, /* "rows", each with its own "run" and "modes" */
} fb_doc_kind;

/* The disciplines in the order the table and the charts show them: the
 * JSON key ("write_fenced") and the name people read ("write-fenced"). */
#define FB_DOC_DISCIPLINES 3
extern const char *const fb_doc_discipline_key[FB_DOC_DISCIPLINES];
extern const char *const fb_doc_discipline_name[FB_DOC_DISCIPLINES];

/* Parse and check the document at path: valid JSON, "tool" "fencebench",
 * "schema" 1, a run or a sweep. NULL on failure with a one-line reason that
 * names the file in why. The caller puts the result with json_object_put. */
struct json_object *fb_doc_load(const char *path, fb_doc_kind *kind, char *why, size_t len);

/* The value at a dotted path ("modes.fenced.latency_ns.cycle.p99"), or NULL. */
struct json_object *fb_doc_get(struct json_object *o, const char *path);

/* The number at path into *v; false (and *v untouched) if absent or not a
 * number. */
bool fb_doc_number(struct json_object *o, const char *path, double *v);

/* The string at path, or NULL if absent or not a string. */
const char *fb_doc_string(struct json_object *o, const char *path);

/* `fencebench compare A.json B.json`. 0 printed, 2 bad input (unreadable or
 * malformed file, another schema or tool, a run against a sweep). */
int fb_compare_main(int argc, char **argv);

#endif
