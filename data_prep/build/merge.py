"""``cavpref prep merge``: the outputs of ``num_shards`` shard builds -> the single-process build."""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from cavpref.data_prep.build.config import SPLITS
from cavpref.data_prep.build.fingerprint import BUILD_VERSION
from cavpref.data_prep.build.stats import add_stats, dropped_total
from cavpref.data_prep.cards import prep_card
from cavpref.data_prep.integrity import output_files
from cavpref.data_prep.tables import DEFAULT_FILENAME
from cavpref.data_prep.tasks.schema import load_outputs, write_outputs
from cavpref.output_dir import output_dir as _output_dir


def merge(output_dir: str | os.PathLike, shard_dirs: list[str], overwrite: bool = False) -> dict[str, Any]:
    """Merge the outputs of ``num_shards`` shard builds into ``output_dir``.

    The shards must come from one config (apart from ``shard_index``), the same inputs and code, and cover
    every shard index once (a folder listed twice, under any spelling, is refused). Rows are re-sorted by id
    and counts summed, so the result does not depend on the order of ``shard_dirs`` and equals the
    single-process build. ``output_dir`` is claimed like every output folder (``cavpref.output_dir``;
    ``overwrite``: ``overwrite_output_dir``).
    """

    if not shard_dirs:
        raise ValueError("merge: no shard folders given")
    seen: dict[Path, str] = {}
    for d in shard_dirs:
        real = Path(d).resolve()
        if real in seen:
            raise ValueError(f"merge: shard folder {d} is listed twice (also as {seen[real]})")
        seen[real] = d
    if Path(output_dir).resolve() in seen:
        raise ValueError(f"merge: the output folder {output_dir} is one of the shards")
    with _output_dir(output_dir, "prep", overwrite=overwrite, markers=(DEFAULT_FILENAME,)) as out:
        return _merge(out, shard_dirs)


def _merge(output_dir: str, shard_dirs: list[str]) -> dict[str, Any]:
    manifests = {}
    for d in shard_dirs:
        path = Path(d) / "manifest.json"
        if not path.is_file():
            raise ValueError(f"merge: {path} is missing (not a finished prep build)")
        manifests[d] = json.loads(path.read_text())

    def basis(m: dict) -> str:
        cfg = {k: v for k, v in m["config"].items() if k != "shard_index"}
        return json.dumps([cfg, m["inputs"], m["code"], m["build_version"]], sort_keys=True)

    first = shard_dirs[0]
    for d, m in manifests.items():
        if basis(m) != basis(manifests[first]):
            raise ValueError(f"merge: {d} was built from a different config, inputs or code than {first}")
    n = manifests[first]["config"]["num_shards"]
    indices = sorted(m["config"]["shard_index"] for m in manifests.values())
    if indices != list(range(n)):
        raise ValueError(f"merge: shard indices {indices} do not cover 0..{n - 1} exactly once")
    tables = {d: (Path(d) / DEFAULT_FILENAME).read_bytes() for d in shard_dirs}
    if len(set(tables.values())) != 1:
        raise ValueError("merge: the shards' look-up tables differ")

    items: dict[str, list] = defaultdict(list)
    prefs: dict[str, list] = defaultdict(list)
    stats: dict[str, Any] = {}
    for d in sorted(shard_dirs, key=lambda d: manifests[d]["config"]["shard_index"]):
        i, p = load_outputs(d)
        for split, rows in i.items():
            items[split] += rows
        for split, rows in p.items():
            prefs[split] += rows
        shard_stats = json.loads((Path(d) / "stats.json").read_text())
        shard_stats.pop("shard")
        stats = add_stats(stats, shard_stats) if stats else shard_stats
    for kind, by_split in (("item", items), ("preference row", prefs)):
        for split, rows in by_split.items():
            ids = Counter(r.id for r in rows)
            twice = sorted(i for i, c in ids.items() if c > 1)
            if twice:  # shards of one build never share a row: these are copies of one shard
                raise ValueError(
                    f"merge: {len(twice)} {kind} id(s) of split {split!r} occur in more than one shard "
                    f"(e.g. {twice[0]!r}): is a shard folder a copy of another?"
                )
    cfg = manifests[first]["config"]
    stats["shard"] = [0, 1]
    stats["records_reconcile"] = stats["records_read"] == stats["records_kept"] + dropped_total(stats)
    for t in stats["tasks"].values():
        t["reconcile"] = (t["eligible"] - sum(t["skipped"].values())) * len(cfg["settings"]) == (
            t["items"] + t["split_dropped_items"]
        )
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    # a merge killed into an existing build must not leave that build's manifest claiming it is up to date
    (out / "manifest.json").unlink(missing_ok=True)
    (out / DEFAULT_FILENAME).write_bytes(tables[first])
    splits = sorted({s for s in (*items, *prefs)}, key=SPLITS.index)
    write_outputs(out, items, prefs, cfg["tasks"], splits, cfg["formats"])
    (out / "stats.json").write_text(json.dumps(stats, indent=1, sort_keys=True) + "\n")
    digest = hashlib.sha256(
        "".join(sorted(m["fingerprint"] for m in manifests.values())).encode()
    ).hexdigest()
    merged = {
        "fingerprint": digest,
        "merged_shards": n,
        "build_version": BUILD_VERSION,
        "config": {**cfg, "shard_index": 0, "num_shards": 1},
        "inputs": manifests[first]["inputs"],
        "code": manifests[first]["code"],
        "shard_fingerprints": sorted(m["fingerprint"] for m in manifests.values()),
        "files": output_files(out),
        "switch_table": manifests[first].get("switch_table"),
        "tasks": manifests[first].get("tasks"),
    }
    (out / "manifest.json").write_text(json.dumps(merged, indent=1, sort_keys=True) + "\n")
    prep_card(out, stats, merged)
    return stats
