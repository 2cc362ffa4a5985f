"""The dataset cards (README.md) of data_prep's outputs: a prep build, an import, an export.

Each says what the folder holds (tasks, counts, the switch table, sources), how it was made (config,
fingerprint, code and library versions) and, for the user's own data, what could not be derived — the facts
``stats.json`` and ``manifest.json`` hold, in a form a reader of a pushed dataset sees first. Written with
``cavpref.cards`` (huggingface_hub's ``DatasetCard``); ``DatasetCard.load(folder / "README.md").push_to_hub(repo)``
or ``huggingface_hub.upload_folder`` carry it unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from huggingface_hub import DatasetCardData

from cavpref.cards import PAPER, TAGS, md_table, write_card
from cavpref.redact import public_config

DOCS = "docs/data_prep.md (columns: 'Output layout and schema')"
IGNORED = (
    "Every `cavpref_*` column: the task, the anchor responses and MediaSpecs CAVPref's visual / audio terms need, "
    "the β deltas, the original MediaSpec. LLaMA-Factory, ms-swift and TRL train plain DPO (or SFT) on the "
    "visible pair; `cavpref data import` reads the columns back, so the rows return unchanged."
)


def _configs(out: Path, tasks: list[str], splits: list[str], formats: list[str]) -> list[dict[str, Any]]:
    """Hub ``configs`` metadata (``load_dataset(repo, name)``) over the Parquet (else JSONL) files."""
    kind = "parquet" if "parquet" in formats else "jsonl" if "jsonl" in formats else None
    if kind is None:
        return []
    named = [("preferences", f"{kind}/preferences")] + [
        (f"benchmark-{t}", f"{kind}/benchmark/{t}") for t in tasks
    ]
    return [
        {"config_name": name, "data_files": [{"split": s, "path": f"{folder}/{s}.{kind}"} for s in splits]}
        for name, folder in named
        if (out / folder).is_dir()
    ]


def prep_card(out: str | Path, stats: dict[str, Any], manifest: dict[str, Any]) -> Path:
    """The card of a ``cavpref prep`` build (or merge) in ``out``."""
    out, cfg = Path(out), public_config(manifest["config"])  # no URL credentials or registered keys in a card
    tasks = list(stats["tasks"])
    present = {
        s
        for by_src in stats["counts"].values()
        for by_cat in by_src.values()
        for c in by_cat.values()
        for s in c
    }
    splits = [s for s in ("train", "validation", "test") if s in present]
    paper, released = manifest["switch_table"]["paper"], manifest["switch_table"]["released"]
    facts = manifest.get("tasks") or {}  # the declared tasks' facts (a plugin's too, without importing it)

    def per_split(task: str) -> list[int]:
        cells = [c for by_cat in stats["counts"].get(task, {}).values() for c in by_cat.values()]
        return [sum(c.get(s, 0) for c in cells) for s in splits]

    task_rows = [
        [
            t,
            facts.get(t, {}).get("dimension", ""),
            tuple(paper.get(t, ())),
            tuple(released.get(t, ())),
            *per_split(t),
            stats["tasks"][t]["generated"],
            sum(stats["tasks"][t]["skipped"].values()),
        ]
        for t in tasks
    ]
    count_rows = [
        [t, src, cat, *[by_split.get(s, 0) for s in splits]]
        for t, by_src in stats["counts"].items()
        for src, by_cat in by_src.items()
        for cat, by_split in by_cat.items()
    ]
    dropped = ("reader_skipped", "excluded_single_modality", "invalid_skipped", "alignment_dropped")
    record_rows = [["read", stats["records_read"]], ["kept", stats["records_kept"]]]
    record_rows += [[f"{k}: {reason}", n] for k in dropped for reason, n in stats.get(k, {}).items()]
    record_rows += [["reconciles (read = kept + dropped)", stats["records_reconcile"]]]
    sources = [[f, sha[:16]] for f, sha in sorted(manifest.get("inputs", {}).items())]
    what = (
        f"AVTrustBench-style benchmark items and CAVPref preference rows ({PAPER}), built by `cavpref prep` from "
        f"the sources below. Media are MediaSpecs (JSON) over files under the data root `{cfg.get('data_root')}`; "
        f"columns: {DOCS}."
    )
    sections = [
        ("What this is", what),
        (
            "Tasks",
            md_table(
                [
                    "task",
                    "dimension",
                    "(η, γ) paper",
                    "(η, γ) released",
                    *[f"items {s}" for s in splits],
                    "records generated",
                    "records skipped",
                ],
                task_rows,
            ),
        ),
        ("Preference rows", md_table(["split", "rows"], sorted(stats.get("preferences", {}).items()))),
        (
            "Counts (task × source × category, items of both settings)",
            md_table(["task", "source", "category", *splits], count_rows),
        ),
        ("Records", md_table(["", "records"], record_rows)),
        (
            "Your data: what could not be derived",
            "\n".join(f"- {x}" for x in (stats.get("custom") or {}).get("not_derived", [])),
        ),
        ("Sources", md_table(["input file", "sha256 (first 16)"], sources)),
        (
            "How it was built",
            md_table(
                ["", "value"],
                [
                    ["command", "`cavpref prep` with the config below (`manifest.json` holds it whole)"],
                    ["fingerprint", manifest["fingerprint"]],
                    ["code sha256", manifest.get("code", "")],
                    *[[k, v] for k, v in sorted((manifest.get("versions") or {}).items())],
                ],
            ),
        ),
        ("Config", md_table(["key", "value"], sorted(cfg.items()))),
    ]
    data = DatasetCardData(
        pretty_name=f"cavpref prep: {out.name}",
        tags=sorted({*TAGS, "dpo", "preference"}),
        configs=_configs(out, tasks, splits, cfg.get("formats", [])) or None,
    )
    return write_card(out, data, f"{out.name}: AVTrustBench tasks and CAVPref preference data", sections)


def import_card(out: str | Path, stats: dict[str, Any], manifest: dict[str, Any]) -> Path:
    """The card of a ``cavpref data import`` folder."""
    out = Path(out)
    args = public_config(manifest["args"])
    what = (
        f"`{args['format']}` data ({manifest['doc']}) imported by `cavpref data import` into cavpref preference "
        f"rows (`preferences/`, split `{args['split']}`). Train it with `train_dataset: {out / 'preferences'}` and "
        f"`media_root: {', '.join(stats['data_root'])}`."
    )
    from cavpref.data_prep.formats.common import sft_note

    note = sft_note(stats)
    if note:
        what += f" **{note[0].upper()}{note[1:]}.**"
    sections = [
        ("What this is", what),
        (
            "Rows",
            md_table(
                ["", "rows"],
                [
                    ["records read", stats["records_read"]],
                    ["imported", stats["imported"]],
                    *[[f"skipped: {k}", n] for k, n in stats["skipped"].items()],
                    *[[k, n] for k, n in stats["counts"].items()],
                    *[[f"task {k}", n] for k, n in stats["tasks"].items()],
                    ["reconciles (read = imported + skipped)", stats["reconcile"]],
                ],
            ),
        ),
        (
            "Sources",
            md_table(
                ["input file", "sha256 (first 16)"], [[f, s[:16]] for f, s in manifest["inputs"].items()]
            ),
        ),
        (
            "How it was made",
            md_table(["key", "value"], sorted({**args, "fingerprint": manifest["fingerprint"]}.items())),
        ),
    ]
    data = DatasetCardData(pretty_name=f"cavpref import: {out.name}", tags=sorted({*TAGS, args["format"]}))
    return write_card(out, data, f"{out.name}: imported {args['format']} data", sections)


def export_card(out: str | Path, summary: dict[str, Any]) -> Path:
    """The card of a ``cavpref data export`` folder: which files the trainer reads, and what it ignores."""
    out = Path(out)
    fmt = summary["format"]
    names = ", ".join(Path(f).stem for f in summary["files"].values())
    how = {
        "llamafactory": (
            "point LLaMA-Factory's `dataset_dir` here (or copy the entries of `dataset_info.json` into yours) and "
            f"train with `dataset: {names}`"
        ),
        "swift": "pass the files to `swift sft` / `swift rlhf --rlhf_type dpo` with `--dataset`",
        "trl": (
            "`datasets.load_dataset('json', data_files=...)`; TRL 1.16's DPOTrainer reads `prompt` / `chosen` / "
            "`rejected` (and `images`): the `videos` / `audios` columns need a collator that reads them"
        ),
    }[fmt]
    what = (
        f"cavpref preference rows of `{summary['data']}` as {fmt} files ({summary['doc']}): {how}. Media paths "
        f"point to files under `{summary['media_root']}` and, for clips cut, joined or mixed (COT-Stitch, "
        "COT-Swap, CAT), to files written once each under `media/`."
    )
    sections = [
        ("What this is", what),
        ("What the other trainers ignore", IGNORED),
        (
            "Files",
            md_table(
                ["split", "file", "rows"], [[s, f, summary["rows"][s]] for s, f in summary["files"].items()]
            ),
        ),
        ("Media", md_table(["", "count"], sorted(summary["media"].items()))),
    ]
    data = DatasetCardData(
        pretty_name=f"cavpref export ({fmt}): {out.name}", tags=sorted({*TAGS, fmt, "dpo"})
    )
    return write_card(out, data, f"{out.name}: cavpref preference rows for {fmt}", sections)
