"""``CAVPrefTrainer``: TRL's ``DPOTrainer`` with the CAVPref objective and audio-visual rows.

Why a subclass and not a new loop: everything a HF user relies on — PEFT wrapping, reference-model
preparation under DeepSpeed / FSDP, checkpoints and resume, ``report_to`` logging, ``_metrics`` — stays
TRL's. What changes:

* the data: preference rows with media (MediaSpec JSON) and anchor pairs; ``_prepare_dataset`` does not
  tokenise, it validates fields (raise, or count a skip when ``skip_bad_rows``); the ``CAVPrefCollator``
  decodes media and builds only the rows some loss term needs, through the model's ``AVAdapter``;
* ``compute_loss``: one concatenated policy forward and one reference forward (or precomputed values, or
  the LoRA adapter disabled) over those rows, then the pure ``cavpref.loss`` functions. The robust
  normaliser and β's min-max see the *global* batch through ``accelerator.gather``; the loss's surrogate
  makes DDP's gradient averaging give the one-process gradient;
* the sampler: ``PreferenceBatchSampler`` (mixed or task-homogeneous global batches);
* ``_precompute_ref_logps``: reference log-probs of every row type (anchors included), cached on disk
  under the dataset fingerprint + model hash.

``method`` (config) selects the baseline: sft | dpo | cavpref_norobust | cavpref (paper Table 5).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import os
from collections import defaultdict

import torch
from accelerate.utils import broadcast_object_list, gather_object, is_peft_model
from datasets import Dataset, concatenate_datasets, load_from_disk
from datasets.fingerprint import Hasher
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import PreTrainedModel, TrainerCallback
from transformers.trainer_utils import seed_worker
from trl import DPOTrainer
from trl.models.utils import disable_gradient_checkpointing
from trl.trainer.utils import use_adapter

from cavpref.collator import (
    REF_COLUMNS,
    SLOT_FIELDS,
    SLOTS,
    BadRowError,
    CAVPrefCollator,
    PreferenceBatchSampler,
    check_example,
)
from cavpref.config import CAVPrefConfig
from cavpref.data import ALL_TASKS
from cavpref.loss import calibrate_beta, cavpref_loss
from cavpref.models.base import AVAdapter


class _Indexed(torch.utils.data.Dataset):
    """Rows with their position, so precomputed values land on the right row even when some are skipped."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, i):
        return {**self.dataset[i], "__pos": i}


class CAVPrefTrainer(DPOTrainer):
    """DPOTrainer for audio-visual preference data. See the module docstring.

    ``model``: the policy (a ``PreTrainedModel``, or a model id / path loaded like ``DPOTrainer`` does);
    ``adapter``: the ``AVAdapter`` that turns rows into inputs and returns summed log-probs;
    ``ref_model``: optional frozen reference (default: a frozen copy of the initial policy, the LoRA base
    when training an adapter, or nothing when log-probs are precomputed / the method is SFT).
    """

    _tag_names = ["trl", "dpo", "cavpref"]  # noqa: RUF012 - TRL's attribute, a list there too
    _name = "CAVPref"

    def __init__(
        self,
        model,
        adapter: AVAdapter,
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
        self.adapter = adapter
        self._skipped: list[tuple[str, str]] = []
        self._missing_streams: list[tuple[str, str, str]] = []  # (example id, task, stream) trained without it
        self._switches = args.switches()
        self._batch_sampler: PreferenceBatchSampler | None = None
        for name in ("processing_class", "processor", "tokenizer"):  # saved with every checkpoint
            processing_class = processing_class or getattr(adapter, name, None)
        if processing_class is None:
            raise ValueError(
                "CAVPrefTrainer needs the tokenizer/processor: pass processing_class or give the "
                "adapter a `processor` / `tokenizer` attribute"
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
            # TRL would reload the policy from its path; a model built in memory has none, so copy it.
            ref_model = copy.deepcopy(model)
        # SFT needs no reference at all: keep DPOTrainer from loading one (restored right after __init__).
        sft_flag = args.method == "sft" and not args.precompute_ref_log_probs
        if sft_flag:
            args.precompute_ref_log_probs = True
        if data_collator is None:
            calibrated = [c for c, b in args.fixed_betas.items() if b is None] if args.method != "sft" else []
            data_collator = CAVPrefCollator(
                adapter=adapter,
                switches=self._switches,
                method=args.method,
                calibrated=calibrated,
                media_root=args.media_root,
                frames=frames,
                skip_bad_rows=args.skip_bad_rows,
                missing_stream=args.missing_stream,
                sample_rate=sample_rate or getattr(adapter, "sample_rate", None) or 16000,
                cache_size=args.media_cache_size,
            )
        self._collator = data_collator
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

    # ------------------------------------------------------------------ data

    def _prepare_dataset(self, dataset, processing_class, args, dataset_name):
        """No tokenisation here (the adapter does it with the media); validate every row's fields so bad
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
            found = check_example(ex, slots, calibrated, where=f"{dataset_name} row {i}: ")
            if found:
                problems.append((str(ex.get("id", i)), "; ".join(found)))
            else:
                keep.append(i)
        if problems and not args.skip_bad_rows:
            shown = "\n  ".join(p for _, p in problems[:10])
            more = f"\n  ... and {len(problems) - 10} more" if len(problems) > 10 else ""
            raise BadRowError(
                f"{len(problems)} unusable preference rows in the {dataset_name} dataset "
                f"(set skip_bad_rows to skip and count them):\n  {shown}{more}"
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
        """All-gather along dim 0, tolerating different lengths per rank (skipped rows) and bool tensors."""
        if self.accelerator.num_processes == 1:
            return t
        is_bool = t.dtype == torch.bool
        x = (t.to(torch.uint8) if is_bool else t).contiguous()
        sizes = self.accelerator.gather(torch.tensor([x.shape[0]], device=x.device))
        if bool((sizes == sizes[0]).all()):
            out = self.accelerator.gather(x)
        else:
            padded = self.accelerator.pad_across_processes(x, dim=0)
            full = self.accelerator.gather(padded).view(len(sizes), -1, *x.shape[1:])
            out = torch.cat([full[r, : int(n)] for r, n in enumerate(sizes)])
        return out.bool() if is_bool else out

    @contextlib.contextmanager
    def _reference_context(self):
        """No grad, no checkpointing, and the LoRA adapter disabled when the base model is the reference."""
        ctx = contextlib.nullcontext()
        if self.ref_model is None and is_peft_model(self.accelerator.unwrap_model(self.model)):
            unwrapped = self.accelerator.unwrap_model(self.model)
            ctx = use_adapter(unwrapped, adapter_name="ref" if "ref" in unwrapped.peft_config else None)
        no_ckpt = (
            disable_gradient_checkpointing(self.model, self.args.gradient_checkpointing_kwargs)
            if self.args.gradient_checkpointing
            else contextlib.nullcontext()
        )
        with torch.no_grad(), no_ckpt, ctx:
            yield

    @staticmethod
    def _unflatten(flat: torch.Tensor, slots: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """(R,) row log-probs -> {slot: (B,)}, NaN where the sample has no such row."""
        out = {}
        for s, idx in slots.items():
            idx = idx.to(flat.device)
            vals = flat[idx.clamp(min=0)]
            out[s] = torch.where(idx >= 0, vals, torch.full_like(vals, float("nan")))
        return out

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
        flat = self.adapter.logps(model, inputs["model_inputs"]).to(torch.float32)
        policy = self._unflatten(flat, inputs["slots"])
        if not self._needs_reference:
            ref = None
        elif "ref" in inputs and self.precompute_ref_logps:
            ref = {k: v.to(flat.device) for k, v in inputs["ref"].items()}
        else:
            with self._reference_context():
                ref_model = self.ref_model if self.ref_model is not None else model
                ref = self._unflatten(
                    self.adapter.logps(ref_model, inputs["model_inputs"]).float(), inputs["slots"]
                )

        bad = self._non_finite(inputs, policy, ref)
        any_bad = bool(self._gather(torch.tensor([len(bad)], device=flat.device)).sum() > 0)
        if any_bad:  # decided on every rank alike: they all skip, or none does
            if not self.args.skip_bad_rows:
                raise FloatingPointError(
                    "non-finite log-probs (set skip_bad_rows to skip the batch and count it): "
                    + "; ".join(msg for _, msg in bad)
                )
            self._skipped.extend((ex_id, "batch skipped: " + msg) for ex_id, msg in bad)
            self._log_counts["skipped_batches"] += 1
            # Zero gradient for every trainable parameter, connected so DDP's reducer sees all of them,
            # and not through the forward, so no NaN can reach the weights.
            zero = sum((p.reshape(-1)[:1] * 0).sum() for p in model.parameters() if p.requires_grad)
            return (zero, None) if return_outputs else zero

        if self.args.method == "sft":
            loss = self._sft_loss(inputs, policy, mode)
        else:
            loss = self._preference_loss(inputs, policy, ref, mode)
        return (loss, None) if return_outputs else loss

    def _non_finite(self, inputs, policy, ref) -> list[tuple[str, str]]:
        """(example id, message naming the row and field) for every needed log-prob that is NaN / inf."""
        problems = []
        ids = inputs["example_ids"]
        for which, vals in (("policy", policy), ("reference", ref)):
            if vals is None:
                continue
            for s in SLOTS:
                need = inputs["slots"][s].to(vals[s].device) >= 0
                bad = need & ~torch.isfinite(vals[s].detach())
                for i in bad.nonzero().flatten().tolist():
                    resp, media = SLOT_FIELDS[s]
                    value = float(vals[s][i].detach())
                    msg = f"example '{ids[i]}' row {s} ({resp} under {media}): {which} log-prob is {value}"
                    problems.append((ids[i], msg))
        return problems

    def _sft_loss(self, inputs, policy, mode):
        """Token-mean NLL of the chosen response under the presented media, normalised by the global token
        count so DDP averaging reproduces the one-process gradient."""
        labels = inputs["model_inputs"].get("labels")
        if labels is None:
            raise KeyError("method=sft needs the adapter batch to carry 'labels' (response tokens != -100)")
        tokens = (labels != -100).sum(-1).to(policy["y_w"].device)
        idx = inputs["slots"]["y_w"].to(tokens.device)
        n_local = tokens[idx].sum().to(torch.float32)
        sum_local = policy["y_w"].sum()
        n_global = self._gather(n_local.reshape(1)).sum()
        sum_global = self._gather(sum_local.detach().reshape(1)).sum()
        value = -sum_global / n_global
        world = self.accelerator.num_processes
        surrogate = -world * sum_local / n_global
        loss = value + surrogate - surrogate.detach()
        self._metrics[mode]["sft/nll_per_token"].append(float(value))
        self._metrics[mode]["rows/policy"].append(float(self._gather(inputs["num_rows"].reshape(1)).sum()))
        return loss

    def _betas(self, inputs, device) -> dict[str, torch.Tensor | float]:
        present = {"y": None, "v": inputs["eta"].bool(), "a": inputs["gamma"].bool()}
        betas = {}
        for comp, fixed in self.args.fixed_betas.items():
            if fixed is not None:
                betas[comp] = float(fixed)
            else:
                mask = present[comp].to(device) if present[comp] is not None else None
                betas[comp] = calibrate_beta(
                    inputs["scores"][comp].to(device),
                    scale=self.args.beta_scale,
                    offset=self.args.beta_offset,
                    mask=mask,
                    gather=self._gather,
                )
        return betas

    def _preference_loss(self, inputs, policy, ref, mode):
        device = policy["y_w"].device
        eta, gamma = inputs["eta"].to(device), inputs["gamma"].to(device)
        betas = self._betas(inputs, device)
        out = cavpref_loss(
            policy,
            ref,
            beta=betas,
            lambdas=self.args.lambdas,
            eta=eta,
            gamma=gamma,
            robust=self.args.robust_mode,
            gather=self._gather,
            world_size=self.accelerator.num_processes,
        )
        self._log_step(inputs, out, betas, policy, ref, mode)
        return out.loss

    def _log_step(self, inputs, out, betas, policy, ref, mode):
        """Per component and per task, over the global batch (every rank runs the same gathers)."""
        m = self._metrics[mode]
        m["loss/total"].append(float(out.loss.detach()))
        m["rows/policy"].append(float(self._gather(inputs["num_rows"].reshape(1)).sum()))
        tasks = self._gather(inputs["task_ids"].to(out.loss.device))
        m["rows/samples"].append(float(tasks.numel()))
        for comp, c in out.components.items():
            margins = self._gather(c.margins)
            ell = self._gather(c.per_sample)
            weights = self._gather(c.weights)
            present = torch.isfinite(margins)
            beta = betas[comp]
            beta_all = (
                self._gather(beta.detach()) if torch.is_tensor(beta) else torch.full_like(margins, beta)
            )
            m[f"{comp}/loss"].append(float(c.loss.detach()))
            m[f"{comp}/margin"].append(float(margins[present].mean()))
            m[f"{comp}/reward_accuracy"].append(float((margins[present] > 0).float().mean()))
            m[f"{comp}/beta"].append(float(beta_all[present].mean()))
            m[f"{comp}/ess"].append(float(1.0 / weights[present].pow(2).sum()))
            m[f"{comp}/n"].append(float(present.sum()))
            for t in tasks[present].unique().tolist():
                sel = present & (tasks == t)
                m[f"task/{ALL_TASKS[t]}/{comp}_loss"].append(float(ell[sel].mean()))
                m[f"task/{ALL_TASKS[t]}/{comp}_margin"].append(float(margins[sel].mean()))
                m[f"task/{ALL_TASKS[t]}/{comp}_reward_accuracy"].append(
                    float((margins[sel] > 0).float().mean())
                )
        # TRL's names for the y pair, so dashboards built for DPOTrainer keep working.
        rew_w = self._gather((policy["y_w"] - ref["y_w"]).detach())
        rew_l = self._gather((policy["y_l"] - ref["y_l"]).detach())
        beta_y = betas["y"] if not torch.is_tensor(betas["y"]) else self._gather(betas["y"].detach())
        m["rewards/chosen"].append(float((beta_y * rew_w).mean()))
        m["rewards/rejected"].append(float((beta_y * rew_l).mean()))
        m["rewards/margins"].append(float((beta_y * (rew_w - rew_l)).mean()))
        m["rewards/accuracies"].append(float(((rew_w - rew_l) > 0).float().mean()))
        m["logps/chosen"].append(float(self._gather(policy["y_w"].detach()).mean()))
        m["logps/rejected"].append(float(self._gather(policy["y_l"].detach()).mean()))

    # ------------------------------------------------------------------ reference precomputation

    def _precompute_ref_logps(self, dataset, name, batch_size):
        """Reference log-probs of every row type the data has (y_w, y_l and both anchor pairs), once.

        Cached under ``ref_cache_dir`` (default ``output_dir/ref_logps``) keyed by the dataset fingerprint,
        the model hash and the media policy, so a resumed or repeated run reads them back.
        """
        if not self._needs_reference:
            return dataset
        if not isinstance(dataset, Dataset):
            raise TypeError("precomputed reference log-probs need a map-style datasets.Dataset")
        collator = self.data_collator
        policy = (
            collator.media_root,
            str(collator.frames),
            collator.sample_rate,
            type(self.adapter).__name__,
            *(repr(getattr(self.adapter, a, None)) for a in _ADAPTER_SETTINGS),
        )
        key = [Hasher.hash((dataset._fingerprint, self._precompute_model_hash, policy))]
        broadcast_object_list(key, from_process=0)
        cache_dir = os.path.join(
            self.args.ref_cache_dir or os.path.join(self.args.output_dir, "ref_logps"), f"{name}-{key[0]}"
        )
        base = dataset.remove_columns([c for c in REF_COLUMNS.values() if c in dataset.column_names])
        if os.path.exists(os.path.join(cache_dir, "dataset_info.json")):
            return concatenate_datasets([base, load_from_disk(cache_dir)], axis=1)

        all_rows = dataclasses.replace(collator, method="all", calibrated=())

        def collate(examples):
            batch = all_rows(examples)
            kept = set(batch.get("example_ids", []))
            batch["positions"] = torch.tensor([e["__pos"] for e in examples if str(e.get("id", "")) in kept])
            return batch

        loader = self.accelerator.prepare(
            DataLoader(
                _Indexed(base),
                batch_size=batch_size,
                collate_fn=collate,
                num_workers=self.args.dataloader_num_workers,
                shuffle=False,
            )
        )
        if self.ref_model is None and self.is_deepspeed_enabled:
            from trl.models import prepare_deepspeed

            if self._precompute_engine is None:
                self._precompute_engine = prepare_deepspeed(self.model, self.accelerator)
            model = self._precompute_engine
        else:
            model = self.ref_model or self.model
        values = torch.full((len(base), len(SLOTS)), float("nan"))
        for batch in tqdm(
            loader, desc=f"Reference log-probs ({name})", disable=not self.accelerator.is_local_main_process
        ):
            with self._reference_context():
                flat = self.adapter.logps(model, batch["model_inputs"]).float()
            per = self._unflatten(flat, batch["slots"])
            block = torch.stack([per[s] for s in SLOTS], dim=1)
            pos = self._gather(batch["positions"].to(block.device))
            values[pos.cpu()] = self._gather(block).cpu()
        if self.accelerator.is_main_process:
            cols = {REF_COLUMNS[s]: values[:, j].tolist() for j, s in enumerate(SLOTS)}
            Dataset.from_dict(cols).save_to_disk(cache_dir)
        self.accelerator.wait_for_everyone()
        return concatenate_datasets([base, load_from_disk(cache_dir)], axis=1)

    # ------------------------------------------------------------------ resume

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
        """Resume the weights through ``from_pretrained``.

        ``save_pretrained`` writes the checkpoint in the model's original key format (transformers 5 renames
        e.g. Qwen2.5-Omni's ``model.language_model.*`` back to ``model.*``), while ``Trainer`` loads the raw
        state dict with ``strict=False`` and only warns when nothing matches — the run would silently
        restart from the initial weights. Loading with the model class applies the key conversion, and any
        remaining mismatch is an error."""
        target = self.accelerator.unwrap_model(model if model is not None else self.model)
        full = any(
            os.path.isfile(os.path.join(resume_from_checkpoint, f))
            for f in ("model.safetensors", "model.safetensors.index.json")
        )
        if (
            not full
            or is_peft_model(target)
            or not isinstance(target, PreTrainedModel)
            or self.is_fsdp_enabled
            or self.is_deepspeed_enabled
        ):
            return super()._load_from_checkpoint(resume_from_checkpoint, model)
        dtype = next(target.parameters()).dtype
        loaded = type(target).from_pretrained(
            resume_from_checkpoint, dtype=dtype, trust_remote_code=self.args.trust_remote_code
        )
        missing, unexpected = target.load_state_dict(loaded.state_dict(), strict=False)
        if missing or unexpected:
            raise RuntimeError(
                f"{resume_from_checkpoint}: checkpoint does not match the model "
                f"(missing {missing[:5]}, unexpected {unexpected[:5]})"
            )
        del loaded

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

    def train(self, *args, **kwargs):
        result = super().train(*args, **kwargs)
        self.report_skipped()
        self.report_missing_streams()
        return result

    def report_missing_streams(self) -> dict[str, dict[str, int]]:
        """Examples trained without a stream their spec keeps (the file lacks it), per task and stream, over
        all ranks, in ``output_dir/missing_streams.json`` (main process)."""
        everything = (gather_object(list(self._missing_streams)) if self.accelerator.num_processes > 1
                      else list(self._missing_streams))
        unique = sorted({tuple(map(str, m)) for m in everything})
        per_task: dict[str, dict[str, int]] = {}
        for _, task, stream in unique:
            per_task.setdefault(task, {}).setdefault(stream, 0)
            per_task[task][stream] += 1
        if self.accelerator.is_main_process:
            os.makedirs(self.args.output_dir, exist_ok=True)
            with open(os.path.join(self.args.output_dir, "missing_streams.json"), "w") as f:
                json.dump({"count": len({i for i, _, _ in unique}), "per_task": per_task,
                           "examples": [{"id": i, "task": t, "stream": s} for i, t, s in unique]}, f, indent=1)
            if unique:
                print(f"[cavpref] trained {len({i for i, _, _ in unique})} examples with a missing stream "
                      f"{per_task} (see {self.args.output_dir}/missing_streams.json; missing_stream: error refuses)")
        return per_task

    def report_skipped(self) -> list[tuple[str, str]]:
        """All ranks' skipped rows, de-duplicated, written to ``output_dir/skipped_rows.json`` (main process)."""
        everything = (
            gather_object(list(self._skipped)) if self.accelerator.num_processes > 1 else list(self._skipped)
        )
        unique = list(dict.fromkeys((str(i), str(r)) for i, r in everything))
        if self.accelerator.is_main_process and (unique or self.args.skip_bad_rows):
            os.makedirs(self.args.output_dir, exist_ok=True)
            with open(os.path.join(self.args.output_dir, "skipped_rows.json"), "w") as f:
                json.dump(
                    {"count": len(unique), "rows": [{"id": i, "reason": r} for i, r in unique]}, f, indent=1
                )
            if unique:
                print(
                    f"[cavpref] skipped {len(unique)} bad rows (see {self.args.output_dir}/skipped_rows.json)"
                )
        return unique


# Adapter settings that change log-probs (besides the weights, hashed separately): part of the cache key.
_ADAPTER_SETTINGS = (
    "system_prompt",
    "missing_modality",
    "max_length",
    "use_audio_in_video",
    "video_fps",
    "video_min_pixels",
    "video_max_pixels",
)

# Columns the field check reads (anything else in the dataset is passed through untouched).
_CHECK_COLUMNS = {"id", "task", "prompt", "clap_delta", "avsm_delta_v", "avsm_delta_a"} | {
    c for fields in SLOT_FIELDS.values() for c in fields
}


class JsonlLogger(TrainerCallback):
    """Every log record (step, loss, per-component and per-task metrics) appended to output_dir/logs.jsonl."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and logs:
            os.makedirs(args.output_dir, exist_ok=True)
            with open(os.path.join(args.output_dir, "logs.jsonl"), "a") as f:
                f.write(json.dumps({"step": state.global_step, **logs}) + "\n")
