"""MUSIC-AVQA (v1 ``data/json*/avqa-*.json`` and the v2.0 balanced/bias sets) -> QARecords.

Quirks handled (see /work/shared/SOURCE_FORMATS.md): ``type`` and ``templ_values`` are strings holding
JSON lists (v2.0 sometimes has a real list), the answer key is ``anser``, ``question_id`` repeats with
conflicting answers (kept in ``meta`` only; records are keyed by file + index), v2.0 may omit
``question_id`` / ``question_deleted``, ids may hold ``#`` (``6cjIJVzP6eI_#03``) or ``_flip``, some
questions end in ``？`` or a space, and v2.0 "Is this sound from the instrument in the video?" records
with ``unmatch_audio`` pair the video of ``video_id`` with the audio of another clip.
"""

from __future__ import annotations

import re
from typing import Any

from cavpref.data_prep.readers.categories import MUSIC_AVQA_MODALITIES, MUSIC_AVQA_TYPES
from cavpref.data_prep.readers.common import (
    ReaderConfig,
    ReaderError,
    ReadResult,
    clean_question,
    collect,
    humanise,
    join_media,
    load_json_list,
    media_dir,
    parse_list_field,
    require,
)
from cavpref.data_prep.records import QARecord
from cavpref.media.spec import Combine, MediaError, Source, to_json

DEFAULT_TEMPLATE = "{video_id}.mp4"
PLACEHOLDER = re.compile(r"<([A-Za-z]+)>")
V2_EXTRAS = ("unmatch_audio", "audio_instrument", "video_instrument", "person")


def fill_template(template: str, values: list[str]) -> tuple[str, list[list[str]]]:
    """Fill ``<Placeholder>``s left to right; returns (text, [[placeholder, value], ...]).

    The caller checks the counts first; values are humanised ('acoustic_guitar' -> 'acoustic guitar').
    """
    it = iter(values)
    slots: list[list[str]] = []

    def sub(match: re.Match) -> str:
        value = next(it)
        slots.append([match.group(0), value])
        return humanise(value)

    return PLACEHOLDER.sub(sub, template), slots


def parse_record(rec: Any, index: int, file: str, folder: str, template: str) -> QARecord:
    if not isinstance(rec, dict):
        raise ReaderError(file, index, None, "record is not a JSON object", f"got {type(rec).__name__}")
    video_id = require(rec, "video_id", str, file, index)
    if not video_id.strip():
        raise ReaderError(file, index, "video_id", "empty")
    type_ = parse_list_field(require(rec, "type", (str, list), file, index), file, index, "type")
    if len(type_) != 2:
        raise ReaderError(file, index, "type", "expected [modality, question type]", repr(type_))
    modality, qtype = type_
    if modality not in MUSIC_AVQA_MODALITIES:
        raise ReaderError(
            file, index, "type", "unknown modality", f"{modality!r}; expected {MUSIC_AVQA_MODALITIES}"
        )
    if qtype not in MUSIC_AVQA_TYPES:
        raise ReaderError(
            file,
            index,
            "type",
            "unknown question type",
            f"{qtype!r}; expected one of {sorted(MUSIC_AVQA_TYPES)}",
        )
    content = require(rec, "question_content", str, file, index)
    values = parse_list_field(
        require(rec, "templ_values", (str, list), file, index), file, index, "templ_values"
    )
    n_slots = len(PLACEHOLDER.findall(content))
    if n_slots != len(values):
        raise ReaderError(
            file,
            index,
            "templ_values",
            "template/value count mismatch",
            f"{n_slots} placeholders in {content!r}, {len(values)} values {values}",
        )
    question, slots = fill_template(content, values)
    raw_answer = require(rec, "anser", str, file, index, alt="answer")
    if not raw_answer.strip():
        raise ReaderError(file, index, "anser", "answer missing", "empty string")

    path = join_media(folder, template.format(video_id=video_id))
    try:
        media = Source(path)
        if rec.get("unmatch_audio"):
            other = require(rec, "unmatch_audio", str, file, index)
            media = Combine(video=media, audio=Source(join_media(folder, template.format(video_id=other))))
    except (MediaError, KeyError, IndexError, ValueError) as err:
        raise ReaderError(file, index, "video_id", "bad media path", str(err)) from err

    meta: dict[str, Any] = {"template": content, "slots": slots, "anser": raw_answer}
    for key in ("question_id", "question_deleted", *V2_EXTRAS):
        if key in rec:
            meta[key] = rec[key]
    return QARecord(
        source="music_avqa",
        source_id=video_id,
        file=file,
        index=index,
        media=to_json(media),
        question=clean_question(question),
        answer=humanise(raw_answer),
        options=None,
        category=MUSIC_AVQA_TYPES[qtype],
        modality=modality,
        qtype=qtype,
        meta=meta,
    )


def read_music_avqa(path: str, config: ReaderConfig | None = None) -> ReadResult:
    """Read one MUSIC-AVQA json file (v1 or v2.0). Media: ``<video_dir>/{video_id}.mp4`` by default,
    with ``<video_dir>`` = ``<dataset>/videos`` where ``<dataset>`` holds the ``json/`` folder."""
    config = config or ReaderConfig()
    file = str(path)
    _, folder = media_dir(file, ("json", "json_update"), "videos", config)
    template = config.video_template or DEFAULT_TEMPLATE
    items = load_json_list(file)
    return collect(file, items, lambda i, rec: parse_record(rec, i, file, folder, template), config.on_error)
