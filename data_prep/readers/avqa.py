"""AVQA (``data/annotation/{train,val}_qa.json``) -> QARecords.

Each record has four options (``multi_choice``) and the answer as an index into them; the category comes
from the prefix + lookup rule in ``categories.py``; ``question_relation`` (View / Sound / Both) is kept as
the record's modality so the single-modality filter can use it.
"""

from __future__ import annotations

from typing import Any

from cavpref.data_prep.readers.categories import (
    AVQA_PREFIX_RULES,
    AVQA_RELATIONS,
    AVQA_TYPE_LOOKUP,
    avqa_category,
)
from cavpref.data_prep.readers.common import (
    ReaderConfig,
    ReaderError,
    ReadResult,
    clean_question,
    collect,
    join_media,
    load_json_list,
    media_dir,
    require,
)
from cavpref.data_prep.records import QARecord
from cavpref.media.spec import MediaError, Source, to_json

DEFAULT_TEMPLATE = "{video_name}.mp4"
NUM_CHOICES = 4


def parse_record(rec: Any, index: int, file: str, folder: str, template: str) -> QARecord:
    if not isinstance(rec, dict):
        raise ReaderError(file, index, None, "record is not a JSON object", f"got {type(rec).__name__}")
    video_name = require(rec, "video_name", str, file, index)
    if not video_name.strip():
        raise ReaderError(file, index, "video_name", "empty")
    question = clean_question(require(rec, "question_text", str, file, index))
    if not question:
        raise ReaderError(file, index, "question_text", "empty")
    choices = require(rec, "multi_choice", list, file, index)
    if len(choices) != NUM_CHOICES or not all(isinstance(c, str) and c.strip() for c in choices):
        raise ReaderError(
            file, index, "multi_choice", f"expected {NUM_CHOICES} non-empty strings", repr(choices)
        )
    answer = require(rec, "answer", int, file, index)
    if not 0 <= answer < len(choices):
        raise ReaderError(
            file, index, "answer", "answer index out of range", f"{answer} not in 0..{len(choices) - 1}"
        )
    relation = require(rec, "question_relation", str, file, index)
    if relation not in AVQA_RELATIONS:
        raise ReaderError(
            file, index, "question_relation", "unknown relation", f"{relation!r}; expected {AVQA_RELATIONS}"
        )
    qtype = require(rec, "question_type", str, file, index)
    category = avqa_category(question, qtype)
    if category is None:
        raise ReaderError(
            file,
            index,
            "question_type",
            "unknown question type and no prefix rule matched",
            f"{qtype!r}; known types {sorted(AVQA_TYPE_LOOKUP)}, "
            f"prefixes {[p for p, _ in AVQA_PREFIX_RULES]}",
        )
    try:
        media = Source(join_media(folder, template.format(video_name=video_name)))
    except (MediaError, KeyError, IndexError, ValueError) as err:
        raise ReaderError(file, index, "video_name", "bad media path", str(err)) from err
    options = [c.strip() for c in choices]
    meta = {k: rec[k] for k in ("id", "video_id") if k in rec}
    meta["answer_index"] = answer
    return QARecord(
        source="avqa",
        source_id=video_name,
        file=file,
        index=index,
        media=to_json(media),
        question=question,
        answer=options[answer],
        options=options,
        category=category,
        modality=relation,
        qtype=qtype,
        meta=meta,
    )


def read_avqa(path: str, config: ReaderConfig | None = None) -> ReadResult:
    """Read one AVQA annotation file. Media: ``<video_dir>/{video_name}.mp4`` by default, with
    ``<video_dir>`` = ``<dataset>/videos`` where ``<dataset>`` holds the ``annotation/`` folder."""
    config = config or ReaderConfig()
    file = str(path)
    _, folder = media_dir(file, ("annotation",), "videos", config)
    template = config.video_template or DEFAULT_TEMPLATE
    items = load_json_list(file)
    return collect(file, items, lambda i, rec: parse_record(rec, i, file, folder, template), config.on_error)
