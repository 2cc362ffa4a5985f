"""``cavpref train RECIPE.yaml [overrides]`` — one recipe, one run folder.

A recipe is YAML data (``yaml.safe_load``; nothing in it is executed) with flat keys: the training / loss keys
of ``CAVPrefConfig`` (a ``DPOConfig``), the data keys of ``DataArguments`` and the model keys of
``cavpref.models.config.AVModelArguments``. No name repeats across the three, so one ``TrlParser``
(``cavpref.parsing.parse_args``) reads them all and every key is also a command-line override::

    cavpref train recipes/tiny/cavpref.yaml --lambda_a 0.5 --beta_y 0.2 --lora_r 8
    cavpref train --config recipes/tiny/cavpref.yaml --num_frames 2
    cavpref train recipes/tiny/cavpref.yaml --help      # every key of the three sections

Recipes written before the flat layout (a nested ``model:`` section, ``--model.key`` overrides, the model keys
``max_length`` / ``adapter`` / ``trust_remote_code`` / ``gradient_checkpointing``) still run, with a
``FutureWarning`` naming the flat keys (``model_max_length`` / ``model_io`` / TRL's ``trust_remote_code`` /
``activation_checkpointing``).

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
import tempfile
import warnings
from dataclasses import dataclass, field

import yaml
from transformers.utils import logging

from cavpref.manifest import prep_manifest, resolve_switch_table
from cavpref.parsing import config_argv, parse_args

logger = logging.get_logger(__name__)


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
        from cavpref import task_registry

        # The dataset declares its tasks: the task table prep wrote next to it (a task added by a module of
        # its own is then known here without that module, before the recipe's switch_table is checked).
        path, manifest = prep_manifest(self.train_dataset)
        if manifest and isinstance(manifest.get("tasks"), dict):
            added = task_registry.declare_table(manifest["tasks"], where=str(path))
            if added:
                logger.info(f"{path}: declares task(s) {added}")
        unknown = sorted(set(self.train_tasks or ()) - set(task_registry.task_names()))
        if unknown:
            raise ValueError(
                f"DataArguments.train_tasks: unknown task(s) {unknown}; choose from "
                f"{list(task_registry.task_names())}"
            )


LEGACY_SECTION = "model"


def _legacy_key(key: str) -> str:
    """A key of the old nested ``model:`` section -> its flat name today."""
    from cavpref.models.config import MOVED_TO_TRAINING, RENAMED_FIELDS

    return RENAMED_FIELDS.get(key, MOVED_TO_TRAINING.get(key, key))


def _warn_legacy(where: str, keys: list[str]) -> None:
    renamed = ", ".join(f"{k} -> {_legacy_key(k)}" for k in keys if _legacy_key(k) != k)
    warnings.warn(
        f"{where}: the nested 'model:' section / --model.key overrides are deprecated; write the keys flat "
        f"at the top level of the recipe (--key value on the command line)"
        + (f"; renamed: {renamed}" if renamed else ""),
        FutureWarning,
        stacklevel=3,
    )


def flatten_legacy(argv: list[str], tmp_dir: str) -> list[str]:
    """Pre-pass for pre-0.2 recipes: a nested ``model:`` section is flattened (old names renamed) into a copy
    of the recipe under ``tmp_dir``, and ``--model.key value`` becomes ``--key value``, each with a
    ``FutureWarning`` naming the new keys. Anything else is returned unchanged for ``parse_args``."""
    argv = config_argv(argv)
    out, model_keys = [], []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--config" and i + 1 < len(argv):
            out += ["--config", _flatten_recipe(argv[i + 1], tmp_dir)]
            i += 2
            continue
        if arg.startswith(f"--{LEGACY_SECTION}."):
            key, eq, value = arg[len(LEGACY_SECTION) + 3 :].partition("=")
            model_keys.append(key)
            out.append(f"--{_legacy_key(key)}" + (f"={value}" if eq else ""))
        else:
            out.append(arg)
        i += 1
    if model_keys:
        _warn_legacy("command line", model_keys)
    return out


def _flatten_recipe(path: str, tmp_dir: str) -> str:
    with open(path) as f:
        config = yaml.safe_load(f)
    if not isinstance(config, dict):
        raise TypeError(f"{path}: a recipe must be a YAML mapping, got {type(config).__name__}")
    # Named before any dataclass is built (a config's own check, e.g. bf16 on CPU, would hide a typo).
    unknown = sorted(set(config) - _recipe_keys() - {LEGACY_SECTION, "env"})
    unknown += sorted(
        f"{LEGACY_SECTION}.{k}"
        for k in set(config.get(LEGACY_SECTION) or {})
        if _legacy_key(k) not in _recipe_keys()
    )
    if unknown:
        raise ValueError(f"{path}: unknown recipe key(s) {unknown} (see cavpref train --help)")
    _check_types(config, path)
    if LEGACY_SECTION not in config:
        return path
    section = config.pop(LEGACY_SECTION) or {}
    if not isinstance(section, dict):
        raise TypeError(f"{path}: the '{LEGACY_SECTION}:' section must be a mapping")
    _warn_legacy(path, list(section))
    for key, value in section.items():
        new = _legacy_key(key)
        if new in config and config[new] != value:
            raise ValueError(f"{path}: '{LEGACY_SECTION}.{key}' and top-level '{new}' disagree; keep one")
        config[new] = value
    flat = os.path.join(tmp_dir, os.path.basename(path))
    with open(flat, "w") as f:
        yaml.safe_dump(config, f, sort_keys=False)
    return flat


def _check_types(config: dict, path: str) -> None:
    """Values checked against their fields' annotations by key (issue 18 #16), legacy section included."""
    from cavpref.config import CAVPrefConfig
    from cavpref.models.config import AVModelArguments
    from cavpref.recipe_types import check_recipe_types

    classes = [CAVPrefConfig, DataArguments, AVModelArguments]
    check_recipe_types({k: v for k, v in config.items() if k not in (LEGACY_SECTION, "env")}, classes, path)
    section = config.get(LEGACY_SECTION)
    if isinstance(section, dict):
        check_recipe_types(
            {_legacy_key(k): v for k, v in section.items()}, classes, path, prefix=f"{LEGACY_SECTION}."
        )


def _recipe_keys() -> set[str]:
    from cavpref.config import CAVPrefConfig
    from cavpref.models.config import AVModelArguments

    return {
        f.name
        for t in (CAVPrefConfig, DataArguments, AVModelArguments)
        for f in dataclasses.fields(t)
        if f.init
    }


def parse(argv: list[str]):
    """Recipe + overrides -> (CAVPrefConfig, DataArguments, AVModelArguments): one flat namespace, parsed by
    ``cavpref.parsing.parse_args`` (TRL's ``TrlParser``: ``--config``, overrides, ``env:``, unknown keys fail)."""
    from cavpref.config import CAVPrefConfig
    from cavpref.models.config import AVModelArguments

    with tempfile.TemporaryDirectory(prefix="cavpref-recipe-") as tmp:
        # DataArguments first: the dataset's manifest declares its tasks before the switch_table is checked
        data_args, train_args, model_args = parse_args(
            [DataArguments, CAVPrefConfig, AVModelArguments], flatten_legacy(argv, tmp), prog="cavpref train"
        )
    # One field, one meaning: TRL's trust_remote_code also governs how the model I/O loads the model.
    model_args.trust_remote_code = train_args.trust_remote_code
    return train_args, data_args, model_args


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    import torch

    # the CPU code torch's kernels ran (cpu_isa: the same recipe gives other bits on other code)
    out = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }
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
    """The run's whole config, flat (one namespace, as recipes are written)."""
    return {**_plain(train_args), **_plain(data_args), **_plain(model_args)}


def defining_keys() -> list[str]:
    """Besides the loss / optimisation keys of ``resume_guard``: every data and model key defines the run, but
    the caches that give the same numbers either way (``AVModelArguments.SAME_RESULTS``)."""
    from cavpref.models.config import AVModelArguments

    return [
        f.name
        for t in (DataArguments, AVModelArguments)
        for f in dataclasses.fields(t)
        if f.name not in AVModelArguments.SAME_RESULTS
    ]


def write_run_files(
    output_dir: str, train_args, data_args, model_args, changed_on_resume=None, switch_source=None
) -> None:
    os.makedirs(output_dir, exist_ok=True)
    resolved = resolved_config(train_args, data_args, model_args)
    with open(os.path.join(output_dir, "run_config.yaml"), "w") as f:
        yaml.safe_dump(resolved, f, sort_keys=True)
    with open(os.path.join(output_dir, "versions.json"), "w") as f:
        json.dump(_versions(), f, indent=1)
    with open(os.path.join(output_dir, "loss.json"), "w") as f:
        json.dump(
            {
                **train_args.loss_summary(),
                **({"switch_table_source": switch_source} if switch_source else {}),
                "seed": train_args.seed,
                "data_seed": train_args.data_seed,
                **({"changed_on_resume": changed_on_resume} if changed_on_resume else {}),
            },
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
    """Load model_io + model (``cavpref.models``), make it trainable, load the data, make the trainer."""
    from transformers import set_seed

    from cavpref.models import load_model_io, prepare_model
    from cavpref.trainer import CAVPrefTrainer, JsonlLogger

    set_seed(train_args.seed)
    model_io = load_model_io(model_args)
    model = prepare_model(model_io.model, model_args, model_io)
    # Loaded through the same path as the policy (not deep-copied), so sharded loading (ZeRO-3) applies too.
    ref_model = (
        load_model_io(model_args).model.eval() if needs_reference_model(train_args, model_args) else None
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
        model_io,
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
    if not argv:
        print(__doc__)
        return 0
    train_args, data_args, model_args = parse(argv)
    if not data_args.train_dataset:
        raise ValueError("no train_dataset: set it in the recipe or pass --train_dataset")
    if not model_args.model_name_or_path:
        raise ValueError(
            f"{argv[0] if not argv[0].startswith('-') else 'command line'}: model_name_or_path "
            "is required: add `model_name_or_path: <folder or hub id>` to the recipe, or pass "
            "--model_name_or_path"
        )
    switch_source = resolve_switch_table(train_args, data_args)
    logger.warning(f"switch table (eta, gamma per task): {switch_source}")
    resume = train_args.resume_from_checkpoint
    if resume in ("last", "auto", "true", "True"):
        resume = last_complete_checkpoint(train_args.output_dir)
    from cavpref.cpu import pin_cpu

    pin_cpu(train_args.num_threads, train_args.cpu_isa)
    changed = None
    if resume:  # the run folder must keep saying what the run was (issue 18 #9)
        from cavpref.resume_guard import check_resume

        changed = check_resume(
            train_args.output_dir,
            resolved_config(train_args, data_args, model_args),
            defining_keys(),
            train_args.allow_recipe_change,
            write=False,
        )
    trainer = build_trainer(train_args, data_args, model_args)
    if trainer.accelerator.is_main_process:
        if changed:
            check_resume(
                train_args.output_dir,
                resolved_config(train_args, data_args, model_args),
                defining_keys(),
                True,
            )
        write_run_files(train_args.output_dir, train_args, data_args, model_args, changed, switch_source)
    trainer.train(resume_from_checkpoint=resume)
    trainer.save_model(train_args.output_dir)
    trainer.save_state()  # trainer_state.json in the run folder: the whole log history (margins, β, ...)
    if train_args.save_merged:
        save_merged(trainer, os.path.join(train_args.output_dir, "merged"))
    # Trackers closed and, under a launcher, the process group destroyed before the interpreter exits (a gloo
    # group left to interpreter teardown sometimes aborted a rank after training: "terminate called without an
    # active exception"). Every rank first waits for the others: a rank that destroyed its group while rank 0
    # was still writing the model shards was aborted the same way (seen once in the suite).
    trainer.accelerator.wait_for_everyone()
    trainer.accelerator.end_training()
    return 0


def save_merged(trainer, path: str) -> str | None:
    """A LoRA run's adapter merged into the base weights, saved as a plain checkpoint with the processor,
    so the evaluation stage loads it like any model. Done after training (it modifies the model)."""
    from accelerate.utils import is_peft_model

    model = trainer.accelerator.unwrap_model(trainer.model)
    if not is_peft_model(model):
        return None
    if trainer.is_deepspeed_enabled or trainer.is_fsdp_enabled:
        logger.warning(
            f"sharded run: merge the LoRA adapter offline (peft merge_and_unload) instead of into {path}"
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
