"""``cavpref.bench.agreement``: relative differences of log-probs and gradients, checked by hand."""

from __future__ import annotations

import math

import pytest
import torch

from cavpref.bench.agreement import elementwise_relative, gradient_relative


def test_elementwise_relative_is_the_largest_ratio():
    got, want = torch.tensor([-10.0, -4.0, 0.0]), torch.tensor([-10.5, -4.0, 0.0])
    assert elementwise_relative(got, want) == pytest.approx(0.5 / 10.5)
    assert elementwise_relative(torch.tensor([1e-3]), torch.tensor([0.0])) == math.inf
    with pytest.raises(ValueError, match="shapes"):
        elementwise_relative(torch.zeros(2), torch.zeros(3))


def test_gradient_relative_scales_each_tensor_by_its_largest_entry_with_a_floor():
    want = {"w": torch.tensor([4.0, -2.0]), "b": torch.tensor([0.0, 0.0]), "u": torch.tensor([0.1, 0.0])}
    got = {"w": torch.tensor([4.02, -2.0]), "b": torch.tensor([0.01, 0.0]), "u": torch.tensor([0.1, 0.003])}
    # w: 0.02 / 4 = 0.005; b: 0.01 / (1e-2 * 4) = 0.25 (floor); u: 0.003 / max(0.1, 0.04) = 0.03
    worst, name = gradient_relative(got, want)
    assert name == "b" and worst == pytest.approx(0.25)
    assert gradient_relative(got, want, floor=1.0)[0] == pytest.approx(0.005)  # every scale is the floor 4
    with pytest.raises(ValueError, match="different parameters"):
        gradient_relative({"w": got["w"]}, want)
