"""The build's accounting (``stats.json``) and its printed summary.

read = kept + reader skips + single-modality exclusions + invalid + alignment drops; per task
eligible = generated + skipped, and generated × settings = items + split-dropped items.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from cavpref.data import CATEGORIES, BenchmarkItem
from cavpref.data_prep.build.config import PrepConfig
from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tables import normalise
from cavpref.data_prep.tasks.common import YES_NO, norm
from cavpref.data_prep.tasks.context import clip_id


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
    width = max(
        [11] + [len(src) for by_source in stats["counts"].values() for src in by_source]
    )  # custom_clips
    head = (
        f"{'task':<11} {'source':<{width}} {'category':<16}"
        + "".join(f"{s:>11}" for s in splits)
        + f"{'total':>9}"
    )
    lines += ["", head, "-" * len(head)]
    for task, by_source in stats["counts"].items():
        for source, by_cat in by_source.items():
            for cat, by_split in by_cat.items():
                row = [by_split.get(s, 0) for s in splits]
                lines.append(
                    f"{task:<11} {source:<{width}} {cat:<16}"
                    + "".join(f"{n:>11}" for n in row)
                    + f"{sum(row):>9}"
                )
    lines.append("")
    for task, t in stats["tasks"].items():
        lines.append(
            f"{task:<11} eligible {t['eligible']:>7}  generated {t['generated']:>7}  items {t['items']:>7}"
            f"  split-dropped {t['split_dropped_items']:>5}  (reconciles: {t['reconcile']})"
        )
        lines += [f"{'':<13}skipped {n:>7}  {reason}" for reason, n in t["skipped"].items()]
        lines += [f"{'':<13}llm fallback {n:>5}  {reason}" for reason, n in t.get("llm_fallback", {}).items()]
    if stats.get("custom"):
        lines += ["", "your JSONL (custom): what the build could not derive"]
        lines += [f"  - {sentence}" for sentence in stats["custom"]["not_derived"]] or ["  - nothing"]
    return "\n".join(lines)


def custom_report(records: list[QARecord], tables, config: PrepConfig) -> dict[str, Any]:
    """What the build derived from the user's own JSONL (the ``custom`` / ``custom_clips`` records it kept) and,
    in words (``not_derived``), what it could not: the released sources come with an ontology, categories and
    event labels; a user's file may carry none of them, and the generators then skip items for reasons a user
    should read before training (docs/your_data.md)."""
    qa = [r for r in records if r.source == "custom"]
    clips = [r for r in records if r.source == "custom_clips"]
    qa_clips = {clip_id(r) for r in qa}
    labelled = {clip_id(r) for r in qa if r.labels}
    # yes / no answers get Yes / No as options whatever T3 holds: only the other answers need distractors
    vocab = {c: len({norm(x) for x in tables.t3.get(c, [])} - set(YES_NO)) for c in CATEGORIES}
    optionless = Counter(r.category for r in qa if not r.options and norm(r.answer) not in YES_NO)
    thin = {c: vocab[c] for c in sorted(optionless) if vocab[c] < config.num_options}
    how = {normalise(text): m.get("how") for text, m in tables.mapping.items()}  # keyed as the tables match
    unmatched = sorted(
        {x for r in (*qa, *clips) for x in r.labels if how.get(normalise(x)) == "none"}, key=str.casefold
    )
    defaulted = sum(r.meta.get("category_from") == "default" for r in qa)
    report = {
        "questions": len(qa),
        "clip_lines": len(clips),
        "question_clips": len(qa_clips),
        "question_clips_with_labels": len(labelled),
        "questions_with_options": sum(bool(r.options) for r in qa),
        "category_from": dict(sorted(Counter(r.meta.get("category_from", "") for r in qa).items())),
        "datasets": dict(sorted(Counter(r.meta.get("dataset", "(none)") for r in (*qa, *clips)).items())),
        "t1_t2": f"derived from {config.audioset_ontology}" if config.audioset_ontology else "not derived",
        "t3_sizes": vocab,
        "labels_without_class": unmatched,
    }
    said = []
    if not config.audioset_ontology:
        said.append(
            "T1 / T2 (unrelated classes, supercategory groups): no audioset_ontology, so no class is known to be "
            "unrelated to another; a partner clip counts as unrelated when the two clips share no label "
            "('disjoint'), and a clip without labels gets only 'unchecked' partners (skipped below "
            f"min_partner_check {config.min_partner_check!r})"
        )
    if unmatched:
        said.append(
            f"{len(unmatched)} label(s) name no ontology class (they count for shared-label checks only)"
        )
    if len(labelled) < len(qa_clips):
        said.append(
            f"{len(qa_clips) - len(labelled)} of {len(qa_clips)} question clips have no labels: their classes "
            "come only from class names found in their questions and answers"
        )
    if defaulted:
        said.append(
            f"{defaulted} question(s) name no category and match no prefix rule: put in default_category "
            f"{config.default_category!r}"
        )
    if thin:
        said.append(
            f"T3 has fewer than num_options ({config.num_options}) non-yes/no answers in {thin} (category: "
            "answers): questions there without options of their own get fewer distractors, or none"
        )
    if not clips:
        said.append("no clip lines (labels, no question): COT-Stitch, COT-Swap and CAT have no events to use")
    report["not_derived"] = said
    return report


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
