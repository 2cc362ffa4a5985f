"""One CAVPref step through the real trainer path on a real-width, reduced-depth Qwen2.5-Omni thinker (slow).

Every width of the published 7B thinker config (``cavpref.models.real_config``), only the depths reduced: the
language model (hidden 3584, intermediate 18944, 28 query / 4 key-value heads, head_dim 128, mrope_section
[16, 24, 24]) with 1 decoder layer and the real 152,064 x 3,584 embedding and untied output head; the vision
encoder (hidden 1280, 16 heads, intermediate 3420, out_hidden_size 3584) and the audio encoder (d_model 1280,
20 heads, ffn 5120, output_dim 3584) with one block each. The tokenizer has the 7B's special-token ids (its BPE
merges are local, so text token counts are not the real ones). Not in the default suite (``-m "not slow"`` in
pyproject); run it with

    OMP_NUM_THREADS=1 python -m pytest -q -m slow tests/models/test_real_width.py
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cavpref.models.real_config import build_real_width_qwen_omni
from cavpref.train import main as train_main
from tests.helpers.trainer_fixtures import build_all, examples

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def test_one_cavpref_step_real_width(tmp_path):
    inputs = build_all(tmp_path / "inputs")
    model = build_real_width_qwen_omni(
        tmp_path / "real_width",
        extra_corpus=[e.prompt + " " + e.chosen + " " + e.rejected for e in examples(1)],
    )
    cfg = json.loads((model / "config.json").read_text())
    text, vision, audio = cfg["text_config"], cfg["vision_config"], cfg["audio_config"]
    assert (text["hidden_size"], text["intermediate_size"], text["num_key_value_heads"]) == (3584, 18944, 4)
    assert (text["vocab_size"], text["num_hidden_layers"], cfg["video_token_index"]) == (152064, 1, 151656)
    assert (vision["hidden_size"], vision["num_heads"], vision["intermediate_size"]) == (1280, 16, 3420)
    assert (vision["out_hidden_size"], vision["depth"], audio["d_model"]) == (3584, 1, 1280)
    assert (audio["encoder_attention_heads"], audio["encoder_ffn_dim"], audio["output_dim"]) == (
        20,
        5120,
        3584,
    )
    from transformers import AutoProcessor

    proc = AutoProcessor.from_pretrained(model)
    assert (proc.video_token_id, proc.audio_token_id, len(proc.tokenizer)) == (151656, 151646, 151665)
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
