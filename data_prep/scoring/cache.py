"""Embedding cache keyed by (scorer fingerprint, media id): an in-memory dict plus optional sqlite on disk.

The same clip is scored many times (a clean clip anchors every perturbation built from it, and re-runs of
data prep repeat everything), and an embedding costs a decode plus a forward pass. A fingerprint names
the model *and* the preprocessing (sample rate, frame policy, windowing), so changing either never
returns a stale vector. sqlite is one file, safe for several processes (shards) at once, and needs no
extra package.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path

import numpy as np


def fingerprint(**parts) -> str:
    """A short stable hash of what determines an embedding (model, backend, preprocessing).

    For a local model folder the sizes and modification times of its files are included, so a
    checkpoint rewritten in place gets a new fingerprint."""
    parts = dict(parts)
    model = parts.get("model")
    if isinstance(model, str) and os.path.isdir(model):
        parts["model_files"] = sorted(
            (p.name, p.stat().st_size, int(p.stat().st_mtime)) for p in Path(model).iterdir() if p.is_file()
        )
    blob = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class EmbeddingCache:
    """``get_many`` / ``put_many`` over one fingerprint; memory first, then disk (when ``cache_dir``)."""

    def __init__(self, fingerprint: str, cache_dir: str | os.PathLike | None = None):
        self.fingerprint = fingerprint
        self.memory: dict[str, np.ndarray] = {}
        self.path = None if cache_dir is None else Path(cache_dir) / "embeddings.sqlite"
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db:
                db.execute(
                    "CREATE TABLE IF NOT EXISTS emb (fp TEXT, key TEXT, data BLOB, PRIMARY KEY (fp, key))"
                )

    @contextmanager
    def _connect(self):
        db = sqlite3.connect(self.path, timeout=60)
        try:
            with db:  # one transaction: committed on success, rolled back on error
                yield db
        finally:
            db.close()

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        found = {k: self.memory[k] for k in keys if k in self.memory}
        missing = [k for k in keys if k not in found]
        if missing and self.path is not None:
            with self._connect() as db:
                for i in range(0, len(missing), 500):
                    chunk = missing[i : i + 500]
                    rows = db.execute(
                        f"SELECT key, data FROM emb WHERE fp = ? AND key IN ({','.join('?' * len(chunk))})",
                        [self.fingerprint, *chunk],
                    ).fetchall()
                    for key, data in rows:
                        found[key] = self.memory[key] = np.frombuffer(data, dtype=np.float32).copy()
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        items = {k: np.asarray(v, dtype=np.float32).reshape(-1) for k, v in items.items()}
        self.memory.update(items)
        if self.path is not None and items:
            with self._connect() as db:
                db.executemany(
                    "INSERT OR REPLACE INTO emb (fp, key, data) VALUES (?, ?, ?)",
                    [(self.fingerprint, k, v.tobytes()) for k, v in items.items()],
                )
