"""Real processes for the training tests (no tests here): a two-step tiny recipe, ``accelerate launch`` on a free
port, the losses of a run and the largest weight difference between two runs."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import yaml
from safetensors.torch import load_file

ROOT = Path(__file__).resolve().parents[2]


def recipe(fx, path: Path, **overrides) -> Path:
    cfg = {
        "method": "cavpref",
        "robust": "paper",
        "learning_rate": 0.05,
        "optim": "sgd",
        "lr_scheduler_type": "constant",
        "train_dataset": str(fx["prefs"]),
        "media_root": str(fx["media"]),
        "per_device_train_batch_size": 4,
        "max_steps": 2,
        "logging_steps": 1,
        "save_strategy": "no",
        "seed": 0,
        "bf16": False,
        "use_cpu": True,
        "activation_checkpointing": False,
        "report_to": "none",
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
        "model_name_or_path": str(fx["model"]),
        "dtype": "float32",
        "lora_r": 0,
        "num_frames": 2,
    }
    cfg.update(overrides)
    path.write_text(yaml.safe_dump(cfg))
    return path


def losses(run: Path) -> list[float]:
    return [r["loss"] for r in map(json.loads, (run / "logs.jsonl").read_text().splitlines()) if "loss" in r]


def max_weight_diff(a: Path, b: Path) -> float:
    wa, wb = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    assert wa.keys() == wb.keys()
    return max(float((wa[k] - wb[k]).abs().max()) for k in wa)


def env():
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),  # tests.helpers
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }


def accelerate_launch(config: str, script: str, *args, timeout: int = 300) -> subprocess.CompletedProcess:
    """``accelerate launch --config_file ROOT/config ROOT/script args...`` on a port the OS says is free."""
    with socket.socket() as sock:  # a port the OS says is free, not a guess that may collide
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        str(ROOT / config),
        "--main_process_port",
        port,
        str(ROOT / script),
        *map(str, args),
    ]
    return subprocess.run(
        cmd, cwd=ROOT, env=env(), capture_output=True, text=True, timeout=timeout, check=False
    )
