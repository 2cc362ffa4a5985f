"""What the benchmark folders share: reading released files, selecting items, scores in judge replies
(asking a judge and finding its JSON: ``cavpref.chat_json``), model responses, grouped means.

Released files are read as released: a JSON list, a JSON object wrapping the list, or JSONL. Every error
names the file, the record (line or index) and the field, because a benchmark of 2,000 items is
otherwise debugged by bisection.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cavpref import jsonl
from cavpref.chat_json import parse_json_reply
from cavpref.data import check_limit


class DataError(ValueError):
    """Benchmark data (items, released files, predictions) that cannot be read; the message names the file
    and the row."""


class BenchmarkInputError(DataError):
    """A released file or a predictions file that cannot be read as documented."""

    def __init__(self, path: str | Path, where: str, field: str | None, problem: str):
        self.path, self.where, self.field = str(path), where, field
        at = f"{self.path}: {where}" + (f", field {field!r}" if field else "")
        super().__init__(f"{at}: {problem}")


def read_utf8(path: str | Path) -> str:
    """The text of ``path`` (a BOM dropped); a file that is not UTF-8 is an error naming the line and the
    byte (a bare ``UnicodeDecodeError`` named neither the file nor the line)."""
    try:
        return jsonl.decode(Path(path).read_bytes(), path)
    except jsonl.JsonlError as err:
        raise BenchmarkInputError(path, f"line {err.line}", None, err.said) from None


def read_records(path: str | Path, *, list_key: str | None = None) -> list[tuple[str, dict]]:
    """``(where, record)`` pairs from a ``.json`` (a list, or an object holding the list under
    ``list_key``) or a ``.jsonl`` file. ``where`` is "line N", "record N" or "items[N]" for errors."""
    path = Path(path)
    if not path.is_file():
        raise BenchmarkInputError(path, "file", None, "not found")
    text = read_utf8(path)
    if path.suffix == ".jsonl" or (
        path.suffix != ".json" and not text.lstrip().startswith(("[", "{\n", "{\r"))
    ):
        out = []
        for n, line in jsonl.split_lines(text):  # "\n" only: U+2028 inside a string is JSON
            try:
                rec = jsonl.parse_line(line, path, n)
            except jsonl.JsonlError as err:
                raise BenchmarkInputError(path, f"line {n}", None, f"not JSON ({err.detail})") from None
            if not isinstance(rec, dict):
                raise BenchmarkInputError(
                    path, f"line {n}", None, f"expected an object, got {type(rec).__name__}"
                )
            out.append((f"line {n}", rec))
        return out
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise BenchmarkInputError(path, f"line {err.lineno}", None, f"not JSON ({err.msg})") from None
    wrapped = isinstance(data, dict) and list_key is not None
    if wrapped:
        if list_key not in data:
            raise BenchmarkInputError(path, "top level", list_key, "missing")
        data = data[list_key]
    if not isinstance(data, list):
        raise BenchmarkInputError(
            path, "top level", list_key, f"expected a list of records, got {type(data).__name__}"
        )
    label = f"{list_key}[{{}}]" if wrapped else "record {}"
    for i, rec in enumerate(data):
        if not isinstance(rec, dict):
            raise BenchmarkInputError(
                path, label.format(i), None, f"expected an object, got {type(rec).__name__}"
            )
    return [(label.format(i), rec) for i, rec in enumerate(data)]


def field(
    path,
    where: str,
    rec: Mapping,
    name: str,
    types: type | tuple = str,
    *,
    optional: bool = False,
    decode_json: bool = False,
) -> Any:
    """``rec[name]`` checked against ``types``. ``decode_json``: a string holding JSON (the Hugging Face
    copies of some benchmarks store nested fields that way) is decoded first."""
    if name not in rec or rec[name] is None:
        if optional:
            return None
        raise BenchmarkInputError(path, where, name, "missing")
    value = rec[name]
    allowed = types if isinstance(types, tuple) else (types,)
    if decode_json and isinstance(value, str) and str not in allowed:
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise BenchmarkInputError(path, where, name, f"a string that is not JSON ({err.msg})") from None
    if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
        want = "/".join(t.__name__ for t in allowed)
        raise BenchmarkInputError(
            path, where, name, f"expected {want}, got {type(value).__name__} {value!r:.60}"
        )
    return value


def pass_number(row: Mapping, name: str) -> int:
    """A predictions row's pass field (``rotation``, ``run``; 0 when absent) as a non-negative int. JSON's
    ``true`` is an int to Python: read as pass 1, it left every prediction unused with exit 0."""
    value = row.get(name, 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise DataError(f"field {name!r} must be a non-negative integer, got {value!r:.40}")
    return value


def select(items: list, tasks: Sequence[str], limit: int | None, *, data: str = "") -> list:
    """``items`` sorted by id, restricted to ``tasks`` (each must exist in the data) and to the first
    ``limit`` of each task (0 or None: all of them)."""
    if tasks:
        known = {i.task for i in items}
        unknown = sorted(set(tasks) - known)
        if unknown:
            raise ValueError(f"--tasks: {unknown} not in {data} (it has {sorted(known)})")
        items = [i for i in items if i.task in tasks]
    items = sorted(items, key=lambda i: i.id)
    limit = check_limit(limit)
    if limit is None:
        return items
    seen: dict[str, int] = defaultdict(int)
    kept = []
    for item in items:
        seen[item.task] += 1
        if seen[item.task] <= limit:
            kept.append(item)
    return kept


def media_root_of(data: str, media_root: str | None) -> str:
    """``--media_root``, else the data file's folder (or the data folder itself)."""
    path = Path(data)
    return media_root or str(path if path.is_dir() else path.parent)


# ----------------------------------------------------------------------------- judge replies

_NUMBER = re.compile(r"(-?\d+(?:\.\d+)?|-?\.\d+)\s*(%|/\s*(\d+(?:\.\d+)?))?")


def unit_float(value: Any) -> float:
    """A score in [0, 1] from what judges write: 0.75, "0.75", "75%", "3/4", "3 / 4". Out of range or
    not a number raises ValueError — a score is never clipped or guessed."""
    if isinstance(value, bool):
        raise ValueError(f"boolean {value!r} is not a score")  # noqa: TRY004 - callers catch "unusable reply"
    if isinstance(value, (int, float)):
        x = float(value)
    elif isinstance(value, str):
        m = _NUMBER.fullmatch(value.strip())
        if not m:
            raise ValueError(f"{value!r} is not a number")
        x = float(m.group(1))
        if m.group(2) == "%":
            x /= 100.0
        elif m.group(3) is not None:
            den = float(m.group(3))
            if den == 0:
                raise ValueError(f"{value!r} divides by zero")
            x /= den
    else:
        raise ValueError(f"{type(value).__name__} {value!r} is not a number")  # noqa: TRY004 - as above
    if not math.isfinite(x) or not 0.0 <= x <= 1.0:
        raise ValueError(f"score {value!r} is outside [0, 1]")
    return x


def score_from_reply(text: str | None, keys: Sequence[str]) -> float:
    """A [0, 1] score from a judge reply: the first of ``keys`` in its JSON object, else ``key: number``
    written in prose, else a reply that is just a number."""
    try:
        obj = parse_json_reply(text, want=dict)
    except ValueError:
        obj = None
    if obj is not None:
        for k in keys:
            if k in obj:
                return unit_float(obj[k])
    for k in keys:
        name = re.escape(k).replace("_", "[_ ]")  # "factual_consistency_score" or "Factual consistency score"
        m = re.search(rf"{name}\W*\s*[:=]\s*\"?([-\d./%\s]+?)\"?(?=[,}}\n]|$)", text or "", re.IGNORECASE)
        if m:
            return unit_float(m.group(1))
    if text is not None and _NUMBER.fullmatch(text.strip().rstrip(".")):
        return unit_float(text.strip().rstrip("."))
    raise ValueError(f"no score ({' / '.join(keys)}) in reply {str(text)[:120]!r}")


# ----------------------------------------------------------------------------- model responses

_ANSWER = re.compile(r"(?im)^\W*(?:final\s+)?answer\W*[:：]\s*(.+)$")
_THINK = re.compile(r"(?is)<think>(.*?)</think>")
_REASON = re.compile(r"(?is)\b(?:reasoning|reason|explanation|rationale)\W*[:：]\s*(.+)$")


def split_response(text: str) -> tuple[str, str]:
    """(answer, reasoning) from a response: a JSON object with answer/reasoning keys; ``<think>...</think>``
    then the answer (reasoning models); "Answer: ..." and "Reasoning: ..." sections (without a reasoning
    section, the reasoning is the rest of the text); otherwise the first line is the answer and the whole
    text the reasoning."""
    text = (text or "").strip()
    think = _THINK.search(text)
    if think:
        rest = text[think.end() :].strip()
        a = _ANSWER.search(rest)
        return (a.group(1).strip() if a else rest), think.group(1).strip()
    if text.startswith("{"):
        try:
            obj = json.loads(text)
            if isinstance(obj, dict) and "answer" in obj:
                return str(obj["answer"]).strip(), str(obj.get("reasoning", obj.get("reason", ""))).strip()
        except json.JSONDecodeError:
            pass
    a, r = _ANSWER.search(text), _REASON.search(text)
    answer = a.group(1).strip() if a else (text.splitlines()[0].strip() if text else "")
    if r:
        reasoning = r.group(1).strip()
        if a and a.start() > r.start():  # "Reasoning: ... Answer: B" — stop the reasoning at the answer
            reasoning = text[r.start(1) : a.start()].strip()
    else:  # no reasoning section: everything but the answer line
        reasoning = (text[: a.start()] + text[a.end() :]).strip() if a else text
    return answer, reasoning


# ----------------------------------------------------------------------------- grouped means


def mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


def grouped(
    records: Sequence[Mapping], key: Callable[[Mapping], Any], summary: Callable[[Sequence[Mapping]], dict]
) -> dict[str, dict]:
    """``summary`` of the records of each group, groups in first-seen order; a None key is skipped."""
    groups: dict[str, list] = defaultdict(list)
    for r in records:
        k = key(r)
        if k is not None:
            groups[str(k)].append(r)
    return {k: summary(v) for k, v in groups.items()}


def trim_min_max(values: Sequence[float]) -> float:
    """Mean after dropping one lowest and one highest value (with three or more values; else the plain
    mean). For five values this is "the mean of the middle three"."""
    if not values:
        raise ValueError("no values")
    v = sorted(values)
    if len(v) >= 3:
        v = v[1:-1]
    return sum(v) / len(v)
