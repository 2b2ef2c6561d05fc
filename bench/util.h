/* Small things the report, floor, plot and compare share. */
#ifndef FB_UTIL_H
#define FB_UTIL_H

#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* 1234567.4 -> "1,234,567" (rounded; negative values keep their sign). */
const char *fb_grouped(char *buf, size_t len, double v);

/* Where threads may run: --cpus (empty: every online CPU) and --pin (one
 * CPU each, round robin). */
typedef struct fb_placement {
	const uint32_t *cpus;
	uint32_t n_cpus;
	bool pin;
} fb_placement;

/* Set thread i's CPUs on attr per *pl; false (attr untouched) when pl is
 * NULL or asks for nothing. */
bool fb_placement_apply(const fb_placement *pl, uint32_t i, pthread_attr_t *attr);

/* The first reason a history and its store disagree (later ones are
 * usually its consequences): written into why once, *agrees cleared. */
void fb_disagree(bool *agrees, char *why, size_t len, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* One key's history against its store after the run: the debits the
 * ledger misses against those the history lost, the final balances and,
 * in a fenced discipline, the highest fence walked against the store's
 * last accepted one. */
void fb_key_disagree(bool *agrees, char *why, size_t len, uint32_t key, bool fenced, int64_t ledger,
                     int64_t lost, int64_t history_balance, int64_t balance, uint64_t history_fence,
                     uint64_t last_fence);

/* mkdir -p: 0, or -1 with errno set. */
int fb_mkdir_p(const char *path);

/* The CPU's model name from /proc/cpuinfo, or "unknown". */
void fb_cpu_model(char *cpu, size_t len);

/* The JSON "machine" object: cpu (model name), cores (online), kernel,
 * compiler. Callers add what is theirs (the clock, a load average). */
json_object *fb_json_machine(void);

/* Write text and a newline to tmp, flush it to disk, rename it over path:
 * a reader never sees half a file. 0, or -1 with errno set and tmp gone. */
int fb_write_atomically(const char *path, const char *tmp, const char *text);

/* The verdict's two lessons, worded once for the run, the simulator and
 * `check`: write-fenced lost `lost` updates; unfenced accepted `stale`
 * stale writes that erased `lost` debits. Whole lines, with the newline. */
void fb_say_write_fenced_lost(FILE *out, int64_t lost);
void fb_say_unfenced_corrupted(FILE *out, uint64_t stale, int64_t lost);

#endif
