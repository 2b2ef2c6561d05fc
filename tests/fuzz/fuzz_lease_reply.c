/*
 * libFuzzer: the lease side of the adapter protocol (backends/exec_proto.c),
 * on the bytes a lease adapter could write as one line: the reply parser and
 * every lease validator after it. A validator that accepts leaves values in
 * its own ranges: a granted acquire's fence in 1..2^47-1 and what it
 * replaced below 2^47, a held lease's owner a worker's, a peek's holder
 * with a fence; a lease hello only for "side": "lease" and its protocol.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void expect(bool ok)
{
	if (!ok)
		__builtin_trap();
}

static void validate(const fb_reply *r)
{
	char err[256];
	fb_exec_hello h;
	if (fb_exec_lease_hello_of(r, &h, err, sizeof err)) {
		const fb_jfield *side = fb_reply_get(r, "side");
		expect(h.protocol == FB_EXEC_LEASE_PROTOCOL && side && side->type == FB_J_STRING &&
		       !strcmp(side->s, "lease") && strlen(h.name) <= FB_EXEC_NAME_MAX);
		/* a lease adapter is never taken for a store adapter */
		fb_exec_hello s;
		expect(!fb_exec_hello_of(r, &s, err, sizeof err));
	}
	fb_exec_acquired a;
	if (fb_exec_acquire_of(r, &a, err, sizeof err)) {
		if (a.ok)
			expect(a.fence >= 1 && a.fence <= FB_FENCE_MAX &&
			       a.replaced <= FB_FENCE_MAX && (a.said_replaced || !a.replaced));
		else
			expect(a.fence <= FB_FENCE_MAX && !a.said_replaced && !a.ttl_ms);
	} else {
		expect(strlen(err) < sizeof err);
	}
	bool ok;
	if (fb_exec_lease_ok_of(r, &ok, err, sizeof err))
		expect(fb_reply_get(r, "ok")->type == FB_J_BOOL);
	bool held;
	uint16_t owner;
	uint64_t fence, left;
	if (fb_exec_peek_of(r, &held, &owner, &fence, &left, err, sizeof err))
		expect(held ? fence >= 1 && fence <= FB_FENCE_MAX : !owner && !fence && !left);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > FB_EXEC_LINE_MAX)
		return 0;
	char *line = malloc(size + 1), *scratch = malloc(size + 1);
	if (line && scratch) {
		memcpy(line, data, size);
		fb_reply r;
		char err[256];
		if (fb_reply_parse(&r, line, size, scratch, size + 1, err, sizeof err))
			validate(&r);
		else
			expect(strlen(err) < sizeof err);
	}
	free(line);
	free(scratch);
	return 0;
}
