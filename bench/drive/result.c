/* The one result type's memory, and what it takes from the injector (result.h). */
#include "result.h"

#include <stdlib.h>

void fb_results_free(fb_results *res)
{
	free(res->per_thread_ops);
	free(res->dead);
	free(res->keys);
	res->per_thread_ops = NULL;
	res->dead = NULL;
	res->keys = NULL;
}

void fb_results_injected(fb_results *res, const fb_injector_stats *st)
{
	for (int f = 0; f < FB_FAULTS; f++)
		res->fault[f].sent = st->sent[f];
	res->injector_missed = st->missed;
	res->service_steps = st->service_steps;
	res->fault[FB_FAULT_SKEW].taken += st->service_steps;
	res->fault[FB_FAULT_SERVER_PAUSE].taken = st->server_paused;
	res->fault[FB_FAULT_SERVER_PAUSE].over_ttl = st->server_over_ttl;
	res->fault[FB_FAULT_NODE_JUMP].taken = st->node_jumped;
	res->fault[FB_FAULT_NODE_JUMP].over_ttl = st->node_over_ttl;
	for (int i = 0; i < 3; i++) { /* issue 24: the wire's */
		res->fault[FB_FAULT_PARTITION + i].taken = st->wire_taken[i];
		res->fault[FB_FAULT_PARTITION + i].over_ttl = st->wire_over_ttl[i];
	}
	res->fault[FB_FAULT_NEMESIS].over_ttl = st->nemesis_over_ttl;
}
