/*
 * What a remote engine's connection remembers of the leases it holds: for
 * each (key, fence) the handle the service gave it (a lock node's path, a
 * lease id, a lock value), which release, is_held and renew need and the
 * fb_lease does not carry. A few slots: a worker holds one lease at a
 * time, and a slot left by a lease never released is reused.
 */
#ifndef FB_HELD_H
#define FB_HELD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define FB_HELD_SLOTS 8
#define FB_HELD_TEXT  512

typedef struct fb_held {
	bool used;
	uint32_t key;
	uint64_t fence;
	int64_t id;
	char text[FB_HELD_TEXT];
} fb_held;

typedef struct fb_held_table {
	fb_held slot[FB_HELD_SLOTS];
	unsigned next;
} fb_held_table;

/* The slot for a new lease of key (a free one, or key's old one, or the
 * oldest), filled with (key, fence, id, text). */
static inline fb_held *fb_held_put(fb_held_table *t, uint32_t key, uint64_t fence, int64_t id,
                                   const char *text)
{
	fb_held *h = NULL;
	for (int i = 0; i < FB_HELD_SLOTS && !h; i++)
		if (!t->slot[i].used || t->slot[i].key == key)
			h = &t->slot[i];
	if (!h)
		h = &t->slot[t->next++ % FB_HELD_SLOTS];
	*h = (fb_held){.used = true, .key = key, .fence = fence, .id = id};
	snprintf(h->text, sizeof h->text, "%s", text ? text : "");
	return h;
}

/* The slot of lease (key, fence), or NULL: not one this connection holds. */
static inline fb_held *fb_held_find(fb_held_table *t, uint32_t key, uint64_t fence)
{
	for (int i = 0; i < FB_HELD_SLOTS; i++)
		if (t->slot[i].used && t->slot[i].key == key && t->slot[i].fence == fence)
			return &t->slot[i];
	return NULL;
}

#endif
