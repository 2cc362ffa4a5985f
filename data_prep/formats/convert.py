"""``cavpref data import|export``: other trainers' SFT / preference files <-> cavpref preference rows.

Export writes a prep build's (or any) preference rows as LLaMA-Factory, ms-swift or TRL files, every cavpref
column that the format has no place for kept beside it as a ``cavpref_*`` column (the anchors CAVPref needs,
the β deltas, the task): the other trainers ignore those columns and train plain DPO / SFT on the visible pair;
an import reads them back, so export -> import gives the rows back equal. Media those trainers cannot express
as whole files (a clip cut, joined or mixed: COT-Stitch, COT-Swap, CAT) are written out once per distinct
MediaSpec under ``media/``. Import reads a trainer's SFT or preference file into cavpref rows; a video plus a
separate audio file becomes one ``Combine(video=..., audio=...)``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

from tqdm.auto import tqdm

from cavpref import task_registry
from cavpref.data import PreferenceExample
from cavpref.data_prep.build.fingerprint import file_sha256
from cavpref.data_prep.formats import common, conditional, llamafactory, swift, trl
from cavpref.data_prep.formats.common import EXTRA_COLUMNS, EXTRA_PREFIX, Fail, ReaderError, Turn
from cavpref.data_prep.tasks.schema import PREFERENCE_FEATURES, to_dataset
from cavpref.manifest import prep_manifest
from cavpref.media.materialize import materialize
from cavpref.media.spec import (
    MediaError,
    Source,
    from_json,
    has_audio,
    has_video,
    mute,
    resolve_path,
    sources,
)
from cavpref.output_dir import OutputArguments, output_dir

FORMATS = {"llamafactory": llamafactory, "swift": swift, "trl": trl}
FORMAT = Literal[tuple(FORMATS)]


@dataclass
class ExportArgs(OutputArguments):
    """``cavpref data export``: preference rows -> another trainer's files."""

    format: FORMAT = field(kw_only=True, metadata={"help": "llamafactory | swift | trl (required)"})
    data: str = field(
        default="", metadata={"help": "a prep output folder, or a preference folder (save_to_disk)"}
    )
    output_dir: str = field(default="", metadata={"help": "new folder for the files (required)"})
    media_root: str | None = field(
        default=None,
        metadata={"help": "folder the rows' media paths are relative to (default: prep's data_root)"},
    )
    splits: list[str] | None = field(default=None, metadata={"help": "splits to export (default: all)"})
    kind: Literal["preference", "sft"] = field(
        default="preference", metadata={"help": "preference pairs, or SFT rows (the chosen answer only)"}
    )
    materialize: bool = field(
        default=True,
        metadata={
            "help": "write media the formats cannot name as whole files (cut / joined / mixed) to media/"
        },
    )
    paths: Literal["absolute", "relative"] = field(
        default="absolute", metadata={"help": "media paths in the files: absolute, or relative to output_dir"}
    )
    name: str = field(
        default="cavpref", metadata={"help": "dataset name (file names, dataset_info.json entries)"}
    )
    anchor_rows: bool = field(
        default=False,
        metadata={
            "help": "swift: each anchor pair also as an ms-swift row (the same response, rejected_videos / "
            "rejected_audios the perturbed media): ms-swift then trains them too (false: the plain DPO pairs)"
        },
    )

    def __post_init__(self):
        if self.anchor_rows and self.format != "swift":
            raise ValueError(
                f"--anchor_rows is ms-swift's layout (rejected_videos / rejected_audios), not {self.format}'s"
            )


@dataclass
class ImportArgs(OutputArguments):
    """``cavpref data import``: another trainer's SFT / preference file -> cavpref preference rows."""

    format: FORMAT = field(kw_only=True, metadata={"help": "llamafactory | swift | trl (required)"})
    files: list[str] = field(default_factory=list, metadata={"help": "JSON array or JSONL files"})
    output_dir: str = field(default="", metadata={"help": "new folder: preferences/, stats.json, README.md"})
    dataset_info: str | None = field(
        default=None, metadata={"help": "llamafactory: dataset_info.json describing the file (with dataset)"}
    )
    dataset: str | None = field(default=None, metadata={"help": "llamafactory: the entry of dataset_info"})
    media_dir: str | None = field(
        default=None,
        metadata={"help": "relative media paths are under this folder (default: the file's folder)"},
    )
    data_root: str | None = field(
        default=None,
        metadata={
            "help": "the rows' media paths are relative to it (default: media_dir); train "
            "with media_root set to it"
        },
    )
    task: str = field(
        default="CLEAN", metadata={"help": "task of rows without cavpref_task (CLEAN: plain pairs)"}
    )
    conditional_task: str | None = field(
        default=None,
        metadata={
            "help": "swift: task of rows given anchors by rejected_videos / rejected_audios (default: by their "
            "anchors, CLEAN-V | CLEAN-A | CLEAN-VA)"
        },
    )
    split: str = field(default="train", metadata={"help": "split name of the imported rows"})
    use_audio_in_video: bool = field(
        default=True,
        metadata={
            "help": "a video without an audio file is heard through its own track (false: shown muted)"
        },
    )
    system: Literal["error", "drop"] = field(
        default="error",
        metadata={"help": "a system prompt (cavpref rows have none): error, or drop it (counted)"},
    )
    on_error: Literal["raise", "skip"] = field(
        default="raise", metadata={"help": "a bad record: raise or skip"}
    )


# ----------------------------------------------------------------------------- export


def _preferences(data: str):
    """(folder, DatasetDict) of a prep output folder (its ``preferences/``) or a preference folder."""
    from datasets import DatasetDict, load_from_disk

    folder = Path(data) / "preferences" if (Path(data) / "preferences").is_dir() else Path(data)
    loaded = load_from_disk(str(folder))
    return folder, loaded if isinstance(loaded, DatasetDict) else DatasetDict({"train": loaded})


def _write_media(media: str, root: str, folder: Path) -> tuple[list[str], list[str]]:
    """A spec the formats cannot name as whole files, written once: its picture as a silent mp4, its sound as
    a wav (the layout of LLaMA-Factory's video + audio demo), named by the spec's hash."""
    import soundfile as sf

    from cavpref.media.decode import decode

    spec = from_json(media)
    stem = folder / hashlib.sha256(media.encode()).hexdigest()[:16]
    videos, audios = [], []
    if has_video(spec):
        videos.append(str(materialize(mute(spec), root, stem.with_suffix(".mp4"))))
    if has_audio(spec):
        decoded = decode(spec, root, frames=None)
        stem.parent.mkdir(parents=True, exist_ok=True)
        sf.write(stem.with_suffix(".wav"), decoded.audio, decoded.sample_rate)
        audios.append(str(stem.with_suffix(".wav")))
    return videos, audios


def _imported_root(folder: Path, manifest: dict | None) -> str | None:
    """The media root a ``cavpref data import`` output names (its manifest's ``data_root``), when its rows
    share one: an import's own output exports without ``--media_root``."""
    roots = (manifest or {}).get("data_root")
    if isinstance(roots, list) and len(roots) > 1:
        raise ValueError(
            f"{folder}: the imported rows' media are under several roots {roots}: pass --media_root"
        )
    return roots[0] if isinstance(roots, list) and roots and Path(roots[0]).is_dir() else None


def _streams(root: str, path: str) -> tuple[bool, bool]:
    """(has video, has audio) of a clip's file under the media root (probed once, cached by ``probe``)."""
    from cavpref.media.probe import probe

    info = probe(resolve_path(root, path))  # a MediaError names the file
    return info.has_video, info.has_audio


def export_dataset(args: ExportArgs) -> dict[str, Any]:
    """Write ``args.data``'s preference rows as ``args.format`` files into ``args.output_dir``; returns the
    summary also written to ``export.json``."""
    if not args.data or not args.output_dir:
        raise ValueError("cavpref data export needs --data and --output_dir")
    folder, splits = _preferences(args.data)
    _, manifest = prep_manifest(str(folder))
    root = (
        args.media_root
        or ((manifest or {}).get("config") or {}).get("data_root")
        or _imported_root(folder, manifest)
    )
    if not root:
        raise ValueError(f"{folder}: no prep manifest names the media root: pass --media_root")
    missing = sorted(set(args.splits or ()) - set(splits))
    if missing:
        raise ValueError(f"{folder}: no split(s) {missing} (have {list(splits)})")
    if manifest and isinstance(
        manifest.get("tasks"), dict
    ):  # a task added by a module of its own, as training
        task_registry.declare_table(manifest["tasks"], where=str(folder))
    with output_dir(
        args.output_dir, "data export", overwrite=args.overwrite_output_dir, inputs={"data": str(folder)}
    ) as claimed:
        return _export(args, folder, splits, root, Path(claimed).resolve())


def _files_of(where: str, args: ExportArgs, root: str, out: Path, written: dict, media: str):
    """(videos, audios) naming ``media`` in the exported files: its whole files, or the files it was
    materialized to (once per distinct MediaSpec, ``written``); absolute, or relative to ``out``."""
    try:  # whole files listed only for the streams they have (a silent video is not its own audio track)
        found = common.spec_files(from_json(media), lambda path: _streams(root, path))
    except MediaError as err:
        raise ValueError(f"{where}: field 'media': {err}") from None
    if found is None and not args.materialize:
        raise ValueError(
            f"{where}: its media cut, join or mix clips ({media}); export with --materialize true"
        )
    if found is None and media not in written:
        written[media] = _write_media(media, root, out / "media")
    videos, audios = (
        written[media] if found is None else tuple([str(Path(root, p).resolve()) for p in x] for x in found)
    )
    if args.paths == "relative":
        videos, audios = ([os.path.relpath(p, out) for p in x] for x in (videos, audios))
    return list(videos), list(audios)


def _export(args: ExportArgs, folder: Path, splits, root: str, out: Path) -> dict[str, Any]:
    fmt = FORMATS[args.format]
    written: dict[str, tuple[list[str], list[str]]] = {}
    files, counts = {}, Counter()
    for split in args.splits or list(splits):
        rows = []
        for row in tqdm(splits[split], desc=f"export {split}", unit="row", disable=None):
            example = PreferenceExample.from_row(row)
            files_of = partial(_files_of, f"{folder}[{split}] row {example.id}", args, root, out, written)
            videos, audios = files_of(example.media)
            found = common.spec_files(from_json(example.media), lambda path: _streams(root, path))
            extras = {EXTRA_PREFIX + k: v for k, v in example.to_row().items() if k not in common.CARRIED}
            rejected = example.rejected if args.kind == "preference" else None
            flag = (
                extras.pop(EXTRA_PREFIX + common.FLAG) if common.FLAG in getattr(fmt, "NATIVE", ()) else None
            )
            anchors: list[Turn] = []
            if args.anchor_rows and args.kind == "preference":  # the anchors as ms-swift rows
                kinds, anchors = conditional.export_rows(example, files_of)
                extras = conditional.main_row_extras(extras, kinds)
                for turn in anchors:  # shown as their row is
                    turn.use_audio_in_video = flag
            main = Turn(example.prompt, example.chosen, rejected, videos, audios, extras)
            main.use_audio_in_video = flag
            rows.append(fmt.write_row(main))
            rows.extend(fmt.write_row(t) for t in anchors)
            counts["materialized rows" if found is None else "rows with whole-file media"] += 1
            if anchors:
                counts["anchor rows (rejected_videos / rejected_audios)"] += len(anchors)
        files[split] = f"{args.name}_{split}.jsonl"
        common.write_jsonl(out / files[split], rows)
    if args.format == "llamafactory":  # the dataset_info.json LLaMA-Factory reads the files through
        info = {
            f"{args.name}_{s}": llamafactory.info_entry(f, args.kind == "preference")
            for s, f in files.items()
        }
        (out / "dataset_info.json").write_text(json.dumps(info, indent=2) + "\n")
    summary = {
        "format": args.format,
        "doc": fmt.DOC,
        "kind": args.kind,
        "data": str(folder),
        "media_root": str(Path(root).resolve()),
        "files": files,
        "rows": {s: len(splits[s]) for s in files},
        "media": dict(counts) | {"files written": sum(len(v) + len(a) for v, a in written.values())},
        "cavpref_columns": [
            c for c in EXTRA_COLUMNS if c[len(EXTRA_PREFIX) :] not in getattr(fmt, "NATIVE", ())
        ],
    }
    (out / "export.json").write_text(json.dumps(summary, indent=1) + "\n")
    from cavpref.data_prep.cards import export_card

    export_card(out, summary)
    return summary


# ----------------------------------------------------------------------------- import


def _inputs(args: ImportArgs) -> tuple[list[str], Any]:
    """(data files, the LLaMA-Factory layout or None)."""
    if args.format == "llamafactory" and args.dataset_info:
        if not args.dataset:
            raise ValueError("--dataset_info needs --dataset (the entry naming your file)")
        layout, files = llamafactory.load_info(args.dataset_info, args.dataset)
        return files, layout
    if not args.files:
        raise ValueError("no input files (--files FILE ..., or --dataset_info + --dataset for llamafactory)")
    return list(args.files), None


def _example(turn: Turn, args: ImportArgs, paths: tuple[list[str], list[str]], rid: str, fail: Fail):
    if turn.extras:  # written by cavpref: the row comes back from its own columns, the visible text wins
        in_rows = turn.extras.get(conditional.IN_ROWS) or []  # anchors that follow as conditional rows
        spared = {f"{EXTRA_PREFIX}{k}_{p}" for k in in_rows for p in ("response", "clean", "perturbed")}
        spared |= set(common.OPTIONAL_EXTRAS)
        missing = [c for c in EXTRA_COLUMNS if c not in turn.extras and c not in spared]
        if missing:
            raise fail(missing[0], "missing", "a row with cavpref_* columns needs all of them")
        common.check_extras({k: v for k, v in turn.extras.items() if k != conditional.IN_ROWS}, fail)
        row = {k[len(EXTRA_PREFIX) :]: v for k, v in turn.extras.items() if k != conditional.IN_ROWS}
        row.update(prompt=turn.prompt, chosen=turn.chosen, rejected=turn.rejected or "")
        if turn.use_audio_in_video is not None:  # the format's own column (ms-swift) wins
            row[common.FLAG] = turn.use_audio_in_video
        try:
            return PreferenceExample.from_row(row), "from cavpref_* columns"
        except (ValueError, TypeError) as err:
            raise fail(EXTRA_PREFIX + "task", "not a cavpref row", str(err)) from None
    flag = args.use_audio_in_video if turn.use_audio_in_video is None else turn.use_audio_in_video
    media = common.files_spec(*paths, flag, fail)
    if not has_audio(media) or not has_video(media):
        how = "muted video" if has_video(media) else "audio only"
    else:
        how = "video with its own audio" if isinstance(media, Source) else "video + separate audio"
    example = PreferenceExample(
        id=rid,
        task=args.task,
        source=args.format,
        category="",
        prompt=turn.prompt,
        media=media,
        chosen=turn.chosen,
        rejected=turn.rejected or "",
        source_ids=sorted({s.path for s in sources(media)}),
        use_audio_in_video=turn.use_audio_in_video,  # the row's own, for the model I/O; None: the recipe's
    )
    return example, how


def _exported_root(folder: Path) -> str | None:
    try:
        return json.loads((folder / "export.json").read_text())["media_root"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def import_dataset(args: ImportArgs) -> dict[str, Any]:
    """Read ``args.files`` (``args.format``) into ``output_dir/preferences`` (a DatasetDict with one split,
    ``args.split``), with ``stats.json`` (in = imported + skipped), ``manifest.json`` and a dataset card."""
    if not task_registry.is_task(args.task):
        raise ValueError(f"--task {args.task!r} is not a declared task ({task_registry.task_names()})")
    if args.conditional_task is not None:
        conditional.declare()
        if not task_registry.is_task(args.conditional_task):
            raise ValueError(
                f"--conditional_task {args.conditional_task!r} is not a declared task ({task_registry.task_names()})"
            )
    files, layout = _inputs(args)
    names = Counter(Path(f).name for f in files)
    twice = sorted({f for f in files if names[Path(f).name] > 1})
    if twice:  # row ids are format:file name:index, so they would collide (and a file given twice doubles)
        raise ValueError(
            f"--files {twice}: the same file name more than once; row ids are keyed by file name: "
            "pass each file once, or rename a copy"
        )
    sources = {f"--files[{i}]": f for i, f in enumerate(files)} | {"--dataset_info": args.dataset_info}
    with output_dir(
        args.output_dir, "data import", overwrite=args.overwrite_output_dir, inputs=sources
    ) as claimed:
        return _import(args, files, layout, Path(claimed).resolve())


def _import(args: ImportArgs, files: list[str], layout: Any, out: Path) -> dict[str, Any]:
    fmt = FORMATS[args.format]
    rows, skipped, counts, n_in = [], Counter(), Counter(), 0
    roots = set()
    anchors, expected = [], {}  # conditional rows to attach; cavpref rows whose anchors follow as rows
    for file in files:
        base = Path(args.media_dir).resolve() if args.media_dir else Path(file).resolve().parent
        root = Path(args.data_root).resolve() if args.data_root else base
        # rows exported by cavpref keep MediaSpecs relative to the export's media root (export.json says which)
        exported = _exported_root(Path(file).parent)
        records = common.read_records(file)
        if layout is None and args.format == "llamafactory":
            layout = llamafactory.Layout.guess(records[0][1] if records else {})
        for index, (line, rec) in enumerate(tqdm(records, desc=f"import {Path(file).name}", disable=None)):
            n_in += 1
            fail = Fail(file, index, line)
            try:
                if isinstance(rec, ReaderError):
                    raise rec
                if not isinstance(rec, dict):
                    raise fail(None, "record is not a JSON object", type(rec).__name__)
                turn = fmt.read_row(rec, layout, fail)
                turn.extras = {k: v for k, v in rec.items() if k.startswith(EXTRA_PREFIX)}
                if turn.system is not None:
                    if args.system == "error":
                        raise fail(
                            "system", "a system prompt", "cavpref rows have none: --system drop drops it"
                        )
                    counts["system prompts dropped"] += 1
                lists = {
                    kind: None
                    if files_ is None or conditional.exact(turn)
                    else [common.relative_to(root, base, p, fail, kind) for p in files_]
                    for kind, files_ in (
                        ("videos", turn.videos),
                        ("audios", turn.audios),
                        ("rejected_videos", turn.rejected_videos),
                        ("rejected_audios", turn.rejected_audios),
                    )
                }
                anchor = None
                if conditional.is_conditional(turn):  # the same response under other media: an anchor pair
                    conditional.declare()
                    anchor = conditional.read(turn, lists, args.use_audio_in_video, fail)
                    if not anchor.has_pair:  # it joins its preference row once every row is read
                        anchors.append(anchor)
                        roots.add(
                            str(root)
                            if anchor.of is None
                            else (exported or "the media_root the rows were exported with")
                        )
                        counts["anchor rows (rejected_videos / rejected_audios)"] += 1
                        continue
                    turn.extras = {}  # a foreign row: its files give the media
                # a row written by cavpref takes its MediaSpec from cavpref_media instead
                paths = ([], []) if turn.extras else (lists["videos"], lists["audios"])
                example, how = _example(turn, args, paths, f"{args.format}:{Path(file).name}:{index}", fail)
                if anchor is not None:
                    conditional.put(example, anchor, args.conditional_task)
                if turn.extras.get(conditional.IN_ROWS):
                    expected[example.id] = (list(turn.extras[conditional.IN_ROWS]), fail)
                if turn.extras:
                    common.check_exported_media(example.media, exported, fail)
            except ReaderError as err:
                if args.on_error == "raise":
                    raise
                skipped[err.reason] += 1
                continue
            rows.append(example)
            roots.add(
                (exported or "the media_root the rows were exported with") if turn.extras else str(root)
            )
            counts[how] += 1
            counts["preference pairs" if example.rejected else "sft rows"] += 1
    attacher, attached = conditional.Attacher(rows, args.conditional_task), 0
    for anchor in anchors:
        try:
            attacher.add(anchor)
            attached += 1
        except ReaderError as err:
            if args.on_error == "raise":
                raise
            skipped[err.reason] += 1
    conditional.check_attached(rows, expected)
    if anchors or expected:
        counts.update(Counter(f"task {r.task}" for r in rows if r.task in conditional.TASKS))
    if not rows:  # nothing to train on: an error, never an empty dataset written with exit 0
        why = f"all {n_in} skipped ({dict(skipped)})" if n_in else "the file(s) hold no record"
        raise ValueError(f"{', '.join(files)}: no record imported: {why}")
    from datasets import DatasetDict

    DatasetDict({args.split: to_dataset(rows, PREFERENCE_FEATURES)}).save_to_disk(str(out / "preferences"))
    inputs = {f: file_sha256(f) for f in [*files, *([args.dataset_info] if args.dataset_info else [])]}
    basis = {"args": asdict(args) | {"output_dir": None, "overwrite_output_dir": None}, "inputs": inputs}
    stats = {
        "records_read": n_in,
        "imported": len(rows),
        "skipped": dict(sorted(skipped.items())),
        "anchor_rows": attached,
        "reconcile": n_in == len(rows) + attached + sum(skipped.values()),
        "counts": dict(sorted(counts.items())),
        "data_root": sorted(roots),
        "tasks": dict(sorted(Counter(r.task for r in rows).items())),
    }
    manifest = {
        "fingerprint": hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest(),
        **basis,
        "format": args.format,
        "doc": fmt.DOC,
        "tasks": task_registry.task_table(sorted({r.task for r in rows})),
        "data_root": sorted(roots),  # what `cavpref data export` of this folder resolves media against
    }
    (out / "stats.json").write_text(json.dumps(stats, indent=1, sort_keys=True) + "\n")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    from cavpref.data_prep.cards import import_card

    import_card(out, stats, manifest)
    return stats
