#define _GNU_SOURCE
#include "exec.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec_impl.h"
#include "exec_proto.h"
#include "inproc.h"
#include "scheme_texts.h"

extern char **environ;

/* cfg->timeout_ns of 0; and the least a hello is given, whatever the
 * calls' deadline: an interpreter's (a JVM's) start-up is not a call */
#define DEFAULT_TIMEOUT_NS (UINT64_C(10) * 1000000000)
/* How long an adapter may take to exit once its standard input is closed,
 * before its process group is killed. */
#define EXIT_GRACE_MS 1000
/* What a message quotes of a reply. */
#define QUOTE_MAX 600

uint64_t fb_x_now(void)
{
	return fb_clock_now(fb_clock_monotonic());
}

bool fb_x_failed(xconn *c, const char *call, const char *fmt, ...)
{
	char what[2200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	const char *name = c->e->hello.name;
	fb_say(c->err, sizeof c->err, "adapter %s%s%s%s, worker %u: %s: %s", *name ? "'" : "", name,
	       *name ? "' " : "", c->e->shown, (unsigned)c->worker, call, what);
	c->dead = true;
	return false;
}

/* A reply that broke the protocol: what, and the reply itself. */
bool fb_x_bad_reply(xconn *c, const char *call, const char *why)
{
	c->broke = true;
	char q[4 * QUOTE_MAX + 8];
	fb_exec_quote(c->line, c->len, QUOTE_MAX, q, sizeof q);
	return fb_x_failed(c, call, "%s; the reply: %s", why, q);
}

/* ---- the process ---------------------------------------------------------- */

/* Whether the process exited within ms (its pidfd turned readable). */
static bool exited_within(xconn *c, int ms)
{
	if (c->pidfd < 0)
		return false;
	struct pollfd p = {.fd = c->pidfd, .events = POLLIN};
	for (;;) {
		int n = poll(&p, 1, ms);
		if (n >= 0 || errno != EINTR)
			return n > 0;
	}
}

/* The adapter closed its end: how it went, reaped if it is gone. */
static bool gone(xconn *c, const char *call)
{
	int st;
	if (c->pid > 0 && exited_within(c, EXIT_GRACE_MS) &&
	    waitpid(c->pid, &st, WNOHANG) == c->pid) {
		c->pid = 0;
		c->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (WIFEXITED(st) && c->status > 128 && c->status < 128 + NSIG)
			/* the shell outlived the command: 128 + its signal */
			return fb_x_failed(c, call,
			                   "it was killed by signal %d (%s; the shell's status %d)",
			                   c->status - 128, strsignal(c->status - 128), c->status);
		if (c->status == 127 || c->status == 126)
			return fb_x_failed(c, call,
			                   "it exited with status %d: the shell could not %s the "
			                   "command",
			                   c->status, c->status == 127 ? "find" : "run");
		if (WIFEXITED(st))
			return fb_x_failed(c, call, "it exited with status %d", WEXITSTATUS(st));
		return fb_x_failed(c, call, "it was killed by signal %d (%s)", WTERMSIG(st),
		                   strsignal(WTERMSIG(st)));
	}
	return fb_x_failed(c, call, "it closed its standard output");
}

/*
 * Start COMMAND with /bin/sh -c, its standard input and output one end of a
 * socket pair, its standard error ours (the adapter's log). It starts with
 * no signal blocked or ignored (fencebench blocks and ignores some), in a
 * process group of its own: a Ctrl-C meant for fencebench must not kill the
 * adapters before the run has written its numbers; they exit when their
 * input closes.
 */
static fb_err spawn(xengine *e, uint16_t worker, xconn *c, char *err, size_t errlen)
{
	int sv[2];
	c->e = e;
	c->worker = worker;
	c->fd = c->pidfd = c->status = -1;
	c->started = fb_x_now();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		fb_say(err, errlen, "adapter %s: socketpair failed, errno=%d (%s)", e->shown, errno,
		       strerror(errno));
		return FB_ESYS;
	}
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_adddup2(&fa, sv[1], STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, sv[1], STDOUT_FILENO);
	sigset_t none, dfl;
	sigemptyset(&none);
	sigemptyset(&dfl);
	const int sigs[] = {SIGPIPE, SIGINT, SIGTERM, SIGUSR1, SIGHUP, SIGQUIT};
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		sigaddset(&dfl, sigs[i]);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
	                                      POSIX_SPAWN_SETPGROUP);
	char *argv[] = {"sh", "-c", e->cmd, NULL};
	int rc = posix_spawn(&c->pid, "/bin/sh", &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(sv[1]);
	if (rc != 0) {
		close(sv[0]);
		c->pid = 0;
		fb_say(err, errlen, "adapter %s: posix_spawn /bin/sh failed, errno=%d (%s)",
		       e->shown, rc, strerror(rc));
		return FB_ESYS;
	}
	c->fd = sv[0];
	fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
	c->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0); /* -1: no grace, a kill */
	return FB_OK;
}

/* Close its input (its cue to exit), give it EXIT_GRACE_MS unless it hung,
 * kill its process group, reap it, and free the context. */
void fb_x_reap(xconn *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	if (c->pid > 0) {
		if (!c->hung)
			exited_within(c, EXIT_GRACE_MS);
		kill(-c->pid, SIGKILL); /* anything it left behind in its group too */
		kill(c->pid, SIGKILL);
		while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (c->pidfd >= 0)
		close(c->pidfd);
	if (c->inner)
		fb_inproc_store_ops.disconnect(c->inner);
	free(c->fences);
	free(c);
}

/* ---- lines ---------------------------------------------------------------- */

/* Wait until fd is ready for events: 1 ready, 0 the deadline passed, -1
 * poll failed. Past the deadline one last look without waiting: the caller
 * may have been suspended (a pause fault) while the reply came in time. */
static int wait_fd(int fd, short events, uint64_t deadline)
{
	for (;;) {
		uint64_t now = fb_x_now();
		uint64_t ms = now >= deadline ? 0 : (deadline - now + 999999) / 1000000;
		struct pollfd p = {.fd = fd, .events = events};
		int n = poll(&p, 1, ms > INT_MAX ? INT_MAX : (int)ms);
		if (n > 0)
			return 1;
		if (n == 0 && now >= deadline)
			return 0;
		if (n < 0 && errno != EINTR)
			return -1;
	}
}

static bool timed_out(xconn *c, const char *call)
{
	c->hung = true;
	if (!strcmp(call, "hello")) { /* started, but not ready: a slow start or a hang */
		char others[80] = "";
		if (c->e->npool)
			fb_say(others, sizeof others,
			       " (%u of the workers' %u processes said hello)", c->e->hellos,
			       c->e->npool);
		return fb_x_failed(
		        c, call,
		        "no hello %.3g s after it was started%s: it hangs before its loop, or "
		        "its start is slow on a busy machine: --adapter-timeout D gives it "
		        "longer",
		        (double)(fb_x_now() - c->started) / 1e9, others);
	}
	return fb_x_failed(c, call, "no reply within %.3g s (it hangs, or its store does)",
	                   (double)c->e->timeout_ns / 1e9);
}

/* The last reply line is read: what follows it in the buffer moves up. */
static void drop_line(xconn *c)
{
	memmove(c->in, c->in + c->used, c->have - c->used);
	c->have -= c->used;
	c->used = 0;
	c->line = NULL;
	c->len = 0;
}

/* Before a request: anything after the last reply line, or anything the
 * adapter wrote since, was never asked for: an adapter writes one line per
 * request, nothing else (its log goes to stderr). */
static bool quiet_before(xconn *c, const char *call)
{
	drop_line(c);
	if (!c->have) {
		ssize_t n = recv(c->fd, c->in, sizeof c->in, MSG_DONTWAIT);
		if (n == 0)
			return gone(c, call);
		if (n > 0)
			c->have = (size_t)n;
	}
	if (!c->have)
		return true;
	char q[4 * QUOTE_MAX + 8];
	fb_exec_quote(c->in, c->have - (c->in[c->have - 1] == '\n'), QUOTE_MAX, q, sizeof q);
	c->broke = true;
	return fb_x_failed(c, call,
	                   "it wrote to its standard output unasked (stdout carries one "
	                   "reply line per request, the log goes to stderr): %s",
	                   q);
}

static bool send_line(xconn *c, const char *buf, size_t n, uint64_t deadline, const char *call)
{
	while (n) {
		ssize_t w = send(c->fd, buf, n, MSG_NOSIGNAL);
		if (w > 0) {
			buf += w;
			n -= (size_t)w;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == EPIPE || errno == ECONNRESET)
			return gone(c, call);
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return fb_x_failed(c, call, "send failed, errno=%d (%s)", errno,
			                   strerror(errno));
		int r = wait_fd(c->fd, POLLOUT, deadline);
		if (r == 0)
			return timed_out(c, call);
		if (r < 0)
			return fb_x_failed(c, call, "poll failed, errno=%d (%s)", errno,
			                   strerror(errno));
	}
	return true;
}

/* The next line, by the deadline: c->line and c->len (newline removed). */
static bool recv_line(xconn *c, uint64_t deadline, const char *call)
{
	for (;;) {
		char *nl = memchr(c->in, '\n', c->have);
		if (nl) {
			c->line = c->in;
			c->len = (size_t)(nl - c->in);
			c->used = c->len + 1;
			return true;
		}
		if (c->have == sizeof c->in) {
			c->broke = true;
			return fb_x_failed(c, call, "a reply line longer than %d bytes",
			                   FB_EXEC_LINE_MAX);
		}
		int r = wait_fd(c->fd, POLLIN, deadline);
		if (r == 0)
			return timed_out(c, call);
		if (r < 0)
			return fb_x_failed(c, call, "poll failed, errno=%d (%s)", errno,
			                   strerror(errno));
		ssize_t n = recv(c->fd, c->in + c->have, sizeof c->in - c->have, 0);
		if (n > 0)
			c->have += (size_t)n;
		else if (n == 0 || errno == ECONNRESET)
			return gone(c, call);
		else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
			return fb_x_failed(c, call, "recv failed, errno=%d (%s)", errno,
			                   strerror(errno));
	}
}

/* The next line parsed into c->reply; an {"error": ...} reply is a failure
 * that quotes the adapter's reason. */
static bool next_reply(xconn *c, uint64_t deadline, const char *call)
{
	if (!recv_line(c, deadline, call))
		return false;
	char why[160];
	if (!fb_reply_parse(&c->reply, c->line, c->len, c->scratch, sizeof c->scratch, why,
	                    sizeof why)) {
		char full[200];
		fb_say(full, sizeof full, "its reply is not one JSON object (%s)", why);
		return fb_x_bad_reply(c, call, full);
	}
	const char *aerr = fb_exec_error_of(&c->reply);
	if (aerr) {
		char q[4 * QUOTE_MAX + 8];
		fb_exec_quote(aerr, strlen(aerr), QUOTE_MAX, q, sizeof q);
		return fb_x_failed(c, call, "it answered with an error: %s", q);
	}
	return true;
}

/* Send req, read its reply into c->reply. */
bool fb_x_call(xconn *c, const char *req, size_t n, const char *what)
{
	if (c->dead) /* its failure stands */
		return false;
	if (!quiet_before(c, what))
		return false;
	fb_say(c->req, sizeof c->req, "%.*s", (int)(n && req[n - 1] == '\n' ? n - 1 : n), req);
	uint64_t deadline = fb_x_now() + c->e->timeout_ns;
	return send_line(c, req, n, deadline, what) && next_reply(c, deadline, what);
}

/* ---- the hello ------------------------------------------------------------ */

static uint64_t hello_deadline(const xengine *e)
{
	if (e->cfg.adapter_timeout_ns) /* the user's, exactly */
		return fb_x_now() + e->cfg.adapter_timeout_ns;
	return fb_x_now() +
	       (e->timeout_ns > DEFAULT_TIMEOUT_NS ? e->timeout_ns : DEFAULT_TIMEOUT_NS);
}

static bool send_hello(xconn *c)
{
	const fb_engine_config *cfg = &c->e->cfg;
	char req[256];
	int n = c->e->lease ? snprintf(req, sizeof req,
	                               "{\"op\":\"hello\",\"side\":\"lease\",\"protocol\":%d,"
	                               "\"worker\":%u,\"keys\":%u,\"ttl_ms\":%llu}\n",
	                               FB_EXEC_LEASE_PROTOCOL, (unsigned)c->worker, cfg->keys,
	                               (unsigned long long)(cfg->ttl_ns / 1000000))
	                    : snprintf(req, sizeof req,
	                               "{\"op\":\"hello\",\"protocol\":%d,\"worker\":%u,"
	                               "\"keys\":%u,\"initial_balance\":%lld,\"amount\":%lld,"
	                               "\"cycle\":\"%s\"}\n",
	                               FB_EXEC_PROTOCOL, (unsigned)c->worker, cfg->keys,
	                               (long long)cfg->initial_balance, (long long)cfg->amount,
	                               cfg->op == 1 ? "debit" : "rmw");
	return quiet_before(c, "hello") &&
	       send_line(c, req, (size_t)n, hello_deadline(c->e), "hello");
}

/* Its hello, read and held against the first process's. */
static bool recv_hello(xconn *c, uint64_t deadline)
{
	xengine *e = c->e;
	fb_exec_hello h;
	char why[200];
	if (!next_reply(c, deadline, "hello"))
		return false;
	if (!(e->lease ? fb_exec_lease_hello_of : fb_exec_hello_of)(&c->reply, &h, why, sizeof why))
		return fb_x_bad_reply(c, "hello", why);
	if (!e->hello.protocol) {
		e->hello = h;
		return true;
	}
	if (strcmp(h.name, e->hello.name) || h.ops != e->hello.ops ||
	    h.unfenced_reads != e->hello.unfenced_reads)
		return fb_x_bad_reply(c, "hello",
		                      "it differs from the first process's hello (every "
		                      "process of one adapter must offer the same)");
	return true;
}

/* An adapter process for worker, greeted; else what went wrong in err,
 * FB_EINVAL when the shell could not find or run the command (its exit
 * status 127 or 126: the user's typo). */
static fb_err start(xengine *e, uint16_t worker, xconn **out, char *err, size_t errlen)
{
	*out = NULL;
	xconn *c = calloc(1, sizeof *c);
	if (!c) {
		fb_say(err, errlen, "out of memory for an adapter process");
		return FB_ENOMEM;
	}
	fb_err rc = spawn(e, worker, c, err, errlen);
	if (rc != FB_OK) {
		free(c);
		return rc;
	}
	if (!send_hello(c) || !recv_hello(c, hello_deadline(e))) {
		fb_say(err, errlen, "%s", c->err);
		rc = c->status == 127 || c->status == 126 ? FB_EINVAL : FB_ESYS;
		fb_x_reap(c);
		return rc;
	}
	*out = c;
	return FB_OK;
}

/* ---- the engine ----------------------------------------------------------- */

static const char *column_name(const xengine *e)
{
	return e->hello.name[0] ? e->hello.name : "yours";
}

void fb_x_close_engine(xengine *e)
{
	if (!e)
		return;
	fb_x_reap(e->admin);
	for (uint32_t i = e->taken; i < e->npool; i++)
		fb_x_reap(e->pool[i]);
	free(e->pool);
	if (e->inner)
		fb_inproc_store_ops.close(e->inner);
	free((void *)e->top);
	free(e->cmd);
	free(e);
}

static void x_close(void *eng)
{
	fb_x_close_engine(eng);
}

fb_err fb_x_open(const fb_engine_config *cfg, const char *url, bool lease, xengine **out, char *err,
                 size_t errlen)
{
	*out = NULL;
	const char *cmd = url && strncmp(url, "exec:", 5) == 0 ? url + 5 : "";
	cmd += strspn(cmd, " \t");
	if (!*cmd) {
		fb_say(err, errlen, "exec: needs a command, run with /bin/sh -c: exec:COMMAND");
		return FB_EINVAL;
	}
	if (cfg->client_id) {
		fb_say(err, errlen,
		       lease ? "exec:%.60s: a shared run (--client-id) needs one lease service "
		               "every "
		               "process names its holders to; the exec lease engine's owners are "
		               "this process's workers"
		             : "exec:%.60s: a shared run (--client-id) needs one store every "
		               "process "
		               "sees; the exec engine's controls live in this process",
		       cmd);
		return FB_EINVAL;
	}
	xengine *e = calloc(1, sizeof *e);
	if (!e || !(e->cmd = strdup(cmd)) || !(e->top = calloc(cfg->keys, sizeof *e->top))) {
		fb_x_close_engine(e);
		fb_say(err, errlen, "out of memory");
		return FB_ENOMEM;
	}
	for (uint32_t k = 0; k < cfg->keys; k++)
		atomic_init(&e->top[k], 0);
	atomic_init(&e->withdrawn, 0);
	atomic_init(&e->replaced_unsaid, false);
	e->cfg = *cfg;
	e->lease = lease;
	e->timeout_ns = cfg->adapter_timeout_ns ? cfg->adapter_timeout_ns
	                : cfg->timeout_ns       ? cfg->timeout_ns
	                                        : DEFAULT_TIMEOUT_NS;
	size_t n =
	        strlen(cmd); /* a long command keeps its head and its tail (the script, the args) */
	if (n > 90)
		fb_say(e->shown, sizeof e->shown, "exec:%.40s...%s", cmd, cmd + n - 47);
	else
		fb_say(e->shown, sizeof e->shown, "exec:%s", cmd);
	fb_err rc = start(e, 0, &e->admin, err, errlen);
	if (rc != FB_OK) {
		fb_x_close_engine(e);
		return rc;
	}
	*out = e;
	return FB_OK;
}

/*
 * "exec:COMMAND". The first process starts here and says hello, so a
 * command that is not there (the shell's 127 and 126) is the user's typo
 * (FB_EINVAL), and one that does not speak the protocol fails before the
 * run. The controls are the in-process engine's stores.
 */
static fb_err x_open(const fb_engine_config *cfg, const char *url, void **eng, char *err,
                     size_t errlen)
{
	*eng = NULL;
	if (!(cfg->modes & (1u << FB_FENCED))) {
		const char *cmd = url && strncmp(url, "exec:", 5) == 0 ? url + 5 : "";
		fb_say(err, errlen,
		       "exec:%.60s: the adapter's store is the fenced column: --mode must "
		       "include fenced",
		       cmd + strspn(cmd, " \t"));
		return FB_EINVAL;
	}
	xengine *e;
	fb_err rc = fb_x_open(cfg, url, false, &e, err, errlen);
	if (rc != FB_OK)
		return rc;
	fb_engine_config controls = *cfg;
	controls.modes &= ~(1u << FB_FENCED);
	if (controls.modes)
		rc = fb_inproc_store_ops.open(&controls, NULL, &e->inner, err, errlen);
	if (rc != FB_OK) {
		fb_x_close_engine(e);
		return rc;
	}
	*eng = e;
	return FB_OK;
}

void fb_x_version(void *eng, char *buf, size_t len)
{
	xengine *e = eng;
	if (e->hello.version[0])
		fb_say(buf, len, "%s", e->hello.version);
	else
		fb_say(buf, len, "%sprotocol %d", e->lease ? "lease " : "",
		       e->lease ? FB_EXEC_LEASE_PROTOCOL : FB_EXEC_PROTOCOL);
}

/* The ops a run of this configuration needs. */
static uint32_t needed(const fb_engine_config *cfg)
{
	uint32_t ops = 1u << FB_XOP_RESET | 1u << FB_XOP_FINAL;
	return ops | (cfg->op == 1 ? 1u << FB_XOP_DEBIT : 1u << FB_XOP_READ | 1u << FB_XOP_WRITE);
}

/* Whether the adapter offers op; else c->err says so. */
bool fb_x_offers(xconn *c, fb_exec_op op)
{
	if (c->e->hello.ops & (1u << op))
		return true;
	char has[128];
	fb_exec_ops_list(c->e->hello.ops, has, sizeof has);
	return fb_x_failed(c, fb_exec_op_names[op],
	                   "the adapter does not implement %s (its hello offers "
	                   "%s)",
	                   fb_exec_op_names[op], has);
}

/* Before the run: what the run needs is offered (else FB_EINVAL: run it
 * otherwise), and the adapter's store is reset to the run's keys. */
static fb_err x_prepare(void *eng, bool fresh, char *err, size_t errlen)
{
	xengine *e = eng;
	(void)fresh; /* always: open refuses a shared run */
	uint32_t missing = needed(&e->cfg) & ~e->hello.ops;
	if (missing) {
		char miss[128], has[128];
		fb_exec_ops_list(missing, miss, sizeof miss);
		fb_exec_ops_list(e->hello.ops, has, sizeof has);
		fb_say(err, errlen, "adapter %s does not implement %s (its hello offers %s)%s",
		       e->shown, miss, has,
		       missing & (1u << FB_XOP_DEBIT)   ? ": run it with --op rmw"
		       : missing & (1u << FB_XOP_WRITE) ? ": run it with --op debit"
		                                        : "");
		return FB_EINVAL;
	}
	char req[256];
	int n = snprintf(req, sizeof req,
	                 "{\"op\":\"reset\",\"keys\":%u,\"initial_balance\":%lld,\"amount\":%lld,"
	                 "\"cycle\":\"%s\"}\n",
	                 e->cfg.keys, (long long)e->cfg.initial_balance, (long long)e->cfg.amount,
	                 e->cfg.op == 1 ? "debit" : "rmw");
	return fb_x_reset(e, req, (size_t)n, err, errlen);
}

fb_err fb_x_reset(xengine *e, const char *req, size_t n, char *err, size_t errlen)
{
	xconn *c = e->admin;
	if (!c) {
		fb_say(err, errlen, "adapter %s: prepared after its first connection", e->shown);
		return FB_EINVAL;
	}
	char why[200];
	bool ok = fb_x_call(c, req, n, "reset");
	if (ok && !fb_exec_ok_of(&c->reply, why, sizeof why))
		ok = fb_x_bad_reply(c, "reset", why);
	if (!ok) {
		fb_say(err, errlen, "%s", c->err);
		return FB_ESYS;
	}
	return FB_OK;
}

/*
 * Start every worker's process at once and then read their hellos: an
 * interpreter's start-up (a tenth of a second for Python here) is paid
 * once, not once a worker, and before the run's clock starts.
 */
static fb_err warm(xengine *e, uint16_t first, char *err, size_t errlen)
{
	uint32_t n = e->cfg.threads >= first ? e->cfg.threads - first + 1 : 0;
	if (!(e->pool = calloc(n ? n : 1, sizeof *e->pool))) {
		fb_say(err, errlen, "out of memory");
		return FB_ENOMEM;
	}
	fb_err rc = FB_OK;
	for (uint32_t i = 0; i < n && rc == FB_OK; i++) {
		xconn *c = calloc(1, sizeof *c);
		if (!c) {
			fb_say(err, errlen, "out of memory for an adapter process");
			rc = FB_ENOMEM;
			break;
		}
		rc = spawn(e, (uint16_t)(first + i), c, err, errlen);
		if (rc != FB_OK) {
			free(c);
			break;
		}
		e->pool[e->npool++] = c;
		if (!send_hello(c)) {
			fb_say(err, errlen, "%s", c->err);
			rc = FB_ESYS;
		}
	}
	uint64_t deadline = hello_deadline(e);
	for (uint32_t i = 0; i < e->npool && rc == FB_OK; i++) {
		if (!recv_hello(e->pool[i], deadline)) {
			fb_say(err, errlen, "%s", e->pool[i]->err);
			rc = FB_ESYS;
		}
		e->hellos += rc == FB_OK;
	}
	return rc;
}

fb_err fb_x_take(xengine *e, uint16_t worker, xconn **out, char *err, size_t errlen)
{
	fb_err rc = FB_OK;
	*out = NULL;
	if (worker == 0 && e->admin) {
		*out = e->admin; /* open's process serves fencebench's own connection */
		e->admin = NULL;
		return FB_OK;
	}
	if (!e->pool && worker > 0 && e->cfg.threads > 1)
		rc = warm(e, worker, err, errlen);
	if (rc != FB_OK)
		return rc;
	if (e->taken < e->npool && e->pool[e->taken]->worker == worker) {
		*out = e->pool[e->taken++];
		return FB_OK;
	}
	return start(e, worker, out, err, errlen);
}

static fb_err x_connect(void *eng, uint16_t worker, void **conn, char *err, size_t errlen)
{
	xengine *e = eng;
	xconn *c = NULL;
	*conn = NULL;
	fb_err rc = fb_x_take(e, worker, &c, err, errlen);
	if (rc != FB_OK)
		return rc;
	if (e->inner &&
	    (rc = fb_inproc_store_ops.connect(e->inner, worker, &c->inner, err, errlen)) != FB_OK) {
		fb_x_reap(c);
		return rc;
	}
	*conn = c;
	return FB_OK;
}

void fb_x_disconnect(void *conn)
{
	fb_x_reap(conn);
}

const char *fb_x_error(void *conn)
{
	xconn *c = conn;
	return c->err[0] ? c->err : "no error";
}

static const char *x_column(void *eng, fb_discipline d)
{
	return d == FB_FENCED ? column_name(eng) : NULL;
}

/* ---- the calls ------------------------------------------------------------ */

/*
 * A read, write or debit of the fenced column: sent, answered, checked. An
 * accepted write's version must be above every version a reply gave the key
 * before this call was sent: a store's commit order cannot run backwards.
 */
static fb_io fenced_call(xconn *c, fb_exec_op op, uint32_t key, int64_t value, uint64_t token,
                         fb_store_result *r)
{
	xengine *e = c->e;
	memset(r, 0, sizeof *r);
	r->token = token;
	char what[128], req[192];
	int n;
	if (op == FB_XOP_READ) {
		fb_say(what, sizeof what, "read key %u token %llu", key, (unsigned long long)token);
		n = snprintf(req, sizeof req, "{\"op\":\"read\",\"key\":%u,\"token\":%llu}\n", key,
		             (unsigned long long)token);
	} else {
		const char *arg = op == FB_XOP_WRITE ? "balance" : "amount";
		fb_say(what, sizeof what, "%s key %u %s %lld token %llu", fb_exec_op_names[op], key,
		       arg, (long long)value, (unsigned long long)token);
		n = snprintf(req, sizeof req,
		             "{\"op\":\"%s\",\"key\":%u,\"%s\":%lld,\"token\":%llu}\n",
		             fb_exec_op_names[op], key, arg, (long long)value,
		             (unsigned long long)token);
	}
	if (c->dead)
		return FB_IO_ERROR;
	if (key >= e->cfg.keys) {
		fb_x_failed(c, what, "key out of range (%u keys)", e->cfg.keys);
		return FB_IO_ERROR;
	}
	if (!fb_x_offers(c, op))
		return FB_IO_ERROR;
	if (token > FB_FENCE_MAX) { /* no lease service mints one: as core/store.c */
		r->stale = op != FB_XOP_READ;
		return FB_IO_REFUSED;
	}
	uint64_t floor = atomic_load_explicit(&e->top[key], memory_order_relaxed);
	if (!fb_x_call(c, req, (size_t)n, what))
		return FB_IO_ERROR;
	int64_t version;
	char why[240];
	if (!fb_exec_result_of(&c->reply, op, token, r, &version, why, sizeof why)) {
		fb_x_bad_reply(c, what, why);
		return FB_IO_ERROR;
	}
	if (!r->ok) {
		const fb_jfield *reason = fb_reply_get(&c->reply, "reason");
		if (reason) { /* the store's own words, for the report */
			char q[4 * QUOTE_MAX + 8];
			fb_exec_quote(reason->s, reason->len, QUOTE_MAX, q, sizeof q);
			fb_say(c->err, sizeof c->err, "%s: %s", what, q);
		}
		return FB_IO_REFUSED;
	}
	if (op == FB_XOP_READ)
		return FB_IO_OK;
	/* an equal version is a duplicate commit, the checker's to count */
	uint64_t v = (uint64_t)version;
	if (v < floor) {
		fb_say(why, sizeof why,
		       "version %llu is below %llu, which a reply to an earlier call gave key %u: "
		       "its versions went backwards",
		       (unsigned long long)v, (unsigned long long)floor, key);
		fb_x_bad_reply(c, what, why);
		return FB_IO_ERROR;
	}
	uint64_t top = floor;
	while (top < v &&
	       !atomic_compare_exchange_weak_explicit(&e->top[key], &top, v, memory_order_relaxed,
	                                              memory_order_relaxed))
		;
	return FB_IO_OK;
}

static fb_io x_read(void *conn, fb_discipline d, uint32_t key, uint64_t token, fb_store_result *r)
{
	xconn *c = conn;
	if (d != FB_FENCED)
		return fb_inproc_store_ops.read(c->inner, d, key, token, r);
	return fenced_call(c, FB_XOP_READ, key, 0, token, r);
}

static fb_io x_write(void *conn, fb_discipline d, uint32_t key, int64_t balance, uint64_t token,
                     const fb_store_result *read, fb_store_result *r)
{
	xconn *c = conn;
	if (d != FB_FENCED)
		return fb_inproc_store_ops.write(c->inner, d, key, balance, token, read, r);
	return fenced_call(c, FB_XOP_WRITE, key, balance, token, r);
}

static fb_io x_debit(void *conn, fb_discipline d, uint32_t key, int64_t amount, uint64_t token,
                     fb_store_result *r)
{
	xconn *c = conn;
	if (d != FB_FENCED)
		return fb_inproc_store_ops.debit(c->inner, d, key, amount, token, r);
	return fenced_call(c, FB_XOP_DEBIT, key, amount, token, r);
}

/* The fenced column's finals, one call a key. */
static fb_io x_final(void *conn, fb_discipline d, uint32_t keys, int64_t *balance,
                     uint64_t *last_fence)
{
	xconn *c = conn;
	if (d != FB_FENCED)
		return c->inner ? fb_inproc_store_ops.final(c->inner, d, keys, balance, last_fence)
		                : FB_IO_ERROR;
	if (!fb_x_offers(c, FB_XOP_FINAL))
		return FB_IO_ERROR;
	for (uint32_t k = 0; k < keys; k++) {
		char what[48], req[64], why[200];
		fb_say(what, sizeof what, "final key %u", k);
		int n = snprintf(req, sizeof req, "{\"op\":\"final\",\"key\":%u}\n", k);
		if (!fb_x_call(c, req, (size_t)n, what))
			return FB_IO_ERROR;
		if (!fb_exec_final_of(&c->reply, &balance[k], &last_fence[k], why, sizeof why)) {
			fb_x_bad_reply(c, what, why);
			return FB_IO_ERROR;
		}
	}
	return FB_IO_OK;
}

static fb_io x_meta(void *conn, fb_store_meta *out)
{
	xconn *c = conn;
	char why[200];
	static const char req[] = "{\"op\":\"meta\"}\n";
	if (!fb_x_offers(c, FB_XOP_META) || !fb_x_call(c, req, sizeof req - 1, "meta"))
		return FB_IO_ERROR;
	if (!fb_exec_meta_of(&c->reply, out, why, sizeof why)) {
		fb_x_bad_reply(c, "meta", why);
		return FB_IO_ERROR;
	}
	return FB_IO_OK;
}

/* The adapter's history, streamed: a line a row until {"end": true}, each
 * line by its own deadline (a long history takes long, but the adapter
 * must not go silent). */
static fb_io x_history(void *conn, void (*row)(void *ctx, const fb_history_row *h), void *ctx)
{
	xconn *c = conn;
	static const char req[] = "{\"op\":\"history\"}\n";
	if (!fb_x_offers(c, FB_XOP_HISTORY) || !fb_x_call(c, req, sizeof req - 1, "history"))
		return FB_IO_ERROR;
	for (uint64_t rows = 0;; rows++) {
		fb_history_row h;
		bool end;
		char why[200], what[48];
		fb_say(what, sizeof what, "history row %llu", (unsigned long long)rows + 1);
		if (!fb_exec_row_of(&c->reply, &h, &end, why, sizeof why)) {
			fb_x_bad_reply(c, what, why);
			return FB_IO_ERROR;
		}
		if (end)
			return FB_IO_OK;
		row(ctx, &h);
		drop_line(c); /* the next line is the stream's too */
		if (!next_reply(c, fb_x_now() + c->e->timeout_ns, what))
			return FB_IO_ERROR;
	}
}

/* `fencebench check` needs meta and history, which an adapter need not
 * offer: without them it is a usage error, as a run's missing operation. */
static bool x_keeps_history(void *eng, char *why, size_t len)
{
	xengine *e = eng;
	uint32_t need = 1u << FB_XOP_META | 1u << FB_XOP_HISTORY;
	if ((e->hello.ops & need) == need)
		return true;
	char miss[64], has[128];
	fb_exec_ops_list(need & ~e->hello.ops, miss, sizeof miss);
	fb_exec_ops_list(e->hello.ops, has, sizeof has);
	return fb_say(why, len,
	              "adapter %s does not implement %s (its hello offers %s): check reads "
	              "meta and history",
	              e->shown, miss, has);
}

/* An adapter's store numbers its writes as it will: any strictly
 * increasing version per key. */
static uint32_t x_own_versions(void *eng)
{
	(void)eng;
	return 1u << FB_FENCED;
}

/* The adapter's hello says its store keeps no token on reads. */
static uint32_t x_unfenced_reads(void *eng)
{
	return ((xengine *)eng)->hello.unfenced_reads ? 1u << FB_FENCED : 0;
}

void fb_exec_last(void *conn, fb_exec_exchange *x)
{
	xconn *c = conn;
	fb_exec_quote(c->req, strlen(c->req), sizeof x->request - 32, x->request,
	              sizeof x->request);
	x->reply[0] = 0;
	if (c->line)
		fb_exec_quote(c->line, c->len, sizeof x->reply - 32, x->reply, sizeof x->reply);
	x->broke = c->broke;
}

void fb_exec_setup_last(void *eng, fb_exec_exchange *x)
{
	xengine *e = eng;
	if (e->admin)
		fb_exec_last(e->admin, x);
	else
		*x = (fb_exec_exchange){0};
}

const char *fb_exec_name(void *eng)
{
	return ((xengine *)eng)->hello.name;
}

uint32_t fb_exec_offers(void *eng)
{
	return ((xengine *)eng)->hello.ops;
}

const fb_store_ops fb_exec_store_ops = {
        FB_STORE_OPS_HEAD,
        .scheme = "exec",
        .name = "adapter",
        .url = FB_EXEC_STORE_URL,
        .help = FB_EXEC_STORE_HELP,
        .remote = true,
        .local_modes = 1u << FB_WRITE_FENCED | 1u << FB_UNFENCED,
        .open = x_open,
        .version = fb_x_version,
        .prepare = x_prepare,
        .close = x_close,
        .connect = x_connect,
        .disconnect = fb_x_disconnect,
        .error = fb_x_error,
        .read = x_read,
        .write = x_write,
        .debit = x_debit,
        .final = x_final,
        .history = x_history,
        .meta = x_meta,
        .keeps_history = x_keeps_history,
        .own_versions = x_own_versions,
        .unfenced_reads = x_unfenced_reads,
        .column = x_column,
};
