/* Where threads may run: --cpus (empty: every online CPU) and --pin (one
 * CPU each, round robin), for the workers and the floor alike. */
#ifndef FB_PLACEMENT_H
#define FB_PLACEMENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct fb_placement {
	const uint32_t *cpus;
	uint32_t n_cpus;
	bool pin;
} fb_placement;

/* Set thread i's CPUs on attr per *pl; false (attr untouched) when pl is
 * NULL or asks for nothing. */
bool fb_placement_apply(const fb_placement *pl, uint32_t i, pthread_attr_t *attr);

#endif
