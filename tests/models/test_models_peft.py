"""LoRA / freezing through ``prepare_model``: placement, trainable sets, and disable_adapter as the reference."""

from __future__ import annotations

import pytest
import torch

from cavpref.models import AVModelArguments, Row, load_model_io, prepare_model
from cavpref.models.prepare import lora_target_pattern
from cavpref.models.tiny import build_tiny_composed, build_tiny_qwen_omni, demo_media

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_models_peft")
    return {
        "qwen": build_tiny_qwen_omni(root / "qwen"),
        "composed": build_tiny_composed(root / "composed", text_model_type="llama"),
    }


@pytest.fixture(params=["qwen", "composed"])
def fresh(request, folders):
    """A freshly loaded model I/O (prepare_model injects LoRA into the model in place)."""
    return load_model_io(str(folders[request.param]), dtype="float32")


def _trainable(model):
    return {n for n, p in model.named_parameters() if p.requires_grad}


def _rows():
    m = demo_media(0)
    return [
        Row("Which instrument?", "violin", m, "m", "w"),
        Row("Which instrument?", "piano", m, "m", "l"),
        Row("Is the video missing?", "The video is missing.", demo_media(1, video=False), None, "a"),
    ]


def test_lora_only_on_language_model_targets(fresh):
    cfg = AVModelArguments(lora_r=4, lora_target_modules=["q_proj", "v_proj"])
    model = prepare_model(fresh.model, cfg, fresh)
    lora_layers = {n.rsplit(".lora_A", 1)[0] for n, _ in model.named_parameters() if ".lora_A." in n}
    prefix = "base_model.model." + fresh.language_model_prefix + "."
    n_layers = model.get_base_model().config.get_text_config().num_hidden_layers
    assert len(lora_layers) == 2 * n_layers  # q_proj and v_proj of every decoder layer ...
    assert all(
        n.startswith(prefix) and n.endswith(("q_proj", "v_proj")) for n in lora_layers
    )  # ... and nothing else
    assert _trainable(model) == {n for n, _ in model.named_parameters() if ".lora_" in n}


def test_unfrozen_encoders_and_projectors_train_fully(fresh):
    cfg = AVModelArguments(lora_r=4, freeze_vision=False, freeze_audio=True, train_projectors=True)
    model = prepare_model(fresh.model, cfg, fresh)
    trainable = _trainable(model)
    vision, audio = fresh.vision_modules[0], fresh.audio_modules[0]
    assert any(f".{vision}.modules_to_save." in n for n in trainable)
    audio_trainable = {n for n in trainable if f".{audio}." in n}
    # audio encoder frozen; only a projector that lives inside it (Qwen's audio_tower.proj) trains
    assert all(any(f".{p}.modules_to_save." in n for p in fresh.projector_modules) for n in audio_trainable)
    assert any(".lora_" in n for n in trainable)


def test_disable_adapter_gives_base_logps(fresh):
    batch = fresh.collate(_rows())
    with torch.no_grad():
        base = fresh.logps(fresh.model, batch)
    model = prepare_model(
        fresh.model, AVModelArguments(lora_r=4, freeze_vision=False, train_projectors=True), fresh
    )
    torch.manual_seed(1)
    with torch.no_grad():  # move the trainable weights away from their init (LoRA B starts at zero)
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.2 * torch.randn_like(p))
    policy = fresh.logps(model, batch)
    policy.sum().backward()
    assert all(p.grad is not None for n, p in model.named_parameters() if p.requires_grad and ".lora_B." in n)
    assert not torch.allclose(policy.detach(), base, atol=1e-3)
    with torch.no_grad(), model.disable_adapter():
        reference = fresh.logps(model, batch)
    assert torch.equal(reference, base)


def test_full_finetune_freezes_encoders(fresh):
    model = prepare_model(fresh.model, AVModelArguments(lora_r=0), fresh)
    assert model is fresh.model
    frozen = {n for n, p in model.named_parameters() if not p.requires_grad}
    enc = fresh.vision_modules + fresh.audio_modules + fresh.projector_modules
    assert frozen == {n for n, _ in model.named_parameters() if n.startswith(tuple(m + "." for m in enc))}
    assert any(n.startswith(fresh.language_model_prefix + ".") for n in _trainable(model))


def test_target_pattern_is_anchored_to_the_language_model():
    import re

    pat = lora_target_pattern("model.language_model", ["q_proj", "gate_proj"])
    assert re.fullmatch(pat, "model.language_model.layers.0.self_attn.q_proj")
    assert re.fullmatch(pat, "model.language_model.layers.11.mlp.gate_proj")
    assert not re.fullmatch(pat, "model.visual.blocks.0.mlp.gate_proj")
    assert not re.fullmatch(pat, "model.audio_tower.layers.0.self_attn.q_proj")
    assert not re.fullmatch(pat, "model.language_model.layers.0.self_attn.q_proj.lora_A")
