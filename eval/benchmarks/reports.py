"""report.md and PNG plots for AURA, MMAR and TraceAV-Bench runs, from results.json alone.

The registered benchmarks (``cavpref.eval.tasks``) pick their section and figures from here;
``cavpref.eval.registry.write_reports`` calls them, so ``cavpref eval report RUN`` re-renders any run folder
the same way. Tables follow the papers' layouts: AURA Table 2 (ACC / FCS / CIS
per task), the Audio-Cogito card (Avg / Rubrics / CRS, by modality / category / sub-category, both
variance protocols), TraceAV-Bench Tables 2 and 3 (sub-tasks, Gen. Avg, MH Avg, random guess) and the
Figure 5 breakdowns (hop count, first-hop position).
"""

from __future__ import annotations

from pathlib import Path

from cavpref.eval.benchmarks import aura, traceav
from cavpref.eval.tables import fmt
from cavpref.eval.tables import table as _table

from cavpref.plotting import pyplot


def header(results: dict, title: str) -> list[str]:
    name = (
        results.get("label")
        or results["model"].get("name_or_path")
        or results["model"].get("model")
        or results["model"].get("predictions")
        or "model"
    )
    judge = results.get("judge")
    lines = [
        f"# {title} — {name}",
        "",
        f"- answers: **{results['mode']}**"
        + (
            f", model fingerprint `{results['model']['fingerprint'][:16]}`"
            if results["model"].get("fingerprint")
            else ""
        ),
        "- judge: " + (f"`{judge['model']}` ({judge['prompt_version']})" if judge else "none"),
        f"- protocol: **{results.get('protocol', 'paper')}** (docs/reasoning_benchmarks.md)",
    ]
    nli = results.get("evaluation", {}).get("nli")
    if nli:
        lines.append(f"- NLI cross-encoder: `{nli['model']}` (entailment = output {nli['entailment_index']})")
    sampling = results.get("evaluation", {}).get("sampling")
    if sampling:
        lines.append(
            "- long-video sampling: " + ", ".join(f"{k}={v}" for k, v in sampling.items() if k != "kind")
        )
    c = results["counts"]
    rows = [
        ["items", str(c["items"])],
        ["evaluated", str(c["evaluated"])],
        ["skipped", str(c["skipped"])],
        *[[f"  {k}", str(v)] for k, v in c["skip_reasons"].items()],
        ["incomplete (run interrupted)", str(c["incomplete"])],
    ]
    if "predictions" in results:
        rows.append(["prediction rows unused", str(sum(results["predictions"]["unused"].values()))])
    return lines + ["", "## Items", ""] + _table(["", "count"], rows)


def aura_section(results: dict) -> list[str]:
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


def mmar_section(results: dict) -> list[str]:
    m = results["metrics"]
    names = {
        "raters": "K raters per item, trimmed mean (released script)",
        "runs": "K runs, mean of the middle three (Audio-Cogito card)",
        "accuracy": "no judge: accuracy only",
    }
    out = []
    for protocol, block in m.items():
        out += [f"## {names[protocol]}", ""]
        for group in ("overall", "modality", "category", "sub_category"):
            data = {"all": block["overall"]} if group == "overall" else block[group]
            rows = [
                [k, str(v["n"]), str(v["n_correct"]), fmt(v["Avg"]), fmt(v["Rubrics"]), fmt(v["CRS"])]
                for k, v in data.items()
            ]
            out += [f"### {group.replace('_', '-')}", ""]
            out += _table([group, "N", "correct", "Avg", "Rubrics", "CRS"], rows)
    return out


def traceav_section(results: dict) -> list[str]:
    m = results["metrics"]
    per = m["per_subtask"]
    general = [t for t in traceav.GENERAL if t in per]
    mh = [t for t in traceav.HALLUCINATION if t in per]
    out = []
    if general:
        head = ["", *(f"{per[t]['abbrev']} ({per[t]['dimension']})" for t in general), "Gen. Avg"]
        out += ["## General sub-tasks (layout of TraceAV-Bench Table 2)", ""] + _table(
            head,
            [
                ["model", *(fmt(per[t]["acc"]) for t in general), fmt(m["gen_avg"]["acc"])],
                [
                    "random guess",
                    *(fmt(per[t]["random_guess"]) for t in general),
                    fmt(m["gen_avg"]["random_guess"]),
                ],
            ],
        )
    if mh:
        head = ["", *(per[t]["abbrev"] for t in mh), "MH Avg", "Gen. Avg"]
        out += ["## Multimodal hallucination (layout of Table 3)", ""] + _table(
            head,
            [
                [
                    "model",
                    *(fmt(per[t]["acc"]) for t in mh),
                    fmt(m["mh_avg"]["acc"]),
                    fmt(m["gen_avg"]["acc"]),
                ],
                [
                    "random guess",
                    *(fmt(per[t]["random_guess"]) for t in mh),
                    fmt(m["mh_avg"]["random_guess"]),
                    fmt(m["gen_avg"]["random_guess"]),
                ],
            ],
        )
    for name, key in (("Gen. Avg", "gen_avg"), ("MH Avg", "mh_avg")):
        if m[key]["n_subtasks"] and not m[key]["complete"]:
            out += [f"*{name} is over {m[key]['n_subtasks']} sub-tasks only (a subset was evaluated).*", ""]
    rows = [
        [d, str(v["n"]), str(v["n_subtasks"]), fmt(v["macro"]), fmt(v["micro"])]
        for d, v in m["per_dimension"].items()
    ]
    out += ["## Per dimension", ""] + _table(["Dimension", "N", "sub-tasks", "macro", "micro"], rows)
    rows = [
        [
            f"{t} ({v['abbrev']})",
            str(v["n"]),
            fmt(v["acc"]),
            str(v["abstained"]),
            fmt(v["random_guess"]),
            fmt(v["random_guess_type_aware"]),
        ]
        for t, v in per.items()
    ]
    out += ["## Per sub-task", ""] + _table(
        ["Sub-task", "N", "Acc", "abstained", "random (one letter)", "random (type-aware)"], rows
    )
    for title, key in (
        ("Evidence hops (Figure 5a)", "by_hops"),
        ("First evidence hop position (Figure 5b)", "by_first_hop"),
        ("Question type", "by_question_type"),
    ):
        rows = [[k, str(v["n"]), fmt(v["acc"]), str(v["abstained"])] for k, v in m[key].items()]
        out += [f"## {title}", ""] + _table(["", "N", "Acc", "abstained"], rows)
    return out + [f"Abstained (no letter parsed): {m['overall']['abstained']} of {m['overall']['n']}.", ""]


def _bars(ax, labels, series: dict[str, list], ylabel: str, title: str):
    import numpy as np

    x = np.arange(len(labels))
    width = 0.8 / max(1, len(series))
    for i, (name, vals) in enumerate(series.items()):
        ax.bar(x + (i - (len(series) - 1) / 2) * width, [v or 0.0 for v in vals], width, label=name)
    ax.set_xticks(x, labels, rotation=30, ha="right")
    ax.set_ylim(0, 100)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)


def aura_figures(results: dict) -> list:
    m = results["metrics"]
    tasks = list(m["per_task"])
    series = {k: [m["per_task"][t][k] for t in tasks] for k in ("ACC", "FCS", "CIS")}
    return [("aura_tasks.png", [tasks], [series], ["AuraScore per task"])]


def mmar_figures(results: dict) -> list:
    m = results["metrics"]
    protocol = next(iter(m))
    groups = [list(m[protocol][g]) for g in ("modality", "category")]
    series = [
        {k: [m[protocol][g][x][k] for x in keys] for k in ("Avg", "Rubrics", "CRS")}
        for g, keys in zip(("modality", "category"), groups)
    ]
    titles = [f"MMAR by {g} ({protocol})" for g in ("modality", "category")]
    return [("mmar_breakdown.png", groups, series, titles)]


def traceav_figures(results: dict) -> list:
    m = results["metrics"]
    per = m["per_subtask"]
    tasks = list(per)
    series = {
        "accuracy": [per[t]["acc"] for t in tasks],
        "random guess": [per[t]["random_guess"] for t in tasks],
    }
    groups = [list(m["by_hops"]), list(m["by_first_hop"])]
    return [
        (
            "traceav_subtasks.png",
            [[per[t]["abbrev"] for t in tasks]],
            [series],
            ["TraceAV-Bench per sub-task"],
        ),
        (
            "traceav_breakdowns.png",
            groups,
            [{"accuracy": [m[k][x]["acc"] for x in g]} for k, g in zip(("by_hops", "by_first_hop"), groups)],
            ["by evidence hops", "by first-hop position"],
        ),
    ]


def draw(figures: list, out_dir: str | Path) -> list[Path]:
    """Bar charts: each figure is (file name, label lists, series dicts, titles), one panel per label list."""
    plt = pyplot()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, labels, series, titles in figures:
        width = max(5, 0.9 * sum(map(len, labels)) + 2 * len(labels))
        fig, axes = plt.subplots(1, len(labels), figsize=(width, 3.6), squeeze=False)
        for ax, lab, ser, title in zip(axes[0], labels, series, titles):
            _bars(ax, lab, ser, "%", title)
        fig.tight_layout()
        fig.savefig(out_dir / name, dpi=110)
        plt.close(fig)
        written.append(out_dir / name)
    return written


def write(results: dict, out_dir: str | Path, title: str, section, figures) -> None:
    """report.md (header + ``section(results)``) and plots/ (``figures(results)``)."""
    out_dir = Path(out_dir)
    (out_dir / "report.md").write_text(
        "\n".join(header(results, title) + section(results)) + "\n", encoding="utf-8"
    )
    draw(figures(results), out_dir / "plots")
