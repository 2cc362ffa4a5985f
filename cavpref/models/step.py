"""``ModelIOStep``: the one module whose ``forward`` runs everything a log-prob step computes on the device.

Why a module: FSDP (and any wrapper that hooks ``forward``) only manages what runs *inside* the root module's
forward. A model I/O that calls the vision / audio encoders, the dummy encoder calls of ``zero_dummy`` and
the embedding lookup outside the model's own ``forward`` and only then calls ``model(inputs_embeds=...)``
makes FSDP2 fail on the first step (``aten.convolution.default: got mixed torch.Tensor and DTensor``: the
encoder's patch embedding is still sharded). ``ModelIOStep.forward`` calls the model I/O's
``forward_logits`` — encoders, encoder reuse, zero-dummy calls, embedding lookup, language model — so the
trainer prepares *this* module as the root (FSDP shards the model inside it and unshards the root's own
parameters for the whole step) and the model I/O's public ``logps(model, batch)`` keeps its signature: a
model that is not a ``ModelIOStep`` (single process, DDP, DeepSpeed, evaluation) is wrapped on the fly,
which adds no hooks and changes nothing.

The model I/O is held as a plain attribute (not a submodule): it owns no parameters.
"""

from __future__ import annotations

from typing import Any

import torch


class ModelIOStep(torch.nn.Module):
    """``forward(batch, reuse_encoders=True)`` -> the logits of ``model_io.forward_logits(model, batch)``."""

    def __init__(self, model: torch.nn.Module, model_io: Any):
        super().__init__()
        self.model = model
        object.__setattr__(self, "model_io", model_io)  # not a submodule, not in the state dict

    def forward(self, batch: dict[str, Any], reuse_encoders: bool = True) -> torch.Tensor:
        return self.model_io.forward_logits(self.model, batch, reuse_encoders=reuse_encoders)

    # what the trainer, TRL and PEFT read off "the model"
    @property
    def config(self):
        return self.model.config

    def disable_adapter(self):
        return self.model.disable_adapter()

    def gradient_checkpointing_enable(self, **kwargs):
        return self.model.gradient_checkpointing_enable(**kwargs)

    def gradient_checkpointing_disable(self):
        return self.model.gradient_checkpointing_disable()


def inner_model(model: torch.nn.Module) -> torch.nn.Module:
    """The model inside DDP / DeepSpeed / FSDP / ``ModelIOStep`` wrappers (a PEFT model stays a PEFT model)."""
    from accelerate.utils import extract_model_from_parallel

    model = extract_model_from_parallel(model)
    while isinstance(model, ModelIOStep):
        model = extract_model_from_parallel(model.model)
    return model


def step_logits(model: torch.nn.Module, model_io: Any, batch: dict[str, Any], *, reuse_encoders: bool = True):
    """The logits of one step through ``model``'s root ``forward``: ``model`` itself when it is (a wrapper
    of) a ``ModelIOStep`` prepared by the trainer, else a ``ModelIOStep`` built on the fly around it."""
    from accelerate.utils import extract_model_from_parallel

    if isinstance(extract_model_from_parallel(model), ModelIOStep):
        return model(batch, reuse_encoders=reuse_encoders)
    return ModelIOStep(model, model_io)(batch, reuse_encoders=reuse_encoders)
