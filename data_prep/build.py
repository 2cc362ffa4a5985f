"""``cavpref prep CONFIG.yaml``: source annotations -> AVTrustBench items + CAVPref preference data.

read (data_prep.readers) -> single-modality filter (paper A.1) -> T1/T2/T3 tables (+ user override) ->
validation -> the nine generators (data_prep.tasks) -> leak-free train/test split by source clip ->
optional similarity scores (data_prep.scoring) -> HF ``datasets`` (Arrow + Parquet) + JSONL + stats.

Why it is shaped like this:

- *Reproducible and shardable.* Every choice is seeded per record (data_prep.tasks.common), partners are
  drawn from the global record pool, and rows are written sorted by id, so a shard only changes *which*
  records it generates for: merging the shards gives exactly the single-process build, in any order.
- *No split leak.* A clip is in train or test by a hash of its path; partners are drawn from the same
  side, and an item whose clips still straddle (several clips of its own) is dropped and counted.
- *Nothing recomputed needlessly.* The output's manifest holds a fingerprint of the config, the bytes of
  every input file and the code of this stage; an identical second run says so and does nothing.
- *Every record accounted for.* read = kept + reader skips + single-modality exclusions + invalid; per
  task eligible = generated + skipped; all in ``stats.json``.
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import json
import multiprocessing
import os
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from transformers.utils import logging

from cavpref.data import ALL_TASKS, CATEGORIES, SETTINGS, TASKS, BenchmarkItem, PreferenceExample
from cavpref.media.spec import MediaError, from_json, resolve_path, sources
from cavpref.data_prep.integrity import damaged, output_files
from cavpref.data_prep.records import SOURCES, QARecord
from cavpref.data_prep.tasks import generate_all, make_context
from cavpref.data_prep.tasks.common import LLMConfig, TaskOptions, stable_hash
from cavpref.data_prep.tasks.context import clip_id
from cavpref.data_prep.tasks.schema import write_outputs

logger = logging.get_logger(__name__)

BUILD_VERSION = 1
SPLITS = ("train", "validation", "test")
WORLD_LAYOUT = {  # where `cavpref world` writes each source (docs/synthetic_world.md)
    "music_avqa": "music_avqa/json/avqa-*.json",
    "avqa": "avqa/annotation/*_qa.json",
    "audioset": "audioset/*_segments.csv",
    "audioset_labels": "audioset/class_labels_indices.csv",
    "audioset_ontology": "audioset/ontology.json",
}
_NOT_FINGERPRINTED = ("output_dir", "num_proc", "force", "progress")


class PrepError(ValueError):
    """A record the build cannot use; names the annotation file, the record index and the field."""

    def __init__(self, record: QARecord, field_name: str, problem: str, kind: str | None = None):
        self.reason = f"{field_name}: {kind or problem}"  # the count key of a skip: no per-record values
        super().__init__(
            f"{record.file}: record {record.index} ({record.source_id}): field {field_name!r}: {problem}"
        )


@dataclass
class PrepConfig:
    """Every key can be set in the YAML file or as ``--key value`` (command line wins)."""

    output_dir: str = field(default="", metadata={"help": "output folder (required)"})
    world: str | None = field(
        default=None,
        metadata={"help": "a `cavpref world` folder: fills the inputs below that are empty from its layout"},
    )
    data_root: str | None = field(default=None, metadata={"help": "media root (default: the world folder)"})
    music_avqa: list[str] = field(default_factory=list, metadata={"help": "MUSIC-AVQA json files"})
    avqa: list[str] = field(default_factory=list, metadata={"help": "AVQA *_qa.json files"})
    audioset: list[str] = field(default_factory=list, metadata={"help": "AudioSet segment csvs"})
    audioset_labels: str | None = field(default=None, metadata={"help": "class_labels_indices.csv"})
    audioset_ontology: str | None = field(default=None, metadata={"help": "ontology.json (T1/T2 tables)"})
    tasks: list[str] = field(default_factory=lambda: list(TASKS))
    settings: list[str] = field(default_factory=lambda: list(SETTINGS))
    seed: int = 0
    split_seed: int = field(default=0, metadata={"help": "seed of the clip -> split hash"})
    test_fraction: float = 0.2
    val_fraction: float = 0.0
    num_options: int = 4
    probes: int = 64
    min_partner_check: Literal["t1", "disjoint", "unchecked"] = "disjoint"
    quiet_gain: float = 0.3
    exclude_single_modality: bool = True
    tables_override: str | None = field(default=None, metadata={"help": "user-edited tables JSON"})
    tables_group_level: int = field(default=0, metadata={
        "help": "depth of the T2 groups in the AudioSet ontology (0: top-level supercategories; 1: one level "
                "below, e.g. 'Vehicle' instead of 'Sounds of things')"})
    on_error: Literal["raise", "skip"] = "raise"
    check_media: bool = field(default=True, metadata={"help": "error (or skip) when a media file is missing"})
    negatives: Literal["template", "llm"] = "template"
    llm_base_url: str = ""
    llm_model: str = ""
    llm_api_key_env: str = "OPENAI_API_KEY"
    llm_on_failure: Literal["template", "error"] = field(default="template", metadata={
        "help": "negatives: llm and the endpoint fails (401, timeout): fall back to template negatives "
                "(counted in stats.json as llm_fallback and printed) or stop with the error"})
    score: bool = field(
        default=False, metadata={"help": "fill clap_delta / avsm_delta_* (data_prep.scoring)"}
    )
    scoring_config: str | None = field(default=None, metadata={"help": "ScoringConfig YAML"})
    align_audioset: bool = field(
        default=False,
        metadata={"help": "AudioSet alignment filter: drop segments whose video and audio disagree "
                          "(T_sim < align_threshold; models from scoring_config)"},
    )
    align_threshold: float = field(default=0.70, metadata={"help": "T_sim threshold of align_audioset"})
    formats: list[str] = field(default_factory=lambda: ["arrow", "parquet", "jsonl"])
    num_shards: int = 1
    shard_index: int = 0
    num_proc: int = 1
    force: bool = False
    progress: bool = True

    def __post_init__(self):
        for name in ("tasks", "settings", "formats"):
            bad = [
                x
                for x in getattr(self, name)
                if x
                not in {"tasks": ALL_TASKS, "settings": SETTINGS, "formats": ("arrow", "parquet", "jsonl")}[name]
            ]
            if bad:
                raise ValueError(f"PrepConfig.{name}: unknown value(s) {bad}")
        if not 0 <= self.shard_index < self.num_shards:
            raise ValueError(f"PrepConfig: shard_index {self.shard_index} not in [0, {self.num_shards})")
        if not (
            0 <= self.test_fraction and 0 <= self.val_fraction and self.test_fraction + self.val_fraction < 1
        ):
            raise ValueError("PrepConfig: test_fraction + val_fraction must be in [0, 1)")

    def resolved(self) -> PrepConfig:
        """Inputs filled from ``world`` where empty; ``data_root`` defaulted to it."""
        if not self.world:
            return self
        world, changes = Path(self.world), {}
        for name, pattern in WORLD_LAYOUT.items():
            if not getattr(self, name):
                found = sorted(glob.glob(str(world / pattern)))
                changes[name] = (
                    found if isinstance(getattr(self, name), list) else (found[0] if found else None)
                )
        changes["data_root"] = self.data_root or str(world)
        return dataclasses.replace(self, **changes)

    def task_options(self) -> TaskOptions:
        llm = None
        if self.negatives == "llm":
            llm = LLMConfig(
                base_url=self.llm_base_url,
                model=self.llm_model,
                api_key_env=self.llm_api_key_env,
                cache_path=str(Path(self.output_dir) / "llm_cache.sqlite"),
                on_failure=self.llm_on_failure,
            )
        return TaskOptions(
            num_options=self.num_options,
            probes=self.probes,
            min_partner_check=self.min_partner_check,
            quiet_gain=self.quiet_gain,
            negatives=self.negatives,
            llm=llm,
            progress=self.progress,
        )

    def splits(self) -> list[str]:
        return [s for s, f in zip(SPLITS, (1.0, self.val_fraction, self.test_fraction)) if f > 0]


# ----------------------------------------------------------------------------- fingerprint


def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def input_files(config: PrepConfig) -> list[str]:
    files = [*config.music_avqa, *config.avqa, *config.audioset]
    files += [
        f
        for f in (
            config.audioset_labels,
            config.audioset_ontology,
            config.tables_override,
            config.scoring_config,
        )
        if f
    ]
    return files


def code_sha256() -> str:
    """The source of this stage (build, tasks, readers, tables, scoring): changed code means stale outputs."""
    here = Path(__file__).parent
    files = sorted(
        [
            here / "build.py",
            here / "tables.py",
            here / "records.py",
            *here.glob("tasks/*.py"),
            *here.glob("readers/*.py"),
            *here.glob("scoring/*.py"),
        ]
    )
    h = hashlib.sha256()
    for f in files:
        if f.exists():
            h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def fingerprint(config: PrepConfig) -> tuple[str, dict[str, Any]]:
    """(hex digest, what it covers): config (minus output-only keys), input file hashes, code hash."""
    cfg = {k: v for k, v in dataclasses.asdict(config).items() if k not in _NOT_FINGERPRINTED}
    inputs = {str(Path(f)): file_sha256(f) for f in input_files(config)}
    basis = {"build_version": BUILD_VERSION, "config": cfg, "inputs": inputs, "code": code_sha256()}
    digest = hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()
    return digest, basis


# ----------------------------------------------------------------------------- reading and validation


def read_records(config: PrepConfig, stats: dict) -> list[QARecord]:
    from cavpref.data_prep.readers import ReaderConfig, read_source

    reader_cfg = ReaderConfig(data_root=config.data_root, on_error=config.on_error)
    records, skipped, n_in = [], Counter(), 0
    for source in ("music_avqa", "avqa", "audioset"):
        files = getattr(config, source)
        if not files:
            continue
        names = Counter(Path(f).name for f in files)
        clash = sorted(str(f) for f in files if names[Path(f).name] > 1)
        if clash:  # e.g. MUSIC-AVQA's json/avqa-train.json and its corrected copy json_update/avqa-train.json
            raise ValueError(
                f"PrepConfig.{source}: {clash} share a file name; records are keyed by file name + index "
                "(QARecord.key), so their ids would collide: pass one of them, or rename a copy"
            )
        kw = (
            {"labels": config.audioset_labels, "ontology": config.audioset_ontology}
            if source == "audioset"
            else {}
        )
        result = read_source(source, files, reader_cfg, **kw)
        records += result.records
        skipped.update({f"{source}: {k}": v for k, v in result.skipped.items()})
        n_in += result.n_in
    # reader skips have no record key to shard by: shard 0 reports them
    stats["reader_skipped"] = dict(sorted(skipped.items())) if config.shard_index == 0 else {}
    stats["reader_skipped_total"] = sum(stats["reader_skipped"].values())
    return records


def validate(record: QARecord, view, config: PrepConfig, present: dict[str, bool]) -> None:
    """Raise PrepError for a record no generator may use."""
    if record.source not in SOURCES:
        raise PrepError(
            record,
            "source",
            f"unknown source {record.source!r} (expected one of {SOURCES})",
            "unknown source",
        )
    try:
        spec = from_json(record.media)
    except (MediaError, ValueError, KeyError, TypeError) as err:
        raise PrepError(record, "media", f"not a MediaSpec ({err})", "not a MediaSpec") from None
    if config.check_media:
        for s in sources(spec):
            if s.path not in present:
                try:
                    present[s.path] = resolve_path(config.data_root, s.path).is_file()
                except MediaError as err:  # e.g. a symlink out of the data root: say so, as evaluation does
                    present[s.path] = str(err)
            if isinstance(present[s.path], str):
                raise PrepError(record, "media", present[s.path], "media path outside the data root")
            if not present[s.path]:
                raise PrepError(
                    record,
                    "media",
                    f"missing media file {s.path!r} (under {config.data_root})",
                    "missing media file",
                )
    if record.source == "audioset":
        if not record.labels:
            raise PrepError(record, "labels", "segment has no labels")
        return
    if record.category not in CATEGORIES:
        raise PrepError(
            record,
            "category",
            f"unknown category {record.category!r} (expected one of {CATEGORIES})",
            "unknown category",
        )
    if not record.question.strip():
        raise PrepError(record, "question", "empty question")
    if not record.answer.strip():
        raise PrepError(record, "answer", "empty answer")
    if record.options:
        if record.answer.strip().lower() not in {o.strip().lower() for o in record.options}:
            raise PrepError(
                record,
                "answer",
                f"answer {record.answer!r} not among the options {record.options}",
                "answer not among the options",
            )
    elif not view.in_vocab(record.category, record.answer):
        raise PrepError(
            record,
            "answer",
            f"answer {record.answer!r} not in the T3 vocabulary of category {record.category!r}",
            "answer not in the T3 vocabulary",
        )


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


# ----------------------------------------------------------------------------- generation


_WORK: dict[str, Any] = {}  # inherited by forked workers: the context is built once, in the parent


def _generate_part(part: int) -> tuple[list, list, dict]:
    ctx, config, tables = _WORK["ctx"], _WORK["config"], _WORK["tables"]
    n = config.num_proc

    def select(r: QARecord) -> bool:
        return in_shard(r, config) and (n == 1 or stable_hash("proc", r.key) % n == part)

    return generate_all(
        ctx.records,
        tables,
        seed=config.seed,
        tasks=config.tasks,
        settings=config.settings,
        context=ctx,
        select=select,
    )


def generate(records: list[QARecord], tables, config: PrepConfig) -> tuple[list, list, dict[str, Counter]]:
    """All configured tasks for this shard's records, over ``num_proc`` forked workers; sorted by id."""
    ctx = make_context(
        records,
        tables,
        seed=config.seed,
        options=config.task_options(),
        partner_key=lambda r: split_of_paths(clip_id(r).split("|"), config),
        ontology=config.audioset_ontology,
    )
    _WORK.update(ctx=ctx, config=config, tables=tables)
    try:
        if config.num_proc > 1:
            from cavpref.safety import die_with_parent

            with ProcessPoolExecutor(config.num_proc, mp_context=multiprocessing.get_context("fork"),
                                     initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
                parts = list(pool.map(_generate_part, range(config.num_proc)))
        else:
            parts = [_generate_part(0)]
    finally:
        _WORK.clear()
    items = sorted((i for p in parts for i in p[0]), key=lambda x: x.id)
    prefs = sorted((x for p in parts for x in p[1]), key=lambda x: x.id)
    skips = {t: sum((p[2][t] for p in parts), Counter()) for t in config.tasks}
    return items, prefs, skips


# ----------------------------------------------------------------------------- the build


def build(config: PrepConfig) -> dict[str, Any]:
    """Run the whole stage into ``config.output_dir``; returns the stats (also in stats.json).

    A second call with the same config, inputs and code finds the fingerprint in the manifest and
    returns the stored stats with ``"up_to_date": True``, writing nothing.
    """
    config = config.resolved()
    if not config.output_dir:
        raise ValueError("PrepConfig.output_dir is required")
    if config.check_media and not config.data_root:
        raise ValueError("PrepConfig.data_root is required to check media (or set check_media: false)")
    if config.align_audioset and not config.data_root:
        raise ValueError("PrepConfig.data_root is required by align_audioset (it decodes the clips)")
    out = Path(config.output_dir)
    digest, basis = fingerprint(config)
    manifest_path = out / "manifest.json"
    if not config.force and manifest_path.is_file():
        old = json.loads(manifest_path.read_text())
        problems = damaged(out, old)
        if problems and old.get("fingerprint") == digest:  # same recipe, but the files are not all there
            logger.warning(f"{out}: rebuilding, the outputs differ from the manifest ({len(problems)} file(s): "
                           f"{'; '.join(problems[:3])}{' …' if len(problems) > 3 else ''})")
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
        from cavpref.data_prep.readers import exclusion_reason

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
    from cavpref.data_prep.tasks.context import TableView

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
    stats["records_reconcile"] = stats["records_read"] == stats["records_kept"] + dropped_total(stats)

    items, prefs, skips = generate(valid, tables, config)
    items, prefs, split_dropped = assign_splits(items, prefs, config)
    if config.score:
        prefs = {s: score(p, config) for s, p in prefs.items()}
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
        "files": output_files(out),
        "output_only": {k: getattr(config, k) for k in _NOT_FINGERPRINTED},
        "seconds": round(time.perf_counter() - t0, 3),
        "versions": versions(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return {**stats, "up_to_date": False}


def versions() -> dict[str, str]:
    import platform

    import datasets
    import transformers

    import cavpref

    return {
        "python": platform.python_version(),
        "cavpref": getattr(cavpref, "__version__", "?"),
        "datasets": datasets.__version__,
        "transformers": transformers.__version__,
    }


def build_tables(records: list[QARecord], config: PrepConfig, out: Path):
    from cavpref.data_prep.tables import DEFAULT_FILENAME, TablesConfig, apply_overrides
    from cavpref.data_prep.tables import build_tables as derive

    tables = derive(records, ontology=config.audioset_ontology,
                    config=TablesConfig(group_level=config.tables_group_level))
    if config.tables_override:
        tables = apply_overrides(tables, config.tables_override)
    tables.save(out / DEFAULT_FILENAME)
    return tables


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


def dropped_total(stats: dict[str, Any]) -> int:
    """Records read but not kept: reader skips, single-modality exclusions, invalid, alignment drops."""
    return (
        stats["reader_skipped_total"]
        + sum(stats["excluded_single_modality"].values())
        + sum(stats["invalid_skipped"].values())
        + sum(stats.get("alignment_dropped", {}).values())  # absent in outputs of older builds
    )


def scoring_config(config: PrepConfig):
    from transformers import HfArgumentParser

    from cavpref.data_prep.scoring import ScoringConfig

    if config.scoring_config:
        return HfArgumentParser(ScoringConfig).parse_yaml_file(config.scoring_config)[0]
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


def task_stats(skips: dict[str, Counter], items: dict[str, list], split_dropped: Counter, config: PrepConfig):
    made = Counter(it.task for split in items.values() for it in split)
    out = {}
    for task in config.tasks:
        sk = Counter(skips[task])
        eligible = sk.pop("eligible", 0)
        generated = eligible - sum(sk.values())
        out[task] = {
            "eligible": eligible,
            "generated": generated,
            "skipped": dict(sorted(sk.items())),
            "split_dropped_items": split_dropped[task],
            "items": made[task],
            "reconcile": generated * len(config.settings) == made[task] + split_dropped[task],
        }
    return out


def llm_fallbacks(items: dict[str, list[BenchmarkItem]]) -> dict[str, int]:
    """reason -> COT-Stitch records whose LLM negatives failed (template negatives used instead)."""
    seen: dict[str, str] = {}
    for split_items in items.values():
        for it in split_items:
            how = str(it.meta.get("negatives", ""))
            if it.task == "COT-Stitch" and how.startswith("template ("):
                seen[it.meta.get("record", it.id)] = how[len("template (") : -1]
    return dict(sorted(Counter(seen.values()).items()))


def count_table(items: dict[str, list[BenchmarkItem]]) -> dict[str, dict[str, dict[str, dict[str, int]]]]:
    """{task: {source: {category: {split: items}}}} (both settings counted)."""
    table: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(Counter)))
    for split, split_items in items.items():
        for it in split_items:
            table[it.task][it.source][it.category][split] += 1
    return json.loads(json.dumps(table, sort_keys=True))


def format_stats(stats: dict[str, Any], splits: list[str]) -> str:
    """The printed summary: records accounting, per task × source × category × split counts, skips."""
    lines = [
        (
            f"records: read {stats['records_read']}  kept {stats['records_kept']}  reader-skipped "
            f"{stats['reader_skipped_total']}  "
            f"single-modality {sum(stats['excluded_single_modality'].values())}  "
            f"invalid {sum(stats['invalid_skipped'].values())}  "
            f"alignment {sum(stats.get('alignment_dropped', {}).values())}  "
            f"(reconciles: {stats['records_reconcile']})"
        )
    ]
    for name in ("reader_skipped", "excluded_single_modality", "invalid_skipped", "alignment_dropped"):
        lines += [f"  {name}: {n:>7}  {reason}" for reason, n in stats.get(name, {}).items()]
    head = (
        f"{'task':<11} {'source':<11} {'category':<16}"
        + "".join(f"{s:>11}" for s in splits)
        + f"{'total':>9}"
    )
    lines += ["", head, "-" * len(head)]
    for task, by_source in stats["counts"].items():
        for source, by_cat in by_source.items():
            for cat, by_split in by_cat.items():
                row = [by_split.get(s, 0) for s in splits]
                lines.append(
                    f"{task:<11} {source:<11} {cat:<16}" + "".join(f"{n:>11}" for n in row) + f"{sum(row):>9}"
                )
    lines.append("")
    for task, t in stats["tasks"].items():
        lines.append(
            f"{task:<11} eligible {t['eligible']:>7}  generated {t['generated']:>7}  items {t['items']:>7}"
            f"  split-dropped {t['split_dropped_items']:>5}  (reconciles: {t['reconcile']})"
        )
        lines += [f"{'':<13}skipped {n:>7}  {reason}" for reason, n in t["skipped"].items()]
        lines += [f"{'':<13}llm fallback {n:>5}  {reason}" for reason, n in t.get("llm_fallback", {}).items()]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- merge


def _add(a: Any, b: Any) -> Any:
    """Sum two stats trees (counts add, reconcile flags AND, a missing side counts as nothing)."""
    if isinstance(a, dict) or isinstance(b, dict):
        a, b = a or {}, b or {}
        return {k: _add(a.get(k), b.get(k)) for k in sorted(set(a) | set(b))}
    if a is None or b is None:
        return b if a is None else a
    return (a and b) if isinstance(a, bool) else a + b


def merge(output_dir: str | os.PathLike, shard_dirs: list[str]) -> dict[str, Any]:
    """Merge the outputs of ``num_shards`` shard builds into ``output_dir``.

    The shards must come from one config (apart from ``shard_index``), the same inputs and code, and cover
    every shard index once. Rows are re-sorted by id and counts summed, so the result does not depend on
    the order of ``shard_dirs`` and equals the single-process build.
    """
    from cavpref.data_prep.tables import DEFAULT_FILENAME
    from cavpref.data_prep.tasks.schema import load_outputs

    if not shard_dirs:
        raise ValueError("merge: no shard folders given")
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
        stats = _add(stats, shard_stats) if stats else shard_stats
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
    }
    (out / "manifest.json").write_text(json.dumps(merged, indent=1, sort_keys=True) + "\n")
    return stats
