"""CAVPrefTrainer on a tiny Qwen2.5-Omni thinker with real mp4 media: rows per step, step-0 losses by hand,
reference options, bad input, the sampler, and the config."""

from __future__ import annotations

import json
import math

import pytest
import torch

from cavpref.collator import (
    BadRowError,
    CAVPrefCollator,
    PreferenceBatchSampler,
    available_slots,
    check_example,
    needed_slots,
)
from cavpref.data import TASKS
from cavpref.loss import DEFAULT_SWITCHES
from tests.helpers import trainer_fixtures as F
from tests.helpers.trainer import config, frames, fresh_model, trainer

LOG2 = math.log(2.0)


# ----------------------------------------------------------------------------- fixtures


def by_task(prefs, *tasks):
    rows = {r["task"]: r for r in prefs}
    return [rows[t] for t in tasks]


class CountingModelIO:
    """Wraps the real model_io to record how many rows each forward gets (policy / reference calls)."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []
        self.processor, self.sample_rate = inner.processor, inner.sample_rate

    def collate(self, rows):
        return self.inner.collate(rows)

    def logps(self, model, batch, **kw):
        self.calls.append(int(batch["input_ids"].shape[0]))
        return self.inner.logps(model, batch, **kw)

    def generate(self, *a, **kw):
        return self.inner.generate(*a, **kw)


# ----------------------------------------------------------------------------- config


def test_config_switch_tables_and_methods(tmp_path):
    paper = config(tmp_path)
    assert paper.switches() == DEFAULT_SWITCHES
    assert paper.switches()["COT-Swap"] == (1, 0)
    assert config(tmp_path, switch_variant="released").switches()["COT-Swap"] == (1, 1)
    over = config(tmp_path, switch_table='{"CAT": [0, 1]}')
    assert over.switches()["CAT"] == (0, 1) and over.switches()["MVIT"] == (1, 0)
    assert set(config(tmp_path, method="dpo").switches().values()) == {(0, 0)}
    assert config(tmp_path, method="dpo", beta=0.3).fixed_betas == {"y": 0.3, "v": None, "a": None}
    assert config(tmp_path, beta_v=0.2).fixed_betas == {"y": None, "v": 0.2, "a": None}
    assert config(tmp_path, method="cavpref_norobust").robust_mode == "none"
    assert config(tmp_path, robust="worst_case").robust_mode == "worst_case"
    assert config(tmp_path).lambdas == {"y": 1.0, "v": 1.0, "a": 0.8}
    assert config(tmp_path, reference="precomputed").precompute_ref_log_probs is True
    assert config(tmp_path, remove_unused_columns=True).remove_unused_columns is False


@pytest.mark.parametrize(
    "kw, needle",
    [
        ({"method": "ppo"}, "method"),
        ({"robust": "max"}, "robust"),
        ({"lambda_a": 0.0}, "lambda_a"),
        ({"switch_table": '{"XYZ": [1, 0]}'}, "XYZ"),
        ({"switch_table": '{"CAT": [2, 0]}'}, "CAT"),
        ({"beta_y": -1.0}, "beta_y"),
        ({"sampler": "random"}, "sampler"),
    ],
)
def test_config_rejects_bad_values(tmp_path, kw, needle):
    with pytest.raises(ValueError, match=needle):
        config(tmp_path, **kw)


def test_train_tasks_filter_the_preference_data(fx):
    from cavpref.train import DataArguments, load_preferences

    assert sorted(load_preferences(str(fx["prefs"]), "train", tasks=["MVIT", "MAT"])["task"]) == [
        "MAT",
        "MVIT",
    ]
    with pytest.raises(ValueError, match="CLEAN"):
        load_preferences(str(fx["prefs"]), "train", tasks=["CLEAN"])  # no rows of that task: said, not silent
    with pytest.raises(ValueError, match="MVTT"):
        DataArguments(train_tasks=["MVTT"])


# ----------------------------------------------------------------------------- sampler


def test_sampler_global_batches_do_not_depend_on_world_size():
    tasks = [t for t in TASKS for _ in range(3)]  # 27 samples
    one = list(PreferenceBatchSampler(tasks, 6, world_size=1, seed=3))
    two = list(PreferenceBatchSampler(tasks, 3, world_size=2, seed=3))
    assert len(two) == 2 * len(one) == len(PreferenceBatchSampler(tasks, 3, world_size=2))
    # rank r takes batch k with k % 2 == r: concatenated, the two ranks see the one-process batch
    assert [two[2 * k] + two[2 * k + 1] for k in range(len(one))] == one
    # every sample is seen; the last partial global batch wraps around
    assert {i for b in one for i in b} == set(range(27)) and all(len(b) == 6 for b in one)
    dropped = list(PreferenceBatchSampler(tasks, 6, seed=3, drop_last=True))
    assert len(dropped) == 4 == len(PreferenceBatchSampler(tasks, 6, drop_last=True))


def test_sampler_task_homogeneous_and_epochs():
    tasks = ["MCIT"] * 7 + ["MVIT"] * 4 + ["MAT"] * 2
    s = PreferenceBatchSampler(tasks, 2, world_size=2, mode="task_homogeneous", seed=0)
    batches = list(s)
    assert len(batches) == len(s) == 2 * (2 + 1 + 1)
    for k in range(0, len(batches), 2):  # one task per *global* batch (both ranks)
        assert len({tasks[i] for i in batches[k] + batches[k + 1]}) == 1
    first = s.global_batches()
    s.set_epoch(1)
    assert s.global_batches() != first  # reshuffled per epoch, deterministically
    s.set_epoch(0)
    assert s.global_batches() == first


# ----------------------------------------------------------------------------- collator


def test_needed_rows_per_method_and_switch():
    assert needed_slots("sft", 1, 1) == ("y_w",)
    assert needed_slots("dpo", 0, 0) == ("y_w", "y_l")
    assert needed_slots("cavpref", 1, 0) == ("y_w", "y_l", "v_w", "v_l")
    assert needed_slots("cavpref", 0, 1) == ("y_w", "y_l", "a_w", "a_l")
    assert available_slots({"visual_response": "x", "audio_response": None}) == ("y_w", "y_l", "v_w", "v_l")


def test_collator_builds_only_needed_rows_and_maps_them_back(fx, model_io, prefs):
    """MCIT (y only), MVIT (η), MAIT (γ), COT-Swap (η, paper): 14 rows, of which the anchors (a violin | clip A)
    of MVIT, MAIT and COT-Swap are the same row -> 12 distinct rows; slot indices point at the right ones."""
    batch_rows = by_task(prefs, "MCIT", "MVIT", "MAIT", "COT-Swap")
    col = CAVPrefCollator(
        model_io, DEFAULT_SWITCHES, method="cavpref", media_root=str(fx["media"]), frames=frames()
    )
    batch = col(batch_rows)
    assert int(batch["num_rows"]) == 12 == batch["model_inputs"]["input_ids"].shape[0]
    assert batch["eta"].tolist() == [0, 1, 0, 1] and batch["gamma"].tolist() == [0, 0, 1, 0]
    slots = batch["slots"]
    assert slots["v_w"][1] == slots["a_w"][2] == slots["v_w"][3] and slots["v_w"][0] == -1
    assert slots["a_l"].tolist()[:2] == [-1, -1]
    ids = batch["model_inputs"]["row_ids"]
    assert ids[int(slots["v_l"][1])] == "MVIT-0/v_l:visual_response"
    # the flat log-probs land on the right (sample, slot): compare with rows scored one at a time
    flat = model_io.logps(model_io.model, batch["model_inputs"])
    from cavpref.collator import SLOT_FIELDS
    from cavpref.media.decode import decode
    from cavpref.models import Row

    ex, slot = batch_rows[2], "a_l"
    resp, media = SLOT_FIELDS[slot]
    alone = model_io.collate(
        [Row(ex["prompt"], ex[resp], decode(ex[media], fx["media"], frames=frames()), ex[media])]
    )
    assert torch.allclose(flat[int(slots[slot][2])], model_io.logps(model_io.model, alone)[0], atol=1e-4)
    # DPO needs y_w, y_l only; SFT y_w only; "all" adds every anchor the data has
    assert (
        int(
            CAVPrefCollator(
                model_io, DEFAULT_SWITCHES, method="dpo", media_root=str(fx["media"]), frames=frames()
            )(batch_rows)["num_rows"]
        )
        == 8
    )
    assert (
        int(
            CAVPrefCollator(
                model_io, DEFAULT_SWITCHES, method="sft", media_root=str(fx["media"]), frames=frames()
            )(batch_rows)["num_rows"]
        )
        == 4
    )
    off = {t: (0, 0) for t in TASKS}  # "all" (reference precomputation) ignores the switches
    assert (
        int(
            CAVPrefCollator(model_io, off, method="cavpref", media_root=str(fx["media"]), frames=frames())(
                batch_rows
            )["num_rows"]
        )
        == 8
    )
    assert (
        int(
            CAVPrefCollator(model_io, off, method="all", media_root=str(fx["media"]), frames=frames())(
                batch_rows
            )["num_rows"]
        )
        == 12
    )


def test_media_cache_decodes_each_clip_once_and_changes_nothing(fx, model_io, prefs):
    """cache_size > 0: a clip seen again (another batch, another task's row of the same clip) is not decoded
    again, and the batch is identical to the uncached one."""
    from cavpref.media.decode import decode

    calls = []

    def counting(spec):
        calls.append(spec)
        return decode(spec, str(fx["media"]), frames=frames(), sample_rate=16000)

    rows = by_task(prefs, "MCIT", "MVIT", "MAIT", "COT-Swap")
    plain = CAVPrefCollator(model_io, DEFAULT_SWITCHES, method="cavpref", decode=counting)(rows)
    first = len(calls)
    cached = CAVPrefCollator(model_io, DEFAULT_SWITCHES, method="cavpref", decode=counting, cache_size=64)
    a, b = cached(rows), cached(rows)
    assert len(calls) == 2 * first  # the cached collator decoded once for both batches
    for batch in (a, b):
        for key, value in plain["model_inputs"].items():
            if torch.is_tensor(value):
                assert torch.equal(value, batch["model_inputs"][key]), key


def test_bad_rows_raise_naming_row_and_field_or_are_counted(fx, model_io, prefs):
    mvit, mcit, cat = (dict(r) for r in by_task(prefs, "MVIT", "MCIT", "CAT"))
    mvit["visual_perturbed"] = None
    mcit["rejected"] = "   "
    cat["media"] = '{"source": {"path": "missing.mp4", "start": 0.0, "end": null}}'
    problems = check_example(mvit, needed_slots("cavpref", 1, 0))
    assert problems == [
        "example 'MVIT-0' (task MVIT): field 'visual_perturbed' (row v_l) is missing or empty"
    ]
    kw = {"method": "cavpref", "media_root": str(fx["media"]), "frames": frames()}
    with pytest.raises(BadRowError, match=r"'MCIT-0'.*field 'rejected'"):
        CAVPrefCollator(model_io, DEFAULT_SWITCHES, **kw)([mcit])
    with pytest.raises(BadRowError, match=r"'CAT-0'.*field 'media'.*failed to decode.*missing.mp4"):
        CAVPrefCollator(model_io, DEFAULT_SWITCHES, **kw)([cat])
    good = dict(by_task(prefs, "MAT")[0])
    batch = CAVPrefCollator(model_io, DEFAULT_SWITCHES, skip_bad_rows=True, **kw)([mvit, mcit, cat, good])
    assert batch["example_ids"] == ["MAT-0"]
    assert [i for i, _ in batch["skipped"]] == ["MVIT-0", "MCIT-0", "CAT-0"]
    # calibrated β needs its score column
    no_score = dict(good, avsm_delta_a=None)
    with pytest.raises(BadRowError, match="avsm_delta_a"):
        CAVPrefCollator(model_io, DEFAULT_SWITCHES, calibrated=("y", "v", "a"), **kw)([no_score])


def test_trainer_validates_dataset_upfront(fx, model_io, prefs, tmp_path):
    broken = prefs.map(lambda r: {"visual_clean": None} if r["task"] == "MVT" else {})
    with pytest.raises(BadRowError, match=r"(?s)1 unusable.*train row \d+: example 'MVT-0'.*'visual_clean'"):
        trainer(fx, model_io, broken, tmp_path)
    tr = trainer(fx, model_io, broken, tmp_path, skip_bad_rows=True)
    assert len(tr.train_dataset) == len(prefs) - 1
    tr.train()
    report = json.loads((tmp_path / "out" / "skipped_rows.json").read_text())
    assert report["count"] == 1 and report["rows"][0]["id"] == "MVT-0"


# ----------------------------------------------------------------------------- the step


def _first_step(fx, model_io, dataset, tmp_path, **kw):
    counting = CountingModelIO(model_io)
    tr = trainer(fx, counting, dataset, tmp_path, **kw)
    tr.train()
    return tr.state.log_history[0], counting.calls


@pytest.mark.parametrize(
    "method, rows, components, normalizer",
    [
        ("dpo", [8, 8], 1, "exact"),
        ("cavpref_norobust", [12, 12], 3, "exact"),
        ("cavpref", [12, 12], 3, "exact"),  # one micro-batch is the optimizer batch: no extra no-grad pass
        ("cavpref", [12, 12], 3, "micro_batch"),
    ],
)
def test_step0_loss_by_hand_and_rows_per_forward(
    fx, model_io, prefs, tmp_path, method, rows, components, normalizer
):
    """At step 0 the policy is the reference: every margin is 0, every per-sample loss is log 2, and each
    aggregation (mean, soft-min, soft-max) of equal values is log 2 — total = log 2 × active components.
    One policy forward and one reference forward, each with exactly the rows the method needs (the exact
    normaliser's no-grad pass runs only when a step accumulates several micro-batches)."""
    data = prefs.select([i for i, t in enumerate(prefs["task"]) if t in ("MCIT", "MVIT", "MAIT", "COT-Swap")])
    log, calls = _first_step(fx, model_io, data, tmp_path, method=method, robust_normalizer=normalizer)
    assert calls == rows
    assert log["loss"] == pytest.approx(components * LOG2, abs=1e-5)
    assert log["y/margin"] == 0.0 and log["y/ess"] == pytest.approx(4.0)
    if method == "dpo":
        assert log["y/beta"] == pytest.approx(0.1) and "v/loss" not in log
    else:
        assert log["v/n"] == 2 and log["a/n"] == 1 and log["v/ess"] == pytest.approx(2.0)
        scores = sorted(data["clap_delta"])  # β_y min-max over the batch: mean of 0.9·norm + 0.1
        norm = [(s - scores[0]) / (scores[-1] - scores[0]) for s in scores]
        assert log["y/beta"] == pytest.approx(sum(0.9 * n + 0.1 for n in norm) / 4, abs=1e-6)
        assert log["task/MVIT/v_loss"] == pytest.approx(LOG2, abs=1e-6)


def test_sft_is_token_mean_nll_of_chosen(fx, model_io, prefs, tmp_path):
    data = prefs.select(range(1, 5))  # four distinct chosen rows
    log, calls = _first_step(fx, model_io, data, tmp_path, method="sft")
    assert calls == [4]  # one forward, no reference
    col = CAVPrefCollator(
        model_io, DEFAULT_SWITCHES, method="sft", media_root=str(fx["media"]), frames=frames()
    )
    mi = col(list(data))["model_inputs"]
    with torch.no_grad():
        total = model_io.logps(fresh_model(fx), mi).sum()
    tokens = (mi["labels"] != -100).sum()
    assert log["loss"] == pytest.approx(float(-total / tokens), rel=1e-5)


def test_reference_options_give_the_same_training(fx, model_io, prefs, tmp_path):
    """Separate frozen copy vs precomputed (cached on disk, every row type): same losses over 2 steps;
    a second trainer on the same data reads the cache and runs no reference forward."""
    data = prefs.select(range(4))  # MCIT, ICIT, MVIT, MAIT: y, visual and audio rows
    runs = {}
    for name, kw in (("model", {}), ("precomputed", {"precompute_ref_log_probs": True})):
        counting = CountingModelIO(model_io)
        tr = trainer(
            fx,
            counting,
            data,
            tmp_path / name,
            max_steps=2,
            per_device_train_batch_size=1,
            gradient_accumulation_steps=2,
            **kw,
        )
        n_pre = len(counting.calls)
        tr.train()
        runs[name] = ([r["loss"] for r in tr.state.log_history if "loss" in r], n_pre, counting.calls[n_pre:])
    assert runs["model"][0] == pytest.approx(runs["precomputed"][0], abs=1e-5)
    # per step of 2 micro-batches: policy forwards only (the exact normaliser's no-grad ones, then those with grad)
    assert runs["precomputed"][1] > 0 and len(runs["precomputed"][2]) == 8
    assert len(runs["model"][2]) == 12  # + one reference forward per micro-batch, shared by both passes
    cached = CountingModelIO(model_io)
    tr = trainer(fx, cached, data, tmp_path / "precomputed", precompute_ref_log_probs=True)
    assert cached.calls == [] and "ref_a_l" in tr.train_dataset.column_names
    mait = tr.train_dataset[[t for t in data["task"]].index("MAIT")]
    assert math.isfinite(mait["ref_a_l"]) and math.isnan(mait["ref_v_l"])


def test_lora_reference_is_the_adapter_disabled(fx, model_io, prefs, tmp_path):
    from cavpref.models import AVModelArguments, prepare_model

    cfg = AVModelArguments(model_name_or_path=str(fx["model"]), lora_r=4, lora_alpha=8, lora_dropout=0.0)
    model = prepare_model(fresh_model(fx), cfg, model_io)
    base_before = {k: v.clone() for k, v in model.named_parameters() if "lora_" not in k}
    data = prefs.select(range(4))
    tr = trainer(fx, model_io, data, tmp_path, model=model, method="dpo", max_steps=2)
    assert tr.ref_model is None
    tr.train()
    first = tr.state.log_history[0]
    assert first["loss"] == pytest.approx(LOG2, abs=1e-6)  # reference = base = policy at step 0 (B = 0)
    assert tr.state.log_history[1]["y/margin"] != 0.0
    after = dict(tr.model.named_parameters())
    assert all(torch.equal(after[k], v) for k, v in base_before.items())
    # the merged checkpoint (what eval loads) is a plain model: base + B·A on the LoRA targets only
    from cavpref.models import load_model_io
    from cavpref.train import save_merged

    merged = load_model_io(
        AVModelArguments(model_name_or_path=save_merged(tr, str(tmp_path / "merged")))
    ).model
    base = fresh_model(fx).state_dict()
    changed = {k for k, v in merged.state_dict().items() if not torch.equal(v, base[k])}
    assert changed and all("language_model" in k and "proj" in k for k in changed)


def test_non_finite_logps_raise_or_skip_the_batch(fx, model_io, prefs, tmp_path):
    data = prefs.select(range(4))
    model = fresh_model(fx)

    def poison(module, inputs, output):  # a NaN in the logits of the first row
        output = output.clone()
        output[0] = float("nan")
        return output

    model.lm_head.register_forward_hook(poison)
    with pytest.raises(FloatingPointError, match=r"example '.*' row y_w .*policy log-prob is nan"):
        trainer(fx, model_io, data, tmp_path, model=model, method="dpo").train()
    before = {k: v.clone() for k, v in model.named_parameters()}
    tr = trainer(fx, model_io, data, tmp_path / "skip", model=model, method="dpo", skip_bad_rows=True)
    tr.train()
    assert all(torch.equal(before[k], v) for k, v in tr.model.named_parameters())  # no step applied
    report = json.loads((tmp_path / "skip" / "out" / "skipped_rows.json").read_text())
    assert report["count"] >= 1 and "batch skipped" in report["rows"][0]["reason"]


# ----------------------------------------------------------------------------- bring your own AVLLM


def test_composed_avllm_trains_with_the_same_trainer(fx, prefs, tmp_path):
    """The bring-your-own example (vision tower + Whisper + projectors + any causal LM, one model_io class) goes
    through the same collator, trainer and loss as the Qwen thinker: one policy + one reference forward with
    the needed rows, step-0 loss log 2 per component, and an update to the language model only (encoders and
    projectors frozen by ``prepare_model``)."""
    from cavpref.models import AVModelArguments, load_model_io, prepare_model
    from cavpref.models.tiny import build_tiny_composed

    folder = build_tiny_composed(
        tmp_path / "composed", text_model_type="llama", extra_corpus=[e.prompt for e in F.examples(1)]
    )
    cfg = AVModelArguments(model_name_or_path=str(folder), dtype="float32", lora_r=0)
    composed = load_model_io(cfg)
    assert type(composed).__name__ == "ComposedAVModelIO"
    model = prepare_model(composed.model, cfg, composed)
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    data = prefs.select([i for i, t in enumerate(prefs["task"]) if t in ("MCIT", "MVIT", "MAIT", "COT-Swap")])
    counting = CountingModelIO(composed)
    tr = trainer(fx, counting, data, tmp_path, model=model, max_steps=2, learning_rate=1e-2)
    tr.train()
    # per step: policy and reference, 12 distinct rows each (one micro-batch: no exact-normaliser pass)
    assert counting.calls == [12] * 4
    first, second = tr.state.log_history[0], tr.state.log_history[1]
    assert first["loss"] == pytest.approx(3 * LOG2, abs=1e-5) and first["v/n"] == 2 and first["a/n"] == 1
    assert second["y/margin"] != 0.0
    after = dict(tr.model.named_parameters())
    changed = {k for k, v in before.items() if not torch.equal(after[k], v)}
    assert changed and all(k.startswith("language_model.") for k in changed)


def test_anchor_response_picks_the_anchor_rows_response(fx, model_io, prefs, tmp_path):
    """``anchor_response``: ``original`` scores the anchor pair's own response (the answer the clean media
    support) under clean vs perturbed media; ``chosen`` scores the sample's chosen response there (paper Eq. 2-3).
    MVIT presents the perturbed media, so with ``chosen`` its v_l row *is* its y_w row (one row, deduplicated)."""
    from cavpref.collator import slot_fields

    rows = by_task(prefs, "MVIT", "MAIT")
    mvit, _mait = rows
    assert mvit["visual_perturbed"] == mvit["media"] and mvit["chosen"] != mvit["visual_response"]

    def built(anchor):
        col = CAVPrefCollator(
            model_io,
            DEFAULT_SWITCHES,
            method="cavpref",
            media_root=str(fx["media"]),
            frames=frames(),
            anchor=anchor,
        )
        batch = col(rows)
        ids = batch["model_inputs"]["row_ids"]
        return {
            (s, i): ids[int(v[i])] for s, v in batch["slots"].items() for i in range(2) if v[i] >= 0
        }, batch

    original, b_orig = built("original")
    chosen, b_chosen = built("chosen")
    assert (
        original[("v_w", 0)] == "MVIT-0/v_w:visual_response"
        and original[("a_l", 1)] == "MAIT-0/a_l:audio_response"
    )
    assert chosen[("v_w", 0)] == "MVIT-0/v_w:chosen" and chosen[("a_l", 1)] == "MAIT-0/y_w:chosen"
    assert chosen[("v_l", 0)] == chosen[("y_w", 0)] == "MVIT-0/y_w:chosen"  # same prompt, response, media
    # the two tasks share prompt, chosen response and clean clip: MAIT's a_w is MVIT's v_w either way
    assert original[("a_w", 1)] == "MVIT-0/v_w:visual_response" and chosen[("a_w", 1)] == "MVIT-0/v_w:chosen"
    # original: 4 MVIT rows + MAIT's y_w, y_l, a_l = 7; chosen: v_l and a_l coincide with y_w -> 5
    assert int(b_orig["num_rows"]) == 7 and int(b_chosen["num_rows"]) == 5
    assert slot_fields("chosen")["y_l"] == ("rejected", "media") and slot_fields("chosen")["a_l"] == (
        "chosen",
        "audio_perturbed",
    )
    with pytest.raises(ValueError, match="anchor_response must be one of"):
        slot_fields("rejected")
    with pytest.raises(ValueError, match="anchor_response"):
        config(tmp_path, anchor_response="paper")
