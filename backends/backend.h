/*
 * Engines: where the leases live and where the balances are written. The
 * workers, the injector, the checker and the report talk to two ops
 * vectors, one for the lease service (--lease URL) and one for the store
 * (--store URL), and never to an engine directly. The in-process engine
 * (core/lease, core/store) is the default and the first instance; Redis
 * (leases and store), PostgreSQL (store) and exec (a store or a lease
 * service of the user's own, through an adapter program: exec.h) are the
 * others.
 *
 * An engine is opened once per run (open), prepared (prepare: tables,
 * scripts, initial balances), then every worker thread connects for its own
 * context (connect: one server connection per worker for the remote
 * engines). Every call on a context comes from the thread that owns it.
 *
 * Remote calls can fail. A call that could not be completed returns
 * FB_IO_ERROR (or FB_ACQ_ERROR) and leaves the reason in fb_*_error(conn);
 * the run then stops, writes what it measured and exits 3. A write whose
 * reply never came is of unknown outcome: the run counts it as
 * indeterminate, never as corrupt, and the store's own history (which the
 * engine writes in the same step as the balance) tells later what it did.
 * An engine may first connect again when its connection broke (issue 24:
 * Redis, PostgreSQL) and settle such a write from that history itself:
 * accepted if the history holds it, else sent again, once; FB_IO_ERROR
 * only when it cannot.
 */
#ifndef FB_BACKEND_H
#define FB_BACKEND_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bug.h"
#include "clock.h"
#include "common.h"
#include "lease.h"
#include "store.h"

/* What every engine is told about the run (the same in every process of a
 * shared run, except client_id). */
typedef struct fb_engine_config {
	uint32_t keys;
	uint64_t ttl_ns;
	fb_fence_source fence; /* global counter or per-key fences */
	uint64_t first_fence;
	const fb_clock *clock;      /* the in-process lease service's clock */
	fb_bug bug;                 /* a planted bug (in-process engine only) */
	void (*between)(void *ctx); /* two-step: the fault point between SET and mint */
	void *between_ctx;
	uint32_t modes; /* bit (1 << fb_discipline) per store discipline used */
	int64_t initial_balance;
	int64_t amount;
	int op; /* fb_op: FB_OP_RMW (client computes) or FB_OP_DEBIT (store subtracts) */
	uint32_t client_id; /* 0: a single process; N: process N of a shared run */
	uint32_t threads;   /* workers that will connect */
	/* How long a remote call may go unanswered before the engine gives up
	 * (FB_IO_ERROR): longer than any pause the run injects into the
	 * service itself. 0: the engine's default of 10 s. */
	uint64_t timeout_ns;
	/* An adapter's deadline for its hello and every call, as the user gave
	 * it (--adapter-timeout): exact, no floor. 0: timeout_ns's rules. */
	uint64_t adapter_timeout_ns;
	/* No lease witness dates the leases (adapter-test): an engine that
	 * withdraws an acquire too slow to date (exec's) keeps it. */
	bool lease_undated;
} fb_engine_config;

/* The outcome of one remote (or in-process) call. */
typedef enum fb_io {
	FB_IO_OK,      /* read served / write accepted / lease released, held, renewed */
	FB_IO_REFUSED, /* read refused / write rejected as stale / lease not ours */
	FB_IO_ERROR,   /* no answer: the connection failed (fb_*_error says why).
	                  For a write, its outcome is unknown: indeterminate */
} fb_io;

/* An engine's round trips, one histogram each (the report's per-operation
 * latency). */
typedef enum fb_engine_op {
	FB_EOP_ACQUIRE,
	FB_EOP_RELEASE,
	FB_EOP_IS_HELD,
	FB_EOP_READ,
	FB_EOP_WRITE,
	FB_EOPS
} fb_engine_op;

extern const char *const fb_engine_op_names[FB_EOPS];

/* ---- leases ------------------------------------------------------------ */

/* fb_lease as a remote engine fills it: fence and owner as for the
 * in-process table; expires_at on the caller's clock (cfg->clock, read
 * when the request was sent: never later than the server's own expiry);
 * and `service_at`, the acquisition instant on the lease service's own
 * clock (ns), which is what the lease witness orders leases by. */

/*
 * Each ops vector says which version of its struct it was written against
 * and the struct's size as its engine was compiled (FB_LEASE_OPS_HEAD,
 * FB_STORE_OPS_HEAD, first in its initializer). The registry checks both
 * and every required op when it registers the vector, and refuses one
 * that falls short by the engine's scheme and the op's name, rather than
 * let the cycle call through a NULL (registry.h). Bump a version when a
 * required op is added or an op's meaning changes.
 */
#define FB_LEASE_OPS_VERSION 2
#define FB_STORE_OPS_VERSION 1
#define FB_LEASE_OPS_HEAD .version_of_ops = FB_LEASE_OPS_VERSION, .size = sizeof(fb_lease_ops)
#define FB_STORE_OPS_HEAD .version_of_ops = FB_STORE_OPS_VERSION, .size = sizeof(fb_store_ops)

typedef struct fb_lease_ops {
	uint32_t version_of_ops; /* FB_LEASE_OPS_VERSION, by FB_LEASE_OPS_HEAD */
	uint32_t size;           /* sizeof (fb_lease_ops), by FB_LEASE_OPS_HEAD */
	const char *scheme;      /* "inproc", "redis": the URL's scheme */
	const char *name;   /* for the report: "in-process", "Redis" */
	/* Its URL's form, for the error line that lists the engines
	 * ("redis://HOST:PORT/DB"), and as --help shows it, with its options:
	 * the registry writes both lists from its engines (registry.h). */
	const char *url, *help;
	bool remote;        /* calls are round trips: each is timed, latency sampled always */
	/* Open the engine at url; on failure a message (URL with any password
	 * redacted, and the library's reason) goes to err, and FB_ESYS (cannot
	 * reach the server) or FB_EINVAL (a malformed URL or option). */
	fb_err (*open)(const fb_engine_config *cfg, const char *url, void **eng, char *err,
	               size_t errlen);
	/* Optional (NULL): judge url as input, with no server, before the run
	 * header is printed: false with *why (never the password) when open
	 * would refuse it as malformed. */
	bool (*check_url)(const char *url, const char **why);
	/* The server's version, e.g. "7.0.15", into buf. */
	void (*version)(void *eng, char *buf, size_t len);
	/* Before the workers start: reset (forget every lease and fence) when
	 * `fresh`, otherwise only make sure the engine is ready. */
	fb_err (*prepare)(void *eng, bool fresh, char *err, size_t errlen);
	void (*close)(void *eng);
	fb_err (*connect)(void *eng, uint16_t worker, void **conn, char *err, size_t errlen);
	void (*disconnect)(void *conn);
	/* The last failure on this context, for the error line. */
	const char *(*error)(void *conn);
	/* Take key for this worker if free or expired, minting its fence.
	 * FB_ACQ_ERROR: no answer. */
	fb_acquire (*acquire)(void *conn, uint32_t key, fb_lease *out, fb_lease_stats *st);
	/* Compare-and-delete by (owner, fence): OK released, REFUSED taken over.
	 * Released, where the engine can say which word it freed (the
	 * in-process table: version 2), that word's fence and owner go to
	 * *freed (NULL: not asked); an engine that cannot say leaves it as
	 * the caller set it. */
	fb_io (*release)(void *conn, uint32_t key, const fb_lease *l, fb_lease *freed);
	/* OK while the lease is this worker's and live. */
	fb_io (*is_held)(void *conn, uint32_t key, const fb_lease *l);
	/* Extend a lease still held by (owner, fence) by a TTL from now. */
	fb_io (*renew)(void *conn, uint32_t key, const fb_lease *l, fb_lease *out);
	/* The lease a key holds now (owner 0: none; fence 0: not known yet, a
	 * two-step engine between taking the key and minting), for the report's
	 * timeline. */
	fb_io (*peek)(void *conn, uint32_t key, fb_lease *out);
	/* Optional (NULL): suspend the whole service for ns (Redis CLIENT
	 * PAUSE), from the injector's own context. */
	fb_io (*server_pause)(void *conn, uint64_t ns);
	/* Optional (NULL): step the clock of one node of a service made of
	 * independent nodes forward by ns, so that the leases it keeps expire
	 * early (a Redlock node run under libfaketime). ns 0 only asks whether
	 * it can: REFUSED, with the reason in error(conn), when no node was
	 * set up for it. From the injector's own context. */
	fb_io (*node_jump)(void *conn, uint64_t ns);
	/* How far apart two acquisition instants (service_at) of this engine
	 * may read and still be taken as equal by the lease witness; 0: the
	 * default for remote engines (2 ms, a server's millisecond grid). An
	 * engine whose service_at is the caller's clock sets the bound it
	 * enforces on its own round trip. */
	uint64_t witness_slack_ns;
	/* Optional (NULL): how much shorter than the TTL the validity this
	 * engine states (expires_at) is, by its own documented rule (Redlock's
	 * drift allowance), for a TTL of ttl_ns. Set, the engine dates its
	 * acquires on the caller's clock and fills answered_at, and the lease
	 * witness judges an overlap by its own bound: a new holder's reply
	 * more than 50 us before the previous lease's stated validity end. */
	uint64_t (*validity_short_ns)(uint64_t ttl_ns);
	/* Optional (NULL: every judgement is made): after the run, what the
	 * lease witness could not judge of this engine and why, into buf ("":
	 * nothing), for the report's "not judged" line. */
	void (*unjudged)(void *eng, char *buf, size_t len);
	/* Optional (NULL): room in this process's memory beside each key's
	 * lease word, lent for the caller's own per-key words (the in-process
	 * table: fb_lease_table_side). */
	void *(*side)(void *eng, size_t *stride, size_t *room);
} fb_lease_ops;

/* ---- stores ------------------------------------------------------------ */

/* One accepted write as the store recorded it, in the same step. */
typedef struct fb_history_row {
	fb_discipline d;
	uint32_t key;
	uint64_t version; /* the key's commit order: 1, 2, ..., or the store's own */
	uint64_t fence;
	int64_t before, after; /* the balance it replaced and the one it left */
	bool store_stale;      /* the store's own verdict: token <= last accepted */
	uint32_t client, worker;
} fb_history_row;

typedef struct fb_store_meta {
	int64_t initial_balance, amount;
	uint32_t keys;
	int op;
	uint32_t modes;
	/* not recorded: the disciplines whose versions are the store's own
	 * (own_versions), where a gap is no lost write */
	uint32_t own_versions;
} fb_store_meta;

/* One operation of a batched phase: store d's read, write (value: the
 * balance; read: this worker's read of it in the cycle, write's hint) or
 * debit (value: the amount). */
typedef enum fb_store_verb { FB_STORE_READ, FB_STORE_WRITE, FB_STORE_DEBIT } fb_store_verb;

typedef struct fb_store_op {
	fb_store_verb verb;
	fb_discipline d;
	int64_t value;
	const fb_store_result *read;
} fb_store_op;

/* The most operations one batched phase carries: a write to each store and
 * its resent copy (a lost acknowledgement). */
#define FB_BATCH_MAX (2 * FB_DISCIPLINES)

/* A store engine serves every discipline of cfg->modes; results are
 * fb_store_result as core/store.h defines them (version: the write's place
 * in the key's commit order, mod 2^16; stale: the store's own view that
 * the token was <= the last accepted fence; before / balance / highest). */
typedef struct fb_store_ops {
	uint32_t version_of_ops; /* FB_STORE_OPS_VERSION, by FB_STORE_OPS_HEAD */
	uint32_t size;           /* sizeof (fb_store_ops), by FB_STORE_OPS_HEAD */
	const char *scheme;      /* "inproc", "redis", "postgres", "exec" */
	const char *name;
	const char *url, *help; /* as the lease engine's */
	bool remote; /* calls are round trips */
	/* Disciplines a remote engine serves in process all the same (exec's
	 * controls): their calls are not timed as round trips. */
	uint32_t local_modes;
	fb_err (*open)(const fb_engine_config *cfg, const char *url, void **eng, char *err,
	               size_t errlen);
	/* Optional (NULL): as the lease engine's check_url. */
	bool (*check_url)(const char *url, const char **why);
	void (*version)(void *eng, char *buf, size_t len);
	/* fresh: drop every record and the history, and start each selected
	 * discipline's keys at cfg->initial_balance. Otherwise create what is
	 * missing only (a shared run's later processes), refusing (FB_EINVAL)
	 * a store prepared with another balance, amount or key count. */
	fb_err (*prepare)(void *eng, bool fresh, char *err, size_t errlen);
	void (*close)(void *eng);
	fb_err (*connect)(void *eng, uint16_t worker, void **conn, char *err, size_t errlen);
	void (*disconnect)(void *conn);
	const char *(*error)(void *conn);
	/* fenced: refused if token < highest seen, registered otherwise. */
	fb_io (*read)(void *conn, fb_discipline d, uint32_t key, uint64_t token,
	              fb_store_result *r);
	/* Set the balance with the token; `read` is this worker's read of the
	 * key in this cycle (a hint the in-process store uses). */
	fb_io (*write)(void *conn, fb_discipline d, uint32_t key, int64_t balance, uint64_t token,
	               const fb_store_result *read, fb_store_result *r);
	/* Subtract amount with the token (the article's debit). */
	fb_io (*debit)(void *conn, fb_discipline d, uint32_t key, int64_t amount, uint64_t token,
	               fb_store_result *r);
	/*
	 * Optional (NULL for the in-process store, whose calls are no round
	 * trips): a cycle's phase in one round trip, the disciplines of one
	 * server travelling together: the n operations ops[0..n) on key, all
	 * with one token, sent in that order (n <= FB_BATCH_MAX). Each stays
	 * its own atomic step, exactly as read, write or debit would have
	 * done it: its outcome goes to io[i] and r[i], one store's refusal or
	 * error leaving the others' outcomes standing. An FB_IO_ERROR leaves
	 * its reason in error(conn), naming the store of a server's error; a
	 * connection lost mid-batch is FB_IO_ERROR for every operation whose
	 * reply never came (for a write: indeterminate).
	 */
	void (*batch)(void *conn, int n, const fb_store_op *ops, uint32_t key, uint64_t token,
	              fb_store_result *r, fb_io *io);
	/* After the run: each key's balance and last accepted fence. */
	fb_io (*final)(void *conn, fb_discipline d, uint32_t keys, int64_t *balance,
	               uint64_t *last_fence);
	/* Optional (NULL for the in-process store, which keeps none): visit the
	 * stored history of accepted writes, ordered by discipline, key and
	 * version, for `fencebench check`. */
	fb_io (*history)(void *conn, void (*row)(void *ctx, const fb_history_row *h), void *ctx);
	/* Optional: what prepare recorded (balance, amount, keys, op). */
	fb_io (*meta)(void *conn, fb_store_meta *out);
	/* Optional (NULL: history and meta say it): whether this store, as
	 * opened, keeps what `fencebench check` reads (meta and history): an
	 * adapter may offer neither. False: why, for check's usage error. */
	bool (*keeps_history)(void *eng, char *why, size_t len);
	/* Optional (NULL: none): the disciplines whose versions are the store's
	 * own, any strictly increasing number per key (gapped, a global
	 * revision, a timestamp), not fencebench's 1, 2, 3...: their checker
	 * orders them itself (fb_checker_create_ordered). */
	uint32_t (*own_versions)(void *eng);
	/* Optional (NULL: none): the disciplines whose reads carry no token the
	 * store checks (an adapter's hello may say so): the report says their
	 * reads are not fenced, instead of counting them as fenced reads. */
	uint32_t (*unfenced_reads)(void *eng);
	/* Optional (NULL: every column is its discipline's name): the heading
	 * of discipline d's column, for a store that is not fencebench's own
	 * (an adapter's "yours"), or NULL for the discipline's name. */
	const char *(*column)(void *eng, fb_discipline d);
} fb_store_ops;

/* ---- what the engines and their callers share --------------------------- */

/* The heading of discipline d's column in a run on ops' engine eng: the
 * engine's own name for it, else fb_discipline_name(d). */
const char *fb_store_column(const fb_store_ops *ops, void *eng, fb_discipline d);

/* snprintf into buf that may cut (a message too long for its buffer is
 * still one); false, so a check can `return fb_say(err, ...)`. */
bool fb_say(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Copy url into buf with any password replaced by "***" (URL userinfo or
 * a conninfo's password=...). */
void fb_url_redact(const char *url, char *buf, size_t len);

/* ---- what the remote engines share ------------------------------------- */

/* cfg->timeout_ns, or the default of 10 s when it is 0. */
uint64_t fb_engine_timeout(const fb_engine_config *cfg);

/* ns as seconds, without trailing zeros: "10", "0.5", "2.25". */
void fb_engine_seconds(char *buf, size_t len, uint64_t ns);

/* Issue 24: a service of several members that did not answer a call rides
 * it out while it has been silent for no longer than the engine's timeout
 * (since *down_since, which this sets at the first silence; the caller
 * zeroes it when a call is answered): true. False when it has been silent
 * longer: then `why` is "no member answered for N s; the last: LAST". */
bool fb_engine_ride_out(uint64_t *down_since, const fb_engine_config *cfg, const char *member,
                        const char *last, char *why, size_t len);

/* Why a lease engine cannot serve cfg, or NULL: no keys, no TTL, a first
 * fence out of range, or (service_fences: a service that mints its own,
 * one counter for every key) --fence per-key or a --first-fence. */
const char *fb_engine_lease_problem(const fb_engine_config *cfg, bool service_fences);

/* buf = "<url>: <fmt formatted>": how an engine keeps a failure. */
void fb_engine_failv(char *buf, size_t len, const char *url, const char *fmt, va_list ap);

/* msg into err (when there is room for it): an engine's reason for the
 * caller's error line. */
void fb_engine_err(char *err, size_t errlen, const char *msg);

#endif
