"""The generated world: layout, released formats (read with plain json/csv), truth in the media, determinism,
knobs and the ``cavpref world`` command."""

import csv
import json
import os
import re

import av
import numpy as np
import pytest

from cavpref.apps.cli import main as cavpref_main
from cavpref.data_prep.synthetic import WorldConfig, generate_world
from cavpref.data_prep.synthetic.scenes import levels
from cavpref.data_prep.synthetic.visuals import BACKGROUNDS
from tests.helpers.source_facts import MUSIC_AVQA_ANSWERS as MUSIC_ANSWERS

MUSIC_PAIRS = {
    ("Audio", "Counting"),
    ("Audio", "Comparative"),
    ("Visual", "Counting"),
    ("Visual", "Location"),
    ("Audio-Visual", "Existential"),
    ("Audio-Visual", "Counting"),
    ("Audio-Visual", "Location"),
    ("Audio-Visual", "Comparative"),
    ("Audio-Visual", "Temporal"),
}
AVQA_TYPES = {"Which", "Come From", "Happening", "Where", "Why", "Before Next", "When", "Used For"}
PLACEHOLDER = re.compile(r"<(Object|LR|LL|TH|FL|BA|LRer)>")


@pytest.fixture(scope="session")
def world(tmp_path_factory):
    out = tmp_path_factory.mktemp("world") / "w"
    cfg = WorldConfig(out=str(out), seed=3, num_clips=12, music_clips=16, workers=1)
    manifest = generate_world(cfg)
    return out, manifest


def _load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def decode(path):
    """All frames (T, H, W, 3) and the mono audio of an mp4, with PyAV, one decoder thread as the package's
    reader (cavpref/media/backends.py) and writer use."""
    with av.open(str(path)) as c:
        c.streams.video[0].codec_context.thread_count = 1
        frames = np.stack([f.to_ndarray(format="rgb24") for f in c.decode(video=0)])
    with av.open(str(path)) as c:
        sr = c.streams.audio[0].sample_rate
        audio = np.concatenate([f.to_ndarray().reshape(-1) for f in c.decode(audio=0)])
    return frames, audio, sr


# ----------------------------------------------------------------------------- layout and formats
def test_layout_and_counts(world):
    out, m = world
    assert _load(out / "world.json") == m
    assert m["version"] == 1 and m["seed"] == 3 and m["config"]["num_clips"] == 12
    assert len(os.listdir(out / "music_avqa/videos")) == m["files"]["music_avqa"]["videos"] == 16
    assert len(os.listdir(out / "avqa/videos")) == m["files"]["avqa"]["videos"] == 12
    assert len(os.listdir(out / "audioset/clips")) == m["files"]["audioset"]["clips"] == 12
    for src in ("music_avqa", "avqa", "audioset"):
        for clip in m[src]:
            assert (out / clip["file"]).is_file()
    for clip in m["music_avqa"]:
        assert re.fullmatch(r"\d{8}", clip["video_id"]) and clip["file"].endswith(f"/{clip['video_id']}.mp4")
    for clip in m["avqa"]:
        assert re.fullmatch(r"[A-Za-z0-9_-]{11}_\d{6}", clip["video_name"]) and len(clip["video_name"]) == 18
    for clip in m["audioset"]:
        assert clip["file"] == f"audioset/clips/{clip['ytid']}_{int(clip['start_seconds'])}.mp4"
    for split, n in m["files"]["music_avqa"]["questions"].items():
        assert len(_load(out / f"music_avqa/json/avqa-{split}.json")) == n > 0
    for split, n in m["files"]["avqa"]["questions"].items():
        assert len(_load(out / f"avqa/annotation/{split}_qa.json")) == n > 0


def test_music_avqa_format_and_quirks(world):
    out, m = world
    records, vids = [], {c["video_id"]: c for c in m["music_avqa"]}
    for split in ("train", "val", "test"):
        for r in _load(out / f"music_avqa/json/avqa-{split}.json"):
            assert list(r) == [
                "video_id",
                "question_id",
                "type",
                "question_content",
                "templ_values",
                "question_deleted",
                "anser",
            ]
            assert vids[r["video_id"]]["split"] == split
            assert isinstance(r["type"], str) and isinstance(r["templ_values"], str)
            kind = json.loads(r["type"])
            values = json.loads(r["templ_values"])
            assert tuple(kind) in MUSIC_PAIRS
            assert len(PLACEHOLDER.findall(r["question_content"])) == len(values)
            assert r["question_deleted"] == 0 and isinstance(r["question_id"], int)
            assert r["anser"] in MUSIC_ANSWERS
            records.append(r)
    raw = (out / "music_avqa/json/avqa-train.json").read_text(encoding="utf-8")
    assert '"type": "[\\"Audio' in raw  # a JSON list inside a string, as released
    contents = [r["question_content"] for r in records]
    assert any(c.endswith("\uff1f") for c in contents) and any(c.endswith(" ") for c in contents)
    ids = [r["question_id"] for r in records]
    assert len(set(ids)) < len(ids)  # question_id repeats, as in the release
    modality = [json.loads(r["type"])[0] for r in records]
    assert modality.count("Audio-Visual") > len(records) / 2
    assert "Audio" in modality and "Visual" in modality


def test_avqa_format(world):
    out, m = world
    video_map = _load(out / "avqa/video/video_map.json")
    assert video_map == {c["video_name"]: c["video_id"] for c in m["avqa"]}
    ids = []
    for split in ("train", "val"):
        for r in _load(out / f"avqa/annotation/{split}_qa.json"):
            assert list(r) == [
                "id",
                "video_name",
                "video_id",
                "question_text",
                "multi_choice",
                "answer",
                "question_relation",
                "question_type",
            ]
            assert video_map[r["video_name"]] == r["video_id"]
            assert len(r["multi_choice"]) == 4 == len(set(r["multi_choice"]))
            assert isinstance(r["answer"], int) and 0 <= r["answer"] <= 3
            assert r["question_relation"] in {"View", "Both", "Sound"} and r["question_type"] in AVQA_TYPES
            ids.append(r["id"])
    assert len(set(ids)) == len(ids)


def test_audioset_format(world):
    out, m = world
    with open(out / "audioset/class_labels_indices.csv", encoding="utf-8", newline="") as f:
        labels = list(csv.DictReader(f))
    assert list(labels[0]) == ["index", "mid", "display_name"]
    assert [int(r["index"]) for r in labels] == list(range(len(labels)))
    raw = (out / "audioset/class_labels_indices.csv").read_text(encoding="utf-8").splitlines()
    assert raw[1].endswith('"') and raw[1].count('"') == 2  # display names quoted, as released
    mids = {r["mid"] for r in labels}
    onto = _load(out / "audioset/ontology.json")
    by_id = {n["id"]: n for n in onto}
    for n in onto:
        assert list(n) == [
            "id",
            "name",
            "description",
            "citation_uri",
            "positive_examples",
            "child_ids",
            "restrictions",
        ]
        assert set(n["child_ids"]) <= set(by_id)
        assert n["restrictions"] in ([], ["abstract"], ["blacklist"])
        assert (n["id"] in mids) == (n["restrictions"] == [])
    assert {"abstract"} <= {r for n in onto for r in n["restrictions"]}
    rows = 0
    for split in ("balanced_train", "eval"):
        text = (out / f"audioset/{split}_segments.csv").read_text(encoding="utf-8").splitlines()
        assert [line.startswith("# ") for line in text[:4]] == [True, True, True, False]
        assert text[2] == "# YTID, start_seconds, end_seconds, positive_labels"
        for line, row in zip(text[3:], csv.reader(text[3:], skipinitialspace=True)):
            assert re.fullmatch(r'[A-Za-z0-9_-]{11}, \d+\.000, \d+\.\d{3}, "[^"]+"', line)
            ytid, start, end, lab = row
            assert set(lab.split(",")) <= mids and float(end) > float(start)
            clip = next(c for c in m["audioset"] if c["ytid"] == ytid)
            assert (
                clip["split"] == split
                and clip["labels"] == lab.split(",")
                and clip["event"] in lab.split(",")
            )
            rows += 1
    assert rows == 12
    classes = m["catalogue"]["audioset_classes"]
    assert len(classes) >= 8 and len({c["supercategory"] for c in classes}) >= 3


# ----------------------------------------------------------------------------- truth in the media
def _non_background(frame, scene, x0, x1):
    band = frame[:, x0:x1].reshape(-1, 3).astype(int)
    bgs = np.array(BACKGROUNDS[scene][:2])
    far = np.min(np.abs(band[:, None] - bgs[None]).sum(-1), axis=1) > 60
    not_white = (band < 235).any(-1)
    return band[far & not_white]


def test_video_shows_each_instrument_in_its_slot(world):
    out, m = world
    colors = {i["name"]: np.array(i["color"]) for i in m["catalogue"]["instruments"]}
    w = m["config"]["width"]
    for clip in m["music_avqa"]:
        frames, _, _ = decode(out / clip["file"])
        fps = m["config"]["fps"]
        for s, slot in enumerate(("left", "middle", "right")):
            x0, x1 = s * w // 3, (s + 1) * w // 3
            here = [e for e in clip["instruments"] if e["slot"] == slot]
            pix = _non_background(frames[0], clip["scene"], x0, x1)
            if not here:
                assert len(pix) == 0, (clip["video_id"], slot)
                continue
            e = here[0]
            seen = np.median(pix, axis=0)
            nearest = min(colors, key=lambda n: np.abs(colors[n] - seen).sum())
            assert colors[nearest].tolist() == colors[e["name"]].tolist(), (clip["video_id"], slot)
            for i, frame in enumerate(frames):  # white outline exactly while sounding
                t = i / fps
                sounding = any(on <= t < off for on, off in e["events"])
                white = (frame[:, x0:x1] >= 235).all(-1).sum()
                assert (white > 0) == sounding, (clip["video_id"], slot, t)


def test_audio_pitch_of_the_sounding_instruments_dominates(world):
    out, m = world
    f0 = {i["name"]: i["f0"] for i in m["catalogue"]["instruments"]}
    checked = 0
    for clip in m["music_avqa"]:
        _, audio, sr = decode(out / clip["file"])
        assert sr == 16000
        step = clip["duration"] / 8
        for k in range(8):
            t0, t1 = k * step + 0.05, (k + 1) * step - 0.05
            seg = audio[int(t0 * sr) : int(t1 * sr)]
            spec = np.abs(np.fft.rfft(seg * np.hanning(len(seg)), 8 * len(seg))) ** 2
            freqs = np.fft.rfftfreq(8 * len(seg), 1 / sr)
            energy = {n: spec[(freqs > f * 0.97) & (freqs < f * 1.03)].sum() for n, f in f0.items()}
            on = {e["name"] for e in clip["instruments"] if any(a <= t0 and t1 <= b for a, b in e["events"])}
            if not on:
                assert np.sqrt(np.mean(seg**2)) < 1e-3  # silence between events
                continue
            top = sorted(energy, key=energy.get, reverse=True)[: len(on)]
            assert set(top) == on, (clip["video_id"], t0, on, top)
            checked += 1
    assert checked > 50


def test_louder_means_more_energy(world):
    """Where one instrument sounds alone, RMS / gain is the same for every instrument of the clip (the mix
    is only ever scaled as a whole), so a larger gain always means more energy in the file."""
    out, m = world
    windows = multi = 0
    for clip in m["music_avqa"]:
        _, audio, sr = decode(out / clip["file"])
        step = clip["duration"] / 8
        ratio, names = [], set()
        for k in range(8):
            t0, t1 = k * step, (k + 1) * step
            near = [
                e for e in clip["instruments"] if any(a < t1 + 0.05 and b > t0 - 0.05 for a, b in e["events"])
            ]
            if len(near) == 1 and any(a <= t0 and t1 <= b for a, b in near[0]["events"]):
                rms = np.sqrt(np.mean(audio[int(t0 * sr) : int(t1 * sr)] ** 2))
                ratio.append(rms / near[0]["gain"])
                names.add(near[0]["name"])
        if ratio:
            assert max(ratio) < 1.2 and max(ratio) / min(ratio) < 1.25, (clip["video_id"], ratio)
            windows += len(ratio)
            multi += len(names) >= 2
    assert windows >= 20 and multi >= 1


def test_answers_agree_with_truth(world):
    out, m = world
    clips = {c["video_id"]: c for c in m["music_avqa"]}
    checked = 0
    for split in ("train", "val", "test"):
        for r in _load(out / f"music_avqa/json/avqa-{split}.json"):
            inst = clips[r["video_id"]]["instruments"]
            q, v, a = r["question_content"].rstrip(" ?\uff1f"), json.loads(r["templ_values"]), r["anser"]
            if q == "Is this sound from the instrument in the video":
                assert a == ("no" if any(not e["visible"] and e["events"] for e in inst) else "yes")
            elif q == "How many <Object> are in the entire video":
                words = ["zero", "one", "two", "three"]
                assert a == words[sum(e["visible"] and e["name"] == v[0] for e in inst)]
            elif q == "Where is the <LL> instrument":
                sounding = [e for e in inst if e["events"]]
                pick = max if v[0] == "loudest" else min
                assert a == pick(sounding, key=lambda e: e["gain"])["slot"]
            elif q == "Is the instrument on the <LR> louder than the instrument on the <LR>":
                g = {e["slot"]: e["gain"] for e in inst if e["visible"]}
                assert a == ("yes" if g[v[0]] > g[v[1]] else "no")
            else:
                continue
            checked += 1
    assert checked >= 5
    for split in ("train", "val"):
        for r in _load(out / f"avqa/annotation/{split}_qa.json"):
            clip = next(c for c in m["avqa"] if c["video_name"] == r["video_name"])
            first = clip["sources"][0]
            answer = r["multi_choice"][r["answer"]]
            if r["question_text"] == "Where is the sounding object?":
                assert (
                    answer
                    == {"left": "On the left", "middle": "In the middle", "right": "On the right"}[
                        first["slot"]
                    ]
                )
            elif r["question_text"] in ("Where does the sound come from?", "What is making the sound?"):
                assert answer == first["name"].capitalize()


def test_avqa_and_audioset_clips_sound_only_during_their_events(world):
    out, m = world
    for clip in m["avqa"][:4] + m["audioset"][:4]:
        _frames, audio, sr = decode(out / clip["file"])
        events = [ev for s in clip["sources"] for ev in s["events"]]
        t = np.arange(len(audio)) / sr
        inside = np.zeros(len(audio), bool)
        quiet = np.ones(len(audio), bool)
        for a, b in events:
            inside |= (t > a + 0.05) & (t < b - 0.05)
            quiet &= (t < a - 0.05) | (t > b + 0.05)
        quiet &= t < clip["duration"]
        assert np.sqrt(np.mean(audio[inside] ** 2)) > 0.05
        if quiet.any():
            assert np.sqrt(np.mean(audio[quiet] ** 2)) < 1e-3


# ----------------------------------------------------------------------------- determinism
def _annotation_files(root):
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.suffix in (".json", ".csv") and not p.name.startswith(".cavpref_output")  # the folder's marker
    )


def _pixel_report(a, b):
    """Why two clips that should be the same file are not: the first frames and pixels that differ."""
    fa, aa, _ = decode(a)
    fb, ab, _ = decode(b)
    if fa.shape != fb.shape or aa.shape != ab.shape:
        return f"shapes differ: video {fa.shape} / {fb.shape}, audio {aa.shape} / {ab.shape}"
    bad = np.argwhere(np.any(fa != fb, axis=-1))
    diff = np.abs(fa.astype(int) - fb.astype(int)).max() if len(bad) else 0
    audio = "same" if np.array_equal(aa, ab) else f"max |diff| {np.abs(aa - ab).max():.3g}"
    return (
        f"{len(bad)} pixels differ (max |diff| {diff}; first at frame/y/x {bad[:3].tolist()}), audio {audio}"
    )


def test_same_seed_same_world_different_seed_different_world(world, tmp_path):
    out, _ = world
    small = {"num_clips": 2, "music_clips": 3}
    a = tmp_path / "a"
    b = tmp_path / "b"
    generate_world(WorldConfig(out=str(a), seed=3, workers=1, **small))  # in this long-lived process
    generate_world(WorldConfig(out=str(b), seed=3, workers=2, **small))  # worker processes change nothing
    files = _annotation_files(a)
    assert files == _annotation_files(b) and "world.json" in files and len(files) == 11
    for f in files:
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    videos = sorted(str(p.relative_to(a)) for p in a.rglob("*.mp4"))
    assert videos == sorted(str(p.relative_to(b)) for p in b.rglob("*.mp4")) and len(videos) == 7
    for v in videos:  # the same bytes, so the same pixels and samples whatever decodes them
        assert (a / v).read_bytes() == (b / v).read_bytes(), f"{v}: {_pixel_report(a / v, b / v)}"
    # the first clips of a larger world with the same seed are the same clips
    first = _load(out / "world.json")["audioset"][0]
    assert _load(a / "world.json")["audioset"][0] == first
    c = tmp_path / "c"
    generate_world(WorldConfig(out=str(c), seed=4, workers=1, **small))
    assert (c / "world.json").read_bytes() != (a / "world.json").read_bytes()
    assert (c / "music_avqa/json/avqa-train.json").read_bytes() != (
        a / "music_avqa/json/avqa-train.json"
    ).read_bytes()


# ----------------------------------------------------------------------------- knobs and CLI
def test_knobs_respected_through_the_cli(tmp_path, capsys):
    out = tmp_path / "tiny"
    rc = cavpref_main(
        [
            "world",
            "--out",
            str(out),
            "--seed",
            "7",
            "--num-clips",
            "2",
            "--audioset_clips",
            "3",
            "--duration",
            "2",
            "--width",
            "64",
            "--height",
            "48",
            "--fps",
            "5",
            "--sample_rate",
            "8000",
            "--num_instruments",
            "3",
            "--questions_per_clip",
            "2",
            "--no_highlight",
            "--background_ramp",
            "20",
            "--background_spot",
            "30",
            "--level_ratio",
            "1.5",
            "--workers",
            "1",
        ]
    )
    assert rc == 0
    printed = capsys.readouterr().out
    assert "music_avqa" in printed and "2 videos" in printed and "3 clips" in printed
    m = _load(out / "world.json")
    assert m["config"] == {
        "seed": 7,
        "num_clips": 2,
        "music_clips": None,
        "avqa_clips": None,
        "audioset_clips": 3,
        "duration": 2.0,
        "width": 64,
        "height": 48,
        "fps": 5.0,
        "sample_rate": 8000,
        "num_instruments": 3,
        "questions_per_clip": 2,
        "highlight": False,
        "background_ramp": 20,
        "background_spot": 30,
        "shape_scale": 1.0,
        "slot_spread": None,
        "level_ratio": 1.5,
    }
    gains = {e["gain"] for c in m["music_avqa"] for e in c["instruments"] if e["sounding"]}
    assert gains <= set(levels(1.5)) and gains - {0.32}  # a level the default world has not
    assert [i["name"] for i in m["catalogue"]["instruments"]] == ["piano", "violin", "flute"]
    assert {e["name"] for c in m["music_avqa"] for e in c["instruments"]} <= {"piano", "violin", "flute"}
    assert len(m["music_avqa"]) == len(m["avqa"]) == 2 and len(m["audioset"]) == 3
    for src in ("music_avqa", "avqa", "audioset"):
        frames, audio, sr = decode(out / m[src][0]["file"])
        assert frames.shape == (10, 48, 64, 3) and sr == 8000
        assert abs(len(audio) / sr - 2.0) < 0.1
        assert not (frames >= 250).all(-1).any()  # --no_highlight: no white outline
    per_clip = {}
    for split in ("train", "val", "test"):
        for r in _load(out / f"music_avqa/json/avqa-{split}.json"):
            per_clip[r["video_id"]] = per_clip.get(r["video_id"], 0) + 1
    assert per_clip and max(per_clip.values()) <= 2
    # a second run over the same folder replaces the world
    assert cavpref_main(["world", "--out", str(out), "--num-clips", "1", "--workers", "1"]) == 0
    assert len(os.listdir(out / "audioset/clips")) == 1


def test_cli_errors_are_clear(tmp_path, capsys):
    assert cavpref_main(["world", "--out", str(tmp_path / "x"), "--width", "63"]) == 2
    assert "WorldConfig.width=63" in capsys.readouterr().err
    config = tmp_path / "world.yaml"
    config.write_text(f"out: {tmp_path / 'y'}\ncolour: blue\n")
    assert cavpref_main(["world", "--config", str(config)]) == 2  # unknown key in the file
    assert "'--colour', 'blue'" in capsys.readouterr().err
    config.write_text(f"out: {tmp_path / 'y'}\nwidth: 63\n")
    assert cavpref_main(["world", str(config)]) == 2 and "WorldConfig.width=63" in capsys.readouterr().err
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    assert cavpref_main(["world", "--out", str(tmp_path / "busy"), "--num-clips", "1"]) == 2
    assert "was not created by `cavpref world`" in capsys.readouterr().err
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"
