/*
 * The network's delay line: writes already issued, held in flight and
 * delivered late (the 90 s packet), while their writer goes on. A thread
 * delivers each write when it is due; on stop, everything still in flight
 * is delivered at once, in due order, so no accepted write is missing from
 * the history.
 */
#ifndef FB_DELAY_H
#define FB_DELAY_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"

typedef struct fb_delayed_write {
	uint64_t due; /* on the delay line's clock */
	uint64_t fence;
	uint64_t issued; /* when the writer sent it */
	int64_t value;   /* the balance to write, or the amount to debit */
	int64_t read;    /* the balance it was computed from */
	uint32_t key;
	uint16_t worker;
	uint8_t mode; /* fb_discipline */
	bool debit;
	bool first;    /* the first of its cycle's writes: it speaks for the fault */
	bool recorded; /* its lease had recorded its fence at this store (fb_env_sending) */
} fb_delayed_write;

typedef void (*fb_deliver_fn)(void *ctx, const fb_delayed_write *w);

typedef struct fb_delay_line fb_delay_line;

/* Start the delivery thread; deliver() runs on it, one write at a time. */
fb_err fb_delay_start(fb_deliver_fn deliver, void *ctx, fb_delay_line **out);

/* Put a write in flight (any thread). FB_ENOMEM if the line cannot grow:
 * the caller then delivers it itself, on time. */
fb_err fb_delay_send(fb_delay_line *d, const fb_delayed_write *w);

/* Deliver what is left, stop the thread, free everything. */
void fb_delay_stop(fb_delay_line *d);

#endif
