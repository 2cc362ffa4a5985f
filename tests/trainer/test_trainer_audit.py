"""Issue 13's smaller defects, each pinned by a test: skipped steps do not move the weights, DPOConfig options
the loss ignores are refused, the in-memory reference copy is frozen, β's ΔS sign choice, and the degenerate
optimizer-batch warning."""

from __future__ import annotations

import logging

import pytest
import torch
from transformers import TrainerCallback

from cavpref.loss import beta_input, calibrate_beta
from tests.helpers.trainer import config, fresh_model, trainer


@pytest.fixture(scope="module")
def model_io(fx):
    from cavpref.models import AVModelArguments, load_model_io

    return load_model_io(AVModelArguments(model_name_or_path=str(fx["model"]), dtype="float32"))


@pytest.fixture(scope="module")
def prefs(fx):
    from datasets import load_from_disk

    return load_from_disk(str(fx["prefs"]))


class PoisonStep(TrainerCallback):
    """Sets ``state["on"]`` during optimizer step ``step`` (0-based), so a forward hook can poison it."""

    def __init__(self, flag, step):
        self.flag, self.step = flag, step

    def on_step_begin(self, args, state, control, **kw):
        self.flag["on"] = state.global_step == self.step


def test_a_skipped_step_does_not_step_the_optimizer_nor_the_schedule_nor_log_a_loss(
    fx, model_io, prefs, tmp_path
):
    data = prefs.select(range(4))  # batch 2: two optimizer steps
    kw = dict(
        method="dpo",
        skip_bad_rows=True,
        optim="adamw_torch",
        learning_rate=1e-2,
        lr_scheduler_type="linear",
        per_device_train_batch_size=2,
        sampler="mixed",
    )
    one = trainer(fx, model_io, data, tmp_path / "one", max_steps=1, **kw)
    one.train()

    flag = {"on": False}
    model = fresh_model(fx)

    def poison(module, inputs, output):  # NaN logits in the policy's (train-mode) forward of step 2
        if flag["on"] and module.training:
            output = output.clone()
            output[0] = float("nan")
        return output

    model.lm_head.register_forward_hook(poison)
    two = trainer(fx, model_io, data, tmp_path / "two", model=model, max_steps=2, **kw)
    two.add_callback(PoisonStep(flag, 1))
    two.train()
    assert two.counts["skipped_steps"] == 1
    # AdamW's momentum would move the weights on the skipped step's zero gradient: it must not step at all
    w1 = dict(one.model.named_parameters())
    assert max(float((w1[k] - v).detach().abs().max()) for k, v in two.model.named_parameters()) == 0.0
    # the linear schedule over 2 steps advanced once: lr 1e-2 * (1 - 1/2), not 0
    assert two.lr_scheduler.get_last_lr()[0] == pytest.approx(5e-3)
    losses = [r for r in two.state.log_history if "loss" in r]
    assert [r["step"] for r in losses] == [1] and losses[0]["loss"] > 0  # step 2 is not logged as loss 0
    assert two.state.log_history[-1]["train_loss"] == pytest.approx(losses[0]["loss"], rel=1e-5)


@pytest.mark.parametrize(
    "option, value",
    [
        ("label_smoothing", 0.1),
        ("ld_alpha", 0.5),
        ("use_weighting", True),
        ("f_divergence_type", "js_divergence"),
    ],
)
def test_dpo_options_the_loss_ignores_are_refused(tmp_path, option, value):
    with pytest.raises(ValueError, match=rf"CAVPrefConfig\.{option}=.*not implemented by the CAVPref loss"):
        config(tmp_path, **{option: value})


def test_reference_copied_from_an_in_memory_policy_is_frozen_and_in_eval_mode(fx, model_io, prefs, tmp_path):
    tr = trainer(fx, model_io, prefs.select(range(2)), tmp_path, per_device_train_batch_size=2)
    ref = tr.accelerator.unwrap_model(tr.ref_model)
    assert ref is not tr.model and not ref.training
    assert not any(p.requires_grad for p in ref.parameters())
    assert all(not m.training for m in ref.modules())


def test_beta_delta_signed_and_abs_by_hand(fx, model_io, prefs, tmp_path):
    d = torch.tensor([-0.8, 0.1, 0.5])
    # signed: min -0.8, max 0.5 -> norm 0, 0.9/1.3, 1: the pair whose rejected answer fits better gets the least β
    signed = calibrate_beta(beta_input(d, "signed"))
    assert signed.tolist() == pytest.approx([0.1, 0.9 * 0.9 / 1.3 + 0.1, 1.0], abs=1e-6)
    # abs: |ΔS| = 0.8, 0.1, 0.5 -> norm 1, 0, 0.4/0.7: the semantically closest pair gets the least β
    absolute = calibrate_beta(beta_input(d, "abs"))
    assert absolute.tolist() == pytest.approx([1.0, 0.1, 0.9 * 0.4 / 0.7 + 0.1], abs=1e-6)
    with pytest.raises(ValueError, match="beta_delta"):
        beta_input(d, "squared")
    assert config(tmp_path).beta_delta == "abs"
    # the trainer's β follows the setting
    inputs = {
        "eta": torch.zeros(3, dtype=torch.long),
        "gamma": torch.zeros(3, dtype=torch.long),
        "scores": {"y": d, "v": torch.zeros(3), "a": torch.zeros(3)},
    }
    for mode, want in (("signed", signed), ("abs", absolute)):
        tr = trainer(fx, model_io, prefs.select(range(2)), tmp_path / mode, beta_delta=mode)
        assert tr.objective.betas(inputs, "cpu")["y"].tolist() == pytest.approx(want.tolist(), abs=1e-6)


def test_degenerate_components_warn_once_and_are_counted(fx, model_io, prefs, tmp_path, caplog):
    data = prefs.select([i for i, t in enumerate(prefs["task"]) if t in ("MCIT", "MVIT", "MAIT", "COT-Swap")])
    tr = trainer(fx, model_io, data, tmp_path, per_device_train_batch_size=2, max_steps=2)
    with caplog.at_level(logging.WARNING, logger="cavpref"):
        tr.train()
    warned = [r.getMessage() for r in caplog.records if "min_component_samples" in r.getMessage()]
    assert warned, "no warning for components with 1-2 samples per optimizer batch"
    assert len({m.split("'")[1] for m in warned}) == len(warned)  # once per component
    assert "sample(s) in this optimizer batch" in warned[0]
    counts = [r for r in tr.state.log_history if any(k.startswith("count/degenerate/") for k in r)]
    assert counts and sum(v for k, v in counts[-1].items() if k.startswith("count/degenerate/")) >= 2


def test_no_grad_passes_pause_checkpointing_without_piling_up_embedding_hooks(fx, model_io, prefs, tmp_path):
    """Full fine-tuning, activation checkpointing, live reference (copied policy) and the exact normaliser's pass:
    3 steps of 2 micro-batches = 9 no-grad forwards. Pausing checkpointing used to re-enable it each time, adding
    one input-embedding forward hook per forward that was never removed (the forward slows step after step)."""
    data = prefs.select(range(4))
    tr = trainer(
        fx,
        model_io,
        data,
        tmp_path,
        per_device_train_batch_size=1,
        gradient_accumulation_steps=2,
        max_steps=3,
        activation_checkpointing=True,
        reference="model",
    )
    emb = tr.accelerator.unwrap_model(tr.model).get_input_embeddings()
    tr.train()
    assert len(emb._forward_hooks) <= 1, len(emb._forward_hooks)
    flags = [m.gradient_checkpointing for m in tr.model.modules() if hasattr(m, "gradient_checkpointing")]
    assert flags and any(flags)
