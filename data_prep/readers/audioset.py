"""AudioSet: segment csvs, ``class_labels_indices.csv`` and ``ontology.json``.

Segment csvs start with ``#`` comment lines (copies in the wild may have lost the ``# `` of the third,
the column header), separate fields by ", " and quote the comma-separated label list, so they are read
with the csv module and ``skipinitialspace`` rather than split by hand.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from cavpref.data_prep.readers.common import (
    ReaderConfig,
    ReaderError,
    ReadResult,
    collect,
    join_media,
    load_json_list,
    media_dir,
    require,
)
from cavpref.data_prep.records import QARecord
from cavpref.media.spec import MediaError, Source, to_json

DEFAULT_TEMPLATE = "clips/{ytid}_{start:d}.mp4"
HEADER = ("YTID", "start_seconds", "end_seconds", "positive_labels")


# ----------------------------------------------------------------------------- ontology


@dataclass
class OntologyClass:
    id: str
    name: str
    child_ids: list[str] = field(default_factory=list)
    restrictions: list[str] = field(default_factory=list)
    description: str = ""


@dataclass
class Ontology:
    """The AudioSet class graph (a DAG: a class may have several parents)."""

    classes: dict[str, OntologyClass]  # id -> class, in file order

    @property
    def roots(self) -> list[str]:
        """Top-level supercategories: classes nobody lists as a child, in file order."""
        children = {c for cls in self.classes.values() for c in cls.child_ids}
        return [i for i in self.classes if i not in children]

    def descendants(self, cid: str) -> Iterator[str]:
        """``cid`` and everything below it, each once, depth first in child order."""
        seen, stack = set(), [cid]
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            yield node
            stack.extend(reversed(self.classes[node].child_ids))

    def names(self) -> dict[str, str]:
        return {i: c.name for i, c in self.classes.items()}


def read_ontology(path: str) -> Ontology:
    """Parse ``ontology.json``; unknown child ids and cycles are errors naming the class."""
    file = str(path)
    classes: dict[str, OntologyClass] = {}
    for index, rec in enumerate(load_json_list(file)):
        if not isinstance(rec, dict):
            raise ReaderError(file, index, None, "record is not a JSON object", f"got {type(rec).__name__}")
        cid = require(rec, "id", str, file, index)
        if cid in classes:
            raise ReaderError(file, index, "id", "duplicate class id", cid)
        child_ids = rec.get("child_ids", [])
        restrictions = rec.get("restrictions", [])
        for key, value in (("child_ids", child_ids), ("restrictions", restrictions)):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ReaderError(file, index, key, "expected a list of strings", repr(value))
        classes[cid] = OntologyClass(
            cid,
            require(rec, "name", str, file, index),
            list(child_ids),
            list(restrictions),
            str(rec.get("description", "")),
        )
    for index, cls in enumerate(classes.values()):
        for child in cls.child_ids:
            if child not in classes:
                raise ReaderError(file, index, "child_ids", "unknown child id", f"{child!r} under {cls.id!r}")
    _check_acyclic(file, classes)
    return Ontology(classes)


def _check_acyclic(file: str, classes: dict[str, OntologyClass]) -> None:
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    index_of = {cid: i for i, cid in enumerate(classes)}
    for start, start_cls in classes.items():
        if start in state:
            continue
        state[start] = 1
        stack = [(start, iter(start_cls.child_ids))]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
            elif state.get(child) == 1:
                raise ReaderError(
                    file, index_of[node], "child_ids", "cycle in the class graph", f"{node} -> {child}"
                )
            elif child not in state:
                state[child] = 1
                stack.append((child, iter(classes[child].child_ids)))


# ----------------------------------------------------------------------------- class labels


def read_class_labels(path: str) -> dict[str, str]:
    """``class_labels_indices.csv`` -> {mid: display_name}, in index order."""
    file = str(path)
    try:
        text = Path(file).read_text(encoding="utf-8-sig")
    except OSError as err:
        raise ReaderError(file, None, None, "cannot read", str(err)) from err
    reader = csv.reader(io.StringIO(text), skipinitialspace=True)
    header = next(reader, None)
    if header is None or [h.strip() for h in header] != ["index", "mid", "display_name"]:
        raise ReaderError(file, None, "header", "expected 'index,mid,display_name'", repr(header))
    labels: dict[str, str] = {}
    for index, row in enumerate(reader):
        if not row:
            continue
        if len(row) != 3 or not row[1].strip() or not row[2].strip():
            raise ReaderError(
                file, index, "row", "expected index,mid,display_name", repr(row), line=reader.line_num
            )
        labels[row[1].strip()] = row[2].strip()
    return labels


# ----------------------------------------------------------------------------- segments


def _rows(file: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of data rows: '#' comment lines and a bare header row are skipped."""
    try:
        text = Path(file).read_text(encoding="utf-8-sig")
    except OSError as err:
        raise ReaderError(file, None, None, "cannot read", str(err)) from err
    reader = csv.reader(io.StringIO(text), skipinitialspace=True)
    for row in reader:
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        if row[0].strip() == HEADER[0]:  # the third comment line without its '# '
            continue
        yield reader.line_num, row


def parse_segment(
    item: tuple[int, list[str]],
    index: int,
    file: str,
    folder: str,
    template: str,
    labels: dict[str, str],
    clip_mode: str,
) -> QARecord:
    line, row = item
    if len(row) != 4:
        raise ReaderError(
            file,
            index,
            "row",
            "expected 4 fields: YTID, start_seconds, end_seconds, positive_labels",
            f"got {len(row)}",
            line=line,
        )
    ytid = row[0].strip()
    if not ytid:
        raise ReaderError(file, index, "YTID", "empty", line=line)
    try:
        start, end = float(row[1]), float(row[2])
    except ValueError:
        raise ReaderError(
            file, index, "start_seconds/end_seconds", "not a number", repr(row[1:3]), line=line
        ) from None
    if not 0 <= start < end:
        raise ReaderError(
            file, index, "end_seconds", "empty or reversed segment", f"[{start}, {end}]", line=line
        )
    mids = [m.strip() for m in row[3].split(",") if m.strip()]
    if not mids:
        raise ReaderError(file, index, "positive_labels", "no labels", line=line)
    for mid in mids:
        if mid not in labels:
            raise ReaderError(file, index, "positive_labels", "unknown label mid", mid, line=line)
    start_f = int(start) if start.is_integer() else start
    try:
        path = join_media(
            folder, template.format(ytid=ytid, start=start_f, end=int(end) if end.is_integer() else end)
        )
        media = Source(path, 0.0, end - start) if clip_mode == "clip" else Source(path, start, end)
    except (MediaError, KeyError, IndexError, ValueError) as err:
        raise ReaderError(
            file, index, "start_seconds", "cannot build the clip path", f"{template!r}: {err}", line=line
        ) from err
    return QARecord(
        source="audioset",
        source_id=ytid,
        file=file,
        index=index,
        media=to_json(media),
        start=start,
        end=end,
        labels=[labels[m] for m in mids],
        label_ids=mids,
        meta={"line": line},
    )


def read_segments(path: str, labels: dict[str, str], config: ReaderConfig | None = None) -> ReadResult:
    """Read one segments csv. ``labels`` maps mid -> display name (``read_class_labels``, or the
    ontology's names). Media: ``<audioset folder>/clips/{ytid}_{start:d}.mp4`` by default."""
    config = config or ReaderConfig()
    file = str(path)
    _, folder = media_dir(file, (), "", config)
    template = config.video_template or DEFAULT_TEMPLATE
    return collect(
        file,
        _rows(file),
        lambda i, item: parse_segment(item, i, file, folder, template, labels, config.audioset_clip_mode),
        config.on_error,
    )


def label_names(labels_csv: str | None = None, ontology: Ontology | str | None = None) -> dict[str, str]:
    """mid -> display name from the labels csv, else from the ontology (its class names)."""
    if labels_csv:
        return read_class_labels(labels_csv)
    if ontology is not None:
        return (read_ontology(ontology) if isinstance(ontology, (str, Path)) else ontology).names()
    raise ValueError(
        "AudioSet segments need class_labels_indices.csv (--labels) or ontology.json (--ontology) "
        "to name their labels"
    )
