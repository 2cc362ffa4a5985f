"""The ``cavpref train`` recipes the quickstart writes: one per training stage, saved next to the checkpoints
(``<out>/recipes/*.yaml``), so the quickstart trains exactly as a user running ``cavpref train`` would.

β: with ``calibrate_beta`` (the default) the preference data are scored by tiny CLAP / CLIP checkpoints trained
on the world's train clips, and the recipes of CAVPref and CAVPref w/o Robustness leave β_y / β_V / β_A unset,
so the trainer calibrates them (β = 0.9·ΔS_norm + 0.1, the paper's rule); SFT, DPO and "CAVPref (fixed β)"
keep the fixed ``QuickstartConfig.beta``, so the fixed-β row shows what calibration changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from cavpref.apps.quickstart.config import CALIBRATED, METHOD_KEYS, TRAIN_METHOD, QuickstartConfig
from cavpref.apps.quickstart.stages import Stage


def recipe(
    cfg: QuickstartConfig,
    *,
    method: str,
    model: Path,
    train: Path,
    world: Path,
    out: Path,
    steps: int,
    lr: float,
    tasks: list[str],
    seed: int | None = None,
    encoders: bool = False,
    **overrides: Any,
) -> dict:
    """The ``cavpref train`` recipe of one stage on the dataset saved at ``train`` (``overrides``: any other
    recipe key, e.g. ``lambda_a``).

    ``encoders=True`` trains the vision and audio towers too. The model I/O wrappers freeze them by default (right for a
    pretrained AVLLM, and kept for the Table-5 methods, as in the paper), but the starting model is random:
    with frozen random towers it never learns to see or hear (measured: caption accuracy 0 %, identical
    accuracy with either stream removed) and falls back on the questions' text priors."""
    seed = cfg.seed if seed is None else seed
    beta = (
        {"beta": cfg.beta}  # CAVPref's β_y / β_V / β_A unset: calibrated per sample from the scored deltas
        if cfg.calibrate_beta and method in CALIBRATED
        else {"beta": cfg.beta, "beta_y": cfg.beta, "beta_v": cfg.beta, "beta_a": cfg.beta}
    )
    return {
        "method": TRAIN_METHOD.get(method, method),
        **beta,
        "train_dataset": str(train),
        "train_tasks": tasks,
        "media_root": str(world),
        "output_dir": str(out),
        "learning_rate": lr,
        "max_steps": steps,
        "lr_scheduler_type": "cosine",
        "warmup_steps": max(1, steps // 20),
        "per_device_train_batch_size": cfg.batch_size,
        "seed": seed,
        "data_seed": seed,
        "num_threads": cfg.num_threads,
        "cpu_isa": cfg.cpu_isa,
        "logging_steps": max(1, steps // 20),
        "save_strategy": "steps",
        "save_steps": max(1, steps // 2),
        "save_total_limit": 1,
        "use_cpu": True,
        "bf16": False,
        "activation_checkpointing": False,
        "dataloader_num_workers": cfg.dataloader_workers,
        # persistent: each worker keeps its decoded-media cache across epochs
        "dataloader_persistent_workers": cfg.dataloader_workers > 0,
        "report_to": "none",
        "media_cache_size": 2048,  # a decoded 4-s world clip is 0.33 MB; clips recur across tasks and epochs
        "feature_cache_size": 2048,  # ... and so do their model inputs (~0.55 MB each): featurised once (exact)
        # model keys (AVModelArguments): flat, like every recipe
        "model_name_or_path": str(model),
        "dtype": "float32",
        "lora_r": 0,
        "shared_prefix": True,  # each (prompt, media) prefix scored once: exact, and ~2x fewer LM tokens for DPO
        "num_frames": cfg.num_frames,
        "frame_height": cfg.frame_size,
        "frame_width": cfg.frame_size,
        "audio_max_seconds": cfg.audio_seconds,
        "freeze_vision": not encoders,
        "freeze_audio": not encoders,
        "train_projectors": encoders,
        **METHOD_KEYS.get(method, {}),
        **overrides,
    }


def write_recipe(stage: Stage, recipe: dict) -> Path:
    """Save a stage's recipe as ``<root>/recipes/<stage name>.yaml`` (``/`` in the name becomes ``__``)."""
    path = stage.root / "recipes" / f"{stage.name.replace('/', '__')}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    return path
