/*
 * The first corruption, told as the article tells it: A acquires, a fault
 * strikes A, A's lease expires, B acquires and writes, A's late write, and
 * what each store did with it, in words. The summary prints it; the JSON
 * carries the same as `first_corruption`.
 */
#ifndef FB_STORY_H
#define FB_STORY_H

#include <stdio.h>

#include "result.h"

struct json_object;

/* The story of the run's stale writes: the article's shape first (the
 * unfenced store took a stale write the fenced one refused), then the
 * run's very first corruption if it had another shape. Nothing if no
 * store took a stale write. */
void fb_story_print(FILE *out, const fb_results *res);

/* The same as JSON, or NULL: nothing to tell. */
struct json_object *fb_story_json(const fb_results *res);

#endif
