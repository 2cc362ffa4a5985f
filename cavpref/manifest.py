"""What prep wrote next to a preference dataset (``manifest.json``), as training reads it.

Prep records the tasks it generated (their core facts) and the Eq. 6 switch table of each variant in the manifest;
training reads both, so a task declared by its own module (docs/data_prep.md, "Adding a task") is known to a
training process that never imports that module, and the switches the data were made for are the ones the loss
uses unless the recipe says otherwise.
"""

from __future__ import annotations

import json
import os


def prep_manifest(dataset: str | None) -> tuple[str | None, dict | None]:
    """The ``manifest.json`` prep wrote next to a preference folder (``OUT/preferences`` ->
    ``OUT/manifest.json``; the folder itself is looked in too): (path, contents), or (None, None) if none."""
    if not dataset:
        return None, None
    for folder in (os.path.dirname(os.path.normpath(dataset)), dataset):
        path = os.path.join(folder, "manifest.json")
        if os.path.isfile(path):
            try:
                with open(path) as f:
                    return path, json.load(f)
            except ValueError as err:
                raise ValueError(f"{path}: not valid JSON ({err})") from None
    return None, None


def resolve_switch_table(train_args, data_args) -> str:
    """Which Eq. 6 switch table the run uses, in words: the recipe's ``switch_table`` when it sets one, else
    the table prep wrote to the dataset's manifest (``switch_table.<switch_variant>``), else the declared
    tasks' defaults. The manifest's table is copied into ``train_args.switch_table``."""
    if train_args.switch_table:
        return "the recipe's switch_table"
    path, manifest = prep_manifest(data_args.train_dataset)
    table = ((manifest or {}).get("switch_table") or {}).get(train_args.switch_variant)
    if not table:
        where = f"{path} has no switch_table.{train_args.switch_variant}" if path else "no prep manifest.json"
        return f"the declared tasks' {train_args.switch_variant} defaults ({where} next to the dataset)"
    train_args.switch_table = {t: list(v) for t, v in table.items()}
    train_args.switches()  # validates it, naming the task
    return f"{path} (switch_table.{train_args.switch_variant})"
