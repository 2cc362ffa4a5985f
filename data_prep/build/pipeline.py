"""``build``: the whole stage, from the configured sources to the written outputs and ``stats.json``.

read -> single-modality filter -> tables -> validation -> (alignment filter) -> the generators -> splits
-> (scores) -> outputs + stats + manifest. Each step is a module of this package; this one only runs them
in order and skips the lot when the manifest's fingerprint says the outputs are up to date.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from transformers import HfArgumentParser
from transformers.utils import logging

from cavpref import task_registry
from cavpref.data import PreferenceExample
from cavpref.data_prep.build.clean_rows import borrow_twin_anchors, reject_abstaining
from cavpref.data_prep.build.config import PrepConfig
from cavpref.data_prep.build.fingerprint import _NOT_FINGERPRINTED, fingerprint, versions
from cavpref.data_prep.build.generate import generate
from cavpref.data_prep.build.reading import PrepError, check_sources, read_records, validate
from cavpref.data_prep.build.rotation import rotate_preferences
from cavpref.data_prep.build.splits import assign_splits, in_shard, split_of_paths
from cavpref.data_prep.build.stats import (
    count_table,
    custom_report,
    dropped_total,
    llm_fallbacks,
    task_stats,
)
from cavpref.data_prep.cards import prep_card
from cavpref.data_prep.integrity import damaged, output_files
from cavpref.data_prep.readers import exclusion_reason
from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tables import DEFAULT_FILENAME, TablesConfig, apply_overrides
from cavpref.data_prep.tables import build_tables as derive_tables
from cavpref.data_prep.tasks.context import TableView, clip_id
from cavpref.data_prep.tasks.schema import write_outputs
from cavpref.output_dir import output_dir
from cavpref.parsing import load_yaml
from cavpref.redact import public_config

logger = logging.get_logger(__name__)
from cavpref.data_prep.tasks.spec import switch_table


def build(config: PrepConfig) -> dict[str, Any]:
    """Run the whole stage into ``config.output_dir``; returns the stats (also in stats.json).

    A second call with the same config, inputs and code finds the fingerprint in the manifest and
    returns the stored stats with ``"up_to_date": True``, writing nothing.
    """
    config = config.resolved()
    if not config.output_dir:
        raise ValueError("PrepConfig.output_dir is required")
    check_sources(config)
    if config.check_media and not config.data_root:
        raise ValueError("PrepConfig.data_root is required to check media (or set check_media: false)")
    if config.align_audioset and not config.data_root:
        raise ValueError("PrepConfig.data_root is required by align_audioset (it decodes the clips)")
    # a folder of the user's is never replaced: write_outputs replaces benchmark/, preferences/, parquet/, jsonl/
    with output_dir(
        config.output_dir, "prep", overwrite=config.overwrite_output_dir, markers=(DEFAULT_FILENAME,)
    ) as out:
        return _build(dataclasses.replace(config, output_dir=out))


def _build(config: PrepConfig) -> dict[str, Any]:
    out = Path(config.output_dir)
    digest, basis = fingerprint(config)
    manifest_path = out / "manifest.json"
    if not config.force and manifest_path.is_file():
        old = json.loads(manifest_path.read_text())
        problems = damaged(out, old)
        if problems and old.get("fingerprint") == digest:  # same recipe, but the files are not all there
            logger.warning(
                f"{out}: rebuilding, the outputs differ from the manifest ({len(problems)} file(s): "
                f"{'; '.join(problems[:3])}{' …' if len(problems) > 3 else ''})"
            )
        if old.get("fingerprint") == digest and not problems and (out / "stats.json").is_file():
            stats = json.loads((out / "stats.json").read_text())
            return {**stats, "up_to_date": True}
    t0 = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    manifest_path.unlink(missing_ok=True)  # a build in progress is not up to date, whatever happens next
    stats: dict[str, Any] = {"shard": [config.shard_index, config.num_shards]}
    records = read_records(config, stats)
    mine = [r for r in records if in_shard(r, config)]
    stats["records_read"] = len(mine) + stats["reader_skipped_total"]

    excluded = Counter()
    if config.exclude_single_modality:
        kept = []
        for r in records:
            reason = exclusion_reason(r)
            if reason is None:
                kept.append(r)
            elif in_shard(r, config):
                excluded[reason] += 1
        records = kept
    stats["excluded_single_modality"] = dict(sorted(excluded.items()))

    tables = build_tables(records, config, out)
    view, present, valid, invalid = TableView(tables), {}, [], Counter()
    for r in records:
        try:
            validate(r, view, config, present)
        except PrepError as err:
            if config.on_error == "raise":
                raise
            if in_shard(r, config):
                invalid[err.reason] += 1
            continue
        if split_of_paths(clip_id(r).split("|"), config) is None:  # not bad input: counted, never raised
            if in_shard(r, config):
                invalid["media: the record's own clips fall on both sides of the split"] += 1
            continue
        valid.append(r)
    stats["invalid_skipped"] = dict(sorted(invalid.items()))
    valid, stats["alignment_dropped"] = align(valid, config) if config.align_audioset else (valid, {})
    stats["records_kept"] = sum(in_shard(r, config) for r in valid)
    if not valid:  # the whole pool (every shard reads it): nine empty tasks are no build
        why = {**stats["reader_skipped"], **stats["excluded_single_modality"], **stats["invalid_skipped"]}
        why.update(stats["alignment_dropped"])
        raise ValueError(
            f"none of the {len(records) + stats['reader_skipped_total']} records read is usable "
            f"({', '.join(f'{k}: {v}' for k, v in why.items()) or 'no reason counted'})"
        )
    if config.custom:  # the user's JSONL: what could not be derived from it (shard 0 reports the whole pool)
        stats["custom"] = custom_report(valid, tables, config) if config.shard_index == 0 else {}
    stats["records_reconcile"] = stats["records_read"] == stats["records_kept"] + dropped_total(stats)

    items, prefs, skips = generate(valid, tables, config)
    items, prefs, split_dropped = assign_splits(items, prefs, config)
    if (
        config.clean_rejected == "abstain"
    ):  # the ladder's lesson: CLEAN rows penalise abstaining (clean_rows.py)
        changed = {}
        for s, p in prefs.items():
            prefs[s], changed[s] = reject_abstaining(p, items.get(s, []))
        stats["clean_rows_rejecting_abstention"] = changed
    if config.clean_anchors:  # before scoring: the scorer reads the rows' anchors (clean_rows.py)
        borrowed = {}
        for s, p in prefs.items():
            prefs[s], borrowed[s] = borrow_twin_anchors(p)
        stats["clean_rows_with_twin_anchors"] = borrowed
    if config.score:
        prefs = {s: score(p, config) for s, p in prefs.items()}
    if config.rotate_options:  # after scoring: the scores are of the rows as drawn (the quickstart's order)
        prefs = {s: rotate_preferences(p, items.get(s, []), config.seed) for s, p in prefs.items()}
    stats["tasks"] = task_stats(skips, items, split_dropped, config)
    if config.negatives == "llm" and "COT-Stitch" in stats["tasks"]:  # records that fell back to templates
        stats["tasks"]["COT-Stitch"]["llm_fallback"] = llm_fallbacks(items)
    stats["counts"] = count_table(items)
    stats["preferences"] = {s: len(p) for s, p in prefs.items()}
    write_outputs(out, items, prefs, config.tasks, config.splits(), config.formats)
    (out / "stats.json").write_text(json.dumps(stats, indent=1, sort_keys=True) + "\n")
    manifest = {
        "fingerprint": digest,
        **basis,
        # the manifest travels with the dataset: URLs without credentials, configured secrets masked
        "config": public_config(basis["config"]),
        "files": output_files(out),
        "output_only": {k: getattr(config, k) for k in _NOT_FINGERPRINTED},
        # Eq. 6 switches of the tasks' TaskSpecs ({task: [eta, gamma]}): the trainer's switch_table as data
        "switch_table": {v: switch_table(v) for v in ("paper", "released")},
        # the core's facts of every declared task: a training process learns a task added by a module of its
        # own from here (cavpref.task_registry.declare_table), without importing that module
        "tasks": task_registry.task_table(),
        "seconds": round(time.perf_counter() - t0, 3),
        "versions": versions(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    prep_card(out, stats, manifest)  # README.md: not in the manifest's file list (editing it is no damage)
    return {**stats, "up_to_date": False}


def build_tables(records: list[QARecord], config: PrepConfig, out: Path):
    """T1/T2/T3 from the kept records (+ the user's override), saved next to the outputs."""
    tables = derive_tables(
        records, ontology=config.audioset_ontology, config=TablesConfig(group_level=config.tables_group_level)
    )
    if config.tables_override:
        tables = apply_overrides(tables, config.tables_override)
    tables.save(out / DEFAULT_FILENAME)
    return tables


# data_prep.scoring loads torch and the encoder backends: imported only by a build that scores or aligns.


def scoring_config(config: PrepConfig):
    from cavpref.data_prep.scoring import ScoringConfig

    if config.scoring_config:
        return HfArgumentParser(ScoringConfig).parse_dict(load_yaml(config.scoring_config))[0]
    return ScoringConfig()


def align(records: list[QARecord], config: PrepConfig) -> tuple[list[QARecord], dict[str, int]]:
    """The AudioSet alignment filter (paper: keep a clip when T_sim >= 0.70) over every AudioSet record —
    partners come from the whole pool, so every shard filters all of them — counting this shard's drops."""
    from cavpref.data_prep.scoring import alignment_filter

    segments = [r for r in records if r.source == "audioset"]
    if not segments:
        return records, {}
    kept, _ = alignment_filter(segments, config.data_root, scoring_config(config), config.align_threshold)
    kept_by_key = {r.key: r for r in kept}  # copies carrying meta["tsim"]
    dropped = sum(in_shard(r, config) for r in segments if r.key not in kept_by_key)
    out = [kept_by_key.get(r.key, r) if r.source == "audioset" else r for r in records]
    out = [r for r in out if r.source != "audioset" or r.key in kept_by_key]
    return out, ({f"audioset: T_sim < {config.align_threshold}": dropped} if dropped else {})


def score(prefs: list[PreferenceExample], config: PrepConfig) -> list[PreferenceExample]:
    from cavpref.data_prep.scoring import score_preferences

    return score_preferences(prefs, config.data_root, scoring_config(config))
