"""`cavpref build aura`: the pure pieces (clip plan, prompts, reply checks) with hand-made inputs, and the
whole build on the synthetic world's clips against loopback role servers and a tiny Whisper, read back by
`cavpref eval aura --protocol official` on a tiny Qwen2.5-Omni thinker."""

import csv
import json
import random
from pathlib import Path

import numpy as np
import pytest

from cavpref.apps.cli import main as cavpref_main
from cavpref.data_prep.builders.aura import generate, plan
from cavpref.data_prep.builders.aura.tasks import BY_CODE, TASKS
from cavpref.data_prep.builders.work import BuildError
from cavpref.data_prep.synthetic import WorldConfig, generate_world
from cavpref.eval.benchmarks.aura import data as aura_eval
from cavpref.media.decode import decode
from cavpref.media.probe import probe
from cavpref.media.spec import Combine, Source, clip
from cavpref.models.tiny import build_tiny_whisper
from tests.helpers.builder_servers import RoleServer, aura_answers
from tests.helpers.html_report_check import check_run_page

ITEM = {
    "question": "Why does she wait?",
    "options": {"A": "To cool it", "B": "A hot pan", "C": "To clean", "D": "Recipe"},
    "correct_answer_key": "B",
    "gold_reasoning": "She says so.",
}


def test_tasks_are_the_released_categories_of_the_reader():
    assert {t.category for t in TASKS} == {cat for _, cat, _ in aura_eval.TASKS}
    assert all(aura_eval.task_code(t.category) == t.code for t in TASKS)


def test_reply_parsing_and_the_checks_of_each_question():
    two = json.dumps([ITEM, ITEM])
    assert generate.parse_reply(BY_CODE["CR"], f"```json\n{two}\n```") == [ITEM, ITEM]
    with pytest.raises(ValueError, match="list of 3"):
        generate.parse_reply(BY_CODE["TPR"], two)
    assert generate.parse_reply(BY_CODE["TSA"], json.dumps(ITEM)) == [
        ITEM
    ]  # a one-question task: a bare object
    assert generate.problem(ITEM) is None
    for change, reason in [
        ({"question": " "}, "no question"),
        ({"options": {"A": "x", "B": "y", "C": "z"}}, "options are not A-D"),
        ({"options": {"A": "x", "B": "X ", "C": "z", "D": "w"}}, "duplicate options"),
        ({"options": {"A": "x", "B": "", "C": "z", "D": "w"}}, "an empty option"),
        ({"correct_answer_key": "E"}, "answer key is not an option"),
        ({"gold_reasoning": None}, "no gold reasoning"),
    ]:
        assert generate.problem({**ITEM, **change}) == reason


def test_released_record_keeps_the_answer_through_the_shuffle():
    seen = set()
    for seed in range(12):
        rec = generate.released_record(
            ITEM, "v1", BY_CODE["TSA"], random.Random(seed), {"sync_status": "Aligned"}
        )
        assert rec["options"][rec["correct_answer_key"]] == "A hot pan" and rec["sync_status"] == "Aligned"
        assert set(rec) == {
            "question",
            "options",
            "correct_answer_key",
            "gold_reasoning",
            "video_id",
            "category",
            "sync_status",
        }
        seen.add(rec["correct_answer_key"])
    assert len(seen) > 1  # the key moves
    assert "sync_status" not in generate.released_record(ITEM, "v1", BY_CODE["CR"], random.Random(0), {})


def test_user_prompts_carry_the_ground_truth_of_their_task():
    desc = {"visual": "a drummer", "audio": "drums", "transcript": ""}
    sync = generate.user_prompt(BY_CODE["TSA"], {"clip": desc}, {"sync_status": "Misaligned", "shift_s": 5.0})
    assert "Ground truth: Misaligned (the sound track runs 5 s ahead of the picture)." in sync
    assert "Speech transcript:\n(no speech recognised)" in generate.user_prompt(
        BY_CODE["CR"], {"clip": desc}, {}
    )
    split = generate.user_prompt(
        BY_CODE["ID"], {"top": desc, "bottom": {**desc, "visual": "a violinist"}}, {}
    )
    assert "--- TOP half ---" in split and split.index("a drummer") < split.index(
        "--- BOTTOM half ---"
    ) < split.index("a violinist")
    seq = generate.user_prompt(
        BY_CODE["PSP"], {"first": desc, "second": desc}, {"first": "expert", "second": "novice"}
    )
    assert "the expert performs first, then the novice" in seq


def test_clip_plan_windows_balance_and_pairs(tmp_path):
    scan = {"duration": 10.0, "has_audio": True, "power": [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]}
    w = plan.windows("a.mp4", scan, 2.0, 4.0, 3.0)
    assert w["short"] == Source("a.mp4", 6.0, 8.0) and w["long"] == Source("a.mp4", 6.0, 10.0)
    # the shifted clip must leave 3 s of sound after it: window [3, 7), sound [6, 10)
    assert w["shifted"] == Combine(video=Source("a.mp4", 3.0, 7.0), audio=Source("a.mp4", 6.0, 10.0))
    assert (
        plan.clip_name("a", w["shifted"]) == "a_3-7s_shift+3s" and plan.clip_name("a", w["short"]) == "a_6-8s"
    )
    assert plan.windows("a.mp4", {**scan, "duration": 3.5}, 2.0, 4.0, 3.0)["shifted"] is None
    room = {"v1": True, "v2": True, "v3": True, "v4": True, "v5": False}
    shifted = plan.sync_choice(list(room), room, seed=0)
    assert sum(shifted.values()) == 2 and not shifted["v5"]
    texts = {
        "a": "a red violin on stage",
        "b": "a blue cello",
        "c": "violin player with red violin",
        "d": "blue cello here",
    }
    assert plan.pair_by_overlap(texts) == [("b", "d"), ("a", "c")]  # best overlap first: 2/3, then 2/4
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("novice,expert\nx.mp4,y.mp4\nx.mp4,z.mp4\n")
    with pytest.raises(BuildError, match=r"pairs.csv: line 3, 'expert': 'z.mp4' is not a video"):
        plan.read_pairs(pairs, ("novice", "expert"), {"x.mp4", "y.mp4"})


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Four 8-s MUSIC-AVQA clips of the synthetic world (the user's videos), a PSP pairs file, a tiny Whisper."""
    base = tmp_path_factory.mktemp("aura")
    generate_world(
        WorldConfig(
            out=str(base / "world"),
            seed=3,
            num_clips=4,
            avqa_clips=1,
            audioset_clips=1,
            duration=8.0,
            workers=1,
        )
    )
    videos = base / "world" / "music_avqa" / "videos"
    names = sorted(p.name for p in videos.iterdir())
    (base / "skill.csv").write_text(f"novice,expert\n{names[0]},{names[1]}\n")
    return {"videos": videos, "skill": base / "skill.csv", "whisper": build_tiny_whisper(base / "whisper")}


def products(out):
    """The build's outputs (not its work folder, its stats of this run or its settings), as bytes."""
    return {
        p.name: p.read_bytes()
        for p in out.rglob("*")
        if p.is_file() and "work" not in p.parts and p.name not in ("stats.json", "build.json")
    }


def argv(inputs, out, url, *extra):
    return [
        "build", "aura", "--videos", str(inputs["videos"]), "--out", str(out), "--base_url", url,
        "--visual_model", "visual", "--audio_model", "audio", "--generator_model", "generator",
        "--whisper_model", str(inputs["whisper"]), "--short_clip_s", "4", "--long_clip_s", "6",
        "--sync_shift_s", "2", "--skill_pairs", str(inputs["skill"]), "--caption_frames", "4",
        "--max_retries", "1", *extra,
    ]  # fmt: skip


def test_build_resume_and_official_eval_on_a_tiny_model(inputs, tmp_path):
    from cavpref.models.tiny import build_tiny_qwen_omni

    server, out = RoleServer(aura_answers()), tmp_path / "out"
    try:
        assert cavpref_main(argv(inputs, out, server.url)) == 0
        first = len(server.requests)
        before = products(out)
        assert cavpref_main(argv(inputs, out, server.url)) == 0
        assert len(server.requests) == first  # a finished build asks nothing again
    finally:
        server.close()
    assert products(out) == before  # the same bytes
    stats = json.loads((out / "stats.json").read_text())
    q = stats["questions"]
    # 4 videos: CR 2 x 4, UANS 2 x 4, TPR 3 x 4, TSA 1 x 4, ID 2 x 2 pairs, PSP 2 x 1 pair; the server plants
    # a bad answer key in every TPR call's third question and repeats every UANS call's first question
    assert q["generated"] == 8 + 8 + 12 + 4 + 4 + 2 == q["kept"] + sum(q["rejected"].values())
    assert q["rejected"] == {"answer key is not an option": 4, "duplicate question": 4} and q["kept"] == 30
    calls = {role: c["replies_in_cache"] for role, c in stats["calls"].items()}
    # captions: the short and the long window of each video, and the 2 shifted TSA clips (one shifted sound
    # track is another window's own, an identical request asked once); one generator call per video for CR,
    # UANS, TPR, TSA, per ID pair (2) and per PSP pair (1)
    assert calls == {"visual": 4 * 2 + 2, "audio": 4 * 2 + 2 - 1, "generator": 4 + 4 + 4 + 4 + 2 + 1}
    items = aura_eval.read(out / "aura.jsonl")
    assert len(items) == 30 and {i.task for i in items} == {t.code for t in TASKS}
    tsa = [i for i in items if i.task == "TSA"]
    assert sorted(i.meta["sync_status"] for i in tsa) == ["Aligned", "Aligned", "Misaligned", "Misaligned"]
    videos = out / "videos"
    for i in items:  # every clip is where `--media_root <out>/videos` finds it
        assert (videos / f"{i.meta['video_id']}.mp4").is_file()
    split = probe(videos / f"{next(i for i in items if i.task == 'ID').meta['video_id']}.mp4")
    assert (split.height, split.width) == (224, 112)  # two 112 x 112 halves, top over bottom
    skill = probe(videos / f"{next(i for i in items if i.task == 'PSP').meta['video_id']}.mp4")
    assert skill.duration == pytest.approx(12.0, abs=0.15)  # two 6-s performances
    # a misaligned clip's sound is its source's sound 2 s later
    mis = next(i for i in tsa if i.meta["sync_status"] == "Misaligned").meta["video_id"]
    stem, window = mis.split("_shift")[0].rsplit("_", 1)
    start, end = (float(x) for x in window[:-1].split("-"))
    heard = decode(clip(f"{mis}.mp4"), videos, frames=None).audio
    source = decode(
        Combine(video=None, audio=Source(f"{stem}.mp4", start + 2, end + 2)), inputs["videos"], frames=None
    ).audio
    n = min(len(heard), len(source))
    assert np.corrcoef(heard[:n], source[:n])[0, 1] > 0.9
    rows = list(csv.DictReader((out / "audit" / "audit_sample.csv").open()))
    assert len(rows) == stats["audit"]["rows"] >= 6 and all(
        Path(r["media_path"]).is_file() for r in rows
    )  # ceil(15 %) per task
    model = build_tiny_qwen_omni(tmp_path / "tiny")
    run = tmp_path / "eval"
    assert cavpref_main([
        "eval", "aura", "--model", str(model), "--data", str(out / "aura.jsonl"), "--media_root", str(videos),
        "--output", str(run), "--protocol", "official", "--no_judge", "--num_frames", "2",
        "--frame_height", "56", "--frame_width", "56", "--max_new_tokens", "4",
    ]) == 0  # fmt: skip
    results = json.loads((run / "results.json").read_text())
    assert results["counts"]["evaluated"] == 30 and results["protocol"] == "official"
    rows = check_run_page(run)  # report.html: every built item, its frames and sound (stacked ID clips too)
    assert all("strip" in r["media"] and "audio" in r["media"] for r in rows.values())


def test_a_failing_generator_is_counted_and_asked_again(inputs, tmp_path):
    healthy, down, out = (
        RoleServer(aura_answers()),
        RoleServer(aura_answers(), fail=("generator",)),
        tmp_path / "out",
    )
    subset = ("--tasks", "TPR", "TSA")
    try:
        assert cavpref_main(argv(inputs, out, healthy.url, *subset, "--generator_base_url", down.url)) == 0
        stats = json.loads((out / "stats.json").read_text())
        assert (
            stats["stages"]["generate"]["failed"] == {"HTTP 500": 8} and stats["questions"]["generated"] == 0
        )
        assert (
            stats["calls"]["generator"]["this_run"]["failures"] == 8
            and (out / "aura.jsonl").read_text() == ""
        )
        captions = len(healthy.requests)
        assert cavpref_main(argv(inputs, out, healthy.url, *subset)) == 0
    finally:
        healthy.close()
        down.close()
    assert len(healthy.requests) == captions + 8  # the captions came from the cache; only the 8 calls again
    stats = json.loads((out / "stats.json").read_text())
    assert stats["stages"]["generate"]["failed"] == {} and stats["questions"]["kept"] == 8 + 4


def test_transcripts_are_whisper_on_30_second_windows(inputs):
    """45 s of audio is two windows (30 s + 15 s), each transcribed as ``generate`` + decode would."""
    import torch
    from transformers import WhisperForConditionalGeneration, WhisperProcessor

    from cavpref.data_prep.builders.asr import Transcriber

    rng = np.random.default_rng(0)
    audio = (0.1 * rng.standard_normal(45 * 16000)).astype(np.float32)
    text = Transcriber(str(inputs["whisper"]), max_new_tokens=12)(audio, 16000)
    model = WhisperForConditionalGeneration.from_pretrained(inputs["whisper"])
    proc = WhisperProcessor.from_pretrained(inputs["whisper"])
    expected = []
    for window in (audio[: 30 * 16000], audio[30 * 16000 :]):
        features = proc(window, sampling_rate=16000, return_tensors="pt").input_features
        with torch.no_grad():
            ids = model.generate(features, max_new_tokens=12, task="transcribe")
        expected.append(proc.batch_decode(ids, skip_special_tokens=True)[0].strip())
    assert all(expected) and text == " ".join(expected)
    assert Transcriber(str(inputs["whisper"]))(None, 16000) == ""
