/* The one result type's memory (result.h). */
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
