"""MMAR / MMAR-Rubrics (``ddlBoJack/MMAR``; metrics as in the Audio-Cogito card): audio-only reasoning.

Released format: ``MMAR-meta.jsonl``, one object per line with ``id``, ``audio_path`` ("./audio/<id>.wav"),
``question``, ``choices`` (list of str), ``answer`` (the text of one choice), ``modality`` (sound, music,
speech, mix-…), ``category`` (Signal / Perception / Semantic / Cultural Layer), ``sub-category``,
``thinking`` (the reference reasoning), ``cue`` and ``rubric`` (five criteria ``{name, scoring_point, note,
choices: [0, 1]}``). Items run with no video: the media is the audio file alone.

Metrics (pure functions below):

- Avg: accuracy. A prediction is correct when it is exactly an option letter naming the answer, or by
  MMAR's string-match rule: every word token of the answer occurs in the prediction and no token that
  only a wrong choice has does.
- r_i = satisfied / total rubric points for a correct answer (points over the maximum of each criterion's
  allowed scores), 0 for a wrong one. Rubrics = mean r_i over all items; CRS = Σ r_i / Σ c_i, defined as 0
  when no answer is correct (as the card's reference code does).
- Variance. "The protocol requires five runs and reports the mean of the middle three scores" has two
  readings in the wild, and both are offered, each named in results.json and the report:
  ``raters`` — the model answers once, K judge calls per answer, r_i is the mean after dropping the lowest
  and highest (the released ``evaluation_rubrics.py``); ``runs`` — the same K ratings read as K runs (run
  k uses every item's k-th rating), the metric is the mean of the middle three run-level values;
  ``inference_runs`` (``--runs R``) — the model answers R times (sampling, seed per run), each answer is
  rated by the K raters (trimmed mean as in ``raters``), and each metric is the mean of the middle values
  of the R run-level metrics (for R = 5, the middle three). With 5 values every trim drops one at each end.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cavpref.data import LETTERS, BenchmarkItem
from cavpref.eval.common import (
    BenchmarkInputError,
    field,
    grouped,
    mean,
    parse_json_reply,
    read_records,
    trim_min_max,
)
from cavpref.eval.extract import strip_reasoning
from cavpref.media.spec import clip, drop_video

BENCHMARK = "mmar"
PROMPT_VERSION = "mmar-rubric/v1"
DEFAULT_RATERS = 5


def _audio_path(path, where, raw: str) -> str:
    rel = raw.replace("\\", "/")
    while rel.startswith("./"):
        rel = rel[2:]
    if not rel or rel.startswith("/") or ".." in rel.split("/"):
        raise BenchmarkInputError(path, where, "audio_path", f"{raw!r} must be relative to the data root")
    return rel


def _rubric(path, where, rec) -> list[dict] | None:
    rubric = field(path, where, rec, "rubric", list, optional=True, decode_json=True)
    if rubric is None:
        return None
    for i, c in enumerate(rubric):
        ok = (
            isinstance(c, dict)
            and isinstance(c.get("name"), str)
            and isinstance(c.get("scoring_point"), str)
            and isinstance(c.get("choices"), list)
            and c["choices"]
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in c["choices"])
        )
        if not ok:
            raise BenchmarkInputError(
                path, where, f"rubric[{i}]", "needs name, scoring_point and numeric choices"
            )
    return rubric


def read(path: str | Path) -> list[BenchmarkItem]:
    """Items of ``MMAR-meta.jsonl`` (or a predictions file in the same format)."""
    items = []
    for where, rec in read_records(path):
        rid = str(field(path, where, rec, "id", (str, int)))
        choices = field(path, where, rec, "choices", list, decode_json=True)
        if not 2 <= len(choices) <= len(LETTERS) or not all(isinstance(c, str) for c in choices):
            raise BenchmarkInputError(path, where, "choices", f"expected 2+ strings, got {choices!r:.80}")
        answer = field(path, where, rec, "answer")
        if answer not in choices:
            raise BenchmarkInputError(
                path, where, "answer", f"{answer!r} is not one of the choices {choices}"
            )
        options = dict(zip(LETTERS, choices))
        modality = field(path, where, rec, "modality")
        meta = {
            "benchmark": BENCHMARK,
            "modality": modality,
            "sub_category": rec.get("sub-category"),
            "thinking": rec.get("thinking", ""),
            "cue": rec.get("cue") or [],
            "rubric": _rubric(path, where, rec),
            "answer_text": answer,
            "language": rec.get("language"),
        }
        items.append(
            BenchmarkItem(
                id=rid,
                task=modality,
                source=BENCHMARK,
                category=field(path, where, rec, "category"),
                question=field(path, where, rec, "question"),
                options=options,
                answer=LETTERS[choices.index(answer)],
                setting="base",
                template_id=0,
                media=drop_video(clip(_audio_path(path, where, field(path, where, rec, "audio_path")))),
                meta=meta,
            )
        )
    return items


def prompt(item: BenchmarkItem) -> str:
    listing = "\n".join(f"{k}. {v}" for k, v in item.options.items())
    return (
        f"{item.question}\nChoices:\n{listing}\n\nThink step by step about the audio, then give the final "
        "answer, in this format:\nReasoning: <your step-by-step reasoning>\nAnswer: <the text of one choice>"
    )


# ----------------------------------------------------------------------------- answer correctness


def _tokens(text: str) -> set[str]:
    return set(re.findall(r"\b\w+\b", text.lower()))


def string_match(answer: str, prediction: str, choices: Sequence[str]) -> bool:
    """MMAR's rule: all answer tokens in the prediction, none of the tokens only wrong choices have."""
    pred, gold = _tokens(prediction), _tokens(answer)
    if not pred:
        return False
    wrong_only: set[str] = set()
    for c in choices:
        tokens = _tokens(c)
        if tokens != gold:
            wrong_only |= tokens - gold
    return gold <= pred and pred.isdisjoint(wrong_only)


_LETTER_ONLY = re.compile(r"[(\[]?([A-Z])[)\]]?[.:]?")


def is_correct(prediction: str | None, item: BenchmarkItem, protocol: str = "paper") -> tuple[bool, str]:
    """(correct, how). ``paper``: reasoning blocks dropped, then an exact option letter ("B", "(B)", "B.")
    is compared as a letter; anything else goes through the string-match rule on the answer text.
    ``official``: the string-match rule alone, on the prediction as given (``code/evaluation.py`` and
    ``code/evaluation_rubrics.py`` of ddlBoJack/MMAR), so a bare letter is wrong."""
    if protocol == "official":
        return string_match(
            item.options[item.answer], prediction or "", list(item.options.values())
        ), "string match (official)"
    pred = strip_reasoning(prediction).strip()
    m = _LETTER_ONLY.fullmatch(pred)
    if m and m.group(1) in item.options:
        return m.group(1) == item.answer, "option letter"
    return string_match(item.options[item.answer], pred, list(item.options.values())), "string match"


# ----------------------------------------------------------------------------- rubric judge


_SYSTEM = (
    "You are an impartial, meticulous evaluator. You assess a model's reasoning against a ground-truth "
    "answer, a reference reasoning and a rubric of criteria. Follow the rubric strictly."
)


def rubric_messages(item: BenchmarkItem, reasoning: str, answer: str) -> list[dict]:
    rubric = item.meta.get("rubric")
    if not rubric:
        raise ValueError(f"item {item.id}: no rubric to score against")
    criteria = "\n".join(
        f"{i + 1}. {c['name']}\n   Scoring rule: {c['scoring_point']}\n   Allowed scores: {c['choices']}"
        for i, c in enumerate(rubric)
    )
    shape = ", ".join(
        f'{{"name": {json.dumps(c["name"])}, "score": <one of {c["choices"]}>, "justification": "..."}}'
        for c in rubric
    )
    user = (
        f"Question: {item.question}\nCorrect answer: {item.options[item.answer]}\n"
        f"Reference reasoning: {item.meta.get('thinking', '')}\n\nRubric:\n{criteria}\n\n"
        f"Model's reasoning:\n{reasoning}\nModel's final answer: {answer}\n\n"
        f"Score every criterion. Reply with only a JSON list, one object per criterion in order: [{shape}]"
    )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]


def parse_rubric_reply(text: str | None, rubric: Sequence[Mapping]) -> list[float]:
    """The per-criterion scores, validated: one per criterion, each among that criterion's choices."""
    scores = parse_json_reply(text, want=list)
    if len(scores) != len(rubric):
        raise ValueError(f"judge scored {len(scores)} criteria, the rubric has {len(rubric)}")
    out = []
    for i, (s, c) in enumerate(zip(scores, rubric)):
        value = s.get("score") if isinstance(s, dict) else s
        if isinstance(value, str) and re.fullmatch(r"-?\d+(\.\d+)?", value.strip()):
            value = float(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value not in c["choices"]:
            raise ValueError(f"criterion {i + 1} ({c['name']!r}): score {value!r} not among {c['choices']}")
        out.append(float(value))
    return out


def rubric_fraction(scores: Sequence[float], rubric: Sequence[Mapping]) -> float:
    """Satisfied points over available points (each criterion's maximum allowed score)."""
    total = sum(max(c["choices"]) for c in rubric)
    return 0.0 if total == 0 else sum(scores) / total


# ----------------------------------------------------------------------------- metrics (pure)


@dataclass(frozen=True)
class MMARRecord:
    """One scored item: ``ratings`` are the K per-rater r values (empty for a wrong answer)."""

    id: str
    correct: bool
    ratings: tuple[float, ...] = ()
    modality: str | None = None
    category: str | None = None
    sub_category: str | None = None


def _rubrics_crs(correct: Sequence[bool], r: Sequence[float]) -> tuple[float, float]:
    n_correct = sum(correct)
    return sum(r) / len(r), (sum(r) / n_correct if n_correct else 0.0)


def summary(records: Sequence[MMARRecord], protocol: str = "raters") -> dict[str, Any]:
    """Avg / Rubrics / CRS (percent) of ``records`` under one variance protocol."""
    if not records:
        return {"n": 0, "n_correct": 0, "Avg": None, "Rubrics": None, "CRS": None}
    correct = [r.correct for r in records]
    for rec in records:
        if protocol != "accuracy" and rec.correct and not rec.ratings:
            raise ValueError(f"item {rec.id}: correct but not rated")
    if protocol == "raters":
        r = [trim_min_max(x.ratings) if x.correct else 0.0 for x in records]
        rubrics, crs = _rubrics_crs(correct, r)
    elif protocol == "accuracy":  # no judge: Avg only
        return {
            "n": len(records),
            "n_correct": sum(correct),
            "Avg": 100.0 * mean(map(float, correct)),
            "Rubrics": None,
            "CRS": None,
        }
    elif protocol == "runs":
        k = {len(x.ratings) for x in records if x.correct}
        if len(k) > 1:
            raise ValueError(f"the runs protocol needs the same number of ratings per item, got {sorted(k)}")
        runs = [
            _rubrics_crs(correct, [x.ratings[j] if x.correct else 0.0 for x in records])
            for j in range(k.pop() if k else 1)
        ]
        rubrics, crs = trim_min_max([a for a, _ in runs]), trim_min_max([b for _, b in runs])
    else:
        raise ValueError(f"unknown protocol {protocol!r} (raters | runs | accuracy)")
    return {
        "n": len(records),
        "n_correct": sum(correct),
        "Avg": 100.0 * mean(map(float, correct)),
        "Rubrics": 100.0 * rubrics,
        "CRS": 100.0 * crs,
    }


def inference_runs(per_item: Sequence[Sequence[MMARRecord]], rated: bool = True) -> dict[str, Any]:
    """The ``inference_runs`` protocol: ``per_item[i][j]`` is item i's record of run j (its answer of that
    run, with that answer's K ratings). Run j's Avg / Rubrics / CRS use every item's run-j record (r_i the
    trimmed mean of its ratings); each metric is then ``trim_min_max`` over the runs. ``per_run`` keeps
    every run's numbers."""
    if not per_item:
        return {**summary([], "accuracy"), "runs": 0, "per_run": []}
    n_runs = {len(runs) for runs in per_item}
    if len(n_runs) != 1:
        raise ValueError(f"inference runs: every item needs the same number of runs, got {sorted(n_runs)}")
    runs = [
        summary([item[j] for item in per_item], "raters" if rated else "accuracy")
        for j in range(n_runs.pop())
    ]
    out = {"n": runs[0]["n"], "runs": len(runs), "per_run": runs}
    for key in ("Avg", "Rubrics", "CRS"):
        values = [r[key] for r in runs]
        out[key] = None if any(v is None for v in values) else trim_min_max(values)
    out["n_correct"] = trim_min_max([r["n_correct"] for r in runs])
    return out


def mmar_metrics(
    records: Sequence[MMARRecord], protocols: Sequence[str] = ("raters", "runs")
) -> dict[str, Any]:
    """Each protocol (``accuracy`` alone when nothing was judged), overall and by modality / category /
    sub-category."""
    out: dict[str, Any] = {}
    for protocol in protocols:

        def summarise(group, protocol=protocol):
            return summary(group, protocol)

        out[protocol] = {
            "overall": summarise(records),
            "modality": grouped(records, lambda r: r.modality, summarise),
            "category": grouped(records, lambda r: r.category, summarise),
            "sub_category": grouped(records, lambda r: r.sub_category, summarise),
        }
    return out


def inference_runs_metrics(per_item: Sequence[Sequence[MMARRecord]], rated: bool = True) -> dict[str, Any]:
    """``inference_runs`` overall and by modality / category / sub-category (each item grouped by its
    first run's record)."""

    def summarise(group):
        return inference_runs(group, rated)

    return {
        "overall": summarise(per_item),
        "modality": grouped(per_item, lambda runs: runs[0].modality, summarise),
        "category": grouped(per_item, lambda runs: runs[0].category, summarise),
        "sub_category": grouped(per_item, lambda runs: runs[0].sub_category, summarise),
    }
