/*
 * The report's lines that judge a figure, on crafted results: a run above
 * its floor pipeline is not told the pipeline is its floor.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fbtest.h"
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_a_run_above_its_floor_is_told_the_floor_is_no_bound),
	};
	return cmocka_run_group_tests_name("report", tests, NULL, NULL);
}
