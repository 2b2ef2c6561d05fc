/*
 * The store adapter protocol (--store exec:COMMAND), without any I/O: the
 * reply parser and what each reply must hold, so that a fuzzer can drive
 * both and the engine (exec.c) only moves lines. The protocol itself is
 * specified in the README ("Bring your own store"); in short: one JSON
 * object per line each way, one reply line per request, in order.
 *
 * The parser is strict where ambiguity would let a broken adapter pass: a
 * reply is exactly one JSON object (RFC 8259, UTF-8, no trailing bytes),
 * no field twice, integers exact in 64 bits (a fraction or an exponent is
 * a number, not an integer). Fields it does not know are ignored, nested
 * values included, so a later protocol version can add some.
 */
#ifndef FB_EXEC_PROTO_H
#define FB_EXEC_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"

/* The version this fencebench speaks, sent in the hello; an adapter that
 * answers with another one is refused. A change that an adapter of version
 * 1 could misread bumps it. */
#define FB_EXEC_PROTOCOL 1

/* The longest reply line, its newline left out: far above any reply of
 * protocol 1, low enough that a runaway adapter cannot fill memory. */
#define FB_EXEC_LINE_MAX 65536

/* A column heading: the table's columns are 13 wide. */
#define FB_EXEC_NAME_MAX 13

typedef enum fb_jtype {
	FB_J_NULL,
	FB_J_BOOL,
	FB_J_INT,    /* an integer in int64 range */
	FB_J_BIG,    /* an integer out of int64 range */
	FB_J_NUMBER, /* with a fraction or an exponent */
	FB_J_STRING,
	FB_J_ARRAY,
	FB_J_OBJECT,
} fb_jtype;

/* One member of the reply's top-level object. */
typedef struct fb_jfield {
	const char *name; /* decoded, NUL-terminated */
	fb_jtype type;
	bool b;
	int64_t i;
	const char *s;    /* a string: decoded, NUL-terminated (no NUL inside) */
	size_t len;       /* ... its length */
	uint32_t items;   /* an array: its elements */
	uint32_t strings; /* ... how many are strings: NUL-separated from s */
} fb_jfield;

#define FB_REPLY_FIELDS 32

typedef struct fb_reply {
	fb_jfield f[FB_REPLY_FIELDS];
	unsigned n;
} fb_reply;

/* Parse line[0..len) as one JSON object. Names and strings are decoded
 * into scratch, which must hold len + 1 bytes. False: why, with the byte
 * offset, in err. */
bool fb_reply_parse(fb_reply *r, const char *line, size_t len, char *scratch, size_t cap, char *err,
                    size_t errlen);

/* The member called name, or NULL. */
const fb_jfield *fb_reply_get(const fb_reply *r, const char *name);

/* The operations a hello may list. */
typedef enum fb_exec_op {
	FB_XOP_HELLO,
	FB_XOP_RESET,
	FB_XOP_READ,
	FB_XOP_WRITE,
	FB_XOP_DEBIT,
	FB_XOP_FINAL,
	FB_XOP_META,
	FB_XOP_HISTORY,
	/* the lease side's (--lease exec:COMMAND) */
	FB_XOP_ACQUIRE,
	FB_XOP_RELEASE,
	FB_XOP_RENEW,
	FB_XOP_IS_HELD,
	FB_XOP_PEEK,
	FB_XOPS
} fb_exec_op;

extern const char *const fb_exec_op_names[FB_XOPS];

/* "read, write, reset, final": the ops of a mask, for messages. */
void fb_exec_ops_list(uint32_t ops, char *buf, size_t len);

typedef struct fb_exec_hello {
	int64_t protocol;
	uint32_t ops;                    /* bit (1 << fb_exec_op) per op offered */
	char name[FB_EXEC_NAME_MAX + 1]; /* the column's heading ("" if not given) */
	char version[48];                /* the store's, for the report ("" if none) */
	bool unfenced_reads; /* a store's "fenced_reads": false: no token on its reads */
} fb_exec_hello;

/* Each validator reads one kind of reply. False: what was wrong in err
 * (the reply's fields by name). The caller has already taken an "error"
 * member as the adapter's own failure (fb_exec_error_of). */

/* An {"error": "..."} reply: its text, else NULL. */
const char *fb_exec_error_of(const fb_reply *r);

/* The hello: protocol FB_EXEC_PROTOCOL, the ops as an array of strings
 * (unknown ones ignored), an optional name ([A-Za-z0-9._-], not a built-in
 * discipline's) and version (printable ASCII), and an optional
 * "fenced_reads" (true unless false: a store that keeps no token on reads
 * says so, and the report says its reads are not fenced). */
bool fb_exec_hello_of(const fb_reply *r, fb_exec_hello *h, char *err, size_t errlen);

/* ---- the lease side (--lease exec:COMMAND) ------------------------------
 *
 * The same framing and the same hello, with "side": "lease" each way and
 * the lease side's own version: a store adapter given to --lease (or a
 * lease adapter to --store) is refused by name, not misread. */
#define FB_EXEC_LEASE_PROTOCOL 1

/* The hello of a lease adapter: "side": "lease", protocol
 * FB_EXEC_LEASE_PROTOCOL, the ops, and the optional name and version of
 * the store's hello. */
bool fb_exec_lease_hello_of(const fb_reply *r, fb_exec_hello *h, char *err, size_t errlen);

/* What an acquire's reply says. Granted ({"ok": true}): the fence minted
 * (1..2^47-1), and where the service can say them, the fence of the lease
 * it replaced ("replaced", 0..2^47-1) and the TTL it granted ("ttl_ms",
 * >= 1). Held ({"ok": false}): where it can say them, the live lease's
 * "owner" (0..65535) and "fence". 0: not said. */
typedef struct fb_exec_acquired {
	bool ok;
	uint64_t fence, replaced;
	uint64_t ttl_ms;
	uint16_t owner;
	bool said_replaced; /* granted, and "replaced" given (0 too: nothing before) */
} fb_exec_acquired;

bool fb_exec_acquire_of(const fb_reply *r, fb_exec_acquired *a, char *err, size_t errlen);

/* A release, renew or is_held reply: {"ok": true} done / still ours,
 * {"ok": false} not ours (taken over, expired, or never). */
bool fb_exec_lease_ok_of(const fb_reply *r, bool *ok, char *err, size_t errlen);

/* A peek reply: {"held": false}, or {"held": true, "owner", "fence",
 * "ttl_ms"} (ttl_ms: what is left of it, >= 0). */
bool fb_exec_peek_of(const fb_reply *r, bool *held, uint16_t *owner, uint64_t *fence,
                     uint64_t *left_ms, char *err, size_t errlen);

/* {"ok": true} (reset). */
bool fb_exec_ok_of(const fb_reply *r, char *err, size_t errlen);

/*
 * A read (op FB_XOP_READ), write or debit reply to a call with token, into
 * res as the engines fill fb_store_result: ok; for a served read, balance;
 * for an accepted write, before, balance, version (>= 1; *version gets it
 * whole) and last_fence (the fence of the write it replaced: the store's own
 * view of staleness is token <= last_fence). Optional everywhere: seen and
 * last_fence (the highest fence the key had seen, the last accepted), which
 * give res->highest. A refused write is stale, as core/store.c has it.
 */
bool fb_exec_result_of(const fb_reply *r, fb_exec_op op, uint64_t token, fb_store_result *res,
                       int64_t *version, char *err, size_t errlen);

/* A key's balance and last accepted fence after the run. */
bool fb_exec_final_of(const fb_reply *r, int64_t *balance, uint64_t *last_fence, char *err,
                      size_t errlen);

/* What the adapter's store recorded at its reset: keys, initial balance,
 * amount, cycle ("rmw" or "debit"); modes is the fenced column alone. */
bool fb_exec_meta_of(const fb_reply *r, fb_store_meta *m, char *err, size_t errlen);

/* One line of the history stream: a row ({"key", "version", "fence",
 * "last_fence", "before", "after"} and an optional "worker"), or the end
 * ({"end": true}: *end set). */
bool fb_exec_row_of(const fb_reply *r, fb_history_row *h, bool *end, char *err, size_t errlen);

/* line[0..len) for an error message: at most max bytes, every byte outside
 * printable ASCII as \xNN (a hostile reply must not reach a terminal or a
 * JSON document raw), "..." when cut. */
void fb_exec_quote(const char *line, size_t len, size_t max, char *buf, size_t buflen);

#endif
