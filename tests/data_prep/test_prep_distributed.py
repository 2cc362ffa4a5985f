"""`accelerate launch` prep: 2 CPU processes (one shard each: reading, generation, CLAP / CLIP scoring, then
the merge) give the one-process build byte for byte."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from cavpref.data_prep.build import PrepConfig, build

pytestmark = pytest.mark.usefixtures("one_thread")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    from cavpref.data_prep.scoring.tiny import save_tiny_clap, save_tiny_clip
    from cavpref.data_prep.synthetic import WorldConfig, generate_world

    root = tmp_path_factory.mktemp("dist")
    world = root / "w"
    generate_world(
        WorldConfig(
            out=str(world),
            seed=5,
            num_clips=3,
            workers=1,
            width=64,
            height=64,
            fps=4,
            duration=2.0,
            questions_per_clip=3,
        )
    )
    clap, clip = save_tiny_clap(root / "clap"), save_tiny_clip(root / "clip")
    scoring = root / "scoring.yaml"
    # batch_size 1: an embedding then does not depend on which other streams share its batch (a shard's
    # batches differ from the one-process run's; batched float sums agree to ~1e-6, not bit for bit)
    scoring.write_text(
        json.dumps(
            {
                "clap_model": str(clap),
                "clip_model": str(clip),
                "num_frames": 2,
                "batch_size": 1,
                "progress": False,
                "vocabulary": ["piano", "dog", "car", "rain"],
            }
        )
    )
    keys = {
        "world": str(world),
        "tasks": ["MVIT", "MAT", "CAT", "CLEAN"],
        "formats": ["jsonl"],
        "score": True,
        "scoring_config": str(scoring),
        "progress": False,
        "seed": 2,
        "split_seed": 2,
        "test_fraction": 0.34,
    }
    return root, keys


def _files(out):
    return sorted(
        p.relative_to(out)
        for p in out.rglob("*")
        if "shards" not in p.parts
        and (p.suffix in (".jsonl", ".parquet") or p.name in ("stats.json", "lookup_tables.json"))
    )


def test_two_processes_equal_one_byte_for_byte(inputs):
    root, keys = inputs
    single = root / "single"
    build(PrepConfig(output_dir=str(single), **keys))
    yaml_path = root / "prep.yaml"
    yaml_path.write_text(json.dumps({**keys, "output_dir": str(root / "two")}))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    with socket.socket() as sock:  # a port the OS says is free
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    # accelerate starts one process for --cpu unless MPI is set up: the torchrun launcher of this config,
    # with no GPU visible, gives 2 CPU processes over gloo (see the config's comment)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "accelerate.commands.launch",
            "--config_file",
            str(ROOT / "recipes/accelerate/cpu_2proc.yaml"),
            "--main_process_port",
            port,
            "-m",
            "cavpref.data_prep.cli",
            str(yaml_path),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    two = root / "two"
    assert sorted(p.name for p in (two / "shards").iterdir()) == ["shard-0-of-2", "shard-1-of-2"]
    shard_rows = [
        sum(
            len(f.read_text().splitlines())
            for f in (two / "shards" / s / "jsonl" / "preferences").glob("*.jsonl")
        )
        for s in ("shard-0-of-2", "shard-1-of-2")
    ]
    assert all(shard_rows)  # each process built something
    files = _files(single)
    assert len(files) > 6 and files == _files(two)
    for f in files:
        assert (two / f).read_bytes() == (single / f).read_bytes(), f
    prefs = [
        json.loads(line)
        for f in files
        if f.suffix == ".jsonl" and "preferences" in str(f)
        for line in (single / f).read_text().splitlines()
    ]
    assert prefs and all(isinstance(p["clap_delta"], float) for p in prefs)  # scored in each process
    assert "merged" in proc.stdout or "wrote" in proc.stdout
