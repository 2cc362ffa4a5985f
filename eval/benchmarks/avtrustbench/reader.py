"""Read benchmark items from what data_prep writes — or anything shaped like it.

Accepted: a prep output folder (``benchmark/<TASK>/`` DatasetDicts, ``manifest.json`` naming the media
root), any folder of ``datasets`` ``save_to_disk`` output (Dataset or DatasetDict, nested anywhere),
a JSONL file of ``BenchmarkItem.to_row()`` rows, or a folder of such files (``<split>.jsonl`` names
select the split). A bad row is an error naming the file, the row and the problem, unless the caller
asked to skip bad rows — then it is counted with its reason, so loaded = kept + skipped.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cavpref import jsonl
from cavpref.data import BenchmarkItem, check_limit
from cavpref.eval.common import DataError

__all__ = ["DataError", "LoadResult", "check_prep_output", "default_media_root", "load_items"]

SPLITS = ("train", "validation", "test")


@dataclass
class LoadResult:
    items: list[BenchmarkItem]
    media_root: str
    files: list[str] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)  # reason -> count (bad rows, when skipping)
    filtered: int = 0  # rows outside --tasks / --setting / --limit (not counted as skipped)


def default_media_root(data: Path) -> str:
    """The prep manifest's ``data_root`` when there is one, else the data folder itself."""
    base = data if data.is_dir() else data.parent
    manifest = base / "manifest.json"
    if manifest.is_file():
        root = json.loads(manifest.read_text()).get("config", {}).get("data_root")
        if root:
            return str(root)
    return str(base)


def _sources(path: Path, split: str) -> Iterator[tuple[str, Iterable[dict[str, Any]]]]:
    """(label, rows) for every dataset / JSONL file under ``path`` that holds ``split``."""
    if path.is_file():
        yield str(path), _jsonl_rows(path)
        return
    if (path / "dataset_dict.json").is_file() or (path / "state.json").is_file():
        from datasets import DatasetDict, load_from_disk

        ds = load_from_disk(str(path))
        if isinstance(ds, DatasetDict):
            if split not in ds:
                raise DataError(f"{path}: no split {split!r} (has {sorted(ds)}); pass --split")
            ds = ds[split]
        yield f"{path}[{split}]", ds
        return
    if (path / "benchmark").is_dir():
        yield from _sources(path / "benchmark", split)
        return
    subdirs = sorted(p for p in path.iterdir() if p.is_dir())
    found = False
    for sub in subdirs:
        for src in _sources(sub, split):
            found = True
            yield src
    if not found:
        for f in sorted(path.glob("*.jsonl")):
            if f.stem == split or f.stem not in SPLITS:
                yield str(f), _jsonl_rows(f)


def _jsonl_rows(path: Path) -> Iterator[dict[str, Any]]:
    try:
        rows = jsonl.read_jsonl(path, keep_errors=True)
    except jsonl.JsonlError as err:  # unreadable, not UTF-8
        raise DataError(str(err)) from None
    for _, row in rows:
        if isinstance(row, jsonl.JsonlError):  # raised by the caller, naming the row
            row = {"__error__": f"line {row.line}: not JSON ({row.detail})"}
        yield row


def load_items(
    data: str | Path,
    *,
    split: str = "test",
    keep: Callable[[BenchmarkItem], bool] | None = None,
    limit: int | None = None,
    skip_invalid: bool = False,
    media_root: str | None = None,
) -> LoadResult:
    """All items under ``data`` (see module doc) that ``keep`` accepts, at most ``limit`` per task and setting, sorted by id."""
    path = Path(data)
    if not path.exists():
        raise DataError(f"{path}: benchmark data not found")
    check_prep_output(path)
    check_not_preferences(path)
    result = LoadResult([], media_root or default_media_root(path))
    seen: dict[str, str] = {}
    for label, rows in _sources(path, split):
        result.files.append(label)
        for n, row in enumerate(rows):
            where = f"{label}: row {n}" + (
                f" (id {row.get('id')!r})" if isinstance(row, dict) and "id" in row else ""
            )
            try:
                if "__error__" in row:
                    raise DataError(row["__error__"])
                item = BenchmarkItem.from_row(row)
                if item.id in seen:
                    raise DataError(f"duplicate item id (first in {seen[item.id]})")
            except (ValueError, TypeError, KeyError) as err:
                reason = f"{type(err).__name__}: {err}"
                if not skip_invalid:
                    raise DataError(f"{where}: {reason}") from err
                result.skipped[_reason_class(err)] += 1
                continue
            seen[item.id] = label
            if keep is None or keep(item):
                result.items.append(item)
            else:
                result.filtered += 1
    if not result.files:
        raise DataError(f"{path}: no datasets or JSONL files with split {split!r} found")
    result.items.sort(key=lambda i: i.id)
    if check_limit(limit):  # the first ``limit`` items (by id) of each task and setting; 0 = all
        per_task: Counter = Counter()
        kept = []
        for item in result.items:
            per_task[item.task, item.setting] += 1
            if per_task[item.task, item.setting] <= limit:
                kept.append(item)
        result.filtered += len(result.items) - len(kept)
        result.items = kept
    return result


def check_not_preferences(path: Path) -> None:
    """Refuse a folder of preference rows (prep's ``preferences/``, what training reads) with what eval reads
    instead, before its rows are each refused for six missing benchmark fields."""
    if not path.is_dir():
        return
    info = next((path / f for f in ("dataset_dict.json", "state.json") if (path / f).is_file()), None)
    if info is None:
        return
    split = next((d for d in sorted(path.iterdir()) if (d / "dataset_info.json").is_file()), path)
    try:
        features = json.loads((split / "dataset_info.json").read_text()).get("features", {})
    except (OSError, ValueError):
        return
    if {"chosen", "rejected"} <= set(features) and "option_letters" not in features:
        prep = path.parent if (path.parent / "benchmark").is_dir() else None
        where = f"--data {prep}" if prep else "a `cavpref prep` folder or its benchmark/"
        raise DataError(
            f"{path}: this is a preference folder (chosen / rejected training rows); eval reads the "
            f"benchmark items: {where}"
        )


def check_prep_output(path: Path) -> None:
    """Refuse the folder of a prep build that did not finish (killed: look-up tables and some task folders
    written, no manifest) or whose files no longer match its manifest's list (folders deleted since)."""
    from cavpref.data_prep.integrity import damaged
    from cavpref.data_prep.tables import DEFAULT_FILENAME

    if not (path.is_dir() and (path / "benchmark").is_dir()):
        return
    manifest = path / "manifest.json"
    if not manifest.is_file():
        if (path / DEFAULT_FILENAME).is_file():  # written by `cavpref prep` before any task
            raise DataError(
                f"{path}: incomplete prep build (no manifest.json: the build was interrupted); "
                "rerun `cavpref prep` with the same config to finish it"
            )
        return
    listed = json.loads(manifest.read_text())
    if "files" in listed:  # hand-made folders and older builds have no file list to check
        problems = damaged(path, listed)
        if problems:
            raise DataError(
                f"{path}: the prep outputs differ from manifest.json ({len(problems)} file(s): "
                f"{'; '.join(problems[:5])}{' …' if len(problems) > 5 else ''}); rerun `cavpref prep`"
            )


def _reason_class(err: Exception) -> str:
    """A short, countable reason: the message without the item id part."""
    msg = str(err)
    if "is not among options" in msg:
        return "invalid row: answer not among options"
    if "duplicate item id" in msg:
        return "invalid row: duplicate id"
    if "missing field" in msg:
        return "invalid row: missing field"
    if "unknown task" in msg:
        return "invalid row: unknown task"
    return f"invalid row: {type(err).__name__}"
