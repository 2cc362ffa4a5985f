"""The objective of one optimizer step: ``CAVPrefObjective.plan`` then ``CAVPrefObjective.loss``, top to bottom.

A step's samples are every micro-batch of its gradient accumulation on every rank (HF Trainer draws them all
before the first forward, ``get_batch_samples``). The objective is defined over that optimizer batch, so it does
not depend on how the batch is split (8 x 1, 1 x 8, 2 x 4, 2 ranks x 1 x 4 give one gradient):

    margin_i  = (log π(w) − log π_ref(w)) − (log π(l) − log π_ref(l))        i ∈ {y, v, a}   (Eq. 1-3)
    ℓ_i       = −log σ(β_i · margin_i)
    β_i       = beta_scale · (ΔS − min ΔS) / (max ΔS − min ΔS) + beta_offset   (calibrated, min-max over the step)
    L_R^i     = sign · λ_i · (logsumexp_step(sign · ℓ_i / λ_i) − log n_i)   (Eq. 5; sign −1 paper, +1 worst_case;
                the plain mean over the step's n_i samples for cavpref_norobust / dpo)
    L         = L_R^y + [any η] L_R^v + [any γ] L_R^a                       (Eq. 6)

``plan(batches, model)`` (every rank, once per step, before any backward) computes what those sums over the
step need: each component's count n_i, β's min-max range of ΔS (dataset columns: free), and with
``robust_normalizer: exact`` Eq. 5's logsumexp — a no-grad policy forward (and reference forward, reused by the
backward pass) over the step's micro-batches, skipped when the step is one micro-batch on every rank (the loss's
in-graph normaliser is then exact). ``loss(model, inputs, plan)`` (once per micro-batch) runs the policy and
reference forwards of the rows the method needs and returns the micro-batch's exact share of the step's
gradient (``cavpref.loss``, the pure maths, tested with hand-computed numbers).

``method: sft`` is the token-mean NLL of the chosen responses over the step; ``method: dpo`` hands the log-probs
to TRL's own DPO loss code (every ``loss_type``, ``loss_weights``, ``label_smoothing``; ``dpo_loss`` below is the
trainer's bridge), per micro-batch as ``DPOTrainer`` does.

A micro-batch whose rows were all unusable (``skip_bad_rows``) or whose log-probs are not finite drops the whole
step on every rank (``ObjectiveOutput.skip_step``); the trainer then skips the optimizer and scheduler step.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import torch
from transformers.utils import logging

from cavpref.collator import SLOT_FIELDS
from cavpref.loss import (
    COMPONENTS,
    ComponentStep,
    StepContext,
    beta_bounds,
    beta_input,
    calibrate_beta,
    cavpref_loss,
    step_mean,
)
from cavpref.remedies import ancpo_ell
from cavpref.trainer.gather import gather_rows, unflatten
from cavpref.trainer.metrics import log_displacement, log_dpo_step, log_preference_step, log_step
from cavpref.trainer.reference import Reference
from cavpref.trainer.step_inputs import exact_normalizers, non_finite, response_tokens

logger = logging.get_logger(__name__)

# (policy, reference, token counts, TRL loss_type) -> TRL's loss of the micro-batch (the trainer's bridge to
# DPOTrainer's loss code).
DPOLoss = Callable[[dict, dict, dict, str], torch.Tensor]


@dataclass
class StepPlan:
    """One optimizer step, planned before its first forward; ``loss`` reads it micro-batch by micro-batch, in the
    order Trainer runs them (the order ``get_batch_samples`` returned)."""

    context: StepContext | None = None  # counts, β's ΔS range, Eq. 5's normaliser (None: sft / dpo)
    sft_tokens: torch.Tensor | None = (
        None  # sft term: the step's response-token count (every micro-batch, rank)
    )
    rows: int = 0  # TRL terms: the step's samples (every micro-batch, rank)
    references: list[dict | None] = field(default_factory=list)  # per micro-batch, from the exact pass
    skip: bool = False  # a rank had an empty micro-batch: the whole step is dropped everywhere
    dropped: bool = (
        False  # a micro-batch had non-finite log-probs (skip_bad_rows): the rest of the step is dropped
    )
    counts: Counter = field(default_factory=Counter)  # count/<name> increments (degenerate components)
    done: int = 0  # micro-batches whose loss has run
    w2: dict[str, float] = field(
        default_factory=dict
    )  # Σ w² per component over the step (effective sample size)


@dataclass
class ObjectiveOutput:
    loss: torch.Tensor
    metrics: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    counts: Counter = field(default_factory=Counter)
    skipped_rows: list[tuple[str, str]] = field(default_factory=list)
    skip_step: bool = False  # drop the whole optimizer step (every rank decides alike)


class CAVPrefObjective:
    """The objective of ``args.method`` (sft | dpo | cavpref_norobust | cavpref); see the module docstring.

    ``reference``: where reference log-probs come from (None for sft); with ``args.precompute_ref_log_probs`` the
    batch's precomputed columns are used instead. ``task_names``: the run's tasks in ``task_ids`` order.
    ``fields``: each slot's (response, media) columns (``collator.slot_fields``: errors name them).
    ``dpo_loss``: TRL's loss code for ``method: dpo``."""

    def __init__(
        self,
        args,
        model_io,
        *,
        reference: Reference | None,
        world_size: int,
        device: torch.device,
        task_names: tuple[str, ...],
        fields: Mapping[str, tuple[str, str]] = SLOT_FIELDS,
        dpo_loss: DPOLoss | None = None,
    ):
        self.args, self.model_io, self.reference = args, model_io, reference
        self.world_size, self.device, self.task_names = world_size, device, task_names
        self.fields, self.dpo_loss = fields, dpo_loss
        self.warned: set[tuple[str, str]] = set()

    def gather(self, t: torch.Tensor) -> torch.Tensor:
        """All-gather along dim 0 over the ranks (lengths may differ per rank)."""
        return gather_rows(t, self.world_size)

    # ------------------------------------------------------------------ plan (once per optimizer step)

    def plan(self, batches: list[dict], model: torch.nn.Module) -> StepPlan:
        """The step's plan from this rank's micro-batches (every rank calls it with its own)."""
        plan = StepPlan()
        # every rank must make the same collective calls: an empty micro-batch anywhere drops the step everywhere
        if self.world_size > 1:
            local = torch.tensor([sum(1 for b in batches if b.get("empty"))], device=self.device)
            plan.skip = int(self.gather(local).sum()) > 0
        batches = [b for b in batches if not b.get("empty")]
        if plan.skip or not batches:
            return plan
        terms = self.args.terms
        plan.context = StepContext(len(batches))
        if any(t.kind == "sft" for t in terms):
            tokens = sum(response_tokens(b).sum() for b in batches)
            plan.sft_tokens = self.gather(tokens.to(torch.float32).reshape(1).to(self.device)).sum()
        if any(t.kind == "trl" for t in terms):
            rows = torch.tensor([sum(len(b["eta"]) for b in batches)], device=self.device)
            plan.rows = int(self.gather(rows).sum())
        if any(t.kind in ("cavpref", "ancpo") for t in terms):
            self._plan_preference(plan, batches, model)
        return plan

    def _plan_preference(self, plan: StepPlan, batches: list[dict], model: torch.nn.Module) -> None:
        args, present = self.args, _present(batches, self.device)
        counts = {c: int(self.gather(present[c].sum().reshape(1).to(torch.long)).sum()) for c in COMPONENTS}
        bounds = {}
        for comp, fixed in args.fixed_betas.items():
            if fixed is None:
                d = torch.cat([b["scores"][comp] for b in batches]).to(self.device)
                bounds[comp] = beta_bounds(beta_input(d, args.beta_delta), present[comp], self.gather)
        plan.context = StepContext(len(batches), {c: ComponentStep(counts[c]) for c in COMPONENTS}, bounds)
        self._check_degenerate(plan)
        # One micro-batch on every rank: that micro-batch (gathered) is the optimizer batch, and the loss's in-graph
        # normaliser is already exact — the no-grad pass would compute the same number at the cost of a forward.
        micro = int(self.gather(torch.tensor([len(batches)], device=self.device)).max())
        robust_terms = any(t.kind == "cavpref" for t in args.terms) and args.robust_mode != "none"
        if robust_terms and args.robust_normalizer == "exact" and micro > 1:
            lse = exact_normalizers(self, model, batches, plan)
            plan.context = StepContext(
                len(batches), {c: ComponentStep(counts[c], lse.get(c)) for c in COMPONENTS}, bounds
            )

    def _check_degenerate(self, plan: StepPlan) -> None:
        """Warn once per component and reason, count every occurrence (logged as ``count/degenerate/<comp>``)."""
        args, ctx = self.args, plan.context
        robust = args.robust_mode != "none"
        for comp, c in ctx.components.items():
            calibrated = comp in ctx.bounds
            if not (calibrated or robust) or c.n == 0:
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
            plan.counts[f"degenerate/{comp}"] += 1
            if (comp, reason) not in self.warned:
                self.warned.add((comp, reason))
                logger.warning(
                    f"CAVPref component {comp!r} {msg} (optimizer batch = {args.per_device_train_batch_size} x "
                    f"{ctx.micro_batches} micro-batches x {self.world_size} ranks; counted as "
                    f"count/degenerate/{comp}; this warning is shown once)"
                )

    # ------------------------------------------------------------------ loss (once per micro-batch)

    def loss(self, model: torch.nn.Module, inputs: dict, plan: StepPlan | None) -> ObjectiveOutput:
        """The micro-batch's loss (its share of the step's objective when ``plan`` is given; evaluation passes
        None: the micro-batch, gathered over ranks, is the whole batch)."""
        if plan is not None and (plan.skip or plan.dropped):  # decided on every rank alike: no collective
            return self._dropped(model, inputs, plan)
        if inputs.get("empty"):  # every row unusable (skip_bad_rows): skip the batch, its rows are reported
            self.gather(
                torch.tensor([1], device=self.device)
            )  # the other ranks' non-finite vote: all skip alike
            return ObjectiveOutput(_zero_loss(model), counts=Counter(skipped_batches=1))
        reference = None
        if plan is not None:
            reference = plan.references[plan.done] if plan.references else None
            plan.done += 1
        policy, ref = self.logps(model, inputs, reference)
        bad = non_finite(inputs, policy, ref, self.fields)
        if bool(self.gather(torch.tensor([len(bad)], device=self.device)).sum() > 0):  # every rank alike
            if not self.args.skip_bad_rows:
                raise FloatingPointError(
                    "non-finite log-probs (set skip_bad_rows to skip the batch and count it): "
                    + "; ".join(msg for _, msg in bad)
                )
            if plan is not None:  # the step's objective is defined over all its micro-batches: drop the step
                plan.dropped = True
            out = ObjectiveOutput(_zero_loss(model), counts=Counter(skipped_batches=1), skip_step=True)
            out.skipped_rows = [(ex_id, "batch skipped: " + msg) for ex_id, msg in bad]
            return out
        if self.args.method == "sft":
            return self._sft(inputs, policy, plan)
        return self._terms(inputs, policy, ref, plan)

    def _dropped(self, model, inputs, plan: StepPlan) -> ObjectiveOutput:
        """A micro-batch of a dropped step: zero loss, no forward."""
        out = ObjectiveOutput(_zero_loss(model), skip_step=True)
        if plan.skip:
            reason = "step skipped: a micro-batch of this optimizer step had no usable row on some rank"
            out.counts["skipped_batches"] += 1
            out.skipped_rows = [(str(i), reason) for i in inputs.get("example_ids", [])]
        return out

    def logps(self, model, inputs, reference: dict | None = None) -> tuple[dict, dict | None]:
        """(policy, reference) per-sample summed log-probs, {slot: (B,)}; reference None for sft."""
        flat = self.model_io.logps(model, inputs["model_inputs"]).to(torch.float32)
        policy = unflatten(flat, inputs["slots"])
        if self.args.method == "sft":
            return policy, None
        if reference is not None:  # computed by the exact normaliser's pass of this step
            return policy, {k: v.to(flat.device) for k, v in reference.items()}
        if self.args.precompute_ref_log_probs and "ref" in inputs:
            return policy, {k: v.to(flat.device) for k, v in inputs["ref"].items()}
        return policy, unflatten(self.reference.logps(model, inputs["model_inputs"]), inputs["slots"])

    def betas(self, inputs, device, context: StepContext | None = None) -> dict[str, torch.Tensor | float]:
        """Per-sample β; calibrated components use the optimizer batch's ΔS range when the step was planned."""
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
                    gather=self.gather,
                    bounds=context.bounds.get(comp) if context is not None else None,
                )
        return betas

    def _sft(self, inputs, policy, plan: StepPlan | None) -> ObjectiveOutput:
        """``method: sft``: the ``sft`` term alone."""
        out = ObjectiveOutput(self._sft_term(inputs, policy, plan))
        out.metrics["sft/nll_per_token"].append(float(out.loss.detach()))
        out.metrics["rows/policy"].append(float(self.gather(inputs["num_rows"].reshape(1)).sum()))
        return out

    def _sft_term(self, inputs, policy, plan: StepPlan | None) -> torch.Tensor:
        """Token-mean NLL of the chosen response under the presented media, normalised by the step's token count
        so DDP averaging and Trainer's division by the micro-batches reproduce the one-process gradient (TRL's
        ``sft`` takes the mean per micro-batch instead)."""
        tokens = response_tokens(inputs).to(policy["y_w"].device)
        n_local = tokens.sum().to(torch.float32)
        sum_local = policy["y_w"].sum()
        micro = plan.context.micro_batches if plan is not None and plan.context is not None else 1
        n_global = (
            plan.sft_tokens.to(n_local.device)
            if plan is not None and plan.sft_tokens is not None
            else self.gather(n_local.reshape(1)).sum()
        )
        sum_global = self.gather(sum_local.detach().reshape(1)).sum()
        value = -micro * sum_global / n_global  # averaged over the step's micro-batches: the step's value
        surrogate = -self.world_size * micro * sum_local / n_global
        return value + surrogate - surrogate.detach()

    def _trl_term(self, name: str, inputs, policy, ref, plan: StepPlan | None) -> torch.Tensor:
        """TRL's ``name`` loss (with ``beta``, ``label_smoothing``, …) by TRL's own code, a mean over this
        micro-batch, rescaled by the micro-batch's share of the step's samples (``rows · micro_batches ·
        world_size / step rows``: 1 for equal micro-batches) so unequal splits give the step's mean too."""
        tokens = {s: response_tokens(inputs, s).to(policy[s].device) for s in ("y_w", "y_l")}
        loss = self.dpo_loss(policy, ref, tokens, name)
        if plan is None or not plan.rows:
            return loss
        micro = plan.context.micro_batches if plan.context is not None else 1
        return loss * (len(policy["y_w"]) * micro * self.world_size / plan.rows)

    def _terms(self, inputs, policy, ref, plan: StepPlan | None) -> ObjectiveOutput:
        """The weighted sum of the objective's terms (``args.terms``, ``cavpref.terms``), each logged as
        ``term/<name>``: CAVPref's components in one ``cavpref_loss`` call, mDPO's anchors, the step-exact
        ``sft`` and TRL's loss types."""
        args, terms = self.args, self.args.terms
        device = policy["y_w"].device
        context = plan.context if plan is not None else None
        total = torch.zeros((), dtype=torch.float32, device=device)
        values: dict[str, torch.Tensor] = {}
        out = ObjectiveOutput(total)
        own = [t for t in terms if t.kind == "cavpref"]
        betas = (
            self.betas(inputs, device, context) if any(t.kind in ("cavpref", "ancpo") for t in terms) else {}
        )
        present = {
            "y": torch.ones_like(inputs["eta"], dtype=torch.bool),
            "v": inputs["eta"].bool(),
            "a": inputs["gamma"].bool(),
        }
        present = {k: v.to(device) for k, v in present.items()}
        if own:
            result = cavpref_loss(
                policy,
                ref,
                beta=betas,
                lambdas=args.lambdas,
                eta=present["v"],
                gamma=present["a"],
                robust=args.robust_mode,
                gather=self.gather,
                world_size=self.world_size,
                step=context,
                components=tuple(t.component for t in own),
                weights={t.component: t.weight for t in own},
                dpop_lambda=args.dpop_lambda,
            )
            total = total + result.loss
            for t in own:
                comp = result.components.get(t.component)
                values[t.name] = comp.loss if comp is not None else torch.zeros((), device=device)
            log_preference_step(
                out.metrics, self.gather, inputs, result, betas, policy, ref, self.task_names, context
            )
            self._log_step_components(out, result, plan)
        for t in terms:
            if t.kind != "cavpref":
                values[t.name] = self.term_value(t, inputs, policy, ref, plan, betas)
                total = total + t.weight * values[t.name]
        trl = [t for t in terms if t.kind == "trl"]
        if trl:
            trl_sum = sum(t.weight * values[t.name] for t in trl)
            log_dpo_step(
                out.metrics, self.gather, inputs, trl_sum, float(args.beta), policy, ref, self.task_names
            )
        out.loss = total
        log_step(out.metrics, self.gather, inputs, total, values)
        log_displacement(out.metrics, self.gather, inputs, policy, ref, self.task_names)
        return out

    def term_value(self, term, inputs, policy, ref, plan: StepPlan | None = None, betas=None) -> torch.Tensor:
        """One ``sft`` / ``trl`` / ``ancpo`` term of the objective on a micro-batch (unweighted), as the surrogate
        the step backpropagates; ``plan`` None: the micro-batch is the whole batch. (CAVPref's own terms are one
        ``cavpref_loss`` call: their β ranges and Eq. 5 weights couple the samples.)"""
        if term.kind == "sft":
            return self._sft_term(inputs, policy, plan)
        if term.kind == "trl":
            return self._trl_term(term.name, inputs, policy, ref, plan)
        if term.kind != "ancpo":
            raise ValueError(f"term {term.name!r} ({term.kind}) is computed by cavpref_loss, not term_value")
        c, context = term.component, plan.context if plan is not None else None
        device = policy["y_w"].device
        present = {
            "y": torch.ones_like(inputs["eta"], dtype=torch.bool),
            "v": inputs["eta"].bool(),
            "a": inputs["gamma"].bool(),
        }[c].to(device)
        beta = (betas if betas is not None else self.betas(inputs, device, context))[c]
        ell = ancpo_ell(policy[f"{c}_w"], ref[f"{c}_w"], beta, self.args.ancpo_delta, present)
        return step_mean(
            ell,
            present,
            n=context.components[c].n if context is not None and context.components else None,
            gather=self.gather,
            world_size=self.world_size,
            micro_batches=context.micro_batches if context is not None else 1,
        )

    def _log_step_components(self, out: ObjectiveOutput, result, plan: StepPlan | None) -> None:
        """Per component, over the optimizer step: 0 for a component absent from this micro-batch (it adds 0 to
        the step's mean), and on the step's last micro-batch its sample count and effective sample size."""
        context = plan.context if plan is not None else None
        if context is None:
            return
        own = [t.component for t in self.args.terms if t.kind == "cavpref"]
        for comp in own:
            c = context.components[comp]
            if not c.n:
                continue
            if comp not in result.components:
                out.metrics[f"{comp}/loss"].append(0.0)
            else:  # Σ w² over the step, for the effective sample size 1 / Σ w²
                w = self.gather(result.components[comp].weights.detach())
                plan.w2[comp] = plan.w2.get(comp, 0.0) + float(w.pow(2).sum())
        if plan.done == context.micro_batches:  # the step's last micro-batch
            for comp in own:
                c = context.components[comp]
                if c.n:
                    out.metrics[f"{comp}/n"].append(float(c.n))
                    if plan.w2.get(comp):
                        out.metrics[f"{comp}/ess"].append(1.0 / plan.w2[comp])


def _present(batches, device) -> dict[str, torch.Tensor]:
    eta = torch.cat([b["eta"] for b in batches]).to(device).bool()
    gamma = torch.cat([b["gamma"] for b in batches]).to(device).bool()
    return {"y": torch.ones_like(eta), "v": eta, "a": gamma}


def _zero_loss(model: torch.nn.Module) -> torch.Tensor:
    """Zero for every trainable parameter, connected so DDP's reducer sees all of them, and not through a forward,
    so no NaN can reach the weights."""
    return sum((p.reshape(-1)[:1] * 0).sum() for p in model.parameters() if p.requires_grad)
