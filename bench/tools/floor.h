/*
 * The floor: what the machine itself allows, measured on the same machine
 * and thread count as a stress run, so a run's throughput can be read as a
 * fraction of its floor instead of a bare number.
 *
 * Four primitives, each run by N threads in parallel for a fixed time with
 * nothing around them (no clock reads, no checker, no faults, no counter
 * but one private op count per thread):
 *
 *   fetch_add         a relaxed fetch_add on one shared 64-bit counter: the
 *                     ceiling of the global fence source.
 *   pipeline-global   per operation, on a uniformly drawn key: CAS the lease
 *                     slot from free to (fence, owner) with a fence from one
 *                     shared counter, CAS the store record from (balance,
 *                     last_fence) to (balance - 1, fence) if fence >
 *                     last_fence, CAS the slot back to free. The three
 *                     16-byte CASes an acquire, a fenced write and a release
 *                     cannot do without, with the memory orders lease.c and
 *                     store.c give them.
 *   pipeline-per-key  the same, the fence being the slot's own generation + 1.
 *   mutex             the same step under one pthread_mutex per key, on
 *                     plain fields (fence = the key's generation + 1): the
 *                     lock-based comparison.
 *
 * A slot found held is retried: pause, then yield after a few tries.
 */
#ifndef FB_FLOOR_H
#define FB_FLOOR_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"
#include "placement.h"

typedef enum fb_floor_prim {
	FB_FLOOR_FETCH_ADD,
	FB_FLOOR_PIPELINE_GLOBAL,
	FB_FLOOR_PIPELINE_PER_KEY,
	FB_FLOOR_MUTEX,
	FB_FLOOR_PRIMS,
} fb_floor_prim;

/* The `which` bit set of fb_floor_measure: (1u << prim) per primitive. */
#define FB_FLOOR_ALL ((1u << FB_FLOOR_PRIMS) - 1)

/* Every record starts with this balance; each completed pipeline takes 1. */
#define FB_FLOOR_INITIAL_BALANCE (INT64_C(1) << 62)

/* "fetch_add", "pipeline-global", "pipeline-per-key", "mutex"; "?" if out
 * of range. */
const char *fb_floor_name(fb_floor_prim p);

/* Total ops/s over all threads; 0 for a primitive not measured. */
typedef struct fb_floor_result {
	double fetch_add_ops_s, pipeline_global_ops_s, pipeline_per_key_ops_s, mutex_ops_s;
} fb_floor_result;

/* The rate of primitive p in r. */
double fb_floor_rate(const fb_floor_result *r, fb_floor_prim p);

/*
 * Measure every primitive in `which`, one after the other, each with
 * `threads` threads on `keys` keys for duration_ns. Unselected rates are 0.
 * FB_EINVAL for zero threads, keys, duration or an empty or unknown set
 * (or more threads than 16-bit owners name); FB_ENOMEM; FB_ESYS when a
 * thread could not be created (errno says why; the threads already started
 * are stopped and joined first).
 */
fb_err fb_floor_measure_on(uint32_t threads, uint32_t keys, uint64_t duration_ns, unsigned which,
                           const fb_placement *place, fb_floor_result *out);
fb_err fb_floor_measure(uint32_t threads, uint32_t keys, uint64_t duration_ns, unsigned which,
                        fb_floor_result *out);

/* One measurement of one primitive, and the state it left behind. */
typedef struct fb_floor_spec {
	fb_floor_prim prim;
	uint32_t threads, keys;
	uint64_t duration_ns;
	/* Each thread also counts, privately, the pipelines it completed per
	 * key and the highest fence it installed per key (the same loop source
	 * compiled with the tallies in; measurements leave them out). */
	bool tally;
	/* where the threads run (NULL: anywhere): a stress run's floor runs
	 * where its workers did */
	const fb_placement *place;
} fb_floor_spec;

/* A key's state after the run (the pipelines and mutex; zero for
 * fetch_add). `completed` and `max_fence` only with spec.tally. */
typedef struct fb_floor_key {
	int64_t balance;     /* the record's final balance */
	uint64_t last_fence; /* the record's final last accepted fence */
	uint64_t slot_fence; /* the fence left in the slot (mutex: the key's generation) */
	uint16_t slot_owner; /* 0: the slot was left free */
	uint64_t completed;  /* tally: pipelines completed on this key, all threads */
	uint64_t max_fence;  /* tally: highest fence any thread installed for it */
} fb_floor_key;

typedef struct fb_floor_run {
	fb_floor_spec spec;
	uint64_t ops;        /* completed operations, all threads */
	uint64_t elapsed_ns; /* from releasing the threads to raising the stop flag */
	double ops_s;
	uint64_t counter;     /* the shared counter's final value (fetch_add, global) */
	uint64_t *thread_ops; /* spec.threads entries */
	fb_floor_key *key;    /* spec.keys entries */
} fb_floor_run;

/* Run spec. Errors as fb_floor_measure; on success free *out with
 * fb_floor_run_free. */
fb_err fb_floor_run_one(const fb_floor_spec *spec, fb_floor_run *out);
void fb_floor_run_free(fb_floor_run *r);

/* `fencebench floor [options]`: argv[0] is "floor". Exit 0, 2 on bad
 * input, 3 when a thread cannot be created or the JSON cannot be written. */
int fb_floor_main(int argc, char **argv);

#endif
