"""A learning rate of its own for the encoders (``CAVPrefConfig.encoder_learning_rate``).

Why: a model whose vision / audio towers train from scratch next to a language model (the quickstart's random
starting model) may want a different step size for the towers than for the language model; a pretrained
AVLLM usually freezes them. Trainer builds its optimizer groups (weight decay / no decay); this splits each
group into the encoder part and the rest and gives the encoder part its own ``lr``, before the scheduler is
created, so the schedule scales both from their own starting value.
"""

from __future__ import annotations

import torch


def encoder_parameter_ids(model: torch.nn.Module, module_names: tuple[str, ...]) -> set[int]:
    """ids of the parameters under any of ``module_names`` (dotted paths, also found inside a PEFT wrapper or
    a ``modules_to_save`` copy, whose names contain the path)."""
    keys = tuple(f"{m}." for m in module_names)
    return {id(p) for n, p in model.named_parameters() if any(k in n for k in keys)}


def split_encoder_groups(optimizer: torch.optim.Optimizer, encoder_ids: set[int], lr: float) -> int:
    """Move the encoder parameters of every group into a copy of that group with ``lr``; returns how many
    parameters moved (0: nothing trainable under the encoders, the optimizer is left as it was)."""
    moved = 0
    for group in list(optimizer.param_groups):
        enc = [p for p in group["params"] if id(p) in encoder_ids]
        if not enc:
            continue
        group["params"] = [p for p in group["params"] if id(p) not in encoder_ids]
        optimizer.add_param_group(
            {**{k: v for k, v in group.items() if k != "params"}, "params": enc, "lr": lr}
        )
        moved += len(enc)
    optimizer.param_groups[:] = [g for g in optimizer.param_groups if g["params"]]
    return moved
