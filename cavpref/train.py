"""``cavpref train RECIPE.yaml [overrides]`` — one recipe, one run folder.

A recipe is YAML data (``yaml.safe_load``; nothing in it is executed) with flat keys: the training / loss keys
of ``CAVPrefConfig`` (a ``DPOConfig``), the data keys of ``DataArguments`` and the model keys of
``cavpref.models.config.AVModelArguments``. No name repeats across the three, so one ``TrlParser``
(``cavpref.parsing.parse_args``) reads them all and every key is also a command-line override::

    cavpref train recipes/tiny/cavpref.yaml --lambda_a 0.5 --beta_y 0.2 --lora_r 8
    cavpref train --config recipes/tiny/cavpref.yaml --num_frames 2
    cavpref train recipes/tiny/cavpref.yaml --help      # cavpref's keys (--help_all: TRL's / transformers' too)

A nested ``model:`` section or a ``--model.key`` override is refused with a one-line error naming the flat key.

The output folder gets ``run_config.yaml`` (the resolved config of all sections), ``versions.json``,
``loss.json`` (the resolved loss / switch table), ``logs.jsonl``, the HF checkpoints and ``README.md`` (the model
card, ``cavpref/cards.py``; TRL's ``push_to_hub`` keys upload it with the model). A rerun into a folder holding
the run's checkpoints resumes from the last complete one (``cavpref/run_folder.py``); ^C prints the command that
does it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import sys
from dataclasses import dataclass, field
from typing import ClassVar

import yaml
from transformers.utils import logging

from cavpref import interrupts
from cavpref.manifest import prep_manifest, resolve_switch_table
from cavpref.parsing import config_argv, load_yaml, parse_args
from cavpref.run_folder import (  # noqa: F401 - checkpoint_to_resume, last_complete_checkpoint: public here
    TrainingInterrupted,
    checkpoint_step,
    checkpoint_to_resume,
    close_progress_bars,
    interrupted_line,
    last_complete_checkpoint,
    set_aside_logs,
    start_checkpoint,
)

logger = logging.get_logger(__name__)


# the split prep holds out for evaluation (data_prep's SPLITS: train, validation, test); training on it is refused
HELD_OUT_SPLIT = "test"


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

    # Trust during training (``cavpref.eval.during_training``): a fixed held-out slice of AVTrustBench items
    # scored in likelihood mode every N steps, so a λ / β ablation shows trust curves, not only a final number.
    trust_eval_data: str | None = field(
        default=None,
        metadata={
            "help": "prep folder whose AVTrustBench items are scored during training (trust_eval_steps)"
        },
    )
    trust_eval_steps: int = field(
        default=0,
        metadata={
            "help": "every N optimizer steps (and at the end), score trust_eval_data: paired trust, false "
            "abstention, separation, CLEAN into logs.jsonl and every report_to logger; 0 = off"
        },
    )
    trust_eval_split: str = field(
        default="validation", metadata={"help": "split of trust_eval_data's items (test stays held out)"}
    )
    trust_eval_limit: int = field(
        default=8, metadata={"help": "first N items of each task and setting (CLEAN twins included)"}
    )
    trust_eval_option_score: str = field(
        default="per_token", metadata={"help": "how options are read: per_token | sum | letter"}
    )

    # keys that may change on resume (cavpref/resume_guard.py), with why
    MAY_CHANGE_ON_RESUME: ClassVar[dict[str, str]] = dict.fromkeys(
        # the trust_eval_* keys read from the class body above, so a new one cannot be forgotten here
        ("eval_dataset", "eval_split", *(k for k in locals() if k.startswith("trust_eval_"))),
        "evaluation only: the trained weights do not depend on it",
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
        # 0 ended in a bare StopIteration from TRL
        if self.max_train_samples is not None and self.max_train_samples < 1:
            raise ValueError(
                f"DataArguments.max_train_samples must be >= 1 or unset (all rows), got {self.max_train_samples}"
            )
        if (
            self.train_split == HELD_OUT_SPLIT
            and manifest
            and (manifest.get("config") or {}).get("test_fraction")
        ):
            raise ValueError(
                f"DataArguments.train_split {self.train_split!r}: {path} says prep held these clips out for "
                f"evaluation (test_fraction {manifest['config']['test_fraction']}); train on 'train' (cavpref "
                "eval reads the test split)"
            )
        if self.trust_eval_steps < 0 or self.trust_eval_limit < 1:
            raise ValueError("DataArguments.trust_eval_steps must be >= 0 and trust_eval_limit >= 1")
        if self.trust_eval_steps and not self.trust_eval_data:
            raise ValueError(
                "DataArguments.trust_eval_steps: name the prep folder to score (trust_eval_data)"
            )
        unknown = sorted(set(self.train_tasks or ()) - set(task_registry.task_names()))
        if unknown:
            raise ValueError(
                f"DataArguments.train_tasks: unknown task(s) {unknown}; choose from "
                f"{list(task_registry.task_names())}"
            )


# The model keys of the nested ``model:`` section early recipes had, where their flat name differs (one-line errors).
_NESTED_RENAMED = {
    "max_length": "model_max_length",
    "adapter": "model_io",
    "gradient_checkpointing": "activation_checkpointing",
}


def _nested_error(where: str, keys) -> ValueError:
    flat = ", ".join(f"model.{k} -> {_NESTED_RENAMED.get(k, k)}" for k in keys)
    return ValueError(f"{where}: no nested 'model:' keys; write them flat at the top level ({flat})")


def check_recipe(argv: list[str]) -> None:
    """Before any dataclass is built (a config's own check, e.g. bf16 on CPU, would hide a typo): the recipe is a
    YAML mapping of known flat keys and no override uses the nested ``--model.key`` form."""
    argv = config_argv(argv)
    nested = [a[len("--model.") :].partition("=")[0] for a in argv if a.startswith("--model.")]
    if nested:
        raise _nested_error("command line", nested)
    if "--config" in argv and argv.index("--config") + 1 < len(argv):
        path = argv[argv.index("--config") + 1]
        if not os.path.isfile(path):
            what = "is a folder, not a recipe file" if os.path.isdir(path) else "no such recipe file"
            raise FileNotFoundError(f"{path}: {what} (recipes/tiny/*.yaml are examples)")
        config = load_yaml(path)  # aliases bounded (issue 40 #22)
        if not isinstance(config, dict):
            got = "an empty file" if config is None else type(config).__name__
            raise ValueError(f"{path}: a recipe must be a YAML mapping of keys, got {got}")
        if isinstance(config.get("model"), dict):
            raise _nested_error(path, list(config["model"]))
        unknown = sorted(set(config) - _recipe_keys() - {"env"})
        if unknown:
            raise ValueError(f"{path}: unknown recipe key(s) {unknown} (see cavpref train --help)")
        # value types: parse_args (cavpref.parsing.check_config), for every command


def recipe_classes() -> tuple[type, ...]:
    """The configuration classes of a ``cavpref train`` recipe, one flat namespace (``CAVPrefConfig`` with TRL's and
    HF's inherited fields, ``DataArguments``, ``AVModelArguments``): parsing, type checks, run identity."""
    from cavpref.config import CAVPrefConfig
    from cavpref.models.config import AVModelArguments

    return (CAVPrefConfig, DataArguments, AVModelArguments)


def _recipe_keys() -> set[str]:
    return {f.name for t in recipe_classes() for f in dataclasses.fields(t) if f.init}


def parse(argv: list[str]):
    """Recipe + overrides -> (CAVPrefConfig, DataArguments, AVModelArguments): one flat namespace, parsed by
    ``cavpref.parsing.parse_args`` (TRL's ``TrlParser``: ``--config``, overrides, ``env:``, unknown keys fail)."""
    check_recipe(argv)
    train_cls, data_cls, model_cls = recipe_classes()
    # DataArguments first: the dataset's manifest declares its tasks before the switch_table is checked
    data_args, train_args, model_args = parse_args(
        [data_cls, train_cls, model_cls], argv, prog="cavpref train"
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


def write_run_files(
    output_dir: str, train_args, resolved: dict, changed_on_resume=None, switch_source=None
) -> None:
    """``resolved``: the run's config as parsed (``resolved_config``), before the trainer is built (TRL adjusts a
    few arguments in place while it sets up; the record is what the recipe asked for)."""
    os.makedirs(output_dir, exist_ok=True)
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


def load_preferences(
    path: str,
    split: str,
    limit: int | None = None,
    tasks: list[str] | None = None,
    key: str = "train_dataset",
):
    from datasets import DatasetDict, load_from_disk

    if not os.path.isdir(path):
        raise FileNotFoundError(
            f"preference dataset folder {path!r} does not exist (write it with data_prep)"
        )
    if not any(os.path.isfile(os.path.join(path, f)) for f in ("dataset_dict.json", "state.json")):
        prefs = os.path.join(path, "preferences")
        if os.path.isfile(os.path.join(prefs, "dataset_dict.json")):
            raise ValueError(
                f"{key} {path!r} is a `cavpref prep` folder: pass its preferences, --{key} {prefs}"
            )
        raise ValueError(
            f"{key} {path!r}: not a `datasets` folder (no dataset_dict.json or state.json); train_dataset is "
            "the preferences/ folder `cavpref prep` writes (or `cavpref data import` output)"
        )
    ds = load_from_disk(path)
    if isinstance(ds, DatasetDict):
        if split not in ds:
            raise KeyError(f"{path}: no split {split!r} (have {list(ds)})")
        ds = ds[split]
    if "chosen" not in ds.column_names and {"question", "option_letters"} <= set(ds.column_names):
        raise ValueError(
            f"{path}[{split}]: holds benchmark items (columns question, option_letters, answer), not preference "
            "rows (prompt, chosen, rejected): train_dataset is prep's preferences/ folder; benchmark/ is for "
            "cavpref eval"
        )
    if tasks:
        wanted = set(tasks)
        ds = ds.select([i for i, t in enumerate(ds["task"]) if t in wanted])
        if len(ds) == 0:
            raise ValueError(f"{path}[{split}]: no rows of tasks {sorted(wanted)}")
    if limit is not None:
        ds = ds.select(range(min(limit, len(ds))))
    if len(ds) == 0:
        raise ValueError(f"{path}[{split}]: no rows to train on")
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
        load_preferences(
            data_args.eval_dataset, data_args.eval_split, tasks=data_args.train_tasks, key="eval_dataset"
        )
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
        callbacks=[JsonlLogger(), interrupts.InterruptCheck(), *(callbacks or [])],
    )


def check_paths(train_args, data_args, model_args) -> None:
    """Every path of the recipe, before the model loads (a missing one costs no model load or hub retry)."""
    from cavpref.models.registry import check_model_path

    if not data_args.train_dataset:
        raise ValueError("no train_dataset: set it in the recipe or pass --train_dataset")
    for key, path in (
        ("train_dataset", data_args.train_dataset),
        ("eval_dataset", data_args.eval_dataset),
        ("media_root", train_args.media_root),
    ):
        if path and not os.path.isdir(path):
            raise FileNotFoundError(f"{key} {path!r}: no such folder")
    # the data's kind, split and row count (memory-mapped: cheap), before a model load of minutes
    rows = len(
        load_preferences(
            data_args.train_dataset, data_args.train_split, data_args.max_train_samples, data_args.train_tasks
        )
    )
    step = (
        train_args.per_device_train_batch_size
        * train_args.world_size
        * train_args.gradient_accumulation_steps
    )
    if step > rows:  # the sampler fills an optimizer batch by wrapping around (as DistributedSampler does)
        logger.warning(
            f"{data_args.train_dataset}: {rows} training rows but {step} per optimizer step "
            f"(per_device_train_batch_size {train_args.per_device_train_batch_size} x {train_args.world_size} "
            f"process(es) x gradient_accumulation_steps {train_args.gradient_accumulation_steps}): every step "
            "repeats rows"
        )
    check_model_path(model_args.model_name_or_path)


# What a recipe, its paths or its data get wrong: one line each (``--debug``: the traceback).
USER_ERRORS = (ValueError, FileNotFoundError, KeyError)


def main(argv: list[str] | None = None, *, extensions=(), interrupt_line: bool = True) -> int:
    """``cavpref train``; an error in the recipe, a path or the data is one line on stderr and exit code 2
    (``--debug`` anywhere on the command line: the traceback instead). ^C: one line naming the checkpoint and
    the command that resumes, exit 130 (``interrupt_line=False``: the ``KeyboardInterrupt`` goes on to the
    caller, e.g. the quickstart, which says how to resume it). ``extensions``: see ``run``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    if not argv:
        print(__doc__)
        return 0
    try:
        with (
            interrupts.catch_interrupts()
        ):  # a ^C swallowed on its way up (a DataLoader's __del__) is raised again
            return run(argv, extensions=extensions)
    except KeyboardInterrupt as err:
        if debug or not interrupt_line:
            raise
        close_progress_bars()  # else tqdm redraws its bar under the line at exit
        print(interrupted_line("cavpref train", argv, err), file=sys.stderr)
        return 130
    except USER_ERRORS as err:
        if debug:
            raise
        message = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"cavpref train: error: {message} (--debug: the traceback)", file=sys.stderr)
        return 2


def run(argv: list[str], *, extensions=()) -> int:
    """The run itself: parse, check the paths, train, save.

    ``extensions``: functions ``(trainer, data_args, model_args) -> list of TrainerCallback`` added once the trainer is
    built. The core trains without the stages; ``cavpref train`` (``cavpref.apps.train``) passes the trust
    evaluation of ``cavpref.eval`` this way, which the core may not import (tests/core/test_layering.py)."""
    train_args, data_args, model_args = parse(argv)
    if data_args.trust_eval_steps and not extensions:
        raise ValueError(
            "trust_eval_steps: the trust evaluation runs under `cavpref train` or scripts/train.py "
            "(cavpref.apps.train.main), not cavpref.train.main"
        )
    check_paths(train_args, data_args, model_args)
    from cavpref.output_dir import claim_output_dir, release_output_dir

    # never a user's folder, the model's or the data's own, or a source checkout; one run per folder (issue 40)
    train_args.output_dir = claim_output_dir(
        train_args.output_dir,
        "train",
        overwrite=train_args.overwrite_output_dir,
        inputs={
            "model_name_or_path": model_args.model_name_or_path,
            "train_dataset": data_args.train_dataset,
            "eval_dataset": data_args.eval_dataset,
        },
        markers=("run_config.yaml", "trainer_state.json"),
    )
    switch_source = resolve_switch_table(train_args, data_args)
    logger.warning(f"switch table (eta, gamma per task): {switch_source}")
    # a rerun into the folder resumes from its last complete checkpoint, never trains over them (issue 54 #1)
    resume = start_checkpoint(
        train_args.output_dir, train_args.resume_from_checkpoint, train_args.overwrite_output_dir
    )
    if resume and not train_args.resume_from_checkpoint:
        logger.warning(
            f"{train_args.output_dir} holds this run's checkpoints: resuming from {resume} (to start from "
            "step 1, choose a new output_dir)"
        )
    from cavpref.cpu import pin_cpu

    pin_cpu(train_args.num_threads, train_args.cpu_isa)
    from cavpref.resume_guard import check_checkpoint_run, check_resume

    resolved, changed = resolved_config(train_args, data_args, model_args), None
    if resume:  # the run folder must keep saying what the run was (issue 18 #9)
        check_checkpoint_run(
            resume, train_args.output_dir, resolved, recipe_classes(), train_args.allow_recipe_change
        )
        changed = check_resume(
            train_args.output_dir, resolved, recipe_classes(), train_args.allow_recipe_change, write=False
        )
    trainer = build_trainer(train_args, data_args, model_args)
    for extend in extensions:
        for callback in extend(trainer, data_args, model_args) or ():
            trainer.add_callback(callback)
    if trainer.accelerator.is_main_process:
        if changed:
            check_resume(train_args.output_dir, resolved, recipe_classes(), True)
        write_run_files(train_args.output_dir, train_args, resolved, changed, switch_source)
        undone = set_aside_logs(train_args.output_dir, checkpoint_step(resume))
        if undone:
            logger.warning(
                f"logs.jsonl: {undone} record(s) of steps after step {checkpoint_step(resume)}, trained again "
                f"now, moved to {os.path.join(train_args.output_dir, 'logs.undone.jsonl')}"
            )
    try:
        trainer.train(resume_from_checkpoint=resume)
        interrupts.check()  # a ^C swallowed while the last epoch's DataLoader workers joined
        trainer.save_model(train_args.output_dir)
        trainer.save_state()  # trainer_state.json in the run folder: the whole log history (margins, β, ...)
        trainer.create_model_card()  # README.md of the final model (cavpref/cards.py)
        if train_args.save_merged:
            save_merged(trainer, os.path.join(train_args.output_dir, "merged"))
    except KeyboardInterrupt:
        raise TrainingInterrupted(train_args.output_dir, trainer.state.global_step) from None
    # Trackers closed and, under a launcher, the process group destroyed before the interpreter exits (a gloo
    # group left to interpreter teardown sometimes aborted a rank after training: "terminate called without an
    # active exception"). Every rank first waits for the others: a rank that destroyed its group while rank 0
    # was still writing the model shards was aborted the same way (seen once in the suite). The DDP wrapper
    # holds the group too, from the trainer's and the accelerator's reference cycles: destroying the group
    # while it lives left the gloo threads to the interpreter's teardown all the same, so the trainer goes
    # first (free_memory drops the accelerator's references and runs the garbage collector).
    accelerator = trainer.accelerator
    accelerator.wait_for_everyone()
    del trainer
    accelerator.free_memory()
    accelerator.end_training()
    release_output_dir(train_args.output_dir)
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
