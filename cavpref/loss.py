"""The CAVPref loss (AVTrustBench paper, Eq. 1-6 and Algorithm 1) as pure functions of log-probs.

No model lives here: the trainer computes per-sample summed response log-probs and hands them over, so
every formula can be checked against hand-computed numbers.

Components i in {y, v, a}:
    margin_i = (log pi(w) - log ref(w)) - (log pi(l) - log ref(l))
    L^i      = log sigmoid(beta_i * margin_i)                     (per sample, <= 0)
    ell^i    = -L^i                                               (per-sample loss, >= 0)
  y: (y_w | presented media) vs (y_l | presented media)
  v: (y_w | V_w, A_w) vs (y_w | V_l, A_w)   -- only samples with eta = 1
  a: (y_w | V_w, A_w) vs (y_w | V_w, A_l)   -- only samples with gamma = 1

Robust aggregation over the n samples having component i (``robust=``):
  "paper"      L_R = -lambda * log mean exp(L / lambda)   (Eq. 5 as printed; Dr. DPO). A soft-MIN of ell:
               each sample's gradient weight is softmax(-ell / lambda), so high-loss (possibly mislabelled)
               pairs are DOWN-weighted; lambda -> inf gives the plain mean.
  "worst_case" L_R = +lambda * log mean exp(ell / lambda)  (the reading of Eq. 4's prose, "worst-case risk").
               A soft-MAX of ell: weights softmax(+ell / lambda), high-loss pairs UP-weighted; lambda -> inf
               gives the mean.
  "none"       L_R = mean(ell)   ("CAVPref w/o Robustness").
Total = L_R^y + [any eta] L_R^v + [any gamma] L_R^a  (Eq. 6; a term is present when any sample has it).

The optimizer batch is the unit (``step=StepContext``). Every mean, β's min-max and Eq. 5's normaliser cover
all samples of one optimizer step — every micro-batch of the gradient accumulation, on every rank — so the
objective does not depend on how the step's samples are split. Each component's mean is (sum over the
optimizer batch) / (its global count ``n``), with the *same* ``n`` whether the batch is task-homogeneous or
mixed (a sample without the component is not in its sum nor in its count). The trainer computes the counts,
β's range and (``robust_normalizer=exact``) the log-sum-exp over the step before the first backward and passes
them here; one micro-batch then returns ``micro_batches * world_size`` x its exact share of the gradient, so
that HF Trainer's ``loss / micro_batches`` and DDP's gradient averaging over ``world_size`` ranks reproduce the
one-process, one-batch gradient. The returned value is the micro-batch's share of the step's value, times
``micro_batches``: averaged over the step's micro-batches (what Trainer logs) it is the step's exact value.
Without ``step`` the micro-batch (gathered over ranks with ``gather``) is the whole optimizer batch.

Anchors: a departure from the paper, on purpose. The paper (Eq. 2-3) and the released sketch write the
visual / audio terms as ``y_w`` under clean vs perturbed media. Our data carry a separate *anchor response*
(``visual_response`` / ``audio_response``: the answer to the original question on the clean media, mDPO's
conditional anchor) and compare it under clean vs perturbed media. Why: in the tasks where the paper turns
the anchors on (MVIT, MAIT, MVT, MAT, COT-Swap) ``y_w`` is the abstention/"missing" answer, which is
*correct* under the perturbed media. The y-term raises log pi(y_w | perturbed) (the presented media are the
perturbed ones); the literal v-term, log sigmoid(β (log pi(y_w | clean) - log pi(y_w | perturbed)) + ...),
lowers it: its gradient on log pi(y_w | perturbed) is -β_V sigmoid(-β_V m_V), the y-term's is
+β_y sigmoid(-β_y m_y), so the two pull the same log-prob in opposite directions and cancel exactly when
the weights meet (e.g. at initialisation, m = 0, with β_y = β_V). With the original answer as anchor, the v/a terms raise "the answer the clean
media supports" on clean media and lower it on perturbed media, which agrees with the y-term (abstain there):
the gradients add instead of cancelling. ``switch_variant`` and the anchor columns keep the literal form
reachable (put ``chosen`` in the anchor response column), but it is not the default.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from cavpref import task_registry
from cavpref.remedies import dpop_penalty

Gather = Callable[[torch.Tensor], torch.Tensor]
COMPONENTS = ("y", "v", "a")
ROBUST_MODES = ("paper", "worst_case", "none")
PAPER_LAMBDAS = {"y": 1.0, "v": 1.0, "a": 0.8}

# Eq. 6 switches (eta: visual term, gamma: audio term) of the built-in tasks; each task's come from its
# ``cavpref.task_registry`` entry (a task added later brings its own). The released reference code also sets
# gamma on COT-Swap (both streams are perturbed there); ``variant="released"`` reproduces that.
DEFAULT_SWITCHES = {t.name: t.switch_pair("paper") for t in task_registry.BUILTIN_TASKS}


def switches_for(
    task: str, variant: str = "paper", table: Mapping[str, tuple[int, int]] | None = None
) -> tuple[int, int]:
    """(eta, gamma) for a task. ``table`` (a recipe's override) wins over the declared task's variants."""
    if table is not None and task in table:
        eta, gamma = table[task]
        return int(eta), int(gamma)
    info = task_registry.task_info(task)  # KeyError naming the declared tasks
    return info.switch_pair(variant)


BETA_DELTAS = ("signed", "abs")


def beta_input(delta_s: torch.Tensor, beta_delta: str = "abs") -> torch.Tensor:
    """The quantity β's min-max sees: ΔS as stored (``signed``) or its magnitude (``abs``).

    The paper wants a small β for semantically *close* chosen / rejected responses. Closeness is |ΔS|: with
    ``signed``, the smallest β goes to the most negative ΔS — pairs whose *rejected* answer fits the media
    better — not to the close ones. See docs/training.md for the default."""
    if beta_delta not in BETA_DELTAS:
        raise ValueError(f"beta_delta must be one of {BETA_DELTAS}, got {beta_delta!r}")
    d = delta_s.detach().to(torch.float32)
    return d.abs() if beta_delta == "abs" else d


def beta_bounds(
    delta_s: torch.Tensor, mask: torch.Tensor | None = None, gather: Gather | None = None
) -> tuple[float, float] | None:
    """(min, max) of the finite, masked entries (gathered over ranks), or None when there are none."""
    d = delta_s.detach().to(torch.float32)
    m = torch.isfinite(d) if mask is None else (mask.to(torch.bool) & torch.isfinite(d))
    d_all, m_all = (gather(d), gather(m.float()) > 0.5) if gather is not None else (d, m)
    if not bool(m_all.any()):
        return None
    return float(d_all[m_all].min()), float(d_all[m_all].max())


def calibrate_beta(
    delta_s: torch.Tensor,
    *,
    scale: float = 0.9,
    offset: float = 0.1,
    mask: torch.Tensor | None = None,
    gather: Gather | None = None,
    bounds: tuple[float, float] | None = None,
) -> torch.Tensor:
    """beta = scale * dS_norm + offset, dS min-max normalised over the (global) batch.

    Only entries with ``mask`` true (default: all finite entries) take part in the min-max and get a
    calibrated value; the others get ``offset + scale / 2`` and should be ignored by the caller.
    ``bounds``: the (min, max) of the whole optimizer batch (``beta_bounds`` over every micro-batch and rank);
    default: this (gathered) batch's. Apply ``beta_input`` first to choose signed or absolute ΔS.
    Degenerate batch (one element, or all equal): dS_norm = 0.5 for every element, i.e. the midpoint
    beta = offset + scale / 2 (0.55 with the paper's constants) — no information on relative similarity,
    so neither extreme is picked.
    """
    d = delta_s.detach().to(torch.float32)
    m = torch.isfinite(d) if mask is None else (mask.to(torch.bool) & torch.isfinite(d))
    mid = torch.full_like(d, offset + scale / 2)
    if bounds is None:
        bounds = beta_bounds(d, m, gather)
    if bounds is None:
        return mid
    lo, hi = (torch.tensor(float(b), dtype=torch.float32, device=d.device) for b in bounds)
    if not bool(hi > lo):
        return mid
    norm = ((d - lo) / (hi - lo)).clamp(0.0, 1.0)
    return torch.where(m, scale * norm + offset, mid)


@dataclass(frozen=True)
class ComponentStep:
    """One component over the whole optimizer batch (every micro-batch, every rank)."""

    n: int  # samples having the component
    lse: float | None = None  # logsumexp of sign * ell / lambda over them (robust modes, exact normaliser)


@dataclass(frozen=True)
class StepContext:
    """What one micro-batch needs to know about its optimizer step (computed by the trainer when the step's
    micro-batches are drawn). ``lse`` None for a robust component = the micro-batch approximation."""

    micro_batches: int = 1
    components: Mapping[str, ComponentStep] = field(default_factory=dict)
    bounds: Mapping[str, tuple[float, float] | None] = field(default_factory=dict)  # β's ΔS range


def _margin_ell(
    pol_w, pol_l, ref_w, ref_l, beta, present, dpop_lambda=0.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """(margin, ell = -log sigmoid(beta * (margin - dpop))), (B,) fp32; ``dpop`` is DPOP's penalty on a chosen
    log-prob below the reference's (``cavpref.remedies.dpop_penalty``; 0 unless ``dpop_lambda``). Absent entries
    are selected away before any arithmetic (they may hold NaN, and NaN * 0 would poison the gradient): margin 0
    there, ell finite. The returned margin is the plain one (what the logs and reward accuracy read)."""
    zero = torch.zeros((), dtype=torch.float32, device=pol_w.device)
    fill = lambda x: torch.where(present, x.to(torch.float32), zero)
    margin = (fill(pol_w) - fill(ref_w)) - (fill(pol_l) - fill(ref_l))
    beta_t = torch.as_tensor(beta, dtype=torch.float32, device=margin.device).expand_as(margin)
    beta_t = torch.where(present, beta_t, torch.ones_like(beta_t))
    inside = margin - dpop_penalty(fill(pol_w), fill(ref_w), dpop_lambda) if dpop_lambda else margin
    return margin, -F.logsigmoid(beta_t * inside)


def component_ell(
    pol_w: torch.Tensor,
    pol_l: torch.Tensor,
    ref_w: torch.Tensor,
    ref_l: torch.Tensor,
    beta: torch.Tensor | float,
    present: torch.Tensor,
    dpop_lambda: float = 0.0,
) -> torch.Tensor:
    """ell = -log sigmoid(beta * margin), (B,), 0 where ``present`` is false (absent entries may hold NaN)."""
    _, ell = _margin_ell(pol_w, pol_l, ref_w, ref_l, beta, present, dpop_lambda)
    return torch.where(present, ell, torch.zeros((), dtype=torch.float32, device=ell.device))


def robust_sign(robust: str) -> float:
    """paper: soft-min of ell (weights softmax(-ell / lambda)); worst_case: soft-max (softmax(+ell / lambda))."""
    return -1.0 if robust == "paper" else 1.0


def robust_exponent(ell: torch.Tensor, lam: float, robust: str) -> torch.Tensor:
    """Eq. 5's exponent ``sign · ℓ / λ`` in fp64 (the one place it is written): the robust aggregate is
    ``sign · λ · (logsumexp(exponent) − log n)`` and each sample's weight is ``exp(exponent − logsumexp)``."""
    return robust_sign(robust) * ell.double() / float(lam)


@dataclass
class ComponentOutput:
    loss: torch.Tensor  # scalar (global value)
    per_sample: (
        torch.Tensor
    )  # ell = -log sigmoid(beta * margin), (B,), NaN where the sample lacks the component
    margins: torch.Tensor  # (B,) beta-free margins, NaN where absent
    rewards_acc: torch.Tensor  # scalar: fraction of present samples with margin > 0
    weights: torch.Tensor  # (B,) aggregation weights (sum to 1 over the global present set), 0 where absent
    n: int  # global number of samples with the component


@dataclass
class CAVPrefLossOutput:
    loss: torch.Tensor
    components: dict[str, ComponentOutput] = field(default_factory=dict)

    def metrics(self) -> dict[str, float]:
        """Flat floats for logging: loss, margin, reward accuracy, and the effective sample size
        (1 / sum w^2) of the aggregation weights, per component."""
        out = {"loss": float(self.loss.detach())}
        for name, c in self.components.items():
            present = torch.isfinite(c.margins)
            out[f"{name}/loss"] = float(c.loss.detach())
            out[f"{name}/margin"] = float(c.margins[present].mean()) if bool(present.any()) else float("nan")
            out[f"{name}/reward_acc"] = float(c.rewards_acc)
            w = c.weights[present]
            out[f"{name}/ess"] = (
                float(1.0 / (w.pow(2).sum())) if w.numel() and bool(w.sum() > 0) else float("nan")
            )
            out[f"{name}/n"] = c.n
        return out


def _component(
    pol_w: torch.Tensor,
    pol_l: torch.Tensor,
    ref_w: torch.Tensor,
    ref_l: torch.Tensor,
    beta: torch.Tensor | float,
    lam: float,
    present: torch.Tensor,
    robust: str,
    gather: Gather | None,
    world_size: int,
    step: ComponentStep | None = None,
    micro_batches: int = 1,
    dpop_lambda: float = 0.0,
) -> ComponentOutput:
    zero = torch.zeros((), dtype=torch.float32, device=pol_w.device)
    margin, ell = _margin_ell(pol_w, pol_l, ref_w, ref_l, beta, present, dpop_lambda)  # (B,), finite

    ell_d = ell.detach()
    ell_all = gather(ell_d) if gather is not None else ell_d
    present_all = gather(present.float()) > 0.5 if gather is not None else present
    n_mb = int(present_all.sum())  # this micro-batch, all ranks
    n = n_mb if step is None else int(step.n)  # the optimizer batch
    nan = torch.full_like(ell_d, float("nan"))
    if n_mb == 0 or n == 0:
        return ComponentOutput(zero, nan, nan, zero, torch.zeros_like(ell_d), n)
    share = n_mb / n  # this micro-batch's fraction of the component's samples in the step

    if robust == "none":
        value, weights = _mean_share(ell_all, present_all, present, n)
    else:
        # The scalar reduction runs in fp64: lambda * (logsumexp - log n) cancels catastrophically in fp32
        # for large lambda (the lambda -> inf limit must recover the mean).
        sign = robust_sign(robust)
        z = torch.where(
            present, robust_exponent(ell_d, lam, robust), torch.full_like(ell_d, -math.inf).double()
        )
        if step is not None and step.lse is not None:  # exact: the optimizer batch's normaliser
            lse = torch.tensor(float(step.lse), dtype=torch.float64, device=ell_d.device)
            value = (share * sign * lam * (lse - math.log(n))).float()
            weights = torch.exp(z - lse).float()
        else:  # this micro-batch's normaliser, weighted by its share of the step (exact for one micro-batch)
            z_all = torch.where(
                present_all,
                robust_exponent(ell_all, lam, robust),
                torch.full_like(ell_all, -math.inf).double(),
            )
            lse = torch.logsumexp(z_all, dim=0)
            value = (share * sign * lam * (lse - math.log(n_mb))).float()
            weights = (share * torch.exp(z - lse)).float()  # 0 for absent samples
    # Surrogate: value + (d/d ell of the aggregate) . (ell - ell.detach()), scaled for Trainer's division by
    # the number of micro-batches and DDP's averaging over ranks.
    scale = world_size * micro_batches
    surrogate = micro_batches * value + scale * (weights * (ell - ell_d)).sum()
    acc = (margin[present] > 0).float().sum()
    acc_all = acc if gather is None else gather(acc.reshape(1)).sum()
    return ComponentOutput(
        loss=surrogate,
        per_sample=torch.where(present, ell_d, nan),
        margins=torch.where(present, margin.detach(), nan),
        rewards_acc=acc_all / n_mb,
        weights=weights,
        n=n,
    )


def _mean_share(ell_all, present_all, present, n) -> tuple[torch.Tensor, torch.Tensor]:
    """The plain mean's share of this micro-batch (all ranks) in the step's mean over ``n`` samples, and each
    local sample's weight ``1 / n``."""
    return ell_all[present_all].sum() / n, present.to(torch.float32) / n


def step_mean(
    ell: torch.Tensor,
    present: torch.Tensor,
    *,
    n: int | None = None,
    gather: Gather | None = None,
    world_size: int = 1,
    micro_batches: int = 1,
) -> torch.Tensor:
    """The mean of per-sample losses ``ell`` (B,) over the optimizer batch's ``n`` samples having the term
    (default: this micro-batch's, gathered), as the surrogate the trainer backpropagates: its value averaged over
    the step's micro-batches is the step's mean, and Trainer's division by ``micro_batches`` with DDP's averaging
    over ``world_size`` ranks give the one-process gradient (the module docstring's rule, for a plain mean)."""
    ell = torch.where(present, ell, torch.zeros((), dtype=ell.dtype, device=ell.device))
    ell_d = ell.detach()
    ell_all = gather(ell_d) if gather is not None else ell_d
    present_all = gather(present.float()) > 0.5 if gather is not None else present
    n = int(present_all.sum()) if n is None else int(n)
    if n == 0 or not bool(present_all.any()):
        return (ell * 0).sum()
    value, weights = _mean_share(ell_all, present_all, present, n)
    return micro_batches * value + world_size * micro_batches * (weights * (ell - ell_d)).sum()


def cavpref_loss(
    policy_logps: Mapping[str, torch.Tensor],
    ref_logps: Mapping[str, torch.Tensor],
    *,
    beta: Mapping[str, torch.Tensor | float],
    lambdas: Mapping[str, float] = PAPER_LAMBDAS,
    eta: torch.Tensor | None = None,
    gamma: torch.Tensor | None = None,
    robust: str = "paper",
    gather: Gather | None = None,
    world_size: int = 1,
    step: StepContext | None = None,
    components: tuple[str, ...] = COMPONENTS,
    weights: Mapping[str, float] | None = None,
    dpop_lambda: float = 0.0,
) -> CAVPrefLossOutput:
    """CAVPref (Eq. 6) from per-sample summed response log-probs.

    ``policy_logps`` / ``ref_logps``: dicts with ``y_w, y_l`` and, when any sample has the switch on,
    ``v_w, v_l`` / ``a_w, a_l`` (entries of samples whose switch is 0 are ignored — they may hold anything,
    NaN included). ``beta``: keys ``y, v, a``, a float or a per-sample tensor. ``eta`` / ``gamma``:
    per-sample 0/1. All maths in fp32. See the module docstring for ``robust``, ``gather`` and ``step``.
    ``components``: the terms of the objective's list (``cavpref.terms``); ``weights``: their weights in the
    total (1 each by default; each component's own ``loss`` stays unweighted); ``dpop_lambda``: DPOP's penalty
    inside each component's sigmoid (``cavpref.remedies``).
    """
    if robust not in ROBUST_MODES:
        raise ValueError(f"robust must be one of {ROBUST_MODES}, got {robust!r}")
    y_w = policy_logps["y_w"]
    bsz = y_w.shape[0]
    ones = torch.ones(bsz, dtype=torch.bool, device=y_w.device)
    switches = {
        "y": ones,
        "v": torch.zeros_like(ones) if eta is None else eta.to(device=y_w.device).bool(),
        "a": torch.zeros_like(ones) if gamma is None else gamma.to(device=y_w.device).bool(),
    }
    out = CAVPrefLossOutput(loss=torch.zeros((), dtype=torch.float32, device=y_w.device))
    for name in components:
        present = switches[name]
        any_present = bool(present.any()) if gather is None else bool(gather(present.float()).sum() > 0)
        if not any_present:
            continue
        keys = (f"{name}_w", f"{name}_l")
        missing = [k for k in keys if k not in policy_logps or k not in ref_logps]
        if missing:
            raise KeyError(
                f"component {name!r} is switched on for some samples but log-probs {missing} are missing"
            )
        for k in keys:
            for which, d in (("policy", policy_logps), ("ref", ref_logps)):
                bad = present & ~torch.isfinite(d[k].detach())
                if bool(bad.any()):
                    idx = bad.nonzero().flatten().tolist()
                    raise FloatingPointError(f"non-finite {which} log-probs in {k!r} for samples {idx}")
        comp = _component(
            policy_logps[keys[0]],
            policy_logps[keys[1]],
            ref_logps[keys[0]],
            ref_logps[keys[1]],
            beta[name],
            float(lambdas[name]),
            present,
            robust,
            gather,
            world_size,
            step.components.get(name) if step is not None else None,
            step.micro_batches if step is not None else 1,
            dpop_lambda,
        )
        out.components[name] = comp
        out.loss = out.loss + (comp.loss if weights is None else float(weights[name]) * comp.loss)
    return out
