/*
 * Throwaway servers for the engine tests: a redis-server (optionally under
 * libfaketime), a PostgreSQL cluster (initdb, then postgres itself), a
 * standalone ZooKeeper and a single-member etcd, each in a temporary
 * directory, listening on 127.0.0.1 at a free port, always stopped: by
 * fb_server_stop, and at exit or on a fatal signal for any still running.
 */
#ifndef FB_TEST_SERVERS_H
#define FB_TEST_SERVERS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef enum fb_server_kind {
	FB_SERVER_REDIS,
	FB_SERVER_POSTGRES,
	FB_SERVER_ZOOKEEPER,      /* tickTime 10 ms: session timeouts from 20 ms allowed */
	FB_SERVER_ETCD,           /* heartbeat 10 ms, election 50 ms: leases from 1 s */
	FB_SERVER_REDIS_FAKETIME, /* redis-server whose wall clock libfaketime
	                             offsets by what `faketime` (a file) says */
	FB_SERVER_ETCD_DEFAULTS,  /* etcd with its default timing: leases from 2 s */
	/* issue 24: a Redis replica of another server (fb_server_start_of), and
	 * a Sentinel monitoring that server as master "fb" (quorum 2, down
	 * after 300 ms, failover timeout 2 s); its url is redis://HOST:PORT of
	 * the Sentinel itself */
	FB_SERVER_REDIS_REPLICA,
	FB_SERVER_REDIS_SENTINEL,
	/* issue 24: a member of a three-member etcd cluster (heartbeat 10 ms,
	 * election 50 ms) or ZooKeeper ensemble (tickTime 10 ms, -Xmx128m),
	 * started by fb_cluster_start only */
	FB_SERVER_ETCD_MEMBER,
	FB_SERVER_ZK_MEMBER,
} fb_server_kind;

typedef struct fb_server {
	fb_server_kind kind;
	pid_t pid;          /* the server process (postmaster / redis-server) */
	int port;           /* on 127.0.0.1 */
	char dir[256];      /* its temporary directory, removed on stop */
	char url[512];      /* redis://127.0.0.1:PORT/0, postgres://USER@127.0.0.1:PORT/postgres,
	                       zk://127.0.0.1:PORT, etcd://127.0.0.1:PORT */
	char faketime[300]; /* REDIS_FAKETIME: its offset file ("+0" at start) */
	char why[256];      /* why it was skipped or failed */
} fb_server;

/* 1: started and accepting connections; 0: the server's binaries are not
 * installed (why says which; a test binary asks fb_servers_installed
 * first); -1: failed to start (why says how). */
int fb_server_start(fb_server_kind kind, fb_server *s);

/* The same, for a kind that names another server (of): the primary a
 * replica follows or a Sentinel monitors. */
int fb_server_start_of(fb_server_kind kind, const fb_server *of, fb_server *s);

/* Whether the servers of kinds[0..n) are all installed. If not, prints
 * "SKIPPED: <what>, <tests> tests: <why> (apt-get install -y <packages>)"
 * on stdout, the line make test shows, naming every Debian package that
 * is missing, tells the runner (fb_test_skipped) and returns false. */
bool fb_servers_installed(const char *what, const fb_server_kind *kinds, size_t n, size_t tests);

/* Stop it (gracefully, then SIGKILL) and remove its directory. Idempotent. */
void fb_server_stop(fb_server *s);

/* Kill it at once (SIGKILL), as a crash mid-run: the directory stays until
 * fb_server_stop. */
void fb_server_kill(fb_server *s);

#define FB_CLUSTER_SIZE 3

/*
 * Issue 24: three members of one etcd cluster (kind FB_SERVER_ETCD_MEMBER)
 * or ZooKeeper ensemble (FB_SERVER_ZK_MEMBER), each in its own directory
 * holding `port` (its client port), `run` (a shell script that execs it on
 * its data: a nemesis restarts a killed member with it) and `pid` (its
 * PID, which such a restart rewrites), as scripts/servers.sh lays them
 * out for scripts/nemesis-etcd.sh and nemesis-zk.sh. 1 once every member
 * answers and names a leader; 0 not installed; -1 failed (m[0].why).
 * url gets etcd://A,B,C or zk://A,B,C, dirs DIR,DIR,DIR. Each member is
 * stopped by fb_server_stop, which also stops a restarted one by the PID
 * its pid file names.
 */
int fb_cluster_start(fb_server_kind kind, fb_server m[FB_CLUSTER_SIZE], char *url, size_t ulen,
                     char *dirs, size_t dlen);

#endif
