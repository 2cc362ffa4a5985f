"""The optimizer step as the unit of the CAVPref objective.

HF Trainer draws all micro-batches of one optimizer step before the first forward (``get_batch_samples``). That
is where the step's context is computed, over every micro-batch and every rank (``cavpref.loss.StepContext``):

* each component's sample count ``n`` (the denominator of its mean — so the objective is the same whether the
  step is one batch of 8, eight accumulated batches of 1, or 2 ranks x 1 x 4; homogeneous or mixed);
* β's min-max range of ΔS — dataset columns only, so this costs nothing;
* with ``robust_normalizer: exact`` and a robust method, Eq. 5's log-sum-exp: a no-grad policy forward (and a
  reference forward unless the reference log-probs are precomputed) over the step's micro-batches, before the
  weighted backward of each. When the step is a single micro-batch on every rank (no gradient accumulation),
  that micro-batch is the optimizer batch and the loss's own in-graph normaliser is the exact one: no extra pass. ``micro_batch`` skips that pass and uses each micro-batch's own normaliser weighted by
  its share of the step (exact when the step is one micro-batch on all ranks; an approximation otherwise).

It also warns once (and counts, ``count/degenerate/<component>``) when a component has fewer than
``min_component_samples`` samples in a step, or all its ΔS are equal: the min-max or the log-mean-exp then carry
no information about the batch.
"""

from __future__ import annotations

import contextlib

import torch
from transformers.utils import logging

from cavpref.loss import (
    COMPONENTS,
    ComponentStep,
    StepContext,
    beta_bounds,
    beta_input,
    component_ell,
    robust_sign,
)
from cavpref.trainer.checkpointing import checkpointing_paused

logger = logging.get_logger(__name__)


@contextlib.contextmanager
def policy_no_grad(trainer):
    """The policy forward of the exact normaliser: no grad, no activation checkpointing (nothing to recompute)."""
    with torch.no_grad(), checkpointing_paused(trainer.model):
        yield


def _present(batches, device) -> dict[str, torch.Tensor]:
    eta = torch.cat([b["eta"] for b in batches]).to(device).bool()
    gamma = torch.cat([b["gamma"] for b in batches]).to(device).bool()
    return {"y": torch.ones_like(eta), "v": eta, "a": gamma}


def plan_step(trainer, batches: list[dict]) -> StepContext:
    """The step context of ``batches`` (this rank's micro-batches of one optimizer step); every rank calls it."""
    args = trainer.args
    device = trainer.accelerator.device
    gather = trainer._gather
    present = _present(batches, device)
    counts = {c: int(gather(present[c].sum().reshape(1).to(torch.long)).sum()) for c in COMPONENTS}
    bounds = {}
    for comp, fixed in args.fixed_betas.items():
        if fixed is None:
            d = torch.cat([b["scores"][comp] for b in batches]).to(device)
            bounds[comp] = beta_bounds(beta_input(d, args.beta_delta), present[comp], gather)
    ctx = StepContext(len(batches), {c: ComponentStep(counts[c]) for c in COMPONENTS}, bounds)
    _check_degenerate(trainer, ctx)
    # One micro-batch on every rank: that micro-batch (gathered) is the optimizer batch, and the loss's in-graph
    # normaliser is already exact — the no-grad pass would compute the same number at the cost of a forward.
    micro = int(gather(torch.tensor([len(batches)], device=device)).max())
    if args.robust_mode != "none" and args.robust_normalizer == "exact" and micro > 1:
        lse = exact_normalizers(trainer, batches, ctx)
        ctx = StepContext(
            ctx.micro_batches, {c: ComponentStep(counts[c], lse.get(c)) for c in COMPONENTS}, bounds
        )
    return ctx


def exact_normalizers(trainer, batches: list[dict], ctx: StepContext) -> dict[str, float]:
    """logsumexp over the optimizer batch of sign * ell / lambda per component, from a no-grad pass.

    The policy runs in the mode the weighted backward will use (train; TRL's ``disable_dropout`` makes the two
    passes identical); samples whose log-probs are not finite are left out (their micro-batch is skipped)."""
    args = trainer.args
    sign = robust_sign(args.robust_mode)
    model = trainer.model_wrapped if trainer.model_wrapped is not None else trainer.model
    z: dict[str, list[torch.Tensor]] = {c: [] for c in COMPONENTS}
    device = trainer.accelerator.device
    for batch in batches:
        inputs = trainer._prepare_inputs(batch)
        with policy_no_grad(trainer):
            policy, ref = trainer._logps(model, inputs)
        if ref is not None:  # the backward pass reuses them: the reference runs once per micro-batch
            batch["step_ref_logps"] = {k: v.detach() for k, v in ref.items()}
        betas = trainer._betas(inputs, policy["y_w"].device, ctx)
        present = {"y": None, "v": inputs["eta"].bool(), "a": inputs["gamma"].bool()}
        for comp in COMPONENTS:
            mask = present[comp]
            mask = torch.ones_like(policy["y_w"], dtype=torch.bool) if mask is None else mask.to(device)
            if not bool(mask.any()):
                continue
            w, lo = f"{comp}_w", f"{comp}_l"
            vals = (policy[w], policy[lo], ref[w], ref[lo])
            ok = mask & torch.stack([torch.isfinite(v) for v in vals]).all(0)
            ell = component_ell(*vals, betas[comp], ok)
            z[comp].append((sign * ell.double() / float(args.lambdas[comp]))[ok])
    out = {}
    for comp in COMPONENTS:
        if ctx.components[comp].n == 0:
            continue
        local = torch.cat(z[comp]) if z[comp] else torch.zeros(0, dtype=torch.float64, device=device)
        everything = trainer._gather(local)
        if everything.numel():
            out[comp] = float(torch.logsumexp(everything, dim=0))
    return out


def _check_degenerate(trainer, ctx: StepContext) -> None:
    """Warn once per component and reason, count every occurrence (logged as ``count/degenerate/<comp>``)."""
    args = trainer.args
    robust = args.robust_mode != "none"
    for comp, c in ctx.components.items():
        calibrated = comp in ctx.bounds
        if args.method == "sft" or not (calibrated or robust) or c.n == 0:
            continue
        what = " and ".join(
            x for x, on in (("β's min-max", calibrated), ("Eq. 5's log-mean-exp", robust)) if on
        )
        bounds = ctx.bounds.get(comp)
        if c.n < args.min_component_samples:
            reason = "few"
            msg = (
                f"has only {c.n} sample(s) in this optimizer batch (min_component_samples="
                f"{args.min_component_samples}): its {what} carry almost no information"
            )
        elif calibrated and bounds is not None and not bounds[1] > bounds[0]:
            reason = "equal"
            msg = f"has all {c.n} ΔS equal ({bounds[0]:.4g}) in this optimizer batch: every β is the midpoint"
        else:
            continue
        key = f"degenerate/{comp}"
        trainer._log_counts[key] += 1
        if (comp, reason) not in trainer._warned:
            trainer._warned.add((comp, reason))
            logger.warning(
                f"CAVPref component {comp!r} {msg} (optimizer batch = {args.per_device_train_batch_size} x "
                f"{ctx.micro_batches} micro-batches x {trainer.accelerator.num_processes} ranks; counted as "
                f"count/{key}; this warning is shown once)"
            )
