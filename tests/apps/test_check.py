"""`cavpref check`: parameter counts on the meta device, tokens per row from the real collator, the estimate."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cavpref.apps import check
from tests.helpers.trainer_fixtures import shared

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return shared(tmp_path_factory)


def _data(inputs):
    return ["--train_dataset", str(inputs["prefs"]), "--media_root", str(inputs["media"])]


def _7b(recipe: str, inputs, *extra: str) -> list[str]:
    """A 7B recipe on the tests' rows, the tiny processor counting their tokens."""
    path = str(ROOT / f"recipes/qwen2.5-omni-7b/{recipe}.yaml")
    return [path, *_data(inputs), "--processor_path", str(inputs["model"]), *extra]


def test_tiny_recipe_counts_and_tokens(inputs, capsys):
    argv = ["recipes/tiny/cavpref.yaml", *_data(inputs), "--model_name_or_path", str(inputs["model"])]
    out = check.run([str(ROOT / argv[0]), *argv[1:]])
    from transformers import AutoModelForImageTextToText

    model = AutoModelForImageTextToText.from_pretrained(inputs["model"])
    assert out["total"] == sum(p.numel() for p in model.parameters())
    # full fine-tuning of the LM; encoders and projectors frozen (the recipe's defaults)
    frozen = sum(p.numel() for n in ("visual", "audio_tower") for p in getattr(model.model, n).parameters())
    assert out["trainable"] == out["total"] - frozen
    t = out["tokens"]
    assert t["samples"] == 8 and t["rows"] >= 2 * 8  # y_w, y_l + the anchors the switches ask for
    # the tiny processor: 56x56 frames at 56*56 pixels -> 2x2 patches of 14 px merged 2x2 = 1 token per frame pair
    assert t["video"] > 0 and t["audio"] > 0
    assert check.main([str(ROOT / argv[0]), *argv[1:]]) == 0
    assert "verdict" in capsys.readouterr().out


def test_7b_lora_recipe_on_meta(inputs, capsys):
    """The published 7B thinker config on meta: 8.93 B parameters; LoRA r=16 on the 7 projections of 28 layers
    (196 modules): r * (d_in + d_out) summed = 1,441,792 per layer."""
    zero3 = str(ROOT / "recipes/accelerate/deepspeed_zero3.yaml")
    argv = _7b("lora_cavpref", inputs, "--accelerate_config", zero3, "--sample_rows", "3")
    out = check.run(argv)
    assert out["total"] == 8_931_813_888
    h, kv, i, r = 3584, 512, 18944, 16
    per_layer = r * (2 * (h + h) + 2 * (h + kv) + 3 * (h + i))
    assert per_layer == 1_441_792 and out["trainable"] == 28 * per_layer
    assert out["sharding"].strategy == "zero3" and out["sharding"].world_size == 8
    est = out["checkpointing"]
    assert est.parts["weights"] == 8_931_813_888 * 2 // 8
    assert est.parts["reference"] == 0  # LoRA: the reference is the adapter-disabled base
    assert out["tokens"]["video"] > 0 and out["tokens"]["audio"] > 0


def test_7b_full_recipe_needs_reference_and_sharding(inputs):
    argv = _7b("full_cavpref", inputs, "--sample_rows", "2", "--gpu_memory_gb", "80")
    one = check.run(argv)
    assert one["trainable"] == 7_070_619_136 + 544_997_376  # LM + untied lm_head; encoders frozen
    assert one["checkpointing"].parts["reference"] == 8_931_813_888 * 2
    assert one["checkpointing"].verdict(one["gpu_bytes"]) == "does not fit"  # 16 B/param x 7.6 B on one GPU
    z3 = check.run([*argv, "--accelerate_config", str(ROOT / "recipes/accelerate/deepspeed_zero3.yaml")])
    assert z3["checkpointing"].total < one["checkpointing"].total / 4


SEVEN_B = sorted((ROOT / "recipes" / "qwen2.5-omni-7b").glob("*.yaml"))


@pytest.fixture
def offline(monkeypatch):
    """No network: the hub is off (HF_HUB_OFFLINE) and any socket connection fails at once."""
    import socket

    def refuse(*args, **kwargs):
        raise OSError("network unreachable (test)")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.chdir(ROOT)  # the recipes' relative data paths, as a user runs them


@pytest.mark.parametrize("recipe", SEVEN_B, ids=lambda p: p.stem)
def test_every_7b_recipe_gets_a_verdict_offline_without_data(recipe, offline, capsys):
    """As shipped, the 7B recipes point at data that does not exist yet and at a hub id: the check still
    sizes the run offline, from the published config and processor and synthetic rows at the budgets."""
    argv = [str(recipe), "--estimate_height", "360", "--estimate_width", "640", "--estimate_seconds", "2"]
    out = check.run(argv)
    assert out["total"] == 8_931_813_888 and "published preprocessor" in out["processor"]
    assert out["tokens"]["estimated"] and "not found" in out["notes"][0]
    # 640x360 under the recipe's 602,112-pixel budget: 644x364 -> 23 x 13 merged patches per frame pair, at
    # most 4 pairs of the 8 frames; 25 audio tokens a second, at most 4 s (the COT tasks join two 2-s clips)
    t = out["tokens"]
    assert 0 < t["video"] <= 4 * 23 * 13 and 0 < t["audio"] <= 4 * 25 and t["samples"] == 9
    assert check.main(argv) == 0
    printed = capsys.readouterr().out
    assert "verdict" in printed and ("fits" in printed or "does not fit" in printed)


def test_missing_paths_are_one_line_errors_before_anything_loads(inputs, offline, capsys):
    recipe = str(ROOT / "recipes/qwen2.5-omni-7b/lora_cavpref.yaml")
    assert check.main([recipe, "--accelerate_config", "nope.yaml"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cavpref check: error: accelerate_config 'nope.yaml'") and err.count("\n") == 1
    with pytest.raises(check.CheckError, match="no published config .* --model_config"):
        check.run([recipe, "--model_name_or_path", "someone/other-model"])
    with pytest.raises(check.CheckError, match="media_root 'no/media'"):
        check.run([recipe, "--train_dataset", str(inputs["prefs"]), "--media_root", "no/media"])


def test_lora_dropout_counts_only_when_trl_keeps_it(inputs):
    """TRL's disable_dropout (default on) zeroes LoRA's dropout, so the estimate keeps one fp32 input copy per
    adapter (no mask); with ``disable_dropout: false`` each of the 7 adapters of each of the 28 layers adds its
    mask, 4 bytes x d_in per token (d_in: 3584 for six projections, 18944 for down_proj)."""
    argv = _7b("lora_cavpref", inputs, "--sample_rows", "1")
    off = check.run(argv)["no_checkpointing"].parts["activations"]
    assert check.run([*argv, "--lora_dropout", "0"])["no_checkpointing"].parts["activations"] == off
    on = check.run([*argv, "--disable_dropout", "false"])
    tokens = round(on["tokens"]["lm_tokens_per_sample"] * 2)  # per_device_train_batch_size: 2
    assert on["no_checkpointing"].parts["activations"] - off == tokens * 28 * 4 * (6 * 3584 + 18944)


@pytest.mark.parametrize("name", ["lora_cavpref", "full_cavpref"])
def test_the_7b_recipes_commented_recommendation_is_a_valid_recipe(name, offline, tmp_path):
    """The anchored-preference keys the 7B CAVPref recipes ship commented out (docs/training.md, "Remedies"):
    uncommented, the recipe still parses and sizes, and names the anchored terms."""
    text = (ROOT / "recipes" / "qwen2.5-omni-7b" / f"{name}.yaml").read_text()
    keys = ("# loss_type: ", "# ancpo_delta: ")
    assert all(k in text for k in keys)
    for k in keys:
        text = text.replace(k, k[2:])
    recipe = tmp_path / f"{name}.yaml"
    recipe.write_text(text)
    argv = [str(recipe), "--estimate_height", "360", "--estimate_width", "640", "--estimate_seconds", "2"]
    out = check.run(argv)
    assert out["total"] == 8_931_813_888
    assert yaml.safe_load(text)["loss_type"][3:] == ["ancpo_y", "ancpo_v", "ancpo_a"]
    recipe.write_text(text.replace("ancpo_a]", "ancpo_b]"))  # a misspelt term is refused, not ignored
    with pytest.raises(ValueError, match="ancpo_b"):
        check.run(argv)
