"""TraceAV-Bench (Feng et al.): multi-hop multiple-choice questions over long (10–140 min) videos.

Released format (``Heinz217/TraceAV-Bench``, ``data/<task_type>.json``)::

    {"task_type": "v_visual_counting", "video_count": int, "question_count": int,
     "items": [{"question_id": int, "video_id": "video2", "question": str, "options": {"A": ..., "D": ...},
                "question_type": "single" | "multiple", "correct_options": ["C"], "answer_text": str,
                "minute_hop_count": int, "hop_length_label": str, "difficulty": str,
                "trajectory_with_timestamps": [{"event_id", "evidence", "label", "reason", "timestamp_minute",
                                                "event_time_range": {"start_minute", "end_minute"}}, ...]}]}

The Hugging Face copy holds the same items as rows (one config per task) with ``options``,
``correct_options`` and ``trajectory_with_timestamps`` stored as JSON strings; both are read. Videos are
``<video_id>.mp4`` in one flat folder.

Scoring: the prediction is parsed from a JSON ``answer`` field, then ``Answer: A,C``, then bare option
letters, and normalised to a sorted set; it is correct only on an exact set match (a multi-choice answer
that is partly right is wrong); an empty set is an abstention, counted separately. Hop count = number of
trajectory entries (each entry is one annotated hop with its own timestamp); the first hop is the earliest
``timestamp_minute``.

Evidence-hop masking (appendix B, Tables 4-5): each hop covers its ``event_time_range`` (minutes), or the
one-minute interval of its ``timestamp_minute`` when it has no longer range (``hop_spans``); Mask-1 blanks
one hop drawn per question with a seeded generator, Mask-All every hop, overlapping spans merged — black
frames and silence (``cavpref.media.spec.Mask``). The metrics and the appendix's analyses are in
``metrics``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from cavpref.chat_json import parse_json_reply
from cavpref.data import BenchmarkItem
from cavpref.eval.common import BenchmarkInputError, field, read_records
from cavpref.eval.extract import letter_mentions, strip_reasoning
from cavpref.media.spec import clip, from_json, mask, to_json

BENCHMARK = "traceav"
# task_type -> (dimension, abbreviation), in the order of the paper's Tables 2 and 3
SUBTASKS: dict[str, tuple[str, str]] = {
    "av_information_retrieval": ("AVR", "IR"),
    "av_temporal_sequencing": ("AVR", "TS"),
    "av_entity_tracking": ("AVR", "ET"),
    "av_forward_causal_reasoning": ("AVR", "FCR"),
    "av_backward_causal_reasoning": ("AVR", "BCR"),
    "av_cross_modality_matching": ("AVR", "CMM"),
    "av_spatiotemporal_localization": ("AVR", "SL"),
    "v_spatial_reasoning": ("VR", "SR"),
    "v_visual_counting": ("VR", "VC"),
    "a_speech_context": ("AR", "SC"),
    "a_environmental_sound": ("AR", "ES"),
    "a_background_music": ("AR", "BM"),
    "mh_visual_to_audio_deception": ("MH", "V2A"),
    "mh_audio_to_visual_deception": ("MH", "A2V"),
    "mh_temporal_splicing_fallacy": ("MH", "TSF"),
}
DIMENSIONS = ("AVR", "VR", "AR", "MH")
GENERAL = tuple(t for t, (d, _) in SUBTASKS.items() if d != "MH")
HALLUCINATION = tuple(t for t, (d, _) in SUBTASKS.items() if d == "MH")
_NESTED = ("options", "correct_options", "trajectory_with_timestamps")


def _item(path, where, rec: Mapping, task_type: str) -> BenchmarkItem:
    options = field(path, where, rec, "options", dict, decode_json=True)
    if len(options) < 2 or not all(isinstance(v, str) for v in options.values()):
        raise BenchmarkInputError(path, where, "options", f"expected letter -> text, got {options!r:.80}")
    qtype = field(path, where, rec, "question_type")
    if qtype not in ("single", "multiple"):
        raise BenchmarkInputError(path, where, "question_type", f"{qtype!r} is not 'single' or 'multiple'")
    correct = field(path, where, rec, "correct_options", list, decode_json=True)
    if not correct or any(c not in options for c in correct) or len(set(correct)) != len(correct):
        raise BenchmarkInputError(
            path, where, "correct_options", f"{correct!r} is not a set of letters of {list(options)}"
        )
    if qtype == "single" and len(correct) != 1:
        raise BenchmarkInputError(
            path, where, "correct_options", f"a single-choice item with {len(correct)} answers"
        )
    trajectory = field(path, where, rec, "trajectory_with_timestamps", list, decode_json=True)
    for i, hop in enumerate(trajectory):
        minute = hop.get("timestamp_minute") if isinstance(hop, dict) else None
        if isinstance(minute, bool) or not isinstance(minute, (int, float)) or minute < 0:
            raise BenchmarkInputError(
                path,
                where,
                f"trajectory_with_timestamps[{i}].timestamp_minute",
                f"expected a non-negative number, got {minute!r}",
            )
    qid = field(path, where, rec, "question_id", (int, str))
    video_id = str(field(path, where, rec, "video_id", (str, int)))
    dim = SUBTASKS[task_type][0]
    meta = {
        "benchmark": BENCHMARK,
        "task_type": task_type,
        "dimension": dim,
        "question_type": qtype,
        "video_id": video_id,
        "question_id": qid,
        "answer_text": rec.get("answer_text"),
        "minute_hop_count": rec.get("minute_hop_count"),
        "hop_length_label": rec.get("hop_length_label"),
        "difficulty": rec.get("difficulty"),
        "trajectory": trajectory,
    }
    return BenchmarkItem(
        id=f"{BENCHMARK}/{task_type}/{qid}",
        task=task_type,
        source=BENCHMARK,
        category=dim,
        question=field(path, where, rec, "question"),
        options=dict(options),
        answer=",".join(sorted(correct)),
        setting="base",
        template_id=0,
        media=clip(f"{video_id}.mp4"),
        meta=meta,
    )


def _task_type(path, where, value: Any) -> str:
    if value not in SUBTASKS:
        raise BenchmarkInputError(
            path, where, "task_type", f"unknown sub-task {value!r} (expected one of {list(SUBTASKS)})"
        )
    return value


def read(path: str | Path, *, task_type: str | None = None) -> list[BenchmarkItem]:
    """Items of a released task file (``.json``), of rows of the Hugging Face copy (``.jsonl`` /
    ``.parquet``; ``task_type`` from the row, the argument, or the file name), or of every task file in a
    folder (``video_name_mapping.json`` and other non-task files are skipped)."""
    path = Path(path)
    if path.is_dir():
        files = sorted(
            p for p in path.iterdir() if p.suffix in (".json", ".jsonl", ".parquet") and p.stem in SUBTASKS
        )
        if not files:
            raise BenchmarkInputError(
                path, "folder", None, f"no task files named after {list(SUBTASKS)[:3]}…"
            )
        return [it for f in files for it in read(f, task_type=task_type)]
    if path.suffix == ".parquet":
        from datasets import Dataset

        records = [(f"row {i}", dict(r)) for i, r in enumerate(Dataset.from_parquet(str(path)))]
        default = task_type or path.stem
    elif path.suffix == ".json":
        import json

        try:
            top = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise BenchmarkInputError(path, "file", None, f"cannot read ({err})") from None
        if isinstance(top, dict):
            default = _task_type(path, "top level", top.get("task_type", task_type or path.stem))
            records = read_records(path, list_key="items")
        else:
            default, records = task_type or path.stem, read_records(path)
    else:
        default, records = task_type or path.stem, read_records(path)
    items, seen = [], set()
    for where, rec in records:
        item = _item(path, where, rec, _task_type(path, where, rec.get("task_type") or default))
        if item.id in seen:
            raise BenchmarkInputError(
                path, where, "question_id", f"duplicate question_id {item.meta['question_id']!r}"
            )
        seen.add(item.id)
        items.append(item)
    return items


# ----------------------------------------------------------------------------- evidence-hop masking

MASKS = {"one": "Mask-1", "all": "Mask-All"}


def hop_span(hop: Mapping) -> tuple[float, float]:
    """A hop's interval in seconds: its ``event_time_range`` when it spans time, else the one-minute
    interval of its ``timestamp_minute`` (the paper: "when only a minute-level timestamp is available,
    we use the corresponding one-minute interval")."""
    rng = hop.get("event_time_range") if isinstance(hop.get("event_time_range"), Mapping) else {}
    start, end = rng.get("start_minute"), rng.get("end_minute")
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (start, end))
    if numbers and end > start >= 0:
        return 60.0 * start, 60.0 * end
    minute = float(hop["timestamp_minute"])
    return 60.0 * minute, 60.0 * (minute + 1)


def hop_spans(item: BenchmarkItem, which: str, seed: int = 0) -> list[tuple[float, float]]:
    """The spans to blank: ``which="all"`` every hop, ``"one"`` one hop drawn for this question from a
    generator seeded by (``seed``, item id) — the same hop whatever the order or sharding of the run."""
    spans = [hop_span(h) for h in item.meta["trajectory"]]
    if which == "all" or not spans:
        return spans
    if which != "one":
        raise ValueError(f"hop mask must be one of {list(MASKS)}, got {which!r}")
    return [spans[random.Random(f"{seed}:{item.id}").randrange(len(spans))]]


def mask_hops(items: Sequence[BenchmarkItem], which: str, seed: int = 0) -> None:
    """Replace each item's media by its clip with the chosen hops blanked (black frames, silence)."""
    for item in items:
        spans = hop_spans(item, which, seed)
        if item.media and spans:
            item.media = to_json(mask(from_json(item.media), spans))


def prompt(item: BenchmarkItem) -> str:
    """A minimal prompt, as the paper's (no chain of thought): letters only."""
    listing = "\n".join(f"{k}. {v}" for k, v in item.options.items())
    if item.meta.get("question_type") == "multiple":
        ask = (
            "More than one option may be correct. Answer with the letters of all correct options, "
            "comma-separated (for example: A,C), and nothing else."
        )
    else:
        ask = "Answer with the letter of the correct option only."
    return f"{item.question}\nOptions:\n{listing}\n\n{ask}"


# ----------------------------------------------------------------------------- parsing and scoring (pure)

_ANSWER_LINE = re.compile(
    r"\b(?i:answers?)(?:\s+(?i:is|are))?\s*[:：]?\s*[(\[]?"
    r"([A-Z](?:\s*(?:,|、|/|&|and|\s)\s*[A-Z])*)[)\]]?(?![A-Za-z])"
)
_ARTICLE = re.compile(r"\s+[a-z]")  # "Answer: A man ..." -- "A" is a word, not a letter


def _letters(value: Any, valid: Sequence[str]) -> list[str]:
    if isinstance(value, list):
        value = ",".join(str(v) for v in value)
    if not isinstance(value, str):
        return []
    compact = value.strip().strip(".")
    if re.fullmatch(r"[A-Z]{2,}", compact) and all(x in valid for x in compact):  # "AC"
        return list(compact)
    return [x for x in re.findall(r"(?<![A-Za-z])([A-Z])(?![A-Za-z])", value) if x in valid]


_LOWER_LIST = re.compile(r"[(\[]?[a-z][)\]]?(?:\s*(?:,|、|/|&|\band\b)\s*[(\[]?[a-z][)\]]?)*\.?")
_LOWER_ANSWER = re.compile(
    r"\b(?i:answers?)(?:\s+(?i:is|are))?\s*[:：]?\s*"
    r"([a-z](?:\s*(?:,|、|/|&)\s*[a-z])*)(?![A-Za-z'’])(?!\s+[a-z])"
)


def parse_prediction(
    text: str | None, letters: Sequence[str], protocol: str = "paper"
) -> tuple[tuple[str, ...], str]:
    """(sorted letters, rule). ``protocol="official"``: the released scripts' parser
    (``parse_official``). Otherwise, after dropping ``<think>`` blocks, in order: a JSON ``answer`` field,
    an ``Answer: A,C`` line (lower-case letters too), a response that is only letters ("b", "b,c,d"),
    bare option letters in the text. No letters -> ``()`` with rule "abstained"."""
    if protocol == "official":
        return parse_official(text, letters), "official parser"
    text = strip_reasoning(text)
    if _LOWER_LIST.fullmatch(text):  # "b", "b, c, d": only letters, so "a" is one too
        found = {x.upper() for x in re.findall(r"[a-z]", re.sub(r"\band\b", " ", text))} & set(letters)
        if found:
            return tuple(sorted(found)), "letters only"
    m = _LOWER_ANSWER.search(text)
    if m and not _ANSWER_LINE.search(text):
        found = set(_letters(m.group(1).upper(), letters))
        if found:
            return tuple(sorted(found)), "answer line"
    if "{" in text:
        try:
            obj = parse_json_reply(text, want=dict)
        except ValueError:
            obj = None
        if obj is not None and "answer" in obj:
            found = _letters(obj["answer"], letters)
            if found:
                return tuple(sorted(set(found))), "json"
    m = _ANSWER_LINE.search(text)
    if m and not (m.group(1) in ("A", "I") and _ARTICLE.match(text, m.end())):
        found = _letters(m.group(1), letters)
        if found:
            return tuple(sorted(set(found))), "answer line"
    if re.fullmatch(r"[A-Z]{2,}\.?", text):  # "AC"
        found = set(_letters(text, letters))
    else:
        found = letter_mentions(text, list(letters))
    if found:
        return tuple(sorted(found)), "bare letters"
    return (), "abstained"


def parse_official(text: str | None, letters: Sequence[str]) -> tuple[str, ...]:
    """The parser most official TraceAV-Bench eval scripts share (``parse_response_to_prediction`` in
    e.g. ``eval/baichuan_omni/eval_baichuan_omni.py`` of Heinz217/TraceAV-Bench-Submission): keep the text
    after the last ``</think>``; the first "answer / choice / options / selected" followed by ``:`` or
    spaces and a letter list (any case) gives the letters; else every stand-alone letter of the
    upper-cased text (so the article "a" reads as A). Letters are A-D there; here the item's letters."""
    text = text or ""
    cut = text.rfind("</think>")
    part = (text[cut + len("</think>") :] if cut != -1 else text).strip()
    span = "".join(sorted({x.upper() for x in letters}))
    cls = f"[{re.escape(span)}]"
    m = re.search(
        rf"(?:answer|choice|options|selected)[:\s]+({cls}(?:\s*[,，/]\s*{cls})*)", part, re.IGNORECASE
    )
    source = m.group(1) if m else " ".join(re.findall(rf"\b({cls})\b", part.upper()))
    return tuple(sorted(set(re.findall(cls, source.upper()))))
