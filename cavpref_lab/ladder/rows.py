"""The ladder's own training rows (issue 38): the ceiling's (each perturbed row with its clean twin), the same
under every CircularEval rotation, and the ``clean_abstain`` mix (CLEAN rows rejecting abstention). Pure
functions of the preference rows, and the stages that save them (``scripts/ladder.py`` runs them)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from datasets import Dataset, DatasetDict, load_from_disk

from cavpref.apps.quickstart import Stage
from cavpref.data import CLEAN_TASK, NONE_OF_THE_ABOVE, TASKS, BenchmarkItem, PreferenceExample
from cavpref.data_prep.build.clean_rows import borrow_twin_anchors
from cavpref.data_prep.build.rotation import rotate_preference
from cavpref.prompts import n_passes, rotate_response, rotated_view, rotation_for


def ceiling_order(ids: list[str], tasks: list[str], clean_copies: int = 1) -> tuple[list[int], int]:
    """The ceiling's training rows as indices into the preference rows: every perturbed row (its chosen
    response is the correct one) followed by its clean twin (the CLEAN row of the same record and setting,
    id ``CLEAN:<setting>:<record>``) — one to one, or ``clean_copies`` times; and how many twins were found."""
    clean = {i: n for n, (i, t) in enumerate(zip(ids, tasks)) if t == CLEAN_TASK}
    order, twins = [], 0
    for n, (i, t) in enumerate(zip(ids, tasks)):
        if t == CLEAN_TASK:
            continue
        order.append(n)
        twin = clean.get(f"{CLEAN_TASK}:{i.split(':', 1)[1]}")
        if twin is not None:
            order += [twin] * clean_copies
            twins += 1
    return order, twins


def ceiling_data(qcfg, stage: Stage, prefs_dir: Path, clean_copies: int = 1) -> None:
    """``ceiling/data`` (``ceiling_weighted/data`` with ``clean_copies`` > 1): the ceiling's rows saved as a
    dataset (``ceiling_order``)."""
    prefs = load_from_disk(str(prefs_dir))["train"]
    order, twins = ceiling_order(prefs["id"], prefs["task"], clean_copies)
    DatasetDict({"train": prefs.select(order)}).save_to_disk(str(stage.dir))
    perturbed = len(order) - twins * clean_copies
    stage.finish(perturbed=perturbed, clean_twins=twins, clean_copies=clean_copies, rows=len(order))


def every_rotation(rows, items: dict, seed: int) -> list[dict]:
    """Each preference row under every CircularEval rotation of its item (ids ``<id>:rot<k>``). Prep showed the
    row under one rotation drawn from (seed, id); its responses are moved back to the item's own letters and
    rotated again by prep's own ``rotate_preference`` — and rotating back to the drawn rotation must give the
    row prep wrote (checked, so a wrong seed or item fails loudly)."""
    out = []
    for row in rows:
        pref, item = PreferenceExample.from_row(row), items[row["id"]]
        drawn = rotation_for(seed, pref.id, item.options)
        back = {new: old for old, new in rotated_view(item, drawn)[1].items()}
        anchors = {
            name: None if pair is None else replace(pair, response=rotate_response(pair.response, back))
            for name, pair in (("visual", pref.visual), ("audio", pref.audio))
        }
        orig = replace(
            pref,
            chosen=rotate_response(pref.chosen, back),
            rejected=rotate_response(pref.rejected, back),
            **anchors,
        )
        again = rotate_preference(orig, item, drawn)
        if (again.prompt, again.chosen, again.rejected) != (pref.prompt, pref.chosen, pref.rejected):
            raise ValueError(
                f"preference row {pref.id!r}: not under rotation {drawn} of its item (seed {seed}?)"
            )
        for k in range(n_passes(item.options)):
            out.append({**rotate_preference(orig, item, k).to_row(), "id": f"{pref.id}:rot{k}"})
    return out


def ceiling_rot_data(qcfg, stage: Stage, prefs_dir: Path, data: Path) -> None:
    """``ceiling_rot/data``: the ceiling's rows (``ceiling_order``) under every rotation (``every_rotation``)."""
    prefs = load_from_disk(str(prefs_dir))["train"]
    order, _ = ceiling_order(prefs["id"], prefs["task"])
    items = {}
    for task in {*prefs["task"]}:
        for row in load_from_disk(str(data / "benchmark" / task))["train"]:
            items[row["id"]] = BenchmarkItem.from_row(row)
    rows = every_rotation(prefs.select(order), items, qcfg.seed)
    DatasetDict({"train": Dataset.from_list(rows)}).save_to_disk(str(stage.dir))
    stage.finish(rows=len(rows), from_rows=len(order))


def clean_abstain_rows(
    ids: list[str], tasks: list[str], chosen: list[str], prompts: list[str]
) -> dict[int, str]:
    """Row index -> new rejected response of every CLEAN row that has a perturbed twin: abstaining where
    answering is right. In the instruction setting that is the row's own "None of the above" option (its letter
    in the row's rotated prompt); in the base setting the twin's abstention sentence (the first perturbed twin in
    task order). The ``clean`` mix's CLEAN rows reject a wrong option, so nothing in it ever penalises
    abstaining on a clean item; this mix does."""
    twin: dict[str, str] = {}
    for i, t, c in sorted(
        zip(ids, tasks, chosen), key=lambda x: TASKS.index(x[1]) if x[1] in TASKS else len(TASKS)
    ):
        if t != CLEAN_TASK:
            twin.setdefault(i.split(":", 1)[1], c)
    out = {}
    for n, (i, t, prompt) in enumerate(zip(ids, tasks, prompts)):
        if t != CLEAN_TASK or i.split(":", 1)[1] not in twin:
            continue
        none = [x.split(". ", 1)[0] for x in prompt.splitlines() if x.endswith(f". {NONE_OF_THE_ABOVE}")]
        out[n] = f"{none[-1]}. {NONE_OF_THE_ABOVE}" if none else twin[i.split(":", 1)[1]]
    return out


def clean_abstain_data(stage: Stage, prefs_dir: Path) -> None:
    """``mixes/clean_abstain/data``: the preference rows with ``clean_abstain_rows``' rejected responses."""
    prefs = load_from_disk(str(prefs_dir))["train"]
    new = clean_abstain_rows(prefs["id"], prefs["task"], prefs["chosen"], prefs["prompt"])
    rows = prefs.map(lambda row, n: {"rejected": new.get(n, row["rejected"])}, with_indices=True)
    DatasetDict({"train": rows}).save_to_disk(str(stage.dir))
    stage.finish(rows=len(rows), clean_rows_changed=len(new))


def clean_anchor_data(stage: Stage, mix_dir: Path) -> None:
    """``mixes/clean_abstain_anchors/data``: the ``clean_abstain`` rows with every CLEAN row carrying its twins'
    anchor pairs, by the product's ``borrow_twin_anchors`` (prep's ``clean_anchors``)."""
    rows = load_from_disk(str(mix_dir))["train"]
    prefs, changed = borrow_twin_anchors([PreferenceExample.from_row(r) for r in rows])
    DatasetDict(
        {"train": Dataset.from_list([p.to_row() for p in prefs], features=rows.features)}
    ).save_to_disk(str(stage.dir))
    stage.finish(rows=len(prefs), clean_rows_with_twin_anchors=changed)
