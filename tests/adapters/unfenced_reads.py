#!/usr/bin/env python3
"""A store with no token on reads, which says so: the correct SQLite store of
scripts/adapters/sqlite_store.py whose reads neither check nor register their token, and whose
hello declares it ("fenced_reads": false). Its writes stay fenced.

usage: unfenced_reads.py DB
"""
import os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts", "adapters"))
import sqlite_store  # noqa: E402


class UnfencedReads(sqlite_store.Store):
    def read(self, key, token):
        return {"ok": True, "balance": self.one("SELECT balance FROM account WHERE id = :key", key=key)[0]}

    def hello(self, name):
        return dict(sqlite_store.Store.hello(self, name), fenced_reads=False)


if __name__ == "__main__":
    try:
        sqlite_store.serve(UnfencedReads(sys.argv[1]), "noreadtok")
    except (BrokenPipeError, ConnectionResetError):
        pass
