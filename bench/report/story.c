#include "story.h"
#include "output.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <string.h>

#define G(v) fb_grouped((char[48]){0}, 48, (double)(v))

/* The stores in the order the summary's columns show them. */
static const fb_discipline shown[] = {FB_FENCED, FB_WRITE_FENCED, FB_UNFENCED};

static double ms(const fb_first_corruption *fc, uint64_t t)
{
	return t >= fc->t0 ? (double)(t - fc->t0) / 1e6 : -(double)(fc->t0 - t) / 1e6;
}

static bool same_write(const fb_first_corruption *a, const fb_first_corruption *b)
{
	return a->found && b->found && a->key == b->key && a->fence == b->fence &&
	       a->writer == b->writer;
}

/* The article's shape: the unfenced store took A's stale write, the fenced
 * one refused it as stale (its write, or the read before it), and B's
 * write, where the checker names it, the fenced store had accepted. A
 * store that refuses every newer holder is told in its own words. */
static bool article_shaped(const fb_first_corruption *fc)
{
	uint8_t f = fc->outcome[FB_FENCED];
	return fc->found && fc->outcome[FB_UNFENCED] == FB_OUT_STALE &&
	       (f == FB_OUT_REJECTED || f == FB_OUT_READ_REFUSED) &&
	       (!fc->newer_written || fc->newer_outcome[FB_FENCED] == FB_OUT_ACCEPTED);
}

/* ---- the timeline ---- */

typedef struct event {
	double ms;
	bool timed;
	bool late; /* the stale write itself: each store's answer follows it */
	char text[400];
} event;

typedef struct timeline {
	event e[8];
	int n;
} timeline;

static void add(timeline *tl, bool timed, double at, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static void add(timeline *tl, bool timed, double at, const char *fmt, ...)
{
	if (tl->n == (int)(sizeof tl->e / sizeof tl->e[0]))
		return;
	event *ev = &tl->e[tl->n++];
	ev->ms = at;
	ev->timed = timed;
	ev->late = false;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ev->text, sizeof ev->text, fmt, ap);
	va_end(ap);
}

/* What one store did with the stale write, in words. */
static void said(char *buf, size_t len, const fb_results *res, const fb_first_corruption *fc,
                 fb_discipline d, bool erased_here)
{
	const char *name = fb_column(res, d);
	unsigned long long h = (unsigned long long)fc->highest[d];
	switch (fc->outcome[d]) {
	case FB_OUT_STALE:
		snprintf(buf, len,
		         "%s ACCEPTED it although it was stale (fence %llu had written "
		         "there%s)%s%s%s",
		         name, h, fc->resent ? ": its own first copy" : "",
		         erased_here ? ", erasing " : "", erased_here ? G(fc->erased) : "",
		         erased_here ? (fc->erased == 1 ? " debit" : " debits") : "");
		break;
	case FB_OUT_REJECTED: /* a store that refuses without saying what it had seen: 0 */
		if (h)
			snprintf(buf, len, "%s REJECTED it as stale (it had seen fence %llu)", name,
			         h);
		else
			snprintf(buf, len, "%s REJECTED it as stale", name);
		break;
	case FB_OUT_READ_REFUSED:
		if (h)
			snprintf(buf, len,
			         "%s refused its read as stale (it had seen fence %llu), so it "
			         "wrote "
			         "nothing there",
			         name, h);
		else
			snprintf(buf, len,
			         "%s refused its read as stale, so it wrote nothing there", name);
		break;
	case FB_OUT_ACCEPTED:
		snprintf(buf, len,
		         "%s accepted it: no newer write had reached that store yet, so there it "
		         "was not stale",
		         name);
		break;
	case FB_OUT_REFUSED_HOLDER:
		snprintf(buf, len,
		         "%s refused it although no call with a newer fence had been sent to it: "
		         "a refusal of its rightful holder, not staleness",
		         name);
		break;
	case FB_OUT_REFUSED_OTHER:
		snprintf(buf, len, "%s refused it for a reason of its own", name);
		break;
	case FB_OUT_REFUSED:
		snprintf(buf, len,
		         "%s refused it (not judged: fencebench does not see every call to it)",
		         name);
		break;
	default:
		buf[0] = 0;
	}
}

/* The store whose line names the erased debits: the unfenced one if it
 * took the write, else the first that did. */
static int erased_at(const fb_first_corruption *fc)
{
	if (fc->erased <= 0)
		return -1;
	if (fc->outcome[FB_UNFENCED] == FB_OUT_STALE)
		return FB_UNFENCED;
	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (fc->outcome[d] == FB_OUT_STALE)
			return d;
	return -1;
}

/* Whether A's injected pause spanned its lease's expiry: only then is it
 * what made A late (true where the expiry is not known). */
static bool pause_spans_expiry(const fb_first_corruption *fc)
{
	return !fc->expires_at ||
	       (fc->fault_at <= fc->expires_at && fc->fault_at + fc->fault_ns >= fc->expires_at);
}

/*
 * Issue 24: the nemesis fault a failover re-minted A's fence in, or -1.
 * Only a lease service hands out a lower fence after a higher one (A
 * acquired its fence after B acquired the newer one), and it does so after
 * losing what it had granted: a fault of the servers. One is named only
 * if it was under way between the two acquires (struck before A's, not
 * healed before B's); the earliest such, as the one that began it. A fault
 * not healed when the story was taken lasted past A's write.
 */
static int failover_fault(const fb_first_corruption *fc)
{
	if (!fc->newer_acquired_at || !fc->expires_at || fc->newer_acquired_at >= fc->acquired_at)
		return -1;
	for (int i = 0; i < fc->nbefore && i < FB_STORY_BEFORE; i++) {
		uint64_t end = fc->before[i].end ? fc->before[i].end : fc->wrote_at;
		if (fc->before[i].at <= fc->acquired_at && end >= fc->newer_acquired_at)
			return i;
	}
	return -1;
}

/* The i-th of --nemesis-names, or "" */
static void nemesis_name(char *buf, size_t len, const fb_results *res, uint32_t i)
{
	buf[0] = 0;
	const char *s = res->cfg ? res->cfg->nemesis_names : NULL;
	for (uint32_t k = 0; s && k < i; k++)
		s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL;
	if (s)
		snprintf(buf, len, "%.*s", (int)strcspn(s, ","), s);
}

/* The failover as the cause: the fault, and the fence it re-minted. */
static void tell_failover(timeline *tl, const fb_results *res, const fb_first_corruption *fc, int i)
{
	char name[64];
	nemesis_name(name, sizeof name, res, fc->before[i].name);
	char healed[64] = "not healed by then";
	if (fc->before[i].end)
		snprintf(healed, sizeof healed, "healed at %.3f ms", ms(fc, fc->before[i].end));
	add(tl, true, ms(fc, fc->before[i].at),
	    "--nemesis starts its fault%s%s%s (%s): under way between the acquires of fence "
	    "%llu and fence %llu",
	    name[0] ? " '" : "", name, name[0] ? "'" : "", healed,
	    (unsigned long long)fc->newer_fence, (unsigned long long)fc->fence);
	add(tl, false, 0,
	    "the lease service handed fence %llu out after fence %llu: a failover lost what "
	    "it had granted (the fault, not w%u, made its write stale)",
	    (unsigned long long)fc->fence, (unsigned long long)fc->newer_fence, fc->writer);
}

/* A, the fault, A's lease running out. */
static void tell_writer(timeline *tl, const fb_results *res, const fb_first_corruption *fc)
{
	int failover = fc->fault < 0 ? failover_fault(fc) : -1;
	if (fc->expires_at)
		add(tl, true, ms(fc, fc->acquired_at),
		    "w%u acquires fence %llu (lease until %.3f ms)", fc->writer,
		    (unsigned long long)fc->fence, ms(fc, fc->expires_at));
	char d[32];
	if (fc->fault == FB_FAULT_PAUSE && fc->fault_ns) {
		fb_format_duration(d, sizeof d, fc->fault_ns);
		const char *where = fc->fault_where == FB_AT_TRAPPED
		                            ? "caught by a takeover trap"
		                            : fb_fault_at_names[fc->fault_where];
		uint64_t end = fc->fault_at + fc->fault_ns;
		/* A pause caused the expiry only if the lease ran out during it:
		 * one that ended before, or began after, did not make A late. */
		if (pause_spans_expiry(fc))
			add(tl, true, ms(fc, fc->fault_at), "w%u paused %s (injected, %s)",
			    fc->writer, d, where);
		else {
			bool before = end < fc->expires_at;
			add(tl, true, ms(fc, fc->fault_at),
			    "w%u paused %s (injected, %s); it %s %.3f ms, %s its lease expired: "
			    "not "
			    "the cause",
			    fc->writer, d, where, before ? "ended at" : "began at",
			    ms(fc, before ? end : fc->fault_at), before ? "before" : "after");
			add(tl, false, 0,
			    "no injected fault spanned w%u's expiry: the machine itself held it "
			    "back past its lease (the scheduler, or the lease service)",
			    fc->writer);
		}
	} else if (fc->fault == FB_FAULT_DELAY) {
		fb_format_duration(d, sizeof d, fc->fault_ns);
		add(tl, true, ms(fc, fc->fault_at),
		    "w%u sends its write with fence %llu; the network holds it %s", fc->writer,
		    (unsigned long long)fc->fence, d);
	} else if ((fc->fault == FB_FAULT_PARTITION || fc->fault == FB_FAULT_WIRE_DELAY) &&
	           fc->fault_ns) { /* issue 24: the proxy cannot say whose connection */
		fb_format_duration(d, sizeof d, fc->fault_ns);
		unsigned dir = fc->fault_where & 0xff;
		add(tl, true, ms(fc, fc->fault_at),
		    "%s on one proxied %s connection (%s), %s, during w%u's cycle",
		    fc->fault == FB_FAULT_PARTITION ? "a partition holds every byte"
		                                    : "a slow wire delays every byte",
		    fc->fault_where >> 8 ? "--store" : "--lease",
		    dir < FB_WIRE_DIRS ? fb_wire_dir_names[dir] : "?", d, fc->writer);
	} else if (fc->fault == FB_FAULT_WIRE_RESET) { /* issue 24: no length */
		add(tl, true, ms(fc, fc->fault_at),
		    "a reset tears one proxied %s connection down during w%u's cycle: the call "
		    "in flight is settled from the store after the engine connects again",
		    fc->fault_where >> 8 ? "--store" : "--lease", fc->writer);
	} else if (fc->fault == FB_FAULT_NEMESIS && fc->fault_ns) { /* issue 24 */
		fb_format_duration(d, sizeof d, fc->fault_ns);
		add(tl, true, ms(fc, fc->fault_at),
		    "--nemesis starts a fault of its own, healed %s later, during w%u's cycle", d,
		    fc->writer);
	} else if (fc->fault >= 0 && !fc->resent) { /* a resend is told as it happens */
		add(tl, false, 0, "w%u's cycle was hit by a %s fault", fc->writer,
		    fb_fault_names[fc->fault]);
	} else if (failover >= 0) {
		tell_failover(tl, res, fc, failover);
	} else if (fc->fault < 0) {
		add(tl, false, 0,
		    "no fault was injected into w%u's cycle: the machine itself held it back "
		    "(the scheduler, or the lease service)",
		    fc->writer);
	}
	if (fc->expires_at)
		add(tl, true, ms(fc, fc->expires_at), "lease %llu expires",
		    (unsigned long long)fc->fence);
}

/* What a store did with B's write, in a word or three. */
static const char *briefly(uint8_t o)
{
	switch (o) {
	case FB_OUT_ACCEPTED:
		return "accepted";
	case FB_OUT_STALE:
		return "ACCEPTED (stale)";
	case FB_OUT_REJECTED:
		return "REJECTED (stale)";
	case FB_OUT_READ_REFUSED:
		return "refused the read (stale)";
	case FB_OUT_REFUSED_HOLDER:
		return "REFUSED its rightful holder";
	case FB_OUT_REFUSED_OTHER:
		return "refused it (a reason of its own)";
	default:
		return "refused it (not judged)";
	}
}

/* B: who took the lease over, when, and what its write did. */
static void tell_newer(timeline *tl, const fb_results *res, const fb_first_corruption *fc)
{
	unsigned long long f = (unsigned long long)fc->newer_fence;
	if (fc->newer_written) {
		if (fc->newer_acquired_at && !fc->resent) /* a resend's is the writer's own */
			add(tl, true, ms(fc, fc->newer_acquired_at),
			    "w%u acquires fence %llu (lease until %.3f ms)", fc->newer_owner, f,
			    ms(fc, fc->newer_acquired_at + res->cfg->ttl_ns));
		char stores[200] = "";
		size_t at = 0;
		for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) {
			uint8_t o = fc->newer_outcome[shown[i]];
			if (!o || at >= sizeof stores)
				continue;
			at += (size_t)snprintf(stores + at, sizeof stores - at, "%s%s %s",
			                       at ? ", " : "", fb_column(res, shown[i]),
			                       briefly(o));
		}
		add(tl, true, ms(fc, fc->newer_wrote_at), "%sw%u%s with fence %llu: %s%s",
		    fc->newer_delayed ? "the network delivers " : "", fc->newer_owner,
		    fc->newer_delayed ? "'s write" : " writes", f, stores,
		    fc->resent ? "; the acknowledgement is lost (an injected retry fault)" : "");
	} else if (fc->newer_owner) {
		add(tl, true, ms(fc, fc->newer_acquired_at), "w%u acquires fence %llu and writes",
		    fc->newer_owner, f);
	} else {
		add(tl, false, 0,
		    "fence %llu is acquired and written by a holder this process does not know "
		    "(another client, or its record was not kept)",
		    f);
	}
}

/* By time, stably; an untimed line goes with the timed one it was said
 * after (it explains that one), or first if none was. */
static void sort(timeline *tl)
{
	double key[sizeof tl->e / sizeof tl->e[0]];
	for (int i = 0; i < tl->n; i++)
		key[i] = tl->e[i].timed ? tl->e[i].ms : i ? key[i - 1] : -1e300;
	for (int i = 1; i < tl->n; i++)
		for (int j = i; j > 0 && key[j] < key[j - 1]; j--) {
			double k = key[j];
			key[j] = key[j - 1];
			key[j - 1] = k;
			event t = tl->e[j];
			tl->e[j] = tl->e[j - 1];
			tl->e[j - 1] = t;
		}
}

static void print_stores(FILE *out, const fb_results *res, const fb_first_corruption *fc);

static void print_one(FILE *out, const fb_results *res, const fb_first_corruption *fc)
{
	timeline tl = {.n = 0};
	tell_writer(&tl, res, fc);
	tell_newer(&tl, res, fc);
	if (fc->resent)
		add(&tl, true, ms(fc, fc->wrote_at),
		    "w%u sends the same write again, fence %llu:", fc->writer,
		    (unsigned long long)fc->fence);
	else if (fc->newer_written && fc->wrote_at < fc->newer_wrote_at)
		/* its clock was read as it was sent, and a pause fell before
		 * it reached the store: it landed after the newer write */
		/* the pause is named only where one was injected into the cycle */
		add(&tl, true, ms(fc, fc->newer_wrote_at),
		    "w%u's write with fence %llu, sent at %.3f ms, lands (%s held it between the "
		    "send and the store):",
		    fc->writer, (unsigned long long)fc->fence, ms(fc, fc->wrote_at),
		    fc->fault == FB_FAULT_PAUSE && fc->fault_ns ? "a pause" : "the machine");
	else
		add(&tl, true, ms(fc, fc->wrote_at), "%sw%u%s with fence %llu:",
		    fc->fault == FB_FAULT_DELAY ? "the network delivers " : "", fc->writer,
		    fc->fault == FB_FAULT_DELAY ? "'s write" : " writes",
		    (unsigned long long)fc->fence);
	tl.e[tl.n - 1].late = true;
	sort(&tl);
	for (int i = 0; i < tl.n; i++) {
		if (tl.e[i].timed)
			fprintf(out, "  %10.3f ms  %s\n", tl.e[i].ms, tl.e[i].text);
		else
			fprintf(out, "  %10s     %s\n", "", tl.e[i].text);
		if (tl.e[i].late)
			print_stores(out, res, fc);
	}
}

/* The late write's stores, in the order it wrote them. */
static void print_stores(FILE *out, const fb_results *res, const fb_first_corruption *fc)
{
	int here = erased_at(fc);
	for (int i = 0; i < FB_DISCIPLINES; i++) {
		fb_discipline d = (fb_discipline)fc->order[i];
		char line[300];
		if (!res->mode[d].on || !fc->outcome[d])
			continue;
		said(line, sizeof line, res, fc, d, (int)d == here);
		fprintf(out, "  %10s       %s\n", "", line);
	}
}

/* "44 stale writes accepted in all (unfenced)" */
static void print_total(FILE *out, const fb_results *res)
{
	fprintf(out, "  in all:");
	const char *sep = " ";
	for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) {
		const fb_mode_result *m = &res->mode[shown[i]];
		if (!m->on)
			continue;
		fprintf(out, "%s%s %s %s", sep, fb_column(res, shown[i]), G(m->stale_accepted),
		        m->stale_accepted == 1 ? "stale write accepted" : "stale writes accepted");
		sep = ", ";
	}
	fprintf(out, "\n");
}

void fb_story_print(FILE *out, const fb_results *res)
{
	const fb_first_corruption *shaped = &res->shaped, *first = &res->first;
	if (!first->found && !shaped->found)
		return;
	if (!article_shaped(shaped) && !first->found)
		first = shaped;
	if (article_shaped(shaped)) {
		fprintf(out,
		        "first corruption, key %u, as the article tells it (the unfenced store "
		        "took a "
		        "stale write the fenced one refused):\n",
		        shaped->key);
		print_one(out, res, shaped);
		if (first->found && !same_write(first, shaped)) {
			fprintf(out, "the run's very first corruption had another shape, key %u:\n",
			        first->key);
			print_one(out, res, first);
		}
	} else {
		fprintf(out, "first corruption, key %u:\n", first->key);
		print_one(out, res, first);
	}
	print_total(out, res);
}

/* ---- JSON ---- */

static const char *outcome_key(uint8_t o)
{
	switch (o) {
	case FB_OUT_ACCEPTED:
		return "accepted_in_order";
	case FB_OUT_STALE:
		return "accepted_stale";
	case FB_OUT_REJECTED:
		return "rejected_stale";
	case FB_OUT_READ_REFUSED:
		return "read_refused";
	case FB_OUT_REFUSED_HOLDER:
		return "refused_rightful_holder";
	case FB_OUT_REFUSED_OTHER:
		return "refused_other_reason";
	case FB_OUT_REFUSED:
		return "refused_not_judged";
	default:
		return "not_written";
	}
}

static json_object *j_ms(const fb_first_corruption *fc, uint64_t t)
{
	return t ? json_object_new_double(ms(fc, t)) : NULL;
}

static json_object *j_story(const fb_results *res, const fb_first_corruption *fc)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "shape",
	                       json_object_new_string(article_shaped(fc) ? "article" : "other"));
	json_object_object_add(o, "key", json_object_new_int64(fc->key));
	json_object *a = json_object_new_object();
	json_object_object_add(a, "worker", json_object_new_int(fc->writer));
	json_object_object_add(a, "fence", json_object_new_int64((int64_t)fc->fence));
	json_object_object_add(a, "acquired_ms", j_ms(fc, fc->expires_at ? fc->acquired_at : 0));
	json_object_object_add(a, "lease_until_ms", j_ms(fc, fc->expires_at));
	json_object_object_add(a, "wrote_ms", j_ms(fc, fc->wrote_at));
	json_object_object_add(a, "resent_copy", json_object_new_boolean(fc->resent));
	json_object_object_add(o, "writer", a);
	json_object *f = NULL;
	int failover = fc->fault < 0 ? failover_fault(fc) : -1;
	if (failover >= 0) { /* issue 24: a failover's fault, before A's acquire */
		f = json_object_new_object();
		json_object_object_add(f, "kind",
		                       json_object_new_string(fb_fault_names[FB_FAULT_NEMESIS]));
		json_object_object_add(f, "failover", json_object_new_boolean(true));
		json_object_object_add(f, "began_ms", j_ms(fc, fc->before[failover].at));
		json_object_object_add(f, "healed_ms", j_ms(fc, fc->before[failover].end));
	} else if (fc->fault >= 0) {
		f = json_object_new_object();
		json_object_object_add(f, "kind",
		                       json_object_new_string(fb_fault_names[fc->fault]));
		if (fc->fault == FB_FAULT_PAUSE && fc->fault_ns)
			json_object_object_add(
			        f, "at",
			        json_object_new_string(
			                fc->fault_where == FB_AT_TRAPPED
			                        ? "trapped"
			                        : fb_fault_at_names[fc->fault_where]));
		if (fc->fault == FB_FAULT_PAUSE && fc->fault_ns)
			json_object_object_add(f, "spans_expiry",
			                       json_object_new_boolean(pause_spans_expiry(fc)));
		json_object_object_add(f, "began_ms", j_ms(fc, fc->fault_at));
		json_object_object_add(
		        f, "lasted_ms",
		        fc->fault_ns ? json_object_new_double((double)fc->fault_ns / 1e6) : NULL);
	}
	json_object_object_add(o, "fault", f);
	json_object *b = json_object_new_object();
	json_object_object_add(b, "worker",
	                       fc->newer_owner ? json_object_new_int(fc->newer_owner) : NULL);
	json_object_object_add(b, "fence", json_object_new_int64((int64_t)fc->newer_fence));
	json_object_object_add(b, "acquired_ms", j_ms(fc, fc->newer_acquired_at));
	json_object_object_add(b, "wrote_ms",
	                       fc->newer_written ? j_ms(fc, fc->newer_wrote_at) : NULL);
	json_object *bs = json_object_new_object();
	for (int d = 0; d < FB_DISCIPLINES && fc->newer_written; d++)
		if (res->mode[d].on)
			json_object_object_add(
			        bs, fb_discipline_key((fb_discipline)d),
			        json_object_new_string(outcome_key(fc->newer_outcome[d])));
	json_object_object_add(b, "stores", bs);
	json_object_object_add(o, "newer", b);
	json_object *st = json_object_new_object();
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		if (!res->mode[d].on)
			continue;
		json_object *s = json_object_new_object();
		json_object_object_add(s, "outcome",
		                       json_object_new_string(outcome_key(fc->outcome[d])));
		if (fc->outcome[d] && fc->outcome[d] != FB_OUT_ACCEPTED && fc->highest[d])
			json_object_object_add(s, "had_seen_fence",
			                       json_object_new_int64((int64_t)fc->highest[d]));
		json_object_object_add(st, fb_discipline_key((fb_discipline)d), s);
	}
	json_object_object_add(o, "stores", st);
	json_object_object_add(o, "erased_debits",
	                       json_object_new_int64(fc->erased > 0 ? fc->erased : 0));
	return o;
}

json_object *fb_story_json(const fb_results *res)
{
	const fb_first_corruption *shaped = &res->shaped, *first = &res->first;
	if (!first->found && !shaped->found)
		return NULL;
	bool article = article_shaped(shaped);
	json_object *o = j_story(res, article || !first->found ? shaped : first);
	if (article && first->found && !same_write(first, shaped))
		json_object_object_add(o, "run_first", j_story(res, first));
	json_object *tot = json_object_new_object();
	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (res->mode[d].on)
			json_object_object_add(
			        tot, fb_discipline_key((fb_discipline)d),
			        json_object_new_int64((int64_t)res->mode[d].stale_accepted));
	json_object_object_add(o, "stale_writes_accepted", tot);
	return o;
}
