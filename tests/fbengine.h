/* What the engine tests share: opening an engine and its connections
 * through its ops vector (failing the test with the engine's reason), the
 * URL checks every engine must pass, a run shared by two processes, and
 * the contract of a store's batched phases. */
#ifndef FB_TEST_ENGINE_H
#define FB_TEST_ENGINE_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "backend.h"
#include "fbproc.h"
#include "servers.h"

/* A lease engine's configuration for the tests: 4 keys, ttl, one fence
 * counter from 1, the monotonic clock, every discipline, 5 s deadlines. */
fb_engine_config fb_test_lease_cfg(uint64_t ttl_ns);

void *fb_test_lease_open(const fb_lease_ops *L, const fb_engine_config *cfg, const char *url,
                         bool fresh);
void *fb_test_lease_conn(const fb_lease_ops *L, void *eng, uint16_t worker);
fb_acquire fb_test_acquire(const fb_lease_ops *L, void *conn, uint32_t key, fb_lease *l);

/*
 * The contract every lease engine keeps, checked on a freshly prepared
 * engine with two keys or more: one holder at a time (the refusal names
 * it, and peek sees it), release is compare-and-delete (a second one is
 * refused), the next holder's fence is higher, and a fence on another key
 * higher still (one counter). reports_replaced: the engine fills
 * fb_lease.replaced, 0 for the key's first lease and the predecessor's
 * fence after.
 */
void fb_test_lease_contract(const fb_lease_ops *L, void *eng, bool reports_replaced);

/* Each of the n URLs is refused by open (FB_EINVAL) in one line that
 * begins with the URL as fb_url_redact shows it and never holds "s3cret". */
void fb_test_bad_lease_urls(const fb_lease_ops *L, const fb_engine_config *cfg,
                            const char *const *urls, size_t n);

/* cfg is refused by open (FB_EINVAL) with a reason containing `says`. */
void fb_test_lease_refused(const fb_lease_ops *L, const fb_engine_config *cfg, const char *url,
                           const char *says);

/*
 * What a test may expect of the lease witness. FB_KEEPS_ORDER: nothing
 * (every engine that mints its fence in the step that grants the lock).
 * FB_MINTS_AFTER: Redlock's ?fence=incr mints in a second step after the
 * majority, and a holder stalled between the two (a signal that lands
 * there, a preemption under the sanitizers) mints after the client that
 * took over from it: the witness rightly counts the older lock's newer
 * fence out of acquisition order and the run exits 1. A run not aiming
 * there can still hit it, rarely; so such a run passes exiting 0 with no
 * inversion, or 1 with inversions its only lease violation.
 */
typedef enum fb_witness_expect { FB_KEEPS_ORDER, FB_MINTS_AFTER } fb_witness_expect;

/* The exit code p ended with is the one doc's witness explains: 0 and no
 * broken promise, or (FB_MINTS_AFTER only) 1 and nothing but inversions. */
void fb_test_witness_exit(const fb_test_proc *p, json_object *doc, fb_witness_expect w);

/* --prepare-only, then two processes (--client-id 1 and 2) running
 * common (NULL-terminated: -t, -d, --ttl, ...) against lease and store
 * at once, both exiting as fb_test_witness_exit allows, then
 * `fencebench check --store` finding the fenced history safe. */
void fb_test_shared_run(const char *lease, const char *store, const char *const *common,
                        fb_witness_expect w);

/*
 * The acceptance checks on a run's JSON document (out: its stdout,
 * shown on failure): unfenced accepted stale writes, fenced and
 * write-fenced none, fenced lost no update, the checker agrees, pauses
 * outlasted the TTL and cost holders their leases (the vacuity table's
 * takeovers), and the lease witness saw no broken promise (w: but the
 * inversions FB_MINTS_AFTER allows).
 */
void fb_test_fenced_safe_unfenced_corrupted(json_object *doc, const char *out, fb_witness_expect w);
/* A run that must corrupt unfenced, exiting as fb_test_witness_exit
 * allows: a run in which no stale write was even attempted (vacuous: on a
 * starved machine no takeover may land before a paused holder wakes) is
 * run again, 3 runs at most; any other outcome is the caller's to judge. */
json_object *fb_test_run_corrupting(fb_test_proc *p, const char *const *args, fb_witness_expect w);

/* Start the lease service (kind, into svc) and a redis-server as the store
 * (into store): 1 both running; 0 one is not installed (a SKIPPED line was
 * printed and the `tests` tests of what counted as skipped); -1 one failed
 * (said on stderr). On 0 and -1 nothing is left running. */
int fb_test_start_with_store(fb_server_kind kind, fb_server *svc, fb_server *store,
                             const char *what, size_t tests);

/* ---- a store's batched phases (fb_store_ops.batch) ---- */

/*
 * On a freshly prepared store (every discipline, keys 0 and 1 at the same
 * balance, no token above 9 seen), the same phases sent as batches on key
 * 0 and one call at a time on key 1 give the same outcomes, store by
 * store, and the same final balances: reads where the fenced store refuses
 * a token below one it registered while the others serve it, writes where
 * it refuses as stale while the others accept and a resent copy is
 * refused after its accepted twin, debits, and tokens no lease mints.
 */
void fb_test_store_batch_contract(const fb_store_ops *S, void *conn);

/*
 * Issue 27: a store's fence path above 2^32, on key 0 of a fresh store (all
 * disciplines): fenced and write-fenced compare whole 64-bit tokens (a
 * token that differs from the newest only above bit 31 is stale by all its
 * bits), and the final last fence is the whole token. A 32-bit column, cast
 * or format anywhere in the engine fails it.
 */
void fb_test_store_fences_above_2_32(const fb_store_ops *S, void *conn);

/*
 * The caller broke the write-fenced record of `key` (the server fails
 * every write to it, and every read too when reads_fail): in a batch that
 * store's operation is FB_IO_ERROR naming it ("write-fenced write"), the
 * others' outcomes stand (their writes land, at `balance`), and the
 * connection serves the next batch. The error is left in S->error(conn)
 * for the caller to check the server's own words.
 */
void fb_test_store_batch_one_store_fails(const fb_store_ops *S, void *conn, uint32_t key,
                                         int64_t balance, bool reads_fail);

/*
 * The caller arranged for the connection to be lost once the server has
 * answered the first operation of the next batch: a batch of writes to the
 * three stores on key 0 with token 1 gives the fenced write accepted and
 * the other two FB_IO_ERROR (indeterminate), and a later call fails at
 * once. What the server did with those two is the caller's to check.
 * settles (issue 24: an engine that connects again after a broken
 * connection): the engine, connected again, settles the other two from
 * the store's history (found there if the server ran them, else sent
 * again, once): accepted, version 1, balance 90; and serves the next call.
 */
void fb_test_store_batch_lost_after_first(const fb_store_ops *S, void *conn, bool settles);

/*
 * A debit and its copy sent again in one batch (a retry fault), both
 * replies lost: the batch fb_test_copy_batch on key 0 with token 1, its
 * stores fresh at balance 100, the server running all three. Issue 24:
 * each is settled as its own row of the history, in order: the fenced
 * debit version 1 (100 -> 99), the unfenced ones version 1 (100 -> 99) and
 * version 2 (99 -> 98), not both as the last copy (a duplicate and a chain
 * break the checker would blame on a correct store).
 */
extern const fb_store_op fb_test_copy_batch[3];
void fb_test_store_copy_settled(const fb_store_result *r, const fb_io *io, const char *err);

#endif
