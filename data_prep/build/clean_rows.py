"""CLEAN preference rows that reject abstaining (``PrepConfig.clean_rejected: abstain``, the default).

Why: a CLEAN row that rejects a wrong option teaches the answer, but nothing in a mix of such rows and the
perturbed tasks' rows ever penalises *abstaining* on a clean item — while 7 of the 9 tasks reward it. The
learnability ladder measured what that does (cavpref_lab/ladder/README.md; same start and rows,
per-token reading, 2 epochs, 3 seeds): DPO's paired trust went from 0 % with wrong-option CLEAN rows to
22.6 ± 5.3 % with CLEAN rows that reject abstaining (its `clean_abstain` mix), false abstention 0.7 ± 0.7 %.

So every CLEAN row whose record has a perturbed twin (the item of an abstaining task built from the same
source record, in the same setting) rejects the abstention instead: in the instruction setting the row's own
"None of the above" option (``"<letter>. None of the above"``; the rotation of ``rotate_options`` moves it with
the letters), in the base setting — which has no such option — the twin's abstention sentence (the first twin in
task order). ``clean_rejected: wrong_option`` keeps the wrong plausible option. A pure function of the rows and
items, applied before scoring and rotation (``data_prep/build/pipeline.py``); the ladder's
``clean_abstain`` mix calls it (``cavpref_lab/ladder/rows.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from cavpref import task_registry
from cavpref.data import CLEAN_TASK, NONE_OF_THE_ABOVE, TASKS, BenchmarkItem, PreferenceExample

CLEAN_REJECTED = ("abstain", "wrong_option")


def twin_key(row_id: str) -> str:
    """``"<setting>:<record key>"`` of an item / row id ``"<task>:<setting>:<record key>"``."""
    return row_id.split(":", 1)[1]


def _task_order(task: str) -> int:
    return TASKS.index(task) if task in TASKS else len(TASKS)


def reject_abstaining(
    prefs: Sequence[PreferenceExample], items: Iterable[BenchmarkItem]
) -> tuple[list[PreferenceExample], int]:
    """``prefs`` with every twinned CLEAN row's rejected response an abstention (module docstring), and how
    many rows changed. ``items``: the benchmark items of the same split (the instruction rows' letters)."""
    by_id = {it.id: it for it in items}
    twin_abstention: dict[str, str] = {}
    for p in sorted(prefs, key=lambda p: _task_order(p.task)):
        if p.task != CLEAN_TASK and task_registry.task_info(p.task).abstains:
            twin_abstention.setdefault(twin_key(p.id), p.chosen)
    out, changed = [], 0
    for p in prefs:
        sentence = twin_abstention.get(twin_key(p.id)) if p.task == CLEAN_TASK else None
        if sentence is None:
            out.append(p)
            continue
        item = by_id.get(p.id)
        letter = item.abstain_letter if item is not None else None
        rejected = f"{letter}. {NONE_OF_THE_ABOVE}" if letter else sentence
        out.append(dataclasses.replace(p, rejected=rejected))
        changed += 1
    return out, changed


def borrow_twin_anchors(prefs: Sequence[PreferenceExample]) -> tuple[list[PreferenceExample], int]:
    """``prefs`` with every CLEAN row carrying its twins' anchor pairs (``PrepConfig.clean_anchors``), and how
    many rows got one.

    Why: CAVPref's visual / audio terms compare the original answer under clean vs perturbed media, and only on
    the perturbed tasks' rows — where the presented media are the perturbed ones and the y term rewards
    abstaining. On a CLEAN row the same comparison raises the answer where answering is right (its chosen
    response, under its own clean media, against the twin's perturbed video / audio). The pair's media are the
    twin's (same record, same setting; the first twin in task order with that anchor), its response the CLEAN
    row's own chosen answer (so CircularEval's rotation moves it with the row's letters), and its AVSM delta the
    twin's: ``AVSM(V_w, A_w) − AVSM(V_l, A_w)`` depends on the media pair alone. Training uses them where the
    switch table turns CLEAN's switches on (``switch_table: {"CLEAN": [1, 1]}``)."""
    twins: dict[str, dict[str, tuple]] = {}
    for p in sorted(prefs, key=lambda p: _task_order(p.task)):
        if p.task == CLEAN_TASK:
            continue
        got = twins.setdefault(twin_key(p.id), {})
        if p.visual is not None:
            got.setdefault("visual", (p.visual, p.avsm_delta_v))
        if p.audio is not None:
            got.setdefault("audio", (p.audio, p.avsm_delta_a))
    out, changed = [], 0
    for p in prefs:
        got = twins.get(twin_key(p.id), {}) if p.task == CLEAN_TASK else {}
        if not got:
            out.append(p)
            continue
        kw = {}
        for name, delta in (("visual", "avsm_delta_v"), ("audio", "avsm_delta_a")):
            if name in got:
                pair, score = got[name]
                kw[name] = dataclasses.replace(pair, response=p.chosen)
                kw[delta] = score
        out.append(dataclasses.replace(p, **kw))
        changed += 1
    return out, changed


__all__ = ["CLEAN_REJECTED", "borrow_twin_anchors", "reject_abstaining", "twin_key"]
