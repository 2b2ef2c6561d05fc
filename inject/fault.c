#include "fault.h"

const char *const fb_fault_names[FB_FAULTS] = {
        "pause",        "skew",      "delay",     "crash",      "renew",      "retry",
        "server-pause", "node-jump", "partition", "wire-delay", "wire-reset", "nemesis"};
const char *const fb_wire_dir_names[FB_WIRE_DIRS] = {"both", "to-server", "to-client"};
const char *const fb_fault_at_names[FB_AT_COUNT] = {"any",      "after-read", "after-check",
                                                    "takeover", "mix",        "takeover-read"};
const char *const fb_check_lease_names[FB_CHECK_COUNT] = {"none", "is-held", "local"};
const char *const fb_lease_clock_names[FB_LEASE_CLOCK_COUNT] = {"monotonic", "realtime"};
