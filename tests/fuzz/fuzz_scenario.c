/*
 * libFuzzer: fb_scenario_parse on the raw bytes (no NUL: the parser takes
 * a length, and libFuzzer's buffer ends exactly there). The contract of
 * scenario.h: either FB_OK and a scenario, or an error, no scenario and,
 * for FB_EINVAL, one message "NAME:LINE:COL: ...". A scenario that parses
 * is run too, on its manual clock, with the timeline and the failed
 * expectations going to /dev/null: its exit code is 0, 1 or 2 (3 only
 * when memory runs out). Every step is also formatted into a buffer far
 * too small, to prove the truncation.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "scenario.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *null;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	null = fopen("/dev/null", "w");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static fb_scenario poison;
	fb_scenario *sc = &poison; /* the parser must set it to NULL on failure */
	char err[256];
	fb_err e = fb_scenario_parse((const char *)data, size, "fuzz", &sc, err, sizeof err);
	if (e != FB_OK) {
		if (sc != NULL)
			__builtin_trap();
		if (e == FB_EINVAL && strncmp(err, "fuzz:", 5) != 0)
			__builtin_trap();
		return 0;
	}
	if (!sc || sc->nsteps > FB_SCENARIO_STEPS_MAX || sc->nclients > FB_SCENARIO_CLIENTS_MAX ||
	    sc->nkeys > FB_SCENARIO_KEYS_MAX)
		__builtin_trap();
	for (size_t i = 0; i < sc->nsteps; i++) {
		char small[8];
		fb_scenario_step_format(sc, &sc->steps[i], small, sizeof small);
		if (strlen(small) >= sizeof small)
			__builtin_trap();
	}
	if (null) {
		int code = fb_scenario_run(sc, null, null);
		if (code < 0 || code > 3)
			__builtin_trap();
	}
	fb_scenario_free(sc);
	return 0;
}
