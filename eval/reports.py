"""report.md and PNG plots of a run, from results.json alone: the header every benchmark shares (answers,
judge, protocol, input, items), then the benchmark's own section and figures (its folder's ``report``).

``cavpref.eval.registry.write_reports`` calls ``write``, so ``cavpref eval report RUN`` re-renders any run
folder the same way.
"""

from __future__ import annotations

from pathlib import Path

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
        f"- input: **{input_line(results)}**",
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


def input_line(results: dict) -> str:
    """What the model was given (``evaluation.input``): the streams, and a benchmark's own masking."""
    given = (results.get("evaluation") or {}).get("input") or {}
    words = given.get("streams", "video + audio")
    if given.get("mask"):
        words += f", {given['mask']}"
    return words


def write(results: dict, out_dir: str | Path, bench) -> None:
    """report.md (header + the benchmark's ``section``) and plots/ (its ``figures``)."""
    out_dir = Path(out_dir)
    (out_dir / "report.md").write_text(
        "\n".join(header(results, bench.title) + bench.section(results)) + "\n", encoding="utf-8"
    )
    draw(bench.figures(results), out_dir / "plots")
