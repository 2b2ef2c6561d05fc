/* What every output shares: the thousands grouping, directories, the
 * machine's description, the atomic writer, and the verdict's two lessons
 * worded once (the run, the simulator and `check` all say them). */
#ifndef FB_OUTPUT_H
#define FB_OUTPUT_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* 1234567.4 -> "1,234,567" (rounded; negative values keep their sign). */
const char *fb_grouped(char *buf, size_t len, double v);

/* mkdir -p: 0, or -1 with errno set. */
int fb_mkdir_p(const char *path);

/* The CPU's model name from /proc/cpuinfo, or "unknown". */
void fb_cpu_model(char *cpu, size_t len);

/* The JSON "machine" object: cpu (model name), cores (online), kernel,
 * compiler. Callers add what is theirs (the clock, a load average). */
json_object *fb_json_machine(void);

/* The verdict's two lessons: write-fenced lost `lost` updates; unfenced
 * accepted `stale` stale writes that erased `lost` debits. Whole lines,
 * with the newline. */
void fb_say_write_fenced_lost(FILE *out, int64_t lost);
void fb_say_unfenced_corrupted(FILE *out, uint64_t stale, int64_t lost);

#endif
