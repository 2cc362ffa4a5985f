"""One measured optimizer step of a ``CAVPrefTrainer``, driven by hand as the benchmarks do.

``training_step`` (policy forward, reference forward, loss, backward) plus the optimizer step on an already
collated batch; timed with the caller's clock, with synchronisation on CUDA. Memory is measured two ways:
``SavedActivations`` counts the bytes autograd keeps for the backward (deterministic and device-independent: the
CPU allocator has no peak counter and RSS hides reuse), and on CUDA the allocator's peak
(``torch.cuda.max_memory_allocated``) over the step, next to what was allocated before it (weights, optimizer
states, the reference).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch


class SavedActivations:
    """Bytes of the distinct storages autograd saves for backward inside the ``with`` block. ``exclude``:
    tensors (the parameters) whose storages are not counted, so the sum is the activation memory alone."""

    def __init__(self, exclude: Iterable[torch.Tensor] = ()):
        self.excluded = {t.untyped_storage().data_ptr() for t in exclude}

    def __enter__(self):
        self.bytes, self.seen = 0, set()

        def pack(t):
            ptr = t.untyped_storage().data_ptr()
            key = (ptr, t.dtype)
            if key not in self.seen and ptr not in self.excluded:
                self.seen.add(key)
                self.bytes += t.untyped_storage().nbytes()
            return t

        self.ctx = torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t)
        self.ctx.__enter__()
        return self

    def __exit__(self, *exc):
        self.ctx.__exit__(*exc)


@dataclass
class StepMeasure:
    seconds: float
    saved_bytes: int  # SavedActivations over the training step
    peak_bytes: int | None = None  # CUDA: max_memory_allocated over the step
    base_bytes: int | None = None  # CUDA: memory_allocated just before it


def prepare(trainer, rows: list[dict], decode: Callable | None = None) -> dict:
    """Ready ``trainer`` to be stepped by hand (its optimizer; the accumulation count Trainer's loop sets) and
    return the collated batch of ``rows``; ``decode`` replaces the collator's media decoder (``RealisticMedia``)."""
    if decode is not None:
        trainer.data_collator.decode = decode
    trainer.create_optimizer()
    trainer.current_gradient_accumulation_steps = 1
    return trainer.data_collator(list(rows))


def timed_step(
    trainer,
    inputs: dict,
    device: str,
    clock: Callable[[], float] = time.perf_counter,
    exclude_parameters: bool = False,
) -> StepMeasure:
    """One ``training_step`` + optimizer step + ``zero_grad(set_to_none=True)`` on ``inputs``."""
    cuda = device == "cuda"
    base = None
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    params = list(trainer.model.parameters()) if exclude_parameters else ()
    t0 = clock()
    with SavedActivations(params) as saved:
        trainer.training_step(trainer.model, inputs)
    trainer.optimizer.step()
    trainer.optimizer.zero_grad(set_to_none=True)
    if cuda:
        torch.cuda.synchronize()
    seconds = clock() - t0
    peak = torch.cuda.max_memory_allocated() if cuda else None
    return StepMeasure(seconds, saved.bytes, peak, base)


def media_tokens(model_io, batch: dict) -> int:
    """The most video + audio placeholder tokens in one row of ``batch``."""
    ids = batch["input_ids"]
    placeholder = (ids == model_io.video_token_id) | (ids == model_io.audio_token_id)
    return int(placeholder.sum(-1).max())
