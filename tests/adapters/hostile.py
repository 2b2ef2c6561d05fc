#!/usr/bin/env python3
"""A hostile adapter for the tests: the correct SQLite store of scripts/adapters/sqlite_store.py,
which breaks the protocol one way (MODE) at its Nth write or debit, or in its hello.

usage: hostile.py MODE N DB
"""
import json, os, signal, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts", "adapters"))
import sqlite_store  # noqa: E402

OPS = ["read", "write", "debit", "reset", "final", "meta", "history"]


def out(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def main():
    mode, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    store = sqlite_store.Store(path)
    writes, versions = 0, {}
    for line in sys.stdin:
        req = json.loads(line)
        op = req.pop("op")
        if op == "hello":
            hello = {"protocol": 1, "name": "hostile", "ops": OPS}
            if mode == "hello-protocol":
                hello["protocol"] = 2
            if mode == "no-debit":
                hello["ops"] = [o for o in OPS if o != "debit"]
            if mode == "no-meta":
                hello["ops"] = [o for o in OPS if o not in ("meta", "history")]
            out("hello, fencebench" if mode == "hello-garbage" else json.dumps(hello))
            continue
        reply = getattr(store, op)(**req) if op != "history" else None
        if op not in ("write", "debit") or not reply["ok"]:
            out(json.dumps(reply))
            continue
        writes += 1
        key, before = req["key"], versions.get(req["key"])
        versions[key] = reply["version"]
        if writes < n or (mode == "backwards" and (before is None or before < 2)) or \
                (mode == "repeat" and before is None):
            out(json.dumps(reply))
            continue
        if mode == "not-json":
            out("accepted write %d" % reply["version"])
        elif mode == "missing":
            del reply["version"]
            out(json.dumps(reply))
        elif mode == "type":
            reply["version"] = str(reply["version"])
            out(json.dumps(reply))
        elif mode == "backwards":  # below the version a reply gave before
            reply["version"] = before - 1
            out(json.dumps(reply))
        elif mode == "repeat":  # a second commit at the version a reply gave before
            reply["version"] = before
            out(json.dumps(reply))
        elif mode == "long":
            reply["pad"] = "x" * 70000
            out(json.dumps(reply))
        elif mode == "garbage":  # a debug print on stdout, flushed with the reply
            out(json.dumps(reply) + "\ndebug: wrote key %d" % key)
        elif mode == "error":
            out(json.dumps({"error": "disk full"}))
        elif mode == "long-error":  # a server's crash, quoted by its adapter: 330 bytes
            out(json.dumps({"error": "fatal error: concurrent map read and map write; " +
                            "goroutine 7 [running]: main.(*store).put(...) " * 6 + "END"}))
        elif mode == "hang":  # no reply ever, but gone when its input closes
            sys.stdin.read()
            return
        elif mode == "exit":
            sys.exit(3)
        elif mode == "killed":
            os.kill(os.getpid(), signal.SIGKILL)
        else:
            out(json.dumps(reply))


def run(main):
    try:
        main()
    except (BrokenPipeError, ConnectionResetError):
        pass  # fencebench hung up on it: what the test wanted


if __name__ == "__main__":
    run(main)
