"""The answer first: what a run (or training) did to trust, in four numbers with their 95 % intervals.

Why: AVTrustBench's per-task accuracies reward blind abstention (7 of 9 tasks have "None of the above" as the
right answer), so a report that opens with them can show a model that stopped answering as the best one. The
numbers that cannot be gamed that way go first:

- **paired trust** — perturbed items answered right *and* their clean twins answered right (``trust``);
- **false abstention** — CLEAN items the model abstained on (every one of them is wrong);
- **separation** — over (perturbed, clean twin) pairs, how often the perturbed item's abstention margin is the
  larger (``separation``; likelihood runs only, 50 % = cannot tell them apart);
- **CLEAN accuracy** — the answerable questions still answered.

Intervals: the Wilson score interval for the three proportions (right at 0 % and 100 % and for small n, where
the normal one leaves [0, 100]); the normal interval of a mean for separation, whose pair scores are 0, ½ or 1.
The "always abstain" / "never abstain" rows are computed from the items (``trust.references``): what the
policies that ignore the media score. Pure functions of results dicts (``tests/eval/test_trust_headline.py``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

from cavpref.data import CLEAN_TASK
from cavpref.eval.metrics import primary
from cavpref.eval.tables import fmt

Z95 = 1.959963984540054


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval of k successes in n trials, in %; None for n = 0."""
    if n <= 0:
        return None
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    lo, hi = (0.0 if k == 0 else centre - half), (1.0 if k == n else centre + half)  # exact ends
    return 100 * max(0.0, min(lo, p)), 100 * min(1.0, max(hi, p))


def mean_interval(scores: Sequence[float], z: float = Z95) -> tuple[float, float] | None:
    """Normal 95 % interval of a mean of ``scores`` (each in [0, 1]), in %, clipped to [0, 100]."""
    if len(scores) < 2:
        return None
    m, se = statistics.fmean(scores), statistics.stdev(scores) / math.sqrt(len(scores))
    return 100 * max(0.0, m - z * se), 100 * min(1.0, m + z * se)


def _share(pct: float | None, n: int) -> dict:
    """``{value, n, ci}`` of a percentage over n items (the count it stands for is pct·n/100)."""
    if pct is None or not n:
        return {"value": None, "n": n, "ci": None}
    return {"value": pct, "n": n, "ci": wilson(round(pct * n / 100), n)}


def trust_row(results: Mapping, setting: str, pair_scores: Sequence[float] | None = None) -> dict:
    """One run's four numbers in ``setting``: ``{paired, false_abstention, clean, separation}``, each
    ``{value, n, ci}``. ``pair_scores``: per-pair separation scores (1, ½, 0); default: the run's own
    ``metrics.separation`` (likelihood runs)."""
    metrics = results["metrics"]
    row = _row(metrics.get("trust", {}), metrics, setting, pair_scores)
    recorded = metrics.get("separation", {}).get(setting)
    if pair_scores is None and recorded:  # a likelihood run's own (results.json)
        row["separation"] = {"value": recorded["value"], "n": recorded["n"], "ci": recorded["ci"]}
    return row


def reference_rows(results: Mapping, setting: str) -> dict[str, dict]:
    """``{"always abstain": row, "never abstain": row}``: the computed policies on the same items."""
    refs = results["metrics"].get("references", {})
    return {name: _row(ref.get("trust", {}), ref, setting, None) for name, ref in refs.items()}


def _row(trust: Mapping, summary: Mapping, setting: str, pair_scores) -> dict:
    block = trust.get("settings", {}).get(setting, {})
    clean = summary.get("settings", {}).get(setting, {}).get("tasks", {}).get(CLEAN_TASK, {})
    paired = block.get("paired", {})
    sep = None
    if pair_scores:
        sep = {"value": 100 * statistics.fmean(pair_scores), "n": len(pair_scores)}
        sep["ci"] = mean_interval(pair_scores)
    return {
        "paired": _share(primary(paired) if paired else None, paired.get("n", 0)),
        "false_abstention": _share(block.get("false_abstention"), clean.get("n", 0)),
        "clean": _share(primary(clean) if clean else None, clean.get("n", 0)),
        "separation": sep or {"value": None, "n": 0, "ci": None},
    }


def cell(entry: Mapping) -> str:
    """``31.2 [22.0, 42.1]`` (``–`` when unknown)."""
    if entry["value"] is None:
        return "–"
    ci = entry["ci"]
    return fmt(entry["value"]) + (f" [{fmt(ci[0])}, {fmt(ci[1])}]" if ci else "")


COLUMNS = ("paired", "false_abstention", "separation", "clean")
HEADERS = ("paired trust %", "false abstention on CLEAN %", "separation %", "CLEAN accuracy %")


def table_rows(rows: Mapping[str, Mapping]) -> list[list[str]]:
    """Markdown cells: one row per label, the four numbers with their intervals, and the pairs / items counted."""
    out = []
    for label, row in rows.items():
        counts = f"{row['paired']['n']} / {row['clean']['n']}"
        out.append([label, *(cell(row[c]) for c in COLUMNS), counts])
    return out


def sentence(label: str, start: Mapping, row: Mapping) -> str:
    """What training did, in one line: ``DPO: paired trust 4 → 31 %, false abstention 2 → 2 %, CLEAN 90 → 85 %.``"""

    def move(key: str) -> str:
        a, b = start[key]["value"], row[key]["value"]
        return f"{fmt(a)} → {fmt(b)} %"

    return (
        f"{label}: paired trust {move('paired')}, false abstention {move('false_abstention')}, "
        f"CLEAN {move('clean')}."
    )


__all__ = [
    "COLUMNS",
    "HEADERS",
    "cell",
    "mean_interval",
    "reference_rows",
    "sentence",
    "table_rows",
    "trust_row",
    "wilson",
]
