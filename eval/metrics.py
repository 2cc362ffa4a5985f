"""What every benchmark's metrics start from: per-item outcomes, item counts, accuracy blocks.

``ItemOutcome`` is one item after all its passes; ``counts`` reconciles items = evaluated + skipped +
incomplete for every run (results.json ``counts``); ``accuracy_block`` is top-1 accuracy in percent with
the unparsed and judged rates beside it. Only evaluated items enter an accuracy. The benchmarks' own
tables are in their folders (``eval/benchmarks/<name>/``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field


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
    # perturbed item with its CLEAN twin (benchmarks/avtrustbench/trust.py); "" when unknown
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
