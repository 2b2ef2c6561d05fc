/*
 * Issue 24, item 4: the wire as a fault. First the proxy alone (an echo
 * server on a thread, on 127.0.0.1): it relays, a partition holds a
 * direction for its length, a slow wire delays, a reset resets, a held
 * direction's buffer is bounded. Then end to end through a throwaway
 * redis-server: partitions and slow wires between the workers and Redis
 * (leases and store) corrupt the unfenced store with no client pause at
 * all, the fenced one stays SAFE with no false rejection, and a plan
 * replays them. Time is only ever bounded below (a held byte cannot come
 * back sooner than its hold), never above.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "fbproc.h"
#include "fbtest.h"
#include "proxy.h"
#include "servers.h"
#include "wire.h"

/* ---- an echo server on a thread ---- */

static int echo_lfd = -1, echo_port;
static pthread_t echo_tid;

static void *echo_main(void *arg)
{
	(void)arg;
	for (;;) {
		int c = accept(echo_lfd, NULL, NULL);
		if (c < 0)
			return NULL;
		char b[65536];
		ssize_t n;
		while ((n = recv(c, b, sizeof b, 0)) > 0)
			for (ssize_t o = 0, w; o < n; o += w)
				if ((w = send(c, b + o, (size_t)(n - o), MSG_NOSIGNAL)) <= 0)
					break;
		close(c);
	}
}

static void echo_start(void)
{
	echo_lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	check(echo_lfd >= 0 && bind(echo_lfd, (struct sockaddr *)&a, sizeof a) == 0 &&
	              listen(echo_lfd, 16) == 0 &&
	              getsockname(echo_lfd, (struct sockaddr *)&a, &al) == 0,
	      "the echo server listens on 127.0.0.1: %s", strerror(errno));
	echo_port = ntohs(a.sin_port);
	check(pthread_create(&echo_tid, NULL, echo_main, NULL) == 0, "the echo thread starts");
}

static void echo_stop(void)
{
	shutdown(echo_lfd, SHUT_RDWR);
	pthread_join(echo_tid, NULL);
	close(echo_lfd);
}

static fb_proxy *proxy(size_t cap, int *port)
{
	fb_proxy *p = NULL;
	char err[256];
	check(fb_proxy_start("127.0.0.1", echo_port, cap, &p, port, err, sizeof err) == FB_OK,
	      "the proxy starts: %s", err);
	return p;
}

static int dial(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	check(fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0,
	      "connect to the proxy: %s", strerror(errno));
	return fd;
}

/* Send msg and read its echo whole; the nanoseconds it took. */
static uint64_t round_trip(int fd, const char *msg)
{
	uint64_t t0 = fb_clock_now(fb_clock_monotonic());
	size_t n = strlen(msg);
	check(send(fd, msg, n, MSG_NOSIGNAL) == (ssize_t)n, "send: %s", strerror(errno));
	char b[256] = "";
	size_t got = 0;
	while (got < n) {
		ssize_t r = recv(fd, b + got, sizeof b - 1 - got, 0);
		check(r > 0, "the echo of '%s' came back (recv %zd: %s)", msg, r, strerror(errno));
		got += (size_t)r;
	}
	check(memcmp(b, msg, n) == 0, "the echo is what was sent: '%s' for '%s'", b, msg);
	return fb_clock_now(fb_clock_monotonic()) - t0;
}

/* A proxy with one connection through it, used once (so it is live and
 * the most recent). */
static fb_proxy *one_connection(size_t cap, int *fd)
{
	int port;
	fb_proxy *p = proxy(cap, &port);
	*fd = dial(port);
	round_trip(*fd, "hello");
	return p;
}

/* Stop the proxy and the client; the proxy's count of fault f. */
static uint64_t finish(fb_proxy *p, int fd, fb_proxy_fault f)
{
	fb_proxy_stats st;
	fb_proxy_stop(p, &st);
	close(fd);
	return st.faults[f];
}

static void test_the_proxy_relays_both_ways_and_counts_what_it_relayed(void **state)
{
	(void)state;
	int port;
	fb_proxy *p = proxy(0, &port);
	int fd = dial(port);
	for (int i = 0; i < 100; i++)
		round_trip(fd, "fencing token 33");
	close(fd);
	fb_proxy_stats st;
	fb_proxy_stop(p, &st);
	check_eq(st.conns, 1, "connections accepted");
	check_eq(st.bytes[0], 1600, "bytes relayed to the server");
	check_eq(st.bytes[1], 1600, "bytes relayed back to the client");
	check_eq(st.full_unfaulted, 0, "buffers full with no fault holding them");
}

/* Each direction alone, then both: nothing comes back before the hold. */
static void test_a_partition_holds_a_direction_for_its_length(void **state)
{
	(void)state;
	int fd;
	fb_proxy *p = one_connection(0, &fd);
	const unsigned dirs[] = {FB_PROXY_TO_SERVER, FB_PROXY_TO_CLIENT, FB_PROXY_BOTH};
	for (int i = 0; i < 3; i++) {
		uint64_t t0 = fb_clock_now(fb_clock_monotonic());
		check(fb_proxy_strike(p, FB_PROXY_PARTITION, dirs[i], 150 * MS, 0, false, 0) == 0,
		      "the partition struck the one connection");
		round_trip(fd, "held");
		uint64_t since = fb_clock_now(fb_clock_monotonic()) - t0;
		check(since >= 150 * MS,
		      "direction set %u: the echo came %.1f ms after the strike, "
		      "before the 150 ms partition healed",
		      dirs[i], (double)since / 1e6);
	}
	check_eq(finish(p, fd, FB_PROXY_PARTITION), 3, "partitions taken");
}

static void test_a_slow_wire_delays_the_bytes_it_carries(void **state)
{
	(void)state;
	int fd;
	fb_proxy *p = one_connection(0, &fd);
	uint64_t t0 = fb_clock_now(fb_clock_monotonic());
	check(fb_proxy_strike(p, FB_PROXY_DELAY, FB_PROXY_TO_SERVER, 120 * MS, 0, false, 0) == 0,
	      "the slow wire struck the one connection");
	round_trip(fd, "late");
	uint64_t since = fb_clock_now(fb_clock_monotonic()) - t0;
	/* read inside the window: due 120 ms after it was read; after it:
	 * read 120 ms after the strike at the earliest. Either way: */
	check(since >= 120 * MS, "the echo came %.1f ms after the strike, sooner than the delay",
	      (double)since / 1e6);
	check_eq(finish(p, fd, FB_PROXY_DELAY), 1, "slow wires taken");
}

static void test_a_reset_tears_the_connection_down(void **state)
{
	(void)state;
	int fd;
	fb_proxy *p = one_connection(0, &fd);
	int64_t hit = fb_proxy_strike(p, FB_PROXY_RESET, FB_PROXY_BOTH, 0, 0, true, 0);
	check_eq(hit, 0, "the reset names connection 0");
	char b[8];
	ssize_t r = recv(fd, b, sizeof b, 0);
	check(r == 0 || (r < 0 && errno == ECONNRESET),
	      "the client sees its connection end (recv %zd, %s)", r, strerror(errno));
	check_eq(fb_proxy_strike(p, FB_PROXY_PARTITION, 3, MS, 0, true, 0), -1,
	         "a connection torn down is not struck again");
	check_eq(finish(p, fd, FB_PROXY_RESET), 1, "resets taken");
}

/* Send and send until a buffer of the proxy filled (one no fault held,
 * when unfaulted), bounded: the kernel's buffers on both sides are a few
 * MB at most. Its stats then; *sent, what went out. */
static fb_proxy_stats flood(fb_proxy *p, int fd, bool unfaulted, uint64_t *sent)
{
	static char block[65536];
	fb_proxy_stats st = {0};
	*sent = 0;
	while ((unfaulted ? st.full_unfaulted : st.full) == 0 && *sent < (UINT64_C(256) << 20)) {
		struct pollfd pf = {.fd = fd, .events = POLLOUT};
		if (poll(&pf, 1, 100) == 1) {
			ssize_t w = send(fd, block, sizeof block, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (w > 0)
				*sent += (uint64_t)w;
		}
		fb_proxy_stats_get(p, &st);
	}
	return st;
}

/* A held direction stops reading its source at the cap: the writer is
 * held back by TCP, the proxy's memory is not what grows. */
static void test_a_held_direction_buffers_at_most_its_cap(void **state)
{
	(void)state;
	int fd;
	fb_proxy *p = one_connection(64 * 1024, &fd);
	check(fb_proxy_strike(p, FB_PROXY_PARTITION, FB_PROXY_TO_SERVER, 600000 * MS, 0, false,
	                      0) == 0,
	      "the partition struck");
	uint64_t sent;
	fb_proxy_stats st = flood(p, fd, false, &sent);
	check(st.full >= 1, "the held direction filled its 64 KiB buffer (sent %llu bytes)",
	      (unsigned long long)sent);
	check_eq(st.full_unfaulted, 0, "a buffer held by a fault is not the proxy falling behind");
	check_eq(st.bytes[0], 5, "nothing held crossed (but the hello)");
	close(fd);
	fb_proxy_stop(p, &st);
}

/* A server slower than its client fills the proxy's buffer with no fault
 * holding it: counted apart, it is what "could not keep up" says. The
 * client never reads the echoes, so the echo server stops reading. */
static void test_a_buffer_full_with_no_fault_is_counted_apart(void **state)
{
	(void)state;
	int fd;
	fb_proxy *p = one_connection(4096, &fd);
	uint64_t sent;
	fb_proxy_stats st = flood(p, fd, true, &sent);
	check(st.full_unfaulted >= 1,
	      "a buffer filled with no fault holding it was counted (sent %llu bytes)",
	      (unsigned long long)sent);
	fb_proxy_stop(p, &st);
	close(fd);
}

static void test_a_proxied_url_points_at_the_proxies_and_keeps_the_rest(void **state)
{
	(void)state;
	fb_wire w = {0};
	char out[512], err[256];
	check(fb_wire_url(&w, "--store", "redis://127.0.0.1:6379/0", out, sizeof out, err,
	                  sizeof err) == FB_OK &&
	              strcmp(out, "redis://127.0.0.1:6379/0") == 0 && w.n == 0,
	      "a URL without proxy=1 is left alone: %s", out);
	char url[200]; /* two hosts (both the echo server: a proxy reaches its host at start) */
	snprintf(url, sizeof url,
	         "redlock://:p%%40ss@127.0.0.1:%d,127.0.0.1:%d/3?fence=incr&proxy=1&x=y", echo_port,
	         echo_port);
	check(fb_wire_url(&w, "--lease", url, out, sizeof out, err, sizeof err) == FB_OK,
	      "a proxied URL: %s", err);
	check_eq(w.n, 2, "one proxy per host");
	char want[300];
	int p0, p1;
	check(sscanf(out, "redlock://:p%%40ss@127.0.0.1:%d,127.0.0.1:%d/3?fence=incr&x=y", &p0,
	             &p1) == 2,
	      "the password as given, each host the proxy's, the rest without proxy=1: %s", out);
	snprintf(want, sizeof want, "redlock://:p%%40ss@127.0.0.1:%d,127.0.0.1:%d/3?fence=incr&x=y",
	         p0, p1);
	check(strcmp(out, want) == 0, "nothing else in it: %s", out);
	check(fb_wire_url(&w, "--store", "mongodb://127.0.0.1/x?proxy=1", out, sizeof out, err,
	                  sizeof err) == FB_EINVAL &&
	              strstr(err, "proxy=1"),
	      "an engine that is not known to be TCP is refused: %s", err);
	fb_wire_close(&w, UINT64_C(1000000000));
}

/* ---- end to end through Redis ---- */

static fb_server redis;
static bool have_redis;

static void test_the_wire_alone_corrupts_unfenced_and_fenced_stays_safe(void **state)
{
	(void)state;
	if (!have_redis)
		skip();
	char url[600];
	snprintf(url, sizeof url, "%s?proxy=1", redis.url);
	/* ~30 partitions and ~30 slow wires of 2-3 TTL on one key: a handful
	 * is enough for a stale write; three seeds bound a run that drew none */
	json_object *doc = NULL;
	fb_test_proc p;
	for (int seed = 1; seed <= 3; seed++) {
		char s[8];
		snprintf(s, sizeof s, "%d", seed);
		const char *args[] = {"-t",
		                      "8",
		                      "-k",
		                      "1",
		                      "-d",
		                      "3s",
		                      "--ttl",
		                      "100ms",
		                      "--seed",
		                      s,
		                      "--faults",
		                      "partition,wire-delay",
		                      "--partition-rate",
		                      "10",
		                      "--wire-delay-rate",
		                      "10",
		                      "--lease",
		                      url,
		                      "--store",
		                      url,
		                      NULL};
		if (doc) {
			json_object_put(doc);
			fb_test_release(&p);
		}
		doc = fb_test_run_doc(&p, args, 0);
		if (fb_test_num(doc, "modes.unfenced.stale_accepted") > 0)
			break;
	}
	check(fb_test_num(doc, "modes.unfenced.stale_accepted") > 0,
	      "the network alone made the unfenced store accept stale writes:\n%s", p.out);
	check(fb_test_num(doc, "run.faults.partition.taken") > 0 &&
	              fb_test_num(doc, "run.faults.wire_delay.taken") > 0,
	      "both wire faults were taken:\n%s", p.out);
	check(fb_test_num(doc, "run.faults.partition.over_ttl") > 0, "partitions outlast the TTL");
	check_eq(fb_test_num(doc, "modes.fenced.stale_accepted"), 0, "fenced stale accepted");
	check_eq(fb_test_num(doc, "modes.fenced.lost_updates"), 0, "fenced lost updates");
	check_eq(fb_test_num(doc, "modes.fenced.false_rejections"), 0, "fenced false rejections");
	check_eq(fb_test_num(doc, "modes.write_fenced.stale_accepted"), 0,
	         "write-fenced stale accepted");
	check_eq(fb_test_num(doc, "modes.write_fenced.false_rejections"), 0,
	         "write-fenced false rejections");
	check_eq(fb_test_num(doc, "modes.fenced.faults.pause"), 0, "no client pause at all");
	check(strstr(p.out, "fenced: SAFE") && strstr(p.out, "\npartition ") &&
	              strstr(p.out, "\nwire-delay ") && strstr(p.out, "partitions 10/s"),
	      "the verdict, the fault table's rows and the header say so:\n%s", p.out);
	json_object_put(doc);
	fb_test_release(&p);
}

/* The connections the test's redis-server has accepted so far (-1: it
 * did not say). */
static long long redis_connections(void)
{
	redisContext *c = redisConnect("127.0.0.1", redis.port);
	redisReply *r = c && !c->err ? redisCommand(c, "INFO stats") : NULL;
	const char *s = r && r->type == REDIS_REPLY_STRING
	                        ? strstr(r->str, "total_connections_received:")
	                        : NULL;
	long long n = s ? atoll(s + strlen("total_connections_received:")) : -1;
	freeReplyObject(r);
	redisFree(c);
	return n;
}

/*
 * Resets through the proxy (issue 24): ~60 connections torn down in 3 s on
 * one key, beside client pauses that make stale writes. Every engine
 * connection is in use all along, so a reset struck is a reset an engine
 * must connect again after: the run goes on and ends by its verdict (exit
 * 0 or 1), never 3. A write whose reply was lost is settled from the
 * store's history, so none stays indeterminate and every checker agrees
 * with its store; fenced is SAFE and refuses no rightful holder. Three
 * seeds bound a run whose pauses made no stale write at all.
 */
static void test_resets_are_survived_and_fenced_stays_safe(void **state)
{
	(void)state;
	if (!have_redis)
		skip();
	char url[600], plan[300];
	snprintf(url, sizeof url, "%s?proxy=1", redis.url);
	char *dir = fb_test_tmpdir();
	snprintf(plan, sizeof plan, "%s/plan", dir);
	json_object *doc = NULL;
	fb_test_proc p;
	long long conns = 0;
	for (int seed = 1; seed <= 3; seed++) {
		char s[8];
		snprintf(s, sizeof s, "%d", seed);
		conns = redis_connections();
		const char *args[] = {"-t",
		                      "8",
		                      "-k",
		                      "1",
		                      "-d",
		                      "3s",
		                      "--ttl",
		                      "100ms",
		                      "--seed",
		                      s,
		                      "--faults",
		                      "pause,wire-reset",
		                      "--wire-reset-rate",
		                      "20",
		                      "--lease",
		                      url,
		                      "--store",
		                      url,
		                      "--plan-out",
		                      plan,
		                      NULL};
		if (doc) {
			json_object_put(doc);
			fb_test_release(&p);
		}
		doc = fb_test_run_doc_any(&p, args);
		check(doc && (p.code == 0 || p.code == 1),
		      "a run with resets ends by its verdict, not exit 3: exit %d\n%s\n%s", p.code,
		      p.out, p.err);
		if (fb_test_num(doc, "modes.fenced.rejected_stale") > 0)
			break;
	}
	int64_t taken = fb_test_num(doc, "run.faults.wire_reset.taken");
	check(taken >= 10, "resets were struck and counted:\n%s", p.out);
	/* each reset of a connection in use is a connection made again: the
	 * server saw the run's own 16 and then at least half the resets' */
	conns = redis_connections() - conns;
	check(conns >= 16 + taken / 2,
	      "the resets tore connections down, which the engines made again (%lld connections "
	      "for %lld resets)",
	      conns, (long long)taken);
	check(fb_test_num(doc, "modes.fenced.rejected_stale") > 0,
	      "stale writes were attempted (not vacuous):\n%s", p.out);
	const char *modes[] = {"fenced", "write_fenced", "unfenced"};
	for (int i = 0; i < 3; i++) {
		char k[64];
		snprintf(k, sizeof k, "modes.%s.checker_agrees", modes[i]);
		json_object *agree = fb_test_json(doc, k);
		check(agree && json_object_get_boolean(agree),
		      "%s: every lost reply settled, its checker agrees with the store:\n%s",
		      modes[i], p.out);
		snprintf(k, sizeof k, "modes.%s.indeterminate", modes[i]);
		check_eq(fb_test_num(doc, k), 0, "no write left of unknown outcome");
	}
	check_eq(fb_test_num(doc, "modes.fenced.stale_accepted"), 0, "fenced stale accepted");
	check_eq(fb_test_num(doc, "modes.fenced.lost_updates"), 0, "fenced lost updates");
	check_eq(fb_test_num(doc, "modes.fenced.false_rejections"), 0, "fenced false rejections");
	check_eq(fb_test_num(doc, "modes.write_fenced.false_rejections"), 0,
	         "write-fenced false rejections");
	check(strstr(p.out, "fenced: SAFE") && strstr(p.out, "\nwire-reset ") &&
	              strstr(p.out, "connection resets 20/s"),
	      "the verdict, the fault table's row and the header say so:\n%s", p.out);
	/* the plan holds the resets, replayable: worker 0, no length, both ways */
	FILE *f = fopen(plan, "r");
	char line[256];
	int resets = 0;
	while (f && fgets(line, sizeof line, f))
		resets += !strncmp(line, "0 ", 2) && strstr(line, " wire-reset both idle 0 ");
	if (f)
		fclose(f);
	check(resets > 0, "the plan records the resets (%d)", resets);
	json_object_put(doc);
	fb_test_release(&p);
	const char *replay[] = {"-t",      "8",     "-k",       "1",          "-d",      "3s",
	                        "--ttl",   "100ms", "--faults", "wire-reset", "--lease", url,
	                        "--store", url,     "--plan",   plan,         NULL};
	doc = fb_test_run_doc_any(&p, replay);
	check(doc && p.code == 0 && fb_test_num(doc, "run.faults.wire_reset.taken") > 0,
	      "the replay strikes planned resets and ends by its verdict: exit %d\n%s\n%s", p.code,
	      p.out, p.err);
	json_object_put(doc);
	fb_test_release(&p);
	fb_test_rmtree(dir);
	free(dir);
}

static void test_wire_faults_replay_from_their_plan(void **state)
{
	(void)state;
	if (!have_redis)
		skip();
	char url[600], plan[300];
	snprintf(url, sizeof url, "%s?proxy=1", redis.url);
	char *dir = fb_test_tmpdir();
	snprintf(plan, sizeof plan, "%s/plan", dir);
	const char *rec[] = {"-t",
	                     "4",
	                     "-k",
	                     "1",
	                     "-d",
	                     "2s",
	                     "--ttl",
	                     "50ms",
	                     "--faults",
	                     "partition",
	                     "--partition-rate",
	                     "20",
	                     "--store",
	                     url,
	                     "--plan-out",
	                     plan,
	                     NULL};
	fb_test_proc p;
	json_object *doc = fb_test_run_doc(&p, rec, 0);
	int64_t taken = fb_test_num(doc, "run.faults.partition.taken");
	check(taken > 0, "partitions were taken:\n%s", p.out);
	json_object_put(doc);
	fb_test_release(&p);
	const char *replay[] = {"-t",      "4",     "-k",     "1",        "-d",
	                        "2s",      "--ttl", "50ms",   "--faults", "partition",
	                        "--store", url,     "--plan", plan,       NULL};
	doc = fb_test_run_doc(&p, replay, 0);
	check_eq(fb_test_num(doc, "run.faults.partition.taken"), taken,
	         "the replay struck every planned partition, on the same connections");
	check_eq(fb_test_num(doc, "modes.fenced.stale_accepted"), 0, "fenced stale accepted");
	json_object_put(doc);
	fb_test_release(&p);
	fb_test_rmtree(dir);
	free(dir);
}

/* A proxied engine that is not there is named as itself: exit 3. */
static void test_an_unreachable_proxied_engine_is_named_exit_3(void **state)
{
	(void)state;
	const char *args[] = {"-d", "1s", "-q", "--store", "redis://127.0.0.1:1/0?proxy=1", NULL};
	fb_test_proc p;
	check_eq(fb_test_run(&p, args), 3, "exit code");
	check(strstr(p.err, "--store") && strstr(p.err, "127.0.0.1:1:"),
	      "the error names the option and the server, not the proxy:\n%s", p.err);
	fb_test_release(&p);
}

static void test_a_wire_fault_without_a_proxied_url_is_a_usage_error(void **state)
{
	(void)state;
	const char *args[] = {"--faults", "partition", "--store", "redis://127.0.0.1:1/0", NULL};
	fb_test_proc p;
	check_eq(fb_test_run(&p, args), 2, "exit code");
	check(strstr(p.err, "--faults") && strstr(p.err, "proxy=1") &&
	              !strchr(strchr(p.err, '\n') + 1, '\n'),
	      "one line naming the option and the way out:\n%s", p.err);
	fb_test_release(&p);
}

/* ---- --nemesis exec:COMMAND ---- */

/* A script that SIGSTOPs the test's redis-server on start and SIGCONTs it
 * on heal, logging each call: a user's own cluster, faulted by the user. */
static void test_nemesis_runs_the_users_command_to_start_and_heal(void **state)
{
	(void)state;
	if (!have_redis)
		skip();
	char *dir = fb_test_tmpdir();
	char script[300], log[300], cmd[400];
	snprintf(script, sizeof script, "%s/nemesis.sh", dir);
	snprintf(log, sizeof log, "%s/calls", dir);
	FILE *f = fopen(script, "w");
	check(f, "write %s", script);
	fprintf(f,
	        "#!/bin/sh\necho \"$1 $2\" >> %s\n"
	        "case \"$1\" in start) kill -STOP %d;; heal) kill -CONT %d;; *) exit 9;; esac\n",
	        log, (int)redis.pid, (int)redis.pid);
	fclose(f);
	check(chmod(script, 0755) == 0, "chmod %s", script);
	snprintf(cmd, sizeof cmd, "exec:%s", script);
	const char *args[] = {"-t",
	                      "4",
	                      "-k",
	                      "1",
	                      "-d",
	                      "2s",
	                      "--ttl",
	                      "100ms",
	                      "--faults",
	                      "nemesis",
	                      "--nemesis",
	                      cmd,
	                      "--nemesis-rate",
	                      "5",
	                      "--nemesis-names",
	                      "stop-redis",
	                      "--nemesis-length",
	                      "200ms",
	                      "--lease",
	                      redis.url,
	                      "--store",
	                      redis.url,
	                      NULL};
	fb_test_proc p;
	json_object *doc = fb_test_run_doc(&p, args, 0);
	int64_t taken = fb_test_num(doc, "run.faults.nemesis.taken");
	check(taken > 0, "the nemesis struck:\n%s", p.out);
	check_eq(fb_test_num(doc, "modes.fenced.stale_accepted"), 0, "fenced stale accepted");
	check_eq(fb_test_num(doc, "modes.fenced.false_rejections"), 0, "fenced false rejections");
	check(strstr(p.out, "\nnemesis ") && strstr(p.out, "(stop-redis)"),
	      "the fault table's row and the header:\n%s", p.out);
	char calls[4096] = "";
	f = fopen(log, "r");
	check(f, "the script was called (%s)", log);
	size_t n = fread(calls, 1, sizeof calls - 1, f);
	fclose(f);
	calls[n] = 0;
	int starts = 0, heals = 0;
	for (const char *l = calls; (l = strstr(l, "start stop-redis\n")); l++)
		starts++;
	for (const char *l = calls; (l = strstr(l, "heal stop-redis\n")); l++)
		heals++;
	check_eq(starts, taken, "'start stop-redis' calls");
	check_eq(heals, taken, "'heal stop-redis' calls: every fault healed, the server whole");
	json_object_put(doc);
	fb_test_release(&p);
	fb_test_rmtree(dir);
	free(dir);
}

/* A command that fails, or outlives its deadline: exit 3, named. */
static void test_a_nemesis_that_fails_or_hangs_is_exit_3_naming_it(void **state)
{
	(void)state;
	const char *cmds[][2] = {
	        {"exec:echo no such cluster >&2; exit 4;", "exited 4: no such cluster"},
	        {"exec:f() { sleep 60; }; f", "did not finish within its deadline"}};
	for (int i = 0; i < 2; i++) {
		const char *args[] = {"-t",
		                      "2",
		                      "-d",
		                      "5s",
		                      "--faults",
		                      "nemesis",
		                      "--nemesis",
		                      cmds[i][0],
		                      "--nemesis-rate",
		                      "50",
		                      "--nemesis-timeout",
		                      "300ms",
		                      "-q",
		                      NULL};
		fb_test_proc p;
		check_eq(fb_test_run(&p, args), 3, cmds[i][0]);
		check(strstr(p.err, "--nemesis: '") && strstr(p.err, " start nemesis' ") &&
		              strstr(p.err, cmds[i][1]),
		      "the error names the command, the verb, the fault and why:\n%s", p.err);
		fb_test_release(&p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_the_proxy_relays_both_ways_and_counts_what_it_relayed),
	        cmocka_unit_test(test_a_partition_holds_a_direction_for_its_length),
	        cmocka_unit_test(test_a_slow_wire_delays_the_bytes_it_carries),
	        cmocka_unit_test(test_a_reset_tears_the_connection_down),
	        cmocka_unit_test(test_a_held_direction_buffers_at_most_its_cap),
	        cmocka_unit_test(test_a_buffer_full_with_no_fault_is_counted_apart),
	        cmocka_unit_test(test_a_proxied_url_points_at_the_proxies_and_keeps_the_rest),
	        cmocka_unit_test(test_a_wire_fault_without_a_proxied_url_is_a_usage_error),
	        cmocka_unit_test(test_an_unreachable_proxied_engine_is_named_exit_3),
	        cmocka_unit_test(test_the_wire_alone_corrupts_unfenced_and_fenced_stays_safe),
	        cmocka_unit_test(test_resets_are_survived_and_fenced_stays_safe),
	        cmocka_unit_test(test_wire_faults_replay_from_their_plan),
	        cmocka_unit_test(test_nemesis_runs_the_users_command_to_start_and_heal),
	        cmocka_unit_test(test_a_nemesis_that_fails_or_hangs_is_exit_3_naming_it),
	};
	echo_start();
	have_redis = fb_servers_installed("wire tests through Redis",
	                                  (fb_server_kind[]){FB_SERVER_REDIS}, 1, 3);
	if (have_redis && fb_server_start(FB_SERVER_REDIS, &redis) != 1) {
		fprintf(stderr, "cannot start redis-server: %s\n", redis.why);
		echo_stop();
		return 1;
	}
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	if (have_redis)
		fb_server_stop(&redis);
	echo_stop();
	return failed;
}
