#!/usr/bin/env python3
"""A fenced store on SQLite for `fencebench --store exec:scripts/adapters/sqlite_store.py [DB]`.

fencebench starts one of these per worker; they share nothing but the database file (default
results/sqlite_store.db), as the clients of a real service share its database. Each check-and-
apply is ONE statement, and the history of accepted writes is written by a trigger inside it.
The protocol: README.md, "Bring your own store". Copy this file and change the four statements.
"""
import json, os, sqlite3, sys

SCHEMA = """
CREATE TABLE account (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL,
  last_fence INTEGER NOT NULL DEFAULT 0, seen INTEGER NOT NULL DEFAULT 0,
  version INTEGER NOT NULL DEFAULT 0, prev_balance INTEGER, prev_fence INTEGER);
CREATE TABLE history (id INTEGER, version INTEGER, fence INTEGER, last_fence INTEGER,
  before INTEGER, after INTEGER, PRIMARY KEY (id, version));
CREATE TABLE meta (keys INTEGER, initial_balance INTEGER, amount INTEGER, cycle TEXT);
CREATE TRIGGER record AFTER UPDATE OF version ON account BEGIN
  INSERT INTO history VALUES (new.id, new.version, new.last_fence, old.last_fence,
                              old.balance, new.balance);
END;"""
# A read registers its token unless a newer one was seen: the stale holder's later write fails.
READ = "UPDATE account SET seen = :token WHERE id = :key AND seen <= :token RETURNING balance"
# A write needs a token at least the highest seen and above the last accepted: strictly greater.
FENCE = "WHERE id = :key AND last_fence < :token AND seen <= :token"
APPLY = """UPDATE account SET prev_balance = balance, prev_fence = last_fence, balance = {new},
  last_fence = :token, seen = :token, version = version + 1 {where}
  RETURNING prev_balance, balance, version, prev_fence"""
WRITE, DEBIT = APPLY.format(new=":balance", where=FENCE), APPLY.format(new="balance - :amount", where=FENCE)


class Store:
    def __init__(self, path):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        self.db = sqlite3.connect(path, timeout=60, isolation_level=None)  # autocommit
        self.db.execute("PRAGMA synchronous = NORMAL")

    def one(self, sql, **args):
        rows = self.db.execute(sql, args).fetchall()  # to the end: the statement commits
        return rows[0] if rows else None

    def refused(self, key):
        seen, last = self.one("SELECT seen, last_fence FROM account WHERE id = :key", key=key)
        return {"ok": False, "seen": seen, "last_fence": last}

    def applied(self, row, key):
        if row is None:
            return self.refused(key)
        return {"ok": True, "before": row[0], "balance": row[1], "version": row[2], "last_fence": row[3]}

    def read(self, key, token):
        row = self.one(READ, key=key, token=token)
        return {"ok": True, "balance": row[0]} if row else self.refused(key)

    def write(self, key, balance, token):
        return self.applied(self.one(WRITE, key=key, balance=balance, token=token), key)

    def debit(self, key, amount, token):
        return self.applied(self.one(DEBIT, key=key, amount=amount, token=token), key)

    def reset(self, keys, initial_balance, amount, cycle):
        self.db.execute("PRAGMA journal_mode = WAL")  # readers never wait for the writer
        self.db.executescript("DROP TABLE IF EXISTS account; DROP TABLE IF EXISTS history;"
                              "DROP TABLE IF EXISTS meta;" + SCHEMA)
        self.db.execute("BEGIN IMMEDIATE")
        self.db.executemany("INSERT INTO account (id, balance) VALUES (?, ?)",
                            ((k, initial_balance) for k in range(keys)))
        self.db.execute("INSERT INTO meta VALUES (?, ?, ?, ?)", (keys, initial_balance, amount, cycle))
        self.db.execute("COMMIT")
        return {"ok": True}

    def final(self, key):
        balance, last = self.one("SELECT balance, last_fence FROM account WHERE id = :key", key=key)
        return {"balance": balance, "last_fence": last}

    def meta(self):
        keys, initial_balance, amount, cycle = self.one("SELECT * FROM meta")
        return {"keys": keys, "initial_balance": initial_balance, "amount": amount, "cycle": cycle}

    def hello(self, name):
        return {"protocol": 1, "name": name, "version": "SQLite " + sqlite3.sqlite_version,
                "ops": ["read", "write", "debit", "reset", "final", "meta", "history"]}

    def history(self):
        for row in self.db.execute("SELECT * FROM history ORDER BY id, version"):
            yield dict(zip(("key", "version", "fence", "last_fence", "before", "after"), row))


def serve(store, name):
    """One reply line per request line, flushed; the log goes to stderr. store: any object
    with a method per op (a lease service's too: sqlite_lease.py)."""
    for line in sys.stdin:
        req = json.loads(line)
        op = req.pop("op")
        try:
            if op == "hello":
                reply = store.hello(name)
            elif op == "history":
                for row in store.history():
                    sys.stdout.write(json.dumps(row) + "\n")
                reply = {"end": True}
            else:
                reply = getattr(store, op)(**req)
        except sqlite3.Error as e:
            reply = {"error": "%s: %s" % (op, e)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    try:
        serve(Store(sys.argv[1] if len(sys.argv) > 1 else "results/sqlite_store.db"), "sqlite")
    except (BrokenPipeError, ConnectionResetError):
        pass  # fencebench went away mid-reply
