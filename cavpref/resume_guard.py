"""Refuse a resume whose recipe differs from the run it continues.

A resumed run's ``run_config.yaml`` / ``loss.json`` are rewritten from the new recipe, so a resume with another
loss, learning rate or data would make the run folder claim that the whole run was the new recipe. What defines a
run is *derived* from the configuration classes, not listed: every field of every class defines it (so a key added
tomorrow is protected by default), except the few that only say how long the run goes, how often it logs, saves
or evaluates, where it logs, and what this process is. Those are named, each with its reason,

* for the fields our config inherits from transformers' ``TrainingArguments`` and TRL's ``DPOConfig``: in
  ``LIBRARY_MAY_CHANGE`` below;
* for fields of our own classes: in the class's ``MAY_CHANGE_ON_RESUME`` (next to the fields; field metadata
  cannot carry it, ``HfArgumentParser`` hands every metadata key to argparse).

With ``allow_recipe_change: true`` the resume goes ahead and the old config is kept next to the new one.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from typing import Any

from cavpref.parsing import load_yaml

_LENGTH = "how long the run goes (a longer max_steps is the usual reason to resume)"
_CADENCE = "how often it logs / saves / evaluates"
_WHERE = "where it logs or publishes"
_PROCESS = "this process and invocation, not the run"
_LOADING = (
    "how batches are loaded: collation is deterministic (bit-identical weights, tests/test_train_determinism)"
)
_EVAL = "evaluation only: the trained weights do not depend on it"

# Inherited fields (TrainingArguments / DPOConfig) that may change on resume, with the reason.
LIBRARY_MAY_CHANGE: dict[str, str] = {
    **dict.fromkeys(("max_steps", "num_train_epochs"), _LENGTH),
    **dict.fromkeys(
        (
            "logging_strategy",
            "logging_steps",
            "logging_first_step",
            "save_strategy",
            "save_steps",
            "save_total_limit",
            "save_only_model",
            "save_on_each_node",
            "enable_jit_checkpoint",
            "eval_strategy",
            "eval_steps",
            "eval_delay",
            "eval_on_start",
        ),
        _CADENCE,
    ),
    **dict.fromkeys(
        (
            "report_to",
            "run_name",
            "project",
            "trackio_space_id",
            "trackio_bucket_id",
            "trackio_static_space_id",
            "log_level",
            "log_level_replica",
            "log_on_each_node",
            "logging_nan_inf_filter",
            "include_num_input_tokens_seen",
            "skip_memory_metrics",
            "disable_tqdm",
            "push_to_hub",
            "hub_token",
            "hub_private_repo",
            "hub_model_id",
            "hub_strategy",
            "hub_always_push",
            "hub_revision",
        ),
        _WHERE,
    ),
    **dict.fromkeys(
        (
            "output_dir",
            "resume_from_checkpoint",
            "local_rank",
            "do_train",
            "do_eval",
            "do_predict",
            "ddp_timeout",
        ),
        _PROCESS,
    ),
    **dict.fromkeys(
        (
            "dataloader_num_workers",
            "dataloader_persistent_workers",
            "dataloader_prefetch_factor",
            "dataloader_pin_memory",
            "dataset_num_proc",
        ),
        _LOADING,
    ),
    **dict.fromkeys(
        (
            "per_device_eval_batch_size",
            "eval_accumulation_steps",
            "eval_do_concat_batches",
            "eval_use_gather_object",
            "prediction_loss_only",
            "include_for_metrics",
            "batch_eval_metrics",
            "bf16_full_eval",
            "fp16_full_eval",
        ),
        _EVAL,
    ),
}


def may_change_on_resume(classes: Iterable[type]) -> dict[str, str]:
    """key -> why it may change on resume: ``LIBRARY_MAY_CHANGE`` and each class's ``MAY_CHANGE_ON_RESUME``."""
    out = dict(LIBRARY_MAY_CHANGE)
    for cls in classes:
        out.update(getattr(cls, "MAY_CHANGE_ON_RESUME", {}))
    return out


def run_keys(classes: Iterable[type]) -> list[str]:
    """Every field of ``classes`` that defines the run (all of them but the ones that may change on resume)."""
    classes = tuple(classes)
    allowed = may_change_on_resume(classes)
    return list(
        dict.fromkeys(f.name for cls in classes for f in dataclasses.fields(cls) if f.name not in allowed)
    )


def recipe_differences(old: dict[str, Any], new: dict[str, Any], classes: Iterable[type]) -> dict[str, list]:
    """key -> [old value, new value] over the keys that define the run."""
    return {
        key: [old.get(key), new.get(key)]
        for key in run_keys(classes)
        if (key in old or key in new) and old.get(key) != new.get(key)
    }


def check_resume(
    output_dir: str, resolved: dict[str, Any], classes: Iterable[type], allow: bool, write: bool = True
) -> dict[str, list]:
    """Raise if the resumed recipe differs from ``output_dir/run_config.yaml`` (unless ``allow``); returns
    the differences. With ``allow`` and ``write`` the old config is kept as
    ``run_config.before_resume.<n>.yaml`` (and ``loss.json`` as ``loss.before_resume.<n>.json``)."""
    path = os.path.join(output_dir, "run_config.yaml")
    if not os.path.isfile(path):
        return {}
    old = load_yaml(path) or {}
    diffs = recipe_differences(old, resolved, classes)
    if not diffs:
        return {}
    listed = "; ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in diffs.items())
    if not allow:
        raise ValueError(
            f"{output_dir}: refusing to resume with a different recipe than the run was started "
            f"with ({path}): {listed}. Use a new output_dir, or pass --allow_recipe_change true to "
            "continue anyway (both configs are then kept)"
        )
    if not write:
        return diffs
    n = 1
    while os.path.exists(os.path.join(output_dir, f"run_config.before_resume.{n}.yaml")):
        n += 1
    os.replace(path, os.path.join(output_dir, f"run_config.before_resume.{n}.yaml"))
    loss = os.path.join(output_dir, "loss.json")
    if os.path.isfile(loss):
        os.replace(loss, os.path.join(output_dir, f"loss.before_resume.{n}.json"))
    return diffs
