/*
 * What a run leaves behind: the progress line, the side-by-side table and
 * verdict on stdout, the JSON document and CSV time series under the
 * results directory (each written to a temporary file and renamed, so a
 * reader never sees half a file).
 */
#ifndef FB_REPORT_H
#define FB_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "run.h"

#define FB_SCHEMA 1

typedef struct fb_report {
	const fb_config *cfg;
	char stamp[32], started_at[32];
	char json_path[4096], csv_path[4096], json_tmp[4200], csv_tmp[4200];
	char user_json_tmp[4200];
	FILE *csv;
	bool dir_ok;
	char dir_error[512];
	bool progress, tty;
	fb_sample last;
} fb_report;

/* Name the results and open the CSV's temporary file. If the directory
 * cannot be written, say so on stderr now; the run still goes on and its
 * summary is printed, but the process will exit 3. */
void fb_report_open(fb_report *rp, const fb_config *cfg);

/* fb_tick_fn: one CSV row per mode, and the progress line. */
void fb_report_tick(void *ctx, const fb_sample *s);

/* The header line: version and every parameter. */
void fb_report_header(FILE *out, const fb_config *cfg);

/* The table and the verdict; returns the verdict's exit code (0 or 1). */
int fb_report_summary(fb_report *rp, FILE *out, const fb_results *res);

/* Write the JSON (results dir and --json) and finish the CSV. 0, or -1 with
 * a message printed and no partial file left. */
int fb_report_write(fb_report *rp, const fb_results *res, int exit_code);

/* Remove temporary files: async-signal-safe (unlink only). */
void fb_report_abandon(const fb_report *rp);

#endif
