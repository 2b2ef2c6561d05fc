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

#include "outfile.h"
#include "result.h"

/* The run and sweep documents' schema. 2: fault keys in snake_case
 * (server_pause), config.cpus recorded; nothing else moved. */
#define FB_SCHEMA 2

typedef struct fb_report {
	const fb_config *cfg;
	char stamp[32], started_at[32];
	char json_path[4096], csv_path[4096];
	fb_outfile_stream csv_out; /* the CSV, written as the run goes, named at the end */
	FILE *csv;
	bool dir_ok;
	char dir_error[512];
	bool progress, tty;
	fb_sample last;
	fb_sample *series; /* the run under way's samples, one a second */
	size_t nseries, series_cap;
	const fb_config *row; /* the run under way (a sweep's row) */
	/* a sweep's finished rows, as the document's text, kept in a file of
	 * no name (beside the results when it can be) and not in memory: a
	 * sweep of 100,000 seeds held 9 GB of JSON objects */
	FILE *rows;
	uint64_t nrows, rows_lost; /* rows written there, rows it could not take */
	const char *clock_name;
} fb_report;

/* Name the results and start the CSV (a file of no name until the end). If
 * the directory cannot be written, say so on stderr now (the caller checked
 * it before the run: this is a directory that failed since); the run still
 * goes on and its summary is printed, but the process will exit 3. */
void fb_report_open(fb_report *rp, const fb_config *cfg);

/* fb_tick_fn: one CSV row per mode, the sample kept for the JSON's series,
 * and the progress line. */
void fb_report_tick(void *ctx, const fb_sample *s);

/* The header line: version and every parameter. */
void fb_report_header(FILE *out, const fb_config *cfg);

/* Whether no stale write was attempted at all: nothing was put to the test. */
bool fb_report_vacuous(const fb_results *res);

/* 1 if a fenced discipline failed or a checker disagreed, else 0. */
int fb_report_verdict(const fb_results *res);

/* Issue 27: under --op rmw the write-fenced control had at least
 * FB_CONTROL_CHANCES chances where a write-fenced store must lose an update
 * (bench/drive/control.h), and lost none: it is no control. */
#define FB_CONTROL_CHANCES 1
bool fb_report_not_a_control(const fb_results *res);

/* What failed, by name: " lease VIOLATED (...); fenced lost N updates; ..." */
void fb_report_reasons(FILE *out, const fb_results *res);

/* A deterministic sweep's line for one seed: its hash, the corruption
 * counts, and FAIL with what failed, or vacuous. */
void fb_report_seed_line(FILE *out, const fb_results *res);

/* One line per run of a sweep (with the column heads before the first). */
void fb_report_sweep_line(FILE *out, const fb_config *row, const fb_results *res, bool first);

/* The table and the verdict; returns the verdict's exit code (0 or 1). */
int fb_report_summary(fb_report *rp, FILE *out, const fb_results *res);

/* Write the JSON (results dir and --json) and finish the CSV. 0, or -1 with
 * a message printed and no partial file left. */
int fb_report_write(fb_report *rp, const fb_results *res, int exit_code);

/* A sweep: each run begins a row (CSV columns, progress), each finished
 * run is added as a row, then the document is written. */
void fb_report_row_begin(fb_report *rp, const fb_config *row);
void fb_report_add_row(fb_report *rp, const fb_config *row, const fb_results *res);
int fb_report_write_sweep(fb_report *rp, int exit_code, bool interrupted, int sig);

/* --hdr-file: PREFIX.acquire.hdr, .write.hdr, .cycle.hdr. 0 or -1. */
int fb_report_hdr(const char *prefix, const fb_results *res);

/* Remove what a second signal would leave: async-signal-safe (unlink only;
 * with O_TMPFILE there is nothing named to remove). */
void fb_report_abandon(const fb_report *rp);

#endif
