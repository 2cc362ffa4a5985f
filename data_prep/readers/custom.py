"""The generic AV-QA JSONL: a user's own clips and questions, read like the three released formats.

A researcher's data is rarely MUSIC-AVQA, AVQA or AudioSet; faking one of their files to reach the nine
generators loses what the user knows (their options, categories, separate audio tracks). This reader takes
one JSON object per line (schema in docs/your_data.md):

* a **question line** (``question`` present) -> a ``custom`` record: the QA tasks (MCIT, ICIT, MVIT, MAIT,
  MVT, MAT, CLEAN) draw from it;
* a **clip line** (no ``question``, ``labels`` present) -> a ``custom_clips`` record: a labelled clip whose
  single sound event the compositional tasks (COT-Stitch, COT-Swap, CAT) use, as they use AudioSet segments.

``video`` (+ optional separate ``audio``) paths are relative to the JSONL's folder (or ``video_dir`` under the
data root) and become one MediaSpec, ``Combine(video=..., audio=...)`` when the audio is its own file. Errors
name the file, record, line and field; ``on_error: skip`` counts them, so ``in = out + skipped`` holds.
``to_custom`` writes a record of any source back in this schema (``cavpref prep read --as custom``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cavpref import jsonl
from cavpref.data import CATEGORIES
from cavpref.data_prep.readers.categories import (
    CUSTOM_MODALITIES,
    CUSTOM_PREFIX_RULES,
    MUSIC_AVQA_TYPES,
    avqa_category,
)
from cavpref.data_prep.readers.common import (
    ReaderConfig,
    ReaderError,
    ReadResult,
    clean_question,
    collect,
)
from cavpref.data_prep.records import EVENT_SOURCES, QARecord
from cavpref.media.spec import Combine, MediaError, Source, from_json, to_json

# field -> what it holds (the schema, also printed in errors naming an unknown field)
FIELDS: dict[str, str] = {
    "id": "string, unique in the file (required)",
    "video": "video file, relative to the JSONL's folder or video_dir (required)",
    "audio": "separate audio file of the clip (optional; default: the video file's own audio track)",
    "start": "seconds into the file(s) where the clip starts (optional, default 0)",
    "end": "seconds where it ends (optional, default the end of the file)",
    "question": "the question (absent: a clip line, which needs labels)",
    "options": "list of at least 2 distinct answer options (optional)",
    "answer": "answer text, or an index into options (required with a question)",
    "category": f"one of {list(CATEGORIES)} (optional: prefix rules, then default_category)",
    "modality": f"what the question needs: one of {list(CUSTOM_MODALITIES)} (optional)",
    "labels": "sound / visual classes in the clip, e.g. AudioSet names (optional; required on a clip line)",
    "dataset": "your own name for the line's dataset (optional, kept in meta)",
    "meta": "any JSON object (optional, kept in meta['user'])",
}
QUESTION_ONLY = ("options", "answer", "category", "modality")
_CATEGORY_NAMES = {c.casefold(): c for c in CATEGORIES} | {
    k.casefold(): v for k, v in MUSIC_AVQA_TYPES.items()
}


def read_custom(path: str, config: ReaderConfig | None = None) -> ReadResult:
    """Read one JSONL file of the generic schema (blank lines ignored; every other line is one record)."""
    config = config or ReaderConfig()
    file = str(path)
    try:
        text = jsonl.read_text(file)
    except jsonl.JsonlError as err:
        raise ReaderError.unreadable(err) from None
    folder = Path(file).resolve().parent
    root = Path(config.data_root).resolve() if config.data_root else folder
    base = root / config.video_dir if config.video_dir is not None else folder
    items = jsonl.split_lines(text)
    seen: dict[str, int] = {}  # id -> its line: ids must be unique in a file
    return collect(
        file, items, lambda i, item: parse_line(item, i, file, base, root, config, seen), config.on_error
    )


def parse_line(
    item: tuple[int, str], index: int, file: str, base: Path, root: Path, config: ReaderConfig, seen: dict
) -> QARecord:
    line, text = item

    def fail(name: str | None, problem: str, detail: str = "") -> ReaderError:
        return ReaderError(file, index, name, problem, detail, line=line)

    try:
        rec = jsonl.parse_line(text, file, line)
    except jsonl.JsonlError as err:
        raise fail(None, err.problem, err.detail) from None
    if not isinstance(rec, dict):
        raise fail(None, "record is not a JSON object", f"got {type(rec).__name__}")
    unknown = sorted(k for k in rec if k not in FIELDS and not k.startswith("_"))
    if unknown:
        raise fail(unknown[0], "unknown field", f"fields: {sorted(FIELDS)}; '_'-prefixed keys are comments")

    def get(name: str, kind: type | tuple, required: bool = False) -> Any:
        value = rec.get(name)
        if value is None:
            if required:
                raise fail(name, "missing")
            return None
        if isinstance(value, bool) or not isinstance(value, kind):
            names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
            raise fail(name, f"expected {names}", f"got {type(value).__name__} {value!r}")
        if isinstance(value, str) and not value.strip():
            raise fail(name, "empty")
        return value

    rid = get("id", str, required=True)
    if rid in seen:
        raise fail("id", "duplicate id", f"{rid!r} first on line {seen[rid]}")
    seen[rid] = line
    start, end = get("start", (int, float)), get("end", (int, float))

    def source(name: str) -> Source:
        full = Path(os.path.normpath(base / get(name, str, required=True)))
        try:
            rel = full.relative_to(root).as_posix()
        except ValueError:
            raise fail(name, "outside the data root", f"{full} is not under {root}; set data_root") from None
        try:
            return Source(rel, float(start or 0.0), None if end is None else float(end))
        except MediaError as err:
            raise fail("end" if "range" in str(err) else name, "bad clip", str(err)) from None

    video = source("video")
    media = Combine(video=video, audio=source("audio")) if rec.get("audio") is not None else video
    labels = get("labels", list) or []
    if not all(isinstance(x, str) and x.strip() for x in labels):
        raise fail("labels", "expected a list of non-empty strings", repr(labels))
    meta: dict[str, Any] = {"line": line}
    if rec.get("dataset") is not None:
        meta["dataset"] = get("dataset", str)
    if rec.get("meta") is not None:
        meta["user"] = get("meta", dict)
    common = {
        "source_id": rid,
        "file": file,
        "index": index,
        "media": to_json(media),
        "labels": [x.strip() for x in labels],
    }
    common.update(start=None if start is None else float(start), end=None if end is None else float(end))

    if rec.get("question") is None:  # a clip line: a labelled clip for the compositional tasks
        if not labels:
            raise fail("labels", "a clip line (no question) needs labels")
        extra = [k for k in QUESTION_ONLY if rec.get(k) is not None]
        if extra:
            raise fail(extra[0], "a clip line (no question) takes no " + extra[0], "add the question")
        return QARecord(source="custom_clips", meta=meta, **common)

    question = clean_question(get("question", str, required=True))
    options = get("options", list)
    if options is not None:
        if len(options) < 2 or not all(isinstance(o, str) and o.strip() for o in options):
            raise fail("options", "expected at least 2 non-empty strings", repr(options))
        options = [o.strip() for o in options]
        if len({o.casefold() for o in options}) != len(options):
            raise fail("options", "duplicate options", repr(options))
    answer = get("answer", (str, int), required=True)
    if isinstance(answer, int):
        if options is None or not 0 <= answer < len(options):
            raise fail("answer", "answer index without options or out of range", repr(answer))
        answer = options[answer]
    elif options is not None:
        match = [o for o in options if o.casefold() == answer.strip().casefold()]
        if not match:
            raise fail("answer", "answer not among the options", f"{answer!r} not in {options}")
        answer = match[0]
    category, meta["category_from"] = _category(get("category", str), question, config, fail)
    modality = get("modality", str)
    if modality is not None:
        if modality.casefold() not in CUSTOM_MODALITIES:
            raise fail("modality", "unknown modality", f"{modality!r}; expected {list(CUSTOM_MODALITIES)}")
        modality = CUSTOM_MODALITIES[modality.casefold()]
    return QARecord(
        source="custom",
        question=question,
        answer=answer.strip(),
        options=options,
        category=category,
        modality=modality,
        meta=meta,
        **common,
    )


def _category(given: str | None, question: str, config: ReaderConfig, fail) -> tuple[str, str]:
    """(category, how it was set: 'given' | 'prefix rule' | 'default')."""
    if given is not None:
        if given.strip().casefold() not in _CATEGORY_NAMES:
            raise fail("category", "unknown category", f"{given!r}; expected one of {list(CATEGORIES)}")
        return _CATEGORY_NAMES[given.strip().casefold()], "given"
    found = avqa_category(question, "", prefix_rules=CUSTOM_PREFIX_RULES, lookup={})
    if found is not None:
        return found, "prefix rule"
    if config.default_category not in CATEGORIES:
        raise fail("category", "no category, no prefix rule matched and default_category is not a category")
    return config.default_category, "default"


# ----------------------------------------------------------------------------- any record -> this schema

_MODALITY_WORDS = {"Audio": "audio", "Visual": "visual", "Audio-Visual": "audio-visual"}
_MODALITY_WORDS |= {"Sound": "audio", "View": "visual", "Both": "audio-visual"}  # AVQA's question_relation


def to_custom(record: QARecord) -> dict[str, Any]:
    """A record of any source as one line of the generic schema; paths stay relative to the data root (so
    write the JSONL into the data root). Raises ``ValueError`` for media the schema cannot say (a concat, or
    video and audio over different time ranges)."""
    spec = from_json(record.media)
    video, audio = (spec.video, spec.audio) if isinstance(spec, Combine) else (spec, None)
    if not isinstance(video, Source) or not (audio is None or isinstance(audio, Source)):
        raise ValueError(f"{record.key}: media {record.media} is not a clip with an optional audio file")
    if audio is not None and (audio.start, audio.end) != (video.start, video.end):
        raise ValueError(f"{record.key}: video and audio cover different time ranges")
    line: dict[str, Any] = {"id": record.key, "video": video.path}
    if audio is not None:
        line["audio"] = audio.path
    if video.start:
        line["start"] = video.start
    if video.end is not None:
        line["end"] = video.end
    if record.source not in EVENT_SOURCES:
        line["question"] = record.question
        if record.options:
            line["options"] = list(record.options)
        line.update(answer=record.answer, category=record.category)
        if record.modality in _MODALITY_WORDS:
            line["modality"] = _MODALITY_WORDS[record.modality]
    if record.labels:
        line["labels"] = list(record.labels)
    line["dataset"] = record.meta.get("dataset", record.source)
    return line
