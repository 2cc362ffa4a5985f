"""Metrics: pure functions from per-item outcomes to the numbers of the paper's tables.

Top-1 accuracy in percent, per task, per category and per source dataset (Tables 2-4, 9-11), circular
vs vanilla (Table 8), per setting (base / instruction), per dimension (the radar of Fig. 2), with the
unparsed rate beside every accuracy. Only evaluated items enter an accuracy; skipped and incomplete items
are counted separately so that items = evaluated + skipped + incomplete always holds.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from cavpref import task_registry
from cavpref.data import CATEGORIES


@dataclass
class ItemOutcome:
    """One item after all its passes. ``vanilla``: pass 0 right; ``circular``: every pass right."""

    item_id: str
    task: str
    setting: str
    source: str
    category: str
    status: str = "evaluated"  # evaluated | skipped | incomplete
    reason: str = ""
    vanilla: bool = False
    circular: bool = False
    passes_run: int = 0
    passes_total: int = 0
    unparsed_passes: int = 0
    judged_passes: int = 0
    unparsed_reasons: Counter = field(default_factory=Counter)
    # the source record (clip + question) the item was built from: with the setting, the key that pairs a
    # perturbed item with its CLEAN twin (cavpref.eval.trust); "" when unknown
    record: str = ""
    abstained: bool | None = None  # whether the first pass (rotation 0) abstained; None when unknown


def percent(correct: int, total: int) -> float | None:
    return None if total == 0 else round(100.0 * correct / total, 2)


def accuracy_block(outcomes: Sequence[ItemOutcome], circular: bool) -> dict:
    """n, vanilla %, circular % (None for a vanilla run), unparsed % of passes, judged % of passes."""
    done = [o for o in outcomes if o.status == "evaluated"]
    passes = sum(o.passes_run for o in done)
    return {
        "n": len(done),
        "vanilla": percent(sum(o.vanilla for o in done), len(done)),
        "circular": percent(sum(o.circular for o in done), len(done)) if circular else None,
        "unparsed_rate": percent(sum(o.unparsed_passes for o in done), passes),
        "judged_rate": percent(sum(o.judged_passes for o in done), passes),
    }


def primary(block: dict) -> float | None:
    """The headline number: circular where it was run (the paper's main tables), else vanilla."""
    return block["circular"] if block.get("circular") is not None else block.get("vanilla")


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


def counts(outcomes: Sequence[ItemOutcome]) -> dict:
    """How many items were evaluated, skipped (and why), left incomplete; passes run and saved."""
    status = Counter(o.status for o in outcomes)
    done = [o for o in outcomes if o.status == "evaluated"]
    reasons = Counter(o.reason for o in outcomes if o.status == "skipped")
    unparsed = Counter()
    for o in done:
        unparsed.update(o.unparsed_reasons)
    return {
        "items": len(outcomes),
        "evaluated": status["evaluated"],
        "skipped": status["skipped"],
        "incomplete": status["incomplete"],
        "skip_reasons": dict(sorted(reasons.items())),
        "unparsed_reasons": dict(sorted(unparsed.items())),
        "passes_run": sum(o.passes_run for o in done),
        "passes_full": sum(o.passes_total for o in done),
        "passes_saved": sum(o.passes_total - o.passes_run for o in done),
    }


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
