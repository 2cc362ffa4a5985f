"""Recipes and launch configs: every YAML parses with TRL's parser into the config dataclasses, every loss knob
is a recipe key and a command-line override, recipes are data (safe YAML), and the accelerate / DeepSpeed /
FSDP configs load and resolve without running (DeepSpeed itself is optional)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from pathlib import Path

import pytest
import yaml

from cavpref.train import DataArguments, main, parse

ROOT = Path(__file__).resolve().parents[2]
RECIPES = sorted((ROOT / "recipes").glob("*/*.yaml"))
TRAIN_RECIPES = [p for p in RECIPES if p.parent.name not in ("accelerate", "quickstart")]
ACCELERATE = sorted((ROOT / "recipes" / "accelerate").glob("*.yaml"))
METHODS = {"sft", "dpo", "cavpref_norobust", "cavpref"}


def test_recipe_set_covers_methods_and_scales():
    names = {(p.parent.name, p.stem) for p in TRAIN_RECIPES}
    tiny = {p.stem: yaml.safe_load(p.read_text()) for p in TRAIN_RECIPES if p.parent.name == "tiny"}
    # one tiny recipe per method, plus the recommended combined objective (a method plus terms: loss_type)
    assert {m for m, r in tiny.items() if "loss_type" not in r} == METHODS
    assert {m for m, r in tiny.items() if "loss_type" in r} == {"cavpref_anchored"}
    assert tiny["cavpref_anchored"]["method"] == "cavpref"
    lora = {p.stem: yaml.safe_load(p.read_text()) for p in TRAIN_RECIPES if p.stem.startswith("lora_")}
    assert {r["method"] for r in lora.values()} == METHODS
    assert lora["lora_ipo"]["method"] == "dpo" and lora["lora_ipo"]["loss_type"] == [
        "ipo"
    ]  # a DPO variant baseline
    assert ("qwen2.5-omni-7b", "full_cavpref") in names


def test_cpu_determinism_keys_only_on_cpu_recipes():
    """The tiny (CPU) recipes pin one thread and AVX2 code (bit-identical runs); the 7B (GPU) recipes and a recipe
    that says nothing leave the libraries' own choice."""
    for path in TRAIN_RECIPES:
        train, _, _ = parse([str(path), "--use_cpu", "true"])  # GPU recipes ask for bf16
        pinned = (train.num_threads, train.cpu_isa) == (1, "avx2")
        assert pinned == (path.parent.name == "tiny"), path
    train, _, _ = parse(["--train_dataset", "d", "--use_cpu", "true"])
    assert (train.num_threads, train.cpu_isa) == (0, "native")
    assert {p.stem for p in ACCELERATE} >= {
        "single",
        "multi_gpu",
        "deepspeed_zero2",
        "deepspeed_zero3",
        "fsdp",
    }


def test_recipes_and_quickstart_score_shared_prefixes():
    """Issue 15: the 7B and tiny recipes and the quickstart's generated recipes use shared-prefix scoring."""
    from cavpref.apps.quickstart.config import QuickstartConfig
    from cavpref.apps.quickstart.recipes import recipe

    for path in TRAIN_RECIPES:
        assert yaml.safe_load(path.read_text()).get("shared_prefix") is True, path
    made = recipe(
        QuickstartConfig(),
        method="dpo",
        model=Path("m"),
        train=Path("t"),
        world=Path("w"),
        out=Path("o"),
        steps=2,
        lr=1e-4,
        tasks=["MCIT"],
    )
    assert made["shared_prefix"] is True


@pytest.mark.parametrize("path", TRAIN_RECIPES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_recipe_parses_and_takes_overrides(path):
    raw = yaml.safe_load(path.read_text())
    # GPU recipes ask for bf16; on this CPU machine TrainingArguments needs use_cpu for that
    train, data, model = parse([str(path), "--use_cpu", "true"])
    assert train.method == raw["method"] in METHODS
    assert (
        data.train_dataset == raw["train_dataset"] and model.model_name_or_path == raw["model_name_or_path"]
    )
    assert train.remove_unused_columns is False and model.trust_remote_code is False
    if raw["method"] == "cavpref":
        assert train.lambdas == {"y": 1.0, "v": 1.0, "a": 0.8} and train.robust_mode == "paper"
        assert (train.beta_scale, train.beta_offset) == (0.9, 0.1) and train.switch_variant == "paper"


def test_every_loss_knob_is_a_command_line_override():
    path = ROOT / "recipes" / "tiny" / "cavpref.yaml"
    train, _, model = parse(
        [
            str(path),
            "--lambda_y",
            "0.5",
            "--lambda_v",
            "2",
            "--lambda_a",
            "0.3",
            "--beta_y",
            "0.2",
            "--beta_scale",
            "0.5",
            "--beta_offset",
            "0.05",
            "--robust",
            "worst_case",
            "--switch_variant",
            "released",
            "--switch_table",
            '{"CAT": [1, 1]}',
            "--sampler",
            "task_homogeneous",
            "--lora_r",
            "8",
            "--num_frames=2",
        ]
    )
    assert train.lambdas == {"y": 0.5, "v": 2.0, "a": 0.3}
    assert train.fixed_betas == {"y": 0.2, "v": None, "a": None}
    assert (train.beta_scale, train.beta_offset, train.robust_mode) == (0.5, 0.05, "worst_case")
    assert train.switches()["COT-Swap"] == (1, 1) and train.switches()["CAT"] == (1, 1)
    assert train.sampler == "task_homogeneous" and model.lora_r == 8 and model.num_frames == 2


def test_recipes_are_flat_and_no_key_collides():
    from cavpref.config import CAVPrefConfig
    from cavpref.models.config import AVModelArguments

    train_keys = {f.name for f in dataclasses.fields(CAVPrefConfig)}
    data_keys = {f.name for f in dataclasses.fields(DataArguments)}
    model_keys = {f.name for f in dataclasses.fields(AVModelArguments) if f.init}
    assert not (train_keys & model_keys) and not (train_keys & data_keys) and not (data_keys & model_keys)
    for path in TRAIN_RECIPES:
        assert "model" not in yaml.safe_load(path.read_text()), path


def test_config_flag_and_override(tmp_path):
    path = ROOT / "recipes" / "tiny" / "cavpref.yaml"
    train, data, model = parse(["--config", str(path), "--lora_r", "8", "--lambda_a", "0.3"])
    assert model.lora_r == 8 and train.lambda_a == 0.3 and model.num_frames == 4  # the rest from the file
    train, data, model = parse([str(path), "--model_max_length", "77"])  # positional recipe
    assert model.model_max_length == 77 and data.train_dataset == "runs/tiny/data/preferences"


def test_unknown_command_line_key_is_named():
    with pytest.raises(ValueError, match="lora_rank"):
        parse([str(ROOT / "recipes" / "tiny" / "cavpref.yaml"), "--lora_rank", "4"])


def test_help_lists_every_section(capsys):
    with pytest.raises(SystemExit) as stop:
        main([str(ROOT / "recipes" / "tiny" / "cavpref.yaml"), "--help"])
    out = capsys.readouterr().out
    assert stop.value.code == 0 and "cavpref train" in out
    for key in (
        "--lora_r",
        "--model_name_or_path",
        "--num_frames",
        "--lambda_a",
        "--train_dataset",
        "--model_max_length",
        "--activation_checkpointing",
    ):
        assert key in out, key
    with pytest.raises(SystemExit):  # TRL's own keys (trust_remote_code is TRL's) are listed by --help_all
        main([str(ROOT / "recipes" / "tiny" / "cavpref.yaml"), "--help_all"])
    assert "--trust_remote_code" in capsys.readouterr().out


def test_a_nested_model_section_is_refused_naming_the_flat_keys(tmp_path):
    """No shims before a release: the early recipes' nested ``model:`` section and ``--model.key`` overrides fail
    before anything is loaded, with one line naming each key's flat spelling."""
    flat = yaml.safe_load((ROOT / "recipes" / "tiny" / "cavpref.yaml").read_text())
    nested = {k: v for k, v in flat.items() if k not in ("lora_r", "num_frames")}
    nested["model"] = {"lora_r": 4, "max_length": 99}
    old = tmp_path / "old.yaml"
    old.write_text(yaml.safe_dump(nested))
    with pytest.raises(
        ValueError, match=r"model\.lora_r -> lora_r, model\.max_length -> model_max_length"
    ) as err:
        parse([str(old)])
    assert "\n" not in str(err.value) and str(old) in str(err.value)
    with pytest.raises(ValueError, match=r"command line: .*model\.num_frames -> num_frames"):
        parse([str(ROOT / "recipes" / "tiny" / "cavpref.yaml"), "--model.num_frames=2"])


def test_bad_recipes_fail_with_the_key_named(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("method: cavpref\nlamda_a: 0.8\n")
    with pytest.raises(ValueError, match="lamda_a"):
        parse([str(bad)])
    bad.write_text("method: cavpref\nrobust: softest\nuse_cpu: true\n")
    with pytest.raises(ValueError, match="robust"):
        parse([str(bad)])
    # recipes are data: YAML tags that would build Python objects are refused
    bad.write_text("method: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(yaml.constructor.ConstructorError):
        parse([str(bad)])


def test_cli_usage_and_missing_data(tmp_path, capsys):
    assert main([]) == 0 and "cavpref train" in capsys.readouterr().out
    rec = tmp_path / "r.yaml"
    rec.write_text("use_cpu: true\nbf16: false\n")
    assert main([str(rec)]) == 2 and "error: no train_dataset" in capsys.readouterr().err
    with pytest.raises(ValueError, match="train_dataset"):  # --debug: the exception itself
        main([str(rec), "--debug"])


# ----------------------------------------------------------------------------- launch configs


@pytest.mark.parametrize("path", ACCELERATE, ids=lambda p: p.stem)
def test_accelerate_configs_load(path):
    from accelerate.commands.config.config_args import ClusterConfig
    from accelerate.utils import DistributedType

    cfg = ClusterConfig.from_yaml_file(str(path))  # accelerate's own loader validates the keys
    assert cfg.distributed_type in set(DistributedType)
    assert cfg.num_processes >= 1
    if cfg.distributed_type == DistributedType.DEEPSPEED:
        ds_file = ROOT / cfg.deepspeed_config["deepspeed_config_file"]
        assert ds_file.is_file()
    if cfg.distributed_type == DistributedType.FSDP:
        assert cfg.fsdp_config["fsdp_version"] == 2
        from transformers.models.qwen2_5_omni import modeling_qwen2_5_omni as qwen

        for cls in cfg.fsdp_config["fsdp_transformer_layer_cls_to_wrap"].split(","):
            assert hasattr(qwen, cls), cls  # the wrapped block classes exist in transformers


# HF fills these "auto" values from TrainingArguments (transformers.integrations.deepspeed).
_AUTO_KEYS = {
    "train_micro_batch_size_per_gpu",
    "train_batch_size",
    "gradient_accumulation_steps",
    "gradient_clipping",
    "bf16.enabled",
    "fp16.enabled",
    "zero_optimization.reduce_bucket_size",
    "zero_optimization.stage3_prefetch_bucket_size",
    "zero_optimization.stage3_param_persistence_threshold",
}


def _autos(d, prefix=""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _autos(v, f"{prefix}{k}.")
        elif v == "auto":
            yield f"{prefix}{k}"


@pytest.mark.parametrize("stage", [2, 3])
def test_deepspeed_configs_build_the_plugin_without_deepspeed(stage):
    from accelerate.utils import DeepSpeedPlugin

    path = ROOT / "recipes" / "deepspeed" / f"zero{stage}.json"
    cfg = json.loads(path.read_text())
    assert cfg["zero_optimization"]["stage"] == stage
    assert set(_autos(cfg)) <= _AUTO_KEYS  # every "auto" is one HF knows how to fill
    plugin = DeepSpeedPlugin(hf_ds_config=str(path))
    assert plugin.zero_stage == stage and plugin.hf_ds_config.is_zero3() == (stage == 3)


@pytest.mark.skipif(importlib.util.find_spec("deepspeed") is None, reason="deepspeed is an optional extra")
@pytest.mark.parametrize("stage", [2, 3])
def test_deepspeed_configs_resolve_against_training_args(
    stage, tmp_path
):  # pragma: no cover - needs deepspeed
    from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig

    from cavpref.config import CAVPrefConfig

    ds = HfTrainerDeepSpeedConfig(str(ROOT / "recipes" / "deepspeed" / f"zero{stage}.json"))
    ds.trainer_config_process(CAVPrefConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False))
    assert not list(_autos({k: v for k, v in ds.config.items() if k != "zero_optimization"}))
