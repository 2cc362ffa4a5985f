"""Activation checkpointing paused for a no-grad forward (the reference forward, the exact normaliser's pass).

A no-grad forward has nothing to recompute, so checkpointing only costs time there. TRL's
``disable_gradient_checkpointing`` pauses it by calling ``gradient_checkpointing_disable()`` and then
``gradient_checkpointing_enable()`` again, and every enable registers one more input-embedding forward hook
(``enable_input_require_grads``) without removing the last: one hook per reference forward, i.e. per training step
with a live reference, so a long full-fine-tuning run's forward grows slower step after step (measured: 21 hooks on
the embedding after 20 pauses; ``tests/trainer/test_trainer_audit.py``). It also re-enables with the run's kwargs, losing
any other setting (``every_n_layers``). Flipping the layers' own ``gradient_checkpointing`` flags and restoring them
exactly avoids both.
"""

from __future__ import annotations

import contextlib

import torch


@contextlib.contextmanager
def checkpointing_paused(model: torch.nn.Module):
    """Within the block no module of ``model`` checkpoints; afterwards every flag is as it was."""
    flipped = [m for m in model.modules() if getattr(m, "gradient_checkpointing", False) is True]
    for m in flipped:
        m.gradient_checkpointing = False
    try:
        yield
    finally:
        for m in flipped:
            m.gradient_checkpointing = True
