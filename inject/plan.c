#define _GNU_SOURCE
#include "plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const skew_names[] = {"slow", "back", "service"};
static const char *const phase_names[] = {"idle", "acquiring", "holding"};

fb_err fb_plan_log_create(uint64_t cap, fb_plan_log **out)
{
	fb_plan_log *l = calloc(1, sizeof *l);
	if (!l || !(l->e = calloc(cap ? cap : 1, sizeof *l->e))) {
		free(l);
		return FB_ENOMEM;
	}
	l->cap = cap;
	atomic_init(&l->n, 0);
	*out = l;
	return FB_OK;
}

void fb_plan_log_destroy(fb_plan_log *l)
{
	if (!l)
		return;
	free(l->e);
	free(l);
}

uint64_t fb_plan_log_dropped(const fb_plan_log *l)
{
	uint64_t n = atomic_load_explicit(&((fb_plan_log *)l)->n, memory_order_relaxed);
	return n > l->cap ? n - l->cap : 0;
}

static int by_worker_cycle(const void *a, const void *b)
{
	const fb_plan_entry *x = a, *y = b;
	if (x->worker != y->worker)
		return x->worker < y->worker ? -1 : 1;
	return x->cycle < y->cycle ? -1 : x->cycle > y->cycle;
}

static const char *at_text(const fb_plan_entry *e)
{
	if (e->fault == FB_FAULT_SKEW)
		return e->at < 3 ? skew_names[e->at] : "?";
	return e->at < FB_AT_COUNT ? fb_fault_at_names[e->at] : "?";
}

int fb_plan_write(const fb_plan_log *l, const char *path, const char *comment)
{
	uint64_t n = atomic_load_explicit(&((fb_plan_log *)l)->n, memory_order_relaxed);
	if (n > l->cap)
		n = l->cap;
	fb_plan_entry *sorted = malloc((n ? n : 1) * sizeof *sorted);
	if (!sorted)
		return -1;
	memcpy(sorted, l->e, n * sizeof *sorted);
	qsort(sorted, n, sizeof *sorted, by_worker_cycle);
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f) {
		free(sorted);
		return -1;
	}
	fprintf(f, "# fencebench fault plan 1\n# %s\n", comment);
	fprintf(f, "# worker cycle fault at phase arg_ns extra\n");
	for (uint64_t i = 0; i < n; i++) {
		const fb_plan_entry *e = &sorted[i];
		fprintf(f, "%u %llu %s %s %s %llu %llu\n", e->worker, (unsigned long long)e->cycle,
		        e->fault < FB_FAULTS ? fb_fault_names[e->fault] : "?", at_text(e),
		        e->phase < 3 ? phase_names[e->phase] : "-", (unsigned long long)e->arg_ns,
		        (unsigned long long)e->extra);
	}
	free(sorted);
	int bad = ferror(f);
	if (fclose(f) || bad || rename(tmp, path)) {
		int e = errno;
		unlink(tmp);
		errno = e;
		return -1;
	}
	return 0;
}

static int lookup(const char *w, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(w, names[i]))
			return i;
	return -1;
}

fb_err fb_plan_read(const char *path, uint32_t threads, fb_plan *out, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return FB_ESYS;
	}
	size_t cap = 64, n = 0;
	fb_plan_entry *e = malloc(cap * sizeof *e);
	char line[512];
	unsigned lineno = 0;
	fb_err rc = FB_OK;
	while (e && fgets(line, sizeof line, f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, errlen, "%s:%u: line too long", path, lineno);
			rc = FB_EINVAL;
			break;
		}
		char *p = line + strspn(line, " \t");
		if (*p == '#' || *p == '\n' || !*p)
			continue;
		/* worker wide too: %u would wrap 4294967297 to worker 1 */
		unsigned long long worker, cycle, arg, extra;
		char fault[32], at[32], phase[32];
		int used = 0;
		if (sscanf(p, "%llu %llu %31s %31s %31s %llu %llu %n", &worker, &cycle, fault, at,
		           phase, &arg, &extra, &used) != 7 ||
		    p[used]) {
			snprintf(err, errlen,
			         "%s:%u: expected 'worker cycle fault at phase arg_ns extra'", path,
			         lineno);
			rc = FB_EINVAL;
			break;
		}
		int fi = lookup(fault, fb_fault_names, FB_FAULTS);
		int ai = fi == FB_FAULT_SKEW ? lookup(at, skew_names, 3)
		                             : lookup(at, fb_fault_at_names, FB_AT_COUNT);
		int ph = strcmp(phase, "-") ? lookup(phase, phase_names, 3) : 0;
		if (fi < 0 || ai < 0 || ph < 0 || worker > threads ||
		    (worker == 0 && !(fi == FB_FAULT_SKEW && ai == FB_SKEW_SERVICE))) {
			snprintf(err, errlen,
			         "%s:%u: unknown fault, place or phase, or worker %llu of %u", path,
			         lineno, worker, threads);
			rc = FB_EINVAL;
			break;
		}
		if (n == cap) {
			fb_plan_entry *g = realloc(e, 2 * cap * sizeof *e);
			if (!g) {
				snprintf(err, errlen, "%s: out of memory", path);
				rc = FB_ENOMEM;
				break;
			}
			e = g;
			cap *= 2;
		}
		e[n++] = (fb_plan_entry){cycle,       arg,         extra,      (uint16_t)worker,
		                         (uint8_t)fi, (uint8_t)ai, (uint8_t)ph};
	}
	fclose(f);
	if (!e) {
		snprintf(err, errlen, "%s: out of memory", path);
		return FB_ENOMEM;
	}
	if (rc) {
		free(e);
		return rc;
	}
	qsort(e, n, sizeof *e, by_worker_cycle);
	out->e = e;
	out->n = n;
	return FB_OK;
}

void fb_plan_free(fb_plan *p)
{
	free(p->e);
	p->e = NULL;
	p->n = 0;
}

size_t fb_plan_for(const fb_plan *p, uint16_t worker, const fb_plan_entry **first)
{
	size_t lo = 0, hi = p->n;
	while (lo < hi) { /* first entry with e.worker >= worker */
		size_t mid = (lo + hi) / 2;
		if (p->e[mid].worker < worker)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t end = lo;
	while (end < p->n && p->e[end].worker == worker)
		end++;
	*first = &p->e[lo];
	return end - lo;
}
