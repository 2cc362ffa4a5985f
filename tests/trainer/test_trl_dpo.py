"""``method: dpo`` is TRL's DPO, computed by TRL's own loss code (cavpref/trainer/trl_dpo.py): for every ``loss_type``
TRL lists, weighted combinations of them and an f-divergence, the loss ``CAVPrefTrainer`` computes from a batch's
per-sequence log-probs equals ``trl.DPOTrainer``'s loss on that batch, and so does its gradient.

The TRL side is a real ``DPOTrainer`` on a tiny text LM; the same batch's per-sequence log-probs (from the very
forward TRL's loss runs, with grad) and completion lengths go through the CAVPref trainer's DPO path."""

from __future__ import annotations

import copy
import re

import pytest
import torch
from trl import DPOConfig, DPOTrainer

from tests.helpers import trainer_fixtures as F

# every loss type TRL documents for DPOConfig.loss_type (derived from TRL, so a new one is covered by default)
LOSS_TYPES = re.findall(r"`'(\w+)'`", DPOConfig.__dataclass_fields__["loss_type"].metadata["help"])
NEEDS = {"exo_pair": {"label_smoothing": 1e-3}, "robust": {"label_smoothing": 0.1}}
CASES = {
    **{t: {"loss_type": [t], **NEEDS.get(t, {})} for t in LOSS_TYPES},
    "rpo (sigmoid + 0.5 sft)": {"loss_type": ["sigmoid", "sft"], "loss_weights": [1.0, 0.5]},
    "mpo (sigmoid, bco_pair, sft)": {
        "loss_type": ["sigmoid", "bco_pair", "sft"],
        "loss_weights": [0.8, 0.2, 1.0],
    },
    "sigmoid, js_divergence": {"loss_type": ["sigmoid"], "f_divergence_type": "js_divergence"},
}
ROWS = [
    ("a violin", "a cello"),
    ("None of the above", "a flute"),
    ("yes", "no"),
    ("a violin then a drum", "a drum then a violin"),
]


@pytest.fixture(scope="module")
def text_models(fx):
    """A tiny Qwen2 LM (the fixture's tokenizer) and a perturbed copy as the policy: non-zero margins."""
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    tok = AutoTokenizer.from_pretrained(str(fx["model"]))
    cfg = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    ref = Qwen2ForCausalLM(cfg)
    policy = copy.deepcopy(ref)
    with torch.no_grad():
        for p in policy.parameters():
            p.add_(0.2 * torch.randn_like(p))
    return tok, policy, ref


def trl_step(text_models, tmp_path, options):
    """TRL's loss and policy gradient on one batch, and that batch's log-probs as our trainer receives them."""
    from datasets import Dataset

    tok, policy, ref = text_models
    policy, ref = copy.deepcopy(policy), copy.deepcopy(ref)
    rows = [{"prompt": "Which instrument is playing?", "chosen": c, "rejected": r} for c, r in ROWS]
    args = DPOConfig(
        output_dir=str(tmp_path / "trl"),
        per_device_train_batch_size=len(rows),
        beta=0.5,
        report_to="none",
        use_cpu=True,
        bf16=False,
        disable_tqdm=True,
        **options,
    )
    tr = DPOTrainer(
        policy, ref_model=ref, args=args, train_dataset=Dataset.from_list(rows), processing_class=tok
    )
    batch = next(iter(tr.get_train_dataloader()))
    loss = tr.compute_loss(tr.model, batch)
    loss.backward()
    grad = {k: p.grad.clone() for k, p in tr.model.named_parameters()}
    tr.model.zero_grad()
    # the per-sequence log-probs of that same forward (TRL's: fused head, completion tokens only), with grad
    seq = batch["completion_mask"].size(1) - 1
    labels = batch["input_ids"].masked_fill(batch["completion_mask"] == 0, -100)
    out = tr.model(
        input_ids=batch["input_ids"],
        attention_mask=batch["attention_mask"],
        labels=labels,
        fused_lm_head=True,
    )
    chosen, rejected = out.log_probs[:, -seq:].sum(1).chunk(2)
    ref_chosen, ref_rejected = tr.compute_ref_log_probs(tr.ref_model, batch)
    n_chosen, n_rejected = batch["completion_mask"].sum(1).chunk(2)
    logps = (
        {"y_w": chosen, "y_l": rejected},
        {"y_w": ref_chosen, "y_l": ref_rejected},
        {"y_w": n_chosen, "y_l": n_rejected},
    )
    return loss.item(), grad, tr.model, logps


@pytest.mark.parametrize("name", list(CASES))
def test_dpo_loss_and_gradient_match_trl(fx, text_models, model_io, tmp_path, name):
    from tests.helpers.trainer import trainer

    options = CASES[name]
    want, want_grad, policy, (pol, ref, tokens) = trl_step(text_models, tmp_path, options)
    ours = trainer(fx, model_io, F.dataset(1), tmp_path / "ours", method="dpo", beta=0.5, **options)
    types = options["loss_type"]  # each term by TRL's code (the bridge), weighted as TRL weighs them
    weights = options.get("loss_weights") or [1.0] * len(types)
    loss = sum(w * ours.objective.dpo_loss(pol, ref, tokens, t) for t, w in zip(types, weights))
    assert loss.item() == pytest.approx(want, rel=1e-5, abs=1e-6), name
    loss.backward()
    got = {k: p.grad for k, p in policy.named_parameters()}
    scale = max(float(g.abs().max()) for g in want_grad.values())
    assert scale > 0
    assert max(float((got[k] - want_grad[k]).abs().max()) for k in got) <= 1e-5 * scale, name


def test_the_cavpref_methods_refuse_trl_variants_with_the_reason(tmp_path):
    from tests.helpers.trainer import config

    with pytest.raises(ValueError, match=r"loss_type=\['ipo'\].*none of its terms.*method dpo's"):
        config(tmp_path, loss_type="ipo")
    config(tmp_path, method="dpo", loss_type=["ipo", "sft"], loss_weights=[1.0, 0.3], label_smoothing=0.1)
    with pytest.raises(ValueError, match=r"use_weighting=True.*WPO's weights needs per-token log-probs"):
        config(tmp_path, method="dpo", use_weighting=True)


def test_an_ipo_run_trains_and_logs_the_y_pair(fx, model_io, tmp_path):
    """End to end: two IPO steps on the audio-visual rows move the weights, with TRL's and our metrics logged
    and the forward statistics TRL cannot know here left out."""
    from datasets import load_from_disk

    from tests.helpers.trainer import trainer

    tr = trainer(
        fx,
        model_io,
        load_from_disk(str(fx["prefs"])).select(range(4)),
        tmp_path,
        method="dpo",
        loss_type="ipo",
        max_steps=2,
        learning_rate=1e-2,
    )
    before = {k: v.detach().clone() for k, v in tr.model.named_parameters()}
    tr.train()
    first, second = tr.state.log_history[0], tr.state.log_history[1]
    # step 0: policy = reference, every margin 0: IPO's (0 - 1 / (2 β))² = 25 at β = 0.1
    assert first["loss"] == pytest.approx(25.0, rel=1e-5) and first["y/margin"] == 0.0
    assert "rewards/chosen" in first and "entropy" not in first and "mean_token_accuracy" not in first
    assert second["y/margin"] != 0.0
    assert any(not torch.equal(v, before[k]) for k, v in tr.model.named_parameters())
