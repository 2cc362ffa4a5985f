"""The metrics a step logs (averaged per logging window by ``DPOTrainer.log``).

Names: ``loss/total``, ``term/<name>`` per term of the objective (``cavpref.terms``),
``{y,v,a}/{loss,margin,reward_accuracy,beta,ess,n}`` per loss component (``ess`` and ``n`` over the
optimizer batch when the step was planned), ``task/<TASK>/<comp>_*`` per task, and TRL's own ``rewards/*`` /
``logps/*`` for the y pair, so dashboards built for ``DPOTrainer`` keep working."""

from __future__ import annotations

from collections.abc import Callable, MutableMapping

import torch

Gather = Callable[[torch.Tensor], torch.Tensor]
Metrics = MutableMapping[str, list]


def log_preference_step(
    m: Metrics, gather, inputs, out, betas, policy, ref, task_names, context=None
) -> None:
    """Append one micro-batch's metrics to ``m`` (name -> list of floats): per component and per task, over the
    global batch (every rank runs the same gathers). ``task_names``: the run's tasks in ``task_ids`` order (the
    keys of the collator's switch table). ``context``: the step's plan (then ``ess`` / ``n`` are logged once per
    optimizer step, over the whole batch, by the objective)."""
    tasks = gather(inputs["task_ids"].to(out.loss.device))
    for comp, c in out.components.items():
        margins = gather(c.margins)
        weights = gather(c.weights)
        present = torch.isfinite(margins)
        beta = betas[comp]
        beta_all = gather(beta.detach()) if torch.is_tensor(beta) else torch.full_like(margins, beta)
        m[f"{comp}/loss"].append(float(c.loss.detach()))
        m[f"{comp}/beta"].append(float(beta_all[present].mean()))
        if context is None:
            m[f"{comp}/ess"].append(float(1.0 / weights[present].pow(2).sum()))
            m[f"{comp}/n"].append(float(present.sum()))
        _log_margins(m, comp, margins, gather(c.per_sample), tasks, task_names)
    _log_trl_names(m, gather, betas["y"], policy, ref)


def log_step(m: Metrics, gather, inputs, total, terms: dict) -> None:
    """Every objective's micro-batch: the total, each term's own (unweighted) value as ``term/<name>``, and the
    rows the policy ran (``rows/policy``) for how many samples (``rows/samples``)."""
    m["loss/total"].append(float(total.detach()))
    for name, value in terms.items():
        m[f"term/{name}"].append(float(value.detach()) if torch.is_tensor(value) else float(value))
    m["rows/policy"].append(float(gather(inputs["num_rows"].reshape(1)).sum()))
    m["rows/samples"].append(float(gather(inputs["task_ids"].to(total.device)).numel()))


def log_displacement(m: Metrics, gather, inputs, policy, ref, task_names) -> None:
    """Per task, the chosen row's summed log-prob (``task/<T>/chosen_logp``) and its change from the reference
    (``task/<T>/chosen_logratio``, < 0: displaced). On CLEAN that is the original answer under clean media:
    the likelihood a preference objective can lower while its margins grow (issue 53's diagnostic)."""
    tasks = gather(inputs["task_ids"].to(policy["y_w"].device))
    logp = gather(policy["y_w"].detach())
    ratio = gather((policy["y_w"] - ref["y_w"]).detach())
    for t in tasks.unique().tolist():
        sel = tasks == t
        m[f"task/{task_names[t]}/chosen_logp"].append(float(logp[sel].mean()))
        m[f"task/{task_names[t]}/chosen_logratio"].append(float(ratio[sel].mean()))


def log_dpo_step(m: Metrics, gather, inputs, loss, beta: float, policy, ref, task_names) -> None:
    """The y pair under TRL's loss code (which logs ``rewards/*`` / ``logps/*`` itself): its margins per task,
    its fixed β and, as every TRL loss is a mean over the micro-batch, ``ess`` = ``n`` = its size. ``loss``: the
    TRL terms' weighted sum."""
    tasks = gather(inputs["task_ids"].to(loss.device))
    margins = gather(((policy["y_w"] - ref["y_w"]) - (policy["y_l"] - ref["y_l"])).detach())
    m["y/loss"].append(float(loss.detach()))
    m["y/beta"].append(beta)
    m["y/ess"].append(float(margins.numel()))
    m["y/n"].append(float(margins.numel()))
    _log_margins(m, "y", margins, None, tasks, task_names)


def _log_margins(m: Metrics, comp, margins, per_sample, tasks, task_names) -> None:
    present = torch.isfinite(margins)
    m[f"{comp}/margin"].append(float(margins[present].mean()))
    m[f"{comp}/reward_accuracy"].append(float((margins[present] > 0).float().mean()))
    for t in tasks[present].unique().tolist():
        sel = present & (tasks == t)
        if per_sample is not None:
            m[f"task/{task_names[t]}/{comp}_loss"].append(float(per_sample[sel].mean()))
        m[f"task/{task_names[t]}/{comp}_margin"].append(float(margins[sel].mean()))
        m[f"task/{task_names[t]}/{comp}_reward_accuracy"].append(float((margins[sel] > 0).float().mean()))


def _log_trl_names(m: Metrics, gather, beta_y, policy, ref) -> None:
    """TRL's names for the y pair, so dashboards built for DPOTrainer keep working."""
    rew_w = gather((policy["y_w"] - ref["y_w"]).detach())
    rew_l = gather((policy["y_l"] - ref["y_l"]).detach())
    beta_y = beta_y if not torch.is_tensor(beta_y) else gather(beta_y.detach())
    m["rewards/chosen"].append(float((beta_y * rew_w).mean()))
    m["rewards/rejected"].append(float((beta_y * rew_l).mean()))
    m["rewards/margins"].append(float((beta_y * (rew_w - rew_l)).mean()))
    m["rewards/accuracies"].append(float(((rew_w - rew_l) > 0).float().mean()))
    m["logps/chosen"].append(float(gather(policy["y_w"].detach()).mean()))
    m["logps/rejected"].append(float(gather(policy["y_l"].detach()).mean()))
