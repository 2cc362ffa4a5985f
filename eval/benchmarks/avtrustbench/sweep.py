"""The prompt-sensitivity study (the paper's Table 12): one run, several instruction wordings.

``--instructions W1 W2 …`` asks every instruction-setting item once per wording (its instruction replaced;
``{abstain_letter}`` in a wording becomes the letter of "None of the above" in each rotation, as in the
wordings prep samples). A copy's id is ``<id>#w<j>`` and it remembers ``j`` (``meta["instruction_variant"]``),
so every wording gets its own records, its own CircularEval and its own tables; base-setting items (no
instruction) are asked once. The run's main metrics are those of the first wording (so ``eval compare``
and the trust tables read as usual); results.json ``metrics.instruction_sweep`` holds every wording's
accuracy per task and per dimension (the paper aggregates per suite), and the report prints the Table 12
layout plus one per-task table per wording.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from cavpref.eval.tables import fmt
from cavpref.eval.tables import table as _table

VARIANT = "instruction_variant"


def expand(items: list, wordings: Sequence[str]) -> list:
    """One copy of each instruction-setting item per wording (base-setting items unchanged)."""
    if not wordings:
        return items
    out = []
    for item in items:
        if item.setting != "instruction":
            out.append(item)
            continue
        for j, wording in enumerate(wordings):
            meta = {**(item.meta or {}), VARIANT: j}
            out.append(dataclasses.replace(item, id=f"{item.id}#w{j}", instruction=wording, meta=meta))
    return out


def variant_of(item) -> int | None:
    return (item.meta or {}).get(VARIANT)


def sweep_metrics(items: list, outcomes: list, wordings: Sequence[str], summarize: Callable) -> dict:
    """Per wording: ``summarize`` of the instruction-setting outcomes of that wording's copies."""
    variant = {i.id: variant_of(i) for i in items}
    per = []
    for j, wording in enumerate(wordings):
        block = summarize([o for o in outcomes if variant.get(o.item_id) == j])
        setting = block["settings"].get("instruction", {})
        per.append({"wording": wording, **setting})
    return {"wordings": list(wordings), "per_wording": per}


def first_wording(items: list, outcomes: list) -> tuple[list, list]:
    """The items and outcomes of the run's main metrics: base items and the first wording's copies."""
    keep = {i.id for i in items if variant_of(i) in (None, 0)}
    return [i for i in items if i.id in keep], [o for o in outcomes if o.item_id in keep]


def section(sweep: dict, headline: Callable) -> list[str]:
    """Table 12's layout (a row per wording, a column per dimension, then overall), and a table per
    wording with its per-task accuracy."""
    per = sweep["per_wording"]
    if not per:
        return []
    dims = list(per[0].get("dimensions", {}))
    rows = [
        [
            f"{j}: {p['wording']}",
            *(fmt(p.get("dimensions", {}).get(d)) for d in dims),
            fmt(headline(p["overall"])),
        ]
        for j, p in enumerate(per)
        if p.get("overall")
    ]
    out = [
        "## Instruction sweep (paper Table 12)",
        "",
        (
            "Each instruction-setting item asked once per wording; cells are the headline accuracy (macro over "
            "the dimension's tasks). The main tables above are the first wording's."
        ),
        "",
    ] + _table(["Instruction", *dims, "All"], rows)
    for j, p in enumerate(per):
        tasks = p.get("tasks", {})
        out += [f"### Wording {j}: {p['wording']}", ""]
        out += _table(
            ["Task", "N", "Circular", "Vanilla"],
            [[t, str(b["n"]), fmt(b["circular"]), fmt(b["vanilla"])] for t, b in tasks.items()],
        )
    return out
