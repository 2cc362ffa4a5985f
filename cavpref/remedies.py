"""The literature's remedies for a preference objective that lowers the chosen response's likelihood, as pure
functions of summed log-probs (the trainer combines them through ``cavpref.terms``; hand-computed tests in
``tests/core/test_remedies.py``).

Why they matter here: on the tiny world CAVPref learns to abstain *by source* (docs/results.md, the ladder: false
abstention 61 % where DPO's is 0.7 %): a relative objective can raise the margin by lowering the chosen answer as
long as the rejected one falls faster (likelihood displacement), and on a clean item the chosen answer is what
should stay likely.

- **DPOP** (Pal et al. 2024, "Smaug: Fixing Failure Modes of Preference Optimisation with DPO-Positive",
  arXiv:2402.13228, Eq. 3): inside the sigmoid, ``β · (margin − λ · max(0, log π_ref(y_w) − log π(y_w)))``. While
  the chosen log-prob is at or above the reference's nothing changes; below it, the chosen row's gradient
  gains ``β λ σ(−β m')`` towards raising ``log π(y_w)`` (m' the penalised margin): on a clean item whose
  answer DPO is pushing down, that is a push back up, proportional to λ.
- **Anchored preference** (mDPO, Wang et al. 2024, "mDPO: Conditional Preference Optimization for Multimodal
  Large Language Models", arXiv:2406.11839, Eq. 5, their δ = 0): ``−log σ(β (log π(y_w) − log π_ref(y_w)) − δ)``,
  a term of its own on the chosen row alone. Its gradient raises ``log π(y_w)`` with weight ``β σ(δ − β r_w)``
  (r_w the chosen log-ratio): strongest while the chosen reward is below δ, never pulling the rejected row.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def dpop_penalty(pol_w: torch.Tensor, ref_w: torch.Tensor, lam: float) -> torch.Tensor:
    """DPOP's ``λ · max(0, log π_ref(y_w) − log π(y_w))``, (B,): subtracted from the margin inside the sigmoid."""
    if lam < 0:
        raise ValueError(f"dpop_lambda must be >= 0, got {lam}")
    return float(lam) * torch.clamp(ref_w.to(torch.float32) - pol_w.to(torch.float32), min=0.0)


def ancpo_ell(
    pol_w: torch.Tensor,
    ref_w: torch.Tensor,
    beta: torch.Tensor | float,
    delta: float,
    present: torch.Tensor,
) -> torch.Tensor:
    """mDPO's anchored preference per sample, ``−log σ(β (log π(w) − log π_ref(w)) − δ)``, (B,) fp32; 0 where
    ``present`` is false (absent entries may hold NaN: selected away before any arithmetic)."""
    zero = torch.zeros((), dtype=torch.float32, device=pol_w.device)
    reward = torch.where(present, pol_w.to(torch.float32), zero) - torch.where(
        present, ref_w.to(torch.float32), zero
    )
    beta_t = torch.as_tensor(beta, dtype=torch.float32, device=reward.device).expand_as(reward)
    ell = -F.logsigmoid(beta_t * reward - float(delta))
    return torch.where(present, ell, zero)


__all__ = ["ancpo_ell", "dpop_penalty"]
