#define _GNU_SOURCE
#include "outfile.h"
#include "stop.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A symlink's target, resolved against the link's directory; chains are
 * followed (at most 32). */
static int follow(const char *path, char *out, size_t len)
{
	char cur[PATH_MAX];
	snprintf(cur, sizeof cur, "%s", path);
	for (int hops = 0; hops < 32; hops++) {
		struct stat st;
		if (lstat(cur, &st) || !S_ISLNK(st.st_mode)) {
			snprintf(out, len, "%s", cur);
			return 0;
		}
		char to[PATH_MAX];
		ssize_t n = readlink(cur, to, sizeof to - 1);
		if (n < 0)
			return -1;
		to[n] = 0;
		if (to[0] == '/') {
			snprintf(cur, sizeof cur, "%s", to);
		} else {
			char dir[PATH_MAX];
			snprintf(dir, sizeof dir, "%s", cur);
			char next[2 * PATH_MAX + 2];
			snprintf(next, sizeof next, "%s/%s", dirname(dir), to);
			if (strlen(next) >= sizeof cur) {
				errno = ENAMETOOLONG;
				return -1;
			}
			memcpy(cur, next, strlen(next) + 1);
		}
	}
	errno = ELOOP;
	return -1;
}

int fb_outfile_check(const char *path, fb_outfile *o, char *why, size_t len)
{
	if (!path || !*path) {
		snprintf(why, len, "is empty");
		errno = EINVAL;
		return -1;
	}
	if (!strcmp(path, "-")) {
		o->kind = FB_OUTFILE_STDOUT;
		snprintf(o->target, sizeof o->target, "-");
		return 0;
	}
	if (follow(path, o->target, sizeof o->target)) {
		snprintf(why, len, "cannot be followed: %s", strerror(errno));
		return -1;
	}
	struct stat st;
	if (stat(o->target, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			snprintf(why, len, "is a directory");
			errno = EISDIR;
			return -1;
		}
		if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
			o->kind = FB_OUTFILE_IN_PLACE;
			if (access(o->target, W_OK)) {
				snprintf(why, len, "cannot be written: %s", strerror(errno));
				return -1;
			}
			return 0;
		}
		if (!S_ISREG(st.st_mode)) {
			snprintf(why, len,
			         "is neither a regular file, a character device nor a FIFO");
			errno = EINVAL;
			return -1;
		}
	} else if (errno != ENOENT) {
		snprintf(why, len, "cannot be reached: %s", strerror(errno));
		return -1;
	}
	o->kind = FB_OUTFILE_REPLACE;
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", o->target);
	const char *d = dirname(dir);
	struct stat ds;
	if (stat(d, &ds) || !S_ISDIR(ds.st_mode)) {
		snprintf(why, len, "its directory '%s' does not exist", d);
		errno = ENOENT;
		return -1;
	}
	if (access(d, W_OK | X_OK)) {
		snprintf(why, len, "its directory '%s' cannot be written: %s", d, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * A device or a FIFO, opened for writing. A FIFO's open would block until
 * a reader comes, for ever and deaf to a stop signal: it is tried without
 * blocking every 20 ms for FB_OUTFILE_FIFO_WAIT_MS, then given up (ENXIO,
 * open's own word for "no reader"); a stop signal pending ends the wait
 * (EINTR), and one with a handler runs it.
 */
static int open_in_place(const char *target)
{
	struct stat st;
	if (stat(target, &st) || !S_ISFIFO(st.st_mode))
		return open(target, O_WRONLY | O_CLOEXEC);
	for (int waited = 0;; waited += 20) {
		int fd = open(target, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0) { /* a reader: from here the writes wait for it */
			if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0)
				return fd;
			int e = errno;
			close(fd);
			errno = e;
			return -1;
		}
		if (errno != ENXIO || waited >= FB_OUTFILE_FIFO_WAIT_MS)
			return -1;
		if (fb_stop_pending()) {
			errno = EINTR;
			return -1;
		}
		struct timespec slice = {0, 20000000};
		nanosleep(&slice, NULL);
	}
}

int fb_outfile_begin(const fb_outfile *o, fb_outfile_stream *s)
{
	memset(s, 0, sizeof *s);
	s->kind = o->kind;
	snprintf(s->target, sizeof s->target, "%s", o->target);
	if (o->kind == FB_OUTFILE_STDOUT) {
		s->f = stdout;
		return 0;
	}
	int fd;
	if (o->kind == FB_OUTFILE_IN_PLACE) {
		fd = open_in_place(o->target);
	} else {
		/* a file of no name beside the target (O_TMPFILE); where the
		 * filesystem has none, a named temporary */
		char dir[PATH_MAX];
		snprintf(dir, sizeof dir, "%s", o->target);
		fd = open(dirname(dir), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
		snprintf(s->tmp, sizeof s->tmp, "%s.tmp.%ld", o->target, (long)getpid());
		if (fd < 0) {
			s->named = true;
			fd = open(s->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		}
	}
	if (fd < 0)
		return -1;
	if (!(s->f = fdopen(fd, "w"))) {
		int e = errno;
		close(fd);
		if (s->named)
			unlink(s->tmp);
		errno = e;
		return -1;
	}
	return 0;
}

int fb_outfile_commit(fb_outfile_stream *s)
{
	if (s->kind == FB_OUTFILE_STDOUT)
		return fflush(stdout) ? -1 : 0;
	int bad = fflush(s->f) != 0 || ferror(s->f);
	if (s->kind == FB_OUTFILE_REPLACE && !bad)
		bad = fsync(fileno(s->f)) != 0;
	if (s->kind == FB_OUTFILE_REPLACE && !bad && !s->named) {
		/* named only now, for the rename: a kill before leaves nothing */
		char self[64];
		snprintf(self, sizeof self, "/proc/self/fd/%d", fileno(s->f));
		unlink(s->tmp);
		bad = linkat(AT_FDCWD, self, AT_FDCWD, s->tmp, AT_SYMLINK_FOLLOW) != 0;
		s->named = !bad;
	}
	int e = errno;
	if (fclose(s->f) && !bad) {
		bad = 1;
		e = errno;
	}
	s->f = NULL;
	if (s->kind == FB_OUTFILE_REPLACE && !bad && rename(s->tmp, s->target)) {
		bad = 1;
		e = errno;
	}
	if (bad && s->named)
		unlink(s->tmp);
	s->named = false;
	errno = e;
	return bad ? -1 : 0;
}

void fb_outfile_abandon(fb_outfile_stream *s)
{
	if (s->f && s->kind != FB_OUTFILE_STDOUT)
		fclose(s->f);
	if (s->named)
		unlink(s->tmp);
	s->f = NULL;
	s->named = false;
}

int fb_outfile_write(const fb_outfile *o, const char *text)
{
	fb_outfile_stream s;
	if (fb_outfile_begin(o, &s))
		return -1;
	if (fputs(text, s.f) == EOF || fputc('\n', s.f) == EOF) {
		int e = errno;
		fb_outfile_abandon(&s);
		errno = e;
		return -1;
	}
	return fb_outfile_commit(&s);
}

int fb_outfile_put(const char *path, const char *text)
{
	fb_outfile o;
	char why[256];
	if (fb_outfile_check(path, &o, why, sizeof why))
		return -1;
	return fb_outfile_write(&o, text);
}

/* A FIFO's whole content, copied into a file of memory: fd, or -1. */
static int drain_fifo(int fifo)
{
	int mem = memfd_create("fencebench-fifo", MFD_CLOEXEC);
	if (mem < 0)
		return -1;
	char buf[65536];
	for (;;) {
		/* a read before poll says so would see the no-writer-yet FIFO as
		 * ended: only poll tells "no writer yet" from "the writer left" */
		if (fb_stop_poll(fifo, POLLIN, -1) < 0)
			break;
		ssize_t n = read(fifo, buf, sizeof buf);
		if (n == 0) {
			if (lseek(mem, 0, SEEK_SET) == 0)
				return mem;
			break;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			break;
		for (ssize_t off = 0; n > 0 && off < n;) {
			ssize_t w = write(mem, buf + off, (size_t)(n - off));
			if (w < 0)
				goto fail;
			off += w;
		}
	}
fail:;
	int e = errno;
	close(mem);
	errno = e;
	return -1;
}

FILE *fb_infile_open(const char *path)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
		int mem = drain_fifo(fd);
		int e = errno;
		close(fd);
		errno = e;
		if (mem < 0)
			return NULL;
		fd = mem;
	} else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)) {
		int e = errno;
		close(fd);
		errno = e;
		return NULL;
	}
	FILE *f = fdopen(fd, "r");
	if (!f) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return f;
}
