"""Which split a clip is in, which shard a record is in, and the split of each generated item.

A clip is in train or test by a hash of its path (``split_seed``), so a clip never lands on both sides;
an item whose clips straddle the split is dropped and counted. A record is in a shard by a hash of its
key, so shards partition the records whatever their order.
"""

from __future__ import annotations

from collections import Counter

from cavpref.data import BenchmarkItem, PreferenceExample
from cavpref.data_prep.build.config import PrepConfig
from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tasks.common import stable_hash


def split_of_path(path: str, config: PrepConfig) -> str:
    u = stable_hash("split", config.split_seed, path) / 2.0**64
    if u < config.test_fraction:
        return "test"
    return "validation" if u < config.test_fraction + config.val_fraction else "train"


def split_of_paths(paths, config: PrepConfig) -> str | None:
    found = {split_of_path(p, config) for p in paths}
    return found.pop() if len(found) == 1 else None


def in_shard(record: QARecord, config: PrepConfig) -> bool:
    return stable_hash("shard", record.key) % config.num_shards == config.shard_index


def assign_splits(items: list[BenchmarkItem], prefs: list[PreferenceExample], config: PrepConfig):
    """Items and preferences per split by their clips; an item whose clips straddle splits is dropped."""
    by_split: dict[str, list] = {s: [] for s in config.splits()}
    pref_split: dict[str, list] = {s: [] for s in config.splits()}
    dropped, item_split = Counter(), {}
    for it in items:
        split = split_of_paths(it.source_ids, config)
        if split is None:
            dropped[it.task] += 1
            continue
        item_split[it.id] = split
        by_split[split].append(it)
    for p in prefs:
        if p.id in item_split:
            pref_split[item_split[p.id]].append(p)
    return by_split, pref_split, dropped
