"""Shared-prefix scoring (issue 15): one packed sequence per (prompt, media) prefix gives the same per-row
log-probs AND parameter gradients as full-row scoring, for every task's row pattern, both model I/Os (Qwen with
``use_audio_in_video`` on and off), left and right packing, eager and sdpa attention, LoRA + activation
checkpointing, and zero-dummy encoders."""

from __future__ import annotations

import pytest
import torch

from cavpref.bench.agreement import gradient_relative
from cavpref.collator import CAVPrefCollator
from cavpref.data import ALL_TASKS
from cavpref.loss import DEFAULT_SWITCHES
from cavpref.models import Row, load_model_io
from cavpref.models.shared_prefix import block_mask, pack_rows, token_counts, unsupported_reason
from cavpref.models.tiny import build_tiny_composed, build_tiny_qwen_omni, demo_media

pytestmark = pytest.mark.usefixtures("one_thread")
RTOL = 1e-5


# ----- pure layout ---------------------------------------------------------------------------------------------
def test_pack_rows_layout_hand_checked():
    """Rows 0 and 2 share prompt (1, 2, 3) and media 0; row 1 has another media. Group 0 packs
    [1 2 3 | 7 8 | 9]: response 1 = (7, 8) scored from positions 2 (last prefix token) and 3; response 2 = (9)
    scored from position 2 again; positions restart at the prefix end (src_pos 3, 4 then 3)."""
    p = pack_rows([[1, 2, 3], [1, 2, 3], [1, 2, 3]], [[7, 8], [5], [9]], [0, 1, 0], pad_id=0)
    assert p["input_ids"].tolist() == [[1, 2, 3, 7, 8, 9], [1, 2, 3, 5, 0, 0]]
    assert p["segment"].tolist() == [[0, 0, 0, 1, 1, 2], [0, 0, 0, 1, -1, -1]]
    assert p["src_row"].tolist() == [[0, 0, 0, 0, 0, 2], [1, 1, 1, 1, 0, 0]]
    assert p["src_pos"].tolist() == [[0, 1, 2, 3, 4, 3], [0, 1, 2, 3, 0, 0]]
    assert p["group_row"].tolist() == [0, 1]
    assert p["target_pos"].tolist() == [[2, 3, 2], [2, 0, 0]]
    assert p["target_ids"].tolist() == [[7, 8, 9], [5, 0, 0]]
    assert p["target_row"].tolist() == [[0, 0, 2], [1, 0, 0]]
    assert p["target_valid"].tolist() == [[True] * 3, [True, False, False]]
    mask = block_mask(p["segment"], p["valid"])[0, 0].int().tolist()
    assert mask == [
        [1, 0, 0, 0, 0, 0],
        [1, 1, 0, 0, 0, 0],
        [1, 1, 1, 0, 0, 0],
        [1, 1, 1, 1, 0, 0],
        [1, 1, 1, 1, 1, 0],
        [1, 1, 1, 0, 0, 1],
    ]  # token 9 does not see 7, 8
    pad_rows = block_mask(p["segment"], p["valid"])[1, 0].int().tolist()
    assert pad_rows[4] == [0, 0, 0, 0, 1, 0] and pad_rows[5] == [0, 0, 0, 0, 0, 1]  # padding sees itself only
    left = pack_rows(
        [[1, 2, 3], [1, 2, 3], [1, 2, 3]], [[7, 8], [5], [9]], [0, 1, 0], pad_id=0, padding_side="left"
    )
    assert left["input_ids"].tolist()[1] == [0, 0, 1, 2, 3, 5] and left["target_pos"].tolist()[1] == [4, 0, 0]
    assert pack_rows([[1], [2]], [[3], [4]], [0, 0], pad_id=0) is None  # nothing shared: full rows


def test_unsupported_kernels_are_named():
    class Fake(torch.nn.Module):
        def __init__(self, kernel):
            super().__init__()
            from transformers import PretrainedConfig

            self.config = PretrainedConfig()
            self.config._attn_implementation = kernel

    assert unsupported_reason(Fake("sdpa")) is None and unsupported_reason(Fake("eager")) is None
    assert "flash_attention_2" in unsupported_reason(Fake("flash_attention_2"))


# ----- models --------------------------------------------------------------------------------------------------
CONFIGS = ("qwen", "qwen_aiv", "composed")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("shared_prefix_models")
    return {"qwen": build_tiny_qwen_omni(root / "qwen"), "composed": build_tiny_composed(root / "composed")}


def _io(folders, config, **kw):
    torch.manual_seed(0)
    kind = "composed" if config == "composed" else "qwen"
    if config == "qwen_aiv":
        kw["use_audio_in_video"] = True
    return load_model_io(str(folders[kind]), dtype="float32", **kw)


@pytest.fixture(scope="module")
def ios(folders):
    return {c: _io(folders, c) for c in CONFIGS}


MEDIA = {
    "P": demo_media(1),
    "C": demo_media(2),
    "PV": demo_media(3, audio=False),
    "PA": demo_media(4, video=False),
    "CV": demo_media(5),
    "CA": demo_media(6),
}


def _example(task: str, i: int = 0) -> dict:
    """A preference row with the task's media pattern: MVT has no video, MAT no audio; the anchors' perturbed
    clip is the presented one (as data_prep builds them), the clean one another clip."""
    presented = {"MVT": "PA", "MAT": "PV"}.get(task, "P")
    eta, gamma = DEFAULT_SWITCHES[task]
    row = {
        "id": f"{task}:{i}",
        "task": task,
        "prompt": f"Question {i} about the clip: which instrument plays?",
        "media": presented,
        "chosen": "(E) None of the above",
        "rejected": "(B) violin",
        "visual_response": None,
        "visual_clean": None,
        "visual_perturbed": None,
        "audio_response": None,
        "audio_clean": None,
        "audio_perturbed": None,
    }
    if eta or task == "MVIT":
        row.update(visual_response="(A) piano", visual_clean="CV", visual_perturbed=presented)
    if gamma or task == "MAIT":
        row.update(audio_response="(C) drums", audio_clean="CA", audio_perturbed=presented)
    return row


def _collator(io, method="cavpref"):
    switches = dict(DEFAULT_SWITCHES, MVIT=(1, 0), MAIT=(0, 1))  # the anchors of every task that has them
    return CAVPrefCollator(io, switches, method=method, decode=lambda spec: MEDIA[spec])


def _scores_and_grads(io, batch, shared: bool):
    io.model.zero_grad(set_to_none=True)
    saved = io.shared_prefix
    io.shared_prefix = shared
    try:
        lp = io.logps(io.model, batch)
    finally:
        io.shared_prefix = saved
    weights = torch.linspace(0.5, 1.5, lp.shape[0])
    (lp * weights).sum().backward()  # distinct weights: a row mix-up changes the gradient
    grads = {n: p.grad.detach().clone() for n, p in io.model.named_parameters() if p.grad is not None}
    return lp.detach(), grads


def assert_exact(io, batch):
    assert "packed" in batch, "the batch shares prefixes, so it must carry the packed layout"
    full_lp, full_g = _scores_and_grads(io, batch, shared=False)
    lp, g = _scores_and_grads(io, batch, shared=True)
    torch.testing.assert_close(lp, full_lp, rtol=RTOL, atol=0)
    assert_grads_close(g, full_g)
    return lp


def assert_grads_close(g, want):
    """Each gradient tensor within RTOL of its own largest entry (floor: 1% of the model's largest entry;
    ``cavpref.bench.agreement.gradient_relative`` says why)."""
    worst, name = gradient_relative(g, want)
    assert worst <= RTOL, (name, worst)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("task", ALL_TASKS)
def test_logps_and_gradients_equal_full_rows_per_task(ios, config, task):
    io = ios[config]
    batch = _collator(io)([_example(task, 0), _example(task, 1)])["model_inputs"]
    counts = token_counts(batch)
    assert counts["shared_prefix"] < counts["full_rows"]
    assert_exact(io, batch)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("side", ["left", "right"])
def test_nine_task_mix_both_padding_sides(ios, config, side, monkeypatch):
    io = ios[config]
    monkeypatch.setattr(io, "packed_padding_side", side)
    batch = _collator(io)([_example(t, i) for i, t in enumerate(ALL_TASKS)])["model_inputs"]
    assert_exact(io, batch)


def test_the_block_mask_matters(ios, monkeypatch):
    """With a plain causal mask (responses seeing each other) the log-probs change: the test above can fail."""
    from cavpref.models import chat

    io = ios["qwen"]
    batch = _collator(io, "dpo")([_example("MCIT")])["model_inputs"]
    full = io._full_row_logps(io.model, batch, reuse_encoders=True).detach()
    monkeypatch.setattr(chat, "block_mask", lambda seg, valid: block_mask(seg.clamp(max=0) * 0, valid))
    with torch.no_grad():
        wrong = io.logps(io.model, batch)
    assert not torch.allclose(wrong, full, rtol=RTOL, atol=0)


def test_dpo_groups_two_rows_per_prefix_and_counts_tokens(ios):
    io = ios["qwen"]
    batch = _collator(io, "dpo")([_example(t, i) for i, t in enumerate(ALL_TASKS)])["model_inputs"]
    packed = batch["packed"]
    assert packed["input_ids"].shape[0] == len(ALL_TASKS) and int(packed["num_rows"]) == 2 * len(ALL_TASKS)
    counts = token_counts(batch)
    prompt = int((batch["labels"] == -100).logical_and(batch["attention_mask"].bool()).sum()) // 2
    assert counts["full_rows"] - counts["shared_prefix"] == prompt


@pytest.mark.parametrize("attn", ["eager"])
def test_eager_attention(folders, attn):
    io = _io(folders, "qwen", attn_implementation=attn)
    assert_exact(io, _collator(io)([_example("MVIT"), _example("MAT", 1)])["model_inputs"])


def test_zero_dummy_encoders(folders):
    """A batch with no audio at all (MAT only): the audio encoder runs on the zero dummy in both layouts."""
    io = _io(folders, "qwen", missing_modality="zero_dummy")
    batch = _collator(io, "dpo")([_example("MAT"), _example("MAT", 1)])["model_inputs"]
    assert_exact(io, batch)
    _, grads = _scores_and_grads(io, batch, shared=True)
    assert any(n.startswith("model.audio_tower") for n in grads)  # in the graph, with an exact-zero gradient


@pytest.mark.parametrize("config", ["qwen", "composed"])
def test_lora_with_activation_checkpointing_in_train_mode(folders, config):
    from peft import LoraConfig, get_peft_model

    io = _io(folders, config)
    io.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    io.model.enable_input_require_grads()
    peft = get_peft_model(
        io.model,
        LoraConfig(
            r=4, lora_alpha=8, lora_dropout=0.0, target_modules=["q_proj", "v_proj"], init_lora_weights=False
        ),
    )
    peft.train()
    batch = _collator(io)([_example("MVIT"), _example("MAIT", 1), _example("CAT", 2)])["model_inputs"]

    def run(shared):
        peft.zero_grad(set_to_none=True)
        io.shared_prefix = shared
        lp = io.logps(peft, batch)
        lp.sum().backward()
        return lp.detach(), {n: p.grad.clone() for n, p in peft.named_parameters() if p.grad is not None}

    try:
        (full, gfull), (lp, g) = run(False), run(True)
        with peft.disable_adapter(), torch.no_grad():  # the reference forward: adapter off, same layout
            io.shared_prefix = True
            ref_shared = io.logps(peft, batch)
            io.shared_prefix = False
            ref_full = io.logps(peft, batch)
    finally:
        io.shared_prefix = True
    torch.testing.assert_close(lp, full, rtol=RTOL, atol=0)
    torch.testing.assert_close(ref_shared, ref_full, rtol=RTOL, atol=0)
    assert gfull and all("lora_" in n for n in gfull)
    assert_grads_close(g, gfull)


def test_fallback_logs_the_reason_and_scores_full_rows(ios, monkeypatch):
    """A model whose attention kernel takes no 4D mask: the packed path is not taken, the reason is logged,
    and the log-probs are the full-row ones."""
    from cavpref.models import chat

    io = ios["composed"]
    batch = _collator(io, "dpo")([_example("MCIT")])["model_inputs"]
    calls, logged = [], []
    monkeypatch.setattr(
        chat, "unsupported_reason", lambda model: "attention implementation 'flash_attention_2' ..."
    )
    monkeypatch.setattr(io, "_packed_logps", lambda *a, **k: calls.append(1))
    monkeypatch.setattr(chat.logger, "warning_once", logged.append)
    with torch.no_grad():
        got = io.logps(io.model, batch)
        want = io._full_row_logps(io.model, batch, reuse_encoders=True)
    assert not calls and torch.equal(got, want)
    assert logged and "shared-prefix scoring is off" in logged[0] and "flash_attention_2" in logged[0]


def test_option_likelihood_scores_all_options_against_one_prefix(ios):
    """Eval's --mode likelihood: the options of an item share one prefix, packed into one sequence."""
    io = ios["qwen"]
    rows = [Row("Which instrument?", "", MEDIA["P"], "P", "i0"), Row("How many?", "", MEDIA["C"], "C", "i1")]
    options = [["(A) piano", "(B) violin", "(C) drums", "(D) None of the above"], ["(A) one", "(B) two"]]
    flat = [Row(r.prompt, o, r.media, r.media_key) for r, opts in zip(rows, options) for o in opts]
    batch = io.collate(flat)
    assert batch["packed"]["input_ids"].shape[0] == 2
    got = io.option_logps(io.model, rows, options)
    io.shared_prefix = False
    try:
        want = io.option_logps(io.model, rows, options)
    finally:
        io.shared_prefix = True
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=RTOL, atol=0)


def test_config_field_reaches_the_model_io(folders):
    assert _io(folders, "composed").shared_prefix is True
    io = _io(folders, "composed", shared_prefix=False)
    assert (
        io.shared_prefix is False and "packed" not in _collator(io, "dpo")([_example("MCIT")])["model_inputs"]
    )


@pytest.mark.parametrize("config", ["qwen", "composed"])
def test_option_scores_sum_tokens_and_letter_in_one_batch(ios, config):
    """Eval's three option-scoring protocols from one collate: ``sum`` is the summed log-prob (as before),
    ``tokens`` counts the option's tokens plus the end of turn and the newline after it (TRL's completion tokens),
    ``letter`` is the answer letter alone (one token, no end of turn) scored as its own continuation, packed on
    the same prefix."""
    io = ios[config]
    rows = [Row("Which instrument?", "", MEDIA["P"], "P", "i0"), Row("How many?", "", MEDIA["C"], "C", "i1")]
    options = [
        ["A. piano", "B. violin", "C. None of the above"],
        ["A. one", "B. two", "The audio is missing."],
    ]
    letters = [["A", "B", "C"], ["A", "B", None]]
    got = io.option_scores(io.model, rows, options, letters)
    want_sum = io.option_logps(io.model, rows, options)
    for r, opts in enumerate(options):
        torch.testing.assert_close(got[r]["sum"], want_sum[r], rtol=RTOL, atol=0)
        # by hand: the option's own tokens, then the template's close of the answer: <|im_end|> and "\n"
        hand = [len(io.tokenizer(o, add_special_tokens=False)["input_ids"]) + 2 for o in opts]
        assert got[r]["tokens"].tolist() == hand
    assert torch.isnan(got[1]["letter"][2]) and not torch.isnan(got[0]["letter"]).any()
    io.shared_prefix = False  # the letter alone, full rows, one row at a time
    try:
        for r, row in enumerate(rows):
            for j, letter in enumerate(letters[r]):
                if letter is None:
                    continue
                batch = io.collate([Row(row.prompt, letter, row.media, row.media_key, end_turn=False)])
                assert int((batch["labels"] != -100).sum()) == 1  # the letter's one token, no end of turn
                want = io.logps(io.model, batch)[0]
                torch.testing.assert_close(got[r]["letter"][j], want, rtol=RTOL, atol=1e-6)
    finally:
        io.shared_prefix = True
    assert (got[0]["letter"] > got[0]["sum"]).all()  # one token of the option costs less than all of them
