"""Trust metrics that blind abstention cannot game: the paired trust score, abstention rates, reference rows.

Why: 7 of AVTrustBench's 9 tasks have "None of the above" as the right answer, so a model that abstains
whenever it may scores 100 % on them while answering nothing. The plain per-task accuracy cannot tell a
model that *detects* a perturbation from one that abstains blindly; these numbers can:

- **paired trust** (per perturbed task): over the perturbed items whose clean twin (the CLEAN item built
  from the same source record — same clip and question — in the same setting) was evaluated too, the
  percentage where the model answers the perturbed item right (abstains where it should) *and* its clean
  twin right. Always abstaining gets 0 (its clean twins are wrong); so does never abstaining on the
  abstention tasks. Computed for vanilla (pass 0) and, on a CircularEval run, circular correctness. Items
  without a twin (COT-Stitch / COT-Swap / CAT come from event records with no question) are counted as
  unpaired, never scored.
- **abstention rate** per task: the percentage of evaluated items whose first pass (rotation 0) is an
  abstention (the "None of the above" letter or an abstention sentence). On CLEAN every abstention is
  wrong, so CLEAN's rate is the **false-abstention rate**.
- **reference rows**, computed from the items alone (nothing is run): "always abstain" picks the abstention
  on every pass; "never abstain" is the best any model that never abstains can do — it answers every
  answerable item right and every abstention item wrong. Their per-task accuracies show what the plain
  numbers reward.

Everything here is a pure function of ``ItemOutcome`` lists (tests use hand-computed numbers).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from cavpref import task_registry
from cavpref.data import CLEAN_TASK, BenchmarkItem
from cavpref.eval.benchmarks.avtrustbench.metrics import summarize
from cavpref.eval.metrics import ItemOutcome, percent

REFERENCES = ("always abstain", "never abstain")


def _evaluated(outcomes: Iterable[ItemOutcome]) -> list[ItemOutcome]:
    return [o for o in outcomes if o.status == "evaluated"]


def paired_block(pairs: Sequence[tuple[ItemOutcome, ItemOutcome]], circular: bool) -> dict:
    """n pairs, vanilla % and circular % (None for a vanilla run) of (perturbed right AND clean twin right)."""
    return {
        "n": len(pairs),
        "vanilla": percent(sum(p.vanilla and c.vanilla for p, c in pairs), len(pairs)),
        "circular": percent(sum(p.circular and c.circular for p, c in pairs), len(pairs))
        if circular
        else None,
    }


def abstention_rate(outcomes: Sequence[ItemOutcome]) -> float | None:
    """% of evaluated items whose first pass abstained (items with unknown abstention are left out)."""
    known = [o for o in _evaluated(outcomes) if o.abstained is not None]
    return percent(sum(bool(o.abstained) for o in known), len(known))


def pair_up(
    outcomes: Sequence[ItemOutcome],
) -> tuple[dict[str, list[tuple[ItemOutcome, ItemOutcome]]], dict[str, int]]:
    """Per perturbed task: (perturbed, clean twin) pairs of evaluated items; and per task, how many evaluated
    perturbed items had no evaluated twin (no CLEAN item of their record and setting in this run)."""
    done = _evaluated(outcomes)
    twins = {(o.setting, o.record): o for o in done if o.task == CLEAN_TASK and o.record}
    pairs: dict[str, list] = defaultdict(list)
    unpaired: dict[str, int] = defaultdict(int)
    for o in done:
        if o.task == CLEAN_TASK:
            continue
        twin = twins.get((o.setting, o.record)) if o.record else None
        if twin is None:
            unpaired[o.task] += 1
        else:
            pairs[o.task].append((o, twin))
    return dict(pairs), dict(unpaired)


def _order(keys: Iterable[str]) -> list[str]:
    return task_registry.order(keys)


def trust_summary(outcomes: Sequence[ItemOutcome], *, circular: bool) -> dict:
    """Per setting: per task ``{paired: {n, vanilla, circular}, unpaired, abstention_rate}``, the paired
    score over all perturbed items (``paired``) and CLEAN's false-abstention rate."""
    by_setting: dict[str, list[ItemOutcome]] = defaultdict(list)
    for o in outcomes:
        by_setting[o.setting].append(o)
    settings = {}
    for setting, group in sorted(by_setting.items()):
        pairs, unpaired = pair_up(group)
        by_task: dict[str, list[ItemOutcome]] = defaultdict(list)
        for o in group:
            by_task[o.task].append(o)
        tasks = {}
        for t in _order(by_task):
            block = {"abstention_rate": abstention_rate(by_task[t])}
            if t != CLEAN_TASK:
                block |= {"paired": paired_block(pairs.get(t, []), circular), "unpaired": unpaired.get(t, 0)}
            tasks[t] = block
        every = [p for t in _order(pairs) for p in pairs[t]]
        settings[setting] = {
            "paired": paired_block(every, circular),
            "false_abstention": abstention_rate(by_task.get(CLEAN_TASK, [])),
            "tasks": tasks,
        }
    return {"circular": circular, "settings": settings}


def should_abstain(item: BenchmarkItem) -> bool:
    """Whether the right response to ``item`` is an abstention (no answer, or the "None of the above" letter)."""
    return item.answer is None or (item.abstain_letter is not None and item.answer == item.abstain_letter)


def reference_outcomes(items: Sequence[BenchmarkItem], policy: str) -> list[ItemOutcome]:
    """The outcomes of a computed policy (``REFERENCES``) on ``items``: right on every pass or on none."""
    if policy not in REFERENCES:
        raise ValueError(f"unknown reference policy {policy!r} (choose from {REFERENCES})")
    always = policy == "always abstain"
    out = []
    for item in items:
        right = should_abstain(item) == always
        out.append(
            ItemOutcome(
                item.id,
                item.task,
                item.setting,
                item.source,
                item.category,
                vanilla=right,
                circular=right,
                passes_run=1,
                passes_total=1,
                record=record_key(item),
                abstained=always,
            )
        )
    return out


def references(items: Sequence[BenchmarkItem], *, circular: bool) -> dict[str, dict]:
    """``{policy: summarize(...) + {"trust": trust_summary(...)}}`` for both reference policies."""
    out = {}
    for policy in REFERENCES:
        outs = reference_outcomes(items, policy)
        out[policy] = {**summarize(outs, circular=circular), "trust": trust_summary(outs, circular=circular)}
    return out


def record_key(item: BenchmarkItem) -> str:
    """The source record (clip + question) an item was built from; the twin key with the setting."""
    meta = item.meta if isinstance(item.meta, dict) else {}
    return str(meta.get("record") or "")


__all__ = [
    "REFERENCES",
    "abstention_rate",
    "pair_up",
    "paired_block",
    "record_key",
    "reference_outcomes",
    "references",
    "should_abstain",
    "trust_summary",
]
