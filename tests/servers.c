/*
 * Throwaway servers for the engine tests. Each lives in its own mkdtemp
 * directory and process group, listens on 127.0.0.1 at a port the kernel
 * just handed out, and is remembered in a small static registry until
 * fb_server_stop, so that an exit or a fatal signal never leaves one behind.
 */
#define _GNU_SOURCE
#include "servers.h"
#include "fbtest.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <ftw.h>
#include <glob.h>
#include <grp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <libpq-fe.h>

#define MAX_LIVE       16
#define PORT_TRIES     4
#define REDIS_READY_NS (UINT64_C(10) * 1000000000)
#define PG_READY_NS    (UINT64_C(30) * 1000000000)
#define ZK_READY_NS    (UINT64_C(60) * 1000000000)
#define ETCD_READY_NS  (UINT64_C(30) * 1000000000)
#define INITDB_NS      (UINT64_C(120) * 1000000000)
#define STOP_NS        (UINT64_C(5) * 1000000000)
#define POLL_NS        10000000L /* 10 ms between readiness and exit polls */

/*
 * The registry: what the exit and signal handlers need to kill a server
 * and remove its directory, copied, so that a caller's fb_server going out
 * of scope cannot leave a dangling pointer here. pid 0 is a free entry;
 * the signal handler reads only the pids (atomics, async-signal-safe).
 */
typedef struct live_server {
	_Atomic int pid;
	fb_server_kind kind;
	char dir[256];
} live_server;

static live_server live[MAX_LIVE];

/* snprintf that may cut: a reason too long for `why` is still a reason. */
static void say(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

static void nap(void)
{
	struct timespec ts = {0, POLL_NS};
	nanosleep(&ts, NULL);
}

/*
 * SIGKILL a server and every process it forked. A postmaster's children
 * each call setsid(), so killing its process group alone would leave the
 * backends running until they notice the postmaster died; their pids come
 * from /proc/PID/task/PID/children, read before the postmaster dies (its
 * orphans are reparented away from it). Async-signal-safe: open, read,
 * kill and hand-rolled parsing only.
 */
static void kill_tree(pid_t pid)
{
	char path[64] = "/proc/";
	char num[16];
	int n = 0;
	for (pid_t p = pid; p > 0 && n < (int)sizeof num; p /= 10)
		num[n++] = (char)('0' + p % 10);
	size_t o = strlen(path);
	for (int i = n - 1; i >= 0; i--)
		path[o++] = num[i];
	memcpy(path + o, "/task/", 6);
	o += 6;
	for (int i = n - 1; i >= 0; i--)
		path[o++] = num[i];
	memcpy(path + o, "/children", 10);

	char buf[4096];
	ssize_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		len = read(fd, buf, sizeof buf - 1);
		close(fd);
	}
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	pid_t child = 0;
	for (ssize_t i = 0; i < len; i++) {
		if (buf[i] >= '0' && buf[i] <= '9') {
			child = child * 10 + (buf[i] - '0');
		} else {
			if (child > 0)
				kill(child, SIGKILL);
			child = 0;
		}
	}
	if (child > 0)
		kill(child, SIGKILL);
}

static bool is_member(fb_server_kind kind)
{
	return kind == FB_SERVER_ETCD_MEMBER || kind == FB_SERVER_ZK_MEMBER;
}

/*
 * Issue 24: the PID in DIR/pid, which a nemesis that restarted a cluster
 * member rewrote; 0 if none. Async-signal-safe (the fatal handler's).
 */
static pid_t pid_in_file(const char *dir)
{
	char path[300];
	size_t n = strlen(dir);
	if (!n || n + 5 > sizeof path)
		return 0;
	memcpy(path, dir, n);
	memcpy(path + n, "/pid", 5);
	char buf[24];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t len = read(fd, buf, sizeof buf - 1);
	close(fd);
	pid_t pid = 0;
	for (ssize_t i = 0; i < len && buf[i] >= '0' && buf[i] <= '9'; i++)
		pid = pid * 10 + (buf[i] - '0');
	return pid;
}

static void registry_add(const fb_server *s)
{
	for (int i = 0; i < MAX_LIVE; i++) {
		int free_slot = 0;
		/* -1 claims the entry while it is filled in; handlers skip it */
		if (atomic_compare_exchange_strong_explicit(&live[i].pid, &free_slot, -1,
		                                            memory_order_acquire,
		                                            memory_order_relaxed)) {
			live[i].kind = s->kind;
			snprintf(live[i].dir, sizeof live[i].dir, "%s", s->dir);
			/* release: a handler that sees the pid sees the entry */
			atomic_store_explicit(&live[i].pid, s->pid, memory_order_release);
			return;
		}
	}
	fprintf(stderr, "servers: more than %d live servers; pid %d is not tracked\n", MAX_LIVE,
	        (int)s->pid);
}

static void registry_remove(pid_t pid)
{
	for (int i = 0; i < MAX_LIVE; i++) {
		int p = pid;
		atomic_compare_exchange_strong_explicit(&live[i].pid, &p, 0, memory_order_relaxed,
		                                        memory_order_relaxed);
	}
}

static const int fatal_signals[] = {SIGINT, SIGTERM, SIGABRT, SIGSEGV, SIGBUS, SIGHUP};
#define NFATAL ((int)(sizeof fatal_signals / sizeof fatal_signals[0]))
static struct sigaction previous[NFATAL];

/*
 * A fatal signal: kill every live server, remove their directories with
 * rm -rf (fork, execv and waitpid are async-signal-safe; walking a tree
 * here is not), then hand the signal to whoever had it before (the default
 * action, or a sanitizer's report), which runs once this handler returns
 * with the signal pending again.
 */
static void on_fatal(int sig)
{
	char *argv[MAX_LIVE + 3] = {"rm", "-rf"};
	int n = 2;
	for (int i = 0; i < MAX_LIVE; i++) {
		int pid = atomic_exchange_explicit(&live[i].pid, 0, memory_order_acquire);
		if (pid > 0) {
			kill_tree(pid);
			pid_t again = is_member(live[i].kind) ? pid_in_file(live[i].dir) : 0;
			if (again > 0 && again != pid)
				kill_tree(again);
			if (live[i].dir[0])
				argv[n++] = live[i].dir;
		}
	}
	argv[n] = NULL;
	if (n > 2) {
		pid_t rm = fork();
		if (rm == 0) {
			execv("/bin/rm", argv);
			_exit(127);
		}
		if (rm > 0)
			waitpid(rm, NULL, 0);
	}
	for (int i = 0; i < NFATAL; i++)
		if (fatal_signals[i] == sig)
			sigaction(sig, &previous[i], NULL);
	raise(sig);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void rmtree(const char *dir)
{
	if (dir[0])
		nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Reap pid if it has exited; true when it is gone. */
static bool reaped(pid_t pid, int *status)
{
	int st = 0;
	pid_t r = waitpid(pid, &st, WNOHANG);
	if (r == pid && status)
		*status = st;
	return r == pid || (r < 0 && errno == ECHILD);
}

static void stop_pid(fb_server_kind kind, pid_t pid)
{
	/* PostgreSQL's SIGTERM is a smart shutdown, which waits for every
	 * client to leave; SIGINT is the fast one, which ends them. */
	kill(pid, kind == FB_SERVER_POSTGRES ? SIGINT : SIGTERM);
	uint64_t deadline = now_ns() + STOP_NS;
	while (!reaped(pid, NULL)) {
		if (now_ns() > deadline) {
			kill_tree(pid);
			waitpid(pid, NULL, 0);
			break;
		}
		nap();
	}
}

/* Running: there, and no zombie (one whose parent is gone waits for init
 * to reap it). */
static bool running(pid_t pid)
{
	if (kill(pid, 0) != 0)
		return false;
	char path[64], buf[256];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *close_paren = strrchr(buf, ')'); /* "PID (COMM) STATE ..." */
	return !close_paren || close_paren[1] != ' ' || close_paren[2] != 'Z';
}

/* Issue 24: a cluster member a nemesis restarted is no child of ours:
 * SIGTERM, then SIGKILL if it is still running after STOP_NS. */
static void stop_restarted(fb_server_kind kind, const char *dir, pid_t first)
{
	pid_t pid = is_member(kind) ? pid_in_file(dir) : 0;
	if (pid <= 0 || pid == first)
		return;
	kill(pid, SIGTERM);
	uint64_t deadline = now_ns() + STOP_NS;
	while (running(pid)) {
		if (now_ns() > deadline) {
			kill_tree(pid);
			break;
		}
		nap();
	}
}

static void stop_all_at_exit(void)
{
	for (int i = 0; i < MAX_LIVE; i++) {
		int pid = atomic_exchange_explicit(&live[i].pid, 0, memory_order_relaxed);
		if (pid > 0) {
			stop_pid(live[i].kind, pid);
			stop_restarted(live[i].kind, live[i].dir, pid);
			rmtree(live[i].dir);
		}
	}
}

/* Once per process, whichever thread starts the first server. A signal
 * someone chose to ignore (nohup's SIGHUP) stays ignored. */
static void install_handlers_once(void)
{
	atexit(stop_all_at_exit);
	for (int i = 0; i < NFATAL; i++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_fatal;
		sigemptyset(&sa.sa_mask);
		sigaction(fatal_signals[i], &sa, &previous[i]);
		if (previous[i].sa_handler == SIG_IGN)
			sigaction(fatal_signals[i], &previous[i], NULL);
	}
}

static void install_handlers(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, install_handlers_once);
}

/* ---- finding binaries --------------------------------------------------- */

static bool executable(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* name's directory on PATH (resolved through symlinks) into dir. */
static bool on_path(const char *name, char *dir, size_t len)
{
	const char *path = getenv("PATH");
	if (!path)
		return false;
	char *copy = strdup(path), *save = NULL;
	bool found = false;
	for (char *d = strtok_r(copy, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
		char full[4096], real[PATH_MAX];
		snprintf(full, sizeof full, "%s/%s", *d ? d : ".", name);
		if (executable(full) && realpath(full, real)) {
			char *slash = strrchr(real, '/');
			*slash = 0;
			snprintf(dir, len, "%s", real);
			found = true;
		}
	}
	free(copy);
	return found;
}

static bool has_pg_binaries(const char *dir)
{
	char p[4200];
	snprintf(p, sizeof p, "%s/initdb", dir);
	if (!executable(p))
		return false;
	snprintf(p, sizeof p, "%s/postgres", dir);
	return executable(p);
}

/*
 * The directory holding initdb and postgres: initdb's on PATH, else the
 * newest /usr/lib/postgresql/N/bin (Debian keeps them off PATH).
 */
static bool find_pg_bin(char *dir, size_t len)
{
	if (on_path("initdb", dir, len) && has_pg_binaries(dir))
		return true;
	glob_t g;
	bool found = false;
	if (glob("/usr/lib/postgresql/*/bin", 0, NULL, &g) == 0) {
		long best = -1;
		for (size_t i = 0; i < g.gl_pathc; i++) {
			long v = strtol(g.gl_pathv[i] + strlen("/usr/lib/postgresql/"), NULL, 10);
			if (v > best && has_pg_binaries(g.gl_pathv[i])) {
				best = v;
				snprintf(dir, len, "%s", g.gl_pathv[i]);
				found = true;
			}
		}
		globfree(&g);
	}
	return found;
}

/* ---- processes ---------------------------------------------------------- */

/* Who runs the server: nobody special, unless we are root, which
 * PostgreSQL refuses to be. */
typedef struct run_as {
	bool drop;
	uid_t uid;
	gid_t gid;
	char name[64];
} run_as;

static bool unprivileged(run_as *who)
{
	memset(who, 0, sizeof *who);
	if (geteuid() != 0)
		return true;
	struct passwd *pw = getpwnam("postgres");
	if (!pw)
		pw = getpwnam("nobody");
	if (!pw)
		return false;
	who->drop = true;
	who->uid = pw->pw_uid;
	who->gid = pw->pw_gid;
	snprintf(who->name, sizeof who->name, "%s", pw->pw_name);
	return true;
}

/*
 * Start argv[0] as a child in its own process group, in dir, stdin from
 * /dev/null and stdout and stderr appended to log, as `who`, with envp
 * (NULL: ours). Only
 * async-signal-safe calls between fork and exec: the tests may have threads.
 */
static pid_t spawn(char *const argv[], char *const envp[], const char *dir, const char *log,
                   const run_as *who)
{
	int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (out < 0 || in < 0) {
		if (out >= 0)
			close(out);
		if (in >= 0)
			close(in);
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setpgid(0, 0);
		if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0 || chdir(dir) < 0)
			_exit(126);
		if (who->drop &&
		    (setgroups(0, NULL) < 0 || setgid(who->gid) < 0 || setuid(who->uid) < 0)) {
			static const char msg[] = "servers: cannot drop root\n";
			(void)!write(2, msg, sizeof msg - 1);
			_exit(126);
		}
		execve(argv[0], argv, envp ? envp : environ);
		static const char msg[] = "servers: exec failed\n";
		(void)!write(2, msg, sizeof msg - 1);
		_exit(127);
	}
	if (pid > 0)
		setpgid(pid, pid); /* either side may win the race; both agree */
	close(out);
	close(in);
	return pid;
}

/* The log's last non-empty line, for `why`. */
static void last_line(const char *log, char *buf, size_t len)
{
	buf[0] = 0;
	FILE *f = fopen(log, "r");
	if (!f)
		return;
	char line[1024];
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		if (line[0])
			say(buf, len, "%s", line);
	}
	fclose(f);
}

static bool log_mentions(const char *log, const char *what)
{
	FILE *f = fopen(log, "r");
	if (!f)
		return false;
	char line[1024];
	bool found = false;
	while (!found && fgets(line, sizeof line, f))
		found = strstr(line, what) != NULL;
	fclose(f);
	return found;
}

static void describe_exit(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(buf, len, "stopped");
}

/* A port the kernel handed out on 127.0.0.1 a moment ago; 0 on failure.
 * Someone may take it before the server binds: the caller retries. */
static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t alen = sizeof a;
	int port = 0;
	if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &alen) == 0)
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

/* ---- Redis -------------------------------------------------------------- */

/* Send req over a fresh TCP connection to 127.0.0.1:port and read the
 * answer (1 s for each step) into buf; true when some answer came. */
static bool tcp_ask(int port, const char *req, char *buf, size_t len)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	struct timeval tv = {1, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	size_t got = 0;
	if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
	    write(fd, req, strlen(req)) == (ssize_t)strlen(req)) {
		ssize_t n;
		while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) > 0)
			got += (size_t)n;
	}
	close(fd);
	buf[got] = 0;
	return got > 0;
}

/* One PING over a fresh TCP connection; true on +PONG. */
static bool redis_pings(int port)
{
	char buf[64];
	return tcp_ask(port, "PING\r\nQUIT\r\n", buf, sizeof buf) && strncmp(buf, "+PONG", 5) == 0;
}

/* 1 ready, -1 failed (why set; *clash when the port was taken). */
static bool redis_ready(const fb_server *s, const void *arg)
{
	(void)arg;
	return redis_pings(s->port);
}

static bool pg_ready(const fb_server *s, const void *conninfo)
{
	(void)s;
	return PQping(conninfo) == PQPING_OK;
}

/*
 * Wait until ready(s, arg) says the server answers, polling, for at most
 * limit_ns. A server that exits first is reaped and its log's last line
 * kept in s->why (*clash: it lost its port to someone else); one that does
 * not answer in time stays running for fb_server_stop. False either way.
 */
static bool await_ready(fb_server *s, const char *log, const char *name, const char *doing,
                        bool (*ready)(const fb_server *s, const void *arg), const void *arg,
                        uint64_t limit_ns, bool *clash)
{
	uint64_t deadline = now_ns() + limit_ns;
	for (;;) {
		int status = 0;
		char line[200];
		if (reaped(s->pid, &status)) {
			char how[64];
			describe_exit(status, how, sizeof how);
			last_line(log, line, sizeof line);
			*clash = log_mentions(log, "already in use");
			say(s->why, sizeof s->why, "%s %s: %s", name, how, line);
			registry_remove(s->pid);
			s->pid = 0;
			return false;
		}
		if (ready(s, arg))
			return true;
		if (now_ns() > deadline) {
			last_line(log, line, sizeof line);
			say(s->why, sizeof s->why, "%s not %s after %llu s: %s", name, doing,
			    (unsigned long long)(limit_ns / 1000000000u), line);
			return false;
		}
		nap();
	}
}

/*
 * Spawn argv as a server (envp: NULL for ours), remember it, and wait for
 * ready() (what it is `doing` when ready) for at most limit_ns: 1 when it
 * answers, -1 (why set) otherwise.
 */
static int launch(fb_server *s, char *const argv[], char *const envp[], const char *log,
                  const char *name, const char *doing,
                  bool (*ready)(const fb_server *s, const void *arg), const void *arg,
                  uint64_t limit_ns, bool *clash)
{
	run_as me = {0};
	s->pid = spawn(argv, envp, s->dir, log, &me);
	if (s->pid < 0) {
		s->pid = 0;
		say(s->why, sizeof s->why, "cannot start %s: %s", argv[0], strerror(errno));
		return -1;
	}
	registry_add(s);
	return await_ready(s, log, name, doing, ready, arg, limit_ns, clash) ? 1 : -1;
}

/* The libfaketime library Debian installs, or false. */
static bool find_faketime(char *path, size_t len)
{
	glob_t g;
	bool found = false;
	if (glob("/usr/lib/*/faketime/libfaketime.so.1", 0, NULL, &g) == 0) {
		found = g.gl_pathc > 0;
		if (found)
			snprintf(path, len, "%s", g.gl_pathv[0]);
		globfree(&g);
	}
	return found;
}

/* Write "+0": the faked clock starts at the real one. */
static bool reset_offset(const char *file)
{
	FILE *f = fopen(file, "w");
	if (!f)
		return false;
	bool ok = fputs("+0\n", f) >= 0;
	return fclose(f) == 0 && ok;
}

/*
 * redis-server, or (REDIS_FAKETIME) redis-server whose wall clock, which
 * is what key expiry reads, libfaketime offsets by the offset file
 * (re-read on every clock read: FAKETIME_NO_CACHE). Its monotonic clock
 * stays real (the event loop's timers). Debian's redis-server links
 * jemalloc, whose first allocation reads the clock while libfaketime is
 * still initialising, and the two deadlock; libc's malloc preloaded after
 * libfaketime takes the allocations instead (jemalloc stays for its
 * statistics calls).
 */
/*
 * Issue 24: a Sentinel (redis-server --sentinel: Debian's redis-sentinel
 * is a link to it) monitoring the primary on of_port as master "fb",
 * quorum 2, down after 300 ms, a failover given up after 2 s. Its
 * configuration is its own to rewrite, in its directory.
 */
static int start_sentinel(fb_server *s, const char *bin, int of_port, bool *clash)
{
	char conf[320], log[320];
	snprintf(conf, sizeof conf, "%s/sentinel.conf", s->dir);
	snprintf(log, sizeof log, "%s/sentinel.log", s->dir);
	FILE *f = fopen(conf, "w");
	if (!f) {
		say(s->why, sizeof s->why, "cannot write %s: %s", conf, strerror(errno));
		return -1;
	}
	fprintf(f,
	        "port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\ndaemonize no\n"
	        "sentinel monitor fb 127.0.0.1 %d 2\n"
	        "sentinel down-after-milliseconds fb 300\n"
	        "sentinel failover-timeout fb 2000\n"
	        "sentinel parallel-syncs fb 1\n",
	        s->port, s->dir, log, of_port);
	if (fclose(f) != 0) {
		say(s->why, sizeof s->why, "cannot write %s: %s", conf, strerror(errno));
		return -1;
	}
	char *argv[] = {(char *)bin, conf, "--sentinel", NULL};
	if (launch(s, argv, NULL, log, "redis-sentinel", "answering PING", redis_ready, NULL,
	           REDIS_READY_NS, clash) < 0)
		return -1;
	snprintf(s->url, sizeof s->url, "redis://127.0.0.1:%d", s->port);
	return 1;
}

static int start_redis(fb_server *s, const char *bin, const char *faketime, int replica_of,
                       bool *clash)
{
	char port[16], log[320];
	snprintf(port, sizeof port, "%d", s->port);
	snprintf(log, sizeof log, "%s/redis.log", s->dir);
	char *argv[] = {(char *)bin, "--port",       port, "--bind", "127.0.0.1", "--save",
	                "",          "--appendonly", "no", "--dir",  s->dir,      "--daemonize",
	                "no",        "--logfile",    log,  NULL,     NULL,        NULL,
	                NULL};
	char of[16];
	if (replica_of) { /* issue 24: a replica of the server on that port */
		snprintf(of, sizeof of, "%d", replica_of);
		argv[15] = "--replicaof";
		argv[16] = "127.0.0.1";
		argv[17] = of;
	}
	char preload[400], file[360];
	char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", preload, file, "FAKETIME_NO_CACHE=1",
	                "FAKETIME_DONT_FAKE_MONOTONIC=1",     NULL};
	if (faketime) {
		snprintf(s->faketime, sizeof s->faketime, "%s/faketime.rc", s->dir);
		if (!reset_offset(s->faketime)) {
			say(s->why, sizeof s->why, "cannot write %s: %s", s->faketime,
			    strerror(errno));
			return -1;
		}
		snprintf(preload, sizeof preload, "LD_PRELOAD=%s libc.so.6", faketime);
		snprintf(file, sizeof file, "FAKETIME_TIMESTAMP_FILE=%s", s->faketime);
	}
	if (launch(s, argv, faketime ? envp : NULL, log, "redis-server", "answering PING",
	           redis_ready, NULL, REDIS_READY_NS, clash) < 0)
		return -1;
	snprintf(s->url, sizeof s->url, "redis://127.0.0.1:%d/0", s->port);
	return 1;
}

/* ---- ZooKeeper ----------------------------------------------------------- */

static bool zk_ready(const fb_server *s, const void *arg)
{
	(void)arg;
	char buf[16];
	return tcp_ask(s->port, "ruok", buf, sizeof buf) && strncmp(buf, "imok", 4) == 0;
}

/*
 * A standalone ZooKeeper (ZooKeeperServerMain, Debian's jars) with a 10 ms
 * tick, so that session timeouts from 20 ms up are granted; no admin HTTP
 * server (it would take port 8080); srvr and ruok allowed.
 */
static int start_zookeeper(fb_server *s, const char *java, bool *clash)
{
	char cfg[320], log[320], data[300];
	snprintf(cfg, sizeof cfg, "%s/zoo.cfg", s->dir);
	snprintf(log, sizeof log, "%s/zookeeper.log", s->dir);
	snprintf(data, sizeof data, "%s/data", s->dir);
	FILE *f = fopen(cfg, "w");
	if (!f || mkdir(data, 0700) < 0) {
		say(s->why, sizeof s->why, "cannot write %s: %s", cfg, strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	fprintf(f,
	        "tickTime=10\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n"
	        "minSessionTimeout=20\nmaxSessionTimeout=60000\nadmin.enableServer=false\n"
	        "4lw.commands.whitelist=srvr,ruok\nforceSync=no\nmaxClientCnxns=0\n",
	        data, s->port);
	if (fclose(f) != 0) {
		say(s->why, sizeof s->why, "cannot write %s: %s", cfg, strerror(errno));
		return -1;
	}
	char *argv[] = {(char *)java,
	                "-Xmx256m",
	                "-XX:+UseSerialGC",
	                "-XX:TieredStopAtLevel=1",
	                "-cp",
	                "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar",
	                "org.apache.zookeeper.server.ZooKeeperServerMain",
	                cfg,
	                NULL};
	if (launch(s, argv, NULL, log, "zookeeper", "answering ruok", zk_ready, NULL, ZK_READY_NS,
	           clash) < 0)
		return -1;
	snprintf(s->url, sizeof s->url, "zk://127.0.0.1:%d", s->port);
	return 1;
}

/* ---- etcd ------------------------------------------------------------------ */

static bool etcd_ready(const fb_server *s, const void *arg)
{
	(void)arg;
	char buf[512];
	return tcp_ask(s->port, "GET /health HTTP/1.0\r\n\r\n", buf, sizeof buf) &&
	       strstr(buf, "\"health\":\"true\"");
}

/*
 * A single-member etcd; `fast`: a 10 ms heartbeat and a 50 ms election
 * timeout, so that its smallest lease TTL, 1.5 election timeouts rounded
 * up to a second, is 1 s (2 s with etcd's defaults, which the others get).
 * No fsync: the data directory is thrown away.
 */
static int start_etcd(fb_server *s, const char *bin, bool fast, bool *clash)
{
	int peer = free_port();
	if (!peer) {
		say(s->why, sizeof s->why, "no free port on 127.0.0.1: %s", strerror(errno));
		return -1;
	}
	char log[320], data[300], client[64], peers[64], cluster[80];
	snprintf(log, sizeof log, "%s/etcd.log", s->dir);
	snprintf(data, sizeof data, "%s/data", s->dir);
	snprintf(client, sizeof client, "http://127.0.0.1:%d", s->port);
	snprintf(peers, sizeof peers, "http://127.0.0.1:%d", peer);
	snprintf(cluster, sizeof cluster, "fb=%s", peers);
	char *argv[] = {(char *)bin,
	                "--name",
	                "fb",
	                "--data-dir",
	                data,
	                "--listen-client-urls",
	                client,
	                "--advertise-client-urls",
	                client,
	                "--listen-peer-urls",
	                peers,
	                "--initial-advertise-peer-urls",
	                peers,
	                "--initial-cluster",
	                cluster,
	                "--unsafe-no-fsync",
	                "--heartbeat-interval",
	                "10",
	                "--election-timeout",
	                "50",
	                NULL};
	if (!fast)
		argv[16] = NULL; /* etcd's own 100 ms heartbeat, 1 s election timeout */
	if (launch(s, argv, NULL, log, "etcd", "healthy", etcd_ready, NULL, ETCD_READY_NS, clash) <
	    0)
		return -1;
	snprintf(s->url, sizeof s->url, "etcd://127.0.0.1:%d", s->port);
	return 1;
}

/* ---- PostgreSQL --------------------------------------------------------- */

/* Run initdb to completion: true when it succeeded. */
static bool initdb(fb_server *s, const char *bindir, const run_as *who)
{
	char bin[4200], data[300], log[320];
	snprintf(bin, sizeof bin, "%s/initdb", bindir);
	snprintf(data, sizeof data, "%s/data", s->dir);
	snprintf(log, sizeof log, "%s/initdb.log", s->dir);
	char *argv[] = {bin,  "-D",   data,         "-U",        "fencebench", "--auth=trust",
	                "-E", "UTF8", "--locale=C", "--no-sync", NULL};
	pid_t pid = spawn(argv, NULL, s->dir, log, who);
	if (pid < 0) {
		say(s->why, sizeof s->why, "cannot start %s: %s", bin, strerror(errno));
		return false;
	}
	uint64_t deadline = now_ns() + INITDB_NS;
	int status = 0;
	while (!reaped(pid, &status)) {
		if (now_ns() > deadline) {
			kill_tree(pid);
			waitpid(pid, &status, 0);
			break;
		}
		nap();
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return true;
	char how[64], line[200];
	describe_exit(status, how, sizeof how);
	last_line(log, line, sizeof line);
	say(s->why, sizeof s->why, "initdb %s: %s", how, line);
	return false;
}

static int start_postgres(fb_server *s, const char *bindir, const run_as *who, bool *clash)
{
	if (!initdb(s, bindir, who))
		return -1;
	char bin[4200], data[300], log[320], port[16];
	snprintf(bin, sizeof bin, "%s/postgres", bindir);
	snprintf(data, sizeof data, "%s/data", s->dir);
	snprintf(log, sizeof log, "%s/postgres.log", s->dir);
	snprintf(port, sizeof port, "%d", s->port);
	/* postgres itself, not pg_ctl: the child is the postmaster, so its pid
	 * is ours to wait for and to signal. */
	char *argv[] = {bin,
	                "-D",
	                data,
	                "-p",
	                port,
	                "-k",
	                s->dir,
	                "-c",
	                "listen_addresses=127.0.0.1",
	                "-c",
	                "fsync=off",
	                "-c",
	                "synchronous_commit=off",
	                "-c",
	                "full_page_writes=off",
	                "-c",
	                "max_connections=200",
	                NULL};
	s->pid = spawn(argv, NULL, s->dir, log, who);
	if (s->pid < 0) {
		s->pid = 0;
		say(s->why, sizeof s->why, "cannot start %s: %s", bin, strerror(errno));
		return -1;
	}
	registry_add(s);
	char ping[128];
	snprintf(ping, sizeof ping,
	         "host=127.0.0.1 port=%d user=fencebench dbname=postgres connect_timeout=2 "
	         "sslmode=disable",
	         s->port);
	if (!await_ready(s, log, "postgres", "accepting connections", pg_ready, ping, PG_READY_NS,
	                 clash))
		return -1;
	snprintf(s->url, sizeof s->url, "postgres://fencebench@127.0.0.1:%d/postgres", s->port);
	return 1;
}

/* ---- the API ------------------------------------------------------------ */

/*
 * What kind needs that is not installed: NULL if all is there (bindir then
 * names its binary, or PostgreSQL's bin directory, and faketime the
 * libfaketime to preload), else the Debian package that provides it, with
 * why said in why.
 */
static const char *missing(fb_server_kind kind, char *bindir, size_t blen, char *faketime,
                           size_t flen, char *why, size_t wlen)
{
	static const char *const exe[] = {[FB_SERVER_REDIS] = "redis-server",
	                                  [FB_SERVER_ZOOKEEPER] = "java",
	                                  [FB_SERVER_ETCD] = "etcd",
	                                  [FB_SERVER_REDIS_FAKETIME] = "redis-server",
	                                  [FB_SERVER_ETCD_DEFAULTS] = "etcd",
	                                  [FB_SERVER_REDIS_REPLICA] = "redis-server",
	                                  [FB_SERVER_REDIS_SENTINEL] = "redis-server",
	                                  [FB_SERVER_ETCD_MEMBER] = "etcd",
	                                  [FB_SERVER_ZK_MEMBER] = "java"};
	/* zookeeper, not zookeeperd: the tests start their own server, and
	 * zookeeperd only adds a system one on port 2181 */
	static const char *const pkg[] = {[FB_SERVER_REDIS] = "redis-server",
	                                  [FB_SERVER_ZOOKEEPER] = "zookeeper",
	                                  [FB_SERVER_ETCD] = "etcd-server",
	                                  [FB_SERVER_REDIS_FAKETIME] = "redis-server",
	                                  [FB_SERVER_ETCD_DEFAULTS] = "etcd-server",
	                                  [FB_SERVER_REDIS_REPLICA] = "redis-server",
	                                  [FB_SERVER_REDIS_SENTINEL] = "redis-server",
	                                  [FB_SERVER_ETCD_MEMBER] = "etcd-server",
	                                  [FB_SERVER_ZK_MEMBER] = "zookeeper"};
	if (kind == FB_SERVER_POSTGRES) {
		if (find_pg_bin(bindir, blen))
			return NULL;
		say(why, wlen,
		    "initdb and postgres are not installed (not on PATH nor in "
		    "/usr/lib/postgresql/*/bin)");
		return "postgresql";
	}
	if (!on_path(exe[kind], bindir, blen)) {
		say(why, wlen, "%s is not installed (not on PATH)", exe[kind]);
		return pkg[kind];
	}
	size_t n = strlen(bindir);
	snprintf(bindir + n, blen - n, "/%s", exe[kind]);
	struct stat jar;
	if ((kind == FB_SERVER_ZOOKEEPER || kind == FB_SERVER_ZK_MEMBER) &&
	    stat("/usr/share/java/zookeeper.jar", &jar) != 0) {
		say(why, wlen, "/usr/share/java/zookeeper.jar is not installed");
		return pkg[kind];
	}
	if (kind == FB_SERVER_REDIS_FAKETIME && !find_faketime(faketime, flen)) {
		say(why, wlen,
		    "libfaketime is not installed (no /usr/lib/*/faketime/libfaketime.so.1)");
		return "libfaketime";
	}
	return NULL;
}

bool fb_servers_installed(const char *what, const fb_server_kind *kinds, size_t n, size_t tests)
{
	char bindir[4096], faketime[300], why[256], whys[1024] = "", pkgs[256] = "";
	for (size_t i = 0; i < n; i++) {
		const char *p = missing(kinds[i], bindir, sizeof bindir, faketime, sizeof faketime,
		                        why, sizeof why);
		/* one line per package, however many of its servers are wanted */
		if (!p || strstr(pkgs, p))
			continue;
		say(pkgs + strlen(pkgs), sizeof pkgs - strlen(pkgs), "%s%s", pkgs[0] ? " " : "", p);
		say(whys + strlen(whys), sizeof whys - strlen(whys), "%s%s", whys[0] ? "; " : "",
		    why);
	}
	if (!pkgs[0])
		return true;
	printf("SKIPPED: %s, %zu tests: %s (apt-get install -y %s)\n", what, tests, whys, pkgs);
	fflush(stdout);
	char line[1400];
	say(line, sizeof line, "%s: %s", what, whys);
	fb_test_skipped((unsigned)tests, pkgs, line);
	return false;
}

/*
 * Start one server. Each try gets a new directory and a new port; only a
 * port clash (the log says the address is in use) is worth another try.
 * As root, PostgreSQL runs as the postgres user (or nobody), so its
 * directory goes under /tmp, which that user can reach, and is theirs.
 */
int fb_server_start(fb_server_kind kind, fb_server *s)
{
	return fb_server_start_of(kind, NULL, s);
}

int fb_server_start_of(fb_server_kind kind, const fb_server *of, fb_server *s)
{
	int of_port = of ? of->port : 0;
	memset(s, 0, sizeof *s);
	s->kind = kind;
	if (is_member(kind)) {
		say(s->why, sizeof s->why, "a cluster member is started by fb_cluster_start");
		return -1;
	}
	if ((kind == FB_SERVER_REDIS_REPLICA || kind == FB_SERVER_REDIS_SENTINEL) && !of_port) {
		say(s->why, sizeof s->why, "a replica or a Sentinel needs the server it follows");
		return -1;
	}
	install_handlers();

	char bindir[4096], faketime[300] = "";
	run_as who = {0};
	if (missing(kind, bindir, sizeof bindir, faketime, sizeof faketime, s->why, sizeof s->why))
		return 0;
	if (kind == FB_SERVER_POSTGRES && !unprivileged(&who)) {
		say(s->why, sizeof s->why,
		    "running as root and no postgres or nobody user to run postgres as");
		return -1;
	}

	/* The socket path DIR/.s.PGSQL.PORT must fit in sun_path (108). */
	const char *base = getenv("TMPDIR");
	if (!base || !*base || strlen(base) > 64 || who.drop)
		base = "/tmp";
	for (int attempt = 0; attempt < PORT_TRIES; attempt++) {
		static const char *const tag[] = {[FB_SERVER_REDIS] = "redis",
		                                  [FB_SERVER_POSTGRES] = "pg",
		                                  [FB_SERVER_ZOOKEEPER] = "zk",
		                                  [FB_SERVER_ETCD] = "etcd",
		                                  [FB_SERVER_REDIS_FAKETIME] = "redis-ft",
		                                  [FB_SERVER_ETCD_DEFAULTS] = "etcd",
		                                  [FB_SERVER_REDIS_REPLICA] = "redis-r",
		                                  [FB_SERVER_REDIS_SENTINEL] = "sentinel",
		                                  [FB_SERVER_ETCD_MEMBER] = "etcd-m",
		                                  [FB_SERVER_ZK_MEMBER] = "zk-m"};
		snprintf(s->dir, sizeof s->dir, "%s/fb-%s-XXXXXX", base, tag[kind]);
		if (!mkdtemp(s->dir)) {
			say(s->why, sizeof s->why, "mkdtemp %s: %s", s->dir, strerror(errno));
			s->dir[0] = 0;
			return -1;
		}
		if (who.drop && chown(s->dir, who.uid, who.gid) < 0) {
			say(s->why, sizeof s->why, "chown %s to %s: %s", s->dir, who.name,
			    strerror(errno));
			rmtree(s->dir);
			s->dir[0] = 0;
			return -1;
		}
		s->port = free_port();
		if (!s->port) {
			say(s->why, sizeof s->why, "no free port on 127.0.0.1: %s",
			    strerror(errno));
			rmtree(s->dir);
			s->dir[0] = 0;
			return -1;
		}
		bool clash = false;
		int rc;
		switch (kind) {
		case FB_SERVER_POSTGRES:
			rc = start_postgres(s, bindir, &who, &clash);
			break;
		case FB_SERVER_ZOOKEEPER:
			rc = start_zookeeper(s, bindir, &clash);
			break;
		case FB_SERVER_ETCD:
		case FB_SERVER_ETCD_DEFAULTS:
			rc = start_etcd(s, bindir, kind == FB_SERVER_ETCD, &clash);
			break;
		case FB_SERVER_REDIS_SENTINEL:
			rc = start_sentinel(s, bindir, of_port, &clash);
			break;
		default:
			rc = start_redis(s, bindir,
			                 kind == FB_SERVER_REDIS_FAKETIME ? faketime : NULL,
			                 kind == FB_SERVER_REDIS_REPLICA ? of_port : 0, &clash);
			break;
		}
		if (rc == 1)
			return 1;
		char why[sizeof s->why];
		memcpy(why, s->why, sizeof why);
		fb_server_stop(s);
		memcpy(s->why, why, sizeof why);
		s->port = 0;
		if (!clash)
			return -1;
	}
	return -1;
}

void fb_server_stop(fb_server *s)
{
	if (s->pid > 0) {
		registry_remove(s->pid);
		stop_pid(s->kind, s->pid);
		stop_restarted(s->kind, s->dir, s->pid);
		s->pid = 0;
	}
	if (s->dir[0]) {
		rmtree(s->dir);
		s->dir[0] = 0;
	}
}

void fb_server_kill(fb_server *s)
{
	if (s->pid <= 0)
		return;
	registry_remove(s->pid);
	kill_tree(s->pid);
	waitpid(s->pid, NULL, 0);
	s->pid = 0;
}

/* ---- issue 24: clusters --------------------------------------------------- */

/* A cluster member's `srvr`/`health` says it is in a quorum with a leader. */
static bool member_ready(const fb_server *s, const void *arg)
{
	(void)arg;
	if (s->kind == FB_SERVER_ETCD_MEMBER)
		return etcd_ready(s, NULL);
	char buf[1024];
	return tcp_ask(s->port, "srvr", buf, sizeof buf) &&
	       (strstr(buf, "Mode: leader") || strstr(buf, "Mode: follower"));
}

/* Write text to dir/name; false (why set) on failure. */
static bool put_file(fb_server *s, const char *name, const char *text)
{
	char path[320];
	snprintf(path, sizeof path, "%s/%s", s->dir, name);
	FILE *f = fopen(path, "w");
	bool ok = f && fputs(text, f) >= 0;
	if (f && fclose(f) != 0)
		ok = false;
	if (!ok)
		say(s->why, sizeof s->why, "cannot write %s: %s", path, strerror(errno));
	return ok;
}

/* One member's files (port, run, and for ZooKeeper zoo.cfg and myid):
 * peers[i] (etcd) or quorum[i]/elect[i] (ZooKeeper) are every member's. */
static bool member_files(fb_server *s, int i, const char *bin, const int *peer, const int *elect)
{
	char text[2048], num[16];
	snprintf(num, sizeof num, "%d\n", s->port);
	if (!put_file(s, "port", num))
		return false;
	if (s->kind == FB_SERVER_ETCD_MEMBER) {
		char cluster[400] = "";
		for (int j = 0; j < FB_CLUSTER_SIZE; j++)
			say(cluster + strlen(cluster), sizeof cluster - strlen(cluster),
			    "%sm%d=http://127.0.0.1:%d", j ? "," : "", j + 1, peer[j]);
		/* on an existing data directory etcd ignores the --initial-*
		 * flags: the same command restarts a member, which rejoins */
		say(text, sizeof text,
		    "exec %s --name m%d --data-dir %s/data \\\n"
		    "  --listen-client-urls http://127.0.0.1:%d "
		    "--advertise-client-urls http://127.0.0.1:%d \\\n"
		    "  --listen-peer-urls http://127.0.0.1:%d "
		    "--initial-advertise-peer-urls http://127.0.0.1:%d \\\n"
		    "  --initial-cluster %s --initial-cluster-token fb \\\n"
		    "  --unsafe-no-fsync --heartbeat-interval 10 --election-timeout 50\n",
		    bin, i + 1, s->dir, s->port, s->port, peer[i], peer[i], cluster);
		return put_file(s, "run", text);
	}
	char data[300];
	snprintf(data, sizeof data, "%s/data", s->dir);
	if (mkdir(data, 0700) < 0) {
		say(s->why, sizeof s->why, "mkdir %s: %s", data, strerror(errno));
		return false;
	}
	snprintf(num, sizeof num, "%d\n", i + 1);
	if (!put_file(s, "data/myid", num))
		return false;
	/* syncLimit 100 ticks: a follower gives up on a silent leader after 1 s */
	int n = snprintf(text, sizeof text,
	                 "tickTime=10\ninitLimit=1000\nsyncLimit=100\ndataDir=%s\nclientPort=%d\n"
	                 "clientPortAddress=127.0.0.1\nminSessionTimeout=20\n"
	                 "maxSessionTimeout=60000\nadmin.enableServer=false\n"
	                 "4lw.commands.whitelist=srvr,ruok\nforceSync=no\nmaxClientCnxns=0\n",
	                 data, s->port);
	for (int j = 0; j < FB_CLUSTER_SIZE && n > 0 && (size_t)n < sizeof text; j++)
		n += snprintf(text + n, sizeof text - (size_t)n, "server.%d=127.0.0.1:%d:%d\n",
		              j + 1, peer[j], elect[j]);
	if (!put_file(s, "zoo.cfg", text))
		return false;
	say(text, sizeof text,
	    "exec %s -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \\\n"
	    "  -cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar \\\n"
	    "  org.apache.zookeeper.server.quorum.QuorumPeerMain %s/zoo.cfg\n",
	    bin, s->dir);
	return put_file(s, "run", text);
}

/* Ports distinct from each other: n of them; false when none is free. */
static bool free_ports(int *p, int n)
{
	for (int i = 0; i < n; i++) {
		bool dup;
		int tries = 0;
		do {
			p[i] = free_port();
			dup = false;
			for (int j = 0; j < i; j++)
				dup = dup || p[j] == p[i];
		} while ((dup || !p[i]) && ++tries < 50);
		if (!p[i] || dup)
			return false;
	}
	return true;
}

/* One try: -1 failed (why in m[0]), 0 a port clash (every member stopped). */
static int cluster_try(fb_server_kind kind, fb_server *m, const char *bin, const char *base)
{
	int ports[3 * FB_CLUSTER_SIZE];
	if (!free_ports(ports, 3 * FB_CLUSTER_SIZE)) {
		say(m[0].why, sizeof m[0].why, "no free port on 127.0.0.1");
		return -1;
	}
	for (int i = 0; i < FB_CLUSTER_SIZE; i++) {
		fb_server *s = &m[i];
		memset(s, 0, sizeof *s);
		s->kind = kind;
		s->port = ports[i];
		snprintf(s->dir, sizeof s->dir, "%s/fb-%s-XXXXXX", base,
		         kind == FB_SERVER_ETCD_MEMBER ? "etcd-m" : "zk-m");
		if (!mkdtemp(s->dir)) {
			say(m[0].why, sizeof m[0].why, "mkdtemp %s: %s", s->dir, strerror(errno));
			s->dir[0] = 0;
			return -1;
		}
		if (!member_files(s, i, bin, ports + FB_CLUSTER_SIZE,
		                  ports + 2 * FB_CLUSTER_SIZE)) {
			snprintf(m[0].why, sizeof m[0].why, "%s", s->why);
			return -1;
		}
	}
	for (int i = 0; i < FB_CLUSTER_SIZE; i++) {
		fb_server *s = &m[i];
		char run[320], log[320], pid[24];
		snprintf(run, sizeof run, "%s/run", s->dir);
		snprintf(log, sizeof log, "%s/log", s->dir);
		char *argv[] = {"/bin/sh", run, NULL};
		run_as me = {0};
		s->pid = spawn(argv, NULL, s->dir, log, &me); /* sh execs the server: one pid */
		if (s->pid < 0) {
			s->pid = 0;
			say(m[0].why, sizeof m[0].why, "cannot start %s: %s", run, strerror(errno));
			return -1;
		}
		registry_add(s);
		snprintf(pid, sizeof pid, "%d\n", (int)s->pid);
		if (!put_file(s, "pid", pid)) {
			snprintf(m[0].why, sizeof m[0].why, "%s", s->why);
			return -1;
		}
	}
	const char *name = kind == FB_SERVER_ETCD_MEMBER ? "etcd member" : "zookeeper server";
	for (int i = 0; i < FB_CLUSTER_SIZE; i++) {
		char log[320];
		bool clash = false;
		snprintf(log, sizeof log, "%s/log", m[i].dir);
		if (!await_ready(&m[i], log, name, "in a quorum with a leader", member_ready, NULL,
		                 ZK_READY_NS, &clash)) {
			if (i)
				snprintf(m[0].why, sizeof m[0].why, "%s", m[i].why);
			return clash ? 0 : -1;
		}
	}
	return 1;
}

int fb_cluster_start(fb_server_kind kind, fb_server m[FB_CLUSTER_SIZE], char *url, size_t ulen,
                     char *dirs, size_t dlen)
{
	memset(m, 0, sizeof *m * FB_CLUSTER_SIZE);
	m[0].kind = kind;
	if (!is_member(kind)) {
		say(m[0].why, sizeof m[0].why, "fb_cluster_start starts etcd or ZooKeeper members");
		return -1;
	}
	install_handlers();
	char bin[4096], faketime[8];
	if (missing(kind, bin, sizeof bin, faketime, sizeof faketime, m[0].why, sizeof m[0].why))
		return 0;
	const char *base = getenv("TMPDIR");
	if (!base || !*base || strlen(base) > 64)
		base = "/tmp";
	for (int attempt = 0; attempt < PORT_TRIES; attempt++) {
		int rc = cluster_try(kind, m, bin, base);
		if (rc == 1) {
			const char *scheme = kind == FB_SERVER_ETCD_MEMBER ? "etcd" : "zk";
			say(url, ulen, "%s://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", scheme,
			    m[0].port, m[1].port, m[2].port);
			say(dirs, dlen, "%s,%s,%s", m[0].dir, m[1].dir, m[2].dir);
			for (int i = 0; i < FB_CLUSTER_SIZE; i++)
				say(m[i].url, sizeof m[i].url, "%s://127.0.0.1:%d", scheme,
				    m[i].port);
			return 1;
		}
		char why[sizeof m[0].why];
		memcpy(why, m[0].why, sizeof why);
		for (int i = 0; i < FB_CLUSTER_SIZE; i++)
			fb_server_stop(&m[i]);
		memcpy(m[0].why, why, sizeof why);
		if (rc < 0)
			return -1;
	}
	return -1;
}
