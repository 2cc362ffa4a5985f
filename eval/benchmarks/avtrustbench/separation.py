"""Paired separation: how well a model tells a perturbed item from its own clean twin, whatever its bias.

Paired trust needs the model to cross the abstention threshold on the right side of *both* items of a pair;
a model that has learnt to notice a perturbation but is biased towards abstaining (or answering) scores 0
there. Separation reads the evidence before the threshold: each item's first-pass **abstention margin** —
the value of the "None of the above" option minus the best other option's under one option-scoring protocol
(> 0: the model abstains) — and, over (perturbed, clean twin) pairs, the share where the perturbed item's
margin is the larger (ties count half). 100 %: always more inclined to abstain on the perturbed one; 50 %:
cannot tell them apart. Read from a likelihood run's recorded option scores; nothing is re-run.

Pure functions of records and items (``tests/eval/test_trust_during_training.py`` checks them by hand).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping

from cavpref.data import CLEAN_TASK, BenchmarkItem
from cavpref.eval.benchmarks.avtrustbench.trust import record_key
from cavpref.eval.option_score import option_values
from cavpref.prompts import rotate


def first_pass_margins(
    records: Iterable[Mapping], items: Mapping[str, BenchmarkItem], protocol: str, *, pin: bool = False
) -> dict[str, float]:
    """item id -> the abstention margin of its first pass (rotation 0) under ``protocol``, for the items with
    a "None of the above" option whose first pass was scored (``records``: a likelihood run's records)."""
    out = {}
    for rec in records:
        item = items.get(rec.get("item_id"))
        if rec.get("status") != "ok" or rec.get("pass") != 0 or item is None or item.abstain_letter is None:
            continue
        values = option_values(rec["scores"], protocol)
        shown, new_of = rotate(item.options, rec.get("rotation", 0), pin=item.abstain_letter if pin else None)
        letters = list(shown)
        k = letters.index(new_of[item.abstain_letter])
        others = [v for j, v in enumerate(values[: len(letters)]) if j != k and v is not None]
        if values[k] is not None and others:
            out[item.id] = values[k] - max(others)
    return out


def twin_margins(margins: Mapping[str, float], items: Mapping[str, BenchmarkItem]) -> dict[str, list]:
    """Per perturbed task: (perturbed margin, clean twin margin) for the pairs both of whose margins are known.
    The twin is the CLEAN item of the same source record and setting (COT-Stitch / COT-Swap / CAT come from
    event records: no twin)."""
    twins = {
        (i.setting, record_key(i)): i.id
        for i in items.values()
        if i.task == CLEAN_TASK and i.id in margins and record_key(i)
    }
    pairs: dict[str, list[tuple[float, float]]] = {}
    for i in items.values():
        twin = twins.get((i.setting, record_key(i)))
        if i.task != CLEAN_TASK and i.id in margins and twin is not None:
            pairs.setdefault(i.task, []).append((margins[i.id], margins[twin]))
    return pairs


def pair_scores(margins: Mapping[str, float], items: Mapping[str, BenchmarkItem]) -> list[float]:
    """Every pair's separation score: 1 when the perturbed item's margin is the larger, ½ on a tie, else 0."""
    return [(a > b) + 0.5 * (a == b) for ps in twin_margins(margins, items).values() for a, b in ps]


def separation(margins: Mapping[str, float], items: Mapping[str, BenchmarkItem]) -> dict[str, dict]:
    """Per perturbed task and ``"all"``: ``{pairs, separation, abstain perturbed, abstain clean}`` (%) over
    the (perturbed, clean twin) pairs (``twin_margins``)."""
    pairs = twin_margins(margins, items)
    pairs["all"] = [p for task in sorted(pairs) for p in pairs[task]]
    return {
        task: {
            "pairs": len(ps),
            "separation": 100 * statistics.fmean((a > b) + 0.5 * (a == b) for a, b in ps),
            "abstain perturbed": 100 * statistics.fmean(a > 0 for a, _ in ps),
            "abstain clean": 100 * statistics.fmean(b > 0 for _, b in ps),
        }
        for task, ps in pairs.items()
        if ps
    }


__all__ = ["first_pass_margins", "pair_scores", "separation", "twin_margins"]
