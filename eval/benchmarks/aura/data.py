"""AURA (Galouga, Raj et al.): read the released QA files, prompt for answer + reasoning, AuraScore.

Released format (``rishieraj/aura``, one JSON object per line, as written by its QA generators)::

    {"question": str, "options": {"A": str, ...}, "correct_answer_key": "B", "gold_reasoning": str,
     "video_id": str, "category": "causal_reasoning" | "implicit distractions" | ...,  ["sync_status": ...]}

AuraScore (section 4, Algorithm 1), per item:

- ACC (0/1): the option letter the model names, compared exactly; a free-form answer that names no single
  letter is judged for semantic equivalence with the correct option by the LLM judge (the released
  evaluator judges every answer that way; an exact letter needs no judge).
- FCS: the judge decomposes gold and generated reasoning into atomic facts and returns the fraction of gold
  facts the generated reasoning states correctly — a float in [0, 1] (``common.score_from_reply``).
- CIS: the judge sanitises both reasonings into abstract claims; the NLI cross-encoder (``eval.nli``) gives
  P(entailment) with premise = sanitised gold, hypothesis = sanitised generated.
- FCS = CIS = 0 when the answer is wrong, and no judge call is made for them.

The paper reports ACC / FCS / CIS per task (Table 2) and defines no combined number; neither do we.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cavpref.data import BenchmarkItem
from cavpref.eval.common import BenchmarkInputError, field, mean, read_records
from cavpref.eval.extract import match_choice
from cavpref.media.spec import clip

BENCHMARK = "aura"
# Table 2 column order: (task code, released category, column title)
TASKS: tuple[tuple[str, str, str], ...] = (
    ("ID", "implicit_distractions", "Distractions"),
    ("CR", "causal_reasoning", "Causal Reasoning"),
    ("PSP", "performer_skill_profiling", "Skill Profiling"),
    ("TPR", "pitch_timbre_reasoning", "Timbre/Pitch Reasoning"),
    ("UANS", "unanswerability", "Unanswerability"),
    ("TSA", "tempo_av_sync_analysis", "Tempo/AV-Sync."),
)
_BY_CATEGORY = {cat: code for code, cat, _ in TASKS}
TITLES = {code: title for code, _, title in TASKS}


def task_code(category: str) -> str | None:
    """Released ``category`` -> task code ("implicit distractions" and "implicit_distractions" alike)."""
    key = re.sub(r"[\s\-/]+", "_", category.strip().lower())
    return _BY_CATEGORY.get(key) or (key.upper() if key.upper() in TITLES else None)


def item_id(task: str, video_id: str, question: str) -> str:
    """Stable id: the released records carry none (its evaluator keys on the question text)."""
    return f"aura/{task}/{video_id}/{hashlib.sha1(question.encode()).hexdigest()[:10]}"


def read(path: str | Path, *, video_pattern: str = "{video_id}.mp4") -> list[BenchmarkItem]:
    """Items of one released AURA jsonl (or json list). Media: the clip ``video_pattern`` names, relative to
    the media root (video and its audio)."""
    items, seen = [], set()
    for where, rec in read_records(path):
        question = field(path, where, rec, "question")
        options = field(path, where, rec, "options", dict, decode_json=True)
        if not options or not all(isinstance(k, str) and isinstance(v, str) for k, v in options.items()):
            raise BenchmarkInputError(path, where, "options", f"expected letter -> text, got {options!r:.80}")
        key = field(path, where, rec, "correct_answer_key").strip()
        if key not in options:
            raise BenchmarkInputError(
                path, where, "correct_answer_key", f"{key!r} is not among options {list(options)}"
            )
        category = field(path, where, rec, "category")
        task = task_code(category)
        if task is None:
            raise BenchmarkInputError(
                path,
                where,
                "category",
                f"unknown AURA category {category!r} (expected one of {[c for _, c, _ in TASKS]})",
            )
        video_id = str(field(path, where, rec, "video_id", (str, int)))
        gold = field(path, where, rec, "gold_reasoning")
        iid = item_id(task, video_id, question)
        if iid in seen:
            raise BenchmarkInputError(path, where, "question", f"duplicate question for video {video_id!r}")
        seen.add(iid)
        meta = {
            "benchmark": BENCHMARK,
            "gold_reasoning": gold,
            "video_id": video_id,
            "released_category": category,
        }
        if "sync_status" in rec:
            meta["sync_status"] = rec["sync_status"]
        items.append(
            BenchmarkItem(
                id=iid,
                task=task,
                source=BENCHMARK,
                category=TITLES[task],
                question=question,
                options=dict(options),
                answer=key,
                setting="base",
                template_id=0,
                media=clip(video_pattern.format(video_id=video_id)),
                meta=meta,
            )
        )
    return items


# ----------------------------------------------------------------------------- model prompt and response


def prompt(item: BenchmarkItem) -> str:
    """The question with its options, asking for the letter and the reasoning (AURA evaluates both)."""
    listing = "\n".join(f"{k}. {v}" for k, v in item.options.items())
    return (
        f"{item.question}\nOptions:\n{listing}\n\nAnswer with the letter of the correct option, then explain "
        "the audio-visual evidence that supports it, in this format:\n"
        "Answer: <letter>\nReasoning: <your reasoning>"
    )


def letter_of(answer: str, item: BenchmarkItem) -> str | None:
    """The single option letter an answer names (step-1 heuristics of ``eval.extract``), else None."""
    ext = match_choice(answer, item.options, task=item.task)
    return ext.choice if ext.choice in item.options else None


def official_skip(answer: str | None, reasoning: str | None) -> bool:
    """The released ``scripts/evaluation/evaluation.py`` (rishieraj/aura) drops a record from every
    average when the generated answer or reasoning is empty (``if not all([...]): continue``); the
    paper's Algorithm 1 counts it as wrong (``--protocol paper``)."""
    return not (answer or "").strip() or not (reasoning or "").strip()


# ----------------------------------------------------------------------------- metrics (pure)


@dataclass(frozen=True)
class AuraRecord:
    """The scored outcome of one item; ``fcs`` / ``cis`` are 0 for a wrong answer."""

    task: str
    correct: bool
    fcs: float
    cis: float


def aura_summary(records: Sequence[AuraRecord], reasoning: bool = True) -> dict[str, Any]:
    """ACC / FCS / CIS in percent (means of the per-item values), and n. ``reasoning=False`` (no judge
    ran): FCS and CIS are not available."""
    if not records:
        return {"n": 0, "ACC": None, "FCS": None, "CIS": None}
    return {
        "n": len(records),
        "ACC": 100.0 * mean(float(r.correct) for r in records),
        "FCS": 100.0 * mean(r.fcs if r.correct else 0.0 for r in records) if reasoning else None,
        "CIS": 100.0 * mean(r.cis if r.correct else 0.0 for r in records) if reasoning else None,
    }


def aura_metrics(records: Sequence[AuraRecord], reasoning: bool = True) -> dict[str, Any]:
    """Per task in Table 2 order, plus ``overall`` (mean over all items, as the released evaluator
    prints it) and ``task_mean`` (unweighted mean of the task columns present)."""
    per_task = {code: aura_summary([r for r in records if r.task == code], reasoning) for code, _, _ in TASKS}
    per_task = {k: v for k, v in per_task.items() if v["n"]}
    task_mean = {m: mean(v[m] for v in per_task.values() if v[m] is not None) for m in ("ACC", "FCS", "CIS")}
    return {
        "per_task": per_task,
        "overall": aura_summary(records, reasoning),
        "task_mean": {"n_tasks": len(per_task), **task_mean},
    }


def table2_markdown(metrics: Mapping[str, Any], name: str = "model") -> str:
    """One row in the layout of AURA's Table 2: ACC / FCS / CIS under each task, then overall."""
    per = metrics["per_task"]
    codes = [c for c, _, _ in TASKS if c in per]
    columns = " | ".join(f"{TITLES[c]} ACC | FCS | CIS" for c in codes)
    head = f"| Method | {columns} | Overall ACC | FCS | CIS |"
    sep = "|---" * (2 + 3 * len(codes) + 2) + "|"

    def cells(s):
        return " | ".join("–" if s[m] is None else f"{s[m]:.2f}" for m in ("ACC", "FCS", "CIS"))

    row = f"| {name} | " + " | ".join(cells(per[c]) for c in codes) + f" | {cells(metrics['overall'])} |"
    return f"{head}\n{sep}\n{row}"
