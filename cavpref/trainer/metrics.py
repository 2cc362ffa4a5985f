"""The metrics a CAVPref step logs, in TRL's ``_metrics`` (averaged and logged by ``DPOTrainer.log``).

Names: ``{y,v,a}/{loss,margin,reward_accuracy,beta,ess,n}`` per loss component (``ess`` and ``n`` over the
optimizer batch when the step was planned), ``task/<TASK>/<comp>_*`` per task,
and TRL's own ``rewards/*`` / ``logps/*`` for the y pair, so dashboards built for ``DPOTrainer`` keep working."""

from __future__ import annotations

from collections.abc import Callable

import torch

Gather = Callable[[torch.Tensor], torch.Tensor]


def log_preference_step(m, gather, inputs, out, betas, policy, ref, task_names) -> None:
    """Append one step's metrics to ``m`` (a trainer's ``_metrics[mode]``): per component and per task, over the
    global batch (every rank runs the same gathers). ``task_names``: the run's tasks in ``task_ids`` order (the
    keys of the collator's switch table)."""
    m["loss/total"].append(float(out.loss.detach()))
    m["rows/policy"].append(float(gather(inputs["num_rows"].reshape(1)).sum()))
    tasks = gather(inputs["task_ids"].to(out.loss.device))
    m["rows/samples"].append(float(tasks.numel()))
    for comp, c in out.components.items():
        margins = gather(c.margins)
        ell = gather(c.per_sample)
        weights = gather(c.weights)
        present = torch.isfinite(margins)
        beta = betas[comp]
        beta_all = gather(beta.detach()) if torch.is_tensor(beta) else torch.full_like(margins, beta)
        m[f"{comp}/loss"].append(float(c.loss.detach()))
        m[f"{comp}/margin"].append(float(margins[present].mean()))
        m[f"{comp}/reward_accuracy"].append(float((margins[present] > 0).float().mean()))
        m[f"{comp}/beta"].append(float(beta_all[present].mean()))
        if inputs.get("step") is None:  # else the trainer logs them once per optimizer step (whole batch)
            m[f"{comp}/ess"].append(float(1.0 / weights[present].pow(2).sum()))
            m[f"{comp}/n"].append(float(present.sum()))
        for t in tasks[present].unique().tolist():
            sel = present & (tasks == t)
            m[f"task/{task_names[t]}/{comp}_loss"].append(float(ell[sel].mean()))
            m[f"task/{task_names[t]}/{comp}_margin"].append(float(margins[sel].mean()))
            m[f"task/{task_names[t]}/{comp}_reward_accuracy"].append(float((margins[sel] > 0).float().mean()))
    # TRL's names for the y pair, so dashboards built for DPOTrainer keep working.
    rew_w = gather((policy["y_w"] - ref["y_w"]).detach())
    rew_l = gather((policy["y_l"] - ref["y_l"]).detach())
    beta_y = betas["y"] if not torch.is_tensor(betas["y"]) else gather(betas["y"].detach())
    m["rewards/chosen"].append(float((beta_y * rew_w).mean()))
    m["rewards/rejected"].append(float((beta_y * rew_l).mean()))
    m["rewards/margins"].append(float((beta_y * (rew_w - rew_l)).mean()))
    m["rewards/accuracies"].append(float(((rew_w - rew_l) > 0).float().mean()))
    m["logps/chosen"].append(float(gather(policy["y_w"].detach()).mean()))
    m["logps/rejected"].append(float(gather(policy["y_l"].detach()).mean()))
