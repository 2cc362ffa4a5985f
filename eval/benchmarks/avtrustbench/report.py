"""Reports from results.json: markdown tables in the paper's layouts, PNG plots, and run comparison.

Everything here reads the results dict (never the records), so ``compare`` works on any finished run
folder and a report can be re-rendered without the model.
"""

from __future__ import annotations

from pathlib import Path

from cavpref import task_registry
from cavpref.data import CLEAN_TASK
from cavpref.eval.benchmarks.avtrustbench import headline, sweep
from cavpref.eval.benchmarks.avtrustbench.trust import REFERENCES
from cavpref.eval.metrics import primary
from cavpref.eval.reports import input_line
from cavpref.eval.tables import fmt
from cavpref.eval.tables import table as _table
from cavpref.plotting import pyplot

CATEGORY_ABBR = {
    "Existential": "E",
    "Localization": "L",
    "Count": "Cn",
    "Temporal": "T",
    "Comparative": "Co",
    "World knowledge": "WK",
}
# Labels of the tables below that name a set of items in AVTrustBench's own words (the HTML report links
# their numbers to those items: ``report_links``)
PAIRS, PAIRED_CIRCULAR, PAIRED_VANILLA, PAIRED = "Pairs", "Paired circular", "Paired vanilla", "Paired"
PERTURBED_ALL, FALSE_ABSTENTION = "perturbed, all", "False abstention %"


def report_links() -> dict[str, dict[str, str]]:
    """Report label -> the HTML report's item filter: a category's letter names the category; the paired
    columns and rows name the perturbed items whose clean twin was evaluated; the false-abstention column
    names CLEAN (``eval.html_report.summary``)."""
    links = {abbr: {"category": full} for full, abbr in CATEGORY_ABBR.items()}
    links |= {
        name: {"twin": "has twin"} for name in (PAIRS, PAIRED_CIRCULAR, PAIRED_VANILLA, PAIRED, PERTURBED_ALL)
    }
    # the trust-first table (headline.HEADERS): the pairs, or CLEAN
    paired, false_abstention, separation, clean = headline.HEADERS
    links |= {name: {"twin": "has twin"} for name in (paired, separation, "pairs / CLEAN")}
    links |= {name: {"task": CLEAN_TASK} for name in (false_abstention, clean)}
    return links | {FALSE_ABSTENTION: {"task": CLEAN_TASK}}


def _dimension_of(task: str) -> str:
    """The declared task's dimension ("" for CLEAN and names no task declares)."""
    return next((d for d, ts in task_registry.dimensions().items() if task in ts), "")


def render_markdown(results: dict) -> str:
    m = results["metrics"]
    judge = results.get("judge")
    title = (
        results.get("label")
        or results["model"].get("name_or_path")
        or results["model"].get("model")
        or "model"
    )
    out = [f"# AVTrustBench — {title}", ""]
    mode = results["mode"]
    extraction = "choice extraction: heuristics" + (
        f" + judge `{judge['model']}` ({judge['prompt_version']})" if judge else " only (no judge)"
    )
    how = {
        "generate": f"free-form generation, {extraction}",
        "likelihood": "option log-likelihood (argmax over the option strings; nothing to parse), read "
        f"**{results.get('evaluation', {}).get('option_score', 'sum')}** (every protocol: below)",
    }.get(mode, f"answers from {results['model'].get('predictions', 'elsewhere')}, {extraction}")
    out += [
        f"- answer mode: **{mode}** — {how}",
        (
            f"- evaluation: **{'CircularEval' if m['circular'] else 'vanilla (single pass)'}**; accuracies are "
            f"Top-1 %, headline = {'circular' if m['circular'] else 'vanilla'}"
        ),
        f"- input: **{input_line(results)}**",
        *(
            [f"- model fingerprint: `{results['model']['fingerprint'][:16]}`"]
            if results["model"].get("fingerprint")
            else []
        ),
        "",
    ]
    out += _trust_first(results, title)
    out += ["## Items", ""] + _counts_table(results)
    for setting, block in m["settings"].items():
        out += [f"## Accuracy per task — {setting} setting", ""]
        rows = [
            [
                t,
                _dimension_of(t),
                str(b["n"]),
                fmt(b["circular"]),
                fmt(b["vanilla"]),
                fmt(b["unparsed_rate"]),
                fmt(b["judged_rate"]),
            ]
            for t, b in block["tasks"].items()
        ]
        o = block["overall"]
        rows.append(
            [
                "**all**",
                "",
                str(o["n"]),
                fmt(o["circular"]),
                fmt(o["vanilla"]),
                fmt(o["unparsed_rate"]),
                fmt(o["judged_rate"]),
            ]
        )
        out += _table(["Task", "Dimension", "N", "Circular", "Vanilla", "Unparsed %", "Judged %"], rows)
        out += _table(
            ["Dimension", "Accuracy (macro over tasks)"],
            [[d, fmt(v)] for d, v in block["dimensions"].items()],
        )
        out += _trust_tables(m, setting, block)
        out += _category_tables(setting, block)
    out += _option_score_tables(results)
    out += ["## Circular vs vanilla (paper Table 8)", ""]
    out += _table(
        ["Setting", "Task", "Circular / Vanilla"],
        [
            [s, t, f"{fmt(b['circular'])} / {fmt(b['vanilla'])}"]
            for s, blk in m["settings"].items()
            for t, b in blk["tasks"].items()
        ],
    )
    base, inst = (m["settings"].get(s, {}).get("tasks", {}) for s in ("base", "instruction"))
    rows = [
        [t, c, f"{fmt(primary(base[t]['categories'][c]))} / {fmt(primary(inst[t]['categories'][c]))}"]
        for t in base
        if t in inst and t in task_registry.benchmark_tasks()
        for c in base[t]["categories"]
        if c in inst[t]["categories"]
    ]
    if rows:
        out += ["## Base vs instruction (paper Table 11)", ""] + _table(
            ["Task", "Category", "base / instruction"], rows
        )
    if m.get("instruction_sweep"):
        out += sweep.section(m["instruction_sweep"], primary)
    return "\n".join(out)


def _trust_tables(m: dict, setting: str, block: dict) -> list[str]:
    """The paired trust score and abstention rate per task, beside the computed reference policies'
    accuracy on the same items (``trust.py`` here); nothing for results written before they existed."""
    trust = (m.get("trust") or {}).get("settings", {}).get(setting)
    if not trust:
        return []
    refs = {
        p: r["settings"].get(setting, {}).get("tasks", {}) for p, r in (m.get("references") or {}).items()
    }
    rows = []
    for t, b in trust["tasks"].items():
        pair = b.get("paired") or {}
        rows.append(
            [
                t,
                str(pair.get("n", "–")),
                fmt(pair.get("circular")),
                fmt(pair.get("vanilla")),
                fmt(b["abstention_rate"]),
                fmt(primary(block["tasks"][t])) if t in block["tasks"] else "–",
                *(fmt(primary(refs[p][t])) if t in refs[p] else "–" for p in REFERENCES if p in refs),
            ]
        )
    p_all = trust["paired"]
    rows.append(
        [
            f"**{PERTURBED_ALL}**",
            str(p_all["n"]),
            fmt(p_all["circular"]),
            fmt(p_all["vanilla"]),
            "",
            "",
            *("" for p in REFERENCES if p in refs),
        ]
    )
    head = [
        "Task",
        PAIRS,
        PAIRED_CIRCULAR,
        PAIRED_VANILLA,
        "Abstention %",
        "Accuracy",
        *(f"Accuracy if {p}" for p in REFERENCES if p in refs),
    ]
    note = (
        "Paired: the perturbed item and its CLEAN twin (same clip and question) both right. Abstention: first "
        f"pass; CLEAN's is the false-abstention rate ({fmt(trust['false_abstention'])} %). The last columns are "
        "computed policies on the same items (docs/evaluation.md)."
    )
    return [f"### Trust — {setting} setting", "", note, ""] + _table(head, rows)


def _option_score_tables(results: dict) -> list[str]:
    """Likelihood mode: the headline accuracy per task, the paired trust score and CLEAN's false abstention
    under each option-scoring protocol (``cavpref.eval.option_score``), on the same passes."""
    by = results.get("by_option_score")
    if not by:
        return []
    out = [
        "## Option scoring protocols (likelihood mode)",
        "",
        (
            "The same passes, the best option read as the summed log-likelihood (`sum`), per token "
            "(`per_token`) or from the answer letter alone (`letter`); the run's headline is "
            f"`{results.get('evaluation', {}).get('option_score', 'sum')}` (docs/evaluation.md)."
        ),
        "",
    ]
    for setting in results["metrics"]["settings"]:
        blocks = {p: b["settings"].get(setting, {}) for p, b in by.items()}
        tasks = task_registry.order({t for b in blocks.values() for t in b.get("tasks", {})})
        rows = []
        for p, b in blocks.items():
            trust = (by[p].get("trust") or {}).get("settings", {}).get(setting, {})
            rows.append(
                [
                    p,
                    *(fmt(primary(b["tasks"][t])) if t in b.get("tasks", {}) else "–" for t in tasks),
                    fmt(primary(trust["paired"])) if trust.get("paired", {}).get("n") else "–",
                    fmt(trust.get("false_abstention")),
                ]
            )
        out += [f"### {setting} setting", ""]
        out += _table(["Protocol", *tasks, PAIRED, FALSE_ABSTENTION], rows)
    return out


def _counts_table(results: dict) -> list[str]:
    c, load = results["metrics"]["counts"], results.get("loading", {})
    rows = [
        ["rows read", str(load.get("rows_read", c["items"]))],
        ["invalid rows skipped", str(sum(load.get("invalid", {}).values()))],
        *[[f"  {k}", str(v)] for k, v in load.get("invalid", {}).items()],
        ["outside --tasks / --setting / --limit", str(load.get("filtered", 0))],
        *(
            [["requested tasks with no items", ", ".join(load["tasks_without_items"])]]
            if load.get("tasks_without_items")
            else []
        ),
        ["items", str(c["items"])],
        ["evaluated", str(c["evaluated"])],
        ["skipped", str(c["skipped"])],
        *[[f"  {k}", str(v)] for k, v in c["skip_reasons"].items()],
        ["incomplete (run interrupted)", str(c["incomplete"])],
        ["passes run", str(c["passes_run"])],
        ["passes saved by early stopping", f"{c['passes_saved']} of {c['passes_full']}"],
        *[[f"unparsed: {k}", str(v)] for k, v in c["unparsed_reasons"].items()],
    ]
    return _table(["", "count"], rows)


def _category_tables(setting: str, block: dict) -> list[str]:
    """Per source dataset: tasks x categories (the layout of paper Tables 2, 4, 9, 10)."""
    out = []
    sources = sorted({s for b in block["tasks"].values() for s in b["sources"]})
    for src in sources:
        tasks = {t: b["sources"][src] for t, b in block["tasks"].items() if src in b["sources"]}
        cats = [c for c in CATEGORY_ABBR if any(c in b["categories"] for b in tasks.values())]
        cats += sorted({c for b in tasks.values() for c in b["categories"]} - set(cats))
        rows = [
            [
                t,
                *(fmt(primary(b["categories"][c])) if c in b["categories"] else "–" for c in cats),
                fmt(primary(b)),
            ]
            for t, b in tasks.items()
        ]
        out += [f"### Per category — {src}, {setting} setting", ""]
        out += _table(["Task", *(CATEGORY_ABBR.get(c, c) for c in cats), "All"], rows)
    return out


def plot(results: dict, out_dir: str | Path) -> list[Path]:
    """Per-task bars (circular and vanilla) per setting, and a radar over the three dimensions."""
    plt = pyplot()
    import numpy as np

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    settings = results["metrics"]["settings"]
    for setting, block in settings.items():
        tasks = list(block["tasks"])
        x = np.arange(len(tasks))
        fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(tasks)), 3.5))
        series = [("vanilla", "#9db4d6")] + (
            [("circular", "#2b5c9e")] if results["metrics"]["circular"] else []
        )
        width = 0.8 / len(series)
        for i, (name, color) in enumerate(series):
            vals = [block["tasks"][t][name] or 0.0 for t in tasks]
            ax.bar(x + (i - (len(series) - 1) / 2) * width, vals, width, label=name, color=color)
        ax.set_xticks(x, tasks, rotation=30, ha="right")
        ax.set_ylabel("Top-1 accuracy (%)")
        ax.set_ylim(0, 100)
        ax.set_title(f"AVTrustBench per task — {setting}")
        ax.legend()
        fig.tight_layout()
        path = out_dir / f"tasks_{setting}.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    dims = list(task_registry.dimensions())
    angles = np.linspace(0, 2 * np.pi, len(dims), endpoint=False).tolist()
    fig = plt.figure(figsize=(4.5, 4.5))
    ax = fig.add_subplot(polar=True)
    for setting, block in settings.items():
        vals = [block["dimensions"][d] or 0.0 for d in dims]
        ax.plot(angles + angles[:1], vals + vals[:1], label=setting)
        ax.fill(angles + angles[:1], vals + vals[:1], alpha=0.15)
    ax.set_xticks(angles, [d.replace(" ", "\n", 1) for d in dims])
    ax.set_ylim(0, 100)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path = out_dir / "dimensions_radar.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return written + [path]


def _trust_first(results: dict, title: str) -> list[str]:
    """The answer first (``headline``): per setting this run's paired trust, false abstention, separation and
    CLEAN accuracy with 95 % intervals, beside what "always abstain" / "never abstain" score on its items."""
    settings = results["metrics"].get("trust", {}).get("settings", {})
    if not settings:
        return []
    out = [
        "## Trust first",
        "",
        (
            "Paired trust: perturbed item right *and* its clean twin right; false abstention: CLEAN items abstained "
            "on; separation: how often the perturbed item of a pair is the more inclined to abstain (likelihood "
            "runs). [95 % interval over items]; the last column counts pairs / CLEAN items."
        ),
        "",
    ]
    for setting in settings:
        rows = {title: headline.trust_row(results, setting), **headline.reference_rows(results, setting)}
        out += [f"### Trust first — {setting} setting", ""]
        out += _table(["Run", *headline.HEADERS, "pairs / CLEAN"], headline.table_rows(rows))
    return out


def write_report(results: dict, out_dir: str | Path) -> None:
    """AVTrustBench's report.md and plots/ (``cavpref.eval.registry.write_reports`` writes results.json)."""
    out_dir = Path(out_dir)
    (out_dir / "report.md").write_text(render_markdown(results) + "\n", encoding="utf-8")
    plot(results, out_dir / "plots")
