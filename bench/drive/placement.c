#define _GNU_SOURCE
#include "placement.h"

#include <sched.h>
#include <unistd.h>

bool fb_placement_apply(const fb_placement *pl, uint32_t i, pthread_attr_t *attr)
{
	if (!pl || (!pl->pin && !pl->n_cpus))
		return false;
	cpu_set_t set;
	CPU_ZERO(&set);
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	uint32_t n = pl->n_cpus ? pl->n_cpus : (uint32_t)(online > 0 ? online : 1);
	for (uint32_t c = 0; c < n; c++)
		if (!pl->pin || c == i % n)
			CPU_SET(pl->n_cpus ? pl->cpus[c] : c, &set);
	pthread_attr_setaffinity_np(attr, sizeof set, &set);
	return true;
}
