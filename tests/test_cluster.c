/*
 * Issue 24, the clusters: a three-member etcd cluster and a three-server
 * ZooKeeper ensemble on 127.0.0.1 (tests/servers.c, fb_cluster_start),
 * leases on the whole cluster, and scripts/nemesis-etcd.sh or
 * nemesis-zk.sh killing (SIGKILL, then a restart on the same data) or
 * stopping (SIGSTOP, then SIGCONT) whichever member leads at the time.
 * Not part of `make test` (clusters are slow to start): `make
 * cluster-test`, which CI runs.
 *
 * What is judged is what a failover may not do to fencebench: the run
 * goes on across it (exit 0 or 1, by its verdict, never 3), the fenced
 * store is SAFE and refuses no rightful holder, the leader really was
 * struck (the script's own record, and the fault table), and the lease
 * service's verdict is reported, whatever it is. A strike needs a leader
 * to strike: a run in which one fault never found one is run again, a
 * bounded number of times.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fbproc.h"
#include "fbtest.h"
#include "servers.h"

#define RUNS   3  /* runs at most, until both faults struck in one */
#define WAIT_S 60 /* a bound on a hang, never a measure of speed */

static char root[PATH_MAX]; /* the repository: its scripts/ */

/* Gone: no such process, or a zombie (a restarted member's parent, the
 * nemesis script, is gone, and init reaps it in its own time). */
static bool gone(pid_t pid)
{
	if (kill(pid, 0) != 0)
		return true;
	char path[64], buf[256];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return true;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *p = strrchr(buf, ')'); /* "PID (COMM) STATE ..." */
	return p && p[1] == ' ' && p[2] == 'Z';
}

/* How many lines of the nemesis log start with name. */
static int strikes(const char *log, const char *name)
{
	FILE *f = fopen(log, "r");
	if (!f)
		return 0;
	char line[600];
	int n = 0;
	while (fgets(line, sizeof line, f))
		n += !strncmp(line, name, strlen(name)) && line[strlen(name)] == ' ';
	fclose(f);
	return n;
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Every member running (by the PID its pid file names now: a killed one
 * was restarted) and answering as one with a leader again, WAIT_S at
 * most. */
static bool all_back(const fb_server *m)
{
	time_t until = time(NULL) + WAIT_S;
	for (;;) {
		int up = 0;
		for (int i = 0; i < FB_CLUSTER_SIZE; i++) {
			char path[320], buf[600];
			snprintf(path, sizeof path, "%s/pid", m[i].dir);
			FILE *f = fopen(path, "r");
			int pid = 0;
			if (f) {
				if (fscanf(f, "%d", &pid) != 1)
					pid = 0;
				fclose(f);
			}
			/* a stopped member would still pass kill(0): ask it */
			snprintf(buf, sizeof buf,
			         m[i].kind == FB_SERVER_ETCD_MEMBER
			                 ? "curl -s -m 1 http://127.0.0.1:%d/health | grep -q "
			                   "'\"health\":\"true\"'"
			                 : "timeout 1 bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && "
			                   "printf "
			                   "srvr >&3 && cat <&3' 2>/dev/null | grep -Eq "
			                   "'Mode: (leader|follower)'",
			         m[i].port);
			up += pid > 0 && !gone(pid) && system(buf) == 0;
		}
		if (up == FB_CLUSTER_SIZE)
			return true;
		if (time(NULL) > until)
			return false;
		nap_ms(200);
	}
}

/*
 * Leases on the cluster, an in-process store, no client fault at all:
 * only the nemesis, one leader kill or stop at a time, 1 to 2 s long
 * (long enough for the ensemble's followers, which give up on a silent
 * leader after 1 s, to elect another).
 */
static void leader_faults(fb_server_kind kind, const char *script, const char *env)
{
	fb_server m[FB_CLUSTER_SIZE];
	char url[300], dirs[900];
	int rc = fb_cluster_start(kind, m, url, sizeof url, dirs, sizeof dirs);
	check(rc == 1, "the cluster starts: %s", m[0].why);
	check(setenv(env, dirs, 1) == 0, "setenv %s", env);
	char *dir = fb_test_tmpdir();
	char log[400], state[400], cmd[PATH_MAX + 16];
	snprintf(log, sizeof log, "%s/strikes", dir);
	snprintf(state, sizeof state, "%s/nemesis", dir);
	setenv("FB_NEMESIS_LOG", log, 1);
	setenv("FB_NEMESIS_STATE", state, 1);
	snprintf(cmd, sizeof cmd, "exec:%s/scripts/%s", root, script);
	const char *args[] = {"-t",
	                      "8",
	                      "-k",
	                      "4",
	                      "-d",
	                      "10s",
	                      "--ttl",
	                      "1s",
	                      "--faults",
	                      "nemesis",
	                      "--nemesis",
	                      cmd,
	                      "--nemesis-names",
	                      "leader-kill,leader-stop",
	                      "--nemesis-rate",
	                      "1",
	                      "--nemesis-length",
	                      "1s-2s",
	                      "--lease",
	                      url,
	                      NULL};
	for (int run = 1;; run++) {
		remove(log);
		fb_test_proc p;
		json_object *doc = fb_test_run_doc_any(&p, args);
		int kills = strikes(log, "leader-kill"), stops = strikes(log, "leader-stop");
		check(doc && (p.code == 0 || p.code == 1),
		      "the run went on across the leader's faults (exit 0 or 1 by its verdict), "
		      "not exit %d:\n%s\n%s",
		      p.code, p.out, p.err);
		check(strstr(p.out, "lease: "), "the lease service's verdict is reported:\n%s",
		      p.out);
		check(fb_test_json(doc, "run.lease_violations.fence_regressions") &&
		              fb_test_json(doc, "run.lease_violations.overlapping_leases"),
		      "and in the JSON:\n%s", p.out);
		check_eq(fb_test_num(doc, "modes.fenced.stale_accepted"), 0,
		         "fenced stale accepted");
		check_eq(fb_test_num(doc, "modes.fenced.lost_updates"), 0, "fenced lost updates");
		check_eq(fb_test_num(doc, "modes.fenced.false_rejections"), 0,
		         "fenced false rejections");
		check_eq(fb_test_num(doc, "modes.write_fenced.stale_accepted"), 0,
		         "write-fenced stale accepted");
		int64_t taken = fb_test_num(doc, "run.faults.nemesis.taken");
		check(taken >= kills + stops && taken > 0,
		      "the fault table counts the strikes (%d kills, %d stops): %lld taken\n%s",
		      kills, stops, (long long)taken, p.out);
		json_object_put(doc);
		fb_test_release(&p);
		/* healed: a killed leader restarted, a stopped one resumed */
		check(all_back(m), "every member is back in the cluster within %d s", WAIT_S);
		if (kills > 0 && stops > 0)
			break;
		check(run < RUNS,
		      "in %d runs, each fault found a leader to strike in one (last: %d kills, "
		      "%d stops)",
		      RUNS, kills, stops);
	}
	pid_t pids[FB_CLUSTER_SIZE];
	for (int i = 0; i < FB_CLUSTER_SIZE; i++) {
		char path[320];
		snprintf(path, sizeof path, "%s/pid", m[i].dir);
		FILE *f = fopen(path, "r");
		int pid = 0;
		if (f) {
			if (fscanf(f, "%d", &pid) != 1)
				pid = 0;
			fclose(f);
		}
		pids[i] = pid;
	}
	for (int i = 0; i < FB_CLUSTER_SIZE; i++)
		fb_server_stop(&m[i]);
	for (int i = 0; i < FB_CLUSTER_SIZE; i++)
		check(pids[i] <= 0 || gone(pids[i]),
		      "member %d (pid %d, restarted or not) is stopped by its PID", i + 1,
		      (int)pids[i]);
	unsetenv(env);
	fb_test_rmtree(dir);
	free(dir);
}

/*
 * The whole cluster gone mid-run: the refusals that ride out one member's
 * death are bounded, and the run ends as any dead engine's does, exit 3,
 * once no member has answered for the engine's timeout (10 s, plus what
 * the nemesis's own timeout and length add), naming it.
 */
static void whole_cluster_dies(fb_server_kind kind, const char *says)
{
	fb_server m[FB_CLUSTER_SIZE];
	char url[300], dirs[900];
	int rc = fb_cluster_start(kind, m, url, sizeof url, dirs, sizeof dirs);
	check(rc == 1, "the cluster starts: %s", m[0].why);
	char *dir = fb_test_tmpdir();
	char script[400], cmd[420];
	snprintf(script, sizeof script, "%s/kill-all.sh", dir);
	FILE *f = fopen(script, "w");
	check(f, "write %s", script);
	fprintf(f, "#!/bin/sh\n[ \"$1\" = start ] || exit 0\n");
	for (int i = 0; i < FB_CLUSTER_SIZE; i++)
		fprintf(f, "kill -9 %d\n", (int)m[i].pid);
	fclose(f);
	check(chmod(script, 0755) == 0, "chmod %s", script);
	snprintf(cmd, sizeof cmd, "exec:%s", script);
	/* a short nemesis (its timeout and length lengthen the engine's) */
	const char *args[] = {"-t",
	                      "4",
	                      "-k",
	                      "4",
	                      "-d",
	                      "60s",
	                      "--ttl",
	                      "1s",
	                      "--faults",
	                      "nemesis",
	                      "--nemesis",
	                      cmd,
	                      "--nemesis-rate",
	                      "5",
	                      "--nemesis-length",
	                      "100ms",
	                      "--nemesis-timeout",
	                      "2s",
	                      "--lease",
	                      url,
	                      NULL};
	fb_test_proc p;
	json_object *doc = fb_test_run_doc_any(&p, args);
	check(p.code == 3 && strstr(p.out, says) && strstr(p.out, "INCOMPLETE"),
	      "with every member dead the run ends, exit 3, saying '%s': exit %d\n%s\n%s", says,
	      p.code, p.out, p.err);
	json_object_put(doc);
	fb_test_release(&p);
	for (int i = 0; i < FB_CLUSTER_SIZE; i++)
		fb_server_stop(&m[i]);
	fb_test_rmtree(dir);
	free(dir);
}

static void test_etcd_with_every_member_dead_is_exit_3(void **state)
{
	(void)state;
	whole_cluster_dies(FB_SERVER_ETCD_MEMBER, "no member answered for ");
}

static void test_zookeeper_with_every_server_dead_is_exit_3(void **state)
{
	(void)state;
	whole_cluster_dies(FB_SERVER_ZK_MEMBER, "no server answered for ");
}

static void test_etcd_leader_kills_and_stops_leave_fenced_safe(void **state)
{
	(void)state;
	leader_faults(FB_SERVER_ETCD_MEMBER, "nemesis-etcd.sh", "FB_ETCD_MEMBERS");
}

static void test_zookeeper_leader_kills_and_stops_leave_fenced_safe(void **state)
{
	(void)state;
	leader_faults(FB_SERVER_ZK_MEMBER, "nemesis-zk.sh", "FB_ZK_MEMBERS");
}

/* Each kind on its own: one missing package skips only its test. */
static bool installed(fb_server_kind kind, const char *what)
{
	return fb_servers_installed(what, (fb_server_kind[]){kind}, 1, 2);
}

int main(void)
{
	const char *t = getenv("FB_TESTS");
	char here[PATH_MAX];
	snprintf(here, sizeof here, "%s", t && *t ? t : "tests");
	if (!realpath(here, root)) {
		fprintf(stderr, "cannot find the repository (FB_TESTS=%s): %s\n", here,
		        strerror(errno));
		return 1;
	}
	snprintf(here, sizeof here, "%s", root);
	snprintf(root, sizeof root, "%s", dirname(here));
	struct CMUnitTest tests[4];
	size_t n = 0;
	if (installed(FB_SERVER_ETCD_MEMBER, "etcd cluster tests")) {
		tests[n++] = (struct CMUnitTest)cmocka_unit_test(
		        test_etcd_leader_kills_and_stops_leave_fenced_safe);
		tests[n++] = (struct CMUnitTest)cmocka_unit_test(
		        test_etcd_with_every_member_dead_is_exit_3);
	}
	if (installed(FB_SERVER_ZK_MEMBER, "ZooKeeper ensemble tests")) {
		tests[n++] = (struct CMUnitTest)cmocka_unit_test(
		        test_zookeeper_leader_kills_and_stops_leave_fenced_safe);
		tests[n++] = (struct CMUnitTest)cmocka_unit_test(
		        test_zookeeper_with_every_server_dead_is_exit_3);
	}
	if (!n)
		return 0;
	return _cmocka_run_group_tests("clusters", tests, n, NULL, NULL);
}
