"""What every reader shares: the error type, the skip/raise policy, text clean-up and media paths.

Released annotation files are hand-edited and patched (v2.0 of MUSIC-AVQA changed types and keys, copies
of AudioSet csvs lose comment markers), so a reader must say exactly *where* an input is wrong, and, only
when the user asks for it, skip the record and keep counting so that ``in = out + skipped`` always holds.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tqdm.auto import tqdm

from cavpref.data_prep.records import QARecord
from cavpref.media.spec import MediaError, Source


class ReaderError(ValueError):
    """A bad source record. The message names the file, the record index (and line for csvs) and field."""

    def __init__(
        self,
        file,
        index: int | None,
        field: str | None,
        problem: str,
        detail: str = "",
        line: int | None = None,
    ):
        self.file, self.index, self.field, self.line = str(file), index, field, line
        self.problem, self.detail = problem, detail
        where = [self.file]
        if index is not None:
            where.append(f"record {index}" + (f" (line {line})" if line is not None else ""))
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(": ".join(where + [problem + (f" ({detail})" if detail else "")]))

    def __reduce__(self):  # picklable across worker processes (the default would lose the fields)
        return type(self), (self.file, self.index, self.field, self.problem, self.detail, self.line)

    @classmethod
    def unreadable(cls, err) -> ReaderError:
        """The error of a whole file that ``cavpref.jsonl`` cannot read (its line, if any, in the detail)."""
        detail = f"line {err.line}: {err.detail}" if err.line is not None else err.detail
        return cls(err.path, None, None, err.problem, detail + (f"; {err.hint}" if err.hint else ""))

    @property
    def reason(self) -> str:
        """Short reason without the record's own values: the key under which skips are counted."""
        return f"{self.field or 'record'}: {self.problem}"


@dataclass
class ReaderConfig:
    """Where the media live and what to do with bad records.

    Media paths in a record are relative to ``data_root``; by default the data root is the folder *above*
    the dataset folder (so the synthetic world's ``<out>`` gives ``music_avqa/videos/<id>.mp4``), and the
    dataset folder is found from the annotation file (``<ds>/json/x.json``, ``<ds>/annotation/x.json``,
    ``<ds>/x.csv``). ``video_dir`` (relative to the data root) replaces the default ``<ds>/videos``
    (``<ds>`` for AudioSet), and ``video_template`` the per-source file-name template.
    """

    data_root: str | None = field(default=None, metadata={"help": "media paths are relative to this folder"})
    video_dir: str | None = field(default=None, metadata={"help": "media folder relative to the data root"})
    video_template: str | None = field(
        default=None,
        metadata={
            "help": "file name template; defaults: music_avqa '{video_id}.mp4', avqa '{video_name}.mp4', "
            "audioset 'clips/{ytid}_{start:d}.mp4'"
        },
    )
    audioset_clip_mode: Literal["clip", "full"] = field(
        default="clip",
        metadata={
            "help": "clip: the file holds exactly the segment (Source(path, 0, end-start)); "
            "full: the file is the whole YouTube video (Source(path, start, end))"
        },
    )
    on_error: Literal["raise", "skip"] = field(
        default="raise", metadata={"help": "raise on a bad record, or skip it and count the reason"}
    )
    default_category: str = field(
        default="Existential",
        metadata={
            "help": "custom JSONL: the category of a question that names none and matches no prefix rule "
            "(counted per origin in the build's stats)"
        },
    )


@dataclass
class ReadResult:
    """Records of one or more files plus the skip counts; ``n_in == len(records) + sum(skipped)``."""

    records: list[QARecord] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)
    n_in: int = 0

    def extend(self, other: ReadResult) -> ReadResult:
        self.records.extend(other.records)
        self.skipped.update(other.skipped)
        self.n_in += other.n_in
        return self

    @property
    def reconciles(self) -> bool:
        return self.n_in == len(self.records) + sum(self.skipped.values())


def collect(
    file: str, items: Iterable[Any], parse: Callable[[int, Any], QARecord], on_error: str
) -> ReadResult:
    """Run ``parse(index, item)`` over ``items``; raise or skip-and-count each ``ReaderError``."""
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
    out = ReadResult()
    # The unbalanced AudioSet csv has ~2M rows; the bar hides itself when stderr is not a terminal.
    for index, item in enumerate(
        tqdm(items, desc=f"read {Path(file).name}", unit=" rec", disable=None, leave=False)
    ):
        out.n_in += 1
        try:
            out.records.append(parse(index, item))
        except ReaderError as err:
            if on_error == "raise":
                raise
            out.skipped[err.reason] += 1
    return out


def load_json_list(path: str | os.PathLike) -> list[Any]:
    """A whole-file JSON array. A file that is not one cannot be read record by record: always an error."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError) as err:
        raise ReaderError(path, None, None, "cannot read", str(err)) from err
    except json.JSONDecodeError as err:
        raise ReaderError(
            path, None, None, "not valid JSON", f"line {err.lineno} col {err.colno}: {err.msg}"
        ) from err
    except RecursionError:  # json's recursion limit: no line to name, and no record can be read
        raise ReaderError(path, None, None, "JSON nested too deeply to read") from None
    if not isinstance(data, list):
        raise ReaderError(path, None, None, "expected a JSON array of records", f"got {type(data).__name__}")
    return data


def parse_list_field(value: Any, file: str, index: int, name: str) -> list[str]:
    """A list of strings stored as a real list or as a string holding one (JSON, or a Python literal)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except RecursionError:
            raise ReaderError(file, index, name, "JSON nested too deeply to read") from None
        except json.JSONDecodeError:
            try:  # some copies hold Python reprs with single quotes
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                raise ReaderError(file, index, name, "not a JSON list", repr(value)) from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ReaderError(file, index, name, "expected a list of strings", f"got {value!r}")
    return value


def require(rec: dict, key: str, kind: type | tuple, file: str, index: int, *, alt: str | None = None) -> Any:
    """``rec[key]`` (or ``rec[alt]``) of the given type; a clear error naming the field otherwise."""
    if key not in rec and alt is not None and alt in rec:
        key = alt
    if key not in rec or rec[key] is None:
        raise ReaderError(file, index, key, "missing")
    value = rec[key]
    if isinstance(value, bool) or not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise ReaderError(file, index, key, f"expected {names}", f"got {type(value).__name__} {value!r}")
    return value


def clean_question(text: str) -> str:
    """Full-width '？' -> '?', runs of whitespace collapsed, ends stripped (released text has all three)."""
    text = text.replace("？", "?")
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s+\?$", "?", text)


def humanise(value: str) -> str:
    """'acoustic_guitar' -> 'acoustic guitar': source tokens as the words a prompt shows."""
    return re.sub(r"\s+", " ", value.replace("_", " ")).strip()


# --------------------------------------------------------------------------- media paths


def dataset_dir(annotation: str | os.PathLike, markers: tuple[str, ...]) -> Path:
    """The dataset folder of an annotation file: its grandparent when the parent is a known sub-folder
    (``json``, ``annotation``, ...), else its parent."""
    parent = Path(annotation).resolve().parent
    return parent.parent if parent.name in markers else parent


def media_dir(
    annotation: str, markers: tuple[str, ...], default_sub: str, config: ReaderConfig
) -> tuple[Path, str]:
    """(data root, media folder relative to it) for one annotation file."""
    ds = dataset_dir(annotation, markers)
    root = Path(config.data_root).resolve() if config.data_root else ds.parent
    if config.video_dir is not None:
        try:
            Source(join_media(config.video_dir.rstrip("/"), "x"))
        except MediaError as err:
            raise ReaderError(
                annotation, None, "video_dir", "must be relative to the data root", str(err)
            ) from None
        return root, config.video_dir.rstrip("/")
    try:
        rel = (ds / default_sub).relative_to(root) if default_sub else ds.relative_to(root)
    except ValueError:
        raise ReaderError(
            annotation,
            None,
            None,
            "the dataset folder is not under the data root; pass --video_dir",
            f"{ds} vs {root}",
        ) from None
    return root, rel.as_posix() if str(rel) != "." else ""


def join_media(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name
