/*
 * The options' defaults, from the one table (bench/config/options.c): what
 * a run given nothing gets, the defaults that follow the TTL, and those a
 * condition selects (a store not fencebench's own, a remote engine, skew
 * alone). In-process: parsing touches no server.
 */
#include <string.h>

#include "fbtest.h"
#include "options.h"

#define MAX_ARGS 16

static fb_config parsed(const char *const *args)
{
	char *argv[MAX_ARGS + 1] = {"fencebench"};
	int argc = 1;
	for (; args[argc - 1]; argc++)
		argv[argc] = (char *)args[argc - 1];
	argv[argc] = NULL;
	fb_config cfg;
	fb_config_defaults(&cfg);
	check(fb_config_parse(&cfg, argc, argv) == FB_PARSE_RUN, "the options parse");
	return cfg;
}

static void test_a_run_given_nothing_takes_the_tables_defaults(void **state)
{
	(void)state;
	static const char *const none[] = {NULL};
	fb_config c = parsed(none);
	check_eq(c.duration_ns, 10000000000, "--duration 10s");
	check_eq(c.keys, 16, "--keys 16");
	check_eq(c.ttl_ns, 10 * MS, "--ttl 10ms");
	check_eq(c.modes, (1u << FB_FENCED) | (1u << FB_WRITE_FENCED) | (1u << FB_UNFENCED),
	         "--mode all");
	check_eq(c.op, FB_OP_RMW, "--op rmw");
	check_eq(c.fences, 1u << FB_FENCE_GLOBAL, "--fence global");
	check_eq(c.n_dist, 1, "one key choice");
	check_eq(c.dist.kind, FB_DIST_UNIFORM, "--dist uniform");
	check_eq(c.on_held, 0, "--on-held wait");
	check_eq(c.first_fence, 1, "--first-fence 1");
	check_eq(c.seed, 1, "--seed 1");
	check_eq(c.faults, 1u << FB_FAULT_PAUSE, "--faults pause");
	check_eq(c.fault_at, FB_AT_MIX, "--fault-at mix");
	check_eq(c.n_pause_rate, 1, "one pause rate");
	check(c.pause_rate == 50 && c.pause_rate_list[0] == 50, "--pause-rate 50");
	check(c.skew_rate == 20 && c.skew_drift == 0.5 && c.delay_rate == 20 && c.crash_rate == 2 &&
	              c.renew_rate == 20 && c.retry_rate == 20 && c.server_pause_rate == 2 &&
	              c.node_jump_rate == 2 && c.partition_rate == 5 && c.wire_delay_rate == 5 &&
	              c.wire_reset_rate == 5 && c.nemesis_rate == 1,
	      "the fault rates");
	check(c.nemesis_names && !strcmp(c.nemesis_names, "nemesis"), "--nemesis-names nemesis");
	check_eq(c.nemesis_timeout_ns, 10000000000, "--nemesis-timeout 10s");
	check_eq(c.bug, FB_BUG_NONE, "--bug none");
	check_eq(c.check_lease, FB_CHECK_NONE, "--check-lease none");
	check_eq(c.lease_clock, FB_LEASE_CLOCK_MONOTONIC, "--lease-clock monotonic");
	check(c.work_min_ns == 0 && c.work_max_ns == 0, "--work 0");
	check_eq(c.steps, 200000, "--steps 200000");
	check_eq(c.sample, 32, "--sample 32");
	check(c.n_percentiles == 5 && c.percentiles[0] == 50 && c.percentiles[4] == 99.99,
	      "--percentiles 50,90,99,99.9,99.99");
	check(c.results_dir && !strcmp(c.results_dir, "results"), "--results-dir results");
	check_eq(c.progress, FB_PROGRESS_AUTO, "--progress auto");
	check(!c.store_faults && !c.lease_url && !c.store_url, "in-process engines");
}

static void test_sizes_left_unset_follow_the_ttl(void **state)
{
	(void)state;
	static const char *const ttl[] = {"--ttl", "7ms", NULL};
	fb_config c = parsed(ttl);
	check(c.pause_min_ns == 10500 * 1000 && c.pause_max_ns == 21 * MS, "--pause 1.5-3 x TTL");
	check(c.delay_min_ns == 14 * MS && c.delay_max_ns == 28 * MS, "--delay 2-4 x TTL");
	check_eq(c.skew_ns, 14 * MS, "--skew 2 x TTL");
	check(c.partition_min_ns == 14 * MS && c.partition_max_ns == 21 * MS,
	      "--partition 2-3 x TTL");
	check(c.wire_delay_min_ns == 14 * MS && c.wire_delay_max_ns == 14 * MS,
	      "--wire-delay 2 x TTL");
	check(c.nemesis_min_ns == 14 * MS && c.nemesis_max_ns == 21 * MS,
	      "--nemesis-length 2-3 x TTL");
	/* an odd TTL rounds down, as ttl * 3 / 2 did */
	static const char *const odd[] = {"--ttl", "1001ns", NULL};
	c = parsed(odd);
	check(c.pause_min_ns == 1501 && c.pause_max_ns == 3003, "1.5-3 x 1001 ns: %llu-%llu",
	      (unsigned long long)c.pause_min_ns, (unsigned long long)c.pause_max_ns);
	/* a size given stands */
	static const char *const given[] = {"--pause", "5ms", "--faults", "pause,skew",
	                                    "--skew",  "3ms", NULL};
	c = parsed(given);
	check(c.pause_min_ns == 5 * MS && c.pause_max_ns == 5 * MS && c.skew_ns == 3 * MS,
	      "given sizes stand");
}

static void test_a_condition_selects_its_default(void **state)
{
	(void)state;
	/* a store not fencebench's own: pause,retry,delay; a remote engine: every cycle timed */
	static const char *const store[] = {"--store", "redis://127.0.0.1:6379/0", NULL};
	fb_config c = parsed(store);
	check_eq(c.faults, (1u << FB_FAULT_PAUSE) | (1u << FB_FAULT_RETRY) | (1u << FB_FAULT_DELAY),
	         "--faults pause,retry,delay against a remote store");
	check(c.store_faults, "said so");
	check_eq(c.sample, 1, "--sample 1 with a remote engine");
	static const char *const sample[] = {
	        "--store", "redis://127.0.0.1:6379/0", "--sample", "8", "--faults", "pause", NULL};
	c = parsed(sample);
	check(c.sample == 8 && c.faults == 1u << FB_FAULT_PAUSE && !c.store_faults,
	      "given values stand");
	/* skew alone: holders work 0.05-0.5 x TTL, or no step catches one */
	static const char *const skew[] = {"--faults", "skew", NULL};
	c = parsed(skew);
	check(c.work_min_ns == 500 * 1000 && c.work_max_ns == 5 * MS, "--work 0.05-0.5 x TTL");
	static const char *const both[] = {"--faults", "skew,pause", NULL};
	c = parsed(both);
	check(c.work_min_ns == 0 && c.work_max_ns == 0, "--work 0 unless skew is alone");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_a_run_given_nothing_takes_the_tables_defaults),
	        cmocka_unit_test(test_sizes_left_unset_follow_the_ttl),
	        cmocka_unit_test(test_a_condition_selects_its_default),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
