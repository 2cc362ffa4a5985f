"""The quickstart's ``report.md``: the Table-5 layouts (``cavpref.eval.compare``), CLEAN after
training, the per-category table, the methods plot and the stage wall times.

The tables are rendered with the evaluation's own helpers (``compare``, ``fmt``, the markdown table), so a
number reads the same here as in ``cavpref eval compare``; only what the evaluation has no view of (CLEAN's
chance level, categories macro-averaged over the 9 tasks, several methods in one plot) is computed here.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict
from pathlib import Path

from datasets import load_from_disk

from cavpref.apps.quickstart.config import CALIBRATED, LABELS, QuickstartConfig
from cavpref.data import CATEGORIES, CLEAN_TASK, TASKS, check_limit
from cavpref.eval.benchmarks.avtrustbench import headline
from cavpref.eval.benchmarks.avtrustbench.trust import REFERENCES
from cavpref.eval.compare import compare
from cavpref.eval.tables import fmt
from cavpref.eval.tables import table as _table
from cavpref.plotting import pyplot


def beta_sentence(cfg: QuickstartConfig) -> str:
    """Which of the run's methods calibrate β and which keep it fixed, from ``CALIBRATED`` (what the recipes do),
    so the sentence cannot drift from the training."""
    if not cfg.calibrate_beta:
        return f"β is fixed at {cfg.beta} for every method (--calibrate_beta false)."
    calibrated = [LABELS[m] for m in cfg.methods if m in CALIBRATED]
    fixed = [LABELS[m] for m in cfg.methods if m not in CALIBRATED]
    rule = "calibrated (0.9·ΔS + 0.1, deltas from the tiny CLAP / CLIP scorers of stage `scorers`)"
    parts = [f"{rule} for {', '.join(calibrated)}"] if calibrated else []
    parts += [f"fixed at {cfg.beta} for {', '.join(fixed)}"] if fixed else []
    return f"β: {'; '.join(parts)}."


def task_accuracy(results: dict, task: str, metric: str = "circular") -> float | None:
    """Accuracy (%) of one task in the instruction setting: ``circular`` or ``vanilla``."""
    block = results["metrics"]["settings"].get("instruction", {}).get("tasks", {}).get(task)
    return None if block is None else block.get(metric)


def clean_chance(data: Path, limit: int | None = None) -> float:
    """Vanilla chance on CLEAN's instruction test items: the mean of 1 / (number of options)."""
    rows = load_from_disk(str(data / "benchmark" / CLEAN_TASK))["test"]
    rows = sorted((r for r in rows if r["setting"] == "instruction"), key=lambda r: r["id"])[:limit]
    return 100.0 * sum(1 / len(r["option_letters"]) for r in rows) / max(1, len(rows))


def category_table(results: dict[str, dict]) -> list[str]:
    """Rows: methods; columns: question categories; cell: circular accuracy macro-averaged over the 9 tasks
    that have the category (instruction setting). CLEAN is left out (it is in its own column elsewhere)."""

    def cell(res: dict, cat: str) -> float | None:
        tasks = res["metrics"]["settings"].get("instruction", {}).get("tasks", {})
        vals = [
            b["categories"][cat]["circular"]
            for t, b in tasks.items()
            if t in TASKS
            and cat in b.get("categories", {})
            and b["categories"][cat].get("circular") is not None
        ]
        return sum(vals) / len(vals) if vals else None

    cats = [c for c in CATEGORIES if any(cell(r, c) is not None for r in results.values())]
    return _table(
        ["Method", *cats], [[LABELS.get(n, n), *(fmt(cell(r, c)) for c in cats)] for n, r in results.items()]
    )


def table5(results: dict[str, dict], metric: str = "headline") -> str:
    """Paper Table 5 over the methods (the first, the starting model, is the zero-shot row); empty for one run."""
    if len(results) < 2:
        return ""
    return compare(list(results.values()), [LABELS[n] for n in results], setting="instruction", metric=metric)


def plot_methods(results: dict[str, dict], path: Path) -> Path:
    """Grouped bars: every method's circular and vanilla accuracy per task (instruction setting)."""
    plt = pyplot()
    tasks = [*TASKS, CLEAN_TASK]
    fig, axes = plt.subplots(2, 1, figsize=(12, 6.5), sharex=True)
    width = 0.8 / max(1, len(results))
    for ax, metric in zip(axes, ("circular", "vanilla")):
        for i, (name, res) in enumerate(results.items()):
            ys = [task_accuracy(res, t, metric) or 0.0 for t in tasks]
            ax.bar([k + i * width for k in range(len(tasks))], ys, width, label=LABELS.get(name, name))
        ax.set_ylabel(f"{metric} accuracy (%)")
        ax.grid(axis="y", alpha=0.3)
    axes[1].set_xticks([k + 0.4 - width / 2 for k in range(len(tasks))], tasks, rotation=20)
    axes[0].legend(ncol=len(results), fontsize=8, loc="upper left")
    fig.suptitle("cavpref quickstart: synthetic AVTrustBench test split, instruction setting")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


SETTINGS = ("instruction", "base")


def trust_rows(results: dict[str, dict]) -> dict[str, dict[str, dict]]:
    """Per setting: {label: headline row} for every method (the start first), then the two reference policies
    computed from the start's items."""
    out = {}
    for setting in SETTINGS:
        rows = {LABELS.get(n, n): headline.trust_row(r, setting) for n, r in results.items()}
        rows = {k: v for k, v in rows.items() if v["paired"]["n"] or v["clean"]["n"]}
        if rows:
            first = next(iter(results.values()))
            out[setting] = {**rows, **headline.reference_rows(first, setting)}
    return out


def plot_trust(rows: dict[str, dict], path: Path) -> Path:
    """Bars with 95 % intervals: paired trust, false abstention, separation and CLEAN for every method."""
    plt = pyplot()
    labels = list(rows)
    fig, ax = plt.subplots(figsize=(10, 3.8))
    width = 0.8 / max(1, len(labels))
    for i, label in enumerate(labels):
        xs = [k + i * width for k in range(len(headline.COLUMNS))]
        entries = [rows[label][c] for c in headline.COLUMNS]
        ys = [e["value"] or 0.0 for e in entries]
        err = [[max(0.0, y - (e["ci"] or (y, y))[0]) for y, e in zip(ys, entries)],
               [max(0.0, (e["ci"] or (y, y))[1] - y) for y, e in zip(ys, entries)]]  # fmt: skip
        ax.bar(xs, ys, width, yerr=err, capsize=2, label=label)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(headline.COLUMNS))], headline.HEADERS, fontsize=8)
    ax.set_ylabel("% (95 % interval)")
    ax.set_ylim(0, 100)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, ncol=min(4, len(labels)))
    fig.suptitle("What training did to trust (instruction setting, test items)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def trust_section(results: dict[str, dict], root: Path, cells: str) -> list[str]:
    """The report's first section: per setting one table (methods, then the reference policies), the PNG, and
    one sentence per trained method saying what training did to its start."""
    by_setting = trust_rows(results)
    lines = [
        "## What training did to trust",
        "",
        cells,
        "",
        (
            "Paired trust: a perturbed item answered right (abstained where it should) *and* its clean twin answered "
            "right; blind abstention scores 0. False abstention: CLEAN items abstained on. Separation: over (perturbed, "
            "clean twin) pairs, how often the perturbed one is the more inclined to abstain (50 % = cannot tell them "
            "apart). CircularEval; options read "
            f"`{next(iter(results.values())).get('evaluation', {}).get('option_score', 'generated answers')}`"
            " (docs/evaluation.md); [95 % interval over items]; the last column counts pairs / CLEAN items."
        ),
        "",
    ]
    for setting, rows in by_setting.items():
        lines += [f"**{setting} setting**", ""]
        lines += _table(["Method", *headline.HEADERS, "pairs / CLEAN"], headline.table_rows(rows))
        if setting == "instruction":
            methods = [label for label in rows if label not in REFERENCES]
            plot = plot_trust({m: rows[m] for m in methods}, root / "plots" / "trust.png")
            lines += [f"![trust]({plot.relative_to(root)})", ""]
            start = rows[methods[0]]
            lines += [f"- {headline.sentence(m, start, rows[m])}" for m in methods[1:]]
            lines.append("")
    return lines


def load_results(runs: dict[str, Path]) -> dict[str, dict]:
    """{method: results.json} of the evaluation stages, in the order given (the starting model first)."""
    return {name: json.loads((path / "results.json").read_text()) for name, path in runs.items()}


def items_caption(cfg: QuickstartConfig, results: dict) -> str:
    """What each cell of the report's tables is computed on: how many test items per task (instruction
    setting), and whether that is all of them (``--eval_limit``)."""
    tasks = results["metrics"]["settings"]["instruction"]["tasks"]
    counts = ", ".join(f"{t} {tasks[t]['n']}" for t in (*TASKS, CLEAN_TASK) if t in tasks)
    limit = check_limit(cfg.eval_limit)
    which = f"the first {limit} test items of each task" if limit else "all test items of each task"
    more = " (--eval_limit 0: all of them)" if limit else ""
    return f"Cells: {which}, instruction setting{more}; items per task: {counts}."


def write_report(cfg: QuickstartConfig, root: Path, runs: dict[str, Path], timings: dict[str, float]) -> Path:
    """Write ``<root>/report.md`` (and ``plots/methods.png``) from the evaluation stages ``runs``."""
    results = load_results(runs)
    chance = clean_chance(root / "data", check_limit(cfg.eval_limit))
    start = results["start"]
    clean = [
        [
            LABELS[n],
            fmt(task_accuracy(r, CLEAN_TASK, "vanilla")),
            fmt(task_accuracy(r, CLEAN_TASK, "circular")),
            fmt(r["metrics"]["overall"].get("unparsed_rate")),
        ]
        for n, r in results.items()
    ]
    plot = plot_methods(results, root / "plots" / "methods.png")
    cells = items_caption(cfg, start)
    compare_with = "cavpref" if "cavpref" in runs else [*runs][-1]
    lines = [
        "# cavpref quickstart",
        "",
        f"config: `{json.dumps(asdict(cfg))}`",
        "",
        *trust_section(results, root, cells),
        (
            f"Starting model (SFT on the clean questions) on CLEAN test, instruction setting: vanilla "
            f"{fmt(task_accuracy(start, CLEAN_TASK, 'vanilla'))} % (chance {chance:.2f} %), circular "
            f"{fmt(task_accuracy(start, CLEAN_TASK, 'circular'))} %."
        ),
        "",
        beta_sentence(cfg),
        "",
        "## Table 5 layout — CircularEval (instruction setting; difference from the starting model)",
        "",
        cells,
        "",
        table5(results),
        "",
        "## Table 5 layout — vanilla (first pass only)",
        "",
        cells,
        "",
        table5(results, "vanilla"),
        "",
        "## CLEAN after training (exposes 'always abstain' collapse: 7 of 9 tasks reward abstention)",
        "",
        cells,
        "",
        *_table(["Method", "CLEAN vanilla", "CLEAN circular", "unparsed % (all tasks)"], clean),
        "## Per category (circular, macro over the 9 tasks that have it)",
        "",
        cells,
        "",
        *category_table(results),
        f"Per-source task x category tables: `eval/<method>/report.md`. Plot: `{plot.relative_to(root)}`.",
        "",
        (
            "Every item, its frames and audio, and each pass's prompt, options and answer: "
            "`eval/<method>/report.html` (open it in a browser; each number links to its items). Where two "
            "methods answer differently, from this report's folder (the runs find their data from there "
            f"too): `cd {shlex.quote(str(root.resolve()))} && cavpref eval compare eval/start eval/{compare_with} "
            "--html compare.html`."
        ),
        "",
        "## Stage wall time (when each stage ran; reused stages keep their time)",
        "",
        "| stage | seconds |",
        "| --- | --- |",
        *[f"| {k} | {v:.1f} |" for k, v in timings.items()],
        f"| total | {sum(timings.values()):.1f} |",
    ]
    path = root / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
