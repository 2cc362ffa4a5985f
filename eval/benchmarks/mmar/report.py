"""MMAR-Rubrics' report section (the Audio-Cogito card: Avg / Rubrics / CRS by modality, category and
sub-category, under each variance protocol, each named) and figure."""

from __future__ import annotations

from cavpref.eval.tables import fmt
from cavpref.eval.tables import table as _table

NAMES = {
    "raters": "one answer per item, {K} raters per answer, trimmed mean (the released evaluation_rubrics.py)",
    "runs": "{K} runs, mean of the middle three — the runs are the {K} ratings of one answer (the model answered "
    "once)",
    "inference_runs": "{R} inference runs, mean of the middle three — the model answered {R} times (sampling "
    "seeds below), each answer rated by the {K} raters (trimmed mean)",
    "accuracy": "no judge: accuracy only (one answer per item)",
}


def heading(protocol: str, results: dict) -> str:
    """A protocol's heading with this run's numbers: K raters (the judge's), R inference runs (the
    block's own count); the letters used to be printed as they are ("R inference runs")."""
    evaluation = results.get("evaluation") or {}
    raters = (evaluation.get("judge") or {}).get("raters")
    runs = ((results["metrics"].get("inference_runs") or {}).get("overall") or {}).get("runs")
    name = NAMES.get(protocol, protocol)
    return name.replace("{K}", str(raters or "K")).replace("{R}", str(runs or "R"))


def section(results: dict) -> list[str]:
    m = results["metrics"]
    runs = (results.get("evaluation") or {}).get("inference_runs")
    out = []
    for protocol, block in m.items():
        out += [f"## {heading(protocol, results)}", ""]
        if protocol == "inference_runs" and runs:
            out += [
                f"Runs: {runs['runs']}, sampling seeds {runs['seeds']}, temperature {runs['temperature']}.",
                "",
            ]
            rows = [
                [str(j), _count(r["n_correct"]), fmt(r["Avg"]), fmt(r["Rubrics"]), fmt(r["CRS"])]
                for j, r in enumerate(block["overall"]["per_run"])
            ]
            out += ["### per run", ""] + _table(["run", "correct", "Avg", "Rubrics", "CRS"], rows)
        for group in ("overall", "modality", "category", "sub_category"):
            data = {"all": block["overall"]} if group == "overall" else block[group]
            rows = [
                [k, str(v["n"]), _count(v["n_correct"]), fmt(v["Avg"]), fmt(v["Rubrics"]), fmt(v["CRS"])]
                for k, v in data.items()
            ]
            out += [f"### {group.replace('_', '-')}", ""]
            out += _table([group, "N", "correct", "Avg", "Rubrics", "CRS"], rows)
    return out


def _count(n) -> str:
    """A count, or the middle-runs mean of counts (inference_runs)."""
    return str(n) if isinstance(n, int) else fmt(n)


def figures(results: dict) -> list:
    m = results["metrics"]
    protocol = next(iter(m))
    groups = [list(m[protocol][g]) for g in ("modality", "category")]
    series = [
        {k: [m[protocol][g][x][k] for x in keys] for k in ("Avg", "Rubrics", "CRS")}
        for g, keys in zip(("modality", "category"), groups)
    ]
    titles = [f"MMAR by {g} ({protocol})" for g in ("modality", "category")]
    return [("mmar_breakdown.png", groups, series, titles)]
