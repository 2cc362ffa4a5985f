"""``cavpref eval compare RUN_A RUN_B … --html PAGE``: every item once, each run's answer beside the others',
filterable by where the runs differ.

Each run folder is read back (``run.load_run``: the records the run used) and shown with the benchmark's
item view (``Benchmark.inspect``); rows are joined by item id. Per item the page has a result facet per
run (``result (SFT)``: correct / wrong / skipped / not in this run) and ``agreement`` — ``all right``,
``all wrong``, ``differ`` (some runs right, some wrong) or ``not evaluated in every run`` — so "right
before, wrong after" is one filter. The summary is the comparison table ``eval compare`` printed, each
number linked to its items.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cavpref.eval.compare import labels_of
from cavpref.eval.html_report import page, summary
from cavpref.eval.html_report.rows import FACETS, rows_of
from cavpref.eval.html_report.run import load_run
from cavpref.eval.html_report.write import attach_media, cap_rows, scored_of
from cavpref.redact import redact

CONTEXT = ("benchmark", "setting", "source", "task", "dimension", "category", "twin")  # the same in every run
PER_RUN = (
    "facets",
    "answer",
    "chosen",
    "passes",
    "reason",
    "vanilla",
    "circular",
    "passes_run",
    "passes_total",
    "media",
)


def agreement(results: list[str]) -> str:
    if any(r not in ("correct", "wrong") for r in results):
        return "not evaluated in every run"
    if all(r == "correct" for r in results):
        return "all right"
    return "all wrong" if all(r == "wrong" for r in results) else "differ"


def join(per_run: list[dict[str, dict]], labels: list[str]) -> list[dict]:
    """One row per item id over the runs: context facets, a result facet per run, ``agreement``."""
    ids = list(dict.fromkeys(i for rows in per_run for i in rows))
    out = []
    for item_id in ids:
        present = [(label, rows[item_id]) for label, rows in zip(labels, per_run) if item_id in rows]
        first = present[0][1]
        facets = {k: first["facets"][k] for k in CONTEXT if k in first["facets"]}
        results = []
        for label, rows in zip(labels, per_run):
            row = rows.get(item_id)
            value = (
                "not in this run" if row is None else row["facets"].get("result") or row["facets"]["status"]
            )
            facets[f"result ({label})"] = value
            results.append(value)
        facets["agreement"] = agreement(results)
        out.append(
            {
                "id": item_id,
                "facets": facets,
                "question": first["question"],
                "runs": [{"label": label, **{k: row.get(k) for k in PER_RUN}} for label, row in present],
            }
        )
    return out


def write_compare(
    run_dirs: Sequence[str | Path], labels: Sequence[str] | None, out: str | Path, opts, *, table: str
) -> Path:
    """The comparison page at ``out`` (media in ``<out stem>_media/`` beside it)."""
    views = [load_run(d) for d in run_dirs]
    labels = labels_of([v.results for v in views], labels)
    if len(set(labels)) != len(labels):
        raise ValueError(f"--html needs a distinct label per run, got {labels} (give --labels)")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    per_run = [{r["id"]: r for r in rows_of(v.bench, scored_of(v))} for v in views]
    kept, cap_note = cap_rows(join(per_run, labels), opts.html_max_items)
    keep = {r["id"] for r in kept}
    per_run = [{i: r for i, r in rows.items() if i in keep} for rows in per_run]
    lines, share = [], opts.media_budget_mb / len(views)  # the page's budget, shared by the runs
    for view, label, rows in zip(views, labels, per_run):
        media = attach_media(list(rows.values()), view, out.parent, opts, f"{out.stem}_media", share)
        lines.append(f"{label}: {media}")
    rows = join(per_run, labels)
    summary_html, linked, numbers = summary.render(table, rows, views[0].bench.report_links())
    meta = [
        ("benchmark", views[0].bench.title or views[0].bench.name),
        *((f"run {label}", str(Path(d))) for label, d in zip(labels, run_dirs)),
        (
            "items",
            f"{len(rows)} ({sum(r['facets']['agreement'] == 'differ' for r in rows)} where the runs differ)",
        ),
        ("summary", f"{linked} of its {numbers} numbers link to the items behind them"),
        *(("media", line) for line in lines),
    ]
    html = page.render(
        title=f"{views[0].bench.title or views[0].bench.name} — " + " vs ".join(labels),
        meta=meta,
        warnings=[w for v in views for w in v.warnings],
        summary_html=summary_html,
        plots=[],
        items_note=(
            "One row per item, a result column per run; filter agreement = differ for the items where the "
            f"runs disagree. Click a row for each run's passes side by side. {cap_note}"
        ).strip(),
        data={
            "facets": [*FACETS, "agreement", *(f"result ({label})" for label in labels)],
            "rows": rows,
            "runs": labels,
        },
    )
    out.write_text(redact(html), encoding="utf-8")
    return out
