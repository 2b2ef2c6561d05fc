#!/usr/bin/env python3
"""A lease service on SQLite for `fencebench --lease exec:scripts/adapters/sqlite_lease.py [DB]`.

fencebench starts one of these per worker; they share nothing but the database file (default
results/sqlite_lease.db), as the clients of a real lock service share its server. Every call is
ONE transaction that holds the database's write lock (BEGIN IMMEDIATE) from the read of the
clock to the commit: an acquire takes a key only if it is free or expired, and mints its fence
from one counter in the same step; release, renew and is_held check (owner, fence). Expiry is
on CLOCK_MONOTONIC (time.monotonic_ns), the clock every process of this machine shares.
The protocol: README.md, "Bring your own lock service". Copy this file and change the methods.
"""
import os, sqlite3, sys, time

import sqlite_store

SCHEMA = """
CREATE TABLE IF NOT EXISTS lease (key INTEGER PRIMARY KEY, owner INTEGER, fence INTEGER NOT NULL,
  expires INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS counter (id INTEGER PRIMARY KEY CHECK (id = 0), fence INTEGER NOT NULL);
INSERT OR IGNORE INTO counter VALUES (0, 0);"""
# owner NULL: released (the row keeps the last fence, which the next acquire replaces)
MINT = "UPDATE counter SET fence = fence + 1 WHERE id = 0 RETURNING fence"
TAKE = "INSERT OR REPLACE INTO lease (key, owner, fence, expires) VALUES (?, ?, ?, ?)"
MINE = "key = ? AND owner = ? AND fence = ?"


class Leases:
    def __init__(self, path):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        # no busy timeout: SQLite's own waits in steps of up to 100 ms; locked() waits finer
        self.db = sqlite3.connect(path, timeout=0, isolation_level=None)  # autocommit
        self.locked(lambda now: self.db.execute("PRAGMA journal_mode = WAL"), begin=False)
        self.locked(lambda now: self.db.executescript(SCHEMA), begin=False)

    def locked(self, step, begin=True):
        """step(now) in one transaction holding the write lock, its clock read inside it."""
        for tries in range(200000):
            try:
                if begin:
                    self.db.execute("BEGIN IMMEDIATE")
                try:
                    reply = step(time.monotonic_ns())
                except BaseException:
                    if begin:
                        self.db.execute("ROLLBACK")
                    raise
                if begin:
                    self.db.execute("COMMIT")
                return reply
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) and "busy" not in str(e):
                    raise
                time.sleep(0.0002)
        raise sqlite3.OperationalError("the database stayed locked")

    def one(self, sql, *args):
        rows = self.db.execute(sql, args).fetchall()
        return rows[0] if rows else None

    def holder(self, key, now):
        """The live lease of key (owner, fence), or None."""
        return self.one("SELECT owner, fence FROM lease WHERE key = ? AND owner IS NOT NULL "
                        "AND expires > ?", key, now)

    def last_fence(self, key):
        """The fence the key's row carries (a live lease's, an expired or released one's), or 0."""
        row = self.one("SELECT fence FROM lease WHERE key = ?", key)
        return row[0] if row else 0

    def mint(self, key, owner, ttl_ms, now):
        """A new fence from the one counter, and the key taken with it, in the caller's step."""
        replaced = self.last_fence(key)
        fence = self.one(MINT)[0]
        self.db.execute(TAKE, (key, owner, fence, now + ttl_ms * 1000000))
        return {"ok": True, "fence": fence, "replaced": replaced, "ttl_ms": ttl_ms}

    def acquire(self, key, owner, ttl_ms):
        def step(now):
            live = self.holder(key, now)
            if live:
                return {"ok": False, "owner": live[0], "fence": live[1]}
            return self.mint(key, owner, ttl_ms, now)
        return self.locked(step)

    def release(self, key, owner, fence):
        return self.locked(lambda now: {"ok": self.db.execute(
            "UPDATE lease SET owner = NULL WHERE " + MINE, (key, owner, fence)).rowcount == 1})

    def renew(self, key, owner, fence, ttl_ms):
        return self.locked(lambda now: {"ok": self.db.execute(
            "UPDATE lease SET expires = ? WHERE expires > ? AND " + MINE,
            (now + ttl_ms * 1000000, now, key, owner, fence)).rowcount == 1})

    def is_held(self, key, owner, fence):
        return self.locked(lambda now: {"ok": self.one(
            "SELECT 1 FROM lease WHERE expires > ? AND " + MINE, now, key, owner, fence) is not None},
            begin=False)

    def peek(self, key):
        def step(now):
            row = self.one("SELECT owner, fence, expires FROM lease WHERE key = ? AND "
                           "owner IS NOT NULL AND expires > ?", key, now)
            if not row:
                return {"held": False}
            return {"held": True, "owner": row[0], "fence": row[1], "ttl_ms": (row[2] - now) // 1000000}
        return self.locked(step, begin=False)

    def reset(self, keys):
        """Every lease forgotten; the fence counter goes on (no client winds a service's back)."""
        return self.locked(lambda now: (self.db.execute("DELETE FROM lease"), {"ok": True})[1])

    def hello(self, name):
        return {"side": "lease", "protocol": 1, "name": name, "version": "SQLite " + sqlite3.sqlite_version,
                "ops": ["acquire", "release", "renew", "is_held", "peek", "reset"]}


if __name__ == "__main__":
    try:
        sqlite_store.serve(Leases(sys.argv[1] if len(sys.argv) > 1 else "results/sqlite_lease.db"), "sqlite")
    except (BrokenPipeError, ConnectionResetError):
        pass  # fencebench went away mid-reply
