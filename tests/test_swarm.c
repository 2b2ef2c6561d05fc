/* --swarm: each seed of a deterministic sweep draws its configuration.
 * The draws must spread over what a user could ask for, stay within what
 * the options accept, leave a user's own options standing, be the same for
 * the same seed, replay from the seed's line alone, and find what a planted
 * bug breaks across configurations while a correct build holds in all. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fbproc.h"
#include "fbtest.h"
#include "report.h"
#include "run.h"
#include "sim.h"

#define SEEDS 300

/* The configuration fencebench ARGS... would sweep (argv kept for the rows). */
static fb_config parsed(char **argv, int argc)
{
	fb_config cfg;
	fb_config_defaults(&cfg);
	check_eq(fb_config_parse(&cfg, argc, argv), FB_PARSE_RUN, "the command line parses");
	return cfg;
}

static fb_config row_of(const fb_config *base, uint64_t seed)
{
	fb_config row;
	check(fb_config_swarm(base, seed, &row) == FB_PARSE_RUN,
	      "seed %llu draws a configuration the options accept", (unsigned long long)seed);
	return row;
}

static void test_the_draws_spread_and_are_valid(void **state)
{
	(void)state;
	char *argv[] = {"fencebench", "--deterministic", "--seeds", "1..300", "--swarm", NULL};
	fb_config base = parsed(argv, 5);
	check(base.swarm && base.seeds_given, "--swarm and --seeds read");
	bool threads[65] = {false}, op[2] = {false}, fence[2] = {false}, dist[3] = {false};
	uint32_t n_threads = 0, n_keys_1 = 0, n_keys_many = 0, past_2_32 = 0, fault_seen = 0;
	uint64_t ttl_lo = UINT64_MAX, ttl_hi = 0;
	for (uint64_t seed = 1; seed <= SEEDS; seed++) {
		fb_config r = row_of(&base, seed);
		check(r.deterministic && !r.swarm && r.seed == seed && r.seed_lo == seed &&
		              r.seed_hi == seed,
		      "seed %llu's row runs that seed alone", (unsigned long long)seed);
		check(r.bug == FB_BUG_NONE, "seed %llu: no planted bug drawn",
		      (unsigned long long)seed);
		check(r.faults != 0, "seed %llu: some fault", (unsigned long long)seed);
		check(!(r.faults & (1u << FB_FAULT_SERVER_PAUSE | 1u << FB_FAULT_NODE_JUMP)),
		      "seed %llu: only faults the simulator runs", (unsigned long long)seed);
		check(r.dist.kind != FB_DIST_PARTITIONED || r.keys >= r.threads,
		      "seed %llu: partitioned with %u keys for %u workers",
		      (unsigned long long)seed, r.keys, r.threads);
		check(r.threads >= 1 && r.threads <= 64, "seed %llu: %u workers",
		      (unsigned long long)seed, r.threads);
		n_threads += !threads[r.threads];
		threads[r.threads] = true;
		op[r.op] = fence[r.fence] = dist[r.dist.kind] = true;
		n_keys_1 += r.keys == 1;
		n_keys_many += r.keys >= 64;
		past_2_32 += r.first_fence > UINT32_MAX - 1000;
		fault_seen |= r.faults;
		ttl_lo = r.ttl_ns < ttl_lo ? r.ttl_ns : ttl_lo;
		ttl_hi = r.ttl_ns > ttl_hi ? r.ttl_ns : ttl_hi;
		/* the same seed, the same draw */
		fb_config again = row_of(&base, seed);
		char a[2048], b[2048];
		fb_config_replay(&r, a, sizeof a);
		fb_config_replay(&again, b, sizeof b);
		check(!strcmp(a, b), "seed %llu drew twice differently:\n%s\n%s",
		      (unsigned long long)seed, a, b);
	}
	check(n_threads >= 6, "worker counts drawn: %u distinct", n_threads);
	check(n_keys_1 > 10 && n_keys_many > 10, "one key in %u seeds, 64 or more in %u", n_keys_1,
	      n_keys_many);
	check(ttl_hi >= 50 * ttl_lo, "TTLs from %llu to %llu ns", (unsigned long long)ttl_lo,
	      (unsigned long long)ttl_hi);
	check(op[0] && op[1] && fence[0] && fence[1], "both ops and both fence sources drawn");
	check(dist[FB_DIST_UNIFORM] && dist[FB_DIST_ZIPF] && dist[FB_DIST_PARTITIONED],
	      "every key distribution drawn");
	check(past_2_32 > 10, "fences started near 2^32 in %u seeds", past_2_32);
	uint32_t sim_faults = (1u << FB_FAULT_PAUSE) | (1u << FB_FAULT_SKEW) |
	                      (1u << FB_FAULT_DELAY) | (1u << FB_FAULT_CRASH) |
	                      (1u << FB_FAULT_RENEW) | (1u << FB_FAULT_RETRY);
	check_eq(fault_seen, sim_faults, "every fault the simulator runs was drawn");
}

/* A user's option stands in every seed, a fault option brings its fault,
 * and the rest of each seed's draw is what it was without the pin. */
static void test_given_options_stand_and_leave_the_rest_drawn(void **state)
{
	(void)state;
	char *free_argv[] = {"fencebench", "--deterministic", "--seeds", "1..40", "--swarm", NULL};
	char *pin_argv[] = {
	        "fencebench", "--deterministic", "--seeds", "1..40",        "--swarm", "-t",
	        "4",          "--ttl",           "5ms",     "--retry-rate", "7",       NULL};
	fb_config free_base = parsed(free_argv, 5), pin_base = parsed(pin_argv, 11);
	for (uint64_t seed = 1; seed <= 40; seed++) {
		fb_config f = row_of(&free_base, seed), p = row_of(&pin_base, seed);
		check(p.threads == 4 && p.ttl_ns == 5 * MS, "seed %llu: -t 4 --ttl 5ms stand",
		      (unsigned long long)seed);
		check((p.faults & (1u << FB_FAULT_RETRY)) && p.retry_rate == 7,
		      "seed %llu: --retry-rate 7 brings its fault", (unsigned long long)seed);
		check(p.keys == f.keys && p.op == f.op && p.fence == f.fence &&
		              p.first_fence == f.first_fence && p.check_lease == f.check_lease,
		      "seed %llu: pinning three options changed the others' draw",
		      (unsigned long long)seed);
		check(p.faults == (f.faults | (1u << FB_FAULT_RETRY)),
		      "seed %llu: the pinned fault joins the drawn ones (%#x, %#x)",
		      (unsigned long long)seed, p.faults, f.faults);
	}
}

/* A correct build holds in every drawn configuration; the faults bite in
 * most; a planted bug is found in some. */
static void test_fencing_holds_across_configurations_and_a_bug_is_found(void **state)
{
	(void)state;
	char *argv[] = {"fencebench", "--deterministic", "--seeds", "1..40",
	                "--swarm",    "--steps",         "20000",   NULL};
	fb_config base = parsed(argv, 7);
	uint32_t bitten = 0;
	for (uint64_t seed = 1; seed <= 40; seed++) {
		fb_config row = row_of(&base, seed);
		row.quiet = true;
		fb_results r;
		check(fb_sim_run(&row, seed, NULL, NULL, &r) == FB_OK, "seed %llu runs",
		      (unsigned long long)seed);
		for (int d = 0; d < FB_DISCIPLINES; d++)
			check(!r.mode[d].on || r.mode[d].checker_agrees,
			      "seed %llu: the %s checker disagrees: %s", (unsigned long long)seed,
			      fb_discipline_name((fb_discipline)d), r.mode[d].disagreement);
		check(!fb_report_verdict(&r), "seed %llu: a fenced violation in a correct build",
		      (unsigned long long)seed);
		bitten += !fb_report_vacuous(&r);
		fb_results_free(&r);
	}
	/* one worker, or one key a worker, has no stale write to make: 22 of
	 * these 40 bite at 20,000 steps */
	check(bitten >= 15, "the faults bit in %u of 40 seeds", bitten);

	char *bug_argv[] = {"fencebench", "--deterministic", "--seeds", "1..40",    "--swarm",
	                    "--steps",    "20000",           "--bug",   "ge-store", NULL};
	fb_config bug = parsed(bug_argv, 9);
	uint32_t caught = 0;
	for (uint64_t seed = 1; seed <= 40; seed++) {
		fb_config row = row_of(&bug, seed);
		check_eq(row.bug, FB_BUG_GE_STORE, "the user's --bug stands");
		row.quiet = true;
		fb_results r;
		check(fb_sim_run(&row, seed, NULL, NULL, &r) == FB_OK, "seed %llu runs",
		      (unsigned long long)seed);
		caught += fb_report_verdict(&r) != 0;
		fb_results_free(&r);
	}
	check(caught >= 5, "ge-store caught in %u of 40 drawn configurations", caught);
}

/* The binary: --swarm needs seeds; a seed's replay line, run, gives the
 * seed's history hash; so does the seed alone with --swarm. */
static void test_a_seeds_replay_line_gives_its_history(void **state)
{
	(void)state;
	fb_test_proc p;
	const char *bare[] = {"--deterministic", "--swarm", "-q", NULL};
	check(fb_test_run(&p, bare) == 2, "--swarm without --seeds: exit 2\n%s", p.err);
	check(strstr(p.err, "--swarm") && strstr(p.err, "--seeds") &&
	              strchr(p.err, '\n') == p.err + strlen(p.err) - 1,
	      "one line naming --swarm and --seeds:\n%s", p.err);
	fb_test_release(&p);

	char *dir = fb_test_tmpdir();
	const char *sweep[] = {"--deterministic", "--seeds", "5..7", "--swarm", "--steps",
	                       "20000",           "-q",      "-o",   dir,       NULL};
	check(fb_test_run(&p, sweep) == 0, "a swarm sweep passes:\n%s%s", p.out, p.err);
	const char *line = strstr(p.out, "\nseed 6 ");
	check(line != NULL, "seed 6's line:\n%s", p.out);
	char hash[32] = "", replay[2048] = "";
	check(sscanf(line, "\nseed 6 hash %31s", hash) == 1, "seed 6's hash:\n%s", line);
	const char *rl = strstr(line, "  replay: fencebench ");
	check(rl != NULL && rl < strstr(line + 1, "\nseed 7 "), "seed 6's replay line:\n%s", line);
	rl += strlen("  replay: fencebench ");
	size_t n = strcspn(rl, "\n");
	check(n < sizeof replay, "replay line fits");
	memcpy(replay, rl, n);
	fb_test_release(&p);
	/* the document: each row with its configuration and replay line */
	char path[4096];
	check(fb_test_find_suffix(dir, ".json", path, sizeof path), "the sweep's JSON in %s", dir);
	json_object *doc = fb_test_load(path);
	check(doc && fb_test_num(doc, "config.swarm") == 1, "the document says swarm: %s", path);
	json_object *row = json_object_array_get_idx(fb_test_json(doc, "rows"), 1);
	check(row && fb_test_num(row, "seed") == 6 && fb_test_json(row, "config.keys") &&
	              fb_test_json(row, "config.faults"),
	      "row 2 is seed 6 with its configuration: %s", json_object_to_json_string(row));
	const char *jr = json_object_get_string(fb_test_json(row, "replay"));
	check(!strncmp(jr, "fencebench ", 11) && !strcmp(jr + 11, replay),
	      "row 2's replay is the printed one: %s", json_object_to_json_string(row));
	json_object_put(doc);
	unlink(path);

	/* the replay line's words (no quoting: the simulator's options need none) */
	const char *args[128];
	int na = 0;
	for (char *save, *w = strtok_r(replay, " ", &save); w && na < 120;
	     w = strtok_r(NULL, " ", &save))
		args[na++] = w;
	args[na++] = "-q";
	args[na++] = "-o";
	args[na++] = dir;
	args[na] = NULL;
	check(fb_test_run(&p, args) <= 1, "the replay runs:\n%s", p.err);
	char want[64];
	snprintf(want, sizeof want, "history hash %s", hash);
	check(strstr(p.out, want) != NULL, "the replay gives %s:\n%s", want, p.out);
	fb_test_release(&p);

	const char *alone[] = {"--deterministic", "--seeds", "6..6", "--swarm", "--steps",
	                       "20000",           "-q",      "-o",   dir,       NULL};
	check(fb_test_run(&p, alone) <= 1, "seed 6 alone runs:\n%s", p.err);
	check(strstr(p.out, want) != NULL, "seed 6 alone gives %s:\n%s", want, p.out);
	check(strstr(p.out, "--swarm") == NULL && strstr(p.out, "workers") != NULL,
	      "its header is its drawn configuration:\n%s", p.out);
	fb_test_release(&p);
	fb_test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_the_draws_spread_and_are_valid),
	        cmocka_unit_test(test_given_options_stand_and_leave_the_rest_drawn),
	        cmocka_unit_test(test_fencing_holds_across_configurations_and_a_bug_is_found),
	        cmocka_unit_test(test_a_seeds_replay_line_gives_its_history),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
