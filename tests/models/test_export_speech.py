"""The exported full Qwen2.5-Omni answers a video prompt in text and speech through transformers' own
``Qwen2_5OmniForConditionalGeneration.generate`` (issue 57, item 4).

transformers 5.25's generate hands every input without a ``thinker_`` prefix to the talker's ``generate`` too,
which rejects the vision encoder's inputs; ``cavpref.models.export.speech_generate_inputs`` (and the line the
exported card writes) routes them to the thinker. The video is a real mp4 written and decoded by cavpref, asked
about with the chat template; the model is a tiny full Omni (``build_tiny_qwen_omni_full``) with a fine-tuned
thinker exported into it."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from cavpref.media.decode import FramePolicy, decode
from cavpref.media.spec import clip
from cavpref.media.write import write_mp4
from cavpref.models.export import (
    GENERATE_INPUTS_LINE,
    ExportModelArgs,
    export_full_model,
    speech_generate_inputs,
)

pytestmark = pytest.mark.usefixtures("one_thread")

CODES = (
    8  # talker_max_new_tokens: the tiny codec vocabulary (64) holds none of generate's eos ids (8292, 8294)
)
SIDE = 56  # 56x56 frames: 4 merged video tokens per 2 frames


def write_clip(path, shift: int) -> None:
    """2 s at 2 fps: a bright square moving right over a dark frame (``shift`` moves its row), a 330 Hz tone."""
    frames = np.full((4, SIDE, SIDE, 3), 20, np.uint8)
    for i in range(4):
        frames[i, 8 + shift : 24 + shift, 4 + 10 * i : 20 + 10 * i] = (240, 200, 40)
    t = np.arange(32000) / 16000
    write_mp4(path, frames, 2.0, (0.3 * np.sin(2 * np.pi * 330 * t)).astype(np.float32))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from transformers import AutoProcessor
    from transformers import Qwen2_5OmniThinkerForConditionalGeneration as Thinker

    from cavpref.models.tiny import build_tiny_qwen_omni, build_tiny_qwen_omni_full

    root = tmp_path_factory.mktemp("export_speech")
    base = build_tiny_qwen_omni_full(root / "base", thinker=build_tiny_qwen_omni(root / "thinker"))
    tuned = Thinker.from_pretrained(root / "thinker")
    torch.manual_seed(1)
    with torch.no_grad():
        for p in tuned.parameters():
            p.add_(0.01 * torch.randn_like(p))
    tuned.save_pretrained(root / "tuned")
    AutoProcessor.from_pretrained(root / "thinker").save_pretrained(root / "tuned")
    out = export_full_model(
        ExportModelArgs(run=str(root / "tuned"), base_model=str(base), output_dir=str(root / "out"))
    )
    for shift in (0, 24):
        write_clip(root / f"clip{shift}.mp4", shift)
    return {"root": root, "out": out, "tuned": root / "tuned"}


def prompt_inputs(processor, root, name: str):
    """The processor's inputs for a question about the clip ``name`` (its frames and its sound)."""
    media = decode(clip(name), root, frames=FramePolicy(num_frames=4, size=(SIDE, SIDE)))
    content = [
        {"type": "video"},
        {"type": "audio"},
        {"type": "text", "text": "What moves, and what is heard?"},
    ]
    text = processor.apply_chat_template(
        [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False
    )
    pixels = {"shortest_edge": SIDE * SIDE, "longest_edge": SIDE * SIDE}
    return processor(
        text=[text],
        videos=[media.frames],
        audio=[media.audio],
        return_tensors="pt",
        videos_kwargs={"size": pixels, "fps": 2.0, "do_sample_frames": False},
    )


def speak(model, inputs, seed: int = 0):
    torch.manual_seed(seed)  # token2wav starts its diffusion from noise
    return model.generate(
        **speech_generate_inputs(inputs),
        thinker_max_new_tokens=4,
        thinker_do_sample=False,
        talker_max_new_tokens=CODES,
        talker_do_sample=False,
    )


def test_the_exported_model_answers_a_video_prompt_in_text_and_speech(exported):
    from transformers import AutoProcessor, Qwen2_5OmniForConditionalGeneration
    from transformers import Qwen2_5OmniThinkerForConditionalGeneration as Thinker

    model = Qwen2_5OmniForConditionalGeneration.from_pretrained(exported["out"])
    processor = AutoProcessor.from_pretrained(exported["out"])
    inputs = prompt_inputs(processor, exported["root"], "clip0.mp4")
    assert inputs["pixel_values_videos"].shape[0] > 0 and inputs["video_grid_thw"].tolist() == [[2, 4, 4]]

    text, wav = speak(model, inputs)
    trained = Thinker.from_pretrained(exported["tuned"])
    assert torch.equal(text, trained.generate(**inputs, max_new_tokens=4, do_sample=False))  # saw the video

    # the waveform is token2wav's: CODES talker codes, each `repeats` mel frames, each `hop` samples
    t2w = model.config.token2wav_config
    hop = math.prod(t2w.bigvgan_config.upsample_rates)
    assert wav.ndim == 1 and wav.numel() == CODES * t2w.dit_config.repeats * hop
    assert torch.isfinite(wav).all()
    assert wav.abs().max() > 0.01 and wav.pow(2).mean().sqrt() > 1e-3  # audible, not silence (was 6e-8)
    assert torch.equal(speak(model, inputs)[1], wav)  # the same prompt and seed speak the same

    # the speech depends on the video: another clip (the square on another row, the same sound), same seed
    other = prompt_inputs(processor, exported["root"], "clip24.mp4")
    assert not torch.equal(other["pixel_values_videos"], inputs["pixel_values_videos"])
    assert not torch.equal(speak(model, other)[1], wav)

    # the exported card tells a user without cavpref the same route
    assert GENERATE_INPUTS_LINE in (exported["out"] / "README.md").read_text()


def test_transformers_generate_still_rejects_video_inputs_without_the_route(exported):
    """Why the route exists: under the pinned transformers, generate given the processor's inputs as they are
    raises. If this starts failing, transformers fixed it and the route (and the card's line) can go."""
    from transformers import AutoProcessor, Qwen2_5OmniForConditionalGeneration

    model = Qwen2_5OmniForConditionalGeneration.from_pretrained(exported["out"])
    inputs = prompt_inputs(AutoProcessor.from_pretrained(exported["out"]), exported["root"], "clip0.mp4")
    with pytest.raises(ValueError, match="pixel_values_videos"):
        model.generate(**inputs, thinker_max_new_tokens=2, talker_max_new_tokens=2)
