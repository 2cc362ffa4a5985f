"""TraceAV-Bench's ablations and analyses (issue 45): evidence-hop masking (Mask-1 / Mask-All) as black frames
and silence that really reach the model, the visual-only / audio-only / text-only inputs, the error-answer
entropy and the per-video correlation with hand-computed numbers, and the rank table of `eval compare`."""

import base64
import io
import json
import math

import numpy as np
import pytest

from cavpref.apps.cli import main as cavpref_main
from cavpref.eval.benchmarks.traceav import data as traceav
from cavpref.eval.benchmarks.traceav.metrics import TraceRecord, error_entropy, pearson, video_correlation
from cavpref.eval.longvideo import LongVideoPolicy, decode_long
from cavpref.media.spec import clip, drop_video, from_json, mask, mute
from cavpref.media.write import write_mp4
from tests.helpers.judge_server import LoopbackServer, completion

SR = 8000


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    """30 s at 2 fps, every frame grey 200; a 0.5-amplitude square wave throughout."""
    root = tmp_path_factory.mktemp("traceav_videos")
    t = np.arange(30 * SR) / SR
    audio = (0.5 * np.sign(np.sin(2 * np.pi * 50 * t))).astype(np.float32)
    write_mp4(root / "video1.mp4", np.full((60, 32, 32, 3), 200, np.uint8), 2.0, audio, SR)
    return root


def hop(start, end=None, minute=None):
    h = {"event_id": 1, "evidence": "e", "label": "visual", "reason": "r", "timestamp_minute": start}
    if end is not None:
        h["event_time_range"] = {"start_minute": start, "end_minute": end}
    if minute is not None:
        h["timestamp_minute"] = minute
    return h


def record(qid, correct, hops, task="av_information_retrieval"):
    return {
        "question_id": qid,
        "video_id": "video1",
        "question": f"Question {qid}?",
        "options": {"A": "alpha", "B": "beta", "C": "gamma", "D": "delta"},
        "question_type": "single",
        "correct_options": [correct],
        "trajectory_with_timestamps": hops,
    }


def test_hop_spans_from_ranges_and_minute_marks():
    assert traceav.hop_span(hop(2, 9)) == (120.0, 540.0)
    assert traceav.hop_span(hop(4, 4)) == (240.0, 300.0)  # no range: the one-minute interval
    assert traceav.hop_span({"timestamp_minute": 7}) == (420.0, 480.0)


def test_mask_one_draws_one_hop_per_question_reproducibly(tmp_path):
    path = tmp_path / "av_information_retrieval.json"
    path.write_text(json.dumps([record(q, "A", [hop(1, 2), hop(5, 6), hop(9, 10)]) for q in range(40)]))
    items = traceav.read(path)
    drawn = [traceav.hop_spans(i, "one", seed=0) for i in items]
    assert all(len(s) == 1 for s in drawn)
    assert drawn == [traceav.hop_spans(i, "one", seed=0) for i in reversed(items)][::-1]  # order-free
    assert {s[0] for s in drawn} == {(60.0, 120.0), (300.0, 360.0), (540.0, 600.0)}  # every hop gets drawn
    assert drawn != [traceav.hop_spans(i, "one", seed=1) for i in items]  # the seed matters
    traceav.mask_hops(items[:1], "all")
    spec = from_json(items[0].media)
    assert spec.spans == ((60.0, 120.0), (300.0, 360.0), (540.0, 600.0)) and spec.part == clip("video1.mp4")


def test_masked_hops_are_black_and_silent_in_the_sampled_input(video):
    """Long-video sampling of a masked clip: the sampled frames inside the span are black and the audio
    chunks are silent exactly where they overlap it; everything else is the clip."""
    policy = LongVideoPolicy(num_frames=6, audio_window_s=6.0, audio_segments=3)  # chunks 4-6, 14-16, 24-26 s
    media, sampled = decode_long(mask(clip("video1.mp4"), [(5.0, 15.0)]), video, policy, sample_rate=SR)
    assert sampled["frame_times"] == [2.5, 7.5, 12.5, 17.5, 22.5, 27.5]
    level = media.frames.reshape(6, -1).mean(1)
    assert level[[1, 2]].max() == 0 and level[[0, 3, 4, 5]].min() > 190  # 7.5 s and 12.5 s are inside
    a = np.abs(media.audio).reshape(3, 2, SR).mean(-1)  # (chunk, second): chunk 0 = 4-6 s, chunk 1 = 14-16 s
    assert a[0, 1] == 0 and a[1, 0] == 0  # 5-6 s and 14-15 s: silent
    assert a[0, 0] > 0.4 and a[1, 1] > 0.4 and a[2].min() > 0.4
    assert sampled["masked"] == {"video": [[5.0, 15.0]], "audio": [[5.0, 15.0]]}
    muted, _ = decode_long(mute(clip("video1.mp4")), video, policy, sample_rate=SR)
    blind, _ = decode_long(drop_video(mask(clip("video1.mp4"), [(0, 1)])), video, policy, sample_rate=SR)
    assert (
        muted.audio is None and muted.frames is not None and blind.frames is None and blind.audio is not None
    )


# ----------------------------------------------------------------------------- the appendix analyses


def trace(task, pred, gold, video="v"):
    return TraceRecord(task, tuple(pred), tuple(gold), 4, 2, video_id=video)


def test_error_entropy_by_hand():
    recs = [
        trace("av_information_retrieval", "A", "A"),  # right: not an error
        trace("av_information_retrieval", "B", "A"),
        trace("av_information_retrieval", "B", "A"),
        trace("av_entity_tracking", "AC", "B"),
        trace("av_entity_tracking", "", "B"),  # abstained: the empty pattern
    ]
    # errors: (B) x2, (A,C), () -> p = 1/2, 1/4, 1/4 -> H = 1.5 bits
    assert error_entropy(recs) == {"bits": pytest.approx(1.5), "errors": 4, "patterns": 3}
    assert error_entropy(recs[:1]) == {"bits": None, "errors": 0, "patterns": 0}


def test_video_correlation_by_hand():
    gen, mh = "av_information_retrieval", "mh_visual_to_audio_deception"
    recs = [
        # v1: general 1/2 right (50), MH 1/1 (100); v2: general 2/2 (100), MH 0/1 (0); v3: 0/1 (0), 1/2 (50)
        trace(gen, "A", "A", "v1"), trace(gen, "B", "A", "v1"), trace(mh, "C", "C", "v1"),
        trace(gen, "A", "A", "v2"), trace(gen, "D", "D", "v2"), trace(mh, "A", "C", "v2"),
        trace(gen, "B", "A", "v3"), trace(mh, "C", "C", "v3"), trace(mh, "B", "C", "v3"),
        trace(gen, "A", "A", "v4"),  # general only: left out
    ]  # fmt: skip
    got = video_correlation(recs)
    mh_acc, gen_acc = [100.0, 0.0, 50.0], [50.0, 100.0, 0.0]
    assert got["n_videos"] == 3 and got["videos"]["v1"] == [100.0, 50.0]
    # by hand: means 50 / 50; deviations (50, -50, 0) and (0, 50, -50): r = -2500 / (sqrt(5000) sqrt(5000))
    assert got["r"] == pytest.approx(-0.5) and pearson(mh_acc, gen_acc) == pytest.approx(-0.5)
    assert pearson([1.0, 1.0], [0.0, 2.0]) is None and pearson([1.0], [2.0]) is None
    assert math.isclose(pearson([1.0, 2.0, 3.0], [2.0, 4.0, 6.0]), 1.0)


# ----------------------------------------------------------------------------- end to end: what the model gets


def _frames_of(url):
    import av

    with av.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


def test_ablated_runs_reach_the_model_and_compare_ranks_them(tmp_path, video):
    """Full, Mask-All, visual only, audio only and text only runs against a served model on loopback: what
    the server receives lacks exactly the ablated stream (decoded: black frames over the hops), each
    report names its input, and `eval compare` ranks the runs by MH Avg then Gen. Avg with differences
    from the first."""
    data = tmp_path / "data"
    data.mkdir()
    hops = [hop(0.1, 0.25)]  # 6-15 s of the 30-s video
    (data / "av_information_retrieval.json").write_text(
        json.dumps([record(1, "A", hops), record(2, "B", hops)])
    )
    (data / "mh_visual_to_audio_deception.json").write_text(
        json.dumps([record(3, "C", hops), record(4, "D", hops)])
    )
    seen = []

    def reply(body, n):
        parts = {p["type"]: p for p in body["messages"][0]["content"]}
        text = parts["text"]["text"]
        frames = _frames_of(parts["video_url"]["video_url"]["url"]) if "video_url" in parts else []
        seen.append((text.split("?")[0], sorted(parts), [int(f.mean()) for f in frames]))
        gold = {"Question 1": "A", "Question 2": "B", "Question 3": "C", "Question 4": "D"}[
            text.split("?")[0]
        ]
        sees = bool(frames) and min(int(f.mean()) for f in frames) > 100  # nothing blacked out
        hears = "input_audio" in parts
        general = text.startswith(("Question 1", "Question 2"))
        ok = (sees and hears) or (general and sees) or (not general and hears)
        return 200, {}, completion(gold if ok else "A" if gold != "A" else "B"), 0

    server = LoopbackServer(reply)
    base = ["eval", "traceav", "--model", server.url, "--endpoint_model", "omni", "--data", str(data)]
    base += [
        "--media_root",
        str(video),
        "--long_num_frames",
        "6",
        "--audio_window_s",
        "6",
        "--audio_segments",
        "3",
    ]
    runs = {
        "full": [],
        "mask_all": ["--hop_mask", "all"],
        "visual": ["--drop_stream", "audio"],
        "audio": ["--drop_stream", "video"],
        "text": ["--text_only", "true"],
    }
    try:
        for name, extra in runs.items():
            before = len(seen)
            assert cavpref_main([*base, "--output", str(tmp_path / name), "--label", name, *extra]) == 0
            got = seen[before:]
            kinds = {tuple(k) for _, k, _ in got}
            if name == "full":
                assert kinds == {("input_audio", "text", "video_url")}
                assert all(min(levels) > 190 for _, _, levels in got)
            if name == "mask_all":  # frames at 2.5 ... 27.5 s; 7.5 and 12.5 s are inside 6-15 s
                assert all(
                    levels[1] < 5 and levels[2] < 5 and min(levels[:1] + levels[3:]) > 190
                    for _, _, levels in got
                )
            if name == "visual":
                assert kinds == {("text", "video_url")}
            if name == "audio":
                assert kinds == {("input_audio", "text")}
            if name == "text":
                assert kinds == {("text",)}
    finally:
        server.close()
    results = {n: json.loads((tmp_path / n / "results.json").read_text()) for n in runs}
    assert results["mask_all"]["evaluation"]["input"]["mask"] == "Mask-All (seed 0)"
    assert results["text"]["evaluation"]["input"]["streams"] == "text only (no video, no audio)"
    acc = {n: (r["metrics"]["gen_avg"]["acc"], r["metrics"]["mh_avg"]["acc"]) for n, r in results.items()}
    assert acc == {
        "full": (100.0, 100.0),
        "mask_all": (0.0, 100.0),  # the hops are blacked out; the MH questions still hear the audio
        "visual": (100.0, 0.0),
        "audio": (0.0, 100.0),
        "text": (0.0, 0.0),
    }
    report = (tmp_path / "mask_all" / "report.md").read_text()
    assert "- input: **video + audio, Mask-All (seed 0)**" in report
    assert "Error-answer entropy" in report and "across videos" in report
    entropy = results["text"]["metrics"]["error_entropy"]["general"]
    assert entropy == {"bits": pytest.approx(1.0), "errors": 2, "patterns": 2}  # answered B and A
    table = tmp_path / "t.md"
    plot = tmp_path / "leaderboard.png"
    argv = [
        "eval",
        "compare",
        *(str(tmp_path / n) for n in runs),
        "--output",
        str(table),
        "--plot",
        str(plot),
    ]
    assert cavpref_main(argv) == 0
    md = table.read_text()
    assert md.splitlines()[0].startswith("| Run | IR | V2A | Gen. Avg | MH Avg |")
    assert md.splitlines()[0].endswith("| Rank (MH Avg → Gen. Avg) |")
    rows = {line.split("|")[1].strip(): line for line in md.splitlines()[2:7]}
    assert "| 0.00 (-100.00) | 100.00 (+0.00) |" in rows["mask_all"] and rows["mask_all"].endswith(
        "| 1 → 3 |"
    )
    assert rows["full"].endswith("| 1 → 1 |") and rows["text"].endswith("| 4 → 3 |")
    assert "mask_all: generate / paper / video + audio, Mask-All (seed 0)" in md
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
