"""The build's accounting (``stats.json``) and its printed summary.

read = kept + reader skips + single-modality exclusions + invalid + alignment drops; per task
eligible = generated + skipped, and generated × settings = items + split-dropped items.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from cavpref.data_prep.build.config import PrepConfig

from cavpref.data import BenchmarkItem


def dropped_total(stats: dict[str, Any]) -> int:
    """Records read but not kept: reader skips, single-modality exclusions, invalid, alignment drops."""
    return (
        stats["reader_skipped_total"]
        + sum(stats["excluded_single_modality"].values())
        + sum(stats["invalid_skipped"].values())
        + sum(stats.get("alignment_dropped", {}).values())  # absent in outputs of older builds
    )


def task_stats(skips: dict[str, Counter], items: dict[str, list], split_dropped: Counter, config: PrepConfig):
    made = Counter(it.task for split in items.values() for it in split)
    out = {}
    for task in config.tasks:
        sk = Counter(skips[task])
        eligible = sk.pop("eligible", 0)
        generated = eligible - sum(sk.values())
        out[task] = {
            "eligible": eligible,
            "generated": generated,
            "skipped": dict(sorted(sk.items())),
            "split_dropped_items": split_dropped[task],
            "items": made[task],
            "reconcile": generated * len(config.settings) == made[task] + split_dropped[task],
        }
    return out


def count_table(items: dict[str, list[BenchmarkItem]]) -> dict[str, dict[str, dict[str, dict[str, int]]]]:
    """{task: {source: {category: {split: items}}}} (both settings counted)."""
    table: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(Counter)))
    for split, split_items in items.items():
        for it in split_items:
            table[it.task][it.source][it.category][split] += 1
    return json.loads(json.dumps(table, sort_keys=True))


def format_stats(stats: dict[str, Any], splits: list[str]) -> str:
    """The printed summary: records accounting, per task × source × category × split counts, skips."""
    lines = [
        (
            f"records: read {stats['records_read']}  kept {stats['records_kept']}  reader-skipped "
            f"{stats['reader_skipped_total']}  "
            f"single-modality {sum(stats['excluded_single_modality'].values())}  "
            f"invalid {sum(stats['invalid_skipped'].values())}  "
            f"alignment {sum(stats.get('alignment_dropped', {}).values())}  "
            f"(reconciles: {stats['records_reconcile']})"
        )
    ]
    for name in ("reader_skipped", "excluded_single_modality", "invalid_skipped", "alignment_dropped"):
        lines += [f"  {name}: {n:>7}  {reason}" for reason, n in stats.get(name, {}).items()]
    head = (
        f"{'task':<11} {'source':<11} {'category':<16}"
        + "".join(f"{s:>11}" for s in splits)
        + f"{'total':>9}"
    )
    lines += ["", head, "-" * len(head)]
    for task, by_source in stats["counts"].items():
        for source, by_cat in by_source.items():
            for cat, by_split in by_cat.items():
                row = [by_split.get(s, 0) for s in splits]
                lines.append(
                    f"{task:<11} {source:<11} {cat:<16}" + "".join(f"{n:>11}" for n in row) + f"{sum(row):>9}"
                )
    lines.append("")
    for task, t in stats["tasks"].items():
        lines.append(
            f"{task:<11} eligible {t['eligible']:>7}  generated {t['generated']:>7}  items {t['items']:>7}"
            f"  split-dropped {t['split_dropped_items']:>5}  (reconciles: {t['reconcile']})"
        )
        lines += [f"{'':<13}skipped {n:>7}  {reason}" for reason, n in t["skipped"].items()]
        lines += [f"{'':<13}llm fallback {n:>5}  {reason}" for reason, n in t.get("llm_fallback", {}).items()]
    return "\n".join(lines)


def add_stats(a: Any, b: Any) -> Any:
    """Sum two stats trees (counts add, reconcile flags AND, a missing side counts as nothing)."""
    if isinstance(a, dict) or isinstance(b, dict):
        a, b = a or {}, b or {}
        return {k: add_stats(a.get(k), b.get(k)) for k in sorted(set(a) | set(b))}
    if a is None or b is None:
        return b if a is None else a
    return (a and b) if isinstance(a, bool) else a + b


def llm_fallbacks(items: dict[str, list[BenchmarkItem]]) -> dict[str, int]:
    """reason -> COT-Stitch records whose LLM negatives failed (template negatives used instead)."""
    seen: dict[str, str] = {}
    for split_items in items.values():
        for it in split_items:
            how = str(it.meta.get("negatives", ""))
            if it.task == "COT-Stitch" and how.startswith("template ("):
                seen[it.meta.get("record", it.id)] = how[len("template (") : -1]
    return dict(sorted(Counter(seen.values()).items()))
