"""What an optimizer step reads from its micro-batches besides the objective's formulas: each row's response
tokens (SFT's normaliser, IPO's length), the rows whose log-probs are not finite (named for the error), and Eq. 5's
normaliser over the whole optimizer batch (a no-grad pass before the first backward; ``cavpref.trainer.step``)."""

from __future__ import annotations

import torch
from accelerate.utils import send_to_device

from cavpref.collator import SLOT_FIELDS, SLOTS
from cavpref.loss import COMPONENTS, component_ell, robust_exponent
from cavpref.trainer.checkpointing import checkpointing_paused


def exact_normalizers(objective, model, batches: list[dict], plan) -> dict[str, float]:
    """logsumexp over the optimizer batch of Eq. 5's exponent ``sign · ℓ / λ`` per component, from a no-grad pass
    (``objective``: the step's ``CAVPrefObjective``, ``plan``: its ``StepPlan``; not imported here, which would
    make a cycle).

    The policy runs in the mode the weighted backward will use (train; TRL's ``disable_dropout`` makes the two
    passes identical), without activation checkpointing (nothing to recompute); samples whose log-probs are not
    finite are left out (their micro-batch is skipped). The reference log-probs are kept in ``plan.references``:
    the backward pass reuses them, so the reference runs once per micro-batch."""
    args, device, ctx = objective.args, objective.device, plan.context
    own = [t.component for t in args.terms if t.kind == "cavpref"]
    z: dict[str, list[torch.Tensor]] = {c: [] for c in COMPONENTS}
    for batch in batches:
        batch = send_to_device(batch, device)
        with torch.no_grad(), checkpointing_paused(model):
            policy, ref = objective.logps(model, batch)
        plan.references.append({k: v.detach() for k, v in ref.items()})
        betas = objective.betas(batch, policy["y_w"].device, ctx)
        present = {"y": None, "v": batch["eta"].bool(), "a": batch["gamma"].bool()}
        for comp in own:
            mask = present[comp]
            mask = torch.ones_like(policy["y_w"], dtype=torch.bool) if mask is None else mask.to(device)
            if not bool(mask.any()):
                continue
            w, lo = f"{comp}_w", f"{comp}_l"
            vals = (policy[w], policy[lo], ref[w], ref[lo])
            ok = mask & torch.stack([torch.isfinite(v) for v in vals]).all(0)
            ell = component_ell(*vals, betas[comp], ok, args.dpop_lambda)
            z[comp].append(robust_exponent(ell, args.lambdas[comp], args.robust_mode)[ok])
    out = {}
    for comp in COMPONENTS:
        if comp not in own or ctx.components[comp].n == 0:  # the same on every rank: config and global counts
            continue
        local = torch.cat(z[comp]) if z[comp] else torch.zeros(0, dtype=torch.float64, device=device)
        everything = objective.gather(local)
        if everything.numel():
            out[comp] = float(torch.logsumexp(everything, dim=0))
    return out


def response_tokens(inputs: dict, slot: str = "y_w") -> torch.Tensor:
    """Response tokens (labels != -100) of each sample's ``slot`` row: SFT's normaliser, IPO's length."""
    labels = inputs["model_inputs"].get("labels")
    if labels is None:
        raise KeyError(
            "the model_io batch must carry 'labels' (response tokens != -100) for sft / dpo token counts"
        )
    tokens = (labels != -100).sum(-1)
    return tokens[inputs["slots"][slot].to(tokens.device)]


def non_finite(inputs, policy, ref, fields=SLOT_FIELDS) -> list[tuple[str, str]]:
    """(example id, message naming the row and field) for every needed log-prob that is NaN / inf."""
    problems = []
    ids = inputs["example_ids"]
    for which, vals in (("policy", policy), ("reference", ref)):
        if vals is None:
            continue
        for s in SLOTS:
            need = inputs["slots"][s].to(vals[s].device) >= 0
            bad = need & ~torch.isfinite(vals[s].detach())
            for i in bad.nonzero().flatten().tolist():
                resp, media = fields[s]
                value = float(vals[s][i].detach())
                problems.append(
                    (
                        ids[i],
                        f"example '{ids[i]}' row {s} ({resp} under {media}): {which} log-prob is {value}",
                    )
                )
    return problems
