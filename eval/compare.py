"""`cavpref eval compare`: runs of one benchmark side by side, from their results.json alone.

Every benchmark gets a rank table — one row per run, one column per sub-task and summary number (the
benchmark's ``columns``), each cell with its difference from the first run (the layout of TraceAV-Bench's
Tables 4-5: Full, then Mask-1, Mask-All), and a rank column over the benchmark's ``rank_by`` numbers (its
Table 3: "Rank (MH -> Gen.)") — and a leaderboard plot (AVTrustBench's Fig. 7: one panel per column, the
runs sorted best first). A benchmark with a table of its own (AVTrustBench's Table 5) prints it instead
of the rank table. Under the table, what produced each row: answer mode, protocol, input (stream
ablations, masking), so rows that differ in more than the model are visible.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cavpref.eval import registry
from cavpref.eval.reports import input_line
from cavpref.eval.tables import fmt
from cavpref.eval.tables import table as _table

from cavpref.plotting import pyplot


def benchmark(runs: Sequence[dict]) -> registry.Benchmark:
    names = {registry.benchmark_of(r) for r in runs}
    if len(names) != 1:
        raise ValueError(f"compare runs of one benchmark at a time, got {sorted(names)}")
    return registry.get(names.pop())()


def labels_of(runs: Sequence[dict], labels: Sequence[str] | None) -> list[str]:
    labels = list(labels or [r.get("label") or f"run{i}" for i, r in enumerate(runs)])
    if len(labels) != len(runs):
        raise ValueError(f"{len(labels)} labels for {len(runs)} runs")
    return labels


def ranks(values: Sequence[float | None]) -> list[int | None]:
    """1 = highest; equal values share the better rank; a missing value has none."""
    present = [v for v in values if v is not None]
    return [None if v is None else 1 + sum(w > v for w in present) for v in values]


def rank_table(bench, runs: Sequence[dict], labels: Sequence[str]) -> list[str]:
    cols_of = [bench.columns(r) for r in runs]
    columns = list(dict.fromkeys(c for cols in cols_of for c in cols))
    base = cols_of[0]
    rows = []
    order = {c: ranks([cols.get(c) for cols in cols_of]) for c in bench.rank_by if c in columns}
    for i, (label, cols) in enumerate(zip(labels, cols_of)):
        cells = []
        for c in columns:
            v, b = cols.get(c), base.get(c)
            cells.append(fmt(v) if i == 0 or v is None or b is None else f"{v:.2f} ({v - b:+.2f})")
        rank = " → ".join("–" if order[c][i] is None else str(order[c][i]) for c in order)
        rows.append([label, *cells, *([rank] if order else [])])
    head = ["Run", *columns, *([f"Rank ({' → '.join(order)})"] if order else [])]
    note = f"Cells: the run's value (difference from {labels[0]}); rank 1 = highest."
    return _table(head, rows) + [note]


def provenance(runs: Sequence[dict], labels: Sequence[str]) -> list[str]:
    """What produced each row, and a warning when the rows differ in more than the model."""
    used = [(r.get("mode", "?"), r.get("protocol", "paper"), input_line(r)) for r in runs]
    lines = [
        "",
        "Answers / protocol / input per row: "
        + "; ".join(f"{lab}: {m} / {p} / {i}" for lab, (m, p, i) in zip(labels, used)),
    ]
    if len({(m, p) for m, p, _ in used}) > 1:
        lines.append(
            "**Warning: the rows differ in answer mode or protocol, so their differences mix protocols.**"
        )
    return lines


def compare(
    runs: Sequence[dict],
    labels: Sequence[str] | None = None,
    *,
    setting: str | None = None,
    metric: str = "headline",
) -> str:
    """The comparison table of ``runs`` (results dicts of one benchmark) as markdown."""
    if len(runs) < 2:
        raise ValueError("compare needs a zero-shot run and at least one fine-tuned run")
    bench, labels = benchmark(runs), labels_of(runs, labels)
    own = getattr(bench, "compare", None)
    if own is not None:
        return own(runs, labels, setting=setting, metric=metric)
    return "\n".join(rank_table(bench, runs, labels) + provenance(runs, labels))


def leaderboard(runs: Sequence[dict], labels: Sequence[str] | None, path: str | Path) -> Path:
    """One bar panel per column, the runs sorted best first (AVTrustBench Fig. 7, any benchmark)."""
    bench, labels = benchmark(runs), labels_of(runs, labels)
    cols_of = [bench.columns(r) for r in runs]
    columns = list(dict.fromkeys(c for cols in cols_of for c in cols))
    plt = pyplot()
    n = len(columns)
    width = min(5, n)
    fig, axes = plt.subplots(
        (n + width - 1) // width,
        width,
        figsize=(3.2 * width, 2.6 * ((n + width - 1) // width)),
        squeeze=False,
    )
    for ax, col in zip(axes.flat, columns):
        got = sorted(
            ((cols.get(col), lab) for cols, lab in zip(cols_of, labels) if cols.get(col) is not None),
            reverse=True,
        )
        ax.barh([lab for _, lab in got][::-1], [v for v, _ in got][::-1], color="#2b5c9e")
        ax.set_title(col, fontsize=9)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle(f"{bench.title} leaderboard")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
