/*
 * A TCP relay on 127.0.0.1 in front of a server, for engine tests that
 * tamper with the link: a connection lost mid-reply (test_redis), a reply
 * spoiled (test_zk). One thread, poll()ed; a pipe wakes it to stop. What a
 * client sends goes on as it came; what the server sends goes through the
 * test's hook, which speaks the server's protocol.
 */
#ifndef FB_TEST_RELAY_H
#define FB_TEST_RELAY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#define FB_RELAY_LINKS 8

typedef struct fb_relay fb_relay;

/*
 * Bytes read on link (a client's connection and the relay's own to the
 * server, 0 <= link < FB_RELAY_LINKS): from the client (client true; they
 * have gone on to the server already; n 0: the link is new), or from the
 * server, which the hook passes on as it will (fb_relay_pass). False:
 * close the link. Called on the relay's thread, where it must not fail the
 * test (cmocka's checks belong to the test's thread): it keeps what it saw
 * for the test to judge.
 */
typedef bool (*fb_relay_hook)(void *ctx, fb_relay *r, int link, bool client, const char *buf,
                              size_t n);

struct fb_relay {
	int port;           /* the relay's, on 127.0.0.1 */
	_Atomic int to;     /* the server's port: where new connections go */
	fb_relay_hook hook; /* NULL: everything passes */
	void *ctx;
	int lfd, wake[2];
	int cli[FB_RELAY_LINKS], up[FB_RELAY_LINKS]; /* -1: no link */
	pthread_t t;
};

/* Listens on a port of its own, relaying to 127.0.0.1:to. Fails the test
 * if it cannot. */
void fb_relay_start(fb_relay *r, int to, fb_relay_hook hook, void *ctx);

/* n bytes of the server's to link's client. False: the client is gone. */
bool fb_relay_pass(fb_relay *r, int link, const void *buf, size_t n);

/* Stops the thread (joined: everything it did happened before the return)
 * and closes every link. */
void fb_relay_stop(fb_relay *r);

#endif
