/*
 * The first corruption's story names a fault as the cause only when it
 * spanned the expiry it is said to cause: a pause that ended before the
 * lease ran out (or began after) is told as what it was, and the machine
 * as what held the writer back.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fbtest.h"
#include "options.h"
#include "story.h"

/* A's write, fence 42, stale in the unfenced store, refused by the fenced
 * one; B (fence 50) took over at 25 ms. A's lease ran 0..10 ms; its pause
 * began at pause_at ms and lasted pause_ms. The story, as printed (free it). */
static fb_results *built(const fb_config *cfg, double pause_at, double pause_ms)
{
	static fb_results res;
	memset(&res, 0, sizeof res);
	res.cfg = cfg;
	for (int d = 0; d < FB_DISCIPLINES; d++)
		res.mode[d].on = true;
	res.mode[FB_UNFENCED].stale_accepted = 1;
	fb_first_corruption *fc = &res.first;
	fc->found = true;
	fc->key = 2;
	fc->writer = 1;
	fc->fault = FB_FAULT_PAUSE;
	fc->fault_where = FB_AT_AFTER_READ;
	fc->t0 = 1000 * MS;
	fc->fence = 42;
	fc->acquired_at = fc->t0;
	fc->expires_at = fc->t0 + 10 * MS;
	fc->fault_at = fc->t0 + (uint64_t)(pause_at * 1e6);
	fc->fault_ns = (uint64_t)(pause_ms * 1e6);
	fc->wrote_at = fc->t0 + 90 * MS;
	fc->outcome[FB_UNFENCED] = FB_OUT_STALE;
	fc->outcome[FB_FENCED] = FB_OUT_REJECTED;
	fc->outcome[FB_WRITE_FENCED] = FB_OUT_REJECTED;
	for (int d = 0; d < FB_DISCIPLINES; d++) {
		fc->order[d] = (uint8_t)d;
		fc->highest[d] = 50;
		fc->newer_outcome[d] = FB_OUT_ACCEPTED;
	}
	fc->newer_fence = 50;
	fc->newer_owner = 2;
	fc->newer_written = true;
	fc->newer_acquired_at = fc->t0 + 25 * MS;
	fc->newer_wrote_at = fc->t0 + 26 * MS;
	res.shaped = *fc;
	return &res;
}

static char *printed(fb_results *res)
{
	res->shaped = res->first;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	fb_story_print(f, res);
	fclose(f);
	if (getenv("FB_SHOW"))
		fputs(text, stderr);
	return text;
}

static char *story(const fb_config *cfg, double pause_at, double pause_ms)
{
	return printed(built(cfg, pause_at, pause_ms));
}

/* Issue 24: a failover re-minted A's fence. B took fence 50 at 25 ms from
 * the old primary; A took fence 42 at a_at ms from the promoted one (its
 * lease a_at..a_at+10, its write at a_at+5). No fault hit A's cycle; a
 * nemesis fault ('primary-kill') struck at fault_at ms and was healed at
 * healed ms (0: not yet when the story was taken). */
static char *failover(const fb_config *cfg, double a_at, double fault_at, double healed)
{
	fb_results *res = built(cfg, 0, 0);
	fb_first_corruption *fc = &res->first;
	fc->fault = -1;
	fc->fault_at = fc->fault_ns = 0;
	fc->acquired_at = fc->t0 + (uint64_t)(a_at * 1e6);
	fc->expires_at = fc->acquired_at + 10 * MS;
	fc->wrote_at = fc->acquired_at + 5 * MS;
	fc->nbefore = 1;
	fc->before[0].at = fc->t0 + (uint64_t)(fault_at * 1e6);
	fc->before[0].end = healed ? fc->t0 + (uint64_t)(healed * 1e6) : 0;
	fc->before[0].name = 1;
	return printed(res);
}

static void test_a_failover_under_way_between_the_acquires_is_told_as_the_cause(void **state)
{
	(void)state;
	fb_config cfg;
	fb_config_defaults(&cfg);
	cfg.nemesis_names = "pause-replica,primary-kill";
	char *s = failover(&cfg, 60, 20, 40); /* 20..40 ms: over B's acquire at 25 */
	check(strstr(s, "--nemesis starts its fault 'primary-kill' (healed at 40.000 ms): under "
	                "way between the acquires of fence 50 and fence 42"),
	      "the fault, named, dated:\n%s", s);
	check(strstr(s, "the lease service handed fence 42 out after fence 50: a failover"),
	      "the re-minted fence as the failover's:\n%s", s);
	check(!strstr(s, "no fault was injected"), "and no word against it:\n%s", s);
	free(s);
	s = failover(&cfg, 60, 30, 0); /* after B's acquire, not healed when told */
	check(strstr(s, "(not healed by then)") && strstr(s, "a failover lost"),
	      "a fault still under way is the cause too:\n%s", s);
	free(s);
}

static void test_a_fault_not_under_way_between_the_acquires_is_not_blamed(void **state)
{
	(void)state;
	fb_config cfg;
	fb_config_defaults(&cfg);
	cfg.nemesis_names = "primary-kill";
	char *s = failover(&cfg, 60, 10, 20); /* healed before B's acquire at 25 */
	check(!strstr(s, "--nemesis") && strstr(s, "no fault was injected"),
	      "a fault over before the takeover is not the cause:\n%s", s);
	free(s);
	s = failover(&cfg, 60, 61, 70); /* struck after A's acquire (60) */
	check(!strstr(s, "--nemesis") && strstr(s, "no fault was injected"),
	      "a fault after A's acquire re-minted nothing:\n%s", s);
	free(s);
	s = failover(&cfg, 20, 10, 40); /* A acquired before B: no fence went backwards */
	check(!strstr(s, "--nemesis") && !strstr(s, "failover"),
	      "an ordinary takeover is not a failover's:\n%s", s);
	free(s);
}

static void test_a_pause_that_spans_the_expiry_is_told_as_its_cause(void **state)
{
	(void)state;
	fb_config cfg;
	fb_config_defaults(&cfg);
	char *s = story(&cfg, 1, 20); /* 1..21 ms, the lease ran out at 10 */
	check(strstr(s, "w1 paused 20ms (injected, after-read)\n"), "the pause, plainly:\n%s", s);
	check(!strstr(s, "not the cause"), "and nothing against it:\n%s", s);
	free(s);
}

static void test_a_pause_that_ended_before_the_expiry_is_not_the_cause(void **state)
{
	(void)state;
	fb_config cfg;
	fb_config_defaults(&cfg);
	char *s = story(&cfg, 1, 2); /* 1..3 ms: over 7 ms before the expiry */
	check(strstr(s, "w1 paused 2ms (injected, after-read); it ended at 3.000 ms, before its "
	                "lease expired: not the cause"),
	      "the pause is told as over before the expiry:\n%s", s);
	check(strstr(s, "the machine itself held it back"), "and what held it:\n%s", s);
	free(s);
	s = story(&cfg, 12, 2); /* 12..14 ms: after the expiry */
	check(strstr(s, "it began at 12.000 ms, after its lease expired: not the cause"),
	      "a pause after the expiry caused none:\n%s", s);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_a_pause_that_spans_the_expiry_is_told_as_its_cause),
	        cmocka_unit_test(test_a_pause_that_ended_before_the_expiry_is_not_the_cause),
	        cmocka_unit_test(
	                test_a_failover_under_way_between_the_acquires_is_told_as_the_cause),
	        cmocka_unit_test(test_a_fault_not_under_way_between_the_acquires_is_not_blamed),
	};
	return cmocka_run_group_tests_name("story", tests, NULL, NULL);
}
