"""The CAVPref loss against hand-computed numbers (paper Eq. 1-6)."""

import math

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

from cavpref.loss import DEFAULT_SWITCHES, PAPER_LAMBDAS, calibrate_beta, cavpref_loss, switches_for


def t(*xs):
    return torch.tensor(xs, dtype=torch.float32)


def logps(**kw):
    return {k: t(*v) for k, v in kw.items()}


def test_calibrate_beta_minmax_and_degenerate():
    assert torch.allclose(calibrate_beta(t(0.0, 1.0, 2.0)), t(0.1, 0.55, 1.0))
    assert torch.allclose(calibrate_beta(t(-4.0, 6.0)), t(0.1, 1.0))
    # one element, or all equal: the midpoint 0.9 * 0.5 + 0.1
    assert torch.allclose(calibrate_beta(t(3.0)), t(0.55))
    assert torch.allclose(calibrate_beta(t(2.0, 2.0, 2.0)), t(0.55, 0.55, 0.55))
    # custom constants; masked-out entries do not move the min-max
    assert torch.allclose(calibrate_beta(t(0.0, 10.0), scale=0.5, offset=0.2), t(0.2, 0.7))
    b = calibrate_beta(t(0.0, 100.0, 1.0), mask=torch.tensor([True, False, True]))
    assert torch.allclose(b[[0, 2]], t(0.1, 1.0))
    # non-finite scores are ignored rather than poisoning the batch
    assert torch.allclose(calibrate_beta(t(0.0, float("nan"), 1.0))[[0, 2]], t(0.1, 1.0))


def test_calibrate_beta_global_min_max_with_gather():
    other = {torch.float32: t(-1.0, 3.0), "mask": t(1.0, 1.0)}  # what the other rank holds

    def gather(x):  # concatenates this rank's tensor with the other rank's
        return torch.cat(
            [x, other[torch.float32] if x.dtype == torch.float32 and x.max() > 1 else other["mask"]]
        )

    # global min -1, max 3: (1 - (-1)) / 4 = 0.5 -> 0.55 (locally it would be the degenerate midpoint too,
    # so use a value that differs): 2 -> 0.75 * 0.9 + 0.1
    assert torch.allclose(calibrate_beta(t(2.0), gather=gather), t(0.775))


def test_y_only_no_robust_equals_trl_sigmoid_dpo():
    pol = logps(y_w=[-1.0, -2.0, -0.5], y_l=[-3.0, -1.0, -0.7])
    ref = logps(y_w=[-1.5, -2.5, -0.6], y_l=[-2.0, -1.5, -0.4])
    beta = 0.1
    out = cavpref_loss(pol, ref, beta={"y": beta, "v": 1, "a": 1}, robust="none")
    # TRL's "sigmoid" loss (trl/trainer/dpo_trainer.py): -logsigmoid(beta * (chosen_logratios - rejected_logratios))
    chosen = pol["y_w"] - ref["y_w"]
    rejected = pol["y_l"] - ref["y_l"]
    trl = -F.logsigmoid(beta * (chosen - rejected)).mean()
    assert torch.allclose(out.loss, trl)
    # and by hand for the first sample: margin = 0.5 - (-1.0) = 1.5
    assert math.isclose(float(out.components["y"].per_sample[0]), math.log1p(math.exp(-0.15)), rel_tol=1e-6)


def test_bf16_logps_are_combined_in_fp32():
    """bf16 log-probs (a bf16 forward) are cast before any arithmetic: the ratios -299 and -300 are exact in fp32,
    while bf16 subtraction would round -300 - (-1) to -300 and turn the margin 1 into 0."""
    bf = torch.bfloat16
    pol = {"y_w": torch.tensor([-300.0], dtype=bf), "y_l": torch.tensor([-302.0], dtype=bf)}
    ref = {"y_w": torch.tensor([-1.0], dtype=bf), "y_l": torch.tensor([-2.0], dtype=bf)}
    out = cavpref_loss(pol, ref, beta={"y": 1.0}, robust="paper")
    assert out.loss.dtype == torch.float32 and out.components["y"].weights.dtype == torch.float32
    assert float(out.components["y"].margins[0]) == 1.0
    assert math.isclose(float(out.loss), math.log1p(math.exp(-1.0)), rel_tol=1e-6)


def test_paper_robust_value_by_hand():
    # margins 2 and -1, beta 1, lambda 0.5: L = log sigmoid(m)
    pol = logps(y_w=[0.0, 0.0], y_l=[-2.0, 1.0])
    ref = logps(y_w=[0.0, 0.0], y_l=[0.0, 0.0])
    L = [math.log(1 / (1 + math.exp(-2.0))), math.log(1 / (1 + math.exp(1.0)))]
    lam = 0.5
    expected = -lam * math.log((math.exp(L[0] / lam) + math.exp(L[1] / lam)) / 2)
    out = cavpref_loss(pol, ref, beta={"y": 1.0}, lambdas={"y": lam}, robust="paper")
    assert math.isclose(float(out.loss), expected, rel_tol=1e-6)
    worst = lam * math.log((math.exp(-L[0] / lam) + math.exp(-L[1] / lam)) / 2)
    out = cavpref_loss(pol, ref, beta={"y": 1.0}, lambdas={"y": lam}, robust="worst_case")
    assert math.isclose(float(out.loss), worst, rel_tol=1e-6)


def _grad_weights(robust, lam):
    # sample 0 is easy (low loss), sample 1 hard (high loss)
    y_w = torch.zeros(3, requires_grad=True)
    pol = {"y_w": y_w, "y_l": t(-3.0, 2.0, 0.0)}
    ref = {"y_w": torch.zeros(3), "y_l": torch.zeros(3)}
    out = cavpref_loss(pol, ref, beta={"y": 1.0}, lambdas={"y": lam}, robust=robust)
    out.loss.backward()
    return -y_w.grad, out


@pytest.mark.parametrize("robust", ["paper", "worst_case", "none"])
def test_weight_direction_and_large_lambda_limit(robust):
    g, out = _grad_weights(robust, 0.5)
    ell = out.components["y"].per_sample
    # the gradient on each sample = weight_i * d ell_i / d margin_i; recover the weights
    dell = torch.sigmoid(-ell.new_tensor([3.0, -2.0, 0.0]))  # -d ell/d margin = sigmoid(-margin)
    w = g / dell
    assert torch.allclose(w.sum(), torch.tensor(1.0), atol=1e-5)
    assert torch.allclose(w, out.components["y"].weights, atol=1e-5)
    order = torch.argsort(ell)  # low loss -> high loss
    if robust == "paper":
        assert bool((w[order].diff() < 0).all()), "paper form must down-weight high-loss pairs"
    elif robust == "worst_case":
        assert bool((w[order].diff() > 0).all()), "worst-case form must up-weight high-loss pairs"
    else:
        assert torch.allclose(w, torch.full((3,), 1 / 3))
    # lambda -> infinity: plain mean
    mean = cavpref_loss(
        {"y_w": torch.zeros(3), "y_l": t(-3.0, 2.0, 0.0)},
        {"y_w": torch.zeros(3), "y_l": torch.zeros(3)},
        beta={"y": 1.0},
        robust="none",
    ).loss
    big = _grad_weights(robust, 1e6)[1]
    assert torch.allclose(big.loss, mean, atol=1e-4)


def test_switches_mask_components_and_ignore_nan():
    pol = logps(
        y_w=[-1.0, -1.0],
        y_l=[-2.0, -2.0],
        v_w=[-0.5, float("nan")],
        v_l=[-1.5, float("nan")],
        a_w=[float("nan"), -0.2],
        a_l=[float("nan"), -0.9],
    )
    ref = logps(
        y_w=[-1.0, -1.0],
        y_l=[-1.0, -1.0],
        v_w=[-1.0, float("nan")],
        v_l=[-1.0, 7.0],
        a_w=[0.0, -0.5],
        a_l=[float("inf"), -0.5],
    )
    for k in pol:
        pol[k].requires_grad_(True)
    eta, gamma = t(1, 0), t(0, 1)
    beta = {"y": 0.5, "v": 1.0, "a": 2.0}
    out = cavpref_loss(pol, ref, beta=beta, lambdas=PAPER_LAMBDAS, eta=eta, gamma=gamma, robust="none")
    out.loss.backward()
    # y: both samples, margin 0 - (-1) = 1 ; v: sample 0, margin 0.5 - (-0.5) = 1 ; a: sample 1, margin 0.3 - (-0.4)
    y = -math.log(1 / (1 + math.exp(-0.5)))
    v = -math.log(1 / (1 + math.exp(-1.0)))
    a = -math.log(1 / (1 + math.exp(-2.0 * 0.7)))
    assert math.isclose(float(out.loss.detach()), y + v + a, rel_tol=1e-5)
    for k, p in pol.items():
        assert bool(torch.isfinite(p.grad).all()), k
    assert float(pol["v_w"].grad[1]) == 0.0 and float(pol["a_w"].grad[0]) == 0.0
    # a term switched off for every sample is absent: its keys may be missing altogether
    out = cavpref_loss(
        {"y_w": pol["y_w"], "y_l": pol["y_l"]},
        {"y_w": ref["y_w"], "y_l": ref["y_l"]},
        beta=beta,
        eta=t(0, 0),
        gamma=t(0, 0),
    )
    assert set(out.components) == {"y"}


def test_bad_inputs_are_named():
    pol = logps(y_w=[-1.0, float("nan")], y_l=[-2.0, -2.0])
    ref = logps(y_w=[-1.0, -1.0], y_l=[-1.0, -1.0])
    with pytest.raises(FloatingPointError, match=r"y_w.*\[1\]"):
        cavpref_loss(pol, ref, beta={"y": 1.0})
    with pytest.raises(KeyError, match="v_w"):
        cavpref_loss(
            logps(y_w=[0.0], y_l=[0.0]), logps(y_w=[0.0], y_l=[0.0]), beta={"y": 1.0, "v": 1.0}, eta=t(1)
        )
    with pytest.raises(ValueError, match="robust"):
        cavpref_loss(logps(y_w=[0.0], y_l=[0.0]), logps(y_w=[0.0], y_l=[0.0]), beta={"y": 1.0}, robust="max")


def test_switch_table():
    assert DEFAULT_SWITCHES["MVIT"] == (1, 0) and DEFAULT_SWITCHES["MAT"] == (0, 1)
    assert DEFAULT_SWITCHES["COT-Swap"] == (1, 0) and DEFAULT_SWITCHES["MCIT"] == (0, 0)
    assert switches_for("COT-Swap", "released") == (1, 1)
    assert switches_for("CAT", table={"CAT": (1, 1)}) == (1, 1)
    assert sum(e + g for e, g in DEFAULT_SWITCHES.values()) == 5


# ------------------------------------------------------------------ global-batch exactness, 2 real processes

_B = 6


def _batch():
    g = torch.Generator().manual_seed(0)
    mk = lambda: -torch.rand(_B, generator=g) * 3
    pol = {k: mk() for k in ("y_w", "y_l", "v_w", "v_l", "a_w", "a_l")}
    ref = {k: mk() for k in pol}
    eta = torch.tensor([1, 0, 0, 1, 0, 0.0])
    gamma = torch.tensor([0, 0, 1, 0, 0, 0.0])  # only rank 0's half has an audio sample
    dS = torch.rand(_B, generator=g)
    return pol, ref, eta, gamma, dS


def _loss_and_grad(sl, gather=None, world_size=1):
    """Log-probs depend on a shared parameter vector theta (as in a model); return d loss / d theta."""
    pol, ref, eta, gamma, dS = _batch()
    theta = torch.ones(len(pol), requires_grad=True)
    pol = {k: v[sl] * theta[i] for i, (k, v) in enumerate(pol.items())}
    ref = {k: v[sl] for k, v in ref.items()}
    beta = {"y": calibrate_beta(dS[sl], gather=gather), "v": 0.3, "a": 0.7}
    out = cavpref_loss(
        pol,
        ref,
        beta=beta,
        eta=eta[sl],
        gamma=gamma[sl],
        robust="paper",
        gather=gather,
        world_size=world_size,
    )
    out.loss.backward()
    return out.loss.detach(), theta.grad


def _worker(rank, path, results):
    dist.init_process_group("gloo", init_method=f"file://{path}", rank=rank, world_size=2)

    def gather(x):
        parts = [torch.empty_like(x) for _ in range(2)]
        dist.all_gather(parts, x.contiguous())
        return torch.cat(parts)

    half = _B // 2
    loss, grad = _loss_and_grad(slice(rank * half, (rank + 1) * half), gather=gather, world_size=2)
    dist.all_reduce(grad)  # what DDP does: average parameter gradients over ranks
    grad /= 2
    results[rank] = (float(loss), grad.tolist())
    dist.destroy_process_group()


def test_two_processes_match_one_process(tmp_path):
    full_loss, full_grad = _loss_and_grad(slice(0, _B))
    results = mp.Manager().dict()
    mp.spawn(_worker, args=(str(tmp_path / "store"), results), nprocs=2, join=True)
    for rank in range(2):
        loss, grad = results[rank]
        assert math.isclose(loss, float(full_loss), rel_tol=1e-6)
        assert torch.allclose(torch.tensor(grad), full_grad, atol=1e-6)
