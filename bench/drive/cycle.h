/*
 * The worker's cycle, written once (DESIGN section 8): acquire, read each
 * store, the after-read point, the lease check, the after-check point,
 * write each store, release, hand the accepted writes to the checker. Each
 * operation works on a worker and its environment (the engines and their
 * connections, the clocks, the checkers and the witness, the fault port)
 * and returns what the driver must do next: go on, sleep so long, back off,
 * or stop because the worker died or the run is over. Counters stay in the
 * worker.
 *
 * Two drivers run it. The threaded one (run.c) calls fb_cycle_thread on
 * each worker thread: the operations in a straight line, sleeping where
 * they say. The deterministic one (sim.c) calls fb_cycle_step for one
 * operation of one worker per scheduler step, on a virtual clock, and
 * sleeps a worker by taking it off its run list. Both deliver delayed
 * writes through fb_cycle_deliver and sum the results with fb_env_results.
 */
#ifndef FB_CYCLE_H
#define FB_CYCLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "chain.h"
#include "checker.h"
#include "delay.h"
#include "event.h"
#include "feed.h"
#include "hist.h"
#include "inject.h"
#include "nemesis.h"
#include "options.h"
#include "prng.h"
#include "result.h"
#include "wire.h"
#include "witness.h"

/* Claim a slot of the report (the first of a kind), once per run. */
static inline bool fb_claim_once(_Atomic int *claimed)
{
	int no = 0;
	return !atomic_load_explicit(claimed, memory_order_relaxed) &&
	       atomic_compare_exchange_strong_explicit(claimed, &no, 1, memory_order_relaxed,
	                                               memory_order_relaxed);
}

/* What the driver does after an operation. */
typedef enum fb_next {
	FB_GO,    /* run the next operation (fb_worker.pc) */
	FB_SLEEP, /* wait `ns` on the driver's clock, call fb_cycle_woke, then go on */
	FB_YIELD, /* contended: back off as the driver does, then the same operation again */
	FB_DIED,  /* crashed holding its lease: it never runs again */
	FB_STOP,  /* the run is over for this worker */
} fb_next;

typedef struct fb_step {
	fb_next next;
	uint64_t ns;
} fb_step;

/* The operations, in the cycle's order. */
typedef enum fb_pc {
	FB_PC_BEGIN,       /* a new cycle: the stop flag, the plan */
	FB_PC_PICK,        /* its key */
	FB_PC_ACQUIRE,     /* the lease (again, after contention) */
	FB_PC_READ,        /* the cycle's next store's read (a batching store: all of them) */
	FB_PC_FAULT,       /* an armed skew, crash or late heartbeat */
	FB_PC_RENEW,       /* the late heartbeat itself */
	FB_PC_PAUSE_READ,  /* the after-read point */
	FB_PC_TRAP,        /* ... and a takeover trap left on the key */
	FB_PC_WORK,        /* the holder's work (--work) */
	FB_PC_CHECK,       /* the lease check (--check-lease) */
	FB_PC_PAUSE_CHECK, /* the after-check point */
	FB_PC_ARM,         /* a lost acknowledgement or a delay for the writes */
	FB_PC_WRITE,       /* the next store's write (a batching store: all of them) */
	FB_PC_RELEASE,
	FB_PC_COMMIT, /* the next accepted write to the checker */
	FB_PC_END,
	FB_PCS
} fb_pc;

extern const char *const fb_pc_names[FB_PCS];

typedef struct fb_mode_counters {
	fb_counter writes, accepted, reads_refused, store_stale, zombie;
	fb_counter rejected;         /* writes refused as stale: a newer fence had reached it */
	fb_counter false_rejections; /* writes and reads refused with no newer fence sent */
	fb_counter refused_other;    /* ... refused for a reason the store gave */
	fb_counter unjudged;         /* ... refused where fencebench's record is incomplete */
	fb_counter stale_reads;      /* fenced reads served below a fence admitted before */
	fb_counter indeterminate;    /* sent, and the engine never answered */
	fb_counter control_chances;  /* write-fenced: updates it had to lose (control.h) */
} fb_mode_counters;

/* Where a worker that crashed left its lease, for the taker to time itself. */
typedef struct fb_crash_slot {
	alignas(FB_CACHE_LINE) _Atomic uint64_t fence; /* 0: none pending */
	_Atomic uint64_t at;
} fb_crash_slot;

/*
 * Per key, the words verification keeps of it, together on a line of the
 * key's own. A key's lease changes hands between workers at almost every
 * cycle, and the new holder writes each of these: apart (and beside other
 * keys' words, 2 to 8 keys a line), a hand-over moved four lines between
 * the cores instead of one: at -t 2 on two cores, verification cost 39-42%
 * of the throughput with them apart, 30-34% together. Where the lease
 * table is in process, they sit beside the key's own lease word (the room
 * it lends, fb_lease_ops.side), whose line the acquire's CAS has just
 * brought: -t 2 checked 9-15% faster (the median of 9 rounds' ratios,
 * three comparisons), -t 1 the same or 1-3% slower on the same
 * instructions. Elsewhere, on a pair of lines of their own. A key's marks
 * are FB_PAD_LINE after the last key's either way (fb_env_marks).
 */
typedef struct fb_key_marks {
	fb_witness_slot witness; /* the lease witness's words (witness.c) */
	/* by discipline, the highest fence any call sent to that store
	 * carried: a refusal is judged by what was sent, never by the lease's
	 * promise (DESIGN section 3) */
	_Atomic uint64_t sent[4];
	/* the highest fence the fenced store admitted (a read served, a write
	 * accepted), recorded once its reply came back: a read sent after
	 * that, with a lower fence, must be refused (issue 27) */
	_Atomic uint64_t admitted;
	/* for the write-fenced control's chances (control.h, where
	 * fb_env.wf_judged): the highest fence of a write it had to accept,
	 * replied */
	_Atomic uint64_t wf;
	/* by discipline, the highest fence that two leases sent to that store
	 * (a fence the lease service handed out twice): a store that has seen
	 * it from one holder rightly refuses it to the other. Set by the
	 * second to record it (fb_env_sending), before its call goes. */
	_Atomic uint64_t twice[FB_DISCIPLINES];
} fb_key_marks;
/* the in-process table lends its slot's pair of lines less its 16-byte word */
_Static_assert(sizeof(fb_key_marks) <= FB_PAD_LINE - 16, "a key's marks beside its lease word");

typedef struct fb_env fb_env;

/* One worker: written by its own thread (or its driver) and its pause
 * handler, sampled by the progress thread, summed after the join. */
typedef struct fb_worker {
	alignas(FB_PAD_LINE) fb_fault_port port;
	fb_env *env;
	uint16_t id;
	fb_clock_skewed local; /* its own clock: what a local lease check reads */
	fb_counter ops, acquired, contended, cas_retries, wasted_fences, checker_stalls;
	fb_counter abandoned;      /* cycles whose lease check failed: no write */
	fb_counter local_fooled;   /* local checks that passed on an expired lease */
	fb_counter renew_ok;       /* late heartbeats that still extended the lease */
	fb_counter renew_believed; /* ... that failed, and the client wrote anyway */
	fb_counter crash_takeovers;
	fb_mode_counters m[FB_DISCIPLINES];
	fb_hist acquire, write, cycle, takeover;
	fb_hist eop[FB_EOPS]; /* the engines' round trips, per operation */
	void *lconn, *sconn;  /* its own engine contexts (connections) */
	fb_heard heard;       /* the listeners' slots (event.h) */
	/* ---- the cycle under way ---- */
	uint8_t pc;   /* fb_pc: the next operation */
	uint8_t i;    /* the store (or commit) the operation takes next */
	bool pausing; /* a pause begun: fb_cycle_woke ends it */
	bool counting, timed, checked, stale, resend, sent, silent, taken_over;
	uint8_t reg; /* the stores (1 << d) its lease's fence is recorded at (fb_env_sending) */
	int8_t any_phase; /* a plan's pause "anywhere": the phase it struck, or -1 */
	uint8_t first;    /* the rotation of the stores this cycle */
	uint32_t key;
	uint32_t tick, rot;      /* n % sample and n % nactive, by counting */
	unsigned fails;          /* contended attempts in a row */
	unsigned looks;          /* threads: countdown to a look at the clock (look_out) */
	uint64_t n;              /* cycles begun */
	uint64_t t0, t1, tw, t2; /* a timed cycle's start, acquired, first write, written */
	uint64_t local_deadline, steps, spauses, jumps, delay;
	/* issue 24: wire and nemesis faults so far, at the acquire */
	uint64_t wires[FB_FAULTS_OUTSIDE];
	uint64_t outside0;    /* ... and the outside faults' log, then */
	uint64_t stale_newer; /* a stale write's newer fence: the story hears FB_EV_STALE */
	fb_lease l;
	fb_lease_stats ls;
	fb_store_result res, rd[FB_DISCIPLINES];
	int64_t bal[FB_DISCIPLINES];
	bool served[FB_DISCIPLINES];
	uint8_t outcome[FB_DISCIPLINES];
	uint8_t rd_out[FB_DISCIPLINES]; /* a refused read, judged (fb_outcome) */
	uint64_t admitted;              /* the fenced store's, when its read was sent */
	/* the write-fenced control's chances (control.h): the highest write
	 * fence sent when its read was served, and what its write saw */
	uint64_t wf_read_at, wf_seen;
	bool wf_above, wf_armed;
	fb_feed_log *log; /* its accepted writes' way to the checker (listen_feed.h) */
	uint64_t stalls;
	fb_prng rng;
	const fb_plan_entry *plan; /* its faults still to come, when replaying */
	size_t planned;
} fb_worker;

/* Issue 24: one outside fault as the story tells it (under the env's
 * outside_mu: written by the injector, read by a stale writer's story). */
#define FB_OUTSIDE_LOG 64
typedef struct fb_outside_fault {
	uint64_t seq; /* its number, from 1; 0: unused */
	uint64_t at, ns;
	uint64_t end;         /* a nemesis fault's heal, done; 0: not yet */
	uint32_t fault, what; /* fb_fault; dir | 1 << 8 on the store's wire, or a name */
} fb_outside_fault;

/* How a driver holds a delayed write in flight: the threaded one on its
 * delay line's thread, the simulator in its event queue. FB_ENOMEM: it
 * cannot, and the write goes out on time. */
typedef fb_err (*fb_send_fn)(void *ctx, const fb_delayed_write *dw);

/* Everything the workers share. Built by fb_env_open, read-only after,
 * but for the atomics. */
struct fb_env {
	const fb_config *cfg;
	const fb_clock *fast;        /* the driver's time: latency, takeovers, delays */
	const fb_clock *clock;       /* the lease service's clock */
	fb_clock_skewed service;     /* ... when it is a wall clock a skew fault steps */
	fb_clock_core_behind behind; /* ... planted slow-core: 2 ms behind on one CPU */
	const fb_lease_ops *lops;    /* the engines (backends/backend.h) */
	const fb_store_ops *sops;
	void *leng, *seng;
	void *net_lconn, *net_sconn; /* the deliveries' contexts, and the report's */
	void *pause_lconn;           /* the injector's, for server pauses and node jumps */
	_Atomic uint64_t server_pauses;
	_Atomic uint64_t node_jumps; /* a node's clock jumped (Redlock under libfaketime) */
	/* issue 24: partitions, slow wires, nemesis faults so far */
	_Atomic uint64_t wire_faults[FB_FAULTS_OUTSIDE];
	fb_wire wire;                /* issue 24: the proxies of ?proxy=1 URLs */
	char *lease_url, *store_url; /* the URLs the engines open: the proxies' */
	bool wiring;                 /* a wire fault, or a nemesis fault, can strike */
	fb_nemesis *nemesis;         /* issue 24: --nemesis exec:COMMAND */
	const char *nemesis_name[32];
	char nemesis_names[1024];
	unsigned n_nemesis_names;
	uint64_t nemesis_started; /* faults its command started, once it is healed */
	/* the last FB_OUTSIDE_LOG outside faults (wire, nemesis), for the
	 * story: the first to strike a stale writer's cycle is its cause */
	fb_outside_fault outside[FB_OUTSIDE_LOG];
	pthread_mutex_t outside_mu; /* the log's: both sides are cold paths */
	bool outside_mu_init;
	_Atomic uint64_t outside_seq; /* faults logged so far */
	uint64_t nemesis_seq;         /* the last nemesis fault's, under outside_mu */
	bool remote;                  /* round trips: every engine call is timed */
	bool batched;    /* the store takes a phase's reads (writes) in one round trip */
	bool checking;   /* the history checker sees every write */
	bool witnessing; /* the lease witness hears every acquire */
	bool blocking;   /* a commit may wait for room (threads); else it yields (sim) */
	bool skip;       /* --on-held skip */
	bool crashes;    /* crash faults can strike: takeovers are timed */
	bool stepping;   /* a wall-clock lease service a skew fault can step */
	bool judging;    /* refusals are judged: every call to the stores is this process's */
	bool narrating;  /* the simulator's history line hears the events (listen_narrate.h) */
	uint32_t own_versions; /* disciplines whose versions are the store's own (ordered) */
	bool server_pausing;
	bool jumping;         /* node-jump is on, and the lease service can take it */
	uint64_t lease_slack; /* how far two readings of the lease clock may disagree */
	/* the engine's stated validity short of the TTL (validity_short_ns);
	 * 0: none stated, overlaps judged on the acquisition instant */
	uint64_t validity_short;
	uint64_t core_skew;   /* ... measured across this machine's cores (in process) */
	uint32_t timed_modes; /* store calls timed as round trips: remote, not exec's controls */
	/* Per key, what verification keeps of it (fb_key_marks): the
	 * witness's word and the records below, beside the key's lease word
	 * or on a pair of lines of the key's own. */
	char *marks;     /* key 0's marks, a key's FB_PAD_LINE from the last's (fb_env_marks) */
	void *marks_own; /* their memory, where the lease table lends none */
	bool wf_judged;  /* fb_key_marks.wf: the write-fenced control's chances are judged */
	_Atomic int stale_read_claimed;
	fb_stale_read stale_read;
	/* Per discipline whose versions are the store's own, per key, its
	 * write calls (FB_CALLS_*): the ordered checker's evidence. */
	_Atomic uint64_t *calls[FB_DISCIPLINES];
	fb_checker *checker[FB_DISCIPLINES];
	fb_feed *feed;        /* the workers' logs to the checkers, one more for the deliveries */
	fb_feed_log *net_log; /* ... the deliveries' */
	fb_witness *witness;
	/* The lease chain (chain.h, listen_chain.h): the simulator's, judged
	 * beside the witness until it takes the witness's place in process
	 * (issue 26); NULL elsewhere. chain_lost: a record it could not keep. */
	fb_chain *chain;
	bool chain_lost;
	fb_pause_trap *traps;
	fb_crash_slot *crashes_at;
	fb_send_fn send;
	void *send_ctx;
	fb_plan_log *log;
	fb_plan plan;
	double *zipf_cdf;     /* --dist zipf: cumulative weights of keys 0..k */
	_Atomic int counting; /* 0 while warming up: throughput and latency not counted */
	fb_discipline active[FB_DISCIPLINES];
	int nactive;
	fb_worker *workers;
	uint32_t nworkers; /* set up (the threaded driver: started) */
	_Atomic int stop;
	_Atomic uint32_t done; /* workers through their --cycles */
	_Atomic int exhausted;
	uint64_t t0; /* the run's start on the lease clock: set before any worker */
	/* Threads: the warm-up's end and the run's on the fast clock, set
	 * before any worker, for the workers to see for themselves; and when
	 * one of them next looks for a stop signal (fb_cycle_thread). */
	uint64_t count_at;
	_Atomic uint64_t end_at, look_at;
	_Atomic int failed; /* an engine stopped answering: set once */
	char failure[2560]; /* ... written by the thread that set it */
	/* the deliveries of delayed writes: written by one delivering thread */
	fb_mode_counters net[FB_DISCIPLINES];
	fb_counter net_stalls, net_delivered, net_stale, net_takeovers;
	_Atomic uint64_t service_steps; /* the injector's steps of the service clock */
	/* the first corruption, the first false rejection: claimed once each,
	 * written by their claimers only */
	_Atomic int first_claimed, false_claimed;
	fb_first_corruption first;
	/* the story's stale write (the first, and the first of the article's
	 * shape), as the checkers saw it: their newer writes */
	_Atomic int shape_claimed;
	fb_first_corruption shaped;
	fb_check_watch watch_first, watch_shaped;
	fb_false_rejection false_rej;
	_Atomic int other_claimed; /* the first refusal for another reason: its text */
	char other_reason[160];
	fb_counter plan_slipped;
};

/* Key key's marks. */
static inline fb_key_marks *fb_env_marks(const fb_env *e, uint32_t key)
{
	return (fb_key_marks *)(void *)(e->marks + (size_t)key * FB_PAD_LINE);
}

/* The record of the highest fence sent to store d on key. */
static inline _Atomic uint64_t *fb_env_sent(fb_env *e, uint32_t key, fb_discipline d)
{
	return &fb_env_marks(e, key)->sent[d];
}

/*
 * A call carrying fence f goes to store d (reads count at the fenced store
 * only: the write-fenced one registers none). Recorded before it is sent:
 * seq_cst, so that it is seen by anyone whose refusal the call could cause
 * (their reply comes after the call reached the store). A call below what
 * was sent already leaves the record as it is. *reg: the stores this lease
 * has recorded its fence at (a bit per store, 0 at its acquire), so that
 * an equal fence found there is told apart: its own earlier call, or
 * another lease's, which records that the fence was sent twice.
 */
static inline __attribute__((always_inline)) void
fb_env_sending(fb_env *e, fb_discipline d, uint32_t key, uint64_t f, uint8_t *reg)
{
	if (d == FB_UNFENCED || !e->judging)
		return;
	uint64_t was = fb_atomic_max(fb_env_sent(e, key, d), f, memory_order_seq_cst);
	/* another lease sent f here first: rare (a broken lease service),
	 * recorded before this call goes */
	if (__builtin_expect(was == f && !(*reg >> d & 1), 0))
		fb_atomic_max(&fb_env_marks(e, key)->twice[d], f, memory_order_seq_cst);
	*reg |= (uint8_t)(1u << d);
}

/* Another lease had sent fence f to store d on key too, by the record
 * (fb_env_sending): read after the reply to a call carrying f. */
static inline bool fb_env_sent_twice(fb_env *e, uint32_t key, fb_discipline d, uint64_t f)
{
	return atomic_load_explicit(&fb_env_marks(e, key)->twice[d], memory_order_seq_cst) == f;
}

/* The driver's side of fb_env_open: its clocks and how it holds delayed
 * writes and lets a planted two-step acquire be interrupted between its
 * steps. */
typedef struct fb_env_driver {
	const fb_clock *fast; /* its time */
	const fb_clock *wall; /* under a wall-clock lease service (--lease-clock realtime) */
	bool blocking;        /* commits may wait (threads) */
	fb_send_fn send;
	void *send_ctx;
	void (*between)(void *ctx); /* the two-step's fault point */
	void *between_ctx;
} fb_env_driver;

/* What the engines are told about a run of cfg, on the lease clock `clock`. */
fb_engine_config fb_env_engine_config(const fb_config *cfg, const fb_clock *clock);

/* Open and prepare the engines, connect every worker and the delivery,
 * build the checkers, the witness and whatever the faults need: all that
 * the workers share, before any runs. Prints what failed (the option and
 * the reason) and returns FB_ENOMEM / FB_EINVAL / FB_ESYS; on success
 * res->per_thread_ops, ->dead and ->keys are allocated. */
fb_err fb_env_open(fb_env *env, const fb_config *cfg, const fb_env_driver *drv, fb_results *res);
void fb_env_close(fb_env *env);

/* Stop the run: every worker ends its cycle, every sleep of the run ends. */
void fb_env_stop(fb_env *e);

/* The first to see an engine fail keeps the reason; the run stops. */
void fb_env_failed(fb_env *env, const char *what, const char *why);

/* A worker before its first cycle. */
void fb_worker_init(fb_worker *w, fb_env *env, uint16_t id);

/* The threaded driver: the whole cycle in a straight line, until the run
 * stops or the worker dies. */
void fb_cycle_thread(fb_worker *w);

/* The simulator: one operation of w. */
fb_step fb_cycle_step(fb_worker *w);

/* After a sleep the driver did for FB_SLEEP: a pause's end. */
void fb_cycle_woke(fb_worker *w);

/* A delayed write lands: what the store does with it, counted. An accepted
 * one to be walked goes to *out (true) for the caller to commit. */
bool fb_cycle_deliver(fb_env *env, const fb_delayed_write *dw, fb_check_rec *out);

/* Log one accepted write for its checker (log: the producer's), waiting
 * for room when the environment is blocking; false if the log is full and
 * it may not wait (try again later), or the wait was given up (the run
 * fails). Published at once. */
bool fb_cycle_commit(fb_env *env, fb_feed_log *log, const fb_check_rec *c, uint64_t *stalls);

/* What the injector (or the simulator's fault events) is told: the faults'
 * rates and sizes, the service clock to step, the plan; `clock` is the
 * driver's time. */
fb_injector_config fb_env_injector_config(fb_env *e, const fb_clock *clock);
/* Issue 24: the run's start (t0) is written: the nemesis may strike. */
void fb_env_started(fb_env *e);
/* Issue 24: heal the nemesis fault under way, if any, and stop it. */
void fb_env_heal(fb_env *e);

/* --plan-out: the faults taken, written as a plan (a failure said on stderr:
 * the run's own numbers stand). */
void fb_env_write_plan(fb_env *e, fb_results *res);

/* The counters now, summed over the workers and the deliveries, at t0 +
 * s->t_s on the driver's clock (the progress line and the CSV). */
void fb_env_sample(fb_env *e, uint64_t t0, fb_sample *s);

/* After every worker stopped: sum the workers, walk every checker and
 * compare it with its store, keep the examples; res->cfg and the fields
 * fb_env_open allocated are filled. */
void fb_env_results(fb_env *env, fb_results *res);

#endif
