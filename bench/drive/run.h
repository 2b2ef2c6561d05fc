/*
 * The stress run: worker threads contend for leases, and every cycle's read
 * and write go to one store per selected discipline with the same lease and
 * fence, under one fault schedule, so the difference between the columns is
 * the storage check and nothing else.
 */
#ifndef FB_RUN_H
#define FB_RUN_H

#include "options.h"
#include "result.h"

/*
 * The threaded driver (run.c): run the benchmark described by cfg until its
 * duration elapses or a stop signal arrives (SIGINT, SIGTERM, SIGHUP: the
 * caller must have blocked them in every thread, fb_stop_block).
 * Fills *res; returns FB_OK, or FB_ESYS / FB_ENOMEM / FB_EINVAL with a
 * message already printed (threads could not be created, a bad plan...).
 */
fb_err fb_run(const fb_config *cfg, fb_tick_fn tick, void *ctx, fb_results *res);

#endif
