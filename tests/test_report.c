/*
 * The report's lines that judge a figure, on crafted results: a run above
 * its floor pipeline is not told the pipeline is its floor. The metrics
 * table (metrics.h): each name once, and which way is better agrees with
 * the verdict.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fbproc.h"
#include "fbtest.h"
#include "metrics.h"
#include "options.h"
#include "report.h"

/* A sweep row's line for a run of ops cycles in 1 s beside a floor
 * pipeline of floor ops/s (printed as the first row: with its heading). */
static char *sweep_line(const fb_config *cfg, uint64_t ops, double floor)
{
	static fb_results res;
	memset(&res, 0, sizeof res);
	res.cfg = cfg;
	res.ops = ops;
	res.elapsed_s = 1;
	res.floor_ops_s = floor;
	for (int d = 0; d < FB_DISCIPLINES; d++)
		res.mode[d] = (fb_mode_result){.on = true, .checker_agrees = true};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	fb_report_sweep_line(f, cfg, &res, true);
	fclose(f);
	return text;
}

static void test_a_run_above_its_floor_is_told_the_floor_is_no_bound(void **state)
{
	(void)state;
	fb_config cfg;
	fb_config_defaults(&cfg);
	char *s = sweep_line(&cfg, 1420000, 1000000);
	check(strstr(s, "1.42*"), "the ratio, starred:\n%s", s);
	check(strstr(s, "above 1: no bound for this run"), "and said why:\n%s", s);
	free(s);
	s = sweep_line(&cfg, 500000, 1000000);
	check(strstr(s, "0.50") && !strstr(s, "0.50*") && !strstr(s, "no bound"),
	      "below its floor, a plain ratio:\n%s", s);
	free(s);
}

/* No two metrics share a key, a label, a JSON path or check's label or key:
 * a swap or a copy in the table shows here, or in the outputs it names. */
static void test_each_metric_is_named_once(void **state)
{
	(void)state;
	for (int i = 0; i < FB_METRICS; i++) {
		const fb_metric *a = &fb_metrics[i];
		check(a->key && *a->key, "metric %d has a key", i);
		check(a->label || a->check_label || a->json || a->check_json,
		      "metric %s is shown or written somewhere", a->key);
		check(!a->note || a->label, "%s: a note after a row it has", a->key);
		for (int j = 0; j < i; j++) {
			const fb_metric *b = &fb_metrics[j];
			check(strcmp(a->key, b->key), "%s twice", a->key);
#define DISTINCT(f)                                                                                \
	check(!a->f || !b->f || strcmp(a->f, b->f), "%s and %s share " #f " '%s'", b->key, a->key, \
	      a->f)
			DISTINCT(label);
			DISTINCT(check_label);
			DISTINCT(check_json);
			DISTINCT(csv);
#undef DISTINCT
			check(!a->json || !b->json || a->from_top != b->from_top ||
			              strcmp(a->json, b->json),
			      "%s and %s share the JSON path '%s'", b->key, a->key, a->json);
		}
	}
}

/* A count that fails a fenced discipline's verdict is a count where lower
 * is better: each discipline's count set to 1 alone, on a run that
 * otherwise passes. */
static void test_a_count_the_verdict_fails_on_is_lower_better(void **state)
{
	(void)state;
	fb_config cfg;
	fb_config_defaults(&cfg);
	cfg.op = FB_OP_DEBIT; /* the control's rule counts chances, not losses */
	static fb_results res;
	int failing = 0;
	for (int id = 0; id < FB_METRICS; id++) {
		const fb_metric *m = &fb_metrics[id];
		if (m->from != FB_FROM_MODE)
			continue;
		for (int d = 0; d < FB_DISCIPLINES; d++) {
			memset(&res, 0, sizeof res);
			res.cfg = &cfg;
			for (int e = 0; e < FB_DISCIPLINES; e++)
				res.mode[e] = (fb_mode_result){.on = true, .checker_agrees = true};
			check(fb_report_verdict(&res) == 0, "the crafted run passes");
			uint64_t one = 1;
			memcpy((char *)&res.mode[d] + m->at, &one, sizeof one);
			int64_t v = 0;
			check(fb_metric_get(&res, d, (fb_metric_id)id, &v) && v == 1,
			      "%s reads the field it names", m->key);
			if (fb_report_verdict(&res) == 0)
				continue;
			failing++;
			check(m->better == FB_BETTER_LOWER,
			      "%s fails %s's verdict, so lower is better, not %d", m->key,
			      fb_discipline_name((fb_discipline)d), (int)m->better);
		}
	}
	/* stale accepted x2, lost updates, false rejections x2, stale reads */
	check(failing >= 6, "the verdict failed on %d counts", failing);
}

/* The rest of the directions, pinned: time is better shorter, throughput
 * higher; what the faults provoked is neither. */
static void test_which_way_is_better(void **state)
{
	(void)state;
	for (int id = 0; id < FB_METRICS; id++)
		if (fb_metrics[id].unit == FB_UNIT_NS)
			check(fb_metrics[id].better == FB_BETTER_LOWER, "%s: shorter is better",
			      fb_metrics[id].key);
	check(fb_metrics[FB_M_THROUGHPUT].better == FB_BETTER_HIGHER, "throughput: higher");
	check(fb_metrics[FB_M_FAIRNESS].better == FB_BETTER_HIGHER, "fairness: higher");
	check(fb_metrics[FB_M_CAS_PER_OP].better == FB_BETTER_LOWER, "CAS retries: fewer");
	static const fb_metric_id provoked[] = {FB_M_REJECTED_STALE, FB_M_READS_REFUSED,
	                                        FB_M_ZOMBIE_WRITES, FB_M_ACCEPTED};
	for (size_t i = 0; i < sizeof provoked / sizeof provoked[0]; i++)
		check(fb_metrics[provoked[i]].better == FB_BETTER_NEITHER,
		      "%s measures the faults, not the system", fb_metrics[provoked[i]].key);
}

/* Where no checker ran, the updates lost are unknown: "-" in the table,
 * null in the document, never a 0 that reads as "none lost"; the CSV keeps
 * its columns. */
static void test_without_a_checker_lost_updates_are_unknown(void **state)
{
	(void)state;
	char *dir = fb_test_tmpdir();
	char json[600], row[160];
	snprintf(json, sizeof json, "%s/run.json", dir);
	fb_test_proc p;
	int code = fb_test_run(&p, (const char *const[]){"-t", "2", "-d", "200ms", "--no-check",
	                                                 "-o", dir, "--json", json, NULL});
	check(code == 0, "exit %d\n%s%s", code, p.out, p.err);
	snprintf(row, sizeof row, "%-22s %13s %13s %13s   %s\n",
	         fb_metrics[FB_M_LOST_UPDATES].label, "-", "-", "-",
	         fb_metrics[FB_M_LOST_UPDATES].note);
	check(strstr(p.out, row), "the row\n%sin:\n%s", row, p.out);
	json_object *doc = fb_test_load(json);
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		char path[96];
		snprintf(path, sizeof path, "modes.%s", fb_discipline_key((fb_discipline)d));
		json_object *m = fb_test_json(doc, path), *x = NULL;
		check(m && json_object_object_get_ex(m, "lost_updates", &x) && x == NULL,
		      "%s.lost_updates is null", path);
	}
	json_object_put(doc);
	/* and the CSV's columns, as results/README.md names them */
	char csv[700], head[256] = "";
	check(fb_test_find_suffix(dir, ".csv", csv, sizeof csv), "a CSV in %s", dir);
	FILE *f = fopen(csv, "r");
	check(f && fgets(head, sizeof head, f), "%s has a first line", csv);
	fclose(f);
	check(!strcmp(head, "t_s,mode,ops,ops_per_s,writes,accepted,rejected_stale,reads_refused,"
	                    "stale_accepted,faults,threads,fence,dist,pause_rate,lost_updates\n"),
	      "the CSV's columns: %s", head);
	fb_test_release(&p);
	fb_test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_a_run_above_its_floor_is_told_the_floor_is_no_bound),
	        cmocka_unit_test(test_each_metric_is_named_once),
	        cmocka_unit_test(test_a_count_the_verdict_fails_on_is_lower_better),
	        cmocka_unit_test(test_which_way_is_better),
	        cmocka_unit_test(test_without_a_checker_lost_updates_are_unknown),
	};
	return cmocka_run_group_tests_name("report", tests, NULL, NULL);
}
