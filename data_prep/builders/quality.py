"""Quality gates with counts: the per-question ledger, the human-audit sample, the agreement statistics.

* ``Ledger``: one row per generated question with the result of every gate it went through and, when
  rejected, the first gate that rejected it. ``summary()`` reconciles: generated = kept + rejected, per
  reason and per task (a build whose numbers do not add up raises instead of writing its stats).
* ``audit_sample``: the share of kept questions for human auditors, drawn per batch (TraceAV-Bench audits
  15 % of every generation batch), deterministic given the seed; ``write_audit`` exports it as JSONL and
  CSV with the media paths and empty columns for the auditors' labels.
* ``spearman`` (scipy) for two raters' or a rater's and a metric's scores (AURA's human check), ``fleiss_kappa``
  for several raters' categorical labels (TraceAV-Bench's pass / modify / reject, App. G), and
  ``batch_error_rates`` for TraceAV's batch rule (a batch whose audited items exceed 5 % errors is dropped).
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cavpref import jsonl
from cavpref.data_prep.builders.work import BuildError, write_text

AUDIT_COLUMNS = ("label", "rating", "notes")  # left empty for the auditors


class Ledger:
    """Every generated question's fate. ``add`` once per question, in generation order."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(self, qid: str, task: str, gates: Mapping[str, Any], reason: str | None) -> None:
        """``gates``: gate name -> its result (pass / the problem / the model's verdict); ``reason``: the
        rejecting gate's reason, None when kept."""
        self.rows.append(
            {
                "id": qid,
                "task": task,
                "status": "kept" if reason is None else "rejected",
                "reason": reason,
                "gates": dict(gates),
            }
        )

    def kept(self) -> list[str]:
        return [r["id"] for r in self.rows if r["status"] == "kept"]

    def summary(self) -> dict[str, Any]:
        """generated / kept / rejected by reason, overall and per task; raises if they do not add up."""

        def block(rows):
            rejected = Counter(r["reason"] for r in rows if r["status"] == "rejected")
            out = {
                "generated": len(rows),
                "kept": sum(r["status"] == "kept" for r in rows),
                "rejected": dict(sorted(rejected.items())),
            }
            if out["generated"] != out["kept"] + sum(rejected.values()):
                raise AssertionError(f"ledger does not reconcile: {out}")
            return out

        tasks = sorted({r["task"] for r in self.rows})
        return {
            **block(self.rows),
            "per_task": {t: block([r for r in self.rows if r["task"] == t]) for t in tasks},
        }

    def jsonl(self) -> str:
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.rows)


def audit_sample(
    rows: Sequence[Mapping[str, Any]], fraction: float, seed: int, batch_key: str = "batch"
) -> list[Mapping[str, Any]]:
    """``ceil(fraction * n)`` rows of every batch (none when ``fraction`` is 0), drawn with ``seed``; rows keep
    their input order."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"audit fraction must be within [0, 1], got {fraction}")
    by_batch: dict[Any, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        by_batch[row[batch_key]].append(i)
    rng = random.Random(seed)
    chosen: set[int] = set()
    for batch in sorted(by_batch, key=str):
        idx = by_batch[batch]
        chosen.update(rng.sample(idx, math.ceil(fraction * len(idx))))
    return [rows[i] for i in sorted(chosen)]


def write_audit(
    rows: Sequence[Mapping[str, Any]], folder: Path, stem: str = "audit_sample"
) -> tuple[Path, Path]:
    """``<stem>.jsonl`` (rows as they are) and ``<stem>.csv`` (nested values as JSON, plus the empty
    auditor columns) in ``folder``."""
    jsonl, table = folder / f"{stem}.jsonl", folder / f"{stem}.csv"
    write_text(
        jsonl,
        "".join(
            json.dumps({**r, **dict.fromkeys(AUDIT_COLUMNS, "")}, ensure_ascii=False) + "\n" for r in rows
        ),
    )
    columns = list(dict.fromkeys(k for r in rows for k in r)) + list(AUDIT_COLUMNS)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, extrasaction="ignore")
    writer.writeheader()
    for r in rows:
        writer.writerow(
            {
                k: (v if isinstance(v, str | int | float) or v is None else json.dumps(v, ensure_ascii=False))
                for k, v in r.items()
            }
        )
    write_text(table, buf.getvalue())
    return jsonl, table


def read_audit(path: str | Path) -> list[dict[str, Any]]:
    """Audited rows back from the CSV or JSONL written by ``write_audit`` (auditors' columns filled in)."""
    path = Path(path)
    try:
        text = jsonl.read_text(path)
        if path.suffix != ".jsonl":
            return list(csv.DictReader(io.StringIO(text)))
        rows = jsonl.read_jsonl(path, text=text)
    except jsonl.JsonlError as err:
        raise BuildError(str(err)) from None
    for n, row in rows:
        if not isinstance(row, dict):
            raise BuildError(f"{path}:{n}: expected a JSON object, got {type(row).__name__}")
    return [row for _, row in rows]


# ----------------------------------------------------------------------------- agreement (pure)


def spearman(x: Sequence[float], y: Sequence[float]) -> dict[str, float]:
    """Spearman's rank correlation of paired scores (``scipy.stats.spearmanr``: ties get mean ranks)."""
    from scipy.stats import spearmanr

    if len(x) != len(y) or len(x) < 3:
        raise ValueError(f"spearman needs at least 3 pairs of equal length, got {len(x)} and {len(y)}")
    result = spearmanr(x, y)
    return {"rho": float(result.statistic), "p_value": float(result.pvalue), "n": len(x)}


def fleiss_kappa(labels: Sequence[Sequence[Any]]) -> float:
    """Fleiss' kappa of ``labels[item][rater]`` (every item rated by the same number of raters, >= 2):
    (P_bar - P_e) / (1 - P_e), P_bar the mean per-item agreement, P_e the chance agreement from the
    category shares (Fleiss 1971)."""
    counts = [Counter(row) for row in labels]
    raters = {len(row) for row in labels}
    if not counts or len(raters) != 1 or min(raters) < 2:
        raise ValueError("fleiss_kappa needs items rated by the same number (>= 2) of raters")
    n = raters.pop()
    categories = sorted({c for row in counts for c in row}, key=str)
    total = len(counts) * n
    shares = [sum(row[c] for row in counts) / total for c in categories]
    p_items = [(sum(v * v for v in row.values()) - n) / (n * (n - 1)) for row in counts]
    p_bar, p_e = sum(p_items) / len(p_items), sum(p * p for p in shares)
    if p_e == 1.0:
        return 1.0  # every rater used the one category: perfect (and trivial) agreement
    return (p_bar - p_e) / (1.0 - p_e)


def batch_error_rates(
    rows: Iterable[Mapping[str, Any]], batch_key: str, label_key: str, errors: Sequence[str], max_rate: float
) -> dict[str, dict[str, Any]]:
    """Per batch: audited items, items whose ``label_key`` is one of ``errors``, the rate, and whether the
    batch is dropped (rate > ``max_rate``; TraceAV-Bench App. G: 5 %)."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        label = str(row.get(label_key) or "").strip()
        if not label:
            continue
        c = counts[str(row[batch_key])]
        c[0] += 1
        c[1] += label in errors
    return {
        b: {"audited": n, "errors": e, "rate": e / n, "dropped": e / n > max_rate}
        for b, (n, e) in sorted(counts.items())
    }
