"""A tiny one-step recipe that saves a checkpoint at every step, for the resume and hostile-training tests
(no tests here)."""

from __future__ import annotations

from pathlib import Path

import yaml


def checkpointed_recipe(fx, path: Path, **overrides) -> Path:
    cfg = {
        "method": "cavpref",
        "learning_rate": 0.05,
        "optim": "sgd",
        "lr_scheduler_type": "constant",
        "train_dataset": str(fx["prefs"]),
        "media_root": str(fx["media"]),
        "per_device_train_batch_size": 4,
        "max_steps": 1,
        "logging_steps": 1,
        "save_strategy": "steps",
        "save_steps": 1,
        "seed": 0,
        "bf16": False,
        "use_cpu": True,
        "activation_checkpointing": False,
        "report_to": "none",
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
        "save_merged": False,
        "model_name_or_path": str(fx["model"]),
        "dtype": "float32",
        "lora_r": 0,
        "num_frames": 2,
    }
    cfg.update(overrides)
    path.write_text(yaml.safe_dump(cfg))
    return path
