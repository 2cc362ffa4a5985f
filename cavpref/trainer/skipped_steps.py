"""Dropping an optimizer step whose objective could not be computed (``skip_bad_rows``).

The objective is defined over a step's micro-batches (``cavpref.trainer.step``), so a micro-batch with non-finite
log-probs, or an empty micro-batch on some rank, drops the whole step: no optimizer step (AdamW's momentum would
otherwise still move the weights on a zero gradient), no LR-scheduler step, and no loss logged for it (Trainer
would log 0 and average it in). ``SkippedSteps`` wraps the optimizer's ``step`` (``functools.wraps`` keeps
torch's LR-scheduler marker on it) and the LR scheduler (a proxy: its state dict, saved with every checkpoint,
stays the scheduler's own), and keeps the counts the trainer's ``log`` needs to average the logged loss over the
steps that trained.
"""

from __future__ import annotations

import functools

import torch


class SkippedSteps:
    """Per optimizer step: ``begin()``, then ``skip()`` when it is dropped; ``logged_loss`` after each micro-batch."""

    def __init__(self):
        self.skipped = False  # the current step is dropped
        self.window = 0  # dropped steps since the last loss log
        self.total = 0  # dropped steps in this train() call
        self._loss = 0.0  # what the current step's micro-batches returned so far
        self._wrapped: set[int] = set()

    def begin(self, optimizer) -> None:
        """A new step: nothing dropped yet; the optimizer's ``step`` does nothing on a dropped step."""
        self.skipped, self._loss = False, 0.0
        if optimizer is not None and id(optimizer) not in self._wrapped:
            optimizer.step = self._guard(optimizer.step)
            self._wrapped.add(id(optimizer))

    def scheduler(self, scheduler):
        """``scheduler``, not stepped on a dropped step."""
        return (
            scheduler
            if scheduler is None or isinstance(scheduler, _Scheduler)
            else _Scheduler(scheduler, self)
        )

    def skip(self) -> bool:
        """Drop the current step; True the first time (the caller counts it)."""
        first, self.skipped = not self.skipped, True
        return first

    def logged_loss(self, loss: torch.Tensor, was_skipped: bool) -> torch.Tensor:
        """The micro-batch's loss as Trainer should add it to the logged loss: a dropped step adds nothing, so the
        loss its earlier micro-batches returned is cancelled by the first one that sees the step dropped."""
        if not self.skipped:
            self._loss += float(loss)
            return loss
        back, self._loss = (-self._loss if not was_skipped else 0.0), 0.0
        return torch.zeros_like(loss) + back

    def _guard(self, step):
        @functools.wraps(step)
        def guarded(*args, **kwargs):
            if self.skipped:
                self.window += 1
                self.total += 1
                return None
            return step(*args, **kwargs)

        return guarded


class _Scheduler:
    """An LR scheduler whose ``step`` does nothing on a dropped optimizer step; everything else is the scheduler's."""

    def __init__(self, scheduler, steps: SkippedSteps):
        self.scheduler, self.steps = scheduler, steps

    def step(self, *args, **kwargs):
        return None if self.steps.skipped else self.scheduler.step(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.scheduler, name)
