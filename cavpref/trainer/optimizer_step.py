"""The optimizer step of ``CAVPrefTrainer``: TRL / HF hooks that see all of one step's micro-batches.

HF Trainer draws a step's micro-batches before any forward (``get_batch_samples``): the step context (component
counts, β's min-max range, the exact Eq. 5 normaliser; ``cavpref.trainer.step``) is computed there over every
micro-batch and rank, so the objective does not depend on how the optimizer batch is split. A step with
non-finite log-probs is dropped whole: ``training_step`` cancels its logged loss and ``_guard_optimizer_step``
makes the optimizer (and so the LR scheduler) skip it.
"""

from __future__ import annotations

import functools

import torch

from cavpref.loss import StepContext
from cavpref.trainer.step import plan_step


class OptimizerStepMixin:
    """``get_batch_samples`` / ``training_step`` / the optimizer guard of ``CAVPrefTrainer``."""

    def get_batch_samples(self, epoch_iterator, num_batches, device):
        """Trainer draws a step's micro-batches here, before any forward: compute the step's context (counts,
        β range, exact normaliser; ``cavpref.trainer.step``) over all of them and all ranks, attach it to each."""
        batches, num_items = super().get_batch_samples(epoch_iterator, num_batches, device)
        self._step_skipped, self._step_loss = False, 0.0
        self._step_micro, self._step_w2 = 0, {}
        self._guard_optimizer_step()
        # A micro-batch whose rows were all unusable (skip_bad_rows) holds no sample: the step is planned
        # over the others (its rows are counted in skipped_rows.json, not in the objective).
        self._drop_step_if_a_rank_is_empty(batches)
        planned = [b for b in batches if not b.get("empty")]
        if planned and all("eta" in b for b in planned):
            batches_all, batches = batches, planned
            if self.args.method == "sft":
                ctx = StepContext(len(batches))
                tokens = sum(self._sft_tokens(b).sum() for b in batches)
                total = self._gather(tokens.to(torch.float32).reshape(1).to(self.accelerator.device)).sum()
                for b in batches:
                    b["step"], b["step_tokens"] = ctx, total
            else:
                ctx = plan_step(self, batches)
                for b in batches:
                    b["step"] = ctx
            batches = batches_all
        return batches, num_items

    def _drop_step_if_a_rank_is_empty(self, batches: list[dict]) -> None:
        """On several ranks, a micro-batch with no usable row on one rank drops the whole step on every rank.

        Every rank must make the same collective calls: planning the step over the non-empty micro-batches would
        give the ranks different numbers of micro-batches (and of gathers), which hangs or mixes up the
        collectives. The step is skipped everywhere (no optimizer or scheduler step, nothing logged as loss), the
        other rows of the step are listed in skipped_rows.json with the reason; a single process plans over its
        other micro-batches instead."""
        if self.accelerator.num_processes == 1:
            return
        local = torch.tensor([sum(1 for b in batches if b.get("empty"))], device=self.accelerator.device)
        if int(self._gather(local).sum()) == 0:
            return
        reason = "step skipped: a micro-batch of this optimizer step had no usable row on some rank"
        for b in batches:
            if not b.get("empty"):
                ids = [str(i) for i in b.get("example_ids", [])] or ["?"]
                skipped = list(b.get("skipped") or []) + [(i, reason) for i in ids]
                b.clear()
                b.update({"empty": True, "skipped": skipped})
        self._step_skipped = True
        self._log_counts["skipped_steps"] += 1

    def training_step(self, model, inputs, num_items_in_batch=None):
        was_skipped = self._step_skipped
        loss = super().training_step(model, inputs, num_items_in_batch)
        if self._step_skipped:
            # A skipped step adds nothing to the logged loss: cancel what its earlier micro-batches returned.
            back = -self._step_loss if not was_skipped else 0.0
            self._step_loss = 0.0
            return torch.zeros_like(loss) + back
        self._step_loss += float(loss)
        return loss

    def _guard_optimizer_step(self):
        """Make the optimizer's ``step`` a no-op for a skipped step (momentum would otherwise still move the
        weights on a zero gradient) and report it as skipped, which is how Trainer's loop knows not to step the
        LR scheduler (``accelerator.optimizer_step_was_skipped``, the mechanism fp16 overflow uses)."""
        opt = self.optimizer
        if opt is None or getattr(opt, "_cavpref_guarded", False):
            return
        inner = opt.step

        @functools.wraps(inner)  # keeps torch's LR-scheduler marker on the optimizer's step
        def step(*a, **kw):
            if self._step_skipped:
                self._skipped_steps_window += 1
                self._skipped_steps_total += 1
                opt._is_overflow = True
                return None
            opt._is_overflow = False  # (a grad scaler, when there is one, sets it again inside ``inner``)
            return inner(*a, **kw)

        opt.step = step
        opt._cavpref_guarded = True
