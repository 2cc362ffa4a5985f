"""Hostile-input pass (issue 18, #3): a clip whose file has no audio stream. Items that expect the audio
(CLEAN / MCIT / ICIT …) are evaluated and trained without it only with a count per task — or refused with
``missing_stream: error``. Real mp4 files, the real runner, a real tiny training run."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import yaml

from cavpref.data import BenchmarkItem
from cavpref.media.spec import MediaError, clip, mute, to_json
from cavpref.media.write import write_mp4
from tests.helpers import trainer_fixtures as F


def silent_copy(src, dst):
    """``src`` clip folder copied to ``dst`` with a.mp4 rewritten as video only (no audio stream)."""
    shutil.copytree(src, dst)
    frames = np.repeat(np.random.default_rng(0).integers(0, 256, (1, 56, 56, 3), dtype=np.uint8), 4, axis=0)
    (dst / "a.mp4").unlink()
    write_mp4(dst / "a.mp4", frames, fps=4)
    return dst


@pytest.fixture(scope="module")
def media(tmp_path_factory):
    root = tmp_path_factory.mktemp("media")
    F.write_clips(root / "clips")
    return silent_copy(root / "clips", root / "silent")


def test_eval_counts_items_evaluated_with_a_missing_stream_or_refuses_them(media, tmp_path):
    from cavpref.eval.backends import ModelIOBackend
    from cavpref.eval.pipeline import EvalArgs, evaluate
    from cavpref.models import build_tiny_qwen_omni, load_model_io

    four = {"A": "cat", "B": "dog", "C": "cow", "D": "None of the above"}
    items = [
        BenchmarkItem(
            "c1",
            "CLEAN",
            "avqa",
            "Existential",
            "Which one?",
            four,
            "A",
            "instruction",
            0,
            to_json(clip("a.mp4")),
            "D",
        ),  # expects audio: the file has none
        BenchmarkItem(
            "c2",
            "MCIT",
            "avqa",
            "Existential",
            "Which?",
            four,
            "D",
            "instruction",
            0,
            to_json(clip("a.mp4")),
            "D",
        ),  # the same
        BenchmarkItem(
            "c3",
            "MCIT",
            "avqa",
            "Existential",
            "Which?",
            four,
            "D",
            "instruction",
            0,
            to_json(clip("b.mp4")),
            "D",
        ),  # has its audio
        BenchmarkItem(
            "c4",
            "MAT",
            "music_avqa",
            "Count",
            "Which?",
            {"A": "x", "B": "y"},
            None,
            "base",
            0,
            mute(clip("a.mp4")),
        ),
    ]  # muted on purpose: nothing missing
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(i.to_row()) + "\n" for i in items))
    backend = ModelIOBackend(
        load_model_io(str(build_tiny_qwen_omni(tmp_path / "tiny"))), generation={"max_new_tokens": 2}
    )
    args = dict(
        data=str(data),
        no_judge=True,
        num_frames=2,
        media_root=str(media),
        tasks=["CLEAN", "MCIT", "MAT"],
    )
    res = evaluate(
        EvalArgs(output=str(tmp_path / "run"), **args), {"vanilla": True}, backend=backend, rank=0, world=1
    )
    assert res["missing_streams"] == {"CLEAN": {"audio": 1}, "MCIT": {"audio": 1}}
    assert (tmp_path / "run" / "results.json").read_text().count("missing_streams") >= 1
    with pytest.raises(MediaError, match=r"c1.*no audio stream in a\.mp4"):
        evaluate(
            EvalArgs(output=str(tmp_path / "strict"), missing_stream="error", **args),
            {"vanilla": True},
            backend=backend,
            rank=0,
            world=1,
        )


def test_training_counts_rows_trained_with_a_missing_stream_or_refuses_them(fx, tmp_path):
    from cavpref.collator import BadRowError
    from cavpref.train import main

    silent = silent_copy(fx["media"], tmp_path / "silent")
    cfg = {
        "method": "cavpref",
        "learning_rate": 0.05,
        "optim": "sgd",
        "train_dataset": str(fx["prefs"]),
        "media_root": str(silent),
        "per_device_train_batch_size": 16,
        "max_steps": 1,
        "save_strategy": "no",
        "seed": 0,
        "bf16": False,
        "use_cpu": True,
        "activation_checkpointing": False,
        "report_to": "none",
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
        "save_merged": False,
        "logging_steps": 1,
        "skip_bad_rows": True,  # the swapped-audio rows of a.mp4 cannot decode at all: skipped, counted
        "model_name_or_path": str(fx["model"]),
        "dtype": "float32",
        "lora_r": 0,
        "num_frames": 2,
    }
    rec = tmp_path / "r.yaml"
    rec.write_text(yaml.safe_dump(cfg))
    assert main([str(rec), "--output_dir", str(tmp_path / "run")]) == 0
    counts = json.loads((tmp_path / "run" / "missing_streams.json").read_text())
    assert counts["count"] >= 1 and all(set(v) <= {"audio", "video"} for v in counts["per_task"].values())
    assert any("audio" in v for v in counts["per_task"].values())
    assert main([str(rec), "--output_dir", str(tmp_path / "strict"), "--missing_stream", "error"]) == 0
    skipped = json.loads((tmp_path / "strict" / "skipped_rows.json").read_text())["rows"]
    refused = [r for r in skipped if "missing_stream: error" in r["reason"]]
    assert refused and "no audio stream" in refused[0]["reason"] and "a.mp4" in refused[0]["reason"]
    assert json.loads((tmp_path / "strict" / "missing_streams.json").read_text())["count"] == 0
    cfg["skip_bad_rows"] = False
    rec.write_text(yaml.safe_dump(cfg))
    with pytest.raises(BadRowError):
        main([str(rec), "--output_dir", str(tmp_path / "strict2"), "--missing_stream", "error", "--debug"])
