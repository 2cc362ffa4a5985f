"""Reading the configured sources and validating each record before any generator sees it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from cavpref.data import CATEGORIES
from cavpref.data_prep.build.config import WORLD_LAYOUT, PrepConfig
from cavpref.data_prep.readers import READERS, ReaderConfig, read_source
from cavpref.data_prep.records import EVENT_SOURCES, SOURCES, QARecord
from cavpref.media.probe import probe
from cavpref.media.spec import MediaError, from_json, resolve_path, sources
from cavpref.media.timeline import build_plan


class PrepError(ValueError):
    """A record the build cannot use; names the annotation file, the record index and the field."""

    def __init__(self, record: QARecord, field_name: str, problem: str, kind: str | None = None):
        self.reason = f"{field_name}: {kind or problem}"  # the count key of a skip: no per-record values
        super().__init__(
            f"{record.file}: record {record.index} ({record.source_id}): field {field_name!r}: {problem}"
        )


SOURCE_KEYS = (*READERS, "audioset_labels", "audioset_ontology", "tables_override", "scoring_config")


def _world_problem(world: Path) -> str:
    """Why ``world`` holds none of the layout ``cavpref world`` writes, and what to pass instead."""
    if (world / "manifest.json").is_file() and (world / "preferences").is_dir():
        return "is a `cavpref prep` output folder, not a world: pass the folder `cavpref world --out` wrote"
    inner = sorted(p.parent.name for p in world.glob("*/world.json"))
    hint = f"; did you mean {world / inner[0]}?" if inner else ""
    layout = ", ".join(v for k, v in WORLD_LAYOUT.items() if k in READERS)
    return f"holds none of a `cavpref world` folder's sources ({layout}){hint}"


def check_sources(config: PrepConfig) -> None:
    """The inputs exist before anything is claimed or read (``config`` resolved): a mistyped ``world``
    would otherwise read 0 records, build nine empty tasks and report success. ValueError naming the key."""
    if config.world is not None:
        world = Path(config.world)
        if not world.exists():
            raise ValueError(f"world {config.world!r}: no such folder")
        if not world.is_dir():
            raise ValueError(f"world {config.world!r}: not a folder")
    for key in SOURCE_KEYS:
        value = getattr(config, key)
        for f in [value] if isinstance(value, str) else value or []:
            if not Path(f).is_file():
                what = "a folder, not a file" if Path(f).is_dir() else "no such file"
                raise ValueError(f"{key} {str(f)!r}: {what}")
    if not any(getattr(config, source) for source in READERS):
        if config.world is not None:
            raise ValueError(f"world {config.world!r} {_world_problem(Path(config.world))}")
        raise ValueError(
            "no sources: pass --world DIR (a `cavpref world` folder) or annotation files "
            "(--music_avqa / --avqa / --audioset / --custom FILE ...)"
        )


def read_records(config: PrepConfig, stats: dict) -> list[QARecord]:
    """Every configured source file through its reader; reader skips counted per source and reason."""
    reader_cfg = ReaderConfig(
        data_root=config.data_root, on_error=config.on_error, default_category=config.default_category
    )
    records, skipped, n_in = [], Counter(), 0
    for source in READERS:
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
    if not n_in:  # files that hold no record at all (an empty JSON list, a header-only CSV)
        files = [str(f) for source in READERS for f in getattr(config, source)]
        raise ValueError(f"no records in {', '.join(files)}: every source file is empty")
    # reader skips have no record key to shard by: shard 0 reports them
    stats["reader_skipped"] = dict(sorted(skipped.items())) if config.shard_index == 0 else {}
    stats["reader_skipped_total"] = sum(stats["reader_skipped"].values())
    return records


CUSTOM_SOURCES = ("custom", "custom_clips")  # the user's JSONL: time ranges and tracks nobody has checked


def _check_decodable(record: QARecord, spec, config: PrepConfig) -> None:
    """A custom line's clip must decode: its time range inside the file(s) (probed), and a clip line, which
    gives COT-Stitch / COT-Swap / CAT their sound event, must have a sound. Checked here, once per record,
    instead of failing the first training batch that draws the item."""

    def lookup(path: str):
        full = resolve_path(config.data_root, path)
        return full, probe(full)

    try:
        plan = build_plan(spec, lookup)
    except MediaError as err:
        where = "end" if "outside the clip" in str(err) else "media"
        kind = "clip range past the end of the file" if where == "end" else "undecodable media"
        raise PrepError(record, where, str(err), kind) from None
    if record.source == "custom_clips" and plan.audio is None:
        raise PrepError(
            record,
            "audio",
            "a clip line needs a sound (its event): the video has no audio track and the line names no "
            "'audio' file; add one",
            "clip line without sound",
        )


def validate(record: QARecord, view, config: PrepConfig, present: dict[str, bool | tuple[str, str]]) -> None:
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
                except MediaError as err:  # a symlink out of the data root or in a loop: say so, as eval does
                    outside = "outside the data root" in str(err)
                    kind = "media path outside the data root" if outside else "media path cannot be resolved"
                    present[s.path] = (str(err), kind)
            if isinstance(present[s.path], tuple):
                raise PrepError(record, "media", *present[s.path])
            if not present[s.path]:
                raise PrepError(
                    record,
                    "media",
                    f"missing media file {s.path!r} (under {config.data_root})",
                    "missing media file",
                )
        if record.source in CUSTOM_SOURCES:
            _check_decodable(record, spec, config)
    if record.source in EVENT_SOURCES:
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
