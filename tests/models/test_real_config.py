"""The 7B's tokenizer ids and processor, built offline (cavpref.models.real_config), and the tokens per row that
real-size clips become under the 7B recipes' media budgets, against Qwen's formulas worked out by hand here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from cavpref.media.decode import FramePolicy, decode
from cavpref.media.spec import clip, to_json
from cavpref.models.base import Row
from cavpref.models.published import QWEN2_5_OMNI_7B_THINKER as PUB
from cavpref.models.qwen_omni import QwenOmniModelIO
from cavpref.models.real_config import FILLER, build_qwen_omni_processor, real_width_config

ROOT = Path(__file__).resolve().parents[2]
RECIPE = yaml.safe_load((ROOT / "recipes/qwen2.5-omni-7b/lora_cavpref.yaml").read_text())
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The processor written with save_pretrained and read back with AutoProcessor, as a download would be."""
    from transformers import AutoProcessor

    out = tmp_path_factory.mktemp("qwen_omni_7b_processor")
    build_qwen_omni_processor(out)
    return AutoProcessor.from_pretrained(out)


def test_token_ids_are_the_published_ones(saved):
    tok = saved.tokenizer
    ids = tok.convert_tokens_to_ids
    assert (
        len(tok) == 151665 <= PUB["text_config"]["vocab_size"] == 152064
    )  # 399 embedding rows never indexed
    assert ids("<|AUDIO|>") == PUB["audio_token_index"] == saved.audio_token_id == 151646
    assert ids("<|VIDEO|>") == PUB["video_token_index"] == saved.video_token_id == 151656
    assert ids("<|IMAGE|>") == PUB["image_token_index"] == saved.image_token_id == 151655
    assert ids("<|audio_bos|>") == PUB["audio_start_token_id"] == 151647
    assert ids("<|audio_eos|>") == PUB["audio_end_token_id"] == 151648
    assert ids("<|vision_bos|>") == PUB["vision_start_token_id"] == 151652
    assert ids("<|vision_eos|>") == PUB["vision_end_token_id"] == 151653
    assert tok.pad_token_id == PUB["pad_token_id"] == 151643
    assert (ids("<|im_start|>"), tok.eos_token_id, ids("user")) == (151644, 151645, PUB["user_token_id"])
    assert tok.bos_token is None
    # a rendered chat prompt: only trained pieces and real special ids, never a filler piece
    msgs = [
        {
            "role": "user",
            "content": [{"type": "video"}, {"type": "audio"}, {"type": "text", "text": "Is it a cello?"}],
        }
    ]
    text = saved.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    got = tok(text, add_special_tokens=False)["input_ids"]
    assert not [i for i in got if tok.convert_ids_to_tokens(i).startswith(FILLER[:15])]
    assert {151644, 151645, 151646, 151647, 151648, 151652, 151653, 151656, 872} <= set(got)
    assert tok.decode(got) == text


def test_processor_has_the_published_preprocessor_values(saved):
    vp, fe = saved.video_processor, saved.feature_extractor
    assert type(saved).__name__ == "Qwen2_5OmniProcessor"
    assert (vp.size["shortest_edge"], vp.size["longest_edge"]) == (3136, 12845056)
    assert (vp.patch_size, vp.temporal_patch_size, vp.merge_size) == (14, 2, 2)
    assert saved.image_processor.size["longest_edge"] == 12845056
    assert (fe.feature_size, fe.sampling_rate, fe.hop_length, fe.chunk_length) == (128, 16000, 160, 300)


# (height, width) -> the frame size after Qwen's smart_resize (factor 28 = patch 14 x merge 2) under the recipe's
# 602,112 pixels, by hand:
#  360 x 640: round(360/28) = 13, round(640/28) = 23 -> 364 x 644 = 234,416 px <= 602,112: kept.
#  720 x 1280: 26 x 46 blocks = 728 x 1288 = 937,664 px > 602,112, so beta = sqrt(921,600 / 602,112) = 1.2372 and
#  floor(720 / 1.2372 / 28) = 20, floor(1280 / 1.2372 / 28) = 36 -> 560 x 1008 = 564,480 px.
# Video tokens: 8 frames / temporal patch 2 = 4 steps, x (h/28) x (w/28) merged patches each.
# Audio: 10 s at 16 kHz, hop 160 -> 1,000 feature frames; Qwen2.5-Omni's audio encoder length
# (_get_feat_extract_output_lengths): (1000 - 1) // 2 + 1 = 500 after the stride-2 conv, (500 - 2) // 2 + 1 = 250.
CASES = {(360, 640): (364, 644, 4 * 13 * 23), (720, 1280): (560, 1008, 4 * 20 * 36)}


def audio_tokens(feature_frames: int) -> int:
    after_conv = (feature_frames - 1) // 2 + 1
    return (after_conv - 2) // 2 + 1


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    from cavpref.media.write import write_mp4

    root = tmp_path_factory.mktemp("real_size_clips")
    for h, w in CASES:
        img = np.random.default_rng(h).integers(0, 256, (1, h // 8, w // 8, 3), dtype=np.uint8)
        frames = np.repeat(img.repeat(8, axis=1).repeat(8, axis=2), 20, axis=0)  # 10 s at 2 fps
        t = np.arange(10 * 16000) / 16000
        write_mp4(
            root / f"{h}p.mp4", frames, fps=2, audio=(0.3 * np.sin(2 * np.pi * 330 * t)).astype(np.float32)
        )
    return root


@pytest.mark.parametrize("hw", list(CASES))
@pytest.mark.parametrize("interleave", [False, True])
def test_tokens_per_row_match_qwen_formulas_on_real_size_media(saved, clips, hw, interleave):
    assert (RECIPE["video_max_pixels"], RECIPE["num_frames"], RECIPE["audio_max_seconds"]) == (602112, 8, 30)
    (h, w), (rh, rw, n_video) = hw, CASES[hw]
    media = decode(to_json(clip(f"{h}p.mp4")), clips, frames=FramePolicy(num_frames=RECIPE["num_frames"]))
    assert media.frames.shape == (8, h, w, 3) and media.audio.shape == (160000,)
    io = QwenOmniModelIO(
        saved,
        video_max_pixels=RECIPE["video_max_pixels"],
        audio_max_seconds=RECIPE["audio_max_seconds"],
        use_audio_in_video=interleave,
    )
    batch = io.collate([Row("Which instrument is playing?", "a violin", media, "k")])
    ids, m = batch["input_ids"][0], batch["media"]
    assert m["video_grid_thw"].tolist() == [[4, rh // 14, rw // 14]]
    assert int((ids == 151656).sum()) == n_video == (8 // 2) * (rh // 28) * (rw // 28)
    assert int(m["feature_attention_mask"].sum()) == 1000 and audio_tokens(1000) == 250
    assert int((ids == 151646).sum()) == 250
    assert m["input_features"].shape == (
        1,
        128,
        3000,
    )  # padded to the recipe's 30 s, not the checkpoint's 300 s
    assert m["pixel_values_videos"].shape == (4 * (rh // 14) * (rw // 14), 3 * 2 * 14 * 14)
    runs = _runs(ids.tolist(), {151646: "A", 151656: "V", 151647: "<", 151648: ">", 151652: "[", 151653: "]"})
    per_step = n_video // 4
    if interleave:
        # 8 frames over 10 s -> 0.8 fps, 2.5 s per temporal step = 62.5 rope positions (25 per second); the
        # processor cuts both streams into 2 s chunks (50 positions): steps at 0, 62.5, 125, 187.5 fall in chunks
        # 0..3, the 250 audio tokens in chunks 0..4 (50 each), video first within a chunk; chunk 4 has no video,
        # so the audio of chunks 3 and 4 is one run of 100.
        steps = [("V", per_step), ("A", 50)] * 3 + [("V", per_step), ("A", 100)]
        want = ["[", "<", *steps, ">", "]"]
    else:
        want = ["[", ("V", n_video), "]", "<", ("A", 250), ">"]
    assert runs == [x if isinstance(x, tuple) else (x, 1) for x in want]


def _runs(ids: list[int], names: dict[int, str]) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for i in ids:
        if i in names:
            if out and out[-1][0] == names[i] and names[i] in "AV":
                out[-1] = (names[i], out[-1][1] + 1)
            else:
                out.append((names[i], 1))
    return out


def test_without_the_recipe_cap_the_checkpoint_ceiling_applies(saved, clips):
    """The checkpoint's own 12,845,056-pixel ceiling keeps 720p at 728 x 1288 (26 x 46 blocks of 28): 4,784 video
    tokens per row instead of the recipe's 2,880."""
    media = decode(to_json(clip("720p.mp4")), clips, frames=FramePolicy(num_frames=8))
    io = QwenOmniModelIO(saved, video_max_pixels=12845056)
    ids = io.collate([Row("Which instrument is playing?", "a violin", media, "k")])["input_ids"][0]
    assert int((ids == 151656).sum()) == 4 * 26 * 46 == 4784


def test_real_width_config_keeps_every_published_width():
    import torch
    from transformers import Qwen2_5OmniThinkerForConditionalGeneration

    cfg = real_width_config(text_layers=1, vision_depth=2, audio_layers=1)
    for sub in ("text_config", "vision_config", "audio_config"):
        got, want = getattr(cfg, sub).to_dict(), PUB[sub]
        depth = {"num_hidden_layers", "depth", "fullatt_block_indexes", "encoder_layers"}
        assert {k: got[k] for k in want if k not in depth} == {
            k: v for k, v in want.items() if k not in depth
        }
    assert (cfg.text_config.num_hidden_layers, cfg.vision_config.depth, cfg.audio_config.encoder_layers) == (
        1,
        2,
        1,
    )
    assert cfg.vision_config.fullatt_block_indexes == [1]
    with torch.device("meta"):
        model = Qwen2_5OmniThinkerForConditionalGeneration(cfg)
    assert tuple(model.get_input_embeddings().weight.shape) == (152064, 3584)
    assert model.model.visual.merger.mlp[-1].out_features == model.model.audio_tower.proj.out_features == 3584
