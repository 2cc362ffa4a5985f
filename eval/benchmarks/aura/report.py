"""AURA's report section (the layout of its Table 2: ACC / FCS / CIS per task) and figure."""

from __future__ import annotations

from cavpref.eval.benchmarks.aura import data as aura
from cavpref.eval.tables import fmt
from cavpref.eval.tables import table as _table


def section(results: dict) -> list[str]:
    m = results["metrics"]
    table = aura.table2_markdown(m, results.get("label") or results["model"].get("name_or_path") or "model")
    out = ["## AuraScore (layout of AURA Table 2)", "", table, ""]
    rows = [
        [f"{c} ({aura.TITLES[c]})", str(b["n"]), fmt(b["ACC"]), fmt(b["FCS"]), fmt(b["CIS"])]
        for c, b in m["per_task"].items()
    ]
    o, t = m["overall"], m["task_mean"]
    rows += [
        ["**overall** (all items)", str(o["n"]), fmt(o["ACC"]), fmt(o["FCS"]), fmt(o["CIS"])],
        ["task mean (unweighted)", str(t["n_tasks"]), fmt(t["ACC"]), fmt(t["FCS"]), fmt(t["CIS"])],
    ]
    return (
        out
        + _table(["Task", "N", "ACC", "FCS", "CIS"], rows)
        + ["FCS and CIS are 0 for wrong answers (Algorithm 1); the paper defines no combined score.", ""]
        + (
            [
                (
                    f"Official protocol: {m['dropped_empty']} record(s) with an empty answer or reasoning dropped from "
                    "every average (as the released evaluation.py does)."
                ),
                "",
            ]
            if m.get("dropped_empty")
            else []
        )
    )


def figures(results: dict) -> list:
    m = results["metrics"]
    tasks = list(m["per_task"])
    series = {k: [m["per_task"][t][k] for t in tasks] for k in ("ACC", "FCS", "CIS")}
    return [("aura_tasks.png", [tasks], [series], ["AuraScore per task"])]
