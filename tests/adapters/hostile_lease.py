#!/usr/bin/env python3
"""A hostile lease adapter for the tests: the correct SQLite lease service of
scripts/adapters/sqlite_lease.py, which breaks the protocol one way (MODE) at its Nth granted
acquire, or in its hello.

usage: hostile_lease.py MODE N DB
"""
import json, os, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts", "adapters"))
import sqlite_lease  # noqa: E402
import hostile  # noqa: E402
from hostile import out  # noqa: E402


# What each MODE makes of a granted acquire's reply (and its request).
BREAK = {
    "not-json": lambda r, q: "granted fence %d" % r["fence"],
    "no-fence": lambda r, q: json.dumps({k: v for k, v in r.items() if k != "fence"}),
    "fence-type": lambda r, q: json.dumps(dict(r, fence=str(r["fence"]))),
    # below the fences this process was given before
    "backwards": lambda r, q: json.dumps(dict(r, fence=1)),
    "short-ttl": lambda r, q: json.dumps(dict(r, ttl_ms=q["ttl_ms"] // 2)),
    "long": lambda r, q: json.dumps(dict(r, pad="x" * 70000)),
    "error": lambda r, q: json.dumps({"error": "lock server unreachable"}),
}


def main():
    mode, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    leases = sqlite_lease.Leases(path)
    granted = 0
    for line in sys.stdin:
        req = json.loads(line)
        op = req.pop("op")
        if op == "hello":
            hello = leases.hello("hostile")
            if mode == "hello-store":  # a store adapter's hello
                del hello["side"]
            if mode == "hello-protocol":
                hello["protocol"] = 2
            if mode == "no-release":
                hello["ops"].remove("release")
            out(json.dumps(hello))
            continue
        reply = getattr(leases, op)(**req)
        if op != "acquire" or not reply["ok"]:
            out(json.dumps(reply))
            continue
        granted += 1
        if granted >= n and mode in BREAK:
            out(BREAK[mode](reply, req))
        elif granted >= n and mode == "exit":
            sys.exit(3)
        elif granted >= n and mode == "hang":  # no reply ever, but gone when its input closes
            sys.stdin.read()
            return
        else:  # "slow": answered too late for fencebench to date, once
            time.sleep(0.05 if mode == "slow" and granted == n else 0)
            out(json.dumps(reply))


if __name__ == "__main__":
    hostile.run(main)
