"""Same recipe, same bits: a short ``cavpref train`` run gives bit-identical weights whatever the shell's
``OMP_NUM_THREADS``, with a competing CPU-bound process running (the recipe's ``num_threads`` fixes torch's
thread count; docs/training.md, "Same command, same numbers") and with a data-loader worker collating."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import test_trainer_fixtures as F
from safetensors.torch import load_file
from test_trainer_launch import ROOT, recipe


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    return F.shared(tmp_path_factory)


def train(rec: Path, out: Path, omp: str, compete: bool, *extra: str) -> dict:
    env = {
        **os.environ,
        "OMP_NUM_THREADS": omp,
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]),
    }
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if compete else None
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "cavpref.apps.cli", "train", str(rec), "--output_dir", str(out), *extra],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    finally:
        if burner is not None:
            burner.kill()
            burner.wait()
    assert proc.returncode == 0, proc.stderr[-3000:]
    return load_file(str(out / "model.safetensors"))


def test_weights_bit_identical_across_thread_env_and_load(fx, tmp_path):
    rec = recipe(
        fx,
        tmp_path / "r.yaml",
        max_steps=3,
        optim="adamw_torch",
        learning_rate=1e-3,
        model={
            "model_name_or_path": str(fx["model"]),
            "dtype": "float32",
            "lora_r": 0,
            "num_frames": 2,
            "freeze_vision": False,
            "freeze_audio": False,
            "train_projectors": True,
        },
    )
    quiet = train(rec, tmp_path / "quiet", "1", compete=False)
    loaded = train(rec, tmp_path / "loaded", "2", compete=True)
    # the quickstart's setting: one persistent data-loader worker collates while the step runs
    worker = train(
        rec,
        tmp_path / "worker",
        "1",
        True,
        "--dataloader_num_workers",
        "1",
        "--dataloader_persistent_workers",
        "true",
    )
    for name, other in (("loaded", loaded), ("worker", worker)):
        assert quiet.keys() == other.keys()
        differing = [k for k in quiet if not (quiet[k] == other[k]).all()]
        assert not differing, f"{name}: {len(differing)} tensors differ, e.g. {differing[:3]}"
