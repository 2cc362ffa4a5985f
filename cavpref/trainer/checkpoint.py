"""Resuming a full fine-tuning run's weights (see ``load_full_checkpoint``)."""

from __future__ import annotations

import os

from accelerate.utils import is_peft_model
from transformers import PreTrainedModel


def load_full_checkpoint(trainer, resume_from_checkpoint: str, model=None) -> bool:
    """Resume the weights through ``from_pretrained``.

    ``save_pretrained`` writes the checkpoint in the model's original key format (transformers 5 renames
    e.g. Qwen2.5-Omni's ``model.language_model.*`` back to ``model.*``), while ``Trainer`` loads the raw
    state dict with ``strict=False`` and only warns when nothing matches — the run would silently
    restart from the initial weights. Loading with the model class applies the key conversion, and any
    remaining mismatch is an error.

    Returns False (nothing loaded) where the Trainer's own loading is right: LoRA checkpoints, sharded runs, no
    full ``model.safetensors``."""
    target = trainer.accelerator.unwrap_model(model if model is not None else trainer.model)
    full = any(
        os.path.isfile(os.path.join(resume_from_checkpoint, f))
        for f in ("model.safetensors", "model.safetensors.index.json")
    )
    if (
        not full
        or is_peft_model(target)
        or not isinstance(target, PreTrainedModel)
        or trainer.is_fsdp_enabled
        or trainer.is_deepspeed_enabled
    ):
        return False
    dtype = next(target.parameters()).dtype
    loaded = type(target).from_pretrained(
        resume_from_checkpoint, dtype=dtype, trust_remote_code=trainer.args.trust_remote_code
    )
    missing, unexpected = target.load_state_dict(loaded.state_dict(), strict=False)
    if missing or unexpected:
        raise RuntimeError(
            f"{resume_from_checkpoint}: checkpoint does not match the model "
            f"(missing {missing[:5]}, unexpected {unexpected[:5]})"
        )
    del loaded
    return True
