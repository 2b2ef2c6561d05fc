/*
 * Issue 24, item 1 for Redis: a primary, its replica and three Sentinels on
 * 127.0.0.1, started by the tests (tests/servers.c) and stopped by their
 * PIDs. The cluster is what a failover run needs: the Sentinels agree on
 * the primary, see the replica and each other, and when the primary is
 * killed they promote the replica. Waits are bounded (Sentinels say hello
 * every 2 s; a failover takes the 300 ms down-after and an election), and
 * judged on what the Sentinels say, never on a sleep's length.
 */
#define _GNU_SOURCE
#include <hiredis/hiredis.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "fbtest.h"
#include "servers.h"

#define SENTINELS 3
#define WAIT_S    30 /* a bound on a hang, never a measure of speed */

static fb_server primary, replica, sentinel[SENTINELS];

static redisReply *ask(const fb_server *s, const char *cmd)
{
	struct timeval tv = {1, 0};
	redisContext *c = redisConnectWithTimeout("127.0.0.1", s->port, tv);
	if (!c || c->err) {
		redisFree(c);
		return NULL;
	}
	redisSetTimeout(c, tv);
	redisReply *r = redisCommand(c, cmd);
	redisFree(c);
	return r;
}

/* The port Sentinel s names as master fb's, or 0. */
static int master_port(const fb_server *s)
{
	redisReply *r = ask(s, "SENTINEL get-master-addr-by-name fb");
	int port = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	                           r->element[1]->type == REDIS_REPLY_STRING
	                   ? atoi(r->element[1]->str)
	                   : 0;
	freeReplyObject(r);
	return port;
}

/* How many entries `SENTINEL <what> fb` lists on s. */
static int listed(const fb_server *s, const char *what)
{
	char cmd[64];
	snprintf(cmd, sizeof cmd, "SENTINEL %s fb", what);
	redisReply *r = ask(s, cmd);
	int n = r && r->type == REDIS_REPLY_ARRAY ? (int)r->elements : -1;
	freeReplyObject(r);
	return n;
}

static void nap_ms(long ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, NULL);
}

static bool every_sentinel(bool (*ok)(const fb_server *s))
{
	for (int i = 0; i < SENTINELS; i++)
		if (!ok(&sentinel[i]))
			return false;
	return true;
}

/* Bounded: poll until cond holds for every Sentinel, WAIT_S at most. */
static bool wait_for(bool (*ok)(const fb_server *s))
{
	time_t until = time(NULL) + WAIT_S;
	while (!every_sentinel(ok))
		if (time(NULL) > until)
			return false;
		else
			nap_ms(50);
	return true;
}

static bool knows_all(const fb_server *s)
{
	return master_port(s) == primary.port && listed(s, "replicas") == 1 &&
	       listed(s, "sentinels") == SENTINELS - 1;
}

static bool promoted(const fb_server *s)
{
	return master_port(s) == replica.port;
}

static void test_killing_the_primary_makes_the_sentinels_promote_the_replica(void **state)
{
	(void)state;
	check(wait_for(knows_all),
	      "every Sentinel names the primary (port %d), sees its replica and the other two "
	      "within %d s",
	      primary.port, WAIT_S);
	pid_t dead = primary.pid;
	fb_server_kill(&primary); /* SIGKILL: a crash, not a shutdown */
	check(kill(dead, 0) != 0, "the primary (pid %d) is gone", (int)dead);
	check(wait_for(promoted), "every Sentinel names the replica (port %d) master within %d s",
	      replica.port, WAIT_S);
	redisReply *r = ask(&replica, "ROLE");
	check(r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
	              !strcmp(r->element[0]->str, "master"),
	      "the replica says it is the master now");
	freeReplyObject(r);
}

static void stop_all(void)
{
	for (int i = 0; i < SENTINELS; i++)
		fb_server_stop(&sentinel[i]);
	fb_server_stop(&replica);
	fb_server_stop(&primary);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_killing_the_primary_makes_the_sentinels_promote_the_replica),
	};
	if (!fb_servers_installed("Sentinel tests", (fb_server_kind[]){FB_SERVER_REDIS_SENTINEL}, 1,
	                          1))
		return 0;
	bool up = fb_server_start(FB_SERVER_REDIS, &primary) == 1 &&
	          fb_server_start_of(FB_SERVER_REDIS_REPLICA, &primary, &replica) == 1;
	for (int i = 0; up && i < SENTINELS; i++)
		up = fb_server_start_of(FB_SERVER_REDIS_SENTINEL, &primary, &sentinel[i]) == 1;
	if (!up) {
		fprintf(stderr, "cannot start the Sentinel cluster: %s%s%s%s%s\n", primary.why,
		        replica.why, sentinel[0].why, sentinel[1].why, sentinel[2].why);
		stop_all();
		return 1;
	}
	int failed = cmocka_run_group_tests(tests, NULL, NULL);
	pid_t pids[] = {replica.pid, sentinel[0].pid, sentinel[1].pid, sentinel[2].pid};
	stop_all();
	for (size_t i = 0; i < sizeof pids / sizeof pids[0]; i++)
		if (pids[i] > 0 && kill(pids[i], 0) == 0) {
			fprintf(stderr, "pid %d is still running after its stop\n", (int)pids[i]);
			failed++;
		}
	return failed;
}
