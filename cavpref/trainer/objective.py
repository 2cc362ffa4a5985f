"""The objective of ``CAVPrefTrainer``: SFT and the preference losses over one micro-batch's log-probs.

The maths is ``cavpref.loss`` (pure functions); here the micro-batch's log-probs, β (fixed, or calibrated over
the optimizer batch) and the step context meet, and the logged metrics are written.
"""

from __future__ import annotations

import torch

from cavpref.collator import SLOT_FIELDS, SLOTS
from cavpref.loss import StepContext, beta_input, calibrate_beta, cavpref_loss
from cavpref.trainer.metrics import log_preference_step


class ObjectiveMixin:
    """``_sft_loss`` / ``_preference_loss`` and their helpers, for ``CAVPrefTrainer.compute_loss``."""

    def _non_finite(self, inputs, policy, ref) -> list[tuple[str, str]]:
        """(example id, message naming the row and field) for every needed log-prob that is NaN / inf."""
        problems = []
        ids = inputs["example_ids"]
        fields = getattr(
            self.data_collator, "fields", SLOT_FIELDS
        )  # the anchor rows' columns (anchor_response)
        for which, vals in (("policy", policy), ("reference", ref)):
            if vals is None:
                continue
            for s in SLOTS:
                need = inputs["slots"][s].to(vals[s].device) >= 0
                bad = need & ~torch.isfinite(vals[s].detach())
                for i in bad.nonzero().flatten().tolist():
                    resp, media = fields[s]
                    value = float(vals[s][i].detach())
                    msg = f"example '{ids[i]}' row {s} ({resp} under {media}): {which} log-prob is {value}"
                    problems.append((ids[i], msg))
        return problems

    def _sft_loss(self, inputs, policy, mode):
        """Token-mean NLL of the chosen response under the presented media, normalised by the global token
        count so DDP averaging reproduces the one-process gradient."""
        tokens = self._sft_tokens(inputs).to(policy["y_w"].device)
        n_local = tokens.sum().to(torch.float32)
        sum_local = policy["y_w"].sum()
        step = inputs.get("step")
        micro = step.micro_batches if step is not None else 1
        # the optimizer batch's token count (every micro-batch, every rank) when the step was planned
        n_global = (
            inputs["step_tokens"].to(n_local.device)
            if step is not None
            else self._gather(n_local.reshape(1)).sum()
        )
        sum_global = self._gather(sum_local.detach().reshape(1)).sum()
        value = -micro * sum_global / n_global  # averaged over the step's micro-batches: the step's value
        world = self.accelerator.num_processes
        surrogate = -world * micro * sum_local / n_global
        loss = value + surrogate - surrogate.detach()
        self._metrics[mode]["sft/nll_per_token"].append(float(value))
        self._metrics[mode]["rows/policy"].append(float(self._gather(inputs["num_rows"].reshape(1)).sum()))
        return loss

    @staticmethod
    def _sft_tokens(inputs) -> torch.Tensor:
        """Response tokens of each sample's chosen row (SFT's normaliser)."""
        labels = inputs["model_inputs"].get("labels")
        if labels is None:
            raise KeyError("method=sft needs the model_io batch to carry 'labels' (response tokens != -100)")
        tokens = (labels != -100).sum(-1)
        return tokens[inputs["slots"]["y_w"].to(tokens.device)]

    def _betas(self, inputs, device, step: StepContext | None = None) -> dict[str, torch.Tensor | float]:
        """Per-sample β; calibrated components use the optimizer batch's ΔS range when the step was planned."""
        step = step if step is not None else inputs.get("step")
        present = {"y": None, "v": inputs["eta"].bool(), "a": inputs["gamma"].bool()}
        betas = {}
        for comp, fixed in self.args.fixed_betas.items():
            if fixed is not None:
                betas[comp] = float(fixed)
            else:
                mask = present[comp].to(device) if present[comp] is not None else None
                betas[comp] = calibrate_beta(
                    beta_input(inputs["scores"][comp].to(device), self.args.beta_delta),
                    scale=self.args.beta_scale,
                    offset=self.args.beta_offset,
                    mask=mask,
                    gather=self._gather,
                    bounds=step.bounds.get(comp) if step is not None else None,
                )
        return betas

    def _preference_loss(self, inputs, policy, ref, mode):
        device = policy["y_w"].device
        eta, gamma = inputs["eta"].to(device), inputs["gamma"].to(device)
        betas = self._betas(inputs, device)
        out = cavpref_loss(
            policy,
            ref,
            beta=betas,
            lambdas=self.args.lambdas,
            eta=eta,
            gamma=gamma,
            robust=self.args.robust_mode,
            gather=self._gather,
            world_size=self.accelerator.num_processes,
            step=inputs.get("step"),
        )
        self._log_step(inputs, out, betas, policy, ref, mode)
        step = inputs.get("step")
        if step is not None:
            m = self._metrics[mode]
            for comp, c in step.components.items():
                if not c.n:
                    continue
                if comp not in out.components:  # absent from this micro-batch: adds 0 to the step's mean
                    m[f"{comp}/loss"].append(0.0)
                else:  # Σ w² over the step, for the effective sample size 1 / Σ w²
                    w = self._gather(out.components[comp].weights.detach())
                    self._step_w2[comp] = self._step_w2.get(comp, 0.0) + float(w.pow(2).sum())
            self._step_micro += 1
            if self._step_micro == step.micro_batches:
                for comp, c in step.components.items():
                    if c.n:
                        m[f"{comp}/n"].append(float(c.n))
                        if self._step_w2.get(comp):
                            m[f"{comp}/ess"].append(1.0 / self._step_w2[comp])
                self._step_micro, self._step_w2 = 0, {}
        return out.loss

    def _log_step(self, inputs, out, betas, policy, ref, mode):
        # task_ids index the collator's switch table (the run's tasks)
        names = tuple(getattr(self.data_collator, "switches", None) or self._switches)
        log_preference_step(self._metrics[mode], self._gather, inputs, out, betas, policy, ref, names)
