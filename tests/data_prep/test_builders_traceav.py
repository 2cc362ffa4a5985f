"""`cavpref build traceav`: the pure pieces (collection decisions, segmentation, trajectory filter, minute
refinement, QA rules) with hand-made inputs; the whole build on long videos made of the synthetic world's
clips against loopback role servers, read back by `cavpref eval traceav --protocol official`; a failing role
counted and asked again; and a build killed with SIGKILL mid-way that resumes without repeating a finished
call (requests counted at the server)."""

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from cavpref.apps.cli import main as cavpref_main
from cavpref.data_prep.builders.traceav import catalog, collect, qa
from cavpref.data_prep.builders.traceav import questions as qs
from cavpref.data_prep.builders.traceav.config import TraceConfig
from cavpref.data_prep.builders.traceav.tasks import BY_TYPE, TASKS
from cavpref.data_prep.synthetic import WorldConfig, generate_world
from cavpref.data_prep.synthetic.long import write_long_videos
from cavpref.eval.benchmarks.traceav import data as trace_eval
from cavpref.media.write import write_mp4
from tests.helpers.builder_servers import RoleServer, trace_answers
from tests.helpers.html_report_check import check_run_page

CFG = TraceConfig(min_duration_s=12, min_span=2, min_hops=2, short_hop_max=3, medium_hop_max=6)
TASK_ARGS = [
    "av_information_retrieval",
    "av_temporal_sequencing",
    "av_entity_tracking",
    "v_visual_counting",
    "a_background_music",
]


def test_sub_tasks_are_the_readers():
    assert {t.task_type: t.dimension for t in TASKS} == {k: d for k, (d, _) in trace_eval.SUBTASKS.items()}


def test_collection_dedups_then_filters_in_path_order():
    ok = {
        "sha256": "s1",
        "duration": 30.0,
        "has_video": True,
        "has_audio": True,
        "diffs": [1, 40, 2, 40, 50],
        "signature": "f1",
        "volume_db": -20.0,
    }
    measured = {
        "a.mp4": ok,
        "b.mp4": {**ok},  # same bytes as a
        "c.mp4": {**ok, "sha256": "s2", "duration": 30.04},  # re-encoded a: same duration (0.1 s) and frames
        "d.mp4": {**ok, "sha256": "s3", "signature": "f2", "diffs": [1, 40, 2, 3]},  # 1 scene change
        "e.mp4": {**ok, "sha256": "s4", "signature": "f3", "volume_db": -51.0},
        "f.mp4": {**ok, "sha256": "s5", "signature": "f4", "has_audio": False, "volume_db": None},
        "g.mp4": {**ok, "sha256": "s6", "signature": "f5", "duration": 11.0},
    }
    kept, dropped = collect.select(measured, CFG)
    assert kept == ["a.mp4"]
    assert dropped == {
        "b.mp4": "duplicate: same bytes as a.mp4",
        "c.mp4": "duplicate: same duration and frames as a.mp4",
        "d.mp4": "fewer than 3 scene transitions",
        "e.mp4": "mean volume below -50 dB",
        "f.mp4": "no audio track",
        "g.mp4": "shorter than 12 s",
    }
    assert collect.reasons(dropped)["duplicate: same bytes"] == 1


def test_segmentation_follows_the_three_actions():
    rows = [
        {"minute": m, "caption": f"c{m}", "entities": {f"E{m}": {"description": "d", "attribute": "visual"}}}
        for m in range(1, 6)
    ]
    events, current = [], catalog.new_event(rows[0], "c1")
    for t, action in zip(range(1, 5), ["CONTINUE", "OVERLAP_TRANSITION", "HARD_CUT", "CONTINUE"]):
        current = catalog.apply_action(
            events, current, rows[t], rows[t - 1]["minute"], {"action": action, "summary": f"s{t + 1}"}
        )
    out = catalog.close(events, current, 5)
    # the overlapping minute 3 closes event 1 and opens event 2; the cut at 4 ends event 2 at 3
    assert [(e["event_id"], e["start_minute"], e["end_minute"]) for e in out] == [
        (1, 1, 3),
        (2, 3, 3),
        (3, 4, 5),
    ]
    assert out[0]["raw_segments"] == ["c1", "c2", "c3"] and sorted(out[0]["involved_entities"]) == [
        "E1",
        "E2",
        "E3",
    ]
    assert out[2]["raw_segments"] == ["c4", "c5"] and out[2]["summary"] == "s5"
    with pytest.raises(ValueError, match="action"):
        catalog.parse_segment('{"action": "MAYBE", "updated_summary": "x"}')
    cache = {"Anna": "a woman"}
    present, new = catalog.merge_cache(
        cache, {"present": {"Anna": "a woman in red"}, "new": {"Anna": "dup", "Dog": "a dog"}}
    )
    assert (
        present == {"Anna": "a woman in red"}
        and new == {"Dog": "a dog"}
        and cache == {"Anna": "a woman in red", "Dog": "a dog"}
    )


EVENTS = {
    1: {
        "event_id": 1,
        "start_minute": 1,
        "end_minute": 2,
        "involved_entities": {"P": {}, "X": {}},
        "raw_segments": ["a red car", "a man waves"],
    },
    2: {
        "event_id": 2,
        "start_minute": 3,
        "end_minute": 5,
        "involved_entities": {"X": {}},
        "raw_segments": ["a red car", "a blue boat sails", "a dog barks"],
    },
    3: {
        "event_id": 3,
        "start_minute": 6,
        "end_minute": 8,
        "involved_entities": {"Y": {}},
        "raw_segments": ["rain", "thunder", "sun"],
    },
    4: {
        "event_id": 4,
        "start_minute": 9,
        "end_minute": 9,
        "involved_entities": {"P": {}, "Y": {}},
        "raw_segments": ["the end"],
    },
}


@pytest.mark.parametrize(
    "ids,problems",
    [
        ([1, 4], []),
        (
            [1, 2, 3],
            ["consecutive events share no entity"],
        ),  # 1-2 share X, 2-3 nothing (the released check passes it)
        ([2, 3], ["span shorter than min_span", "consecutive events share no entity"]),
        ([1, 1, 4], ["an event repeats"]),
        ([1, 9], ["an unknown event"]),
        ([1], ["too few hops", "span shorter than min_span"]),
        ("1,4", ["event_ids is not a list of integers"]),
    ],
)
def test_trajectory_filter(ids, problems):
    assert qs.trajectory_problems({"event_ids": ids}, EVENTS, CFG) == problems


def test_minutes_are_refined_counted_and_options_permuted():
    raw = [
        {
            "event_id": 2,
            "evidence": "the blue boat",
            "label": "visual",
            "timestamp_minute": 12,
        },  # outside 3-5
        {"event_id": 3, "evidence": "thunder", "label": "audio", "timestamp_minute": 7},
        {"event_id": 4, "evidence": "x", "label": "audio", "timestamp_minute": 9},
        {"event_id": 99, "evidence": "x"},
    ]
    hops, unknown, remapped = qs.refine_hops(raw, EVENTS)
    assert [h["timestamp_minute"] for h in hops] == [4, 7, 9] and unknown == 1 and remapped == 1
    assert hops[0]["event_time_range"] == {"start_minute": 3, "end_minute": 5}
    question = {
        "question": "Q?",
        "options": {"A": "w", "B": "x", "C": "y", "D": "z"},
        "question_type": "multiple",
        "correct_options": ["b", "D"],
        "difficulty": "Hard",
    }
    item = qs.released_item(question, hops, CFG, random.Random(4))
    assert item["minute_hop_count"] == 3 + 2 and item["hop_length_label"] == "medium"  # |7-4| + |9-7|
    assert (
        sorted(item["options"][c] for c in item["correct_options"]) == ["x", "z"]
        and item["difficulty"] == "hard"
    )
    assert item["answer_text"] == " | ".join(item["options"][c] for c in item["correct_options"])
    assert qs.hop_length_label(3, CFG) == "short" and qs.hop_length_label(7, CFG) == "long"


def _item(**change):
    hops = [
        {"event_id": 1, "label": "visual", "timestamp_minute": 1},
        {"event_id": 2, "label": "audio", "timestamp_minute": 3},
    ]
    base = {
        "question": "Q?",
        "options": dict(zip("ABCD", "wxyz")),
        "question_type": "single",
        "correct_options": ["A"],
        "trajectory_with_timestamps": hops,
        "difficulty": "easy",
    }
    return {**base, **change}


@pytest.mark.parametrize(
    "task,change,unknown,reason",
    [
        ("av_information_retrieval", {}, 0, None),
        ("av_information_retrieval", {"options": dict(zip("ABCD", "wwyz"))}, 0, "not four distinct options"),
        (
            "av_information_retrieval",
            {"question_type": "multiple", "correct_options": ["A", "B"]},
            0,
            "a single-choice sub-task with several answers",
        ),
        (
            "av_temporal_sequencing",
            {"question_type": "single", "correct_options": ["A", "B"]},
            0,
            "question_type does not match the answers",
        ),
        ("av_information_retrieval", {}, 1, "a hop cites an unknown event"),
        ("v_visual_counting", {}, 0, "a visual-only task with a non-visual hop"),
        ("a_speech_context", {}, 0, "an audio-only task with a non-audio hop"),
        ("mh_audio_to_visual_deception", {}, 0, None),  # no label rule for hallucination tasks
        ("av_information_retrieval", {"difficulty": "trivial"}, 0, "difficulty is not easy / medium / hard"),
    ],
)
def test_rule_gate(task, change, unknown, reason):
    assert qa.rule_problem(_item(**change), BY_TYPE[task], unknown, 2) == reason


def test_verdicts_and_blindfold_replies():
    assert (
        qa.verdict_reason({"should_drop": False, "is_real_multihop": False}) is None
    )  # only should_drop drops
    assert (
        qa.verdict_reason({"should_drop": True, "is_real_multihop": True, "answer_leakage": True})
        == "logical: answer leakage"
    )
    assert qa.verdict_reason({"should_drop": True}) == "logical: dropped by the verifier"
    with pytest.raises(ValueError, match="should_drop"):
        qa.parse_verdict('{"should_drop": "yes"}')
    assert qa.parse_blindfold('{"predicted_options": ["c", "A", "Z"]}') == ["A", "C"]


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    """Two 24-s videos of six world clips each (5 cuts), a byte copy of the first, a still video, a quiet
    one and a 4-s one; only the two long ones pass the collection."""
    base = tmp_path_factory.mktemp("traceav")
    generate_world(
        WorldConfig(out=str(base / "world"), seed=5, num_clips=4, audioset_clips=1, duration=4.0, workers=1)
    )
    folder = base / "videos"
    write_long_videos(base / "world", folder, videos=2, scenes=6, seed=1)
    (folder / "long_videos.json").unlink()
    shutil.copy(folder / "long_00.mp4", folder / "zz_copy.mp4")
    t = np.arange(24 * 16000) / 16000
    tone = np.sin(2 * np.pi * 330 * t).astype(np.float32)
    write_mp4(folder / "still.mp4", np.full((24 * 8, 112, 112, 3), 60, np.uint8), 8, 0.2 * tone)
    noise = np.random.default_rng(0).integers(0, 255, (24 * 8, 112, 112, 3), dtype=np.uint8)
    write_mp4(folder / "quiet.mp4", noise, 8, 0.001 * tone)
    write_mp4(folder / "short.mp4", noise[:32], 8, 0.2 * tone[: 4 * 16000])
    return folder


def argv(videos, out, url, *extra):
    roles = [
        x for r in ("visual", "fusion", "generator", "verifier", "blindfold") for x in (f"--{r}_model", r)
    ]
    return [
        "build", "traceav", "--videos", str(videos), "--out", str(out), "--base_url", url, *roles,
        "--min_duration_s", "12", "--segment_s", "4", "--scene_threshold", "8", "--caption_frames", "4",
        "--max_retries", "1", "--tasks", *TASK_ARGS, *extra,
    ]  # fmt: skip


EXPECTED = {  # 2 videos x 5 sub-tasks, one question each; the server plants one fault per sub-task but two
    "generated": 10,
    "kept": 4,
    "rejected": {
        "blindfold: answered without the video": 2,  # v_visual_counting
        "logical: pseudo multi-hop": 2,  # av_entity_tracking
        "rules: an audio-only task with a non-audio hop": 2,  # a_background_music
    },
}


def test_build_then_official_eval_on_a_tiny_model(videos, tmp_path):
    from cavpref.models.tiny import build_tiny_qwen_omni

    server, out = RoleServer(trace_answers()), tmp_path / "out"
    try:
        assert cavpref_main(argv(videos, out, server.url)) == 0
        first = len(server.requests)
        assert cavpref_main(argv(videos, out, server.url)) == 0 and len(server.requests) == first
    finally:
        server.close()
    stats = json.loads((out / "stats.json").read_text())
    assert stats["videos"] == {
        "found": 6,
        "not_mp4": 0,
        "kept": 2,
        "dropped": {
            "duplicate: same bytes": 1,
            "fewer than 3 scene transitions": 1,
            "mean volume below -50 dB": 1,
            "shorter than 12 s": 1,
        },
    }
    assert stats["kept_videos"] == ["long_00", "long_01"]
    q = stats["questions"]
    assert {k: q[k] for k in EXPECTED} == EXPECTED and q["generated"] == q["kept"] + sum(
        q["rejected"].values()
    )
    # per video: 6 segments, cuts at 3 and 5 (overlap) and 7... -> 3 events; 10 proposals, half rejected
    assert stats["events"] == {"long_00": 3, "long_01": 3}
    assert stats["trajectories"] == {"kept": 10, "proposed": 20, "rejected: span shorter than min_span": 10}
    calls = {r: c["replies_in_cache"] for r, c in stats["calls"].items()}
    assert calls == {"visual": 12, "fusion": 12, "generator": 2 * 5 + 10 + 10, "verifier": 8, "blindfold": 6}
    items = trace_eval.read(out / "data")
    assert (
        sorted({i.task for i in items}) == ["av_information_retrieval", "av_temporal_sequencing"]
        and len(items) == 4
    )
    seq = [i for i in items if i.task == "av_temporal_sequencing"]
    assert all(i.meta["question_type"] == "multiple" and len(i.answer_letters) == 2 for i in seq)
    for i in items:  # every hop's minute lies in its event; the first one was re-mapped into it
        for hop in i.meta["trajectory"]:
            assert (
                hop["event_time_range"]["start_minute"]
                <= hop["timestamp_minute"]
                <= hop["event_time_range"]["end_minute"]
            )
    candidates = [json.loads(x) for x in (out / "candidates.jsonl").read_text().splitlines()]
    assert len(candidates) == 10 and all(c["gates"]["minutes_remapped"] == 1 for c in candidates)
    mapping = json.loads((out / "data" / "video_name_mapping.json").read_text())
    assert mapping == {
        "long_00": {"source": "local", "id": "long_00.mp4"},
        "long_01": {"source": "local", "id": "long_01.mp4"},
    }
    events = json.loads((out / "intermediate" / "event_blocks" / "long_00.json").read_text())["event_blocks"]
    assert [(e["start_minute"], e["end_minute"]) for e in events] == [(1, 2), (3, 5), (5, 6)]
    model = build_tiny_qwen_omni(tmp_path / "tiny")
    run = tmp_path / "eval"
    assert cavpref_main([
        "eval", "traceav", "--model", str(model), "--data", str(out / "data"), "--media_root", str(videos),
        "--output", str(run), "--protocol", "official", "--long_num_frames", "2", "--frame_height", "56",
        "--frame_width", "56", "--audio_segments", "2", "--max_new_tokens", "4",
    ]) == 0  # fmt: skip
    results = json.loads((run / "results.json").read_text())
    assert results["counts"]["evaluated"] == 4 and results["protocol"] == "official"
    rows = check_run_page(run)  # report.html: the built long-video items, each with its frames and sound
    assert all("strip" in r["media"] and "audio" in r["media"] for r in rows.values())


def test_a_failing_verifier_is_counted_and_asked_again(videos, tmp_path):
    healthy, down, out = (
        RoleServer(trace_answers()),
        RoleServer(trace_answers(), fail=("verifier",)),
        tmp_path / "out",
    )
    try:
        assert cavpref_main(argv(videos, out, healthy.url, "--verifier_base_url", down.url)) == 0
        stats = json.loads((out / "stats.json").read_text())
        assert stats["stages"]["verify"]["failed"] == {"HTTP 500": 8}
        assert stats["questions"]["rejected"]["not verified: the verifier failed"] == 8
        assert "blindfold" not in stats["stages"] or stats["stages"]["blindfold"]["units"] == 0
        before = len(healthy.requests)
        assert cavpref_main(argv(videos, out, healthy.url)) == 0
    finally:
        healthy.close()
        down.close()
    assert len(healthy.requests) == before + 8 + 6  # only the verifier's 8 calls, then the blindfold's 6
    stats = json.loads((out / "stats.json").read_text())
    assert {k: stats["questions"][k] for k in EXPECTED} == EXPECTED


def test_kill_9_mid_build_then_resume_repeats_no_finished_call(videos, tmp_path):
    """The build runs in a child process; after 18 replies the server stops answering (requests hang) and
    the child is killed with SIGKILL. A call is finished when its reply is in the build's reply cache: the
    resumed build sends none of those again (requests counted at the server), only the ones cut off."""
    from cavpref.chat_client import ChatCache

    server, out = RoleServer(trace_answers(), hang_after=18), tmp_path / "out"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    cmd = [sys.executable, "-m", "cavpref.apps.cli", *argv(videos, out, server.url)]
    child = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 240  # until 18 replies are out and at least one more request hangs
        while (
            (len(server.finished) < 18 or len(server.requests) <= 18)
            and child.poll() is None
            and time.time() < deadline
        ):
            time.sleep(0.2)
        assert child.poll() is None, child.stderr.read().decode()[-2000:]
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        asked = server.digests()
        cache = ChatCache(out / "work" / "cache.sqlite")
        stored = {d for d in asked if cache.get(*d) is not None}
        cache.close()
        assert 10 <= len(stored) <= 18 and not (out / "stats.json").exists()
        server.hang_after = None
        server.release.set()
        assert cavpref_main(argv(videos, out, server.url)) == 0
    finally:
        server.release.set()
        server.close()
        if child.poll() is None:
            child.kill()
    again = server.digests()[len(asked) :]
    assert not stored & set(again)  # zero repeated finished calls
    assert set(asked) - stored <= set(again)  # the cut-off ones are asked again ...
    assert len(again) == len(set(again))  # ... once each
    stats = json.loads((out / "stats.json").read_text())
    assert {k: stats["questions"][k] for k in EXPECTED} == EXPECTED
    assert (
        sum(c["replies_in_cache"] for c in stats["calls"].values())
        == len(stored) + len(again)
        == 12 + 12 + 30 + 8 + 6
    )
