#define _GNU_SOURCE
#include "fbproc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fbtest.h"

/* A line of a run's output that says its verdict or why it failed. */
static bool verdict_line(const char *l, size_t n)
{
	static const char *const starts[] = {
	        "lease:", "first",   "fenced:", "write-fenced:", "unfenced:",   "FAIL",
	        "PASS",   "CHECKER", "checker", "INCOMPLETE",    "fencebench:", "exit "};
	static const char *const has[] = {"!!!", "VIOLATED", "not judged", "error"};
	while (n && (*l == ' ' || *l == '\t'))
		l++, n--;
	for (size_t i = 0; i < sizeof starts / sizeof *starts; i++)
		if (n >= strlen(starts[i]) && !strncmp(l, starts[i], strlen(starts[i])))
			return true;
	for (size_t i = 0; i < sizeof has / sizeof *has; i++)
		if (memmem(l, n, has[i], strlen(has[i])))
			return true;
	return false;
}

void fb_test_fail_at(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	char *msg = malloc((size_t)n + 1);
	if (!msg) {
		print_error("ERROR: (out of memory formatting the message)\n");
		_fail(file, line);
		abort(); /* _fail does not return */
	}
	va_start(ap, fmt);
	vsnprintf(msg, (size_t)n + 1, fmt, ap);
	va_end(ap);
	if (n < 900) {
		print_error("ERROR: %s\n", msg);
	} else {
		size_t first = strcspn(msg, "\n");
		fprintf(stderr, "ERROR: %.*s\n", (int)first, msg);
		fprintf(stderr, "the run's verdict, picked out of the output quoted below:\n");
		for (const char *l = msg + first; *l;) {
			l += *l == '\n';
			size_t len = strcspn(l, "\n");
			if (verdict_line(l, len))
				fprintf(stderr, "  | %.*s\n", (int)len, l);
			l += len;
		}
		fprintf(stderr, "the whole message (%d characters):\n%s\n", n, msg);
		fflush(stderr);
	}
	free(msg);
	_fail(file, line);
	abort(); /* _fail jumps back into cmocka; it does not return */
}

const char *fb_test_bin(void)
{
	/* absolute: the binary runs in the suite's own directory (run_dir) */
	static char path[PATH_MAX];
	const char *b = getenv("FB_BIN");
	if (!path[0] && !realpath(b ? b : "./fencebench", path))
		snprintf(path, sizeof path, "%s", b ? b : "./fencebench");
	return path;
}

static char *cwd_dir;

static void remove_run_dir(void)
{
	char results[4200];
	snprintf(results, sizeof results, "%s/results", cwd_dir);
	fb_test_rmtree(results);
	fb_test_rmtree(cwd_dir);
}

/* Where every binary a test starts runs: a directory of the suite's own,
 * removed at exit with what the runs left there. A run the test gives no
 * -o writes its results under it, never into the user's results/. */
static const char *run_dir(void)
{
	if (!cwd_dir) {
		cwd_dir = fb_test_tmpdir();
		atexit(remove_run_dir);
	}
	return cwd_dir;
}

char *fb_test_slurp(int fd)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (len + 1 >= cap)
			buf = realloc(buf, cap *= 2);
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	buf[len] = 0;
	close(fd);
	return buf;
}

pid_t fb_test_fork(void)
{
	/* blocked across the fork: a signal sent to the child before its
	 * dispositions are reset stays pending instead of being ignored */
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGQUIT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, &old);
	const char *cwd = run_dir();
	fb_test_bin(); /* resolved against the suite's own cwd, before the child's chdir */
	pid_t pid = fork();
	if (pid == 0) {
		if (chdir(cwd) < 0)
			_exit(126);
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		sigdelset(&old, SIGINT);
		sigdelset(&old, SIGQUIT);
		sigdelset(&old, SIGTERM);
		sigdelset(&old, SIGHUP);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return pid;
}

char *fb_test_tmpdir(void)
{
	char *d = strdup("/tmp/fbtest-XXXXXX");
	if (!mkdtemp(d)) {
		perror("mkdtemp");
		abort();
	}
	return d;
}

void fb_test_listdir(const char *dir, char *buf, size_t len)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);
	buf[0] = 0;
	for (int i = 0; i < n; i++) {
		if (strcmp(names[i]->d_name, ".") && strcmp(names[i]->d_name, ".."))
			snprintf(buf + strlen(buf), len - strlen(buf), "%s\n", names[i]->d_name);
		free(names[i]);
	}
	if (n >= 0)
		free(names);
}

bool fb_test_find_suffix(const char *dir, const char *suffix, char *path, size_t len)
{
	DIR *d = opendir(dir);
	if (!d)
		return false;
	struct dirent *e;
	bool found = false;
	while (!found && (e = readdir(d))) {
		size_t n = strlen(e->d_name), k = strlen(suffix);
		if (n > k && !strcmp(e->d_name + n - k, suffix)) {
			snprintf(path, len, "%s/%s", dir, e->d_name);
			found = true;
		}
	}
	closedir(d);
	return found;
}

void fb_test_rmtree(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	char path[4096];
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

json_object *fb_test_json(json_object *o, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *save, *t = strtok_r(buf, ".", &save); t && o; t = strtok_r(NULL, ".", &save))
		if (!json_object_object_get_ex(o, t, &o))
			return NULL;
	return o;
}

json_object *fb_test_load(const char *path)
{
	json_object *doc = json_object_from_file(path);
	check(doc, "no valid JSON document at %s", path);
	return doc;
}

int64_t fb_test_num(json_object *doc, const char *path)
{
	json_object *v = fb_test_json(doc, path);
	check(v, "the JSON lacks %s", path);
	return json_object_get_int64(v);
}

json_object *fb_test_run_store(fb_test_proc *p, const char *dir, const char *store,
                               const char *const *extra, int want)
{
	char json[4200];
	snprintf(json, sizeof json, "%s/out-%d.json", dir, (int)getpid());
	const char *args[48] = {"-q", "-o", dir, "--json", json, "--store", store};
	int n = 7;
	for (int i = 0; extra && extra[i] && n < 47; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	unlink(json);
	int code = fb_test_run(p, args);
	check(code == want, "exit %d, expected %d\nstdout:\n%s\nstderr:\n%s", code, want, p->out,
	      p->err);
	return access(json, F_OK) == 0 ? fb_test_load(json) : NULL;
}

void fb_test_start(fb_test_proc *p, const char *const *args)
{
	fb_test_start_within(p, args, 0);
}

void fb_test_start_within(fb_test_proc *p, const char *const *args, unsigned limit_s)
{
	memset(p, 0, sizeof *p);
	p->dir = fb_test_tmpdir();
	char out[300], err[300];
	snprintf(out, sizeof out, "%s/stdout", p->dir);
	snprintf(err, sizeof err, "%s/stderr", p->dir);
	const char *argv[64] = {fb_test_bin()};
	int n = 1;
	for (int i = 0; args[i] && n < 63; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pid_t pid = fb_test_fork();
	if (pid < 0) {
		perror("fork");
		abort();
	}
	if (pid == 0) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int in = open("/dev/null", O_RDONLY);
		if (o < 0 || e < 0 || in < 0)
			_exit(126);
		dup2(in, 0);
		dup2(o, 1);
		dup2(e, 2);
		if (limit_s) /* a hang ends in SIGALRM, which nothing in it blocks */
			alarm(limit_s);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	p->pid = pid;
}

int fb_test_finish(fb_test_proc *p)
{
	int status = 0;
	while (waitpid(p->pid, &status, 0) < 0)
		;
	p->code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	char path[300];
	snprintf(path, sizeof path, "%s/stdout", p->dir);
	p->out = fb_test_slurp(open(path, O_RDONLY));
	snprintf(path, sizeof path, "%s/stderr", p->dir);
	p->err = fb_test_slurp(open(path, O_RDONLY));
	return p->code;
}

int fb_test_run(fb_test_proc *p, const char *const *args)
{
	fb_test_start(p, args);
	return fb_test_finish(p);
}

void fb_test_release(fb_test_proc *p)
{
	free(p->out);
	free(p->err);
	if (p->dir) {
		fb_test_rmtree(p->dir);
		free(p->dir);
	}
	memset(p, 0, sizeof *p);
}

json_object *fb_test_run_doc_any(fb_test_proc *p, const char *const *extra)
{
	char *dir = fb_test_tmpdir(), json[300];
	snprintf(json, sizeof json, "%s/out.json", dir);
	const char *args[64] = {"-q", "-o", dir, "--json", json};
	int n = 5;
	for (int i = 0; extra[i] && n < 63; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	fb_test_run(p, args);
	json_object *doc = json_object_from_file(json);
	fb_test_rmtree(dir);
	free(dir);
	return doc;
}

json_object *fb_test_run_doc(fb_test_proc *p, const char *const *extra, int want)
{
	json_object *doc = fb_test_run_doc_any(p, extra);
	check(p->code == want, "exit %d, expected %d\nstdout:\n%s\nstderr:\n%s", p->code, want,
	      p->out, p->err);
	check(doc, "no JSON document from the run:\nstdout:\n%s\nstderr:\n%s", p->out, p->err);
	return doc;
}

void fb_test_skipped(unsigned n, const char *packages, const char *why)
{
	const char *file = getenv("FB_SKIPS");
	if (!file || !*file)
		return;
	FILE *f = fopen(file, "a");
	if (!f) {
		fprintf(stderr, "cannot append to FB_SKIPS '%s': %s\n", file, strerror(errno));
		return;
	}
	/* one record a line: no tab or newline inside a field */
	fprintf(f, "%u\t%s\t", n, packages && *packages ? packages : "-");
	for (const char *c = why; *c; c++)
		fputc(*c == '\t' || *c == '\n' ? ' ' : *c, f);
	fputc('\n', f);
	if (fclose(f))
		fprintf(stderr, "cannot append to FB_SKIPS '%s': %s\n", file, strerror(errno));
}

bool fb_test_adapter_setup(char *python, size_t plen, char *root, size_t rlen, unsigned n,
                           const char *what)
{
	FILE *py =
	        popen("python3 -c 'import sqlite3, sys; print(sys.executable)' 2>/dev/null", "r");
	if (!py || !fgets(python, (int)plen, py) || pclose(py) != 0 || !*python) {
		printf("SKIPPED: %s, %u tests: python3 with sqlite3 is not installed (apt-get "
		       "install -y python3)\n",
		       what, n);
		fb_test_skipped(n, "python3", "the reference adapters are Python");
		return false;
	}
	python[strcspn(python, "\n")] = 0;
	const char *t = getenv("FB_TESTS");
	char tests[512];
	snprintf(tests, sizeof tests, "%s", t ? t : "tests");
	char abs[PATH_MAX];
	if (!realpath(tests, abs)) {
		fprintf(stderr, "cannot resolve %s\n", tests);
		exit(1);
	}
	snprintf(root, rlen, "%s", dirname(abs));
	return true;
}

const char *fb_test_exec_url(const char *python, const char *root, const char *path,
                             const char *args)
{
	static char buf[4][2048];
	static int next;
	char *u = buf[next++ % 4];
	snprintf(u, sizeof buf[0], "exec:%s %s/%s %s", python, root, path, args);
	return u;
}
