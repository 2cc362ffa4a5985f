"""What FSDP needs from a CAVPref run, checked before the first step instead of failing (or hanging) in it.

The policy is sharded with FSDP2 (``fully_shard``, accelerate's ``fsdp_version: 2``) with a
``cavpref.models.step.ModelIOStep`` as the root, so every encoder, dummy-encoder, embedding and language-model
call of a step runs inside the root's forward. The modes below cannot work that way and are refused with the
reason and the alternative.
"""

from __future__ import annotations

import os

import torch
from accelerate.utils import str_to_bool


def fsdp_launch() -> bool:
    """Whether this process was started by ``accelerate launch`` with an FSDP config (before the Trainer exists)."""
    return bool(str_to_bool(os.environ.get("ACCELERATE_USE_FSDP", "false")))


def check_fsdp_modes(trainer) -> None:
    """Raise ValueError naming the setting for a mode that cannot work under FSDP."""
    plugin = trainer.accelerator.state.fsdp_plugin
    version = getattr(plugin, "fsdp_version", 1)
    if version != 2:
        raise ValueError(
            f"FSDP version {version}: CAVPref supports FSDP2 only (set fsdp_version: 2 in the accelerate config, "
            "as recipes/accelerate/fsdp.yaml does)"
        )
    missing = getattr(trainer.model_io, "missing_modality", "drop")
    if missing != "zero_dummy":
        # A rank whose batch has no video would skip the vision blocks' all-gathers that the other ranks
        # enter: the collectives no longer line up and the run hangs.
        raise ValueError(
            f"missing_modality={missing!r} under FSDP: every rank must run the same encoder calls; set "
            "missing_modality: zero_dummy"
        )
    if trainer.args.precompute_ref_log_probs:
        # The precompute runs before the model is sharded; with fsdp_cpu_ram_efficient_loading only rank 0
        # holds the weights then.
        raise ValueError(
            "precompute_ref_log_probs under FSDP: precompute the reference log-probs once without FSDP "
            "(one process or DDP; the cache is keyed by data and model and read back), or use DeepSpeed ZeRO-3"
        )


def full_tensor(t: torch.Tensor) -> torch.Tensor:
    """A plain tensor for saving: a DTensor (FSDP2 shard; collective, call on every rank) gathered, any tensor
    copied (FSDP's gathered tensors may be views of buffers freed after resharding)."""
    from torch.distributed.tensor import DTensor

    if isinstance(t, DTensor):
        t = t.full_tensor()
    return t.detach().cpu().clone()
