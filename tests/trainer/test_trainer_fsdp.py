"""FSDP2 with real processes: 2 CPU processes (gloo, ``accelerate launch`` with accelerate's FSDP plugin,
``fsdp_version: 2``, the Qwen2.5-Omni layer classes wrapped as in recipes/accelerate/fsdp.yaml) with batch B
each give the same losses and, after SGD steps, the same weights (so the same gradients) as 1 process with
batch 2B. Before ``cavpref.models.step.ModelIOStep`` the first step failed (encoders and embedding ran outside
the FSDP root's forward). Modes that cannot work under FSDP are refused before the first step."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from cavpref.train import main
from tests.helpers.launch import ROOT, env, losses, max_weight_diff, recipe


def launch_fsdp(rec, out, *extra):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    cmd = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",
        str(ROOT / "recipes/accelerate/fsdp_cpu_2proc.yaml"),
        "--main_process_port",
        port,
        str(ROOT / "tests/helpers/fsdp_cpu_train.py"),
        str(rec),
        "--output_dir",
        str(out),
        "--per_device_train_batch_size",
        "2",
        *extra,
    ]
    return subprocess.run(cmd, cwd=ROOT, env=env(), capture_output=True, text=True, timeout=400, check=False)


def test_fsdp2_two_processes_match_one_process(fx, tmp_path):
    """Also fails without the ModelIOStep root: RuntimeError "got mixed torch.Tensor and DTensor"."""
    # zero_dummy: both encoders run on every rank every step (FSDP's all-gathers must line up); the fixture's
    # batches mix rows without audio / video, so the dummy path and the encoder-reuse path both run.
    rec = recipe(fx, tmp_path / "r.yaml", missing_modality="zero_dummy")
    one, two = tmp_path / "one", tmp_path / "two"
    assert main([str(rec), "--output_dir", str(one), "--per_device_train_batch_size", "4"]) == 0
    proc = launch_fsdp(rec, two)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.count("distributed_type=FSDP fsdp_version=2 root=") == 2  # both ranks really ran FSDP2
    assert "root=ModelIOStep" in proc.stdout
    l1, l2 = losses(one), losses(two)
    assert len(l1) == len(l2) == 2
    assert l2 == pytest.approx(l1, abs=1e-5)
    assert max_weight_diff(one, two) < 1e-6  # SGD: equal weights after the steps <=> equal gradients
    assert max_weight_diff(one, fx["model"]) > 1e-4  # and the steps did move them


def test_fsdp_refuses_drop_missing_modality(fx, tmp_path):
    rec = recipe(fx, tmp_path / "r.yaml", missing_modality="drop", max_steps=1)
    proc = launch_fsdp(rec, tmp_path / "out")
    assert proc.returncode != 0
    assert "missing_modality='drop' under FSDP" in proc.stderr
