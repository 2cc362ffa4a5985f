"""Media budgets of the Qwen2.5-Omni model I/O (issue 14): the per-frame pixel cap defaults to Qwen's 768*28*28
even where the checkpoint allows 12.8 M pixels per frame, and audio is padded to ``audio_max_seconds``, not to
the feature extractor's ``chunk_length`` (300 s in the 7B checkpoint)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from transformers import AutoProcessor

from cavpref.media.decode import DecodedMedia
from cavpref.models.qwen_omni import QWEN_VIDEO_MAX_PIXELS, QwenOmniModelIO
from cavpref.models.tiny import build_tiny_qwen_omni

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def processor_7b_like(tmp_path_factory):
    """The tiny processor with the 7B checkpoint's limits: 12,845,056 pixels per frame, 300 s chunk_length."""
    proc = AutoProcessor.from_pretrained(build_tiny_qwen_omni(tmp_path_factory.mktemp("tiny")))
    proc.video_processor.size = {"shortest_edge": 3136, "longest_edge": 12845056}
    fe = proc.feature_extractor
    fe.chunk_length, fe.n_samples = 300, 300 * fe.sampling_rate
    fe.nb_max_frames = fe.n_samples // fe.hop_length
    return proc


def test_video_pixel_cap_defaults_to_qwen_budget(processor_7b_like):
    assert QWEN_VIDEO_MAX_PIXELS == 602112
    assert QwenOmniModelIO(processor_7b_like).video_max_pixels == 602112
    assert QwenOmniModelIO(processor_7b_like, video_max_pixels=200704).video_max_pixels == 200704
    frames = np.zeros((2, 1080, 1920, 3), dtype=np.uint8)
    enc = QwenOmniModelIO(processor_7b_like).encode_media(
        DecodedMedia(frames=frames, frame_times=None, audio=None, sample_rate=16000, duration=1.0)
    )
    _t, h, w = enc.video["video_grid_thw"][0].tolist()
    assert h * w * 14 * 14 <= 602112 < 1080 * 1920  # patch 14 px: the frame was resized to the budget


def test_audio_is_padded_to_audio_max_seconds_not_chunk_length(processor_7b_like):
    audio = np.zeros(16000 * 5, dtype=np.float32)
    media = DecodedMedia(frames=None, frame_times=None, audio=audio, sample_rate=16000, duration=5.0)
    capped = QwenOmniModelIO(processor_7b_like).encode_media(media)  # default 30 s
    full = QwenOmniModelIO(processor_7b_like, audio_max_seconds=None).encode_media(media)
    hop = processor_7b_like.feature_extractor.hop_length
    assert capped.audio["input_features"].shape[-1] == 30 * 16000 // hop
    assert full.audio["input_features"].shape[-1] == 300 * 16000 // hop
    # the clip's own frames and tokens are the same either way
    assert int(capped.audio["feature_attention_mask"].sum()) == int(
        full.audio["feature_attention_mask"].sum()
    )
    assert capped.expansions == full.expansions
    with pytest.warns(UserWarning, match="cut to 30 s"):
        long = QwenOmniModelIO(processor_7b_like).encode_media(
            DecodedMedia(
                frames=None,
                frame_times=None,
                audio=np.zeros(16000 * 40, dtype=np.float32),
                sample_rate=16000,
                duration=40.0,
            )
        )
    assert long.audio["input_features"].shape[-1] == 30 * 16000 // hop


@pytest.mark.parametrize(
    "name", ["full_cavpref", "lora_cavpref", "lora_cavpref_norobust", "lora_dpo", "lora_sft"]
)
def test_every_7b_recipe_sets_its_media_budget(name):
    text = (ROOT / "recipes/qwen2.5-omni-7b" / f"{name}.yaml").read_text()
    rec = yaml.safe_load(text)
    for key in ("video_max_pixels", "num_frames", "audio_max_seconds", "use_audio_in_video"):
        assert key in rec, f"{name}.yaml: no {key}"
    assert rec["video_max_pixels"] <= QWEN_VIDEO_MAX_PIXELS and rec["audio_max_seconds"] <= 30
    line = next(x for x in text.splitlines() if x.startswith("use_audio_in_video:"))
    assert "#" in line, f"{name}.yaml: use_audio_in_video without its reason"
