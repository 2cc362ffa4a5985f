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

from cavpref.eval import registry, significance
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


def item_sets(
    runs: Sequence[dict], labels: Sequence[str], *, allow_different_items: bool = False
) -> list[str]:
    """Lines under the table about the items behind each row (results.json ``items``). Runs that selected
    different items are refused (their differences would mix item sets) unless ``allow_different_items``,
    then a warning; the same selection with different evaluated items (skips) is a warning."""
    sets = [r.get("items") for r in runs]
    if any(s is None for s in sets):
        missing = [lab for lab, s in zip(labels, sets) if s is None]
        return [
            f"Item sets not checked: {', '.join(missing)} recorded none (results.json from before 'items')."
        ]

    def counts(key: str) -> str:
        return "; ".join(f"{lab}: {s[key]} items" for lab, s in zip(labels, sets))

    if len({s["selected_sha256"] for s in sets}) > 1:
        if not allow_different_items:
            raise ValueError(
                f"the runs were evaluated on different item sets ({counts('selected')}): a different --data, "
                "--tasks or --limit? Evaluate them on the same items, or pass --allow_different_items true"
            )
        return [f"**Warning: the rows were evaluated on different item sets ({counts('selected')}).**"]
    if len({s["evaluated_sha256"] for s in sets}) > 1:
        return [f"**Warning: the rows evaluated different items (skips differ: {counts('evaluated')}).**"]
    return []


def cells_of(paired: dict, setting: str | None) -> dict[str, dict[str, bool]]:
    """A run's per-item outcomes (results.json ``paired``) grouped into the cells of the significance
    table: each (setting, task), each setting's ``all``, and ``all`` over the settings when several ran."""
    rows = paired["items"]
    settings = sorted({s for s, _, _ in rows.values() if setting in (None, s)})
    cells: dict[str, dict[str, bool]] = {}
    for s in settings:
        prefix = f"{s}: " if len(settings) > 1 else ""
        mine = {i: v for i, v in rows.items() if v[0] == s}
        for task in dict.fromkeys(t for _, t, _ in mine.values()):
            cells[prefix + task] = {i: bool(ok) for i, (_, t, ok) in mine.items() if t == task}
        cells[prefix + "all"] = {i: bool(v[2]) for i, v in mine.items()}
    if len(settings) > 1:
        cells["all"] = {i: bool(v[2]) for i, v in rows.items() if v[0] in settings}
    return cells


def significance_table(
    runs: Sequence[dict], labels: Sequence[str], *, resamples: int, setting: str | None = None
) -> list[str]:
    """Per run after the first and per cell, on the items both runs evaluated: the accuracy difference, its
    paired bootstrap 95 % interval, the discordant counts and McNemar's p (``eval/significance.py``).
    ``resamples`` 0: the section is left out."""
    if resamples <= 0:
        return []
    lines = ["", f"Paired significance against {labels[0]} (the items both runs evaluated):", ""]
    missing = [lab for lab, r in zip(labels, runs) if not r.get("paired")]
    if missing:
        why = (
            f"Significance not computed: {', '.join(missing)} recorded no per-item outcomes (results.json "
            "from before 'paired'; running the same `cavpref eval` command again replays its records and "
            "writes them)."
        )
        return [lines[0], why]
    measures = {r["paired"]["measure"] for r in runs}
    ref = cells_of(runs[0]["paired"], setting)
    rows = []
    for label, run in zip(labels[1:], runs[1:]):
        for cell, other in cells_of(run["paired"], setting).items():
            if cell not in ref:
                continue
            t = significance.pair(ref[cell], other)
            if t.n == 0:
                continue
            lo, hi = significance.bootstrap_interval(t, resamples)
            p, how = significance.mcnemar(t.b, t.c)
            rows.append(
                [
                    label,
                    cell,
                    str(t.n),
                    f"{t.difference:+.2f}",
                    f"[{lo:+.2f}, {hi:+.2f}]",
                    f"{t.b} / {t.c}",
                    f"{p:.3g} ({'exact' if how == 'exact' else 'χ²'})",
                ]
            )
    head = [
        "Run",
        "Cell",
        "n",
        "Δ acc",
        "95 % CI (bootstrap)",
        f"right in {labels[0]} only / run only",
        "McNemar p",
    ]
    note = (
        f"Δ acc: the run's accuracy minus {labels[0]}'s on the shared items, in points ({' / '.join(sorted(measures))}"
        f" correctness per item); 95 % CI: paired bootstrap percentile interval, {resamples} resamples, seed "
        f"{significance.SEED}; McNemar p: exact two-sided binomial on the discordant items when there are fewer "
        f"than {significance.EXACT_BELOW}, else χ² with continuity correction."
    )
    warn = (
        ["**Warning: the runs pair different correctness measures (circular vs vanilla).**"]
        if len(measures) > 1
        else []
    )
    return lines + _table(head, rows) + [note, *warn]


def compare(
    runs: Sequence[dict],
    labels: Sequence[str] | None = None,
    *,
    setting: str | None = None,
    metric: str = "headline",
    allow_different_items: bool = False,
    bootstrap_resamples: int = 10000,
) -> str:
    """The comparison table of ``runs`` (results dicts of one benchmark) as markdown, then the paired
    significance table (``significance_table``); runs over different items are refused (``item_sets``)."""
    if len(runs) < 2:
        raise ValueError("compare needs a zero-shot run and at least one fine-tuned run")
    bench, labels = benchmark(runs), labels_of(runs, labels)
    notes = item_sets(runs, labels, allow_different_items=allow_different_items)
    tests = significance_table(runs, labels, resamples=bootstrap_resamples, setting=setting)
    own = getattr(bench, "compare", None)
    if own is not None:
        return "\n".join([own(runs, labels, setting=setting, metric=metric), *notes, *tests])
    return "\n".join(rank_table(bench, runs, labels) + provenance(runs, labels) + notes + tests)


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
