"""AVTrustBench's ``eval compare``: the paper's Table 5 — the runs after the first (zero-shot) as rows, the
tasks as columns, each cell with its difference from the first run — with the paired trust score and the
abstention rates per task, and the computed "always abstain" / "never abstain" rows, from results.json alone."""

from __future__ import annotations

from collections.abc import Sequence

from cavpref import task_registry
from cavpref.eval.benchmarks.avtrustbench.trust import REFERENCES
from cavpref.eval.metrics import primary
from cavpref.eval.tables import fmt
from cavpref.eval.tables import table as _table


def compare(
    runs: Sequence[dict],
    labels: Sequence[str],
    *,
    setting: str | None = None,
    metric: str = "headline",
) -> str:
    """Paper Table 5: one row per run after the first, the 9 tasks as columns, each cell with its
    difference from the first run (the zero-shot baseline) in accuracy points. A CLEAN column (the
    unperturbed questions) follows when the runs evaluated it, and a "Paired" column (the paired trust score
    over all perturbed items, ``trust.py`` here) when any run has clean twins. Two computed rows close
    the table — "always abstain" and "never abstain" on the first run's items — so a reader sees what the
    plain per-task numbers reward; then the paired score and the abstention rate per task, same rows.
    ``labels``: one per run (``cavpref.eval.compare.compare`` checks the runs and labels, then calls this)."""
    refs = runs[0]["metrics"].get("references") or {}
    ref_rows = [
        (f"{policy} (computed)", {"metrics": refs[policy]}) for policy in REFERENCES if policy in refs
    ]

    def chosen(run: dict) -> str:
        settings = run["metrics"]["settings"]
        return setting or ("instruction" if "instruction" in settings else next(iter(settings)))

    def pick(block: dict | None) -> float | None:
        if block is None:
            return None
        return primary(block) if metric == "headline" else block.get(metric)

    def value(run: dict, task: str) -> float | None:
        return pick(run["metrics"]["settings"].get(chosen(run), {}).get("tasks", {}).get(task))

    def trust(run: dict) -> dict:
        return (run["metrics"].get("trust") or {}).get("settings", {}).get(chosen(run), {})

    def paired(run: dict, task: str | None = None) -> float | None:
        t = trust(run)
        block = t.get("paired") if task is None else t.get("tasks", {}).get(task, {}).get("paired")
        return pick(block) if block and block.get("n") else None

    def abstained(run: dict, task: str) -> float | None:
        return trust(run).get("tasks", {}).get(task, {}).get("abstention_rate")

    named_tasks = {t for r in runs for t in r["metrics"]["settings"].get(chosen(r), {}).get("tasks", {})}
    tasks = [t for t in task_registry.order(named_tasks) if any(value(r, t) is not None for r in runs)]
    with_pairs = any(paired(r) is not None for r in runs)
    cols = tasks + (["Paired"] if with_pairs else [])

    def cell(run: dict, col: str) -> float | None:
        return paired(run) if col == "Paired" else value(run, col)

    base = {c: cell(runs[0], c) for c in cols}
    rows = [[f"{labels[0]} (zero-shot)", *(fmt(base[c]) for c in cols)]]
    for run, label in zip(runs[1:], labels[1:]):
        cells = []
        for c in cols:
            v = cell(run, c)
            cells.append(fmt(v) if v is None or base[c] is None else f"{v:.2f} ({v - base[c]:+.2f})")
        rows.append([label, *cells])
    rows += [[label, *(fmt(cell(ref, c)) for c in cols)] for label, ref in ref_rows]
    out = _table(["Method", *cols], rows) + _protocols(runs, labels, metric)
    named = [*zip(labels, runs), *ref_rows]
    perturbed = [t for t in tasks if t in task_registry.benchmark_tasks()]
    if with_pairs:
        out += [
            "",
            (
                "Paired trust score (%): a perturbed item counts only when it and its CLEAN twin (same clip and "
                "question) are both answered right"
            ),
            "",
        ]
        out += _table(
            ["Method (paired %)", *perturbed, "all"],
            [[label, *(fmt(paired(r, t)) for t in perturbed), fmt(paired(r))] for label, r in named],
        )
    if any(abstained(r, t) is not None for r in runs for t in tasks):
        out += [
            "",
            "Abstention rate (% of items, first pass); on CLEAN every abstention is a false abstention",
            "",
        ]
        out += _table(
            ["Method (abstention %)", *tasks],
            [[label, *(fmt(abstained(r, t)) for t in tasks)] for label, r in named],
        )
    return "\n".join(out)


def _protocols(runs: Sequence[dict], labels: Sequence[str], metric: str) -> list[str]:
    """Which answer mode and evaluation produced each row, and a warning when the rows mix them (every
    circular run also has its vanilla numbers, so ``metric="vanilla"`` compares like with like)."""
    used = [
        (
            r.get("mode", "?")
            + (f" ({r['evaluation']['option_score']})" if "option_score" in r.get("evaluation", {}) else ""),
            "vanilla" if metric == "vanilla" or not r["metrics"].get("circular") else "circular",
        )
        for r in runs
    ]
    lines = [
        "Answer mode / evaluation per row: "
        + "; ".join(f"{lab}: {m} / {e}" for lab, (m, e) in zip(labels, used))
    ]
    if len(set(used)) > 1:
        lines.append(
            "**Warning: the rows differ in answer mode or evaluation, so their differences mix protocols.**"
        )
    return lines
