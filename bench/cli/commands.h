/*
 * Subcommands: `fencebench NAME ARGS...`. Each is a main of its own that
 * returns the process's exit code (0, 1 a violation found, 2 usage, 3
 * runtime error). A new one adds its line to FB_COMMANDS.
 */
#ifndef FB_COMMANDS_H
#define FB_COMMANDS_H

#include "adapter_test.h"
#include "check.h"
#include "compare.h"
#include "floor.h"
#include "plot.h"
#include "scenario.h"

typedef struct fb_command {
	const char *name;
	int (*main)(int argc, char **argv); /* argv[0] is the subcommand's name */
	const char *summary;
} fb_command;

#define FB_COMMANDS                                                                                \
	{"scenario", fb_scenario_main, "a scripted timeline on a manual clock"},                   \
	        {"floor", fb_floor_main, "the raw primitives' throughput: the machine's limit"},   \
	        {"plot", fb_plot_main, "SVG charts of a run or sweep document (gnuplot)"},         \
	        {"compare", fb_compare_main,                                                       \
	         "two runs or two sweeps side by side with B/A ratios"},                           \
	        {"check", fb_check_main,                                                           \
	         "re-verify the history a real store recorded (after shared runs)"},               \
	        {"adapter-test", fb_adapter_test_main,                                             \
	         "the conformance test of a store adapter (exec:COMMAND)"},

#endif
