/*
 * Where an output goes, and how it is written, for every option that names
 * a file (--json, --plan-out, --hdr-file, --history, the subcommands'):
 *
 *   "-"                         standard output;
 *   a character device, a FIFO  written in place, as fio and hyperfine do
 *                               (--json /dev/stdout stays a device); a
 *                               FIFO's reader is waited for at most
 *                               FB_OUTFILE_FIFO_WAIT_MS (then ENXIO), and
 *                               a stop signal ends the wait (EINTR);
 *   a regular file, a new path  replaced atomically: written to a file of
 *                               no name in the same directory, flushed to
 *                               disk, then named and renamed over the
 *                               target, so a reader (or a SIGKILL) never
 *                               sees half a file and no temporary is left;
 *   a symlink                   followed to its target, which is judged
 *                               as above (the link stays a link).
 *
 * fb_outfile_check judges a path before a run starts, so a typo does not
 * cost a 60 s run; fb_outfile_write writes it at the end.
 */
#ifndef FB_OUTFILE_H
#define FB_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* How long the writer of a FIFO waits for its reader to open it. */
#define FB_OUTFILE_FIFO_WAIT_MS 10000

typedef enum fb_outfile_kind {
	FB_OUTFILE_STDOUT,
	FB_OUTFILE_IN_PLACE, /* a character device or a FIFO */
	FB_OUTFILE_REPLACE,  /* a regular file, or a new one */
} fb_outfile_kind;

typedef struct fb_outfile {
	fb_outfile_kind kind;
	char target[4096]; /* the path written: a symlink's target, resolved */
} fb_outfile;

/* Judge path as an output: 0 with *o filled, or -1 with the reason in why
 * ("is a directory", "its directory '/x' does not exist", "cannot be
 * written: Permission denied"). An empty path is refused too. */
int fb_outfile_check(const char *path, fb_outfile *o, char *why, size_t len);

/* An output being written: a stream to fill, then commit (or abandon). */
typedef struct fb_outfile_stream {
	FILE *f;
	fb_outfile_kind kind;
	bool named; /* the replacement has a temporary name (no O_TMPFILE here) */
	char tmp[4200], target[4096];
} fb_outfile_stream;

/* Start writing where o says. 0, or -1 with errno set. */
int fb_outfile_begin(const fb_outfile *o, fb_outfile_stream *s);

/* Finish: flush; for a replacement, to disk, then named over the target.
 * 0, or -1 with errno set and no partial file left. */
int fb_outfile_commit(fb_outfile_stream *s);

/* Give up: close, and leave the target as it was. */
void fb_outfile_abandon(fb_outfile_stream *s);

/* Write text and a newline where o says: begin, the text, commit. */
int fb_outfile_write(const fb_outfile *o, const char *text);

/* The two together: judge, then write. 0, or -1 with errno set (EINVAL when
 * the path itself cannot be an output). */
int fb_outfile_put(const char *path, const char *text);

/*
 * Open path for reading as fopen(path, "r") would, except that a FIFO does
 * not block the caller until its writer comes: it is read whole, waiting
 * for the writer and then its end in short slices, so a stop signal ends
 * the wait (stop.h: left pending, NULL with errno EINTR). What was read is
 * served from memory. NULL with errno set on failure.
 */
FILE *fb_infile_open(const char *path);

#endif
