"""Gathers over the global batch, for the robust normaliser, β's min-max and the metrics.

accelerate's ``gather`` needs equal shapes on every rank and does not take bool tensors; a rank that skipped a
bad row holds fewer rows, so the lengths are gathered first and unequal parts are padded
(``pad_across_processes``) and cut back. Every rank must call these in the same order."""

from __future__ import annotations

import torch
from accelerate.utils import gather, pad_across_processes


def gather_rows(t: torch.Tensor, num_processes: int) -> torch.Tensor:
    """All-gather along dim 0, tolerating different lengths per rank (skipped rows) and bool tensors."""
    if num_processes == 1:
        return t
    is_bool = t.dtype == torch.bool
    x = (t.to(torch.uint8) if is_bool else t).contiguous()
    sizes = gather(torch.tensor([x.shape[0]], device=x.device))
    if bool((sizes == sizes[0]).all()):
        out = gather(x)
    else:
        padded = pad_across_processes(x, dim=0)
        full = gather(padded).view(len(sizes), -1, *x.shape[1:])
        out = torch.cat([full[r, : int(n)] for r, n in enumerate(sizes)])
    return out.bool() if is_bool else out


def unflatten(flat: torch.Tensor, slots: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """(R,) row log-probs -> {slot: (B,)}, NaN where the sample has no such row."""
    out = {}
    for s, idx in slots.items():
        idx = idx.to(flat.device)
        vals = flat[idx.clamp(min=0)]
        out[s] = torch.where(idx >= 0, vals, torch.full_like(vals, float("nan")))
    return out
