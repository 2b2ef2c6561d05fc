#include "delay.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "clock.h"

/*
 * A binary min-heap on `due` under a mutex: writes are put in flight at
 * the delay fault's rate (tens a second), far from the hot path, so a lock
 * is the simple and right tool here.
 */
struct fb_delay_line {
	pthread_mutex_t mu;
	fb_delayed_write *heap;
	size_t n, cap;
	bool stop;
	pthread_t tid;
	fb_deliver_fn deliver;
	void *ctx;
};

static void swap(fb_delayed_write *a, fb_delayed_write *b)
{
	fb_delayed_write t = *a;
	*a = *b;
	*b = t;
}

static void push(fb_delay_line *d, const fb_delayed_write *w)
{
	size_t i = d->n++;
	d->heap[i] = *w;
	while (i && d->heap[(i - 1) / 2].due > d->heap[i].due) {
		swap(&d->heap[(i - 1) / 2], &d->heap[i]);
		i = (i - 1) / 2;
	}
}

static fb_delayed_write pop(fb_delay_line *d)
{
	fb_delayed_write top = d->heap[0];
	d->heap[0] = d->heap[--d->n];
	for (size_t i = 0;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < d->n && d->heap[l].due < d->heap[m].due)
			m = l;
		if (r < d->n && d->heap[r].due < d->heap[m].due)
			m = r;
		if (m == i)
			break;
		swap(&d->heap[i], &d->heap[m]);
		i = m;
	}
	return top;
}

static void *deliverer(void *arg)
{
	fb_delay_line *d = arg;
	const fb_clock *clk = fb_clock_fast();
	for (;;) {
		pthread_mutex_lock(&d->mu);
		bool stop = d->stop;
		if (d->n && (stop || d->heap[0].due <= fb_clock_now(clk))) {
			fb_delayed_write w = pop(d);
			pthread_mutex_unlock(&d->mu);
			d->deliver(d->ctx, &w);
			continue;
		}
		uint64_t wait = d->n ? d->heap[0].due - fb_clock_now(clk) : 2000000;
		pthread_mutex_unlock(&d->mu);
		if (stop)
			return NULL;
		/* poll at 200 us at most: delivery within that of its due time */
		fb_sleep_ns(wait < 200000 ? wait : 200000);
	}
}

fb_err fb_delay_start(fb_deliver_fn deliver, void *ctx, fb_delay_line **out)
{
	fb_delay_line *d = calloc(1, sizeof *d);
	if (!d)
		return FB_ENOMEM;
	d->cap = 256;
	d->heap = malloc(d->cap * sizeof *d->heap);
	if (!d->heap) {
		free(d);
		return FB_ENOMEM;
	}
	d->deliver = deliver;
	d->ctx = ctx;
	pthread_mutex_init(&d->mu, NULL);
	int e = pthread_create(&d->tid, NULL, deliverer, d);
	if (e) {
		pthread_mutex_destroy(&d->mu);
		free(d->heap);
		free(d);
		errno = e;
		return FB_ESYS;
	}
	*out = d;
	return FB_OK;
}

fb_err fb_delay_send(fb_delay_line *d, const fb_delayed_write *w)
{
	pthread_mutex_lock(&d->mu);
	if (d->n == d->cap) {
		fb_delayed_write *g = realloc(d->heap, 2 * d->cap * sizeof *g);
		if (!g) {
			pthread_mutex_unlock(&d->mu);
			return FB_ENOMEM;
		}
		d->heap = g;
		d->cap *= 2;
	}
	push(d, w);
	pthread_mutex_unlock(&d->mu);
	return FB_OK;
}

void fb_delay_stop(fb_delay_line *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->mu);
	d->stop = true;
	pthread_mutex_unlock(&d->mu);
	pthread_join(d->tid, NULL);
	pthread_mutex_destroy(&d->mu);
	free(d->heap);
	free(d);
}
