/* The deterministic mode: reproducible histories, each fault alone doing what
 * the catalogue says it does, and fencing holding across a sweep of seeds. */
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "fbtest.h"
#include "sim.h"

#define US (UINT64_C(1000))

/* 8 workers on 8 keys with a 1 ms TTL: a TTL is about 800 steps, so a few
 * hundred thousand steps see hundreds of faults. No fault unless asked. */
static fb_config base(void)
{
	fb_config cfg;
	fb_config_defaults(&cfg);
	cfg.threads = 8;
	cfg.keys = 8;
	cfg.ttl_ns = 1 * MS;
	cfg.steps = 300000;
	cfg.faults = 0;
	cfg.quiet = true;
	cfg.deterministic = true;
	return cfg;
}

static fb_config every_fault(void)
{
	fb_config cfg = base();
	cfg.faults = (1u << FB_FAULTS) - 1;
	cfg.pause_rate = cfg.skew_rate = cfg.delay_rate = cfg.renew_rate = 200;
	cfg.crash_rate = 5;
	cfg.lease_clock = FB_LEASE_CLOCK_REALTIME;
	cfg.check_lease = FB_CHECK_LOCAL;
	return cfg;
}

static fb_sim_result run(const fb_config *cfg, uint64_t seed)
{
	fb_sim_result r;
	fb_err e = fb_sim_run(cfg, seed, &r);
	check_eq(e, FB_OK, "fb_sim_run of a valid configuration");
	check_eq(r.steps, cfg->steps, "every step asked for was run");
	return r;
}

/* Both fenced disciplines held and every checker agreed with its store. */
static void check_fencing_held(const fb_sim_result *r, const char *what)
{
	for (int d = 0; d < FB_DISCIPLINES; d++)
		check(!r->mode[d].on || r->mode[d].checker_agrees,
		      "%s, seed %llu: the %s checker disagrees with its store: %s", what,
		      (unsigned long long)r->seed, fb_discipline_name((fb_discipline)d),
		      r->mode[d].disagreement);
	check(r->mode[FB_FENCED].stale_accepted == 0 && r->mode[FB_FENCED].lost_updates == 0,
	      "%s, seed %llu: fenced accepted %llu stale writes and lost %lld updates", what,
	      (unsigned long long)r->seed, (unsigned long long)r->mode[FB_FENCED].stale_accepted,
	      (long long)r->mode[FB_FENCED].lost_updates);
	check(r->mode[FB_WRITE_FENCED].stale_accepted == 0,
	      "%s, seed %llu: write-fenced accepted %llu stale writes", what,
	      (unsigned long long)r->seed,
	      (unsigned long long)r->mode[FB_WRITE_FENCED].stale_accepted);
	check(!r->violation, "%s, seed %llu: no fenced violation", what,
	      (unsigned long long)r->seed);
}

/* One safety fault alone: it must bite (unfenced accepts stale writes that
 * the fault's own cycles attempted), and fencing must hold. */
static fb_sim_result check_fault_alone(const fb_config *cfg, fb_fault f)
{
	fb_sim_result r = run(cfg, 1);
	const char *name = fb_fault_names[f];
	check(r.fault[f].injected > 0, "%s alone: some %s faults took effect", name, name);
	for (int g = 0; g < FB_FAULTS; g++)
		if (g != (int)f)
			check_eq(r.fault[g].injected, 0, "only the selected fault is injected");
	check(r.mode[FB_UNFENCED].stale_accepted > 0,
	      "%s alone: unfenced accepted no stale write in %llu steps (%llu %s faults): the "
	      "fault never bit",
	      name, (unsigned long long)r.steps, (unsigned long long)r.fault[f].injected, name);
	check(r.fault[f].stale > 0, "%s alone: the stale writes come from %s-faulted cycles", name,
	      name);
	check(!r.vacuous, "%s alone: a run with stale writes is not vacuous", name);
	check_fencing_held(&r, name);
	return r;
}

static uint64_t fnv1a_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	check(f != NULL, "the history file %s exists", path);
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	int c;
	*len = 0;
	while ((c = fgetc(f)) != EOF) {
		h ^= (unsigned char)c;
		h *= UINT64_C(0x100000001b3);
		(*len)++;
	}
	fclose(f);
	return h;
}

static bool same_file(const char *a, const char *b)
{
	FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
	check(fa && fb, "both history files exist");
	int ca, cb;
	do {
		ca = fgetc(fa);
		cb = fgetc(fb);
	} while (ca == cb && ca != EOF);
	fclose(fa);
	fclose(fb);
	return ca == cb;
}

static void temp_path(char *buf, size_t len, const char *tag)
{
	const char *dir = getenv("TMPDIR");
	snprintf(buf, len, "%s/fb-test-sim-%s-XXXXXX", dir && *dir ? dir : "/tmp", tag);
	int fd = mkstemp(buf);
	check(fd >= 0, "a temporary file for the history");
	close(fd);
}

static void test_same_seed_same_history_byte_for_byte(void **state)
{
	(void)state;
	fb_config cfg = every_fault();
	cfg.steps = 100000;
	char pa[256], pb[256];
	temp_path(pa, sizeof pa, "a");
	temp_path(pb, sizeof pb, "b");
	cfg.history_path = pa;
	fb_sim_result a = run(&cfg, 42);
	cfg.history_path = pb;
	fb_sim_result b = run(&cfg, 42);
	check(a.hash == b.hash, "seed 42 twice: hashes 0x%016llx and 0x%016llx differ",
	      (unsigned long long)a.hash, (unsigned long long)b.hash);
	check(same_file(pa, pb), "seed 42 twice: the history files are identical");
	size_t len;
	uint64_t h = fnv1a_file(pa, &len);
	check(h == a.hash, "the reported hash is FNV-1a of the file's %zu bytes", len);
	check_eq(a.lines, b.lines, "same number of history lines");
	check(len > 0 && a.lines >= a.steps, "at least one history line a step");
	check_eq(a.stale_cycles, b.stale_cycles, "same stale attempts");
	check_eq(a.mode[FB_UNFENCED].stale_accepted, b.mode[FB_UNFENCED].stale_accepted,
	         "same unfenced corruption");
	check_eq(a.virtual_ns, b.virtual_ns, "same virtual time");
	for (int f = 0; f < FB_FAULTS; f++)
		check_eq(a.fault[f].injected, b.fault[f].injected, "same faults injected");
	cfg.history_path = NULL;
	fb_sim_result c = run(&cfg, 43);
	check(c.hash != a.hash, "seeds 42 and 43 give the same hash 0x%016llx",
	      (unsigned long long)a.hash);
	fb_sim_result d = run(&cfg, 42);
	check(d.hash == a.hash, "writing the history or not does not change it");
	unlink(pa);
	unlink(pb);
}

static void test_pause_alone_corrupts_unfenced_only(void **state)
{
	(void)state;
	fb_config cfg = base();
	cfg.faults = 1u << FB_FAULT_PAUSE;
	cfg.pause_rate = 500;
	(void)check_fault_alone(&cfg, FB_FAULT_PAUSE);
}

static void test_skew_of_a_realtime_lease_clock_corrupts_unfenced_only(void **state)
{
	(void)state;
	fb_config cfg = base();
	cfg.faults = 1u << FB_FAULT_SKEW;
	cfg.skew_rate = 500;
	cfg.lease_clock = FB_LEASE_CLOCK_REALTIME;
	(void)check_fault_alone(&cfg, FB_FAULT_SKEW);
}

static void test_delay_alone_corrupts_unfenced_only(void **state)
{
	(void)state;
	fb_config cfg = base();
	cfg.faults = 1u << FB_FAULT_DELAY;
	cfg.delay_rate = 500;
	(void)check_fault_alone(&cfg, FB_FAULT_DELAY);
}

static void test_late_renewal_alone_corrupts_unfenced_only(void **state)
{
	(void)state;
	fb_config cfg = base();
	cfg.faults = 1u << FB_FAULT_RENEW;
	cfg.renew_rate = 500;
	fb_sim_result r = check_fault_alone(&cfg, FB_FAULT_RENEW);
	check(r.renew_failed > 0, "some late renewals failed and were believed");
}

static void test_crashed_holder_lease_is_taken_over_within_a_ttl(void **state)
{
	(void)state;
	fb_config cfg = base();
	cfg.faults = 1u << FB_FAULT_CRASH;
	cfg.crash_rate = 15;
	cfg.steps = 200000;
	/* a TTL, plus the longest contended backoff (64 us) and a few steps */
	uint64_t bound = cfg.ttl_ns + 128 * US;
	for (uint64_t seed = 1; seed <= 3; seed++) {
		fb_sim_result r = run(&cfg, seed);
		const fb_sim_fault *c = &r.fault[FB_FAULT_CRASH];
		check(c->injected > 0, "seed %llu: some holders crashed", (unsigned long long)seed);
		check_eq(r.crash_taken + r.crash_pending, c->injected,
		         "every crashed lease is either taken over or still held at the end");
		check(r.crash_latency_max_ns <= bound,
		      "seed %llu: a dead holder's lease was taken over after %llu ns, more than "
		      "the TTL %llu ns plus the step granularity",
		      (unsigned long long)seed, (unsigned long long)r.crash_latency_max_ns,
		      (unsigned long long)cfg.ttl_ns);
		check(r.crash_pending_age_ns <= bound,
		      "seed %llu: a dead holder's lease still stands %llu ns after the crash",
		      (unsigned long long)seed, (unsigned long long)r.crash_pending_age_ns);
		check_eq(r.mode[FB_FENCED].lost_updates, 0, "fenced loses no update to a crash");
		check_fencing_held(&r, "crash");
	}
}

static void test_crashes_leave_one_worker_alive(void **state)
{
	(void)state;
	fb_config cfg = base();
	cfg.faults = 1u << FB_FAULT_CRASH;
	cfg.crash_rate = 100000;
	cfg.steps = 50000;
	fb_sim_result r = run(&cfg, 3);
	check_eq(r.fault[FB_FAULT_CRASH].injected, cfg.threads - 1,
	         "crashes stop when one worker is left");
	check(r.cycles > 1000, "the last worker goes on working (%llu cycles)",
	      (unsigned long long)r.cycles);
	check_fencing_held(&r, "crash storm");
}

static void test_takeover_pauses_show_write_fencing_loses_updates(void **state)
{
	(void)state;
	fb_config cfg = base();
	cfg.faults = 1u << FB_FAULT_PAUSE;
	cfg.pause_rate = 500;
	cfg.fault_at = FB_AT_TAKEOVER;
	fb_sim_result r = run(&cfg, 1);
	check(r.pause_trapped > 0, "takeover traps caught the next holders");
	check(r.mode[FB_WRITE_FENCED].lost_updates > 0,
	      "two holders read the same balance and both writes went forward: write-fenced "
	      "must lose updates");
	check_fencing_held(&r, "takeover");
}

static void test_is_held_check_misses_only_the_pause_after_it(void **state)
{
	(void)state;
	fb_config cfg = base();
	cfg.faults = 1u << FB_FAULT_PAUSE;
	cfg.pause_rate = 500;
	cfg.check_lease = FB_CHECK_IS_HELD;
	cfg.fault_at = FB_AT_AFTER_READ;
	fb_sim_result r = run(&cfg, 1);
	check(r.checks_failed > 0, "is_held() caught the holders paused before it");
	check(r.vacuous && r.mode[FB_UNFENCED].stale_accepted == 0,
	      "with every pause before the check, no stale write is even attempted");
	cfg.fault_at = FB_AT_AFTER_CHECK;
	r = run(&cfg, 1);
	check(r.mode[FB_UNFENCED].stale_accepted > 0,
	      "a pause between is_held() and the write: unfenced accepts stale writes");
	check_fencing_held(&r, "after-check");
}

static void test_skew_of_worker_clocks_alone_is_reported_vacuous(void **state)
{
	(void)state;
	fb_config cfg = base();
	cfg.faults = 1u << FB_FAULT_SKEW;
	cfg.skew_rate = 500;
	cfg.steps = 100000;
	fb_sim_result r = run(&cfg, 1);
	check(r.fault[FB_FAULT_SKEW].injected > 0, "worker clocks were skewed");
	check_eq(r.fault[FB_FAULT_SKEW].stale, 0,
	         "a worker's clock matters only to a local check, and there is none");
	check(r.vacuous, "no stale write attempted: vacuous, not a pass");
	check(!r.violation, "and no violation");
}

static void test_key_distributions_are_honoured(void **state)
{
	(void)state;
	fb_config cfg = base();
	cfg.faults = 1u << FB_FAULT_PAUSE;
	cfg.pause_rate = 500;
	cfg.steps = 100000;
	cfg.dist = (fb_dist){FB_DIST_PARTITIONED, 0};
	fb_sim_result r = run(&cfg, 1);
	check_eq(r.contended, 0, "partitioned keys: no worker ever finds a key held");
	check(r.vacuous, "nobody takes a paused worker's key over: no stale write attempted");
	cfg.dist = (fb_dist){FB_DIST_ZIPF, 0.99};
	r = run(&cfg, 1);
	fb_sim_result again = run(&cfg, 1);
	check(r.hash == again.hash, "zipf keys: the same seed gives the same history");
	check(r.mode[FB_UNFENCED].stale_accepted > 0, "hot keys under pauses: unfenced corrupted");
	check_fencing_held(&r, "zipf");
}

static void test_a_sweep_of_seeds_finds_no_fenced_violation(void **state)
{
	(void)state;
	fb_config cfg = every_fault();
	cfg.steps = 30000;
	uint64_t bitten = 0;
	for (uint64_t seed = 1; seed <= 20; seed++) {
		fb_sim_result r = run(&cfg, seed);
		check_fencing_held(&r, "sweep");
		bitten += !r.vacuous;
	}
	check(bitten >= 15, "the faults bit in most seeds (%llu of 20)",
	      (unsigned long long)bitten);
}

static void test_sim_main_exit_codes(void **state)
{
	(void)state;
	fb_config cfg = every_fault();
	cfg.steps = 20000;
	cfg.seed_lo = 1;
	cfg.seed_hi = 3;
	check_eq(fb_sim_main(&cfg), 0, "a sweep without fenced violation exits 0");
	cfg.seed_lo = cfg.seed_hi = 5;
	cfg.history_path = "/nonexistent-dir/history.txt";
	fb_sim_result r;
	check_eq(fb_sim_run(&cfg, 5, &r), FB_ESYS, "an unwritable history file is a system error");
	check_eq(fb_sim_main(&cfg), 3, "... and exit code 3");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_same_seed_same_history_byte_for_byte),
	        cmocka_unit_test(test_pause_alone_corrupts_unfenced_only),
	        cmocka_unit_test(test_skew_of_a_realtime_lease_clock_corrupts_unfenced_only),
	        cmocka_unit_test(test_delay_alone_corrupts_unfenced_only),
	        cmocka_unit_test(test_late_renewal_alone_corrupts_unfenced_only),
	        cmocka_unit_test(test_crashed_holder_lease_is_taken_over_within_a_ttl),
	        cmocka_unit_test(test_crashes_leave_one_worker_alive),
	        cmocka_unit_test(test_takeover_pauses_show_write_fencing_loses_updates),
	        cmocka_unit_test(test_is_held_check_misses_only_the_pause_after_it),
	        cmocka_unit_test(test_skew_of_worker_clocks_alone_is_reported_vacuous),
	        cmocka_unit_test(test_key_distributions_are_honoured),
	        cmocka_unit_test(test_a_sweep_of_seeds_finds_no_fenced_violation),
	        cmocka_unit_test(test_sim_main_exit_codes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
