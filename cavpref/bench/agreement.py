"""How far shared-prefix scoring is from full rows: relative differences of log-probs and of gradients (pure).

Log-probs compare element by element (``|got - want| / |want|``, what ``torch.testing.assert_close(rtol=r,
atol=0)`` bounds). Gradients compare tensor by tensor against the tensor's own largest entry, because single
entries near zero carry only rounding noise; tensors whose exact gradient is zero (attention key biases: softmax
ignores a constant shift) hold nothing but that noise, so the scale has a floor of ``floor`` times the largest
entry of the whole model's gradient.
"""

from __future__ import annotations

import torch


def elementwise_relative(got: torch.Tensor, want: torch.Tensor) -> float:
    """``max_i |got_i - want_i| / |want_i|`` in float64; an entry with ``want_i == 0`` counts 0 if ``got_i`` is
    0 too, else infinity."""
    if got.shape != want.shape:
        raise ValueError(f"shapes differ: {tuple(got.shape)} vs {tuple(want.shape)}")
    if got.numel() == 0:
        return 0.0
    g, w = got.detach().double().cpu(), want.detach().double().cpu()
    diff = (g - w).abs()
    scale = w.abs()
    ratio = torch.where(
        scale > 0, diff / scale.clamp_min(torch.finfo(torch.float64).tiny), diff * float("inf")
    )
    ratio = torch.where(diff == 0, torch.zeros_like(ratio), ratio)
    return float(ratio.max())


def gradient_relative(
    got: dict[str, torch.Tensor], want: dict[str, torch.Tensor], floor: float = 1e-2
) -> tuple[float, str]:
    """(worst, name): the largest ``max |got[n] - want[n]| / max(max |want[n]|, floor * max_all |want|)`` over
    the tensors ``n``, and the tensor that gives it. Both dicts must name the same tensors."""
    if got.keys() != want.keys():
        missing = sorted(set(got) ^ set(want))[:5]
        raise ValueError(f"gradients of different parameters: {missing} ...")
    if not want:
        raise ValueError("no gradients to compare")
    top = max(float(w.detach().abs().max()) for w in want.values())
    worst, name = 0.0, next(iter(want))
    for n, w in want.items():
        w32, g32 = (
            w.detach().float(),
            got[n].detach().float(),
        )  # float32: exact enough, half the memory of float64
        scale = max(float(w32.abs().max()), floor * top)
        diff = float((g32 - w32).abs().max())
        value = diff / scale if scale > 0 else (0.0 if diff == 0 else float("inf"))
        if value > worst:
            worst, name = value, n
    return worst, name
