#define _GNU_SOURCE
#include "plan.h"
#include "outfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
	if (fb_fault_wire(e->fault))
		return e->at < FB_WIRE_DIRS ? fb_wire_dir_names[e->at] : "?";
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
	fb_outfile o;
	fb_outfile_stream out;
	char why[300];
	if (fb_outfile_check(path, &o, why, sizeof why) || fb_outfile_begin(&o, &out)) {
		free(sorted);
		return -1;
	}
	FILE *f = out.f;
	fprintf(f, "# fencebench fault plan %d\n# %s\n", FB_PLAN_FORMAT, comment);
	fprintf(f, "# worker cycle fault at phase arg_ns extra\n");
	for (uint64_t i = 0; i < n; i++) {
		const fb_plan_entry *e = &sorted[i];
		fprintf(f, "%u %llu %s %s %s %llu %llu\n", e->worker, (unsigned long long)e->cycle,
		        e->fault < FB_FAULTS ? fb_fault_names[e->fault] : "?", at_text(e),
		        e->phase < 3 ? phase_names[e->phase] : "-", (unsigned long long)e->arg_ns,
		        (unsigned long long)e->extra);
	}
	free(sorted);
	return fb_outfile_commit(&out);
}

static int lookup(const char *w, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(w, names[i]))
			return i;
	return -1;
}

/* The first line names the format: "# fencebench fault plan 1". */
static fb_err read_header(FILE *f, const char *path, char *err, size_t errlen)
{
	char line[512];
	int v = 0, used = 0;
	if (!fgets(line, sizeof line, f)) {
		snprintf(err, errlen,
		         "%s: empty: not a fault plan (its first line is '# fencebench "
		         "fault plan %d')",
		         path, FB_PLAN_FORMAT);
		return FB_EINVAL;
	}
	if (sscanf(line, "# fencebench fault plan %d%n", &v, &used) != 1 ||
	    (line[used] != '\n' && line[used])) {
		snprintf(err, errlen,
		         "%s:1: not a fault plan (its first line is '# fencebench fault plan %d')",
		         path, FB_PLAN_FORMAT);
		return FB_EINVAL;
	}
	if (v != FB_PLAN_FORMAT) {
		snprintf(err, errlen,
		         "%s:1: a fault plan of format %d; this fencebench reads format %d", path,
		         v, FB_PLAN_FORMAT);
		return FB_EINVAL;
	}
	return FB_OK;
}

/* What the run can replay: a worker's fault, or a step of the service's
 * clock when it has one. 0, or the reason it cannot. */
static const char *cannot_replay(int fault, int at, unsigned long long worker, uint32_t threads,
                                 unsigned flags)
{
	if (worker > threads)
		return "a worker this run does not have";
	if (fault == FB_FAULT_SERVER_PAUSE)
		return "server-pause is the lease service's fault, not a worker's: a plan cannot "
		       "replay it";
	if (fault == FB_FAULT_NEMESIS) /* issue 24 */
		return "nemesis is the user's command's fault: a plan cannot replay it";
	if (fault == FB_FAULT_SKEW && at == FB_SKEW_SERVICE && !(flags & FB_PLAN_SERVICE_CLOCK))
		return "a step of the lease service's clock needs --lease-clock realtime";
	bool wire = fb_fault_wire(fault); /* issue 24 */
	if (wire && !(flags & FB_PLAN_WIRE))
		return "a wire fault needs a --lease or --store URL with proxy=1";
	if ((worker == 0) != ((fault == FB_FAULT_SKEW && at == FB_SKEW_SERVICE) || wire))
		return worker ? "a step of the service's clock, or a wire fault, belongs to worker "
		                "0"
		              : "worker 0 is the lease service and the wire: only its clock steps "
		                "and its wire faults";
	return NULL;
}

fb_err fb_plan_read(const char *path, uint32_t threads, unsigned flags, fb_plan *out, char *err,
                    size_t errlen)
{
	FILE *f = fb_infile_open(path); /* a FIFO: a stop signal ends the wait */
	if (!f && errno == EINTR) {
		snprintf(err, errlen, "%s: interrupted while waiting for a writer to the FIFO",
		         path);
		return FB_ESYS;
	}
	if (!f) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return FB_ESYS;
	}
	struct stat st;
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(f);
		snprintf(err, errlen, "%s: is a directory, not a fault plan", path);
		return FB_EINVAL;
	}
	fb_err rc = read_header(f, path, err, errlen);
	if (rc) {
		fclose(f);
		return rc;
	}
	size_t cap = 64, n = 0;
	fb_plan_entry *e = malloc(cap * sizeof *e);
	char line[512];
	unsigned lineno = 1;
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
		         : fb_fault_wire(fi) ? lookup(at, fb_wire_dir_names, FB_WIRE_DIRS)
		                             : lookup(at, fb_fault_at_names, FB_AT_COUNT);
		int ph = strcmp(phase, "-") ? lookup(phase, phase_names, 3) : 0;
		if (fi < 0 || ai < 0 || ph < 0) {
			snprintf(err, errlen, "%s:%u: unknown %s '%s'", path, lineno,
			         fi < 0   ? "fault"
			         : ai < 0 ? "place"
			                  : "phase",
			         fi < 0   ? fault
			         : ai < 0 ? at
			                  : phase);
			rc = FB_EINVAL;
			break;
		}
		const char *why = cannot_replay(fi, ai, worker, threads, flags);
		if (why) {
			snprintf(err, errlen, "%s:%u: worker %llu, %s: %s", path, lineno, worker,
			         fault, why);
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
	if (!rc && !n) {
		snprintf(err, errlen,
		         "%s: no fault in the plan (a plan to replay names at least one)", path);
		rc = FB_EINVAL;
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
