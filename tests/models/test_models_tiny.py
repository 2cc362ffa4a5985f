"""Tiny offline models, tokenizer, loading paths (thinker folder, full Omni folder, Auto classes), registry, CLI."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from cavpref.apps.cli import main as cavpref_main
from cavpref.models import (
    AVModelArguments,
    Row,
    load_model_io,
    model_io_class,
    register_model_io,
    registered_model_ios,
)
from cavpref.models.tiny import build_tiny_composed, build_tiny_qwen_omni, demo_media
from cavpref.models.tokenizer import INSTRUMENTS, train_tokenizer

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def qwen_dir(tmp_path_factory):
    return build_tiny_qwen_omni(tmp_path_factory.mktemp("q") / "qwen")


@pytest.fixture(scope="module")
def tok():
    return train_tokenizer()


def test_builders_are_deterministic(tmp_path, qwen_dir):
    again = build_tiny_qwen_omni(tmp_path / "again")
    other = build_tiny_qwen_omni(tmp_path / "other", seed=1)
    for name in ("model.safetensors", "tokenizer.json", "config.json", "processor_config.json"):
        assert (again / name).read_bytes() == (qwen_dir / name).read_bytes(), name
    assert (other / "model.safetensors").read_bytes() != (qwen_dir / "model.safetensors").read_bytes()
    c1, c2 = build_tiny_composed(tmp_path / "c1"), build_tiny_composed(tmp_path / "c2")
    assert (c1 / "model.safetensors").read_bytes() == (c2 / "model.safetensors").read_bytes()


def test_tokenizer_covers_the_synthetic_vocabulary(tok):
    def n(text):
        return len(tok(text, add_special_tokens=False)["input_ids"])

    assert n("None of the above") <= 4
    assert n("The audio is missing.") <= 6 and n("The video is missing.") <= 6
    assert n(" followed by ") <= 3
    assert all(n(w) <= 3 for w in INSTRUMENTS + ["left", "middle", "right", "yes", "no", "more than ten"])
    assert n("<|im_start|>assistant\n") == 3 and tok.video_token == "<|VIDEO|>"
    assert tok.decode(tok("Guzheng followed by pipa.")["input_ids"]) == "Guzheng followed by pipa."
    extended = train_tokenizer(extra_corpus=["glockenspiel theremin"] * 20)
    assert len(extended("glockenspiel", add_special_tokens=False)["input_ids"]) < n("glockenspiel")


def test_folders_load_with_auto_classes(qwen_dir, tmp_path):
    from transformers import AutoModelForCausalLM, AutoModelForMultimodalLM, AutoProcessor

    from cavpref.models.composed import ComposedAVForCausalLM, ComposedAVProcessor

    assert type(AutoProcessor.from_pretrained(qwen_dir)).__name__ == "Qwen2_5OmniProcessor"
    assert AutoModelForMultimodalLM.from_pretrained(qwen_dir).config.model_type == "qwen2_5_omni_thinker"
    cdir = build_tiny_composed(tmp_path / "c", text_model_type="llama", hidden_size=48, num_attention_heads=4)
    model = AutoModelForCausalLM.from_pretrained(cdir)
    assert isinstance(model, ComposedAVForCausalLM) and model.config.text_config.model_type == "llama"
    assert model.config.text_config.hidden_size == 48
    assert isinstance(AutoProcessor.from_pretrained(cdir), ComposedAVProcessor)
    clip = load_model_io(str(build_tiny_composed(tmp_path / "clip", vision_model_type="clip_vision_model")))
    assert clip.model.vision_tower.config.model_type == "clip_vision_model"  # CLS token + patch grid
    batch = clip.collate([Row("Q", "violin", demo_media(0), "m"), Row("Q", "piano", demo_media(0), "m")])
    with torch.no_grad():
        torch.testing.assert_close(
            clip.logps(clip.model, batch), clip.logps(clip.model, batch, reuse_encoders=False)
        )


def _full_omni_folder(thinker_dir, out):
    """A folder laid out like Qwen/Qwen2.5-Omni-7B: config model_type qwen2_5_omni, weights under the legacy
    ``thinker.`` names (thinker.model.layers…, thinker.visual…, thinker.audio_tower…), talker/token2wav too."""
    from safetensors.torch import save_file
    from transformers import Qwen2_5OmniConfig
    from transformers import Qwen2_5OmniThinkerForConditionalGeneration as Thinker

    thinker = Thinker.from_pretrained(thinker_dir)
    state = {}
    for key, value in thinker.state_dict().items():
        if key.startswith("model.language_model."):
            key = "model." + key[len("model.language_model.") :]
        elif key.startswith("model."):
            key = key[len("model.") :]
        state["thinker." + key] = value.contiguous().clone()
    state["talker.codec_head.weight"] = torch.zeros(2, 2)
    state["token2wav.code_embedding.weight"] = torch.zeros(2, 2)
    out.mkdir()
    save_file(state, out / "model.safetensors", metadata={"format": "pt"})
    Qwen2_5OmniConfig(thinker_config=thinker.config.to_dict()).save_pretrained(out)
    for f in thinker_dir.iterdir():
        if f.name not in ("model.safetensors", "config.json"):
            shutil.copy(f, out / f.name)
    return out


def test_thinker_loads_from_a_full_omni_checkpoint(qwen_dir, tmp_path):
    full = _full_omni_folder(qwen_dir, tmp_path / "omni")
    assert json.loads((full / "config.json").read_text())["model_type"] == "qwen2_5_omni"
    a, b = load_model_io(str(full), dtype="float32"), load_model_io(str(qwen_dir), dtype="float32")
    batch = a.collate([Row("What is playing?", "violin", demo_media(0))])
    with torch.no_grad():
        assert torch.equal(a.forward_logits(a.model, batch), b.forward_logits(b.model, batch))


def test_registry_picks_a_custom_adapter_by_model_type(qwen_dir, tmp_path):
    from cavpref.models.qwen_omni import QwenOmniModelIO

    class MyModelIO(QwenOmniModelIO):
        pass

    register_model_io("my_avllm", MyModelIO, model_types=("my_avllm_type",))
    assert model_io_class("my_avllm") is MyModelIO and registered_model_ios()["my_avllm"] == ["my_avllm_type"]
    assert model_io_class("qwen2_5_omni").__name__ == "QwenOmniModelIO"
    assert isinstance(load_model_io(str(qwen_dir), model_io="my_avllm"), MyModelIO)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text(json.dumps({"model_type": "nobody_knows"}))
    with pytest.raises(ValueError, match=r"bad/config.json: model_type 'nobody_knows'"):
        load_model_io(str(bad))
    with pytest.raises(KeyError, match="unknown model_io"):
        model_io_class("nope")


def test_load_adapter_from_model_config(qwen_dir):
    cfg = AVModelArguments(
        model_name_or_path=str(qwen_dir),
        dtype="float32",
        missing_modality="zero_dummy",
        use_audio_in_video=True,
        system_prompt="Be brief.",
        video_max_pixels=56 * 56,
    )
    ad = load_model_io(cfg)
    assert (ad.missing_modality, ad.use_audio_in_video, ad.system_prompt) == ("zero_dummy", True, "Be brief.")
    assert ad.model.dtype == torch.float32 and ad.sample_rate == 16000
    eager = load_model_io(str(qwen_dir), dtype="float32", attn_implementation="eager")
    assert eager.model.config._attn_implementation == "eager"
    batch = ad.collate([Row("Where?", "left", demo_media(0))])
    with torch.no_grad():
        torch.testing.assert_close(
            eager.logps(eager.model, batch), ad.logps(ad.model, batch), atol=1e-5, rtol=0
        )
    with pytest.raises(TypeError, match="unknown option"):
        load_model_io(str(qwen_dir), missing_modalty="drop")
    with pytest.raises(ValueError, match="missing_modality"):
        AVModelArguments(missing_modality="skip")
    assert AVModelArguments(frame_height=56, frame_width=56).frame_policy().size == (56, 56)


def test_use_audio_in_video_interleaves_and_keeps_video_only_rows_right(qwen_dir):
    """Interleaved rows (video+audio) and video-only rows (MAT) in one batch: each row gets positions computed
    with its own use_audio_in_video, so batched log-probs equal the rows alone and the model's own positions."""
    ad = load_model_io(str(qwen_dir), dtype="float32", use_audio_in_video=True)
    both, video_only = (
        Row("Q", "violin", demo_media(0), None, "av"),
        Row("Q", "piano", demo_media(1, audio=False)),
    )
    batch = ad.collate([both, video_only])
    first = batch["input_ids"][0].tolist()
    vstart = first.index(ad.processor.tokenizer.convert_tokens_to_ids("<|vision_bos|>"))
    assert (
        ad.tokenizer.convert_ids_to_tokens(first[vstart + 1]) == "<|audio_bos|>"
    )  # audio interleaved in video
    with torch.no_grad():
        together = ad.logps(ad.model, batch)
        alone = torch.cat([ad.logps(ad.model, ad.collate([r])) for r in (both, video_only)])
        native = ad.model(
            **{
                k: v
                for k, v in ad.processor(
                    text=[
                        ad._render(ad.messages("Q", True, False), add_generation_prompt=True)
                        + "violin<|im_end|>\n"  # the completion TRL scores: the newline after the turn too
                    ],
                    videos=[demo_media(0).frames],
                    audio=[demo_media(0).audio],
                    load_audio_from_video=True,
                    audio_from_video_indices=[0],
                    videos_kwargs=ad._videos_kwargs(demo_media(0)),
                    return_tensors="pt",
                ).items()
            },
            use_audio_in_video=True,
        ).logits
    torch.testing.assert_close(together, alone, atol=1e-5, rtol=0)
    n = int((batch["labels"][0] != -100).sum())
    from cavpref.models.common import response_logps

    labels = torch.full(native.shape[:2], -100)
    labels[0, -n:] = batch["input_ids"][0, batch["attention_mask"][0].bool()][-n:]
    torch.testing.assert_close(response_logps(native, labels), together[:1], atol=1e-5, rtol=0)
    assert len(ad.generate(ad.model, [both, video_only], max_new_tokens=2)) == 2


def test_rope_positions_come_from_collate_and_equal_the_forward_ones(qwen_dir):
    """Qwen's 3D rope positions are computed once per batch in collate (CPU side) — the same values the forward
    would compute row by row, so log-probs are unchanged without them."""
    ad = load_model_io(str(qwen_dir), dtype="float32", use_audio_in_video=True)
    rows = [
        Row("Q", "violin", demo_media(0), None, "av"),
        Row("Q", "piano", demo_media(1, audio=False)),
        Row("Where?", "The audio is missing.", demo_media(2, video=False)),
        Row("yes?", "no"),
    ]
    batch = ad.collate(rows)
    assert batch["position_ids"].shape == (3, *batch["input_ids"].shape)
    without = {k: v for k, v in batch.items() if k != "position_ids"}
    with torch.no_grad():
        assert torch.equal(ad.logps(ad.model, batch), ad.logps(ad.model, without))


def test_cli_builds_loadable_models(tmp_path):
    corpus = tmp_path / "words.txt"
    corpus.write_text("marimba glockenspiel\n" * 10)
    assert (
        cavpref_main(
            [
                "model",
                "tiny-qwen",
                "--out",
                str(tmp_path / "q"),
                "--hidden_size",
                "64",
                "--num_attention_heads",
                "4",
                "--corpus_file",
                str(corpus),
            ]
        )
        == 0
    )
    ad = load_model_io(str(tmp_path / "q"))
    assert ad.model.config.text_config.hidden_size == 64
    assert (
        "marimba" in ad.tokenizer.get_vocab()
        or len(ad.tokenizer("marimba", add_special_tokens=False)["input_ids"]) <= 2
    )
    assert (
        cavpref_main(["model", "tiny-composed", "--out", str(tmp_path / "c"), "--text_model_type", "llama"])
        == 0
    )
    assert type(load_model_io(str(tmp_path / "c"))).__name__ == "ComposedAVModelIO"
    assert cavpref_main(["model", "nope"]) == 2
    assert (
        cavpref_main(["model", "tiny-qwen", "--out", str(tmp_path / "x"), "--corpus_file", "/no/such"]) == 2
    )


def test_audio_resampled_and_video_fps_from_timestamps(qwen_dir):
    """Audio at another rate is resampled to the processor's 16 kHz (same duration, same token count); the fps
    handed to the processor (hence the temporal rope step) comes from the frame timestamps."""
    ad = load_model_io(str(qwen_dir), dtype="float32")
    at16, at8 = (
        demo_media(0, video=False, seconds=2.0),
        demo_media(0, video=False, seconds=2.0, sample_rate=8000),
    )
    n16, n8 = (len(ad.encode_media(m).expansions[ad.audio_token_id]) for m in (at16, at8))
    assert n16 == n8 == 50  # 2 s of audio -> 50 tokens (25 per second)
    slow, fast = demo_media(1, audio=False, fps=1.0), demo_media(1, audio=False, fps=4.0)
    assert ad.encode_media(slow).video["video_second_per_grid"].item() == pytest.approx(
        2.0
    )  # 2 frames / 1 fps
    assert ad.encode_media(fast).video["video_second_per_grid"].item() == pytest.approx(0.5)
    no_times = demo_media(1, audio=False)
    no_times.frame_times = None
    assert ad.encode_media(no_times).video["video_second_per_grid"].item() == pytest.approx(2 / ad.video_fps)
