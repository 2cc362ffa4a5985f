"""``cavpref export``: a trained thinker (full fine-tune or LoRA) as a full Qwen2.5-Omni checkpoint that
``Qwen2_5OmniForConditionalGeneration.from_pretrained`` loads and that generates text and speech (issue 41).

The base is a tiny full Omni model built from a config (thinker + talker + token2wav + speakers,
``cavpref.models.tiny.build_tiny_qwen_omni_full``); the runs are real one-step ``cavpref train`` runs from it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch
import yaml

from cavpref.models.export import ADAPTER_DIR, ExportModelArgs, export_full_model, main
from tests.helpers import trainer_fixtures as F

pytestmark = pytest.mark.usefixtures("one_thread")


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(str(f.relative_to(folder)).encode() + f.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def tiny_full(tmp_path_factory):
    """The tiny full Omni model, and a fine-tuned thinker saved as a run saves it (weights moved, same layout)."""
    from transformers import AutoProcessor
    from transformers import Qwen2_5OmniThinkerForConditionalGeneration as Thinker

    from cavpref.models.tiny import build_tiny_qwen_omni_full

    root = tmp_path_factory.mktemp("tiny_full")
    thinker = F.shared(tmp_path_factory)["model"]  # the trainer tests' tiny thinker (built once per session)
    base = build_tiny_qwen_omni_full(root / "base", thinker=thinker)
    tuned = Thinker.from_pretrained(thinker)
    with torch.no_grad():
        for p in tuned.model.language_model.parameters():
            p.add_(0.01 * torch.randn_like(p))
    tuned.save_pretrained(root / "tuned")
    AutoProcessor.from_pretrained(thinker).save_pretrained(root / "tuned")
    return {"root": root, "base": base, "tuned": root / "tuned", "thinker": thinker}


def states(model) -> dict[str, dict[str, torch.Tensor]]:
    return {part: getattr(model, part).state_dict() for part in ("thinker", "talker", "token2wav")}


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def check_full_model(out: Path, trained_folder: Path, base_folder: Path) -> None:
    """``out`` loads as the full model; its thinker is the trained one (tensor for tensor, and the same greedy
    text), its talker and token2wav the base's, and it speaks."""
    from transformers import AutoProcessor, Qwen2_5OmniForConditionalGeneration
    from transformers import Qwen2_5OmniThinkerForConditionalGeneration as Thinker

    model = Qwen2_5OmniForConditionalGeneration.from_pretrained(out)
    trained = Thinker.from_pretrained(trained_folder)
    got, orig = states(model), states(Qwen2_5OmniForConditionalGeneration.from_pretrained(base_folder))
    assert same(got["thinker"], trained.state_dict()) and not same(got["thinker"], orig["thinker"])
    assert same(got["talker"], orig["talker"]) and same(got["token2wav"], orig["token2wav"])
    ids = AutoProcessor.from_pretrained(out).tokenizer("Which instrument is playing?", return_tensors="pt")
    torch.manual_seed(0)
    text, wav = model.generate(
        **ids, thinker_max_new_tokens=4, thinker_do_sample=False, talker_max_new_tokens=8
    )
    assert wav.ndim == 1 and wav.numel() > 0  # the talker and token2wav ran
    assert torch.equal(text, trained.generate(**ids, max_new_tokens=4, do_sample=False))
    assert {p.name for p in out.iterdir()} >= {"config.json", "model.safetensors", "spk_dict.pt", "README.md"}


def test_a_fine_tuned_thinker_exports_into_the_full_model_and_speaks(tiny_full, tmp_path):
    before = {k: digest(tiny_full[k]) for k in ("base", "tuned")}
    args = ExportModelArgs(
        run=str(tiny_full["tuned"]), base_model=str(tiny_full["base"]), output_dir=str(tmp_path / "o")
    )
    check_full_model(export_full_model(args), tiny_full["tuned"], tiny_full["base"])
    assert {k: digest(tiny_full[k]) for k in before} == before  # neither input folder was written to


def test_bad_exports_say_why_and_write_nothing(tiny_full, tmp_path, capsys):
    argv = ["--run", str(tiny_full["tuned"])]
    assert main([*argv, "--output_dir", str(tmp_path / "x")]) == 2  # no run_config.yaml: the base is unknown
    assert "is not a full Qwen2.5-Omni checkpoint" in capsys.readouterr().err
    argv += ["--base_model", str(tiny_full["base"])]
    assert (
        main(
            [
                *argv[:2],
                "--base_model",
                str(tiny_full["thinker"]),
                "--output_dir",
                str(tmp_path / "x"),
            ]
        )
        == 2
    )
    assert "is not a full Qwen2.5-Omni checkpoint" in capsys.readouterr().err
    assert main([*argv, "--output_dir", str(tiny_full["base"] / "inside")]) == 2
    assert "lies inside the base_model folder" in capsys.readouterr().err
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("mine")
    assert main([*argv, "--output_dir", str(tmp_path / "busy")]) == 2
    err = capsys.readouterr().err
    assert "is not empty (keep.txt) and was not created by `cavpref export`" in err
    assert (tmp_path / "busy" / "keep.txt").is_file()
    assert not (tmp_path / "x").exists() and not (tiny_full["base"] / "inside").exists()
    assert main([*argv, "--output_dir", str(tmp_path / "c")]) == 0
    card = (tmp_path / "c" / "README.md").read_text()
    assert f"`{tiny_full['tuned']}`" in card and "Qwen2_5OmniForConditionalGeneration.from_pretrained" in card


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_full):
    from cavpref.train import main as train

    root = tmp_path_factory.mktemp("export")
    base = tiny_full["base"]
    F.write_clips(root / "media")
    F.dataset(1, tasks=("MCIT", "MAT")).save_to_disk(str(root / "prefs"))
    out = {"root": root, "base": base}
    for name, lora_r in (("full", 0), ("lora", 4)):
        recipe = {
            "method": "dpo", "train_dataset": str(root / "prefs"), "media_root": str(root / "media"),
            "output_dir": str(root / name), "per_device_train_batch_size": 2, "max_steps": 1, "save_strategy": "no",
            "learning_rate": 0.5, "optim": "sgd", "lr_scheduler_type": "constant", "logging_steps": 1,
            "bf16": False, "use_cpu": True, "report_to": "none", "disable_tqdm": True, "seed": 0,
            "dataloader_num_workers": 0, "activation_checkpointing": False, "num_frames": 2,
            "model_name_or_path": str(base), "dtype": "float32", "lora_r": lora_r,
        }  # fmt: skip
        (root / f"{name}.yaml").write_text(yaml.safe_dump(recipe))
        assert train([str(root / f"{name}.yaml")]) == 0
        out[name] = root / name
    out["digests"] = {k: digest(out[k]) for k in ("base", "full", "lora")}
    return out


@pytest.fixture(scope="module")
def base_model(runs):
    from transformers import Qwen2_5OmniForConditionalGeneration

    return Qwen2_5OmniForConditionalGeneration.from_pretrained(runs["base"])


@pytest.mark.slow
def test_a_full_fine_tune_run_exports_with_its_own_base(runs, tmp_path):
    out = export_full_model(ExportModelArgs(run=str(runs["full"]), output_dir=str(tmp_path / "full")))
    check_full_model(out, runs["full"], runs["base"])  # the base came from the run's run_config.yaml
    assert {k: digest(runs[k]) for k in runs["digests"]} == runs["digests"]  # no input folder was written to


@pytest.mark.slow
def test_lora_runs_export_merged_or_as_an_adapter_of_the_full_model(runs, base_model, tmp_path):
    import copy

    from peft import PeftModel
    from transformers import Qwen2_5OmniForConditionalGeneration

    merged_thinker = PeftModel.from_pretrained(
        copy.deepcopy(base_model.thinker), str(runs["lora"])
    ).merge_and_unload()
    expect = merged_thinker.state_dict()
    assert not same(expect, base_model.thinker.state_dict())  # the step moved the adapter
    out = export_full_model(ExportModelArgs(run=str(runs["lora"]), output_dir=str(tmp_path / "merged")))
    merged = Qwen2_5OmniForConditionalGeneration.from_pretrained(out)
    assert same(states(merged)["thinker"], expect) and not (out / ADAPTER_DIR).exists()

    out = export_full_model(
        ExportModelArgs(run=str(runs["lora"]), output_dir=str(tmp_path / "a"), merge_lora=False)
    )
    full = Qwen2_5OmniForConditionalGeneration.from_pretrained(out)
    assert same(states(full)["thinker"], base_model.thinker.state_dict())  # the original thinker ...
    applied = PeftModel.from_pretrained(full, str(out / ADAPTER_DIR)).merge_and_unload()
    assert same(states(applied)["thinker"], expect)  # ... plus the adapter, re-keyed for the full model
    assert same(
        states(applied)["talker"], states(base_model)["talker"]
    )  # the adapter touches the thinker only
    assert "PeftModel.from_pretrained" in (out / "README.md").read_text()
