"""``report.html`` of one run: its summary (report.md with every number linked to its items, the plots) and
every item with its media, prompt, options, raw answers and decisions.

``write_run`` is called by every evaluation (``eval.pipeline``, with the items and records in memory) and by
``cavpref eval report RUN --html`` (``eval.html_report.run`` reads them back from the folder); both give the
same page.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformers.utils import logging

from cavpref.eval.html_report import page, summary
from cavpref.eval.html_report.media import MediaWriter
from cavpref.eval.html_report.rows import FACETS, rows_of
from cavpref.eval.reports import input_line
from cavpref.redact import redact

logger = logging.get_logger(__name__)

PAGE, MEDIA = "report.html", "report_media"


@dataclass
class RunView:
    """A run as its HTML report shows it."""

    results: dict
    bench: Any
    items: list
    records: dict[str, list[dict]]  # item id -> the records of its passes
    outcomes: list
    media_root: str
    args: Any
    warnings: list[str] = field(default_factory=list)


def by_item(records: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for rec in records:
        out.setdefault(rec["item_id"], []).append(rec)
    return out


def cap_rows(rows: list[dict], limit: int) -> tuple[list[dict], str]:
    """At most ``limit`` rows: the first of every (setting, task) in turn, plus the clean twins of those
    kept (so a pair is always shown side by side); and the sentence saying what was left out."""
    if len(rows) <= limit:
        return rows, ""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        groups[(row["facets"].get("setting"), row["facets"].get("task"))].append(row)
    keep: set[str] = set()
    depth = 0
    while len(keep) < limit:
        added = [g[depth]["id"] for g in groups.values() if depth < len(g)][: limit - len(keep)]
        if not added:
            break
        keep.update(added)
        depth += 1
    keep |= {r["twin"] for r in rows if r["id"] in keep and r.get("twin")}
    kept = [r for r in rows if r["id"] in keep]
    return kept, (
        f"This page holds {len(kept)} of the {len(rows)} items of the run (--html_max_items {limit}): the first "
        "items of every task and setting by id, with their clean twins. The summary's numbers are over all "
        "items, so a filtered list can be shorter than the number it opens."
    )


def run_name(results: dict) -> str:
    """What the run is called: its label, else its checkpoint's folder name, the served model's name or its
    predictions file's name."""
    model = results.get("model") or {}
    if results.get("label"):
        return str(results["label"])
    for key in ("name_or_path", "predictions"):
        if model.get(key):
            return Path(str(model[key])).name
    return str(model.get("model") or "run")


def run_meta(results: dict) -> list[tuple[str, str]]:
    """The page header: what ran, on what, how it was scored."""
    model = results.get("model") or {}
    c = results.get("counts") or results.get("metrics", {}).get("counts") or {}
    config = results.get("config") or {}
    meta = [
        (
            "benchmark",
            f"{results.get('benchmark', 'avtrustbench')} (protocol {results.get('protocol', 'paper')})",
        ),
        ("label", str(results.get("label") or "")),
        ("answers", str(results.get("mode"))),
        ("model", str(model.get("name_or_path") or model.get("model") or model.get("predictions") or "")),
        ("input", input_line(results)),
        ("data", str(config.get("data", ""))),
        (
            "items",
            (
                f"{c.get('items')} = {c.get('evaluated')} evaluated + {c.get('skipped')} skipped + "
                f"{c.get('incomplete')} incomplete"
            ),
        ),
    ]
    if model.get("fingerprint"):
        meta.append(("model fingerprint", model["fingerprint"][:16]))
    judge = results.get("judge")
    if judge:
        meta.append(("judge", f"{judge.get('model')} ({judge.get('prompt_version', '')})"))
    return [(k, v) for k, v in meta if v]


def attach_media(
    rows: list[dict], view: RunView, out_dir: Path, opts, folder: str = MEDIA, budget_mb: float | None = None
) -> str:
    """Each row's ``media`` (its spec JSON) replaced by what the page shows; the line saying what was written.
    ``budget_mb``: this view's share of the page's budget (default: all of it)."""
    if opts.no_media:
        for row in rows:
            row["media"] = {"note": "media left out (--no_media)"}
        return "media: left out (--no_media)"
    from tqdm.auto import tqdm

    items = {it.id: it for it in view.items}
    writer = MediaWriter(out_dir / folder, out_dir, opts, view.bench, view.media_root, view.args, budget_mb)
    for row in tqdm(rows, desc="report.html media", disable=len(rows) < 50):
        row["media"] = writer.write(items[row["id"]])
    s = writer.stats
    return (
        f"media: {s.files} files, {s.bytes / 1e6:.2f} MB in {folder}/ (budget {writer.budget_mb:g} MB) for "
        f"{s.items + s.shared} items ({s.shared} sharing another item's clip); {s.over_budget} items over "
        f"the budget, {s.errors} could not be decoded; per item {opts.thumbnail_frames} frames at "
        f"{opts.thumbnail_height} px and {opts.audio_clip_seconds:g} s of audio"
    )


def scored_of(view: RunView) -> list[tuple[Any, list[dict], Any]]:
    outcome_of = {o.item_id: o for o in view.outcomes}
    return [
        (it, view.records.get(it.id, []), outcome_of[it.id])
        for it in sorted(view.items, key=lambda i: i.id)
        if it.id in outcome_of
    ]


def write_run(view: RunView, out_dir: str | Path, opts, name: str = PAGE) -> Path:
    """``out_dir/report.html`` (+ ``report_media/``) for ``view``; ``opts``: ``HTMLReportArguments``."""
    out_dir = Path(out_dir)
    rows = rows_of(view.bench, scored_of(view))
    kept, cap_note = cap_rows(rows, opts.html_max_items)
    media_line = attach_media(kept, view, out_dir, opts)
    report_md = out_dir / "report.md"
    md = report_md.read_text(encoding="utf-8") if report_md.is_file() else ""
    summary_html, linked, numbers = summary.render(md, rows, view.bench.report_links())
    meta = run_meta(view.results) + [
        ("summary", f"{linked} of its {numbers} numbers link to the items behind them"),
        ("media", media_line.removeprefix("media: ")),
    ]
    html = page.render(
        title=f"{view.bench.title or view.bench.name} — {run_name(view.results)}",
        meta=meta,
        warnings=list(view.warnings),
        summary_html=summary_html,
        plots=page.plot_uris(out_dir / "plots"),
        items_note=(
            "Click a row for its media, prompt, options, raw output and decision per pass (and its clean "
            "twin). The filters are kept in the address (#items?task=…), so a filtered list can be "
            f"bookmarked; each number of the summary opens the items behind it. {cap_note}"
        ).strip(),
        data={"facets": list(FACETS), "rows": kept, "runs": None},
    )
    path = out_dir / name
    path.write_text(redact(html), encoding="utf-8")  # the rows were redacted before JSON; this masks the rest
    logger.info("wrote %s (%d items, %.1f MB; %s)", path, len(kept), len(html) / 1e6, media_line)
    return path
