"""The remedies' maths (``cavpref.remedies``, DPOP inside ``cavpref.loss``) and the plain step mean, against
numbers computed by hand; and what each does to the gradient of a chosen row that fell below the reference."""

from __future__ import annotations

import math

import pytest
import torch

from cavpref.loss import cavpref_loss, component_ell, step_mean
from cavpref.remedies import ancpo_ell, dpop_penalty

T = torch.tensor
ALL = T([True, True])


def softplus(x: float) -> float:
    return math.log1p(math.exp(x))


def test_dpop_penalty_by_hand():
    # λ · max(0, ref_w − pol_w): 2 · (−2 − (−3)) = 2 for a chosen row below the reference, 0 above it
    assert dpop_penalty(T([-3.0, -1.0]), T([-2.0, -2.0]), 2.0).tolist() == [2.0, 0.0]
    with pytest.raises(ValueError, match="dpop_lambda must be >= 0"):
        dpop_penalty(T([0.0]), T([0.0]), -1.0)


def test_dpop_inside_the_sigmoid_by_hand():
    # sample 0: margin ((−3) − (−2)) − ((−5) − (−4)) = 0, penalty 2 · 1 = 2 → ℓ = −log σ(0.5 · (0 − 2)) = log(1 + e)
    # sample 1: chosen above its reference (no penalty), margin (1) − (−1) = 2 → ℓ = −log σ(1) = log(1 + e^−1)
    pol_w, ref_w = T([-3.0, -1.0]), T([-2.0, -2.0])
    pol_l, ref_l = T([-5.0, -3.0]), T([-4.0, -2.0])
    ell = component_ell(pol_w, pol_l, ref_w, ref_l, 0.5, ALL, dpop_lambda=2.0)
    assert ell.tolist() == pytest.approx([softplus(1.0), softplus(-1.0)], abs=1e-6)
    plain = component_ell(pol_w, pol_l, ref_w, ref_l, 0.5, ALL)
    assert plain.tolist() == pytest.approx([math.log(2.0), softplus(-1.0)], abs=1e-6)


def test_dpop_pushes_a_falling_chosen_row_back_up():
    """d ℓ / d log π(y_w) on the row below its reference: −β σ(−β m') (1 + λ) with m' = −2: −0.5 · σ(1) · 3;
    plain DPO's is −β σ(0) = −0.25 (the chosen row still rises, 4.4 times less)."""
    for lam, want in ((2.0, -0.5 * (1 / (1 + math.exp(-1.0))) * 3.0), (0.0, -0.25)):
        pol_w = T([-3.0], requires_grad=True)
        component_ell(
            pol_w, T([-5.0]), T([-2.0]), T([-4.0]), 0.5, T([True]), dpop_lambda=lam
        ).sum().backward()
        assert float(pol_w.grad) == pytest.approx(want, abs=1e-6), lam


def test_anchored_preference_by_hand():
    # −log σ(β (log π(w) − log π_ref(w)) − δ): β = 0.5, r_w = −1 → δ 0: log(1 + e^0.5); δ 1: log(1 + e^1.5)
    pol_w = T([-3.0, float("nan")], requires_grad=True)
    present = T([True, False])
    ell = ancpo_ell(pol_w, T([-2.0, 0.0]), 0.5, 0.0, present)
    assert ell.tolist() == pytest.approx(
        [softplus(0.5), 0.0], abs=1e-6
    )  # the absent NaN row is selected away
    ell.sum().backward()
    # its gradient raises the chosen row alone: −β σ(δ − β r_w) = −0.5 σ(0.5)
    assert pol_w.grad.tolist() == pytest.approx([-0.5 / (1 + math.exp(-0.5)), 0.0], abs=1e-6)
    assert ancpo_ell(T([-3.0]), T([-2.0]), 0.5, 1.0, T([True])).item() == pytest.approx(
        softplus(1.5), abs=1e-6
    )


def test_step_mean_is_the_optimizer_batch_mean_and_its_gradient():
    # present 1, 3, 4 of a step of n = 6 samples over 2 micro-batches: this micro-batch's share 8 / 6, times 2
    ell = T([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    present = T([True, False, True, True])
    out = step_mean(ell, present, n=6, micro_batches=2)
    assert float(out.detach()) == pytest.approx(2 * 8 / 6)
    out.backward()  # Trainer divides by the 2 micro-batches: each present sample's weight is then 1 / 6
    assert (ell.grad / 2).tolist() == pytest.approx([1 / 6, 0.0, 1 / 6, 1 / 6])
    assert float(step_mean(ell.detach(), present)) == pytest.approx(8 / 3)  # one micro-batch: its own mean


def test_cavpref_loss_weights_and_selects_its_components():
    pol = {"y_w": T([-1.0, -2.0]), "y_l": T([-2.0, -2.5]), "v_w": T([-1.0, 0.0]), "v_l": T([-1.5, 0.0])}
    ref = {k: torch.zeros(2) for k in pol}
    eta = T([1, 0])
    full = cavpref_loss(pol, ref, beta={"y": 0.5, "v": 0.5, "a": 0.5}, eta=eta, robust="none")
    some = cavpref_loss(
        pol,
        ref,
        beta={"y": 0.5, "v": 0.5, "a": 0.5},
        eta=eta,
        robust="none",
        components=("y", "v"),
        weights={"y": 1.0, "v": 0.25},
    )
    assert float(some.loss) == pytest.approx(
        float(full.components["y"].loss) + 0.25 * float(full.components["v"].loss)
    )
    only_v = cavpref_loss(
        pol, ref, beta={"y": 0.5, "v": 0.5, "a": 0.5}, eta=eta, robust="none", components=("v",)
    )
    assert list(only_v.components) == ["v"]
    # v: one sample, margin (−1) − (−1.5) = 0.5 → −log σ(0.25)
    assert float(only_v.loss) == pytest.approx(softplus(-0.25), abs=1e-6)
