/*
 * The lease adapter engine: --lease exec:COMMAND, the user's own lock
 * service through a program that speaks the lease side of the adapter
 * protocol (exec_proto.h; the README specifies it). One process per
 * connection, as for a store adapter (exec_impl.h): each worker is one
 * client of the service.
 *
 * How the witness judges it. A service's own clock and its own account of
 * a lease's bounds are claims fencebench cannot check, so the lease is
 * dated on fencebench's clock: service_at is the instant the acquire was
 * sent, and the lease lasts the TTL fencebench asked for (a reply that
 * says it granted less is refused: the run's leases would not be the ones
 * it judges). A service takes the lease somewhere between the send and
 * the reply; an acquire answered more than WITHDRAW_NS after its send is
 * withdrawn (released, and tried again), so every lease the witness hears
 * of was taken within WITHDRAW_NS of its send. The witness takes two
 * instants as equal to within SLACK_NS: a takeover it calls an overlap
 * was answered before the previous lease's TTL, counted from any instant
 * the service could have taken it at, had run out, with SLACK_NS -
 * WITHDRAW_NS to spare for the service's clock (a millisecond grid, its
 * rate). Fence judgements need no clock: a fence twice, a fence not above
 * the one the service says it replaced ("replaced": where it does not
 * say, that judgement is not made, and the report says so).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "exec_impl.h"
#include "scheme_texts.h"

#define SLACK_NS    (UINT64_C(20) * 1000000)
#define WITHDRAW_NS (UINT64_C(15) * 1000000)
/* Withdrawn tries in a row before an acquire gives up for this cycle
 * (answered held, no holder named): a starved machine. */
#define WITHDRAW_TRIES 4

static fb_err l_open(const fb_engine_config *cfg, const char *url, void **eng, char *err,
                     size_t errlen)
{
	*eng = NULL;
	const char *problem = fb_engine_lease_problem(cfg, true);
	if (problem) {
		fb_say(err, errlen, "exec: %s", problem);
		return FB_EINVAL;
	}
	if (cfg->ttl_ns % 1000000) {
		fb_say(err, errlen,
		       "exec: the protocol gives the TTL in whole milliseconds: --ttl must be "
		       "one");
		return FB_EINVAL;
	}
	xengine *e;
	fb_err rc = fb_x_open(cfg, url, true, &e, err, errlen);
	if (rc != FB_OK)
		return rc;
	uint32_t need = 1u << FB_XOP_ACQUIRE | 1u << FB_XOP_RELEASE;
	if ((e->hello.ops & need) != need) {
		char miss[64], has[160];
		fb_exec_ops_list(need & ~e->hello.ops, miss, sizeof miss);
		fb_exec_ops_list(e->hello.ops, has, sizeof has);
		fb_say(err, errlen, "adapter %s does not implement %s (its hello offers %s)",
		       e->shown, miss, has);
		fb_x_close_engine(e);
		return FB_EINVAL;
	}
	*eng = e;
	return FB_OK;
}

/* A fresh run resets the service's leases when the adapter offers it
 * (its fences go on rising: no client can wind a service's counter back);
 * without reset, leases left by an earlier run expire by their TTL. */
static fb_err l_prepare(void *eng, bool fresh, char *err, size_t errlen)
{
	xengine *e = eng;
	if (!fresh || !(e->hello.ops & (1u << FB_XOP_RESET)))
		return FB_OK;
	char req[96];
	int n = snprintf(req, sizeof req, "{\"op\":\"reset\",\"keys\":%u}\n", e->cfg.keys);
	return fb_x_reset(e, req, (size_t)n, err, errlen);
}

static void l_close(void *eng)
{
	fb_x_close_engine(eng);
}

static fb_err l_connect(void *eng, uint16_t worker, void **conn, char *err, size_t errlen)
{
	xengine *e = eng;
	xconn *c;
	*conn = NULL;
	fb_err rc = fb_x_take(e, worker, &c, err, errlen);
	if (rc != FB_OK)
		return rc;
	if (!(c->fences = calloc(e->cfg.keys, sizeof *c->fences))) {
		fb_x_reap(c);
		fb_say(err, errlen, "out of memory");
		return FB_ENOMEM;
	}
	*conn = c;
	return FB_OK;
}

/* The request naming lease l of key: {"op", "key", "owner", "fence"} and
 * the TTL when ttl; its description in what. */
static int request(xconn *c, fb_exec_op op, uint32_t key, uint64_t fence, bool ttl, char *req,
                   size_t len, char *what, size_t wlen)
{
	fb_say(what, wlen, "%s key %u owner %u fence %llu", fb_exec_op_names[op], key,
	       (unsigned)c->worker, (unsigned long long)fence);
	char more[48] = "";
	if (ttl)
		snprintf(more, sizeof more, ",\"ttl_ms\":%llu",
		         (unsigned long long)(c->e->cfg.ttl_ns / 1000000));
	return snprintf(req, len, "{\"op\":\"%s\",\"key\":%u,\"owner\":%u,\"fence\":%llu%s}\n",
	                fb_exec_op_names[op], key, (unsigned)c->worker, (unsigned long long)fence,
	                more);
}

/* release, renew or is_held of (key, fence): FB_IO_OK, REFUSED (not ours),
 * ERROR (c->err says why). */
static fb_io owned(xconn *c, fb_exec_op op, uint32_t key, uint64_t fence)
{
	char req[192], what[96], why[200];
	int n = request(c, op, key, fence, op == FB_XOP_RENEW, req, sizeof req, what, sizeof what);
	if (c->dead)
		return FB_IO_ERROR;
	if (key >= c->e->cfg.keys) {
		fb_x_failed(c, what, "key out of range (%u keys)", c->e->cfg.keys);
		return FB_IO_ERROR;
	}
	bool ok;
	if (!fb_x_offers(c, op) || !fb_x_call(c, req, (size_t)n, what))
		return FB_IO_ERROR;
	if (!fb_exec_lease_ok_of(&c->reply, &ok, why, sizeof why)) {
		fb_x_bad_reply(c, what, why);
		return FB_IO_ERROR;
	}
	return ok ? FB_IO_OK : FB_IO_REFUSED;
}

typedef enum attempt { TRY_AGAIN, TRY_DONE } attempt;

/* One acquire, checked: the fence in range and above every fence this
 * process was given for key before (one reply stream cannot go
 * backwards), a stated TTL not below the one asked for. */
static attempt try_acquire(xconn *c, uint32_t key, fb_lease *out, fb_acquire *res)
{
	xengine *e = c->e;
	char req[192], what[96], why[240];
	int n = snprintf(req, sizeof req,
	                 "{\"op\":\"acquire\",\"key\":%u,\"owner\":%u,\"ttl_ms\":%llu}\n", key,
	                 (unsigned)c->worker, (unsigned long long)(e->cfg.ttl_ns / 1000000));
	fb_say(what, sizeof what, "acquire key %u owner %u", key, (unsigned)c->worker);
	*res = FB_ACQ_ERROR;
	uint64_t sent = fb_clock_now(e->cfg.clock);
	if (!fb_x_call(c, req, (size_t)n, what))
		return TRY_DONE;
	uint64_t back = fb_clock_now(e->cfg.clock);
	fb_exec_acquired a;
	if (!fb_exec_acquire_of(&c->reply, &a, why, sizeof why)) {
		fb_x_bad_reply(c, what, why);
		return TRY_DONE;
	}
	if (!a.ok) {
		*out = (fb_lease){.fence = a.fence, .owner = a.owner};
		*res = FB_HELD;
		return TRY_DONE;
	}
	uint64_t asked = e->cfg.ttl_ns / 1000000;
	if (a.ttl_ms && a.ttl_ms < asked) {
		fb_say(why, sizeof why,
		       "it granted \"ttl_ms\" %llu, below the %llu asked for (fencebench judges "
		       "each lease by the TTL it asked for)",
		       (unsigned long long)a.ttl_ms, (unsigned long long)asked);
		fb_x_bad_reply(c, what, why);
		return TRY_DONE;
	}
	if (a.fence < c->fences[key]) {
		fb_say(why, sizeof why,
		       "fence %llu is below %llu, which an earlier acquire of key %u gave this "
		       "process: its fences went backwards",
		       (unsigned long long)a.fence, (unsigned long long)c->fences[key], key);
		fb_x_bad_reply(c, what, why);
		return TRY_DONE;
	}
	c->fences[key] = a.fence;
	if (back - sent > WITHDRAW_NS && !e->cfg.lease_undated) { /* too late to date: given back */
		atomic_fetch_add_explicit(&e->withdrawn, 1, memory_order_relaxed);
		if (owned(c, FB_XOP_RELEASE, key, a.fence) == FB_IO_ERROR)
			return TRY_DONE;
		return TRY_AGAIN;
	}
	if (!a.said_replaced)
		atomic_store_explicit(&e->replaced_unsaid, true, memory_order_relaxed);
	*out = (fb_lease){.fence = a.fence,
	                  .owner = c->worker,
	                  .expires_at = sent + e->cfg.ttl_ns,
	                  .service_at = sent,
	                  .replaced = a.replaced};
	*res = FB_ACQUIRED;
	return TRY_DONE;
}

static fb_acquire l_acquire(void *conn, uint32_t key, fb_lease *out, fb_lease_stats *st)
{
	xconn *c = conn;
	(void)st; /* no CAS here */
	if (c->dead)
		return FB_ACQ_ERROR;
	if (key >= c->e->cfg.keys) {
		fb_x_failed(c, "acquire", "key %u out of range (%u keys)", key, c->e->cfg.keys);
		return FB_ACQ_ERROR;
	}
	fb_acquire res;
	for (int slow = 0; try_acquire(c, key, out, &res) == TRY_AGAIN;)
		if (++slow == WITHDRAW_TRIES) { /* counts as held, no holder named */
			*out = (fb_lease){0};
			return FB_HELD;
		}
	return res;
}

static fb_io l_release(void *conn, uint32_t key, const fb_lease *l, fb_lease *freed)
{
	(void)freed; /* it cannot say which word it freed */
	return owned(conn, FB_XOP_RELEASE, key, l->fence);
}

static fb_io l_is_held(void *conn, uint32_t key, const fb_lease *l)
{
	return owned(conn, FB_XOP_IS_HELD, key, l->fence);
}

/* Extended by a TTL from the send: never later than the service's. */
static fb_io l_renew(void *conn, uint32_t key, const fb_lease *l, fb_lease *out)
{
	xconn *c = conn;
	uint64_t sent = fb_clock_now(c->e->cfg.clock);
	fb_io io = owned(c, FB_XOP_RENEW, key, l->fence);
	if (io == FB_IO_OK && out) {
		*out = *l;
		out->expires_at = sent + c->e->cfg.ttl_ns;
	}
	return io;
}

/* The key's holder, for the report's timeline; REFUSED (nothing known)
 * when the adapter offers no peek. Its time left counts from the send. */
static fb_io l_peek(void *conn, uint32_t key, fb_lease *out)
{
	xconn *c = conn;
	*out = (fb_lease){0};
	if (c->dead)
		return FB_IO_ERROR;
	if (!(c->e->hello.ops & (1u << FB_XOP_PEEK)) || key >= c->e->cfg.keys)
		return FB_IO_REFUSED;
	char req[64], what[32], why[200];
	int n = snprintf(req, sizeof req, "{\"op\":\"peek\",\"key\":%u}\n", key);
	fb_say(what, sizeof what, "peek key %u", key);
	uint64_t sent = fb_clock_now(c->e->cfg.clock), left;
	bool held;
	if (!fb_x_call(c, req, (size_t)n, what))
		return FB_IO_ERROR;
	if (!fb_exec_peek_of(&c->reply, &held, &out->owner, &out->fence, &left, why, sizeof why)) {
		fb_x_bad_reply(c, what, why);
		return FB_IO_ERROR;
	}
	if (held)
		out->expires_at = sent + left * 1000000;
	return FB_IO_OK;
}

static void l_unjudged(void *eng, char *buf, size_t len)
{
	xengine *e = eng;
	uint64_t w = atomic_load_explicit(&e->withdrawn, memory_order_relaxed);
	size_t o = 0;
	buf[0] = 0;
	if (atomic_load_explicit(&e->replaced_unsaid, memory_order_relaxed))
		o += (size_t)snprintf(
		        buf, len,
		        "whether each fence was above the one it replaced (the adapter "
		        "does not say what its acquires replaced)");
	if (e->cfg.ttl_ns <= SLACK_NS && o < len)
		o += (size_t)snprintf(
		        buf + o, len - o,
		        "%stwo live holders at once (the TTL, %llu ms, is not above the "
		        "%llu ms by which an acquire's date on fencebench's clock may "
		        "be off: give --ttl 100ms or more)",
		        o ? "; " : "", (unsigned long long)(e->cfg.ttl_ns / 1000000),
		        (unsigned long long)(SLACK_NS / 1000000));
	if (w && o < len)
		snprintf(
		        buf + o, len - o,
		        "%s%llu %s, answered more than %llu ms after the send, too late to date on "
		        "fencebench's clock (given back, tried again)",
		        o ? "; " : "", (unsigned long long)w, w == 1 ? "acquire" : "acquires",
		        (unsigned long long)(WITHDRAW_NS / 1000000));
}

const fb_lease_ops fb_exec_lease_ops = {
        FB_LEASE_OPS_HEAD,
        .scheme = "exec",
        .name = "adapter",
        .url = FB_EXEC_LEASE_URL,
        .help = FB_EXEC_LEASE_HELP,
        .remote = true,
        .open = l_open,
        .version = fb_x_version,
        .prepare = l_prepare,
        .close = l_close,
        .connect = l_connect,
        .disconnect = fb_x_disconnect,
        .error = fb_x_error,
        .acquire = l_acquire,
        .release = l_release,
        .is_held = l_is_held,
        .renew = l_renew,
        .peek = l_peek,
        .unjudged = l_unjudged,
        .witness_slack_ns = SLACK_NS,
};
