"""TraceAV-Bench: both released formats, prediction parsing, exact-set scoring, the metric tables with
hand-computed values, long-video sampling on a real mp4, and a resumable CLI run against a model served on
loopback plus `eval score` on external predictions."""

import json
import re

import numpy as np
import pytest

from cavpref.apps.cli import main as cavpref_main
from cavpref.eval.benchmarks.traceav import data as traceav
from cavpref.eval.benchmarks.traceav.data import parse_prediction
from cavpref.eval.benchmarks.traceav.metrics import TraceRecord, random_guess, traceav_metrics
from cavpref.eval.common import BenchmarkInputError
from cavpref.eval.longvideo import LongVideoPolicy, audio_windows, decode_long
from cavpref.media.spec import clip
from cavpref.media.write import write_mp4
from tests.helpers.html_report_check import check_run_page
from tests.helpers.judge_server import LoopbackServer, completion


def hop(minute, label="visual"):
    return {
        "event_id": minute,
        "evidence": "e",
        "label": label,
        "reason": "r",
        "timestamp_minute": minute,
        "event_time_range": {"start_minute": minute, "end_minute": minute + 1},
    }


def record(qid, video, correct, qtype="single", minutes=(1, 3)):
    return {
        "question_id": qid,
        "video_id": video,
        "question": f"Question {qid}?",
        "options": {"A": "alpha", "B": "beta", "C": "gamma", "D": "delta"},
        "question_type": qtype,
        "correct_options": correct,
        "answer_text": "x",
        "minute_hop_count": minutes[-1] - minutes[0],
        "hop_length_label": "short",
        "trajectory_with_timestamps": [hop(m) for m in minutes],
        "difficulty": "easy",
    }


def task_file(path, task_type, items):
    path.write_text(
        json.dumps(
            {
                "task_type": task_type,
                "video_count": len({i["video_id"] for i in items}),
                "question_count": len(items),
                "items": items,
            },
            indent=2,
        )
    )
    return path


def hf_row(rec):  # the Hugging Face copy: nested fields as JSON strings
    return {
        **rec,
        **{k: json.dumps(rec[k]) for k in ("options", "correct_options", "trajectory_with_timestamps")},
    }


def test_reader_reads_the_github_and_hf_formats(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    task_file(
        data / "av_entity_tracking.json",
        "av_entity_tracking",
        [record(1, "video1", ["C", "A"], "multiple", (2, 9, 4)), record(2, "video2", ["B"])],
    )
    (data / "video_name_mapping.json").write_text(json.dumps({"video1": {"id": "abc", "source": "youtube"}}))
    items = traceav.read(data)
    assert [i.id for i in items] == ["traceav/av_entity_tracking/1", "traceav/av_entity_tracking/2"]
    first = items[0]
    assert first.answer == "A,C" and first.answer_letters == ("A", "C") and first.category == "AVR"
    assert json.loads(first.media)["path"] == "video1.mp4" and len(first.meta["trajectory"]) == 3
    assert "comma-separated" in traceav.prompt(first) and "letter of the correct option" in traceav.prompt(
        items[1]
    )
    hf = tmp_path / "v_visual_counting.jsonl"
    hf.write_text(json.dumps(hf_row(record(7, "video3", ["D"]))) + "\n")
    (item,) = traceav.read(hf)
    assert item.task == "v_visual_counting" and item.options["D"] == "delta"
    assert item.meta["trajectory"][0]["timestamp_minute"] == 1


@pytest.mark.parametrize(
    "change,field",
    [
        ({"correct_options": ["A", "B"]}, "correct_options"),
        ({"correct_options": ["E"]}, "correct_options"),
        ({"question_type": "open"}, "question_type"),
        (
            {"trajectory_with_timestamps": [{"timestamp_minute": "x"}]},
            "trajectory_with_timestamps[0].timestamp_minute",
        ),
    ],
)
def test_reader_names_the_bad_field(tmp_path, change, field):
    path = task_file(
        tmp_path / "a_speech_context.json",
        "a_speech_context",
        [record(1, "v", ["A"]), {**record(2, "v", ["A"]), **change}],
    )
    with pytest.raises(
        BenchmarkInputError, match=re.escape(f"a_speech_context.json: items[1], field {field!r}")
    ):
        traceav.read(path)


@pytest.mark.parametrize(
    "text,expected,rule",
    [
        ('{"answer": "C, A"}', ("A", "C"), "json"),
        ('```json\n{"answer": ["D"]}\n```', ("D",), "json"),
        ("Answer: B,D", ("B", "D"), "answer line"),
        ("The answer is C.", ("C",), "answer line"),
        ("A, C", ("A", "C"), "bare letters"),
        ("BD", ("B", "D"), "bare letters"),
        ("(B)", ("B",), "bare letters"),
        ("", (), "abstained"),
        ("I cannot tell from the video.", (), "abstained"),
        ("E", (), "abstained"),
    ],
)
def test_parse_prediction(text, expected, rule):
    assert parse_prediction(text, "ABCD") == (expected, rule)


def test_scoring_is_exact_set_match():
    multi = {"task_type": "av_entity_tracking", "gold": ("A", "C"), "n_options": 4, "hops": 3}
    assert TraceRecord(predicted=("A", "C"), **multi).correct
    assert not TraceRecord(predicted=("A",), **multi).correct  # partly right = wrong
    assert not TraceRecord(predicted=("A", "B", "C"), **multi).correct
    empty = TraceRecord(predicted=(), **multi)
    assert empty.abstained and not empty.correct


def rec(task, pred, gold, hops, first=None, dur=None):
    return TraceRecord(task, tuple(pred), tuple(gold), 4, hops, first, dur)


def test_metrics_by_hand():
    recs = [
        rec("av_information_retrieval", "A", "A", 2, 5, 3600),  # correct, first 20%
        rec("av_information_retrieval", "B", "A", 3, 20, 3600),  # wrong, 20-40%
        rec("av_information_retrieval", "", "C", 5, 30, 3600),  # abstained, >=40%
        rec("av_entity_tracking", "AC", "AC", 4, 1, None),  # multi correct, unknown position
        rec("av_entity_tracking", "A", "AC", 6),  # multi partly right -> wrong
        rec("v_spatial_reasoning", "D", "D", 2, 0, 600),  # correct
        rec("mh_visual_to_audio_deception", "B", "B", 3, 10, 600),  # correct, >=40% (600 s of 600 s)
        rec("mh_visual_to_audio_deception", "C", "B", 7, 1, 600),
    ]  # wrong, first 20%
    m = traceav_metrics(recs)
    per = m["per_subtask"]
    assert per["av_information_retrieval"] == pytest.approx(
        {
            "n": 3,
            "acc": 100 / 3,
            "abstained": 1,
            "abbrev": "IR",
            "dimension": "AVR",
            "random_guess": 25.0,
            "random_guess_type_aware": 25.0,
        }
    )
    assert per["av_entity_tracking"]["acc"] == 50.0 and per["av_entity_tracking"]["random_guess"] == 0.0
    assert per["av_entity_tracking"]["random_guess_type_aware"] == pytest.approx(100 / 11)
    assert m["per_dimension"]["AVR"] == pytest.approx(
        {"macro": (100 / 3 + 50) / 2, "micro": 40.0, "n": 5, "n_subtasks": 2}
    )
    assert m["gen_avg"] == pytest.approx(
        {
            "acc": (100 / 3 + 50 + 100) / 3,
            "random_guess": (25 + 0 + 25) / 3,
            "n_subtasks": 3,
            "complete": False,
        }
    )
    assert m["mh_avg"]["acc"] == 50.0 and m["mh_avg"]["n_subtasks"] == 1
    assert m["by_hops"] == {
        "2-4": {"n": 5, "acc": 80.0, "abstained": 0},
        "5+": {"n": 3, "acc": 0.0, "abstained": 1},
    }
    assert m["by_first_hop"]["first 20%"] == {"n": 3, "acc": pytest.approx(200 / 3), "abstained": 0}
    assert m["by_first_hop"][">=40%"] == {"n": 2, "acc": 50.0, "abstained": 1}
    assert m["by_first_hop"]["20-40%"]["n"] == 1 and m["by_first_hop"]["unknown"]["n"] == 2
    assert m["by_question_type"]["multiple"] == {"n": 2, "acc": 50.0, "abstained": 0}
    assert m["overall"] == {"n": 8, "acc": 50.0, "abstained": 1}


def test_all_abstained_and_the_papers_random_baseline():
    m = traceav_metrics([rec("a_background_music", "", "A", 3), rec("a_background_music", "", "AB", 3)])
    assert m["overall"] == {"n": 2, "acc": 0.0, "abstained": 2} and m["per_dimension"]["AR"]["macro"] == 0.0
    # Information Retrieval in the paper: 140 questions, 9 multi-choice -> random guess 23.39 %
    ir = [rec("av_information_retrieval", "", "A", 3)] * 131 + [
        rec("av_information_retrieval", "", "AB", 3)
    ] * 9
    assert round(traceav_metrics(ir)["per_subtask"]["av_information_retrieval"]["random_guess"], 2) == 23.39
    assert random_guess(4, 2, "type_aware") == pytest.approx(1 / 11)
    with pytest.raises(ValueError):
        random_guess(4, 1, "oracle")


@pytest.fixture(scope="module")
def long_video(tmp_path_factory):
    """30 s at 2 fps: frame value = 8 * second; audio amplitude = t / 30 (a square wave)."""
    root = tmp_path_factory.mktemp("videos")
    duration, sr = 30, 8000
    frames = np.stack([np.full((32, 32, 3), 8 * (k // 2), np.uint8) for k in range(2 * duration)])
    t = np.arange(duration * sr) / sr
    audio = (0.8 * (t / duration) * np.sign(np.sin(2 * np.pi * 50 * t))).astype(np.float32)
    write_mp4(root / "video1.mp4", frames, 2.0, audio, sr)
    write_mp4(root / "video2.mp4", frames[:8], 2.0, audio[: 4 * sr], sr)
    return root


def test_long_video_sampling_seeks_frames_and_chunks_audio(long_video):
    assert audio_windows(30.0, 6.0, 3) == [(4.0, 6.0), (14.0, 16.0), (24.0, 26.0)]
    assert audio_windows(4.0, 6.0, 3) == [(0.0, 4.0)]
    policy = LongVideoPolicy(num_frames=3, audio_window_s=6.0, audio_segments=3)
    media, sampled = decode_long(clip("video1.mp4"), long_video, policy, sample_rate=8000)
    assert sampled["frame_times"] == [5.0, 15.0, 25.0] and sampled["audio_windows"] == [
        [4.0, 6.0],
        [14.0, 16.0],
        [24.0, 26.0],
    ]
    assert media.frames.shape == (3, 32, 32, 3) and media.duration == pytest.approx(30.0, abs=0.1)
    assert np.abs(media.frames[:, 8, 8, 0].astype(int) - [40, 120, 200]).max() <= 4
    assert media.audio.shape == (6 * 8000,)
    for k, centre in enumerate((5.0, 15.0, 25.0)):  # each chunk's loudness says where it was taken
        chunk = media.audio[k * 16000 + 4000 : (k + 1) * 16000 - 4000]
        assert np.abs(chunk).mean() / 0.8 * 30 == pytest.approx(centre, abs=0.6)
    # an fps cap instead of N frames: 30 s at 0.1 fps = 3 frames, capped at 2 (slot centres 7.5 s, 22.5 s)
    capped = LongVideoPolicy(num_frames=None, fps=0.1, max_frames=2, audio_window_s=6.0, audio_segments=3)
    media, sampled = decode_long(clip("video1.mp4"), long_video, capped, sample_rate=8000)
    assert sampled["frame_times"] == [7.5, 22.5] and media.frames.shape[0] == 2
    assert np.abs(media.frames[:, 8, 8, 0].astype(int) - [56, 176]).max() <= 4
    short, info = decode_long(clip("video2.mp4"), long_video, policy, sample_rate=8000)
    assert info["audio_windows"] == [[0.0, pytest.approx(4.0, abs=0.1)]]
    assert short.audio.shape[0] == pytest.approx(32000, abs=800)


def test_cli_run_resume_and_external_scoring(tmp_path, long_video):
    data = tmp_path / "data"
    data.mkdir()
    task_file(
        data / "av_information_retrieval.json",
        "av_information_retrieval",
        [
            record(1, "video1", ["A"], minutes=(2, 9)),
            record(2, "video1", ["B"], minutes=(14, 20)),
            record(3, "video2", ["C"], minutes=(0, 1)),
        ],
    )
    task_file(
        data / "mh_temporal_splicing_fallacy.json",
        "mh_temporal_splicing_fallacy",
        [record(1, "video1", ["A", "D"], "multiple", (3, 6, 9, 12, 15))],
    )
    answers = {"Question 1?": "Answer: A", "Question 2?": '{"answer": "C"}', "Question 3?": "I am not sure."}

    def reply(body, n):
        parts = body["messages"][0]["content"]
        text = next(p["text"] for p in parts if p["type"] == "text")
        kinds = sorted(p["type"] for p in parts)
        assert kinds == ["input_audio", "text", "video_url"], kinds
        multi = "comma-separated" in text
        return 200, {}, completion("A, D" if multi else answers[text.split("\n")[0]]), 0

    server = LoopbackServer(reply)
    run, durations = tmp_path / "run", tmp_path / "durations.json"
    durations.write_text(json.dumps({"video1": 3600, "video2": 600}))  # the full-length videos' durations
    argv = [
        "eval",
        "traceav",
        "--model",
        server.url,
        "--endpoint_model",
        "omni",
        "--data",
        str(data),
        "--media_root",
        str(long_video),
        "--output",
        str(run),
        "--long_num_frames",
        "4",
        "--audio_window_s",
        "4",
        "--audio_segments",
        "2",
        "--sample_rate",
        "8000",
        "--durations",
        str(durations),
    ]
    try:
        assert cavpref_main(argv) == 0
        calls = len(server.requests)
        assert calls == 4
        assert cavpref_main(argv) == 0 and len(server.requests) == calls  # resumed: nothing recomputed
    finally:
        server.close()
    results = json.loads((run / "results.json").read_text())
    m = results["metrics"]
    assert results["benchmark"] == "traceav" and results["counts"]["evaluated"] == 4
    sampling = results["evaluation"]["sampling"]
    assert (
        sampling["num_frames"] == 4 and sampling["audio_segments"] == 2 and sampling["audio_window_s"] == 4.0
    )
    assert m["per_subtask"]["av_information_retrieval"]["acc"] == pytest.approx(100 / 3)
    assert m["per_subtask"]["av_information_retrieval"]["abstained"] == 1
    assert m["per_subtask"]["mh_temporal_splicing_fallacy"]["acc"] == 100.0 and m["mh_avg"]["acc"] == 100.0
    assert m["by_hops"]["5+"]["n"] == 1 and m["by_first_hop"]["first 20%"]["n"] == 3
    assert m["by_first_hop"]["20-40%"] == {"n": 1, "acc": 0.0, "abstained": 0}
    line = json.loads((run / "records.rank0.jsonl").read_text().splitlines()[0])
    assert len(line["sampled"]["frame_times"]) == 4 and line["sampled"]["audio_windows"]
    report = (run / "report.md").read_text()
    assert "Multimodal hallucination (layout of Table 3)" in report
    assert (run / "plots" / "traceav_subtasks.png").is_file()
    rows = check_run_page(run)  # report.html: long-video records found by their keys, with what was sampled
    assert all("sampled" in {f[0] for f in p["fields"]} for r in rows.values() for p in r["passes"])
    assert any(r["facets"].get("response") == "abstained" for r in rows.values())
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in [
                {"task_type": "av_information_retrieval", "question_id": 1, "response": "A"},
                {"id": "traceav/av_information_retrieval/2", "prediction": ["B"]},
                {"id": "traceav/mh_temporal_splicing_fallacy/1", "prediction": "A"},  # partly right
                {"id": "traceav/nope/9", "response": "A"},
            ]
        )
    )
    out = tmp_path / "scored"
    assert (
        cavpref_main(
            [
                "eval",
                "score",
                "--benchmark",
                "traceav",
                "--predictions",
                str(preds),
                "--data",
                str(data),
                "--media_root",
                str(long_video),
                "--output",
                str(out),
            ]
        )
        == 0
    )
    scored = json.loads((out / "results.json").read_text())
    assert scored["counts"]["skipped"] == 1 and scored["counts"]["skip_reasons"] == {"no prediction": 1}
    assert scored["metrics"]["per_subtask"]["av_information_retrieval"]["acc"] == 100.0
    assert scored["metrics"]["mh_avg"]["acc"] == 0.0
    assert scored["predictions"]["unused"] == {
        "not among the selected items": 1
    }  # one wording, every benchmark
    assert set(scored["metrics"]["by_first_hop"]) == {
        ">=40%"
    }  # no --durations: the 30 s test video was probed
    assert cavpref_main(["eval", "report", str(out)]) == 0


def test_local_tiny_qwen_omni_gets_sampled_frames_and_its_own_audio_window(tmp_path):
    """The real adapter path: a tiny Qwen2.5-Omni thinker built from a config; the audio window comes
    from its processor's feature extractor (30 s), so a 40 s clip is heard as 3 chunks of 10 s."""
    from cavpref.models.tiny import build_tiny_qwen_omni

    model = build_tiny_qwen_omni(tmp_path / "tiny")
    (tmp_path / "videos").mkdir()
    frames = np.stack([np.full((56, 56, 3), 3 * k, np.uint8) for k in range(40)])
    t = np.arange(40 * 16000) / 16000
    write_mp4(
        tmp_path / "videos" / "video1.mp4",
        frames,
        1.0,
        (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32),
    )
    data = task_file(tmp_path / "v_visual_counting.json", "v_visual_counting", [record(1, "video1", ["A"])])
    run = tmp_path / "run"
    assert (
        cavpref_main(
            [
                "eval",
                "traceav",
                "--model",
                str(model),
                "--data",
                str(data),
                "--media_root",
                str(tmp_path / "videos"),
                "--output",
                str(run),
                "--long_num_frames",
                "4",
                "--frame_height",
                "56",
                "--frame_width",
                "56",
                "--audio_segments",
                "3",
                "--max_new_tokens",
                "4",
            ]
        )
        == 0
    )
    results = json.loads((run / "results.json").read_text())
    assert results["evaluation"]["sampling"]["audio_window_s"] == 30.0 and results["counts"]["evaluated"] == 1
    sampled = json.loads((run / "records.rank0.jsonl").read_text().splitlines()[0])["sampled"]
    assert sampled["frame_times"] == [5.0, 15.0, 25.0, 35.0]
    assert [b - a for a, b in sampled["audio_windows"]] == pytest.approx([10.0, 10.0, 10.0])


def test_benchmark_item_contract_for_other_benchmarks():
    """Items of other benchmarks keep their own task names (``meta["benchmark"]``); AVTrustBench items are
    still checked against TASKS, and every letter of a multi-choice answer must be an option."""
    from cavpref.data import BenchmarkItem

    common = {
        "id": "x",
        "source": "s",
        "category": "c",
        "question": "q?",
        "options": {"A": "a", "B": "b", "C": "c"},
        "setting": "base",
        "template_id": 0,
        "media": clip("v.mp4"),
    }
    item = BenchmarkItem(task="v_visual_counting", answer="A,C", meta={"benchmark": "traceav"}, **common)
    assert item.benchmark == "traceav" and item.answer_letters == ("A", "C")
    assert BenchmarkItem.from_row(item.to_row()).answer_letters == ("A", "C")
    with pytest.raises(ValueError, match="unknown task"):
        BenchmarkItem(task="v_visual_counting", answer="A", **common)
    with pytest.raises(ValueError, match="not among options"):
        BenchmarkItem(task="v_visual_counting", answer="A,D", meta={"benchmark": "traceav"}, **common)
    assert BenchmarkItem(task="MCIT", answer=None, **common).answer_letters == ()
