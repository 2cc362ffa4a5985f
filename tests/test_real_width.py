"""One CAVPref step through the real trainer path on a real-width, reduced-depth Qwen2.5-Omni thinker (slow).

Language model at the 7B's width (hidden 3584, intermediate 18944, 28 query / 4 key-value heads, head_dim 128,
mrope_section [16, 24, 24]) with 1 decoder layer; vision encoder 1280 wide and audio encoder 1280 wide with one
block each. Offline: the tokenizer is the tiny one (its vocabulary and special-token ids are NOT the 7B's), so
the embedding matrix is small. Not in the default suite (``-m "not slow"`` in pyproject); run it with

    OMP_NUM_THREADS=1 python -m pytest -q -m slow tests/test_real_width.py
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_trainer_fixtures import build_all, examples

from cavpref.models.tiny import build_tiny_qwen_omni
from cavpref.train import main as train_main

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]


def test_one_cavpref_step_real_width(tmp_path):
    inputs = build_all(tmp_path / "inputs")
    model = build_tiny_qwen_omni(
        tmp_path / "real_width",
        hidden_size=3584,
        intermediate_size=18944,
        num_hidden_layers=1,
        num_attention_heads=28,
        num_key_value_heads=4,
        vision_hidden_size=1280,
        audio_d_model=1280,
        extra_corpus=[e.prompt + " " + e.chosen + " " + e.rejected for e in examples(1)],
    )
    cfg = json.loads((model / "config.json").read_text())
    assert cfg["text_config"]["hidden_size"] == 3584 and cfg["text_config"]["num_key_value_heads"] == 4
    out = tmp_path / "run"
    rc = train_main(
        [
            str(ROOT / "recipes/tiny/cavpref.yaml"),
            "--model_name_or_path",
            str(model),
            "--train_dataset",
            str(inputs["prefs"]),
            "--media_root",
            str(inputs["media"]),
            "--output_dir",
            str(out),
            "--max_steps",
            "1",
            "--per_device_train_batch_size",
            "2",
            "--save_strategy",
            "no",
            "--lora_r",
            "16",
        ]
    )
    assert rc == 0
    logs = [json.loads(line) for line in (out / "logs.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in logs if "loss" in r]
    assert losses and all(abs(v) < 1e3 for v in losses)
