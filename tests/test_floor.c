/*
 * The floor: every primitive measures something, and the pipelines leave
 * their invariant intact (each record's last fence is the highest fence
 * minted for its key, its balance fell by exactly the pipelines completed
 * on it, every slot is free). No assertion depends on speed. The command
 * line: bad input exits 2 with one line naming the option, --json writes
 * the documented schema. FB_BIN names the binary (make test sets it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <sched.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fbproc.h"
#include "fbtest.h"
#include "floor.h"

#define SHORT (20 * MS)

static const fb_floor_prim pipelines[] = {FB_FLOOR_PIPELINE_GLOBAL, FB_FLOOR_PIPELINE_PER_KEY,
                                          FB_FLOOR_MUTEX};

/* ---- the invariant, as a function that names the first violation ---- */

static char why[256];

/*
 * NULL if r is consistent, else what is wrong. Written from the floor's
 * definition, not from floor.c's code: one fence per completed pipeline
 * reached the record, the highest one last, nothing else moved a balance.
 */
static const char *violation(const fb_floor_run *r)
{
	const fb_floor_spec *s = &r->spec;
	uint64_t sum = 0, debited = 0;
	for (uint32_t i = 0; i < s->threads; i++)
		sum += r->thread_ops[i];
	if (sum != r->ops)
		return snprintf(why, sizeof why, "ops %llu != sum of thread ops %llu",
		                (unsigned long long)r->ops, (unsigned long long)sum),
		       why;
	if (s->prim == FB_FLOOR_FETCH_ADD) {
		/* the counter starts at 1 and every counted op added 1 */
		if (r->counter - 1 != r->ops)
			return snprintf(why, sizeof why, "counter moved %llu times for %llu ops",
			                (unsigned long long)(r->counter - 1),
			                (unsigned long long)r->ops),
			       why;
		return NULL;
	}
	for (uint32_t k = 0; k < s->keys; k++) {
		const fb_floor_key *key = &r->key[k];
		uint64_t done = (uint64_t)(FB_FLOOR_INITIAL_BALANCE - key->balance);
		debited += done;
		if (key->slot_owner != 0)
			return snprintf(why, sizeof why, "key %u: slot left held by %u", k,
			                key->slot_owner),
			       why;
		if (key->last_fence != key->slot_fence)
			return snprintf(why, sizeof why,
			                "key %u: record's last fence %llu, slot's fence %llu", k,
			                (unsigned long long)key->last_fence,
			                (unsigned long long)key->slot_fence),
			       why;
		/* per-key sources mint 1, 2, 3...: the generation counts the pipelines */
		if (s->prim != FB_FLOOR_PIPELINE_GLOBAL && key->slot_fence != done)
			return snprintf(why, sizeof why,
			                "key %u: %llu fences minted, balance fell by %llu", k,
			                (unsigned long long)key->slot_fence,
			                (unsigned long long)done),
			       why;
		if (s->prim == FB_FLOOR_PIPELINE_GLOBAL && key->last_fence >= r->counter)
			return snprintf(why, sizeof why,
			                "key %u: last fence %llu was never minted (counter %llu)",
			                k, (unsigned long long)key->last_fence,
			                (unsigned long long)r->counter),
			       why;
		if (s->tally && key->completed != done)
			return snprintf(why, sizeof why,
			                "key %u: %llu pipelines completed, balance fell by %llu", k,
			                (unsigned long long)key->completed,
			                (unsigned long long)done),
			       why;
		if (s->tally && key->max_fence != key->last_fence)
			return snprintf(why, sizeof why,
			                "key %u: highest fence minted %llu, record's last %llu", k,
			                (unsigned long long)key->max_fence,
			                (unsigned long long)key->last_fence),
			       why;
	}
	if (debited != r->ops)
		return snprintf(why, sizeof why, "%llu pipelines completed, %llu debits applied",
		                (unsigned long long)r->ops, (unsigned long long)debited),
		       why;
	if (s->prim == FB_FLOOR_PIPELINE_GLOBAL && r->counter - 1 < r->ops)
		return snprintf(why, sizeof why, "%llu pipelines but only %llu fences minted",
		                (unsigned long long)r->ops, (unsigned long long)(r->counter - 1)),
		       why;
	return NULL;
}

/* One run of SHORT; one in which no thread got a core for all of it (a
 * loaded machine) completes nothing and is run again, 10 runs at most. */
static void run_spec(fb_floor_prim p, uint32_t threads, uint32_t keys, bool tally, fb_floor_run *r)
{
	fb_floor_spec s = {p, threads, keys, SHORT, tally, NULL};
	for (int run = 1;; run++) {
		fb_err e = fb_floor_run_one(&s, r);
		check(e == FB_OK, "%s, %u threads, %u keys: %s", fb_floor_name(p), threads, keys,
		      fb_strerror(e));
		if (r->ops > 0 || run == 10)
			return;
		fb_floor_run_free(r);
	}
}

/* ---- the library ---- */

static void test_measure_gives_every_selected_primitive_a_rate(void **state)
{
	(void)state;
	fb_floor_result r;
	check_eq(fb_floor_measure(2, 4, SHORT, FB_FLOOR_ALL, &r), FB_OK, "measure all, 2 threads");
	for (int p = 0; p < FB_FLOOR_PRIMS; p++)
		check(fb_floor_rate(&r, (fb_floor_prim)p) > 0, "%s: rate %g, expected > 0",
		      fb_floor_name((fb_floor_prim)p), fb_floor_rate(&r, (fb_floor_prim)p));
	check(r.fetch_add_ops_s > 0 && r.pipeline_global_ops_s > 0 &&
	              r.pipeline_per_key_ops_s > 0 && r.mutex_ops_s > 0,
	      "the named fields are the rates fb_floor_rate returns");

	check_eq(fb_floor_measure(2, 4, SHORT, 1u << FB_FLOOR_MUTEX, &r), FB_OK, "mutex only");
	check(r.mutex_ops_s > 0, "mutex selected: rate %g, expected > 0", r.mutex_ops_s);
	check(r.fetch_add_ops_s == 0 && r.pipeline_global_ops_s == 0 &&
	              r.pipeline_per_key_ops_s == 0,
	      "unselected primitives read 0, got %g %g %g", r.fetch_add_ops_s,
	      r.pipeline_global_ops_s, r.pipeline_per_key_ops_s);
}

static void test_bad_arguments_are_refused(void **state)
{
	(void)state;
	fb_floor_result r;
	check_eq(fb_floor_measure(0, 4, SHORT, FB_FLOOR_ALL, &r), FB_EINVAL, "zero threads");
	check_eq(fb_floor_measure(2, 0, SHORT, FB_FLOOR_ALL, &r), FB_EINVAL, "zero keys");
	check_eq(fb_floor_measure(2, 4, 0, FB_FLOOR_ALL, &r), FB_EINVAL, "zero duration");
	check_eq(fb_floor_measure(2, 4, SHORT, 0, &r), FB_EINVAL, "nothing selected");
	check_eq(fb_floor_measure(2, 4, SHORT, 1u << FB_FLOOR_PRIMS, &r), FB_EINVAL,
	         "an unknown primitive selected");
	check_eq(fb_floor_measure(70000, 4, SHORT, FB_FLOOR_ALL, &r), FB_EINVAL,
	         "more threads than 16-bit owners can name");
	fb_floor_run run;
	fb_floor_spec s = {FB_FLOOR_PRIMS, 2, 4, SHORT, false, NULL};
	check_eq(fb_floor_run_one(&s, &run), FB_EINVAL, "an unknown primitive");
}

/* The measured loops (no tallies): what the records and slots show. */
static void test_pipelines_leave_the_invariant_intact(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof pipelines / sizeof pipelines[0]; i++) {
		fb_floor_run r;
		run_spec(pipelines[i], 2, 4, false, &r);
		check(r.ops > 0, "%s: no pipeline completed", fb_floor_name(pipelines[i]));
		const char *v = violation(&r);
		check(!v, "%s: %s", fb_floor_name(pipelines[i]), v);
		fb_floor_run_free(&r);
	}
	fb_floor_run r;
	run_spec(FB_FLOOR_FETCH_ADD, 2, 4, false, &r);
	const char *v = violation(&r);
	check(!v, "fetch_add: %s", v);
	fb_floor_run_free(&r);
}

/* The same loops with the per-thread tallies: per key, the highest fence
 * minted is the record's last, and the balance fell by the count. */
static void test_tallies_match_every_key(void **state)
{
	(void)state;
	uint32_t keys[] = {1, 4, 64}; /* 1: both threads on one slot, the retry path */
	for (size_t i = 0; i < sizeof pipelines / sizeof pipelines[0]; i++)
		for (size_t j = 0; j < sizeof keys / sizeof keys[0]; j++) {
			fb_floor_run r;
			run_spec(pipelines[i], 2, keys[j], true, &r);
			const char *v = violation(&r);
			check(!v, "%s, %u keys: %s", fb_floor_name(pipelines[i]), keys[j], v);
			fb_floor_run_free(&r);
		}
}

/* The invariant check itself catches what it claims to: a run corrupted by
 * hand, one way at a time, is flagged. */
static void test_the_invariant_check_catches_corruption(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof pipelines / sizeof pipelines[0]; i++) {
		fb_floor_run r;
		run_spec(pipelines[i], 2, 2, true, &r);
		const char *name = fb_floor_name(pipelines[i]);
		check(!violation(&r), "%s: clean run flagged: %s", name, why);
		fb_floor_key saved = r.key[1];

		r.key[1].balance++; /* a lost debit */
		check(violation(&r) != NULL, "%s: a lost debit went unnoticed", name);
		r.key[1] = saved;
		r.key[1].last_fence = saved.last_fence ? saved.last_fence - 1 : 7;
		check(violation(&r) != NULL, "%s: a record behind its slot went unnoticed", name);
		r.key[1] = saved;
		r.key[1].slot_owner = 2;
		check(violation(&r) != NULL, "%s: a slot left held went unnoticed", name);
		r.key[1] = saved;
		r.key[1].completed++;
		check(violation(&r) != NULL, "%s: a miscounted key went unnoticed", name);
		r.key[1] = saved;
		check(!violation(&r), "%s: restored run flagged: %s", name, why);
		fb_floor_run_free(&r);
	}
}

/* ---- the command line ---- */

typedef struct proc {
	int code;
	char *out, *err;
} proc;

/* `FB_BIN floor ARGS...`; stdout is read after stderr, so keep it small.
 * rlimit_as > 0 caps the child's address space. */
static void floor_cmd(proc *p, const char *const *args, rlim_t rlimit_as)
{
	int o[2], e[2];
	check(pipe(o) == 0 && pipe(e) == 0, "pipe failed: %s", strerror(errno));
	const char *argv[32] = {fb_test_bin(), "floor"};
	int n = 2;
	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pid_t pid = fork();
	check(pid >= 0, "fork failed: %s", strerror(errno));
	if (pid == 0) {
		dup2(o[1], 1);
		dup2(e[1], 2);
		close(o[0]);
		close(e[0]);
		if (rlimit_as) {
			struct rlimit rl = {rlimit_as, rlimit_as};
			setrlimit(RLIMIT_AS, &rl);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(o[1]);
	close(e[1]);
	p->err = fb_test_slurp(e[0]);
	p->out = fb_test_slurp(o[0]);
	int status;
	waitpid(pid, &status, 0);
	p->code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void done(proc *p)
{
	free(p->out);
	free(p->err);
}

static void test_bad_input_exits_2_naming_option_and_value(void **state)
{
	(void)state;
	static const struct {
		const char *args[4];
		const char *names[2]; /* in the one line on stderr */
	} cases[] = {
	        {{"-t", "0"}, {"--threads", "'0'"}},
	        {{"-t", "1,,2"}, {"--threads", "'1,,2'"}},
	        {{"-t", "2,"}, {"--threads", "'2,'"}},
	        {{"--threads", "x"}, {"--threads", "'x'"}},
	        {{"-t", "40000"}, {"--threads", "'40000'"}},
	        {{"-t", "-1"}, {"--threads", "'-1'"}},
	        {{"-d", "0"}, {"--duration", "'0'"}},
	        {{"-d", "5parsecs"}, {"--duration", "'5parsecs'"}},
	        {{"--duration", "-1s"}, {"--duration", "'-1s'"}},
	        {{"-k", "0"}, {"--keys", "'0'"}},
	        {{"-k", "2000000"}, {"--keys", "'2000000'"}},
	        {{"--only", "fetch_add,bogus"}, {"--only", "'bogus'"}},
	        {{"--only", ","}, {"--only", "','"}},
	        {{"--bogus"}, {"--bogus", "unknown option"}},
	        {{"-x"}, {"-x", "unknown option"}},
	        {{"-t"}, {"-t", "needs a value"}},
	        {{"stray"}, {"stray", "unexpected"}},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		proc p;
		floor_cmd(&p, cases[i].args, 0);
		const char *a0 = cases[i].args[0], *a1 = cases[i].args[1] ? cases[i].args[1] : "";
		check_eq(p.code, 2, "exit code for bad input");
		for (int k = 0; k < 2; k++)
			check(strstr(p.err, cases[i].names[k]), "'%s %s': stderr names %s: %s", a0,
			      a1, cases[i].names[k], p.err);
		char *nl = strchr(p.err, '\n');
		check(nl && nl[1] == 0, "'%s %s': exactly one line on stderr: %s", a0, a1, p.err);
		check(p.out[0] == 0, "'%s %s': nothing measured, nothing on stdout: %s", a0, a1,
		      p.out);
		done(&p);
	}
}

static void test_help_exits_0(void **state)
{
	(void)state;
	proc p;
	const char *args[] = {"--help", NULL};
	floor_cmd(&p, args, 0);
	check_eq(p.code, 0, "--help exit code");
	const char *words[] = {"--threads",       "--duration",       "--keys",
	                       "--only",          "--json",           "fetch_add",
	                       "pipeline-global", "pipeline-per-key", "mutex"};
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		check(strstr(p.out, words[i]), "--help mentions %s: %s", words[i], p.out);
	done(&p);
}

static void test_json_has_the_schema_and_one_row_per_thread_count(void **state)
{
	(void)state;
	char dir[] = "/tmp/fbfloor-XXXXXX", path[64];
	check(mkdtemp(dir) != NULL, "mkdtemp failed: %s", strerror(errno));
	snprintf(path, sizeof path, "%s/floor.json", dir);
	const char *args[] = {"-t", "1,2", "-d", "20ms", "-k", "4", "--json", path, NULL};
	proc p;
	floor_cmd(&p, args, 0);
	check_eq(p.code, 0, "a short floor run exits 0");
	check(strstr(p.out, "threads") && strstr(p.out, "ops/s") && strstr(p.out, "ns/op"),
	      "the table has its header: %s", p.out);
	json_object *doc = json_object_from_file(path);
	check(doc != NULL, "--json wrote a parseable file at %s; stderr: %s", path, p.err);
	json_object *v, *rows, *m;
	check(json_object_object_get_ex(doc, "schema", &v) && json_object_get_int(v) == 1,
	      "schema 1");
	check(json_object_object_get_ex(doc, "tool", &v) &&
	              !strcmp(json_object_get_string(v), "fencebench"),
	      "tool fencebench");
	check(json_object_object_get_ex(doc, "kind", &v) &&
	              !strcmp(json_object_get_string(v), "floor"),
	      "kind floor");
	check(json_object_object_get_ex(doc, "machine", &m) &&
	              json_object_object_get_ex(m, "cpu", &v) &&
	              json_object_object_get_ex(m, "cores", &v) &&
	              json_object_object_get_ex(m, "kernel", &v),
	      "machine has cpu, cores, kernel");
	check(json_object_object_get_ex(doc, "rows", &rows) &&
	              json_object_is_type(rows, json_type_array),
	      "rows is an array");
	check_eq(json_object_array_length(rows), 2, "one row per thread count");
	check(strstr(p.out, "consumer: ") && strstr(p.out, " records/s alone"),
	      "the consumer's capacity is printed beside the table: %s", p.out);
	check(json_object_object_get_ex(doc, "consumer_records_s", &v) &&
	              json_object_get_double(v) > 0,
	      "consumer_records_s is measured");
	const char *keys[] = {"fetch_add_ops_s", "pipeline_global_ops_s", "pipeline_per_key_ops_s",
	                      "mutex_ops_s"};
	for (size_t i = 0; i < 2; i++) {
		json_object *row = json_object_array_get_idx(rows, i);
		check(json_object_object_get_ex(row, "threads", &v) &&
		              json_object_get_int(v) == (int)i + 1,
		      "row %zu is for %zu threads", i, i + 1);
		check(json_object_object_get_ex(row, "keys", &v) && json_object_get_int(v) == 4,
		      "row %zu records 4 keys", i);
		for (size_t k = 0; k < 4; k++)
			check(json_object_object_get_ex(row, keys[k], &v) &&
			              json_object_get_double(v) > 0,
			      "row %zu: %s is a rate above 0", i, keys[k]);
	}
	json_object_put(doc);
	done(&p);

	const char *only[] = {"-t", "2", "-d", "20ms", "--only", "mutex", "--json", path, NULL};
	floor_cmd(&p, only, 0);
	check_eq(p.code, 0, "--only mutex exits 0");
	doc = json_object_from_file(path);
	check(doc && json_object_object_get_ex(doc, "rows", &rows), "--only: JSON written");
	json_object *row = json_object_array_get_idx(rows, 0);
	check(json_object_object_get_ex(row, "mutex_ops_s", &v) && json_object_get_double(v) > 0,
	      "--only mutex measures mutex");
	check(json_object_object_get_ex(row, "fetch_add_ops_s", &v) && v == NULL,
	      "--only mutex leaves fetch_add null");
	check(!strstr(p.out, "fetch_add"), "the table shows only what was measured: %s", p.out);
	json_object_put(doc);
	done(&p);
	unlink(path);
	rmdir(dir);
}

static void test_runtime_errors_exit_3(void **state)
{
	(void)state;
	proc p;
	const char *args[] = {"-t",     "1",         "-d",     "1ms",
	                      "--only", "fetch_add", "--json", "/nonexistent-dir/floor.json",
	                      NULL};
	floor_cmd(&p, args, 0);
	check_eq(p.code, 3, "exit code when the JSON cannot be written");
	check(strstr(p.err, "/nonexistent-dir/floor.json"), "the error names the file: %s", p.err);
	done(&p);

	if (getenv("FB_SANITIZED"))
		return; /* sanitizer runtimes reserve terabytes of address space */
	/* 4000 threads of 256 KiB stacks cannot fit in 256 MiB */
	const char *many[] = {"-t", "4000", "-d", "1ms", "--only", "fetch_add", NULL};
	floor_cmd(&p, many, (rlim_t)256 << 20);
	check_eq(p.code, 3, "exit code when threads cannot be created");
	check(strstr(p.err, "thread"), "the error says what failed: %s", p.err);
	char *nl = strchr(p.err, '\n');
	check(nl && nl[1] == 0, "one line on stderr: %s", p.err);
	done(&p);
}

/* The CPUs a thread started with attr may run on. */
static void *own_cpus(void *arg)
{
	cpu_set_t *set = arg;
	CPU_ZERO(set);
	sched_getaffinity(0, sizeof *set, set);
	return NULL;
}

static cpu_set_t started_on(const fb_placement *pl, uint32_t i, bool *applied)
{
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	*applied = fb_placement_apply(pl, i, &attr);
	cpu_set_t set;
	pthread_t t;
	check_eq(pthread_create(&t, &attr, own_cpus, &set), 0, "thread started");
	pthread_join(t, NULL);
	pthread_attr_destroy(&attr);
	return set;
}

/* --cpus and --pin (the workers' placement, which a run's floor now shares):
 * the set given, or one CPU each, round robin; nothing asked, nothing set. */
static void test_placement_puts_each_thread_where_asked(void **state)
{
	(void)state;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	bool applied;
	const uint32_t cpu0[] = {0};
	fb_placement only0 = {cpu0, 1, false};
	cpu_set_t set = started_on(&only0, 5, &applied);
	check(applied, "--cpus 0 sets an affinity");
	check(CPU_COUNT(&set) == 1 && CPU_ISSET(0, &set), "--cpus 0: CPU 0 alone");
	fb_placement pin = {NULL, 0, true};
	set = started_on(&pin, 1, &applied);
	long want = online > 1 ? 1 : 0;
	check(applied && CPU_COUNT(&set) == 1 && CPU_ISSET(want, &set),
	      "--pin: thread 1 on CPU %ld alone", want);
	fb_placement none = {NULL, 0, false};
	check(!fb_placement_apply(&none, 0, NULL), "nothing asked: no affinity set");
	check(!fb_placement_apply(NULL, 0, NULL), "no placement: no affinity set");
	/* a floor measured there runs (and counts) as one measured anywhere */
	fb_floor_spec s = {FB_FLOOR_PIPELINE_PER_KEY, 2, 4, SHORT, true, &only0};
	fb_floor_run r;
	check_eq(fb_floor_run_one(&s, &r), FB_OK, "a floor on CPU 0");
	check(r.ops > 0, "it measured operations");
	fb_floor_run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_measure_gives_every_selected_primitive_a_rate),
	        cmocka_unit_test(test_bad_arguments_are_refused),
	        cmocka_unit_test(test_pipelines_leave_the_invariant_intact),
	        cmocka_unit_test(test_tallies_match_every_key),
	        cmocka_unit_test(test_the_invariant_check_catches_corruption),
	        cmocka_unit_test(test_bad_input_exits_2_naming_option_and_value),
	        cmocka_unit_test(test_help_exits_0),
	        cmocka_unit_test(test_json_has_the_schema_and_one_row_per_thread_count),
	        cmocka_unit_test(test_runtime_errors_exit_3),
	        cmocka_unit_test(test_placement_puts_each_thread_where_asked),
	};
	return cmocka_run_group_tests_name("floor", tests, NULL, NULL);
}
