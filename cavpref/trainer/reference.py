"""The reference policy: where its log-probs come from, and reference log-probs precomputed once.

``Reference`` runs the reference forward: a frozen model, or the policy with its LoRA adapter switched off.
``precompute_reference_logps`` computes every row type the data has (y_w, y_l and both anchor pairs) once and
caches them on disk under ``cache_key``: the dataset fingerprint, the reference weights and every setting of the
collator and of the model I/O (``AVModelIO.settings()``), so a resumed or repeated run reads them back and a run
that feeds the model differently (another audio budget, frame policy, system prompt ...) gets its own entry.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import dataclass
from typing import Any

import torch
from accelerate.utils import broadcast_object_list, is_peft_model
from datasets import Dataset, concatenate_datasets, load_from_disk
from datasets.fingerprint import Hasher, generate_fingerprint
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from trl.trainer.utils import use_adapter

from cavpref.collator import REF_COLUMNS, SLOTS
from cavpref.models.base import AVModelIO
from cavpref.models.step import inner_model
from cavpref.trainer.checkpointing import checkpointing_paused
from cavpref.trainer.gather import gather_rows, unflatten


@contextlib.contextmanager
def reference_forward(policy: torch.nn.Module, ref_model: torch.nn.Module | None):
    """Context for a reference forward: no grad, no activation checkpointing, and the LoRA adapter switched off
    (PEFT's ``use_adapter``) when the policy's own base model is the reference (``ref_model`` None)."""
    ctx = contextlib.nullcontext()
    if ref_model is None and is_peft_model(inner_model(policy)):
        unwrapped = inner_model(policy)
        ctx = use_adapter(unwrapped, adapter_name="ref" if "ref" in unwrapped.peft_config else None)
    with torch.no_grad(), checkpointing_paused(policy), ctx:
        yield


@dataclass
class Reference:
    """The reference policy of a preference loss: ``ref_model``, or (None) the policy with its adapter off."""

    model_io: AVModelIO
    ref_model: torch.nn.Module | None = None

    def logps(
        self, policy: torch.nn.Module, model_inputs: dict, run: torch.nn.Module | None = None
    ) -> torch.Tensor:
        """(R,) fp32 reference log-probs of the batch's rows; ``run``: the module to call when it is neither (a
        DeepSpeed inference engine around the policy for the precompute pass)."""
        with reference_forward(policy, self.ref_model):
            model = run if run is not None else (self.ref_model if self.ref_model is not None else policy)
            return self.model_io.logps(model, model_inputs).float()


def cache_key(dataset_fingerprint: str, model_hash: str, collator: Any) -> str:
    """The cache entry of precomputed reference log-probs: the data, the reference weights, and every field of the
    collator (media root, frame policy, sample rate, ...) with the model I/O replaced by its ``settings()`` —
    derived from the classes, so a setting added later is part of the key without anyone listing it."""
    fields = {}
    for f in dataclasses.fields(collator):
        value = getattr(collator, f.name)
        if isinstance(value, AVModelIO):
            value = value.settings()
        elif callable(value):  # a custom decode function: by name (its repr holds a memory address)
            value = (
                f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', type(value).__name__)}"
            )
        fields[f.name] = value
    return Hasher.hash((dataset_fingerprint, model_hash, type(collator).__qualname__, fields))


def every_row(collator: Any) -> Any:
    """The precompute pass's collator: every row the data has (``method="all"``), whatever the run's method. That
    pass reads only the switch table's tasks, never their (η, γ) (``CAVPrefCollator.slots_for``), so the values
    are zeroed: runs of every method on the same data and reference (DPO's switches are all zero, CAVPref's are
    not) compute the same values and share one cache entry."""
    return dataclasses.replace(
        collator, method="all", calibrated=(), switches=dict.fromkeys(collator.switches, (0, 0))
    )


class _Indexed(torch.utils.data.Dataset):
    """Rows with their position, so precomputed values land on the right row even when some are skipped."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, i):
        return {**self.dataset[i], "__pos": i}


def precompute_reference_logps(
    dataset: Dataset,
    name: str,
    *,
    reference: Reference,
    policy: torch.nn.Module,
    collator: Any,
    accelerator,
    cache_dir: str,
    model_hash: str,
    batch_size: int,
    num_workers: int = 0,
    run: torch.nn.Module | None = None,
) -> Dataset:
    """Reference log-probs of every row type the data has (y_w, y_l and both anchor pairs), once, as dataset columns.

    Cached under ``cache_dir/<name>-<cache_key>`` (every process computes the same key; rank 0's is used)."""
    if not isinstance(dataset, Dataset):
        raise TypeError("precomputed reference log-probs need a map-style datasets.Dataset")
    all_rows = every_row(collator)
    key = [cache_key(generate_fingerprint(dataset), model_hash, all_rows)]
    broadcast_object_list(key, from_process=0)
    entry = os.path.join(cache_dir, f"{name}-{key[0]}")
    base = dataset.remove_columns([c for c in REF_COLUMNS.values() if c in dataset.column_names])
    if os.path.exists(os.path.join(entry, "dataset_info.json")):
        return concatenate_datasets([base, load_from_disk(entry)], axis=1)

    def collate(examples):
        batch = all_rows(examples)
        kept = set(batch.get("example_ids", []))
        batch["positions"] = torch.tensor([e["__pos"] for e in examples if str(e.get("id", "")) in kept])
        return batch

    loader = accelerator.prepare(
        DataLoader(
            _Indexed(base), batch_size=batch_size, collate_fn=collate, num_workers=num_workers, shuffle=False
        )
    )
    values = torch.full((len(base), len(SLOTS)), float("nan"))
    for batch in tqdm(
        loader, desc=f"Reference log-probs ({name})", disable=not accelerator.is_local_main_process
    ):
        per = unflatten(reference.logps(policy, batch["model_inputs"], run=run), batch["slots"])
        block = torch.stack([per[s] for s in SLOTS], dim=1)
        pos = gather_rows(batch["positions"].to(block.device), accelerator.num_processes)
        values[pos.cpu()] = gather_rows(block, accelerator.num_processes).cpu()
    if accelerator.is_main_process:
        cols = {REF_COLUMNS[s]: values[:, j].tolist() for j, s in enumerate(SLOTS)}
        Dataset.from_dict(cols).save_to_disk(entry)
    accelerator.wait_for_everyone()
    return concatenate_datasets([base, load_from_disk(entry)], axis=1)
