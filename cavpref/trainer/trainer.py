"""``CAVPrefTrainer``: TRL's ``DPOTrainer`` with the CAVPref objective and audio-visual rows.

Why a subclass and not a new loop: everything a HF user relies on — PEFT wrapping, reference-model preparation under
DeepSpeed / FSDP, checkpoints and resume, ``report_to`` logging, TRL's metric averaging, TRL's DPO losses — stays
TRL's. The objective itself is ``cavpref.trainer.step.CAVPrefObjective`` (``plan`` once per optimizer step,
``loss`` once per micro-batch); this class only wires TRL / Trainer hooks to it:

=========================  ================================================================================
hook                        what it does here
=========================  ================================================================================
``get_train_dataloader``    our ``PreferenceBatchSampler`` (global batches, optionally task-homogeneous)
``get_batch_samples``       Trainer draws a step's micro-batches before any forward: ``objective.plan``
``compute_loss``            ``objective.loss`` of one micro-batch; its metrics into TRL's ``_metrics``
``training_step``           a dropped step adds nothing to the logged loss (``SkippedSteps``)
``create_optimizer``        the encoders' own learning rate (``encoder_learning_rate``)
``create_scheduler``        a dropped step does not step the LR schedule (``SkippedSteps``)
``prediction_step``         evaluation is the loss and its metrics
``log``                     cumulative counts, the loss averaged over the steps that trained
``save_model``              an FSDP run's ``ModelIOStep`` root saves the model in its own layout
``train``                   skipped-row / missing-stream reports; a full disk named with the checkpoint
callbacks                   ``TrainingProgress`` (the sampler's epoch, the resume's first step)
=========================  ================================================================================

Four private hooks stay, each because TRL / Trainer has no public one at that point (docs/training.md, "Private
hooks"): ``_prepare_dataset``, ``_precompute_ref_logps``, ``_prepare_for_training``, ``_load_from_checkpoint``.

``method`` (config) selects the baseline: sft | dpo | cavpref_norobust | cavpref (paper Table 5).
"""

from __future__ import annotations

import copy
import os
from collections import Counter

import torch
from accelerate.utils import is_peft_model
from datasets import Dataset
from torch.utils.data import DataLoader
from transformers.trainer import TRAINING_ARGS_NAME
from transformers.trainer_utils import seed_worker
from trl import DPOTrainer
from trl.models import prepare_deepspeed
from trl.trainer.utils import hash_module

from cavpref.collator import (
    SLOT_FIELDS,
    BadRowError,
    CAVPrefCollator,
    PreferenceBatchSampler,
    check_dataset,
    unusable_rows_message,
)
from cavpref.config import CAVPrefConfig
from cavpref.models.base import AVModelIO
from cavpref.models.step import ModelIOStep
from cavpref.trainer.callbacks import JsonlLogger, TrainingProgress
from cavpref.trainer.checkpoint import load_full_checkpoint
from cavpref.trainer.console import use_compact_console
from cavpref.trainer.fsdp import check_fsdp_modes, fsdp_launch, full_tensor
from cavpref.trainer.optimizer_groups import encoder_parameter_ids, split_encoder_groups
from cavpref.trainer.reference import Reference, precompute_reference_logps
from cavpref.trainer.reports import write_missing_streams, write_skipped
from cavpref.trainer.skipped_steps import SkippedSteps
from cavpref.trainer.step import CAVPrefObjective, StepPlan
from cavpref.trainer.trl_dpo import NOT_MEASURED, sequence_batch

__all__ = ["CAVPrefTrainer", "JsonlLogger"]


class CAVPrefTrainer(DPOTrainer):
    """DPOTrainer for audio-visual preference data. See the module docstring.

    ``model``: the policy (a ``PreTrainedModel``, or a model id / path loaded like ``DPOTrainer`` does);
    ``model_io``: the ``AVModelIO`` that turns rows into inputs and returns summed log-probs;
    ``ref_model``: optional frozen reference (default: a frozen copy of the initial policy, the LoRA base
    when training a LoRA adapter, or nothing when log-probs are precomputed / the method is SFT).
    """

    _tag_names = ["trl", "dpo", "cavpref"]  # noqa: RUF012 - TRL's attribute, a list there too
    _name = "CAVPref"

    def __init__(
        self,
        model,
        model_io: AVModelIO,
        ref_model=None,
        args: CAVPrefConfig | None = None,
        data_collator=None,
        train_dataset=None,
        eval_dataset=None,
        processing_class=None,
        callbacks=None,
        optimizers=(None, None),
        peft_config=None,
        quantization_config=None,
        frames=None,
        sample_rate: int | None = None,
    ):
        if args is None:
            args = CAVPrefConfig("cavpref-output")
        if not isinstance(args, CAVPrefConfig):
            raise TypeError(f"args must be a CAVPrefConfig, got {type(args).__name__}")
        self.model_io = model_io
        self._skipped: list[tuple[str, str]] = []
        self._missing_streams: list[
            tuple[str, str, str]
        ] = []  # (example id, task, stream) trained without it
        self._batch_sampler: PreferenceBatchSampler | None = None
        self._reference_engine = (
            None  # DeepSpeed inference engine of the precompute pass (no reference model)
        )
        self._reference_hash: str | None = None
        for name in ("processing_class", "processor", "tokenizer"):  # saved with every checkpoint
            processing_class = processing_class or getattr(model_io, name, None)
        if processing_class is None:
            raise ValueError(
                "CAVPrefTrainer needs the tokenizer/processor: pass processing_class or give the "
                "model_io a `processor` / `tokenizer` attribute"
            )
        uses_peft = peft_config is not None or is_peft_model(model)
        if args.reference == "peft_disabled" and not uses_peft:
            raise ValueError("reference='peft_disabled' needs a PEFT model or a peft_config")
        want_model_ref = (
            args.method != "sft"
            and not args.precompute_ref_log_probs
            and (args.reference == "model" or (args.reference == "auto" and not uses_peft))
        )
        if want_model_ref and ref_model is None and not isinstance(model, str):
            # TRL would reload the policy from its path; a model built in memory has none, so copy it —
            # frozen and in eval mode, like a reference TRL loads itself.
            ref_model = copy.deepcopy(model).eval().requires_grad_(False)
        if data_collator is None:
            calibrated = [c for c, b in args.fixed_betas.items() if b is None] if args.method != "sft" else []
            data_collator = CAVPrefCollator(
                model_io=model_io,
                switches=args.switches(),
                method=args.row_method,
                calibrated=calibrated,
                media_root=args.media_root,
                frames=frames,
                skip_bad_rows=args.skip_bad_rows,
                missing_stream=args.missing_stream,
                sample_rate=sample_rate or getattr(model_io, "sample_rate", None) or 16000,
                cache_size=args.media_cache_size,
                anchor=args.anchor_response,
            )
        self._collator = data_collator
        if ref_model is not None and not isinstance(ref_model, str) and fsdp_launch():
            # TRL shards the reference as one FSDP unit: its root forward must run the whole step too.
            ref_model = ModelIOStep(ref_model, model_io)
        # SFT needs no reference at all: TRL loads none when it believes the log-probs are precomputed.
        sft_flag = args.method == "sft" and not args.precompute_ref_log_probs
        if sft_flag:
            args.precompute_ref_log_probs = True
        try:
            super().__init__(
                model,
                ref_model=ref_model,
                args=args,
                data_collator=data_collator,
                train_dataset=train_dataset,
                eval_dataset=eval_dataset,
                processing_class=processing_class,
                callbacks=callbacks,
                optimizers=optimizers,
                peft_config=peft_config,
                quantization_config=quantization_config,
            )
        finally:
            if sft_flag:
                args.precompute_ref_log_probs = False
        # TRL's DPO loss code (method: dpo) reads the reference log-probs from the batch: the objective always
        # computes them (or reads the precomputed columns) and hands them over.
        self.precompute_ref_logps = True
        self.counts: Counter = (
            Counter()
        )  # logged as count/<name>: skipped batches and steps, degenerate components
        self.skipped_steps = SkippedSteps()
        self.progress = TrainingProgress(lambda: self._batch_sampler)
        self.add_callback(self.progress)
        self.objective = CAVPrefObjective(
            args,
            model_io,
            reference=Reference(model_io, self.ref_model) if args.method != "sft" else None,
            world_size=self.accelerator.num_processes,
            device=self.accelerator.device,
            task_names=tuple(getattr(self.data_collator, "switches", None) or args.switches()),
            fields=getattr(
                self.data_collator, "fields", SLOT_FIELDS
            ),  # anchor rows' columns (anchor_response)
            dpo_loss=self._trl_dpo_loss,
        )
        self._plan: StepPlan | None = None
        # TRL's loss code checks each of its loss types (and friends) now, not at the first step
        zero, one = torch.zeros(1, device=self.accelerator.device), torch.ones(1, dtype=torch.long)
        for term in (t for t in args.terms if t.kind == "trl"):
            self._trl_dpo_loss(
                {"y_w": zero, "y_l": zero}, {"y_w": zero, "y_l": zero}, {"y_w": one, "y_l": one}, term.name
            )
        for mode in ("train", "eval"):
            self._metrics[mode].clear()
        use_compact_console(self)  # one short console line per logged step; every metric in logs.jsonl

    # ------------------------------------------------------------------ data

    def _prepare_dataset(self, dataset, processing_class, args, dataset_name):
        """[private TRL hook: TRL tokenises every dataset here and has no switch to skip it] No tokenisation (the
        model I/O does it with the media); every row's fields are checked so bad rows fail now, naming the row and
        field — or are skipped and counted when the user opted in."""
        if not isinstance(dataset, Dataset):
            return dataset  # IterableDataset: checked row by row in the collator
        keep, problems = check_dataset(dataset, self._collator, dataset_name)
        if problems and (not args.skip_bad_rows or not keep):
            calibrated = self._collator.calibrated if isinstance(self._collator, CAVPrefCollator) else ()
            raise BadRowError(
                unusable_rows_message(dataset_name, problems, len(dataset), calibrated, args.skip_bad_rows)
            )
        if problems:
            self._skipped.extend(problems)
            dataset = dataset.select(keep)
        return dataset

    def get_train_dataloader(self) -> DataLoader:
        """Our batch sampler (global batches, optionally task-homogeneous) instead of Trainer's sampler."""
        dataset = self.train_dataset
        if not isinstance(dataset, Dataset):
            return super().get_train_dataloader()
        args = self.args
        self._batch_sampler = PreferenceBatchSampler(
            dataset["task"],
            args.train_batch_size,
            world_size=self.accelerator.num_processes,
            mode=args.sampler,
            seed=args.data_seed if args.data_seed is not None else args.seed,
            drop_last=args.dataloader_drop_last,
            accumulation_steps=args.gradient_accumulation_steps,
        )
        loader = DataLoader(
            dataset,
            batch_sampler=self._batch_sampler,
            collate_fn=self.data_collator,
            num_workers=args.dataloader_num_workers,
            pin_memory=args.dataloader_pin_memory,
            persistent_workers=args.dataloader_persistent_workers and args.dataloader_num_workers > 0,
            worker_init_fn=lambda w: seed_worker(w, args.dataloader_num_workers, args.process_index),
        )
        return self.accelerator.prepare(loader)

    def _precompute_ref_logps(self, dataset, name, batch_size):
        """[private TRL hook: TRL calls it from __init__ whenever no reference model is kept; its own version caches
        two columns keyed by data + weights only] Reference log-probs of every row type, cached on disk under the
        data, the reference weights and every collator / model I/O setting (``cavpref.trainer.reference``)."""
        if self.args.method == "sft" or not self.args.precompute_ref_log_probs:
            return dataset  # (TRL's evaluate() calls it for a dataset it is handed, whatever the reference)
        if self._reference_hash is None:  # before any sharding, once for the train and eval sets
            self._reference_hash = hash_module(self.ref_model if self.ref_model is not None else self.model)
        if self.ref_model is None and self.is_deepspeed_enabled and self._reference_engine is None:
            self._reference_engine = prepare_deepspeed(self.model, self.accelerator)
        return precompute_reference_logps(
            dataset,
            name,
            reference=Reference(self.model_io, self.ref_model),
            policy=self.model,
            collator=self.data_collator,
            accelerator=self.accelerator,
            cache_dir=self.args.ref_cache_dir or os.path.join(self.args.output_dir, "ref_logps"),
            model_hash=self._reference_hash,
            batch_size=batch_size,
            num_workers=self.args.dataloader_num_workers,
            run=self._reference_engine if self.ref_model is None else None,
        )

    # ------------------------------------------------------------------ the step

    def get_batch_samples(self, epoch_iterator, num_batches, device):
        """Trainer draws a step's micro-batches here, before any forward: the objective plans the step over all of
        them and all ranks (counts, β range, exact normaliser)."""
        batches, num_items = super().get_batch_samples(epoch_iterator, num_batches, device)
        self.skipped_steps.begin(self.optimizer)
        self._plan = None
        if batches and all(b.get("empty") or "eta" in b for b in batches):
            model = self.model_wrapped if self.model_wrapped is not None else self.model
            self._plan = self.objective.plan(batches, model)
            self.counts.update(self._plan.counts)
            if self._plan.skip and self.skipped_steps.skip():
                self.counts["skipped_steps"] += 1
        return batches, num_items

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        mode = "train" if self.model.training else "eval"
        out = self.objective.loss(model, inputs, self._plan if mode == "train" else None)
        self._skipped.extend([*(inputs.get("skipped") or []), *out.skipped_rows])
        if not out.skip_step:
            self._missing_streams.extend(inputs.get("missing_streams") or [])
        self.counts.update(out.counts)
        if out.skip_step and mode == "train" and self.skipped_steps.skip():
            self.counts["skipped_steps"] += 1
        for key, values in out.metrics.items():
            self._metrics[mode][key].extend(values)
        return (out.loss, None) if return_outputs else out.loss

    def _trl_dpo_loss(self, policy, ref, tokens, loss_type: str) -> torch.Tensor:
        """TRL's ``DPOTrainer.compute_loss`` for one of its loss types on the model I/O's log-probs (``trl_dpo``);
        the objective weighs and logs each term itself (``cavpref.terms``)."""
        model, batch = sequence_batch(policy, ref, tokens)
        self.loss_types, self.loss_weights = [loss_type], [1.0]  # the attributes TRL's loss code reads
        loss = super().compute_loss(model, batch)
        for key in NOT_MEASURED:  # statistics of a forward TRL did not run (cavpref/trainer/trl_dpo.py)
            self._metrics["train" if self.model.training else "eval"].pop(key, None)
        return loss

    def training_step(self, model, inputs, num_items_in_batch=None):
        was_skipped = self.skipped_steps.skipped
        loss = super().training_step(model, inputs, num_items_in_batch)
        return self.skipped_steps.logged_loss(loss, was_skipped)

    def create_optimizer(self, model=None):
        """Trainer's optimizer; with ``encoder_learning_rate`` the encoder / projector parameters of each group move
        into a copy of that group with their own ``lr`` (``cavpref.trainer.optimizer_groups``)."""
        optimizer = super().create_optimizer(model)
        lr = self.args.encoder_learning_rate
        if lr is None:
            return optimizer
        io = self.model_io
        names = (*io.vision_modules, *io.audio_modules, *io.projector_modules)
        ids = encoder_parameter_ids(self.model if model is None else model, names)
        if not split_encoder_groups(optimizer, ids, lr):
            raise ValueError(
                f"encoder_learning_rate={lr}: no trainable parameter under {list(names)} "
                "(set freeze_vision / freeze_audio false or train_projectors true)"
            )
        return optimizer

    def create_scheduler(self, num_training_steps: int, optimizer=None):
        """Trainer's LR scheduler, not stepped on a dropped optimizer step (``SkippedSteps``)."""
        super().create_scheduler(num_training_steps, optimizer)
        self.lr_scheduler = self.skipped_steps.scheduler(self.lr_scheduler)
        return self.lr_scheduler

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
        """Evaluation is the loss and its metrics (there are no logits to hand to compute_metrics)."""
        with torch.no_grad(), self.compute_loss_context_manager():
            loss = self.compute_loss(model, inputs)
        return loss.detach(), None, None

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        mode = "train" if self.model.training else "eval"
        for key, value in self.counts.items():
            self._metrics[mode][f"count/{key}"] = [float(value)]
        # Trainer averages the loss over the optimizer steps since the last log; dropped ones added nothing.
        dropped, progress = self.skipped_steps, self.progress
        if "loss" in logs:
            steps = self.state.global_step - progress.last_loss_log
            if dropped.window:
                kept = steps - dropped.window
                if kept > 0:
                    logs["loss"] = logs["loss"] * steps / kept
                else:
                    del logs["loss"]
            dropped.window, progress.last_loss_log = 0, self.state.global_step
        if "train_loss" in logs and dropped.total:
            trained = self.state.global_step - progress.start_step
            kept = trained - dropped.total
            logs["train_loss"] = logs["train_loss"] * trained / kept if kept > 0 else float("nan")
        super().log(logs, start_time)

    # ------------------------------------------------------------------ FSDP, saving, resuming

    def _prepare_for_training(self, max_steps, train_dataloader, resume_from_checkpoint):
        """[private Trainer hook: the one place between Trainer's own set-up of the model (activation checkpointing,
        special tokens) and ``accelerator.prepare``] Under FSDP the prepared root is a ``ModelIOStep`` around the
        policy (cavpref.models.step): every encoder / embedding / dummy call of a step runs inside its forward."""
        if self.is_fsdp_enabled and not isinstance(self.model, ModelIOStep):
            check_fsdp_modes(self)
            self.model = self.model_wrapped = ModelIOStep(self.model, self.model_io)
        return super()._prepare_for_training(max_steps, train_dataloader, resume_from_checkpoint)

    def save_model(self, output_dir: str | None = None, _internal_call: bool = False) -> None:
        """A ``ModelIOStep`` root (FSDP) saves its model in the model's own layout (``save_pretrained``, no ``model.``
        key prefix), so checkpoints and the final model load like any other run's; everything else is Trainer's."""
        if not isinstance(self.model, ModelIOStep):
            return super().save_model(output_dir, _internal_call)
        output_dir = output_dir or self.args.output_dir
        if "FULL_STATE_DICT" not in str(self.accelerator.state.fsdp_plugin.state_dict_type):
            return None  # sharded: Trainer writes the shards with the optimizer state (_save_checkpoint)
        # on every rank (gathering a DTensor is a collective), in the model's layout
        state = {
            k.removeprefix("model."): full_tensor(v)
            for k, v in self.accelerator.get_state_dict(self.model).items()
        }
        if self.args.should_save:
            os.makedirs(output_dir, exist_ok=True)
        self.model.model.save_pretrained(output_dir, state_dict=state, is_main_process=self.args.should_save)
        if self.args.should_save:
            self.processing_class.save_pretrained(output_dir)
            torch.save(self.args, os.path.join(output_dir, TRAINING_ARGS_NAME))
        if self.args.push_to_hub and not _internal_call:
            self.push_to_hub(commit_message="Model save", revision=self.args.hub_revision)
        return None

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
        """[private Trainer hook: Trainer loads a full checkpoint's raw state dict with strict=False, and
        transformers 5 saves Qwen2.5-Omni in its original key layout (1 of 61 keys match): the resume would silently
        restart from the initial weights] Full checkpoints load through ``from_pretrained``
        (``cavpref.trainer.checkpoint``), the rest as Trainer does."""
        if not load_full_checkpoint(self, resume_from_checkpoint, model):
            super()._load_from_checkpoint(resume_from_checkpoint, model)

    def create_model_card(self, model_name=None, dataset_name=None, tags=None, **kwargs):
        """The README.md TRL writes at every checkpoint and the Trainer uploads with ``push_to_hub``: cavpref's
        card (``cavpref.cards.run_card``: base model, method, λ / β / robust settings, data, metrics, recipe)."""
        if self.is_world_process_zero():
            from cavpref.cards import run_card

            card = run_card(self, model_name, [tags] if isinstance(tags, str) else tags or ())
            card.save(os.path.join(self.args.output_dir, "README.md"))

    def train(self, *args, **kwargs):
        try:
            result = super().train(*args, **kwargs)
        except (OSError, RuntimeError) as err:
            # torch.save reports a full disk as an opaque "basic_ios::clear: iostream error": say so, with the
            # checkpoint being written (the resume then takes the last complete one)
            from cavpref.safety import disk_full_error

            full = disk_full_error(err, self._checkpoint_in_progress())
            if full is None:
                raise
            raise full from err
        self.report_skipped()
        self.report_missing_streams()
        return result

    def _checkpoint_in_progress(self) -> str:
        """The checkpoint folder of the current step when it exists without its trainer state (written last)."""
        path = os.path.join(self.args.output_dir, f"checkpoint-{self.state.global_step}")
        done = os.path.isfile(os.path.join(path, "trainer_state.json"))
        return path if os.path.isdir(path) and not done else self.args.output_dir

    # ------------------------------------------------------------------ reporting

    def report_missing_streams(self) -> dict[str, dict[str, int]]:
        """Examples trained without a stream their spec keeps, per task and stream (``missing_streams.json``)."""
        return write_missing_streams(self.accelerator, self.args.output_dir, self._missing_streams)

    def report_skipped(self) -> list[tuple[str, str]]:
        """All ranks' skipped rows, de-duplicated (``skipped_rows.json``)."""
        return write_skipped(self.accelerator, self.args.output_dir, self._skipped, self.args.skip_bad_rows)
