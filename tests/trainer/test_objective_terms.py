"""A combined objective (``loss_type`` + ``loss_weights``, ``cavpref.terms``) is one objective for any split of
the optimizer batch — 8 x 1, 1 x 8, 2 x 4 and 2 real gloo processes x 1 x 4 give one gradient — with CAVPref's
terms, DPOP, mDPO's anchors, the step-exact ``sft`` and TRL's loss types in one list; and each term is logged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.helpers import grad_probe
from tests.helpers.grad_probe import rel
from tests.helpers.launch import accelerate_launch

SHAPES = {"8x1": (8, 1), "1x8": (1, 8), "2x4": (2, 4)}
OBJECTIVES = {
    # CAVPref (Eq. 5 aggregation) + DPOP + 0.2 · sft + 0.5 · mDPO's visual anchor + 0.3 · TRL's IPO
    "cavpref_all": {
        "method": "cavpref",
        "loss_type": ["cavpref_y", "cavpref_v", "cavpref_a", "sft", "ancpo_v", "ipo"],
        "loss_weights": [1.0, 1.0, 1.0, 0.2, 0.5, 0.3],
        "dpop_lambda": 0.5,
    },
    # DPO (TRL's sigmoid) + CAVPref's visual / audio terms + RPO's NLL
    "dpo_va": {
        "method": "dpo",
        "loss_type": ["sigmoid", "cavpref_v", "cavpref_a", "sft"],
        "loss_weights": [1.0, 1.0, 1.0, 0.2],
    },
}


def case(name, batch, accumulation):
    return {
        "name": f"{name}-{batch}x{accumulation}",
        "sampler": "mixed",
        "switch_variant": "released",  # COT-Swap has both anchors: every component in play
        "per_device_train_batch_size": batch,
        "gradient_accumulation_steps": accumulation,
        **OBJECTIVES[name],
    }


@pytest.fixture(scope="module")
def one_process(fx, tmp_path_factory):
    cases = [case(n, b, g) for n in OBJECTIVES for b, g in SHAPES.values()]
    return grad_probe.step_gradients(cases, fx, tmp_path_factory.mktemp("terms1"))


@pytest.mark.parametrize("name", list(OBJECTIVES))
def test_a_combined_objective_has_one_gradient_at_every_batch_shape(one_process, name):
    ref = one_process[f"{name}-8x1"]
    assert ref is not None and float(ref.norm()) > 0
    for shape in ("1x8", "2x4"):
        assert rel(one_process[f"{name}-{shape}"], ref) <= 1e-4, shape


def test_and_on_two_processes(fx, one_process, tmp_path):
    cases = [case(n, 1, 4) for n in OBJECTIVES]
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    proc = accelerate_launch(
        "recipes/accelerate/cpu_2proc.yaml",
        "tests/helpers/grad_probe.py",
        tmp_path / "grads.pt",
        Path(fx["model"]).parent,
        tmp_path / "cases.json",
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-12000:]
    two = torch.load(tmp_path / "grads.pt")
    for name in OBJECTIVES:
        assert rel(two[f"{name}-1x4"], one_process[f"{name}-8x1"]) <= 1e-4, name


def test_the_terms_change_the_gradient(one_process, fx, tmp_path):
    """The extra terms are in the gradient: the paper's CAVPref on the same batch differs."""
    plain = {"name": "plain", "sampler": "mixed", "switch_variant": "released", "method": "cavpref"}
    plain.update(per_device_train_batch_size=8, gradient_accumulation_steps=1)
    got = grad_probe.step_gradients([plain], fx, tmp_path)["plain"]
    assert rel(got, one_process["cavpref_all-8x1"]) > 1e-2


def test_each_term_is_logged_and_the_loss_is_their_weighted_sum(fx, model_io, prefs, tmp_path):
    from tests.helpers.trainer import trainer

    spec = OBJECTIVES["cavpref_all"]
    tr = trainer(fx, model_io, prefs.select(range(8)), tmp_path, per_device_train_batch_size=8, **spec)
    tr.train()
    log = tr.state.log_history[0]
    weights = dict(zip(spec["loss_type"], spec["loss_weights"]))
    assert {f"term/{t}" for t in weights} <= set(log), sorted(log)
    total = sum(w * log[f"term/{t}"] for t, w in weights.items())
    assert log["loss/total"] == pytest.approx(total, rel=1e-4)
    # step 0: policy = reference, every margin 0 → IPO's (0 − 1 / (2 β))² at TRL's β = 0.1
    assert log["term/ipo"] == pytest.approx(25.0, rel=1e-5)
    assert log["term/sft"] > 0 and log["term/ancpo_v"] == pytest.approx(0.6931, abs=1e-3)  # −log σ(0)
    # the displacement diagnostic: each task's chosen log-prob, and its change from the reference (0 at step 0)
    tasks = {k.split("/")[1] for k in log if k.endswith("/chosen_logratio")}
    assert tasks and all(log[f"task/{t}/chosen_logratio"] == pytest.approx(0.0, abs=1e-5) for t in tasks)
    assert all(log[f"task/{t}/chosen_logp"] < 0 for t in tasks)


def test_the_sft_term_is_the_token_mean_over_the_optimizer_batch(tmp_path):
    """Two micro-batches with 2 and 6 response tokens: the step's sft term (averaged over its micro-batches, as
    Trainer does) is Σ NLL / 8 tokens, with that gradient; TRL's per-micro-batch mean would give
    (mean_1 + mean_2) / 2 instead."""
    from cavpref.config import CAVPrefConfig
    from cavpref.loss import StepContext
    from cavpref.terms import Term
    from cavpref.trainer.step import CAVPrefObjective, StepPlan

    args = CAVPrefConfig(
        output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none", method="dpo", loss_type=["sft"]
    )
    objective = CAVPrefObjective(
        args, None, reference=None, world_size=1, device=torch.device("cpu"), task_names=("MVIT",)
    )

    def micro(tokens: int, logp: float):
        labels = torch.full((1, 8), -100)
        labels[0, :tokens] = 1
        inputs = {"model_inputs": {"labels": labels}, "slots": {"y_w": torch.tensor([0])}}
        return inputs, {"y_w": torch.tensor([logp], requires_grad=True)}

    plan = StepPlan(context=StepContext(2), sft_tokens=torch.tensor(8.0))
    parts = [micro(2, -4.0), micro(6, -3.0)]
    values = [objective.term_value(Term("sft", 1.0, "sft"), i, p, None, plan) for i, p in parts]
    step = sum(v / 2 for v in values)  # Trainer's division by the micro-batches
    assert float(step.detach()) == pytest.approx(7.0 / 8.0)  # (4 + 3) / 8, not (4 / 2 + 3 / 6) / 2 = 1.25
    step.backward()
    assert [float(p["y_w"].grad) for _, p in parts] == pytest.approx([-1 / 8, -1 / 8])
