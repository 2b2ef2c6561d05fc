#include "common.h"

const char *fb_strerror(fb_err e)
{
	switch (e) {
	case FB_OK:
		return "success";
	case FB_ENOMEM:
		return "out of memory";
	case FB_EINVAL:
		return "invalid argument";
	case FB_EFENCE:
		return "fence space exhausted";
	case FB_ESYS:
		return "system call failed";
	case FB_EENGINE:
		return "an engine stopped answering";
	}
	return "unknown error";
}

#include "bug.h"

const char *const fb_bug_names[FB_BUGS] = {
        "none",          "ge-store",      "two-step",           "ignore-expiry",
        "blind-release", "trust-client",  "unregistered-reads", "batch-fences",
        "refuse-holder", "apply-refused", "stale-read",         "long-lease",
        "renew-any",     "control-reads", "slow-core",          "control-conflict"};

const char *const fb_bug_what[FB_BUGS] = {
        "no planted bug",
        "the store accepts a token equal to the last accepted one (>= instead of >)",
        "the lease table mints the fence in a second step after taking the slot",
        "acquire takes a lease that is still live",
        "release frees the slot without checking owner and fence",
        "the fenced store trusts the client's is_held() and checks no fence",
        "the fenced store forgets to register the tokens of reads",
        "each thread takes fences from the global counter in batches of 64",
        "the fenced store refuses one token in 64, reads and writes, rightful or not",
        "the fenced store applies one write in 8 that it reports refused",
        "the fenced store checks a read against the last accepted fence, not the highest seen",
        "a lease table slot holds its key for twice the TTL it grants",
        "a lease renewal succeeds for a non-holder, and after expiry",
        "the write-fenced store registers the tokens of reads: the control stops being one",
        "the lease clock reads 2 ms behind on one CPU",
        ("the write-fenced store registers reads and refuses an older holder's write as a "
         "conflict of its own: the control stops being one, and no refusal is judged")};
