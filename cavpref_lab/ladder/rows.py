"""The ladder's own training rows (issue 38): the ceiling's (each perturbed row with its clean twin), the same
under every CircularEval rotation, and the mixes' CLEAN rows of either kind, built by the product's own rule
(``MIX_CLEAN_REJECTED``). Pure functions of the preference rows, and the stages that save them
(``scripts/ladder.py`` runs them)."""

from __future__ import annotations

import json
import shutil
from dataclasses import fields, replace
from pathlib import Path

from datasets import Dataset, DatasetDict, load_from_disk

from cavpref.apps.quickstart import Stage
from cavpref.data import CLEAN_TASK, BenchmarkItem, PreferenceExample
from cavpref.data_prep.build import PrepConfig, build
from cavpref.data_prep.build.clean_rows import borrow_twin_anchors, reject_abstaining
from cavpref.data_prep.build.rotation import rotate_preference
from cavpref.prompts import n_passes, rotate, rotate_response, rotated_view, rotation_for


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


#: the kind of CLEAN rows each mix trains on, as prep's ``clean_rejected`` names it: ``clean`` = CLEAN rows as
#: prep built them before its default changed (a wrong option rejected), ``clean_abstain`` = CLEAN rows rejecting
#: abstention (the ladder's lesson, now prep's default: ``cavpref.data_prep.build.clean_rows``)
MIX_CLEAN_REJECTED = {"clean": "wrong_option", "clean_abstain": "abstain"}


def prep_config(source: Path) -> dict:
    """The prep keys the source's ``data/`` was built with (its ``manifest.json``)."""
    manifest = source / "data" / "manifest.json"
    if not manifest.is_file():
        raise FileNotFoundError(
            f"{manifest}: no prep manifest; --source must be a finished `cavpref quickstart` run"
        )
    return json.loads(manifest.read_text())["config"]


def source_clean_rejected(source: Path) -> str:
    """The kind of the source's CLEAN rows: its prep's ``clean_rejected`` (a prep older than the key built only
    ``wrong_option`` rows — the ladder's published runs)."""
    return prep_config(source).get("clean_rejected", "wrong_option")


def items_as_shown(items: dict, seed: int) -> dict:
    """Each item with its "None of the above" letter under the rotation its training row is shown under (prep's
    ``rotate_options``: drawn from (seed, id)), so the product's rule reads the letter the row's prompt shows."""
    out = {}
    for i, item in items.items():
        if item.abstain_letter is not None:
            new_of = rotate(item.options, rotation_for(seed, i, item.options))[1]
            item = replace(item, abstain_letter=new_of[item.abstain_letter])
        out[i] = item
    return out


def mix_data(stage: Stage, source: Path, mix: str) -> None:
    """``mixes/<mix>/data``: the source's preference rows with CLEAN rows of the mix's kind
    (``MIX_CLEAN_REJECTED``) where the source's prep built the other kind, through the product's own rule:
    rows rejecting abstention are the source's rows through ``reject_abstaining`` (as prep applies it, the letter
    read under each row's rotation); rows rejecting a wrong option, which an ``abstain`` prep no longer holds, are
    prep re-run from the source's manifest with ``clean_rejected: wrong_option`` (the same rows otherwise)."""
    kind, config = MIX_CLEAN_REJECTED[mix], prep_config(source)
    prefs_dir = source / "data" / "preferences"
    if kind == "abstain":
        prefs = load_from_disk(str(prefs_dir))["train"]
        clean = load_from_disk(str(source / "data" / "benchmark" / CLEAN_TASK))["train"]
        items = {row["id"]: BenchmarkItem.from_row(row) for row in clean}
        if config.get("rotate_options"):
            items = items_as_shown(items, config["seed"])
        rows, changed = reject_abstaining([PreferenceExample.from_row(r) for r in prefs], items.values())
        out = prefs.map(lambda row, n: {"rejected": rows[n].rejected}, with_indices=True)
    else:
        built = stage.dir.parent / f".{stage.dir.name}_prep"
        built.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(built, ignore_errors=True)
        known = {f.name for f in fields(PrepConfig)}
        keys = {k: v for k, v in config.items() if k in known}
        build(PrepConfig(**{**keys, "output_dir": str(built), "clean_rejected": kind}))
        out = load_from_disk(str(built / "preferences"))["train"]
        changed = sum(
            a != b for a, b in zip(out["rejected"], load_from_disk(str(prefs_dir))["train"]["rejected"])
        )
    DatasetDict({"train": out}).save_to_disk(str(stage.dir))
    if kind != "abstain":
        shutil.rmtree(built)
    stage.finish(rows=len(out), clean_rows_changed=changed, clean_rejected=kind)


def clean_anchor_data(stage: Stage, mix_dir: Path) -> None:
    """``mixes/clean_abstain_anchors/data``: the ``clean_abstain`` rows with every CLEAN row carrying its twins'
    anchor pairs, by the product's ``borrow_twin_anchors`` (prep's ``clean_anchors``)."""
    rows = load_from_disk(str(mix_dir))["train"]
    prefs, changed = borrow_twin_anchors([PreferenceExample.from_row(r) for r in rows])
    DatasetDict(
        {"train": Dataset.from_list([p.to_row() for p in prefs], features=rows.features)}
    ).save_to_disk(str(stage.dir))
    stage.finish(rows=len(prefs), clean_rows_with_twin_anchors=changed)
