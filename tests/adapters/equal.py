#!/usr/bin/env python3
"""A store that checks its token for EQUALITY, as etcd's contrib/lock demo storage does: the
first writer's token is kept, and a write is accepted only if it carries that same token. So
every newer holder is refused (a refusal of its rightful holder, not staleness), and the first
holder's resent write lands twice (an equal token is stale). Reads carry no token check.

usage: equal.py [DB]
"""
import os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts", "adapters"))
import sqlite_store as s  # noqa: E402

EQUAL = "WHERE id = :key AND (last_fence = 0 OR last_fence = :token)"


class Equal(s.Store):
    def read(self, key, token):
        return {"ok": True, "balance": self.one("SELECT balance FROM account WHERE id = :key",
                                                key=key)[0]}

    def refused(self, key):
        return {"ok": False}  # it says nothing of what it had seen

    def write(self, key, balance, token):
        return self.applied(self.one(s.APPLY.format(new=":balance", where=EQUAL),
                                     key=key, balance=balance, token=token), key)

    def debit(self, key, amount, token):
        return self.applied(self.one(s.APPLY.format(new="balance - :amount", where=EQUAL),
                                     key=key, amount=amount, token=token), key)


if __name__ == "__main__":
    try:
        s.serve(Equal(sys.argv[1] if len(sys.argv) > 1 else "results/equal.db"), "equal")
    except (BrokenPipeError, ConnectionResetError):
        pass
