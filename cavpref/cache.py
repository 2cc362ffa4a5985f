"""The one on-disk cache of the project: (namespace, key) -> value in a table of one SQLite file.

Used by the embedding cache of data prep (namespace: the encoder fingerprint, value: float32 bytes) and by
the chat client's reply cache (namespace: the model, value: the reply text). Why SQLite: one file, no
extra package, and safe for several threads *and* processes (shards, workers) writing at once.

Durability: every ``put`` / ``put_many`` is one transaction, committed before it returns (visible to
every other process from then on, kept if the process dies later); a failed write rolls back whole.
WAL journaling lets readers proceed while one process writes. A connection never crosses ``fork``: a
process opens its own on first use, so a cache made before workers are forked still works in them.

The table and column names are the caller's, so cache files written before this module existed are
read as they are.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_CHUNK = 500  # keys per SELECT: under SQLite's bound-parameter limit (999 in old builds)


@dataclass(frozen=True)
class CacheTable:
    """Where the values live: ``table (namespace, key, value[, stamp]) PRIMARY KEY (namespace, key)``."""

    name: str = "cache"
    namespace: str = "namespace"
    key: str = "key"
    value: str = "value"
    value_type: str = "BLOB"
    stamp: str | None = None  # a REAL column set to time.time() on every put, when named

    def __post_init__(self):
        for ident in (self.name, self.namespace, self.key, self.value, self.stamp or "x"):
            if not ident.isidentifier():
                raise ValueError(f"CacheTable: {ident!r} is not a plain SQL identifier")


class SQLiteCache:
    """``get`` / ``get_many`` / ``put`` / ``put_many`` over one table of one SQLite file."""

    def __init__(self, path: str | os.PathLike, table: CacheTable = CacheTable(), timeout_s: float = 60.0):
        self.path = Path(path)
        self.table = table
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._pid = -1
        self.path.parent.mkdir(parents=True, exist_ok=True)
        t = table
        stamp = f", {t.stamp} REAL" if t.stamp else ""
        with self._transaction() as db:
            db.execute(
                f"CREATE TABLE IF NOT EXISTS {t.name} ({t.namespace} TEXT, {t.key} TEXT, "
                f"{t.value} {t.value_type}{stamp}, PRIMARY KEY ({t.namespace}, {t.key}))"
            )

    def _connection(self) -> sqlite3.Connection:
        """This process's connection (the caller holds the lock)."""
        if self._db is None or self._pid != os.getpid():
            self._db = sqlite3.connect(self.path, timeout=self.timeout_s, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._pid = os.getpid()
        return self._db

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One transaction on this process's connection: committed on success, rolled back on error."""
        with self._lock:
            db = self._connection()
            with db:
                yield db

    def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, Any]:
        """The stored values of those ``keys`` that are stored."""
        t, found = self.table, {}
        with self._transaction() as db:
            for i in range(0, len(keys), _CHUNK):
                chunk = list(keys[i : i + _CHUNK])
                rows = db.execute(
                    f"SELECT {t.key}, {t.value} FROM {t.name} WHERE {t.namespace} = ? "
                    f"AND {t.key} IN ({','.join('?' * len(chunk))})",
                    [namespace, *chunk],
                ).fetchall()
                found.update(rows)
        return found

    def get(self, namespace: str, key: str) -> Any | None:
        return self.get_many(namespace, [key]).get(key)

    def put_many(self, namespace: str, items: Iterable[tuple[str, Any]]) -> None:
        """Insert or replace, all in one committed transaction."""
        t = self.table
        rows = [(namespace, k, v, *((time.time(),) if t.stamp else ())) for k, v in items]
        if not rows:
            return
        columns = ", ".join([t.namespace, t.key, t.value, *([t.stamp] if t.stamp else [])])
        with self._transaction() as db:
            db.executemany(
                f"INSERT OR REPLACE INTO {t.name} ({columns}) VALUES ({', '.join('?' * len(rows[0]))})", rows
            )

    def put(self, namespace: str, key: str, value: Any) -> None:
        self.put_many(namespace, [(key, value)])

    def count(self, namespace: str | None = None) -> int:
        """How many values are stored (under ``namespace``, or in all)."""
        t = self.table
        where, args = (f" WHERE {t.namespace} = ?", [namespace]) if namespace is not None else ("", [])
        with self._transaction() as db:
            return int(db.execute(f"SELECT COUNT(*) FROM {t.name}{where}", args).fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._db is not None and self._pid == os.getpid():
                self._db.close()
            self._db = None
