/* What the end-to-end tests share: the binary under test, reading a pipe to
 * the end, and scratch directories. */
#ifndef FB_PROC_H
#define FB_PROC_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

/* The binary under test: $FB_BIN (make test sets it per flavour). */
const char *fb_test_bin(void);

/* Everything left on fd, NUL-terminated; closes fd. Free it. */
char *fb_test_slurp(int fd);

/* fork() for a child that execs the binary: in the child SIGINT, SIGQUIT,
 * SIGTERM and SIGHUP act as from a terminal, even where the suite was
 * started in the background (a shell's `&` starts it with SIGINT ignored,
 * nohup with SIGHUP ignored, and an exec keeps that), and one sent at once
 * is not lost. The child runs in a scratch directory of the suite's (removed
 * at exit), so a run given no -o never writes into the user's results/;
 * fb_test_bin() is absolute. */
pid_t fb_test_fork(void);

/* A fresh directory under /tmp (free the name), its listing (names one a
 * line in sorted order, . and .. left out), the first file ending in suffix, removal of it
 * and its plain files. */
char *fb_test_tmpdir(void);
void fb_test_listdir(const char *dir, char *buf, size_t len);
bool fb_test_find_suffix(const char *dir, const char *suffix, char *path, size_t len);
void fb_test_rmtree(const char *dir);

/* The value at a dotted path ("run.engines.failure") of a JSON document,
 * or NULL if any step is missing. */
json_object *fb_test_json(json_object *doc, const char *path);

/* The JSON document in the file at path (put it), and the integer at a
 * dotted path of one: the test fails, saying which, if either is missing. */
json_object *fb_test_load(const char *path);
int64_t fb_test_num(json_object *doc, const char *path);

/* The binary under test run in the background with args (argv[0] left
 * out, NULL-terminated); its stdout and stderr go to files in a scratch
 * directory. fb_test_finish waits for it and reads them. */
typedef struct fb_test_proc {
	int pid;
	char *dir;
	char *out, *err; /* after fb_test_finish */
	int code;        /* exit code, or 128 + signal */
} fb_test_proc;

void fb_test_start(fb_test_proc *p, const char *const *args);
/* The same, killed by SIGALRM (code 128 + 14) if it runs past limit_s: a
 * bound on a hang, generous, never a measure of speed. */
void fb_test_start_within(fb_test_proc *p, const char *const *args, unsigned limit_s);
int fb_test_finish(fb_test_proc *p);
/* Start and finish in one. */
int fb_test_run(fb_test_proc *p, const char *const *args);
/* The binary quiet on store (--store), its results in dir, with extra args
 * (NULL-terminated, or NULL); the test fails unless it exits want. Its JSON
 * document comes back (put it), or NULL if the run wrote none. */
json_object *fb_test_run_store(fb_test_proc *p, const char *dir, const char *store,
                               const char *const *extra, int want);
void fb_test_release(fb_test_proc *p);

/* Run the binary with extra args (NULL-terminated) plus -q, a scratch
 * results directory and --json, check that it exits `want` (printing its
 * output if not), and return the JSON document it wrote (put it). */
json_object *fb_test_run_doc(fb_test_proc *p, const char *const *extra, int want);
/* The same, whatever it exits (p->code): its document, or NULL if none. */
json_object *fb_test_run_doc_any(fb_test_proc *p, const char *const *extra);

/* The adapter tests' start: the python3 interpreter's own path (not a
 * shim: starts stay quick) into python, the repository (the parent of
 * $FB_TESTS, else of tests) into root. False when python3 with sqlite3 is
 * missing: the n tests of `what` were reported skipped, and main returns 0.
 * A repository not found exits 1. */
bool fb_test_adapter_setup(char *python, size_t plen, char *root, size_t rlen, unsigned n,
                           const char *what);

/* "exec:PYTHON ROOT/PATH ARGS": an adapter of the repository run by the
 * interpreter itself. The last four stay valid (they rotate). */
const char *fb_test_exec_url(const char *python, const char *root, const char *path,
                             const char *args);

#endif
