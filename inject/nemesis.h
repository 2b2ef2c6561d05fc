/*
 * A user's own fault command (issue 24, item 3: --nemesis exec:COMMAND):
 * fencebench cannot reach into a cluster it did not start, so the user's
 * command does, and the injector only says when. Each fault runs
 *
 *   sh -c 'COMMAND "$@"' sh start NAME      when it strikes
 *   sh -c 'COMMAND "$@"' sh heal NAME       its length later
 *
 * on a thread of its own (the injector never waits for a command), each
 * with a deadline. A command that exits non-zero, is killed, or outlives
 * its deadline (its whole process group is then killed) is a runtime
 * failure: the callback gets one line naming the command, the verb and
 * NAME, and why. One fault at a time: a strike while one is under way is
 * refused. A fault under way when the nemesis stops is healed first.
 */
#ifndef FB_NEMESIS_H
#define FB_NEMESIS_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"

typedef struct fb_nemesis fb_nemesis;

/* what: "start"/"heal" failed, why: the whole line. */
typedef void (*fb_nemesis_fail_fn)(void *ctx, const char *why);

/* cmd: the shell command (what follows "exec:"); deadline_ns: each call's. */
fb_err fb_nemesis_start(const char *cmd, uint64_t deadline_ns, fb_nemesis_fail_fn fail, void *ctx,
                        fb_nemesis **out);

/* Each heal's end, told (on the nemesis's thread, none of its locks held,
 * the ctx of fb_nemesis_start) once its command has returned, whether it
 * succeeded or not: what the fault did lasted until then at least. Set
 * before fb_nemesis_go. */
typedef void (*fb_nemesis_healed_fn)(void *ctx);
void fb_nemesis_on_heal(fb_nemesis *n, fb_nemesis_healed_fn healed);

/* Take faults from now on (until then every strike is refused): called
 * once the run's start is written, so a failure can date itself. */
void fb_nemesis_go(fb_nemesis *n);

/* Start fault NAME now, heal it ns later. False: one is under way (or the
 * nemesis failed, or is not going yet): nothing was started. */
bool fb_nemesis_strike(fb_nemesis *n, const char *name, uint64_t ns);

/* Heal what is under way (at once, not at its length), stop, free; the
 * faults its command started, and healed, in all. */
void fb_nemesis_stop(fb_nemesis *n, uint64_t *started, uint64_t *healed);

/* Run `sh -c 'cmd "$@"' sh verb name` to its end or deadline: 0, or -1
 * with the line in why. Exposed for the tests. */
int fb_nemesis_run(const char *cmd, const char *verb, const char *name, uint64_t deadline_ns,
                   char *why, size_t len);

#endif
