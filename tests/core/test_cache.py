"""``cavpref.cache.SQLiteCache``: the one on-disk cache (prep's embeddings, the chat client's replies)."""

from __future__ import annotations

import multiprocessing
import sqlite3
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from cavpref.cache import CacheTable, SQLiteCache
from cavpref.chat_client import ChatCache
from cavpref.data_prep.scoring.cache import EmbeddingCache


def test_values_are_committed_per_put_and_keyed_by_namespace(tmp_path):
    a = SQLiteCache(tmp_path / "sub" / "c.sqlite")
    a.put("m1", "k", b"one")
    a.put_many("m2", [("k", b"two"), ("j", b"three")])
    b = SQLiteCache(tmp_path / "sub" / "c.sqlite")  # another connection (as another process would open)
    assert b.get("m1", "k") == b"one" and b.get("m2", "k") == b"two" and b.get("m1", "j") is None
    assert b.get_many("m2", ["j", "k", "nope"]) == {"j": b"three", "k": b"two"}
    a.put("m1", "k", b"replaced")
    assert b.get("m1", "k") == b"replaced"
    many = [(str(i), str(i).encode()) for i in range(1234)]  # more keys than one SELECT takes
    a.put_many("big", many)
    assert b.get_many("big", [k for k, _ in many]) == dict(many)


def test_threads_share_one_cache(tmp_path):
    cache = SQLiteCache(tmp_path / "c.sqlite")
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: cache.put("t", str(i), str(i)), range(200)))
    assert len(cache.get_many("t", [str(i) for i in range(200)])) == 200


def _child_put(cache: SQLiteCache) -> None:
    cache.put("child", "k", b"from the child")


def test_a_cache_opened_before_fork_works_in_the_child(tmp_path):
    cache = SQLiteCache(tmp_path / "c.sqlite")
    cache.put("parent", "k", b"x")  # the parent's connection is open now
    child = multiprocessing.get_context("fork").Process(target=_child_put, args=(cache,))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert cache.get("child", "k") == b"from the child" and cache.get("parent", "k") == b"x"


def test_files_written_before_the_shared_cache_are_read(tmp_path):
    """The judge's and the embedding cache's table layouts are kept, so their old files stay valid."""
    old = sqlite3.connect(tmp_path / "judge.sqlite")
    old.execute(
        "CREATE TABLE replies (model TEXT, hash TEXT, text TEXT, created REAL, PRIMARY KEY (model, hash))"
    )
    old.execute("INSERT INTO replies VALUES ('judge', 'h1', 'A', 0)")
    old.commit()
    old.close()
    cache = ChatCache(tmp_path / "judge.sqlite")
    assert cache.get("judge", "h1") == "A"
    cache.put("judge", "h2", "B")
    db = sqlite3.connect(tmp_path / "judge.sqlite")
    text, created = db.execute("SELECT text, created FROM replies WHERE hash='h2'").fetchone()
    assert text == "B" and created > 0

    (tmp_path / "emb").mkdir()
    old = sqlite3.connect(tmp_path / "emb" / "embeddings.sqlite")
    old.execute("CREATE TABLE emb (fp TEXT, key TEXT, data BLOB, PRIMARY KEY (fp, key))")
    old.execute("INSERT INTO emb VALUES ('fp0', 'clip', ?)", (np.arange(3, dtype=np.float32).tobytes(),))
    old.commit()
    old.close()
    got = EmbeddingCache("fp0", tmp_path / "emb").get_many(["clip", "other"])
    assert list(got) == ["clip"] and got["clip"].tolist() == [0.0, 1.0, 2.0]


def test_table_names_must_be_plain_identifiers():
    with pytest.raises(ValueError, match="not a plain SQL identifier"):
        CacheTable(name="x; DROP TABLE y")
