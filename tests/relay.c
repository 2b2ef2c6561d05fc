#define _GNU_SOURCE
#include "relay.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fbtest.h"

static void link_close(fb_relay *r, int i)
{
	close(r->cli[i]);
	close(r->up[i]);
	r->cli[i] = r->up[i] = -1;
}

/* All of buf to fd; a peer gone raises no SIGPIPE in the test process. */
static bool send_all(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
		if (w <= 0)
			return false;
		buf += w;
		n -= (size_t)w;
	}
	return true;
}

bool fb_relay_pass(fb_relay *r, int link, const void *buf, size_t n)
{
	return send_all(r->cli[link], buf, n);
}

static void relay_accept(fb_relay *r)
{
	int c = accept(r->lfd, NULL, NULL), u = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)atomic_load(&r->to))};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int i = 0;
	while (i < FB_RELAY_LINKS && r->cli[i] >= 0)
		i++;
	if (c < 0 || i == FB_RELAY_LINKS || connect(u, (struct sockaddr *)&a, sizeof a) != 0) {
		close(c);
		close(u);
		return;
	}
	r->cli[i] = c;
	r->up[i] = u;
	if (r->hook && !r->hook(r->ctx, r, i, true, NULL, 0))
		link_close(r, i);
}

static void *relay_main(void *p)
{
	fb_relay *r = p;
	for (;;) {
		struct pollfd f[2 + 2 * FB_RELAY_LINKS] = {{r->wake[0], POLLIN, 0},
		                                           {r->lfd, POLLIN, 0}};
		for (int i = 0; i < FB_RELAY_LINKS; i++) {
			f[2 + 2 * i] = (struct pollfd){r->cli[i], POLLIN, 0};
			f[3 + 2 * i] = (struct pollfd){r->up[i], POLLIN, 0};
		}
		if (poll(f, 2 + 2 * FB_RELAY_LINKS, -1) < 0 || f[0].revents)
			return NULL;
		if (f[1].revents)
			relay_accept(r);
		for (int i = 0; i < FB_RELAY_LINKS; i++) {
			char buf[4096];
			for (int server = 0; server < 2 && r->cli[i] >= 0; server++) {
				if (!f[2 + 2 * i + server].revents)
					continue;
				ssize_t n = read(server ? r->up[i] : r->cli[i], buf, sizeof buf);
				bool ok = n > 0;
				if (ok && !server)
					ok = send_all(r->up[i], buf, (size_t)n) &&
					     (!r->hook ||
					      r->hook(r->ctx, r, i, true, buf, (size_t)n));
				else if (ok)
					ok = r->hook ? r->hook(r->ctx, r, i, false, buf, (size_t)n)
					             : fb_relay_pass(r, i, buf, (size_t)n);
				if (!ok)
					link_close(r, i);
			}
		}
	}
}

void fb_relay_start(fb_relay *r, int to, fb_relay_hook hook, void *ctx)
{
	memset(r, 0, sizeof *r);
	atomic_init(&r->to, to);
	r->hook = hook;
	r->ctx = ctx;
	for (int i = 0; i < FB_RELAY_LINKS; i++)
		r->cli[i] = r->up[i] = -1;
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof a;
	r->lfd = socket(AF_INET, SOCK_STREAM, 0);
	check(r->lfd >= 0 && bind(r->lfd, (struct sockaddr *)&a, sizeof a) == 0 &&
	              listen(r->lfd, 8) == 0 &&
	              getsockname(r->lfd, (struct sockaddr *)&a, &len) == 0 && pipe(r->wake) == 0,
	      "the relay listens on 127.0.0.1");
	r->port = ntohs(a.sin_port);
	check_eq(pthread_create(&r->t, NULL, relay_main, r), 0, "the relay's thread");
}

void fb_relay_stop(fb_relay *r)
{
	check_eq(write(r->wake[1], "x", 1), 1, "wake the relay");
	pthread_join(r->t, NULL);
	for (int i = 0; i < FB_RELAY_LINKS; i++)
		if (r->cli[i] >= 0)
			link_close(r, i);
	close(r->lfd);
	close(r->wake[0]);
	close(r->wake[1]);
}
