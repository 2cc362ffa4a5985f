"""Embedding cache keyed by (scorer fingerprint, media id): an in-memory dict plus optional sqlite on disk.

The same clip is scored many times (a clean clip anchors every perturbation built from it, and re-runs of
data prep repeat everything), and an embedding costs a decode plus a forward pass. A fingerprint names
the model *and* the preprocessing (sample rate, frame policy, windowing), so changing either never
returns a stale vector. The disk side is the project's one cache, ``cavpref.cache.SQLiteCache`` (one
file, safe for several processes — shards — at once, every write committed before it returns).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from cavpref.cache import CacheTable, SQLiteCache


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


EMBEDDINGS = CacheTable(name="emb", namespace="fp", key="key", value="data")  # the layout of older files


class EmbeddingCache:
    """``get_many`` / ``put_many`` over one fingerprint; memory first, then disk (when ``cache_dir``)."""

    def __init__(self, fingerprint: str, cache_dir: str | os.PathLike | None = None):
        self.fingerprint = fingerprint
        self.memory: dict[str, np.ndarray] = {}
        self.path = None if cache_dir is None else Path(cache_dir) / "embeddings.sqlite"
        self.store = None if self.path is None else SQLiteCache(self.path, EMBEDDINGS)

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        found = {k: self.memory[k] for k in keys if k in self.memory}
        missing = [k for k in keys if k not in found]
        if missing and self.store is not None:
            for key, data in self.store.get_many(self.fingerprint, missing).items():
                found[key] = self.memory[key] = np.frombuffer(data, dtype=np.float32).copy()
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        items = {k: np.asarray(v, dtype=np.float32).reshape(-1) for k, v in items.items()}
        self.memory.update(items)
        if self.store is not None and items:
            self.store.put_many(self.fingerprint, [(k, v.tobytes()) for k, v in items.items()])
