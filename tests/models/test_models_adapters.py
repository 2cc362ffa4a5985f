"""Core model_io behaviour, for both the Qwen2.5-Omni thinker and the composed AVLLM (tiny offline models)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cavpref.media.decode import DecodedMedia
from cavpref.models import ModelIOError, Row, load_model_io
from cavpref.models.tiny import build_tiny_composed, build_tiny_qwen_omni, demo_media

KINDS = ("qwen", "composed")


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_models")
    return {"qwen": build_tiny_qwen_omni(root / "qwen"), "composed": build_tiny_composed(root / "composed")}


@pytest.fixture(scope="module")
def model_ios(folders):
    torch.manual_seed(0)
    return {k: load_model_io(str(p), dtype="float32") for k, p in folders.items()}


@pytest.fixture(params=KINDS)
def kind(request):
    return request.param


@pytest.fixture
def ad(model_ios, kind):
    return model_ios[kind]


def _same_model_io(ad, **kw):
    """Another model_io over the same processor and model, with different options."""
    return type(ad)(ad.processor, model=ad.model, **kw)


def _encoders(ad):
    core = ad.model
    return (core.get_submodule(ad.vision_modules[0]), core.get_submodule(ad.audio_modules[0]))


def _count_calls(module):
    calls = []
    handle = module.register_forward_hook(lambda m, i, o: calls.append(1))
    return calls, handle


# ----- log-probs -------------------------------------------------------------------------------------------------
def test_response_logps_hand_computed():
    """Row 0 scores tokens 1 then 2: log(1/3) from uniform logits, then log(2/4) from logits (0, 0, ln 2).
    Row 1 scores only its last token 0 with logits (ln 3, 0, 0): log(3/5). Position t predicts token t+1."""
    import math

    from cavpref.models.common import response_logps

    logits = torch.zeros(2, 3, 3)
    logits[0, 1, 2] = math.log(2)
    logits[1, 1, 0] = math.log(3)
    labels = torch.tensor([[-100, 1, 2], [-100, -100, 0]])
    got = response_logps(logits, labels)
    assert got.tolist() == pytest.approx([math.log(1 / 3) + math.log(1 / 2), math.log(3 / 5)], abs=1e-6)
    assert response_logps(logits.to(torch.bfloat16), labels).dtype == torch.float32


def test_response_index_gathers_exactly_the_labelled_positions():
    """Rows with responses at different offsets (right padding): positions t predict labels[t+1]; gathering the
    logits there and summing gives response_logps over the full logits, bit for bit."""
    from cavpref.models.common import gathered_logps, response_index, response_logps

    labels = torch.tensor(
        [[-100, -100, 5, 6, 7, -100], [-100, 3, -100, -100, -100, -100], [-100] * 4 + [1, 2]]
    )
    positions, targets, valid = response_index(labels)
    assert positions.tolist() == [[1, 2, 3], [0, 0, 0], [3, 4, 0]]
    assert valid.tolist() == [[True] * 3, [True, False, False], [True, True, False]]
    assert targets.tolist() == [[5, 6, 7], [3, 0, 0], [1, 2, 0]]
    logits = torch.randn(3, 6, 9, generator=torch.Generator().manual_seed(0))
    picked = logits.gather(1, positions.unsqueeze(-1).expand(-1, -1, 9))
    assert torch.equal(gathered_logps(picked, targets, valid), response_logps(logits, labels))


def test_output_head_runs_only_at_response_positions(ad):
    """logps feeds the output head the hidden states of the response positions only (B, K, hidden), not the whole
    (B, L, hidden) sequence — the (B, L, V) logits of a long media prompt are never built."""
    rows = _cavpref_rows()
    shared = ad.collate(rows)
    ad = _same_model_io(ad, shared_prefix=False)  # full rows here; the packed layout is checked below
    batch = ad.collate(rows)
    seen = []
    handle = ad.model.get_output_embeddings().register_forward_hook(
        lambda m, i, o: seen.append(tuple(o.shape))
    )
    with torch.no_grad():
        lp = ad.logps(ad.model, batch)
        full = ad.forward_logits(ad.model, batch)
        ad.shared_prefix = True
        ad.logps(ad.model, shared)
    handle.remove()
    assert seen[2][:2] == tuple(
        shared["packed"]["target_pos"].shape
    )  # packed: (prefixes, targets per prefix)
    k = int((batch["labels"][:, 1:] != -100).sum(-1).max())
    assert (
        seen[0] == (len(rows), k, full.shape[-1]) and seen[1] == tuple(full.shape) and k < full.shape[1] // 4
    )
    from cavpref.models.common import response_logps

    torch.testing.assert_close(lp, response_logps(full, batch["labels"]), atol=1e-5, rtol=0)


def _manual_inputs(ad, kind, prompt, response, media):
    """Model inputs from the processor alone, over the full chat text (prompt + response + the template's close of
    the turn, ``<|im_end|>`` and its newline: the completion TRL's DPOTrainer scores)."""
    proc = ad.processor
    content = ([{"type": "video"}] if media.has_video else []) + (
        [{"type": "audio"}] if media.has_audio else []
    )
    msgs = (
        [{"role": "system", "content": [{"type": "text", "text": ad.system_prompt}]}]
        if ad.system_prompt
        else []
    )
    msgs.append({"role": "user", "content": content + [{"type": "text", "text": prompt}]})
    text = (
        proc.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True) + response + "<|im_end|>\n"
    )
    kw = {}
    if media.has_video:
        kw["videos"] = [media.frames]
    if media.has_audio:
        kw["audio"] = [media.audio]
    if kind == "qwen":
        kw["videos_kwargs"] = ad._videos_kwargs(media)
    return proc(text=[text], return_tensors="pt", **kw)


def test_logps_equal_manual_log_softmax_sum(ad, kind):
    media = demo_media(3)
    response = "The violin is on the left."
    got = ad.logps(ad.model, ad.collate([Row("Where is the violin?", response, media, None, "r")]))
    inputs = _manual_inputs(ad, kind, "Where is the violin?", response, media)
    with torch.no_grad():
        logits = ad.model(**inputs).logits[0].double()
    ids = inputs["input_ids"][0]
    n = len(ad.tokenizer(response + "<|im_end|>\n", add_special_tokens=False)["input_ids"])
    expected = 0.0
    for pos in range(len(ids) - n, len(ids)):  # token at pos is predicted by the logits at pos - 1
        expected += float(torch.log_softmax(logits[pos - 1], -1)[ids[pos]])
    assert got.dtype == torch.float32 and got.shape == (1,)
    assert got.item() == pytest.approx(expected, abs=1e-4)


def test_labels_cover_response_and_end_of_turn_only(ad):
    batch = ad.collate([Row("Is there a piano?", "yes", demo_media(0), None, "r")])
    labelled = batch["labels"][0][batch["labels"][0] != -100].tolist()
    # TRL's completion: the answer, <|im_end|> and the newline after it
    assert labelled == ad.tokenizer("yes<|im_end|>\n", add_special_tokens=False)["input_ids"]
    ids = batch["input_ids"][0].tolist()
    assert ids[-len(labelled) :] == labelled  # labels sit on the last tokens: the prompt and media are masked


def test_padding_invariance(ad):
    target = Row("How many instruments are sounding?", "two", demo_media(1), None, "t")
    longer = Row(
        "What is the sequence of events in the video? " * 6,
        "Speech followed by Meow.",
        demo_media(2, num_frames=6),
        None,
        "long",
    )
    shorter = Row("Yes?", "no", None, None, "short")
    with torch.no_grad():
        alone = ad.logps(ad.model, ad.collate([target]))
        batched = ad.logps(ad.model, ad.collate([longer, target, shorter]))
        batched2 = ad.logps(ad.model, ad.collate([shorter, target]))
    torch.testing.assert_close(batched[1:2], alone, atol=1e-5, rtol=0)
    torch.testing.assert_close(batched2[1:2], alone, atol=1e-5, rtol=0)


def test_mixed_modality_batch(ad):
    rows = [
        Row("Q video", "piano", demo_media(0, audio=False, num_frames=3), None, "v"),  # odd frame count
        Row("Q audio", "The video is missing.", demo_media(1, video=False), None, "a"),
        Row("Q both", "violin", demo_media(2), None, "av"),
        Row("Q none", "None of the above", None, None, "none"),
        Row("Q empty media", "no", DecodedMedia(None, None, None, 16000, 0.0), None, "empty"),
    ]
    batch = ad.collate(rows)
    assert batch["row_video"].tolist() == [0, -1, 1, -1, -1]
    assert batch["row_audio"].tolist() == [-1, 0, 1, -1, -1]
    vid, aud = ad.processor.video_token_id, ad.processor.audio_token_id
    ids = batch["input_ids"]
    assert [(int((r == vid).sum()) > 0, int((r == aud).sum()) > 0) for r in ids] == [
        (True, False),
        (False, True),
        (True, True),
        (False, False),
        (False, False),
    ]
    with torch.no_grad():
        together = ad.logps(ad.model, batch)
        alone = torch.cat([ad.logps(ad.model, ad.collate([r])) for r in rows])
    torch.testing.assert_close(together, alone, atol=1e-5, rtol=0)


def _cavpref_rows():
    """One CAVPref sample: y_w / y_l under the presented media, and the visual anchor pair (V_w vs V_l)."""
    presented, clean, perturbed = demo_media(5), demo_media(6), demo_media(7, audio=False)
    q = "Which instrument sounds first?"
    return [
        Row(q, "None of the above", presented, "p", "yw"),
        Row(q, "violin", presented, "p", "yl"),
        Row(q, "piano", clean, "c", "vw"),
        Row(q, "piano", perturbed, "x", "vl"),
    ]


def test_encoder_reuse_equals_recompute(ad):
    rows = _cavpref_rows()
    batch = ad.collate(rows)
    assert batch["row_video"].tolist() == [0, 0, 1, 2]  # shared media featurised once
    vision, _ = _encoders(ad)
    results = {}
    for reuse in (True, False):
        ad.model.zero_grad(set_to_none=True)
        vcalls, h1 = _count_calls(vision)
        lp = ad.logps(ad.model, batch, reuse_encoders=reuse)
        h1.remove()
        (lp * torch.tensor([1.0, -2.0, 0.5, 3.0])).sum().backward()
        grads = {n: p.grad.clone() for n, p in ad.model.named_parameters() if p.grad is not None}
        results[reuse] = (lp.detach(), grads, len(vcalls))
    (lp_r, g_r, calls_r), (lp_n, g_n, calls_n) = results[True], results[False]
    ad.model.zero_grad(set_to_none=True)
    torch.testing.assert_close(lp_r, lp_n, atol=1e-5, rtol=0)
    assert g_r.keys() == g_n.keys() and any(k.startswith(ad.vision_modules[0]) for k in g_r)
    for name in g_r:
        torch.testing.assert_close(g_r[name], g_n[name], atol=1e-5, rtol=1e-4, msg=name)
    assert calls_r == calls_n == 1  # one encoder call per forward either way; reuse feeds it 3 videos, not 4


def test_option_logps_match_rows(ad):
    media = demo_media(4)
    scores = ad.option_logps(
        ad.model, [Row("Where?", media=media, row_id="q")], [["left", "middle", "right"]]
    )
    with torch.no_grad():
        singles = torch.cat(
            [ad.logps(ad.model, ad.collate([Row("Where?", o, media)])) for o in ("left", "middle", "right")]
        )
    torch.testing.assert_close(scores[0], singles, atol=1e-5, rtol=0)


# ----- save / reload, generation ---------------------------------------------------------------------------------
def test_save_reload_identical_logits(ad, tmp_path):
    ad.model.save_pretrained(tmp_path)
    ad.processor.save_pretrained(tmp_path)
    again = load_model_io(str(tmp_path), dtype="float32")
    assert type(again) is type(ad)
    batch = ad.collate(_cavpref_rows())
    with torch.no_grad():
        a = ad.forward_logits(ad.model, batch)
        b = again.forward_logits(again.model, again.collate(_cavpref_rows()))
    assert torch.equal(a, b)


def test_generate_returns_text(ad):
    rows = [
        Row("What is playing?", media=demo_media(0)),
        Row("Is the audio missing?", media=demo_media(1, audio=False)),
        Row("yes or no?"),
    ]
    out = ad.generate(ad.model, rows, max_new_tokens=4)
    assert len(out) == 3 and all(isinstance(t, str) for t in out)
    assert ad.generate(ad.model, rows, max_new_tokens=4) == out  # greedy is deterministic
    assert (
        ad.generate(ad.model, rows[2:], max_new_tokens=4) == out[2:]
    )  # left padding does not change the answer
    new = ad.generate_ids(ad.model, ad.collate_prompts(rows[2:]), max_new_tokens=4, do_sample=False)
    assert 1 <= len(new[0]) <= 4


# ----- errors ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "case",
    [
        "empty_response",
        "float_frames",
        "frames_ndim",
        "audio_float64",
        "audio_nan",
        "not_media",
        "placeholder_in_prompt",
        "too_long",
        "key_mismatch",
        "processor_fails",
    ],
)
def test_bad_rows_raise_adapter_error_naming_the_row(ad, kind, case):
    good = demo_media(0)
    media, prompt, response = good, "Where?", "left"
    first = Row("fine", "yes", None, None, "ok-row")
    if case == "empty_response":
        response = "  "
    elif case == "float_frames":
        media = DecodedMedia(good.frames.astype(np.float32), good.frame_times, good.audio, 16000, 2.0)
    elif case == "frames_ndim":
        media = DecodedMedia(good.frames[0], good.frame_times, good.audio, 16000, 2.0)
    elif case == "audio_float64":
        media = DecodedMedia(good.frames, good.frame_times, good.audio.astype(np.float64), 16000, 2.0)
    elif case == "audio_nan":
        media = DecodedMedia(good.frames, good.frame_times, np.full(100, np.nan, np.float32), 16000, 2.0)
    elif case == "not_media":
        media = {"frames": good.frames}
    elif case == "placeholder_in_prompt":
        prompt = "Look: <|VIDEO|>"
    elif case == "too_long":
        ad = _same_model_io(
            ad, max_length=ad.collate([first])["input_ids"].shape[1]
        )  # the text-only row fits
    elif case == "key_mismatch":  # the same media_key must mean the same media
        first = Row("fine", "yes", demo_media(0, audio=False), "k", "ok-row")
        media = demo_media(0)
    elif (
        case == "processor_fails"
    ):  # Qwen's processor refuses aspect ratios > 200; zero-height frames never pass
        media = DecodedMedia(
            np.zeros((2, 1, 400, 3), np.uint8) if kind == "qwen" else np.zeros((2, 0, 8, 3), np.uint8),
            None,
            None,
            16000,
            1.0,
        )
    rows = [first, Row(prompt, response, media, "k" if case == "key_mismatch" else None, "bad-row")]
    with pytest.raises(ModelIOError, match=r"row 1 \(row_id='bad-row'\)"):
        ad.collate(rows)


# ----- missing modality: zero_dummy ------------------------------------------------------------------------------
@pytest.mark.parametrize("present", ["none", "video"])
def test_zero_dummy_runs_encoders_and_contributes_exactly_zero(ad, present):
    """zero_dummy: each encoder runs once per forward even when no row has its stream (on a dummy input),
    the output enters the graph multiplied by zero: log-probs and language-model gradients are bit-identical
    to "drop" (same prompt layout: no placeholders for the missing stream), encoder gradients exact zeros."""
    media = demo_media(8, audio=False) if present == "video" else None
    rows = [
        Row("Is the audio missing?", "The audio is missing.", media, None, "a"),
        Row("Q", "no", None, None, "b"),
    ]
    out = {}
    for policy in ("drop", "zero_dummy"):
        adp = _same_model_io(ad, missing_modality=policy)
        batch = adp.collate(rows)
        ad.model.zero_grad(set_to_none=True)
        (vcalls, h1), (acalls, h2) = (_count_calls(m) for m in _encoders(ad))
        lp = adp.logps(ad.model, batch)
        h1.remove(), h2.remove()
        lp.sum().backward()
        out[policy] = (
            batch["input_ids"],
            lp.detach(),
            {n: p.grad for n, p in ad.model.named_parameters()},
            len(vcalls),
            len(acalls),
        )
    ids_d, lp_d, g_d, v_d, a_d = out["drop"]
    ids_z, lp_z, g_z, v_z, a_z = out["zero_dummy"]
    ad.model.zero_grad(set_to_none=True)
    assert torch.equal(ids_d, ids_z) and torch.equal(lp_d, lp_z)
    assert (v_d, a_d) == ((1, 0) if present == "video" else (0, 0))
    assert (v_z, a_z) == (1, 1)
    dummied = (ad.audio_modules[0] + ".",) + ((ad.vision_modules[0] + ".",) if present == "none" else ())
    in_graph = 0
    for name, grad in g_z.items():
        if name.startswith(dummied):
            assert g_d[name] is None, name  # drop: the encoder is not in the graph at all
            if grad is not None:  # (parameters the encoder never uses have no gradient either way)
                in_graph += 1
                assert torch.count_nonzero(grad) == 0, name  # zero_dummy: an exact-zero gradient
        elif g_d[name] is not None:
            assert torch.equal(grad, g_d[name]), name
    assert in_graph > 0
