"""TraceAV-Bench's metrics and the appendix's analyses, pure functions of scored records (tests use
hand-computed numbers): accuracy per sub-task with the random-guess baseline of its option structure, per
dimension, Gen. Avg and MH Avg (Tables 2-3), the hop-count and first-hop-position breakdowns (Figure 5), the
error-answer entropy and the per-video correlation of hallucination and general accuracy (Figure 10)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cavpref.eval.benchmarks.traceav.data import DIMENSIONS, GENERAL, HALLUCINATION, SUBTASKS
from cavpref.eval.common import mean


def hop_bin(hops: int) -> str:
    return "2-4" if 2 <= hops <= 4 else ("5+" if hops >= 5 else "<2")


def first_hop_minute(trajectory: Sequence[Mapping]) -> float | None:
    return min((float(h["timestamp_minute"]) for h in trajectory), default=None)


def position_bin(first_minute: float | None, duration_s: float | None) -> str:
    """Where the first evidence hop sits: "first 20%" (< 0.2 of the video), "20-40%", ">=40%", or
    "unknown" without a duration. The paper compares the first and the last bin."""
    if first_minute is None or not duration_s or duration_s <= 0:
        return "unknown"
    frac = 60.0 * first_minute / duration_s
    return "first 20%" if frac < 0.2 else ("20-40%" if frac < 0.4 else ">=40%")


def random_guess(n_options: int, n_correct: int, strategy: str = "one_letter") -> float:
    """Expected accuracy of a random guess under exact set match. ``one_letter`` (the paper's baseline:
    pick one option uniformly) can never match a multi-answer set; ``type_aware`` knows the question type
    and picks uniformly among the sets it allows (one letter, or any 2+ letters)."""
    if strategy == "one_letter":
        return 1.0 / n_options if n_correct == 1 else 0.0
    if strategy == "type_aware":
        return 1.0 / n_options if n_correct == 1 else 1.0 / (2**n_options - n_options - 1)
    raise ValueError(f"unknown random-guess strategy {strategy!r} (one_letter | type_aware)")


@dataclass(frozen=True)
class TraceRecord:
    task_type: str
    predicted: tuple[str, ...]
    gold: tuple[str, ...]
    n_options: int
    hops: int
    first_minute: float | None = None
    duration_s: float | None = None
    video_id: str | None = None

    @property
    def correct(self) -> bool:
        return bool(self.predicted) and set(self.predicted) == set(self.gold)

    @property
    def abstained(self) -> bool:
        return not self.predicted


def _acc(records: Sequence[TraceRecord]) -> dict[str, Any]:
    n = len(records)
    return {
        "n": n,
        "acc": None if not n else 100.0 * sum(r.correct for r in records) / n,
        "abstained": sum(r.abstained for r in records),
    }


def traceav_metrics(records: Sequence[TraceRecord]) -> dict[str, Any]:
    """Per sub-task accuracy (with the random-guess baseline of its option structure), per dimension
    (macro over its sub-tasks, and micro), Gen. Avg and MH Avg (unweighted over the sub-tasks present),
    and the hop-count and first-hop-position breakdowns. Accuracies in percent."""
    per_task = {}
    for t in SUBTASKS:
        rs = [r for r in records if r.task_type == t]
        if rs:
            guess = {
                s: 100.0 * mean(random_guess(r.n_options, len(r.gold), s) for r in rs)
                for s in ("one_letter", "type_aware")
            }
            per_task[t] = {
                **_acc(rs),
                "abbrev": SUBTASKS[t][1],
                "dimension": SUBTASKS[t][0],
                "random_guess": guess["one_letter"],
                "random_guess_type_aware": guess["type_aware"],
            }
    dims = {}
    for d in DIMENSIONS:
        tasks = [v for t, v in per_task.items() if SUBTASKS[t][0] == d]
        if tasks:
            micro = _acc([r for r in records if SUBTASKS[r.task_type][0] == d])
            dims[d] = {
                "macro": mean(v["acc"] for v in tasks),
                "micro": micro["acc"],
                "n": micro["n"],
                "n_subtasks": len(tasks),
            }

    def avg(group):
        present = [per_task[t] for t in group if t in per_task]
        return {
            "acc": mean(v["acc"] for v in present),
            "random_guess": mean(v["random_guess"] for v in present),
            "n_subtasks": len(present),
            "complete": len(present) == len(group),
        }

    hops = {b: _acc([r for r in records if hop_bin(r.hops) == b]) for b in ("2-4", "5+", "<2")}
    pos = {
        b: _acc([r for r in records if position_bin(r.first_minute, r.duration_s) == b])
        for b in ("first 20%", "20-40%", ">=40%", "unknown")
    }
    qtype = {
        k: _acc([r for r in records if (len(r.gold) > 1) == (k == "multiple")])
        for k in ("single", "multiple")
    }
    general = [r for r in records if r.task_type in GENERAL]
    return {
        "overall": _acc(records),
        "error_entropy": {"general": error_entropy(general), "all": error_entropy(records)},
        "video_correlation": video_correlation(records),
        "per_subtask": per_task,
        "per_dimension": dims,
        "gen_avg": avg(GENERAL),
        "mh_avg": avg(HALLUCINATION),
        "by_hops": {k: v for k, v in hops.items() if v["n"]},
        "by_first_hop": {k: v for k, v in pos.items() if v["n"]},
        "by_question_type": qtype,
    }


# ----------------------------------------------------------------------------- the appendix analyses (pure)


def error_entropy(records: Sequence[TraceRecord]) -> dict[str, Any]:
    """Shannon entropy (bits) of the error-answer distribution: over the wrong predictions, the frequency
    of each pattern (the sorted tuple of predicted letters; an abstention is the empty pattern). Summed as
    p log2(1/p): the negated sum of p log2 p is -0.0 for a single pattern, printed "-0.000"."""
    wrong = Counter(tuple(sorted(r.predicted)) for r in records if not r.correct)
    n = sum(wrong.values())
    bits = sum(c / n * math.log2(n / c) for c in wrong.values()) if n else None
    return {"bits": bits, "errors": n, "patterns": len(wrong)}


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's r; None with fewer than two points or a constant series (r is undefined)."""
    if len(x) < 2:
        return None
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx, syy = sum((a - mx) ** 2 for a in x), sum((b - my) ** 2 for b in y)
    return None if sxx == 0 or syy == 0 else sxy / math.sqrt(sxx * syy)


def video_correlation(records: Sequence[TraceRecord]) -> dict[str, Any]:
    """Across the videos that have both hallucination (MH) and general items: each video's MH accuracy
    and general accuracy (percent), and the Pearson correlation between the two (the appendix's
    Figure 10b, for one model)."""
    by_video: dict[str, dict[str, list[bool]]] = defaultdict(lambda: {"mh": [], "general": []})
    for r in records:
        if r.video_id is not None:
            by_video[r.video_id]["mh" if r.task_type in HALLUCINATION else "general"].append(r.correct)
    both = {v: g for v, g in sorted(by_video.items()) if g["mh"] and g["general"]}
    mh = [100.0 * sum(g["mh"]) / len(g["mh"]) for g in both.values()]
    gen = [100.0 * sum(g["general"]) / len(g["general"]) for g in both.values()]
    return {
        "r": pearson(mh, gen),
        "n_videos": len(both),
        "videos": {v: [a, b] for v, a, b in zip(both, mh, gen)},
    }
