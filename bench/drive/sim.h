/*
 * The deterministic driver (--deterministic): cfg->threads simulated
 * workers run the stress run's own cycle (cycle.c), one operation of one
 * worker per scheduler step, on a virtual clock, in one OS thread, through
 * the same engine ops (the in-process engine on the virtual clock), the
 * same checkers and witness and the same fault decisions. Only time and
 * interleaving are simulated. The same configuration and seed give the same
 * history byte for byte, so a seed that shows a violation replays it
 * exactly, and a sweep of seeds is a search for one.
 */
#ifndef FB_SIM_H
#define FB_SIM_H

#include <stdint.h>

#include "common.h"
#include "options.h"
#include "result.h"

/*
 * Run one seed of cfg (cfg->seed is ignored) for cfg->steps steps and the
 * wind-down after them (every worker finishes its cycle, every delayed
 * write lands), writing every history line to cfg->history_path when set
 * (the file is replaced), and calling tick(ctx) once a virtual second
 * (NULL: never). A stop signal (stop.h) blocked by the caller ends it
 * early: the workers wind down as after the last step, and *res is marked
 * interrupted (the history then depends on when it came). *res is filled as fb_run fills it, with
 * res->sim; free it with fb_results_free. Returns FB_OK, or FB_ENOMEM /
 * FB_EINVAL / FB_ESYS / FB_EFENCE with a one-line message already printed.
 */
fb_err fb_sim_run(const fb_config *cfg, uint64_t seed, fb_tick_fn tick, void *ctx, fb_results *res);

#endif
