"""``cavpref train RECIPE.yaml [overrides]`` — one recipe, one run folder.

A recipe is YAML data (``yaml.safe_load``; nothing in it is executed): the training / loss keys of
``CAVPrefConfig`` and the data keys of ``DataArguments`` at the top level, and a ``model:`` section for
``cavpref.models.config.ModelConfig`` (kept apart because several of its keys — ``max_length``,
``trust_remote_code``, ``gradient_checkpointing`` — also exist in ``TrainingArguments`` with another
meaning). Both are parsed by TRL's / HF's parser, so every key is also a command-line override::

    cavpref train recipes/tiny/cavpref.yaml --lambda_a 0.5 --beta_y 0.2 --model.lora_r 8

The output folder gets ``run_config.yaml`` (the resolved config of all sections), ``versions.json``,
``loss.json`` (the resolved loss / switch table), ``logs.jsonl`` and the HF checkpoints; a killed run
resumes from its last checkpoint with ``--resume_from_checkpoint last``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import sys
from dataclasses import dataclass, field

import yaml

SECTION = "model"


@dataclass
class DataArguments:
    """Where the preference data is: folders written by ``datasets.save_to_disk`` (data_prep output)."""

    train_dataset: str = field(
        default="", metadata={"help": "load_from_disk folder (Dataset or DatasetDict)"}
    )
    train_split: str = field(
        default="train", metadata={"help": "split to use when the folder holds a DatasetDict"}
    )
    eval_dataset: str | None = field(default=None, metadata={"help": "optional held-out preference folder"})
    eval_split: str = field(
        default="validation", metadata={"help": "split of eval_dataset when a DatasetDict"}
    )
    max_train_samples: int | None = field(
        default=None, metadata={"help": "use only the first N training rows"}
    )
    train_tasks: list[str] | None = field(
        default=None,
        metadata={"help": "train (and evaluate) only on rows of these tasks, e.g. CLEAN for the SFT start"},
    )

    def __post_init__(self):
        from cavpref.data import ALL_TASKS

        unknown = sorted(set(self.train_tasks or ()) - set(ALL_TASKS))
        if unknown:
            raise ValueError(
                f"DataArguments.train_tasks: unknown task(s) {unknown}; choose from {list(ALL_TASKS)}"
            )


def split_argv(argv: list[str]) -> tuple[str | None, list[str], list[str]]:
    """(recipe path, top-level overrides, ``--model.key value`` overrides rewritten as ``--key value``)."""
    argv = list(argv)
    recipe = None
    if argv and not argv[0].startswith("-"):
        recipe = argv.pop(0)
    if "--config" in argv:
        i = argv.index("--config")
        recipe = argv[i + 1]
        del argv[i : i + 2]
    top, model = [], []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith(f"--{SECTION}."):
            key, eq, value = arg[len(SECTION) + 3 :].partition("=")
            model.append(f"--{key}")
            if eq:
                model.append(value)
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                model.append(argv[i + 1])
                i += 1
        else:
            top.append(arg)
        i += 1
    return recipe, top, model


def parse(argv: list[str]):
    """Recipe + overrides -> (CAVPrefConfig, DataArguments, ModelConfig)."""
    from transformers import HfArgumentParser
    from trl import TrlParser

    from cavpref.config import CAVPrefConfig
    from cavpref.models.config import ModelConfig

    recipe, top, model_argv = split_argv(argv)
    config: dict = {}
    if recipe is not None:
        with open(recipe) as f:
            config = yaml.safe_load(f) or {}
        if not isinstance(config, dict):
            raise TypeError(f"{recipe}: a recipe must be a YAML mapping, got {type(config).__name__}")
    model_section = config.pop(SECTION, None) or {}
    if not isinstance(model_section, dict):
        raise TypeError(f"{recipe}: the '{SECTION}:' section must be a mapping")
    for key, value in (config.pop("env", None) or {}).items():
        os.environ[str(key)] = str(value)

    unknown = sorted(set(model_section) - {f.name for f in dataclasses.fields(ModelConfig)})
    if unknown:
        raise ValueError(f"{recipe}: unknown keys in the '{SECTION}:' section: {unknown}")
    from cavpref.recipe_types import check_recipe_types

    check_recipe_types(config, [CAVPrefConfig, DataArguments], str(recipe))
    check_recipe_types(model_section, [ModelConfig], str(recipe), prefix=f"{SECTION}.")
    parser = TrlParser([CAVPrefConfig, DataArguments])
    leftover = parser.set_defaults_with_config(**config)
    if leftover:
        raise ValueError(f"{recipe}: unknown recipe keys {leftover[::2]}")
    train_args, data_args = parser.parse_args_into_dataclasses(args=top)

    model_parser = HfArgumentParser(ModelConfig)
    model_parser.set_defaults(**model_section)
    (model_args,) = model_parser.parse_args_into_dataclasses(args=model_argv)
    if model_args.trust_remote_code and not train_args.trust_remote_code:
        train_args.trust_remote_code = True
    return train_args, data_args, model_args


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for pkg in (
        "cavpref",
        "torch",
        "transformers",
        "trl",
        "peft",
        "accelerate",
        "datasets",
        "deepspeed",
        "decord",
        "av",
    ):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


def _plain(obj):
    """A dataclass as YAML-safe data (enums and other objects as strings)."""
    d = obj.to_dict() if hasattr(obj, "to_dict") else dataclasses.asdict(obj)
    return json.loads(json.dumps(d, default=str))


def resolved_config(train_args, data_args, model_args) -> dict:
    return {**_plain(train_args), **_plain(data_args), SECTION: _plain(model_args)}


def write_run_files(output_dir: str, train_args, data_args, model_args, changed_on_resume=None) -> None:
    os.makedirs(output_dir, exist_ok=True)
    resolved = resolved_config(train_args, data_args, model_args)
    with open(os.path.join(output_dir, "run_config.yaml"), "w") as f:
        yaml.safe_dump(resolved, f, sort_keys=True)
    with open(os.path.join(output_dir, "versions.json"), "w") as f:
        json.dump(_versions(), f, indent=1)
    with open(os.path.join(output_dir, "loss.json"), "w") as f:
        json.dump(
            {**train_args.loss_summary(), "seed": train_args.seed, "data_seed": train_args.data_seed,
             **({"changed_on_resume": changed_on_resume} if changed_on_resume else {})},
            f,
            indent=1,
        )


def load_preferences(path: str, split: str, limit: int | None = None, tasks: list[str] | None = None):
    from datasets import DatasetDict, load_from_disk

    if not os.path.isdir(path):
        raise FileNotFoundError(
            f"preference dataset folder {path!r} does not exist (write it with data_prep)"
        )
    ds = load_from_disk(path)
    if isinstance(ds, DatasetDict):
        if split not in ds:
            raise KeyError(f"{path}: no split {split!r} (have {list(ds)})")
        ds = ds[split]
    if tasks:
        wanted = set(tasks)
        ds = ds.select([i for i, t in enumerate(ds["task"]) if t in wanted])
        if len(ds) == 0:
            raise ValueError(f"{path}[{split}]: no rows of tasks {sorted(wanted)}")
    if limit is not None:
        ds = ds.select(range(min(limit, len(ds))))
    return ds


def needs_reference_model(train_args, model_args) -> bool:
    """A separate frozen reference is loaded when the method compares against one, it is not precomputed,
    and it cannot be the LoRA base (full fine-tuning, or ``reference: model`` asked for explicitly)."""
    if train_args.method == "sft" or train_args.precompute_ref_log_probs:
        return False
    return train_args.reference == "model" or (train_args.reference == "auto" and model_args.lora_r <= 0)


def build_trainer(train_args, data_args, model_args, callbacks=None):
    """Load adapter + model (``cavpref.models``), make it trainable, load the data, make the trainer."""
    from transformers import set_seed

    from cavpref.models import load_adapter, prepare_model
    from cavpref.trainer import CAVPrefTrainer, JsonlLogger

    set_seed(train_args.seed)
    adapter = load_adapter(model_args)
    model = prepare_model(adapter.model, model_args, adapter)
    # Loaded through the same path as the policy (not deep-copied), so sharded loading (ZeRO-3) applies too.
    ref_model = (
        load_adapter(model_args).model.eval() if needs_reference_model(train_args, model_args) else None
    )
    train = load_preferences(
        data_args.train_dataset, data_args.train_split, data_args.max_train_samples, data_args.train_tasks
    )
    evald = (
        load_preferences(data_args.eval_dataset, data_args.eval_split, tasks=data_args.train_tasks)
        if data_args.eval_dataset
        else None
    )
    return CAVPrefTrainer(
        model,
        adapter,
        ref_model=ref_model,
        args=train_args,
        train_dataset=train,
        eval_dataset=evald,
        frames=model_args.frame_policy(),
        callbacks=[JsonlLogger(), *(callbacks or [])],
    )


def last_complete_checkpoint(output_dir: str) -> str | None:
    """The newest ``checkpoint-N`` whose ``trainer_state.json`` (written last by the Trainer) is complete.

    A run killed while writing a checkpoint leaves a partial folder; ``get_last_checkpoint`` would pick it
    and the resume would fail, so partial ones are passed over."""
    if not os.path.isdir(output_dir):
        return None
    steps = []
    for name in os.listdir(output_dir):
        head, _, num = name.partition("-")
        if head == "checkpoint" and num.isdigit():
            steps.append(int(num))
    for step in sorted(steps, reverse=True):
        path = os.path.join(output_dir, f"checkpoint-{step}")
        try:
            with open(os.path.join(path, "trainer_state.json")) as f:
                if json.load(f).get("global_step") == step:
                    return path
        except (OSError, ValueError):
            continue
    return None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    train_args, data_args, model_args = parse(argv)
    if not data_args.train_dataset:
        raise ValueError("no train_dataset: set it in the recipe or pass --train_dataset")
    if not model_args.model_name_or_path:
        raise ValueError(f"{argv[0] if not argv[0].startswith('-') else 'command line'}: model.model_name_or_path "
                         f"is required: add a '{SECTION}:' section with model_name_or_path (a folder or hub id), or "
                         "pass --model.model_name_or_path")
    resume = train_args.resume_from_checkpoint
    if resume in ("last", "auto", "true", "True"):
        resume = last_complete_checkpoint(train_args.output_dir)
    changed = None
    if resume:  # the run folder must keep saying what the run was (issue 18 #9)
        from cavpref.resume_guard import check_resume

        data_keys = [f.name for f in dataclasses.fields(DataArguments)]
        changed = check_resume(train_args.output_dir, resolved_config(train_args, data_args, model_args),
                               data_keys, train_args.allow_recipe_change, write=False)
    trainer = build_trainer(train_args, data_args, model_args)
    if trainer.accelerator.is_main_process:
        if changed:
            check_resume(train_args.output_dir, resolved_config(train_args, data_args, model_args),
                         [f.name for f in dataclasses.fields(DataArguments)], True)
        write_run_files(train_args.output_dir, train_args, data_args, model_args, changed)
    trainer.train(resume_from_checkpoint=resume)
    trainer.save_model(train_args.output_dir)
    if train_args.save_merged:
        save_merged(trainer, os.path.join(train_args.output_dir, "merged"))
    return 0


def save_merged(trainer, path: str) -> str | None:
    """A LoRA run's adapter merged into the base weights, saved as a plain checkpoint with the processor,
    so the evaluation stage loads it like any model. Done after training (it modifies the model)."""
    from accelerate.utils import is_peft_model

    model = trainer.accelerator.unwrap_model(trainer.model)
    if not is_peft_model(model):
        return None
    if trainer.is_deepspeed_enabled or trainer.is_fsdp_enabled:
        print(
            f"[cavpref] sharded run: merge the adapter offline (peft merge_and_unload) instead of into {path}"
        )
        return None
    if trainer.accelerator.is_main_process:
        merged = model.merge_and_unload(adapter_names=["default"])
        merged.save_pretrained(path)
        trainer.processing_class.save_pretrained(path)
    trainer.accelerator.wait_for_everyone()
    return path


if __name__ == "__main__":
    sys.exit(main())
