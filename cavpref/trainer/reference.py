"""The reference policy: the context a reference forward runs in, and reference log-probs precomputed once.

Precomputed values cover every row type the data has (y_w, y_l and both anchor pairs) and are cached on disk under
the dataset fingerprint + model hash + media / model I/O settings, so a resumed or repeated run reads them back."""

from __future__ import annotations

import contextlib
import dataclasses
import os

import torch
from accelerate.utils import broadcast_object_list, is_peft_model
from datasets import Dataset, concatenate_datasets, load_from_disk
from datasets.fingerprint import Hasher
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from trl.trainer.utils import use_adapter

from cavpref.collator import REF_COLUMNS, SLOTS
from cavpref.models.step import inner_model
from cavpref.trainer.checkpointing import checkpointing_paused
from cavpref.trainer.gather import unflatten

# Model I/O settings that change log-probs (besides the weights, hashed separately): part of the cache key.
MODEL_IO_SETTINGS = (
    "system_prompt",
    "missing_modality",
    "max_length",
    "use_audio_in_video",
    "video_fps",
    "video_min_pixels",
    "video_max_pixels",
)


class _Indexed(torch.utils.data.Dataset):
    """Rows with their position, so precomputed values land on the right row even when some are skipped."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, i):
        return {**self.dataset[i], "__pos": i}


@contextlib.contextmanager
def reference_forward(trainer):
    """Context for a reference forward: no grad, no activation checkpointing, and the LoRA adapter switched off
    (PEFT's ``use_adapter``) when the policy's own base model is the reference."""
    ctx = contextlib.nullcontext()
    if trainer.ref_model is None and is_peft_model(inner_model(trainer.model)):
        unwrapped = inner_model(trainer.model)
        ctx = use_adapter(unwrapped, adapter_name="ref" if "ref" in unwrapped.peft_config else None)
    with torch.no_grad(), checkpointing_paused(trainer.model), ctx:
        yield


def precompute_reference_logps(trainer, dataset, name: str, batch_size: int):
    """Reference log-probs of every row type the data has (y_w, y_l and both anchor pairs), once.

    Cached under ``ref_cache_dir`` (default ``output_dir/ref_logps``) keyed by the dataset fingerprint,
    the model hash and the media policy, so a resumed or repeated run reads them back.
    """
    if not isinstance(dataset, Dataset):
        raise TypeError("precomputed reference log-probs need a map-style datasets.Dataset")
    collator = trainer.data_collator
    policy = (
        collator.media_root,
        str(collator.frames),
        collator.sample_rate,
        type(trainer.model_io).__name__,
        getattr(collator, "anchor", "original"),  # which response the anchor rows score
        *(repr(getattr(trainer.model_io, a, None)) for a in MODEL_IO_SETTINGS),
    )
    key = [Hasher.hash((dataset._fingerprint, trainer._precompute_model_hash, policy))]
    broadcast_object_list(key, from_process=0)
    cache_dir = os.path.join(
        trainer.args.ref_cache_dir or os.path.join(trainer.args.output_dir, "ref_logps"), f"{name}-{key[0]}"
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

    loader = trainer.accelerator.prepare(
        DataLoader(
            _Indexed(base),
            batch_size=batch_size,
            collate_fn=collate,
            num_workers=trainer.args.dataloader_num_workers,
            shuffle=False,
        )
    )
    if trainer.ref_model is None and trainer.is_deepspeed_enabled:
        from trl.models import prepare_deepspeed

        if trainer._precompute_engine is None:
            trainer._precompute_engine = prepare_deepspeed(trainer.model, trainer.accelerator)
        model = trainer._precompute_engine
    else:
        model = trainer.ref_model or trainer.model
    values = torch.full((len(base), len(SLOTS)), float("nan"))
    for batch in tqdm(
        loader, desc=f"Reference log-probs ({name})", disable=not trainer.accelerator.is_local_main_process
    ):
        with reference_forward(trainer):
            flat = trainer.model_io.logps(model, batch["model_inputs"]).float()
        per = unflatten(flat, batch["slots"])
        block = torch.stack([per[s] for s in SLOTS], dim=1)
        pos = trainer._gather(batch["positions"].to(block.device))
        values[pos.cpu()] = trainer._gather(block).cpu()
    if trainer.accelerator.is_main_process:
        cols = {REF_COLUMNS[s]: values[:, j].tolist() for j, s in enumerate(SLOTS)}
        Dataset.from_dict(cols).save_to_disk(cache_dir)
    trainer.accelerator.wait_for_everyone()
    return concatenate_datasets([base, load_from_disk(cache_dir)], axis=1)
