"""Refuse a resume whose recipe differs from the run it continues.

A resumed run's ``run_config.yaml`` / ``loss.json`` are rewritten from the new recipe, so a resume with
another loss (cavpref -> dpo), learning rate or data would make the run folder claim that the whole run
was the new recipe. The keys that define *what* is trained — the loss, the optimisation, the data and the
model — must match the ``run_config.yaml`` the run started with; keys that only say *how long* or *how it
is logged / saved* may change (a longer ``max_steps`` is the usual reason to resume). With
``allow_recipe_change: true`` the resume goes ahead and both configs are kept.
"""

from __future__ import annotations

import os
from typing import Any

from cavpref.parsing import load_yaml

# training keys that change what is learned (besides every loss key, every data key and the model section)
OPTIMISATION_KEYS = (
    "learning_rate",
    "lr_scheduler_type",
    "lr_scheduler_kwargs",
    "warmup_ratio",
    "warmup_steps",
    "weight_decay",
    "optim",
    "optim_args",
    "adam_beta1",
    "adam_beta2",
    "adam_epsilon",
    "max_grad_norm",
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "seed",
    "data_seed",
    "beta",
    "loss_type",
    "max_length",
    "max_prompt_length",
    "max_completion_length",
    "truncation_mode",
    "label_smoothing",
    "precompute_ref_log_probs",
    "bf16",
    "fp16",
)
LOSS_KEYS = (
    "method",
    "robust",
    "lambda_y",
    "lambda_v",
    "lambda_a",
    "beta_y",
    "beta_v",
    "beta_a",
    "beta_scale",
    "beta_offset",
    "anchor_response",
    "switch_variant",
    "switch_table",
    "sampler",
    "reference",
    "media_root",
    "skip_bad_rows",
)


def _flat(config: dict[str, Any]) -> dict[str, Any]:
    """A run config as today's flat namespace (``run_config.yaml`` of older runs nests the model keys)."""
    nested = config.get("model")
    if not isinstance(nested, dict):
        return config
    renamed = {"max_length": "model_max_length", "adapter": "model_io"}
    return {
        **{k: v for k, v in config.items() if k != "model"},
        **{renamed.get(k, k): v for k, v in nested.items()},
    }


def recipe_differences(old: dict[str, Any], new: dict[str, Any], defining_keys) -> dict[str, list]:
    """key -> [old value, new value] over the keys that define the run (loss, optimisation, and
    ``defining_keys``: every data and model key)."""
    old, new = _flat(old), _flat(new)
    diffs = {}
    for key in dict.fromkeys((*LOSS_KEYS, *OPTIMISATION_KEYS, *defining_keys)):
        if key in old or key in new:
            if old.get(key) != new.get(key):
                diffs[key] = [old.get(key), new.get(key)]
    return diffs


def check_resume(
    output_dir: str, resolved: dict[str, Any], defining_keys, allow: bool, write: bool = True
) -> dict[str, list]:
    """Raise if the resumed recipe differs from ``output_dir/run_config.yaml`` (unless ``allow``); returns
    the differences. With ``allow`` and ``write`` the old config is kept as
    ``run_config.before_resume.<n>.yaml`` (and ``loss.json`` as ``loss.before_resume.<n>.json``)."""
    path = os.path.join(output_dir, "run_config.yaml")
    if not os.path.isfile(path):
        return {}
    old = load_yaml(path) or {}
    diffs = recipe_differences(old, resolved, defining_keys)
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
