#!/usr/bin/env python3
"""The correct SQLite store of scripts/adapters/sqlite_store.py, numbering its writes as real
stores do: with gaps. fencebench must judge it as it judges the dense one (exit 0, no negative
figure): commit order is the order of versions, whatever their spacing.

usage: gapped.py MODE [DB]
  x2     versions 2, 4, 6...
  x1000  versions 1000, 2000, 3000...
  ns     a nanosecond clock read by each client before its statement (kept increasing per
         key by the statement itself, as a commit timestamp is)
"""
import os, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts", "adapters"))
import sqlite_store as s  # noqa: E402

STEP = {"x2": "version + 2", "x1000": "version + 1000", "ns": "max(version + 1, :now)"}


class Gapped(s.Store):
    def __init__(self, path, mode):
        super().__init__(path)
        self.apply = s.APPLY.replace("version = version + 1", "version = " + STEP[mode])
        self.clock = mode == "ns"

    def args(self, **kw):
        if self.clock:
            kw["now"] = time.time_ns()
        return kw

    def write(self, key, balance, token):
        sql = self.apply.format(new=":balance", where=s.FENCE)
        return self.applied(self.one(sql, **self.args(key=key, balance=balance, token=token)), key)

    def debit(self, key, amount, token):
        sql = self.apply.format(new="balance - :amount", where=s.FENCE)
        return self.applied(self.one(sql, **self.args(key=key, amount=amount, token=token)), key)


if __name__ == "__main__":
    mode = sys.argv[1]
    try:
        s.serve(Gapped(sys.argv[2] if len(sys.argv) > 2 else "results/gapped.db", mode), "gapped")
    except (BrokenPipeError, ConnectionResetError):
        pass
