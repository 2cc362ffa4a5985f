"""On-disk form of the prepared data: HF ``datasets`` schemas, and writing / reading the output layout.

Layout of a prep output folder (docs/data_prep.md documents every column)::

    benchmark/<TASK>/          DatasetDict (save_to_disk), one split per train/validation/test
    preferences/               DatasetDict (save_to_disk), one split per train/validation/test
    parquet/benchmark/<TASK>/<split>.parquet     parquet/preferences/<split>.parquet
    jsonl/benchmark/<TASK>/<split>.jsonl         jsonl/preferences/<split>.jsonl

Rows are exactly ``BenchmarkItem.to_row()`` / ``PreferenceExample.to_row()`` (so ``from_row`` reads any of
the three forms back), sorted by id. The features are fixed here so that an empty split still has the
full schema and every shard writes identical column types.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from pathlib import Path

from datasets import (
    Dataset,
    DatasetDict,
    Features,
    List,
    Value,
    disable_progress_bars,
    enable_progress_bars,
    is_progress_bar_enabled,
    load_from_disk,
)

from cavpref import jsonl
from cavpref.data import BenchmarkItem, PreferenceExample

_S = Value("string")
BENCHMARK_FEATURES = Features(
    {
        "id": _S,
        "task": _S,
        "source": _S,
        "category": _S,
        "question": _S,
        "answer": _S,
        "setting": _S,
        "template_id": Value("int32"),
        "media": _S,
        "abstain_letter": _S,
        "source_ids": List(_S),
        "instruction": _S,
        "meta": _S,
        "option_letters": List(_S),
        "option_texts": List(_S),
    }
)
PREFERENCE_FEATURES = Features(
    {
        "id": _S,
        "task": _S,
        "source": _S,
        "category": _S,
        "prompt": _S,
        "media": _S,
        "chosen": _S,
        "rejected": _S,
        "clap_delta": Value("float64"),
        "avsm_delta_v": Value("float64"),
        "avsm_delta_a": Value("float64"),
        "source_ids": List(_S),
        "visual_response": _S,
        "visual_clean": _S,
        "visual_perturbed": _S,
        "audio_response": _S,
        "audio_clean": _S,
        "audio_perturbed": _S,
        "use_audio_in_video": Value("bool"),  # None: the recipe's flag
    }
)
FORMATS = ("arrow", "parquet", "jsonl")
OUTPUT_DIRS = ("benchmark", "preferences", "parquet", "jsonl")


def to_dataset(rows: Iterable, features: Features) -> Dataset:
    rows = [r.to_row() if hasattr(r, "to_row") else r for r in rows]
    return (
        Dataset.from_list(rows, features=features)
        if rows
        else Dataset.from_dict({k: [] for k in features}, features=features)
    )


def _write(
    ds_dict: DatasetDict, arrow_dir: Path | None, parquet_dir: Path | None, jsonl_dir: Path | None
) -> None:
    if arrow_dir is not None:  # an empty split needs an explicit shard count to be loadable again
        ds_dict.save_to_disk(
            str(arrow_dir), num_shards={s: 1 for s, ds in ds_dict.items() if len(ds) == 0} or None
        )
    for split, ds in ds_dict.items():
        if parquet_dir is not None:
            parquet_dir.mkdir(parents=True, exist_ok=True)
            ds.to_parquet(str(parquet_dir / f"{split}.parquet"))
        if jsonl_dir is not None:
            jsonl_dir.mkdir(parents=True, exist_ok=True)
            with open(jsonl_dir / f"{split}.jsonl", "w", encoding="utf-8") as f:
                f.writelines(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in ds)


def write_outputs(
    out: str | Path,
    items: dict[str, list[BenchmarkItem]],
    prefs: dict[str, list[PreferenceExample]],
    tasks: Iterable[str],
    splits: Iterable[str],
    formats: Iterable[str] = FORMATS,
) -> None:
    """Write items (per task, per split) and preferences (per split), replacing a previous build's."""
    out, formats, splits = Path(out), set(formats), list(splits)
    bars = is_progress_bar_enabled()
    disable_progress_bars()  # one bar per tiny split is noise; the build prints its own table
    try:
        _write_all(out, items, prefs, list(tasks), splits, formats)
    finally:
        if bars:
            enable_progress_bars()


def _write_all(out: Path, items, prefs, tasks: list[str], splits: list[str], formats: set[str]) -> None:
    for name in OUTPUT_DIRS:
        shutil.rmtree(out / name, ignore_errors=True)

    def dirs(*parts: str):
        return (
            out.joinpath(*parts) if "arrow" in formats else None,
            out.joinpath("parquet", *parts) if "parquet" in formats else None,
            out.joinpath("jsonl", *parts) if "jsonl" in formats else None,
        )

    for task in tasks:
        dd = DatasetDict(
            {
                s: to_dataset(
                    sorted((i for i in items.get(s, []) if i.task == task), key=lambda i: i.id),
                    BENCHMARK_FEATURES,
                )
                for s in splits
            }
        )
        _write(dd, *dirs("benchmark", task))
    dd = DatasetDict(
        {s: to_dataset(sorted(prefs.get(s, []), key=lambda p: p.id), PREFERENCE_FEATURES) for s in splits}
    )
    _write(dd, *dirs("preferences"))


def load_outputs(
    out: str | Path,
) -> tuple[dict[str, list[BenchmarkItem]], dict[str, list[PreferenceExample]]]:
    """Read a prep output folder back (Arrow if present, else JSONL): (items per split, prefs per split)."""
    out = Path(out)
    items: dict[str, list[BenchmarkItem]] = {}
    prefs: dict[str, list[PreferenceExample]] = {}
    if (out / "preferences").is_dir():
        for task_dir in sorted(p for p in (out / "benchmark").iterdir() if p.is_dir()):
            for split, ds in load_from_disk(str(task_dir)).items():
                items.setdefault(split, []).extend(BenchmarkItem.from_row(r) for r in ds)
        for split, ds in load_from_disk(str(out / "preferences")).items():
            prefs[split] = [PreferenceExample.from_row(r) for r in ds]
    elif (out / "jsonl" / "preferences").is_dir():
        for f in sorted((out / "jsonl" / "benchmark").glob("*/*.jsonl")):
            items.setdefault(f.stem, []).extend(BenchmarkItem.from_row(r) for _, r in jsonl.read_jsonl(f))
        for f in sorted((out / "jsonl" / "preferences").glob("*.jsonl")):
            prefs[f.stem] = [PreferenceExample.from_row(r) for _, r in jsonl.read_jsonl(f)]
    else:
        raise FileNotFoundError(
            f"{out}: no prep output (needs 'preferences/' (arrow) or 'jsonl/preferences/')"
        )
    return items, prefs
