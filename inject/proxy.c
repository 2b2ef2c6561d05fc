#define _GNU_SOURCE
#include "proxy.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

#define MAX_CONNS  16384
#define READ_CHUNK 65536
#define RECENT_NS  UINT64_C(100000000)

/* Bytes read in one go, and when they may go out. */
typedef struct chunk {
	struct chunk *next;
	uint64_t due;
	size_t len, off;
	unsigned char data[];
} chunk;

/* One direction of a connection: read from fd[d], written to fd[1 - d]. */
typedef struct dirq {
	chunk *head, *tail;
	size_t bytes;
	uint64_t hold_until;  /* a partition: nothing goes out before */
	uint64_t delay_until; /* bytes read before this ... */
	uint64_t delay_ns;    /* ... go out this late */
	bool eof;             /* the source said it is done */
	bool shut;            /* ... and the destination was told so */
} dirq;

typedef struct conn {
	int fd[2]; /* the client's, the server's */
	bool connecting, reset, dead;
	uint64_t seq, last_io;
	dirq q[2]; /* q[0]: to the server, q[1]: to the client */
} conn;

struct fb_proxy {
	pthread_mutex_t mu; /* the relay holds it but while it polls */
	pthread_t tid;
	int lfd, wake[2];
	bool stop;
	struct sockaddr_storage up;
	socklen_t uplen;
	size_t cap;
	conn *c;
	size_t n, room;
	uint64_t next_seq, last_io;
	fb_proxy_stats st;
};

static uint64_t now_ns(void)
{
	return fb_clock_now(fb_clock_monotonic());
}

/* Close with an RST, not a FIN: the peer sees ECONNRESET. */
static void close_rst(int fd)
{
	if (fd < 0)
		return;
	struct linger lg = {1, 0};
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	close(fd);
}

static void free_queue(dirq *q)
{
	for (chunk *k = q->head, *next; k; k = next) {
		next = k->next;
		free(k);
	}
	q->head = q->tail = NULL;
	q->bytes = 0;
}

static void kill_conn(conn *c, bool rst)
{
	for (int s = 0; s < 2; s++) {
		if (rst)
			close_rst(c->fd[s]);
		else if (c->fd[s] >= 0)
			close(c->fd[s]);
		c->fd[s] = -1;
		free_queue(&c->q[s]);
	}
	c->dead = true;
}

/* When the head of q may go out. */
static uint64_t head_due(const dirq *q)
{
	uint64_t d = q->head->due;
	return d > q->hold_until ? d : q->hold_until;
}

static bool faulted(const dirq *q, uint64_t now)
{
	return q->hold_until > now || q->delay_until > now;
}

static void accept_all(fb_proxy *p, uint64_t now)
{
	for (;;) {
		int cfd = accept4(p->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0)
			return;
		p->st.conns++;
		if (p->n == p->room) {
			size_t room = p->room ? 2 * p->room : 64;
			conn *g = room <= MAX_CONNS ? realloc(p->c, room * sizeof *g) : NULL;
			if (!g) {
				p->st.refused++;
				close_rst(cfd);
				continue;
			}
			p->c = g;
			p->room = room;
		}
		int sfd = socket(p->up.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (sfd < 0) {
			p->st.refused++;
			close_rst(cfd);
			continue;
		}
		int one = 1;
		setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		bool connecting = false;
		if (connect(sfd, (struct sockaddr *)&p->up, p->uplen) != 0) {
			if (errno != EINPROGRESS) {
				p->st.refused++;
				close(sfd);
				close_rst(cfd);
				continue;
			}
			connecting = true;
		}
		conn *c = &p->c[p->n++];
		*c = (conn){.fd = {cfd, sfd},
		            .connecting = connecting,
		            .seq = p->next_seq++,
		            .last_io = now};
	}
}

/* Read what the source of direction d has, up to the buffer's room. */
static void pull(fb_proxy *p, conn *c, int d, uint64_t now)
{
	dirq *q = &c->q[d];
	size_t room = p->cap - q->bytes;
	unsigned char buf[READ_CHUNK];
	ssize_t r = recv(c->fd[d], buf, room < sizeof buf ? room : sizeof buf, 0);
	if (r == 0) {
		q->eof = true;
		return;
	}
	if (r < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			kill_conn(c, true);
		return;
	}
	chunk *k = malloc(sizeof *k + (size_t)r);
	if (!k) /* it is lost: the connection cannot go on */
	{
		kill_conn(c, true);
		return;
	}
	memcpy(k->data, buf, (size_t)r);
	k->len = (size_t)r;
	k->off = 0;
	k->next = NULL;
	k->due = q->delay_until > now ? now + q->delay_ns : now;
	if (q->tail && q->tail->due > k->due) /* in order: it waits behind a delayed one */
		k->due = q->tail->due;
	if (q->tail)
		q->tail->next = k;
	else
		q->head = k;
	q->tail = k;
	q->bytes += (size_t)r;
	c->last_io = p->last_io = now;
	if (q->bytes >= p->cap) {
		p->st.full++;
		if (!faulted(q, now))
			p->st.full_unfaulted++;
	}
}

/* Write out what is due in direction d. */
static void push(fb_proxy *p, conn *c, int d, uint64_t now)
{
	dirq *q = &c->q[d];
	while (q->head && head_due(q) <= now) {
		chunk *k = q->head;
		if (k->off == 0) {
			uint64_t late = now - head_due(q);
			if (late > FB_PROXY_LATE_NS) {
				p->st.late++;
				if (late > p->st.worst_late_ns)
					p->st.worst_late_ns = late;
			}
		}
		ssize_t w = send(c->fd[1 - d], k->data + k->off, k->len - k->off, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				kill_conn(c, true);
			return;
		}
		k->off += (size_t)w;
		q->bytes -= (size_t)w;
		p->st.bytes[d] += (uint64_t)w;
		if (k->off < k->len)
			return;
		q->head = k->next;
		if (!q->head)
			q->tail = NULL;
		free(k);
	}
	if (!q->head && q->eof && !q->shut) {
		shutdown(c->fd[1 - d], SHUT_WR);
		q->shut = true;
	}
}

/* Drop dead connections, keeping the order of the live ones. */
static void compact(fb_proxy *p)
{
	size_t j = 0;
	for (size_t i = 0; i < p->n; i++)
		if (!p->c[i].dead)
			p->c[j++] = p->c[i];
	p->n = j;
}

static void *relay_main(void *arg)
{
	fb_proxy *p = arg;
	struct pollfd *pf = NULL;
	size_t *owner = NULL, pfroom = 0;
	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		uint64_t now = now_ns();
		for (size_t i = 0; i < p->n; i++) {
			conn *c = &p->c[i];
			if (c->reset && !c->dead) {
				kill_conn(c, true);
				p->st.faults[FB_PROXY_RESET]++;
			}
			if (!c->dead && c->q[0].shut && c->q[1].shut)
				kill_conn(c, false);
		}
		compact(p);
		if (pfroom < 2 + 2 * p->n) {
			pfroom = 2 * (2 + 2 * p->n);
			struct pollfd *g = realloc(pf, pfroom * sizeof *pf);
			size_t *o = realloc(owner, pfroom * sizeof *o);
			if (g)
				pf = g;
			if (o)
				owner = o;
			if (!g || !o)
				break;
		}
		size_t np = 0;
		pf[np++] = (struct pollfd){.fd = p->wake[0], .events = POLLIN};
		pf[np++] = (struct pollfd){.fd = p->lfd, .events = POLLIN};
		uint64_t wake_at = now + UINT64_C(1000000000);
		for (size_t i = 0; i < p->n; i++) {
			conn *c = &p->c[i];
			if (c->connecting) {
				owner[np] = i;
				pf[np++] = (struct pollfd){.fd = c->fd[1], .events = POLLOUT};
				continue;
			}
			for (int s = 0; s < 2; s++) {
				/* fd[s] is the source of q[s] and the destination of q[1 - s] */
				dirq *in = &c->q[s], *out = &c->q[1 - s];
				short ev = 0;
				if (!in->eof && in->bytes < p->cap)
					ev |= POLLIN;
				if (out->head) {
					uint64_t due = head_due(out);
					if (due <= now)
						ev |= POLLOUT;
					else if (due < wake_at)
						wake_at = due;
				}
				owner[np] = i;
				pf[np++] = (struct pollfd){.fd = c->fd[s], .events = ev};
			}
		}
		pthread_mutex_unlock(&p->mu);
		uint64_t wait = wake_at - now;
		struct timespec ts = {(time_t)(wait / 1000000000u), (long)(wait % 1000000000u)};
		int r = ppoll(pf, np, &ts, NULL);
		pthread_mutex_lock(&p->mu);
		if (r < 0 && errno != EINTR)
			break;
		now = now_ns();
		if (pf[0].revents) {
			char b[64];
			while (read(p->wake[0], b, sizeof b) > 0) {
			}
		}
		for (size_t k = 2; k < np; k++) {
			conn *c = &p->c[owner[k]];
			short re = pf[k].revents;
			if (c->dead)
				continue;
			if (c->connecting) {
				if (!re)
					continue;
				int e = 0;
				socklen_t el = sizeof e;
				getsockopt(c->fd[1], SOL_SOCKET, SO_ERROR, &e, &el);
				if (e) {
					p->st.refused++;
					kill_conn(c, true);
				} else {
					c->connecting = false;
				}
				continue;
			}
			int s = c->fd[0] == pf[k].fd ? 0 : 1;
			if (re & (POLLIN | POLLHUP | POLLERR))
				pull(p, c, s, now);
			if (!c->dead)
				push(p, c, 1 - s, now);
		}
		/* what fell due during the poll, and what the sources' eof lets close */
		for (size_t i = 0; i < p->n; i++)
			for (int d = 0; d < 2 && !p->c[i].dead && !p->c[i].connecting; d++)
				if (p->c[i].q[d].head || p->c[i].q[d].eof)
					push(p, &p->c[i], d, now);
		if (pf[1].revents)
			accept_all(p, now);
	}
	for (size_t i = 0; i < p->n; i++)
		if (!p->c[i].dead)
			kill_conn(&p->c[i], false);
	p->n = 0;
	pthread_mutex_unlock(&p->mu);
	free(pf);
	free(owner);
	return NULL;
}

fb_err fb_proxy_start(const char *host, int upstream_port, size_t cap, fb_proxy **out, int *port,
                      char *err, size_t errlen)
{
	fb_proxy *p = calloc(1, sizeof *p);
	if (!p) {
		snprintf(err, errlen, "out of memory for the proxy");
		return FB_ENOMEM;
	}
	p->cap = cap ? cap : FB_PROXY_CAP_DEFAULT;
	p->lfd = p->wake[0] = p->wake[1] = -1;
	char ps[16];
	snprintf(ps, sizeof ps, "%d", upstream_port);
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	int g = getaddrinfo(host, ps, &hints, &ai);
	if (g) {
		snprintf(err, errlen, "proxy: getaddrinfo %s:%d: %s", host, upstream_port,
		         gai_strerror(g));
		free(p);
		return FB_ESYS;
	}
	memcpy(&p->up, ai->ai_addr, ai->ai_addrlen);
	p->uplen = ai->ai_addrlen;
	freeaddrinfo(ai);
	/* reach it once now: a server that is not there is named as itself,
	 * not as a proxy that resets every connection */
	int probe = socket(p->up.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = {2, 0};
	if (probe >= 0)
		setsockopt(probe, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	if (probe < 0 || connect(probe, (struct sockaddr *)&p->up, p->uplen) != 0) {
		snprintf(err, errlen, "proxy: cannot reach %s:%d: connect failed, errno=%d (%s)",
		         host, upstream_port, errno, strerror(errno));
		if (probe >= 0)
			close(probe);
		free(p);
		return FB_ESYS;
	}
	close(probe);
	const char *call = "socket";
	p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof a;
	if (p->lfd < 0)
		goto fail;
	call = "bind";
	if (bind(p->lfd, (struct sockaddr *)&a, sizeof a) != 0)
		goto fail;
	call = "listen";
	if (listen(p->lfd, 512) != 0)
		goto fail;
	call = "getsockname";
	if (getsockname(p->lfd, (struct sockaddr *)&a, &al) != 0)
		goto fail;
	call = "pipe2";
	if (pipe2(p->wake, O_NONBLOCK | O_CLOEXEC) != 0)
		goto fail;
	pthread_mutex_init(&p->mu, NULL);
	call = "pthread_create";
	int e = pthread_create(&p->tid, NULL, relay_main, p);
	if (e) {
		pthread_mutex_destroy(&p->mu);
		errno = e;
		goto fail;
	}
	*port = ntohs(a.sin_port);
	*out = p;
	return FB_OK;
fail:
	snprintf(err, errlen, "proxy: %s failed, errno=%d (%s)", call, errno, strerror(errno));
	if (p->lfd >= 0)
		close(p->lfd);
	if (p->wake[0] >= 0) {
		close(p->wake[0]);
		close(p->wake[1]);
	}
	free(p);
	return FB_ESYS;
}

static void wake(fb_proxy *p)
{
	char b = 1;
	if (write(p->wake[1], &b, 1) < 0) { /* full: the relay is awake already */
	}
}

static conn *choose(fb_proxy *p, uint64_t pick, bool exact, uint64_t seq)
{
	if (exact) {
		for (size_t i = 0; i < p->n; i++)
			if (!p->c[i].dead && p->c[i].seq == seq)
				return &p->c[i];
		return NULL;
	}
	size_t live = 0, recent = 0;
	uint64_t since = p->last_io > RECENT_NS ? p->last_io - RECENT_NS : 0;
	for (size_t i = 0; i < p->n; i++)
		if (!p->c[i].dead && !p->c[i].reset) {
			live++;
			recent += p->c[i].last_io >= since;
		}
	if (!live)
		return NULL;
	bool only_recent = recent > 0;
	uint64_t k = pick % (only_recent ? recent : live);
	for (size_t i = 0; i < p->n; i++) {
		conn *c = &p->c[i];
		if (c->dead || c->reset || (only_recent && c->last_io < since))
			continue;
		if (k-- == 0)
			return c;
	}
	return NULL;
}

int64_t fb_proxy_strike(fb_proxy *p, fb_proxy_fault f, unsigned dirs, uint64_t ns, uint64_t pick,
                        bool exact, uint64_t seq)
{
	pthread_mutex_lock(&p->mu);
	conn *c = choose(p, pick, exact, seq);
	int64_t hit = c ? (int64_t)c->seq : -1;
	if (c) {
		uint64_t until = now_ns() + ns;
		for (int d = 0; d < 2; d++) {
			if (!(dirs & (1u << d)))
				continue;
			dirq *q = &c->q[d];
			if (f == FB_PROXY_PARTITION && until > q->hold_until)
				q->hold_until = until;
			if (f == FB_PROXY_DELAY) {
				q->delay_until = until;
				q->delay_ns = ns;
			}
		}
		if (f == FB_PROXY_RESET)
			c->reset = true; /* the relay closes it: it may be polling its fds */
		else
			p->st.faults[f]++;
	}
	pthread_mutex_unlock(&p->mu);
	if (c)
		wake(p);
	return hit;
}

void fb_proxy_stats_get(fb_proxy *p, fb_proxy_stats *st)
{
	pthread_mutex_lock(&p->mu);
	*st = p->st;
	pthread_mutex_unlock(&p->mu);
}

void fb_proxy_stop(fb_proxy *p, fb_proxy_stats *st)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_mutex_unlock(&p->mu);
	wake(p);
	pthread_join(p->tid, NULL);
	if (st)
		*st = p->st;
	pthread_mutex_destroy(&p->mu);
	close(p->lfd);
	close(p->wake[0]);
	close(p->wake[1]);
	free(p->c);
	free(p);
}
