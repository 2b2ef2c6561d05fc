#!/usr/bin/env python3
"""The lease service of sqlite_lease.py as people get it wrong, one mistake each, for
`fencebench --lease "exec:scripts/adapters/sqlite_lease_broken.py MISTAKE [DB]"`. fencebench
must catch every one by name (exit 1), and so must `fencebench adapter-test`.

  no-expiry   a takeover does not check the lease's expiry: it takes a live lease
              (two holders at once)
  same-fence  a takeover of an expired lease keeps the row's fence instead of minting one
              (a fence handed out twice)
  any-owner   release deletes the key's lease whoever holds it: a late holder's release
              frees its successor's live lease (two holders at once)
"""
import sys

import sqlite_lease as s
import sqlite_store


class NoExpiry(s.Leases):
    def acquire(self, key, owner, ttl_ms):
        def step(now):
            row = self.one("SELECT owner, fence FROM lease WHERE key = ?", key)
            if row and row[0] == owner:  # the caller's own: it checks that much
                return {"ok": False, "owner": row[0], "fence": row[1]}
            return self.mint(key, owner, ttl_ms, now)
        return self.locked(step)


class SameFence(s.Leases):
    def acquire(self, key, owner, ttl_ms):
        def step(now):
            live = self.holder(key, now)
            if live:
                return {"ok": False, "owner": live[0], "fence": live[1]}
            row = self.one("SELECT owner, fence FROM lease WHERE key = ?", key)
            if row and row[0] is not None:  # expired, never released: taken over as it is
                self.db.execute(s.TAKE, (key, owner, row[1], now + ttl_ms * 1000000))
                return {"ok": True, "fence": row[1], "ttl_ms": ttl_ms}
            return self.mint(key, owner, ttl_ms, now)
        return self.locked(step)


class AnyOwner(s.Leases):
    def release(self, key, owner, fence):
        return self.locked(lambda now: {"ok": self.db.execute(
            "UPDATE lease SET owner = NULL WHERE key = ?", (key,)).rowcount == 1})


MISTAKES = {"no-expiry": NoExpiry, "same-fence": SameFence, "any-owner": AnyOwner}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in MISTAKES:
        sys.exit("usage: sqlite_lease_broken.py %s [DB]" % "|".join(MISTAKES))
    mistake = sys.argv[1]
    try:
        sqlite_store.serve(MISTAKES[mistake](sys.argv[2] if len(sys.argv) > 2 else
                                  "results/sqlite_lease_broken.db"), mistake)
    except (BrokenPipeError, ConnectionResetError):
        pass
