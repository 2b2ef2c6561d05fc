/*
 * libFuzzer: the document readers of `plot` and `compare` (fb_doc_load),
 * which judge every value they take. Each input is written over one
 * scratch file and loaded: a document is either refused with a one-line
 * reason naming the file, or accepted, and then every value the readers
 * take from it is what the judge let through.
 */
#define _GNU_SOURCE
#include <json-c/json.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compare.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

static void check_number(json_object *o, const char *p)
{
	double v;
	json_object *x = fb_doc_get(o, p);
	if (x &&
	    (json_object_is_type(x, json_type_int) || json_object_is_type(x, json_type_double)))
		if (fb_doc_number(o, p, &v) && (!isfinite(v) || v < 0))
			__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!path[0])
		snprintf(path, sizeof path, "/tmp/fuzz-doc-%d.json", (int)getpid());
	FILE *f = fopen(path, "wb");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	fb_doc_kind kind;
	char why[600] = "";
	json_object *doc = fb_doc_load(path, &kind, why, sizeof why);
	if (!doc) {
		if (!strstr(why, path) || strchr(why, '\n'))
			__builtin_trap(); /* one line, naming the file */
		return 0;
	}
	if (kind == FB_DOC_SWEEP) {
		json_object *rows = fb_doc_get(doc, "rows");
		size_t n = json_object_array_length(rows);
		if (!n)
			__builtin_trap();
		for (size_t i = 0; i < n; i++) {
			json_object *row = json_object_array_get_idx(rows, i);
			double t;
			if (!fb_doc_number(row, "threads", &t) || t < 1)
				__builtin_trap();
			check_number(row, "modes.fenced.throughput_ops_s");
			check_number(row, "modes.unfenced.stale_accepted");
		}
	} else {
		check_number(doc, "modes.fenced.throughput_ops_s");
		check_number(doc, "modes.write_fenced.latency_ns.cycle.p99");
	}
	json_object_put(doc);
	return 0;
}
