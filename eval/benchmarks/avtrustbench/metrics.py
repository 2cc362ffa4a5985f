"""AVTrustBench's tables: pure functions from per-item outcomes to the numbers of the paper's tables.

Top-1 accuracy in percent, per task, per category and per source dataset (Tables 2-4, 9-11), circular
vs vanilla (Table 8), per setting (base / instruction), per dimension (the radar of Fig. 2), with the
unparsed rate beside every accuracy (``cavpref.eval.metrics.accuracy_block``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from cavpref import task_registry
from cavpref.data import CATEGORIES
from cavpref.eval.metrics import ItemOutcome, accuracy_block, counts, primary


def _ordered(keys: Iterable[str], order: Sequence[str]) -> list[str]:
    keys = set(keys)
    return [k for k in order if k in keys] + sorted(k for k in keys if k not in order)


def _by(outcomes: Iterable[ItemOutcome], attr: str) -> dict[str, list[ItemOutcome]]:
    groups: dict[str, list[ItemOutcome]] = defaultdict(list)
    for o in outcomes:
        groups[getattr(o, attr)].append(o)
    return groups


def _grouped(outcomes: Sequence[ItemOutcome], attr: str, order: Sequence[str], circular: bool) -> dict:
    groups = _by(outcomes, attr)
    return {k: accuracy_block(groups[k], circular) for k in _ordered(groups, order)}


def task_block(outcomes: Sequence[ItemOutcome], circular: bool) -> dict:
    """A task's accuracy, per category, and per source dataset (then per category inside it)."""
    by_src = _by(outcomes, "source")
    return {
        **accuracy_block(outcomes, circular),
        "categories": _grouped(outcomes, "category", CATEGORIES, circular),
        "sources": {
            s: {
                **accuracy_block(by_src[s], circular),
                "categories": _grouped(by_src[s], "category", CATEGORIES, circular),
            }
            for s in sorted(by_src)
        },
    }


def dimension_means(tasks: dict[str, dict]) -> dict[str, float | None]:
    """Macro mean of the headline accuracy of each dimension's tasks that were evaluated."""
    out = {}
    for dim, members in task_registry.dimensions().items():
        vals = [primary(tasks[t]) for t in members if t in tasks and primary(tasks[t]) is not None]
        out[dim] = round(sum(vals) / len(vals), 2) if vals else None
    return out


def summarize(outcomes: Sequence[ItemOutcome], *, circular: bool) -> dict:
    """Everything results.json reports, per setting then per task (the items' tasks, in declaration order)."""
    settings = {}
    for setting, group in sorted(_by(outcomes, "setting").items()):
        by_task = _by(group, "task")
        tasks = {t: task_block(by_task[t], circular) for t in task_registry.order(by_task)}
        settings[setting] = {
            "overall": accuracy_block(group, circular),
            "dimensions": dimension_means(tasks),
            "tasks": tasks,
        }
    return {
        "circular": circular,
        "counts": counts(outcomes),
        "overall": accuracy_block(outcomes, circular),
        "settings": settings,
    }
