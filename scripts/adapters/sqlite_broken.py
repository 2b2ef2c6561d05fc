#!/usr/bin/env python3
"""The fenced store of sqlite_store.py as people get it wrong, one mistake each, for
`fencebench --store "exec:scripts/adapters/sqlite_broken.py MISTAKE [DB]"`. fencebench must
catch every one (exit 1); the README says with which faults.

  no-predicate  the UPDATE has no fence predicate: the lease is all that protects it
  less-equal    `last_fence <= ?` for `<`: an equal token (a resent write) is accepted twice
  check-write   the fence is checked by a SELECT, then the UPDATE writes unconditionally:
                another client's read or write can land between the two statements
"""
import sys
import time

import sqlite_store as s

UNFENCED = "WHERE id = :key"


class NoFence(s.Store):
    def read(self, key, token):
        return {"ok": True, "balance": self.one("SELECT balance FROM account WHERE id = :key", key=key)[0]}

    def write(self, key, balance, token):
        return self.applied(self.one(s.APPLY.format(new=":balance", where=UNFENCED),
                                     key=key, balance=balance, token=token), key)

    def debit(self, key, amount, token):
        return self.applied(self.one(s.APPLY.format(new="balance - :amount", where=UNFENCED),
                                     key=key, amount=amount, token=token), key)


class LessOrEqual(s.Store):
    WHERE = "WHERE id = :key AND last_fence <= :token AND seen <= :token"

    def write(self, key, balance, token):
        return self.applied(self.one(s.APPLY.format(new=":balance", where=self.WHERE),
                                     key=key, balance=balance, token=token), key)

    def debit(self, key, amount, token):
        return self.applied(self.one(s.APPLY.format(new="balance - :amount", where=self.WHERE),
                                     key=key, amount=amount, token=token), key)


class CheckThenWrite(NoFence):
    # How long the gap between the check and the write stays open: a store under load
    # holds it open for as long as its process is off the CPU, which a test cannot
    # count on; held open a millisecond, the race shows in its first few rounds.
    WINDOW_S = 0.001

    def read(self, key, token):
        return s.Store.read(self, key, token)

    def passes(self, key, token):
        seen, last = self.one("SELECT seen, last_fence FROM account WHERE id = :key", key=key)
        ok = token >= seen and token > last
        if ok:
            time.sleep(self.WINDOW_S)
        return ok

    def write(self, key, balance, token):
        return NoFence.write(self, key, balance, token) if self.passes(key, token) else self.refused(key)

    def debit(self, key, amount, token):
        return NoFence.debit(self, key, amount, token) if self.passes(key, token) else self.refused(key)


MISTAKES = {"no-predicate": NoFence, "less-equal": LessOrEqual, "check-write": CheckThenWrite}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in MISTAKES:
        sys.exit("usage: sqlite_broken.py %s [DB]" % "|".join(MISTAKES))
    mistake = sys.argv[1]
    s.serve(MISTAKES[mistake](sys.argv[2] if len(sys.argv) > 2 else "results/sqlite_broken.db"), mistake)
