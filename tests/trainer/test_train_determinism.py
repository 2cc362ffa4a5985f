"""Same recipe, same bits: a short ``cavpref train`` run gives bit-identical weights whatever the shell's
``OMP_NUM_THREADS``, with a competing CPU-bound process running (the recipe's ``num_threads`` fixes torch's
thread count; docs/training.md, "Same command, same numbers"), with a data-loader worker collating, and on a
CPU with or without AVX-512 (the recipe's ``cpu_isa``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from safetensors.torch import load_file

from tests.helpers.launch import ROOT, recipe


def _recipe(fx, path: Path) -> Path:
    return recipe(
        fx,
        path,
        max_steps=3,
        optim="adamw_torch",
        learning_rate=1e-3,
        freeze_vision=False,
        freeze_audio=False,
        train_projectors=True,
        num_threads=1,  # the determinism keys under test (the tiny and quickstart recipes set them)
        cpu_isa="avx2",
    )


def _differing(a: dict, b: dict) -> list[str]:
    assert a.keys() == b.keys()
    return [k for k in a if not (a[k] == b[k]).all()]


def train(rec: Path, out: Path, omp: str, compete: bool, *extra: str, env: dict | None = None) -> dict:
    env = {k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None}  # None: unset
    env = {
        **env,
        "OMP_NUM_THREADS": omp,
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),  # tests.helpers
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
    rec = _recipe(fx, tmp_path / "r.yaml")
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
        differing = _differing(quiet, other)
        assert not differing, f"{name}: {len(differing)} tensors differ, e.g. {differing[:3]}"


# what a CPU without AVX-512 runs: each library's AVX2 code (set in the shell, before Python starts); and a
# shell that sets none of them (the suite's conftest sets them for its own process)
AVX2_MACHINE = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2"}
CLEAN_SHELL = dict.fromkeys(AVX2_MACHINE)


def test_weights_bit_identical_with_and_without_avx512(fx, tmp_path):
    """``cpu_isa: avx2`` trains on this machine the bits an AVX2-only machine trains; with ``native`` on a machine
    with AVX-512 they differ (the fault the key is for)."""
    rec = _recipe(fx, tmp_path / "r.yaml")
    here = train(rec, tmp_path / "here", "1", False, env=CLEAN_SHELL)
    used = json.loads((tmp_path / "here" / "versions.json").read_text())["torch_cpu_capability"]
    assert used == "AVX2"
    avx2 = train(rec, tmp_path / "avx2", "1", False, env=AVX2_MACHINE)
    assert not _differing(here, avx2)
    native = train(rec, tmp_path / "native", "1", False, "--cpu_isa", "native", env=CLEAN_SHELL)
    if json.loads((tmp_path / "native" / "versions.json").read_text())["torch_cpu_capability"] == "AVX512":
        assert len(_differing(here, native)) > len(here) // 2
