"""``CAVPrefTrainer``: TRL's ``DPOTrainer`` with the CAVPref objective and audio-visual rows.

Why a subclass and not a new loop: everything a HF user relies on — PEFT wrapping, reference-model
preparation under DeepSpeed / FSDP, checkpoints and resume, ``report_to`` logging, ``_metrics`` — stays
TRL's. What changes:

* the data: preference rows with media (MediaSpec JSON) and anchor pairs; ``_prepare_dataset`` does not
  tokenise, it validates fields (raise, or count a skip when ``skip_bad_rows``); the ``CAVPrefCollator``
  decodes media and builds only the rows some loss term needs, through the model's ``AVModelIO``;
* ``compute_loss``: one concatenated policy forward and one reference forward (or precomputed values, or
  the LoRA adapter disabled) over those rows, then the pure ``cavpref.loss`` functions. The robust
  normaliser and β's min-max see the *global* batch through ``accelerator.gather``; the loss's surrogate
  makes DDP's gradient averaging give the one-process gradient;
* the sampler: ``PreferenceBatchSampler`` (mixed or task-homogeneous global batches);
* ``_precompute_ref_logps``: reference log-probs of every row type (anchors included), cached on disk
  under the dataset fingerprint + model hash.

This module is the subclass and its TRL hooks; the pieces live next to it, one job each: ``gather`` (global-batch
gathers), ``reference`` (reference forward context, precomputed cache), ``metrics`` (the logged names),
``checkpoint`` (resuming full checkpoints), ``callbacks`` (``JsonlLogger``), ``objective`` (the SFT and
preference losses of a micro-batch), ``optimizer_step`` and ``step`` (the optimizer batch as the unit),
``reports`` (skipped rows, missing streams), ``fsdp``.

``method`` (config) selects the baseline: sft | dpo | cavpref_norobust | cavpref (paper Table 5).
"""

from __future__ import annotations

import copy
import os
from collections import defaultdict

import torch
from accelerate.utils import is_peft_model
from datasets import Dataset
from torch.utils.data import DataLoader
from transformers.trainer_utils import seed_worker
from transformers.utils import logging
from trl import DPOTrainer

from cavpref.collator import (
    SLOT_FIELDS,
    BadRowError,
    CAVPrefCollator,
    PreferenceBatchSampler,
    check_example,
    unusable_rows_message,
)
from cavpref.config import CAVPrefConfig
from cavpref.models.base import AVModelIO
from cavpref.models.step import ModelIOStep
from cavpref.trainer.callbacks import JsonlLogger
from cavpref.trainer.console import use_compact_console
from cavpref.trainer.checkpoint import load_full_checkpoint
from cavpref.trainer.fsdp import check_fsdp_modes, fsdp_launch, full_tensor
from cavpref.trainer.gather import gather_rows, unflatten
from cavpref.trainer.objective import ObjectiveMixin
from cavpref.trainer.optimizer_groups import EncoderLearningRateMixin
from cavpref.trainer.optimizer_step import OptimizerStepMixin
from cavpref.trainer.reference import precompute_reference_logps, reference_forward
from cavpref.trainer.reports import write_missing_streams, write_skipped

logger = logging.get_logger(__name__)

__all__ = ["CAVPrefTrainer", "JsonlLogger"]


class CAVPrefTrainer(EncoderLearningRateMixin, ObjectiveMixin, OptimizerStepMixin, DPOTrainer):
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
        self._switches = args.switches()
        self._batch_sampler: PreferenceBatchSampler | None = None
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
        self._needs_reference = args.method != "sft"
        want_model_ref = (
            self._needs_reference
            and not args.precompute_ref_log_probs
            and (args.reference == "model" or (args.reference == "auto" and not uses_peft))
        )
        if want_model_ref and ref_model is None and not isinstance(model, str):
            # TRL would reload the policy from its path; a model built in memory has none, so copy it —
            # frozen and in eval mode, like a reference TRL loads itself.
            ref_model = copy.deepcopy(model).eval().requires_grad_(False)
        # SFT needs no reference at all: keep DPOTrainer from loading one (restored right after __init__).
        sft_flag = args.method == "sft" and not args.precompute_ref_log_probs
        if sft_flag:
            args.precompute_ref_log_probs = True
        if data_collator is None:
            calibrated = [c for c, b in args.fixed_betas.items() if b is None] if args.method != "sft" else []
            data_collator = CAVPrefCollator(
                model_io=model_io,
                switches=self._switches,
                method=args.method,
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
        if sft_flag:
            self.precompute_ref_logps = False
        self._log_counts: dict[str, int] = defaultdict(int)
        self._warned: set = set()
        # Skipped optimizer steps (skip_bad_rows): no optimizer / scheduler step, no loss logged for them.
        self._step_skipped = False
        self._step_loss = 0.0
        self._skipped_steps_window = 0
        self._skipped_steps_total = 0
        self._last_log_step = 0
        self._step_micro, self._step_w2 = 0, {}  # micro-batches of this step done, Σ w² per component
        use_compact_console(self)  # one short console line per logged step; every metric in logs.jsonl

    # ------------------------------------------------------------------ data

    def _prepare_dataset(self, dataset, processing_class, args, dataset_name):
        """No tokenisation here (the model_io does it with the media); validate every row's fields so bad
        rows fail now, naming the row and field — or are skipped and counted when the user opted in."""
        if not isinstance(dataset, Dataset):
            return dataset  # IterableDataset: checked row by row in the collator
        collator = getattr(self, "data_collator", None) or getattr(self, "_collator", None)
        collator = collator if isinstance(collator, CAVPrefCollator) else None
        calibrated = collator.calibrated if collator is not None else ()
        columns = [c for c in dataset.column_names if c in _CHECK_COLUMNS]
        table = dataset.select_columns(columns).to_dict()
        keep, problems = [], []
        for i in range(len(dataset)):
            ex = {c: table[c][i] for c in columns}
            slots = collator.slots_for(ex) if collator is not None else ("y_w", "y_l")
            found = check_example(
                ex,
                slots,
                calibrated,
                where=f"{dataset_name} row {i}: ",
                tasks=tuple(collator.switches) if collator is not None else None,
                fields=collator.fields if collator is not None else SLOT_FIELDS,
            )
            if found:
                problems.append((str(ex.get("id", i)), "; ".join(found)))
            else:
                keep.append(i)
        if problems and (not args.skip_bad_rows or not keep):
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
        self._batch_sampler = PreferenceBatchSampler(
            dataset["task"],
            self._train_batch_size,
            world_size=self.accelerator.num_processes,
            mode=self.args.sampler,
            seed=self.args.data_seed if self.args.data_seed is not None else self.args.seed,
            drop_last=self.args.dataloader_drop_last,
            accumulation_steps=self.args.gradient_accumulation_steps,
        )
        loader = DataLoader(
            dataset,
            batch_sampler=self._batch_sampler,
            collate_fn=self.data_collator,
            num_workers=self.args.dataloader_num_workers,
            pin_memory=self.args.dataloader_pin_memory,
            persistent_workers=self.args.dataloader_persistent_workers
            and self.args.dataloader_num_workers > 0,
            worker_init_fn=lambda w: seed_worker(
                w, self.args.dataloader_num_workers, self.args.process_index
            ),
        )
        return self.accelerator.prepare(loader)

    def _run_epoch(self, model, epoch, *args, **kwargs):
        # After a resume, accelerate's skip wrapper hides our sampler from Trainer's set_epoch: set it here.
        if self._batch_sampler is not None:
            self._batch_sampler.set_epoch(epoch)
        return super()._run_epoch(model, epoch, *args, **kwargs)

    # ------------------------------------------------------------------ distributed helpers

    def _gather(self, t: torch.Tensor) -> torch.Tensor:
        """All-gather along dim 0 (lengths may differ per rank; see ``cavpref.trainer.gather``)."""
        return gather_rows(t, self.accelerator.num_processes)

    def _reference_forward(self):
        """No grad, no checkpointing, the LoRA adapter off when the base model is the reference."""
        return reference_forward(self)

    _unflatten = staticmethod(unflatten)

    # ------------------------------------------------------------------ loss

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        mode = "train" if self.model.training else "eval"
        self._skipped.extend(inputs.get("skipped") or [])
        self._missing_streams.extend(inputs.get("missing_streams") or [])
        if inputs.get("empty"):  # every row of this batch was unusable (skip_bad_rows): skip the batch
            device = next(p for p in model.parameters()).device
            self._gather(torch.tensor([1], device=device))  # the other ranks' "any bad?" vote: all skip alike
            self._log_counts["skipped_batches"] += 1
            zero = sum((p.reshape(-1)[:1] * 0).sum() for p in model.parameters() if p.requires_grad)
            return (zero, None) if return_outputs else zero
        policy, ref = self._logps(model, inputs)
        device = policy["y_w"].device

        bad = self._non_finite(inputs, policy, ref)
        any_bad = bool(self._gather(torch.tensor([len(bad)], device=device)).sum() > 0)
        if any_bad:  # decided on every rank alike: they all skip, or none does
            if not self.args.skip_bad_rows:
                raise FloatingPointError(
                    "non-finite log-probs (set skip_bad_rows to skip the batch and count it): "
                    + "; ".join(msg for _, msg in bad)
                )
            self._skipped.extend((ex_id, "batch skipped: " + msg) for ex_id, msg in bad)
            self._log_counts["skipped_batches"] += 1
            if mode == "train" and not self._step_skipped:
                # The whole optimizer step is dropped: its objective is defined over all its micro-batches.
                self._step_skipped = True
                self._log_counts["skipped_steps"] += 1
            # Zero gradient for every trainable parameter, connected so DDP's reducer sees all of them,
            # and not through the forward, so no NaN can reach the weights.
            zero = sum((p.reshape(-1)[:1] * 0).sum() for p in model.parameters() if p.requires_grad)
            return (zero, None) if return_outputs else zero

        if self.args.method == "sft":
            loss = self._sft_loss(inputs, policy, mode)
        else:
            loss = self._preference_loss(inputs, policy, ref, mode)
        return (loss, None) if return_outputs else loss

    def _logps(self, model, inputs):
        """(policy, reference) per-sample summed log-probs, {slot: (B,)}; reference None for SFT."""
        flat = self.model_io.logps(model, inputs["model_inputs"]).to(torch.float32)
        policy = self._unflatten(flat, inputs["slots"])
        if not self._needs_reference:
            ref = None
        elif "step_ref_logps" in inputs:  # computed by the exact normaliser's pass of this step
            ref = {k: v.to(flat.device) for k, v in inputs["step_ref_logps"].items()}
        elif "ref" in inputs and self.precompute_ref_logps:
            ref = {k: v.to(flat.device) for k, v in inputs["ref"].items()}
        else:
            with self._reference_forward():
                ref_model = self.ref_model if self.ref_model is not None else model
                ref = self._unflatten(
                    self.model_io.logps(ref_model, inputs["model_inputs"]).float(), inputs["slots"]
                )
        return policy, ref

    # ------------------------------------------------------------------ reference precomputation

    def _precompute_ref_logps(self, dataset, name, batch_size):
        """Reference log-probs of every row type, once, cached on disk (``cavpref.trainer.reference``)."""
        if not self._needs_reference:
            return dataset
        return precompute_reference_logps(self, dataset, name, batch_size)

    # ------------------------------------------------------------------ FSDP

    def _prepare_for_training(self, max_steps, train_dataloader, resume_from_checkpoint):
        """Under FSDP the prepared root is a ``ModelIOStep`` around the policy (see cavpref.models.step): every
        encoder / embedding / dummy call of a step then runs inside the root's forward."""
        if self.is_fsdp_enabled and not isinstance(self.model, ModelIOStep):
            check_fsdp_modes(self)
            self.model = self.model_wrapped = ModelIOStep(self.model, self.model_io)
        return super()._prepare_for_training(max_steps, train_dataloader, resume_from_checkpoint)

    def _save(self, output_dir: str | None = None, state_dict: dict | None = None) -> None:
        """A ``ModelIOStep`` root saves its model in the model's own layout (``save_pretrained``, no ``model.``
        key prefix), so checkpoints and the final model load like any other run's."""
        if not isinstance(self.model, ModelIOStep):
            return super()._save(output_dir, state_dict)
        root = self.model
        if (
            state_dict is not None
        ):  # on every rank (gathering a DTensor is a collective), in the model's layout
            state_dict = {k.removeprefix("model."): full_tensor(v) for k, v in state_dict.items()}
        self.model = root.model
        try:
            return super()._save(output_dir, state_dict)
        finally:
            self.model = root

    # ------------------------------------------------------------------ resume

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
        """Full checkpoints load through ``from_pretrained`` (``cavpref.trainer.checkpoint``), the rest as TRL."""
        if not load_full_checkpoint(self, resume_from_checkpoint, model):
            super()._load_from_checkpoint(resume_from_checkpoint, model)

    def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
        """Evaluation is the loss and its metrics (there are no logits to hand to compute_metrics)."""
        inputs = self._prepare_inputs(inputs)
        with torch.no_grad(), self.compute_loss_context_manager():
            loss = self.compute_loss(model, inputs)
        return loss.detach(), None, None

    # ------------------------------------------------------------------ reporting

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        mode = "train" if self.model.training else "eval"
        for k, v in self._log_counts.items():
            self._metrics[mode][f"count/{k}"] = [float(v)]
        # Trainer averages the loss over the optimizer steps since the last log; skipped ones added nothing.
        steps = self.state.global_step - self._last_log_step
        training_log = "loss" in logs
        if training_log and self._skipped_steps_window:
            kept = steps - self._skipped_steps_window
            if kept > 0:
                logs["loss"] = logs["loss"] * steps / kept
            else:
                del logs["loss"]
        if "train_loss" in logs and self._skipped_steps_total:
            trained = self.state.global_step - getattr(self, "_initial_global_step", 0)
            kept = trained - self._skipped_steps_total
            logs["train_loss"] = logs["train_loss"] * trained / kept if kept > 0 else float("nan")
        if training_log:
            self._skipped_steps_window = 0
            self._last_log_step = self.state.global_step
        super().log(logs, start_time)

    def _save_checkpoint(self, model, trial):
        """A full disk says so with the checkpoint's path (torch.save reports it as an opaque
        ``basic_ios::clear: iostream error``); the resume then takes the last complete checkpoint."""
        path = os.path.join(self._get_output_dir(trial=trial), f"checkpoint-{self.state.global_step}")
        try:
            return super()._save_checkpoint(model, trial)
        except (OSError, RuntimeError) as err:
            from cavpref.safety import disk_full_error

            full = disk_full_error(err, path)
            if full is None:
                raise
            raise full from err

    def create_model_card(self, model_name=None, dataset_name=None, tags=None, **kwargs):
        """The README.md TRL writes at every checkpoint and the Trainer uploads with ``push_to_hub``: cavpref's
        card (``cavpref.cards.run_card``: base model, method, λ / β / robust settings, data, metrics, recipe)."""
        if self.is_world_process_zero():
            from cavpref.cards import run_card

            card = run_card(self, model_name, [tags] if isinstance(tags, str) else tags or ())
            card.save(os.path.join(self.args.output_dir, "README.md"))

    def train(self, *args, **kwargs):
        result = super().train(*args, **kwargs)
        self.report_skipped()
        self.report_missing_streams()
        return result

    def report_missing_streams(self) -> dict[str, dict[str, int]]:
        """Examples trained without a stream their spec keeps, per task and stream (``missing_streams.json``)."""
        return write_missing_streams(self.accelerator, self.args.output_dir, self._missing_streams)

    def report_skipped(self) -> list[tuple[str, str]]:
        """All ranks' skipped rows, de-duplicated (``skipped_rows.json``)."""
        return write_skipped(self.accelerator, self.args.output_dir, self._skipped, self.args.skip_bad_rows)


# Columns the field check reads (anything else in the dataset is passed through untouched).
_CHECK_COLUMNS = {"id", "task", "prompt", "clap_delta", "avsm_delta_v", "avsm_delta_a"} | {
    c for fields in SLOT_FIELDS.values() for c in fields
}
