"""MediaSpec trees: JSON round trips for every node and every AVTrustBench perturbation, path safety,
and the timeline rules (durations, piece placement, frame sampling) as pure functions."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from cavpref.media import spec as S
from cavpref.media.probe import MediaInfo
from cavpref.media.spec import MediaError
from cavpref.media.timeline import Piece, build_plan, frame_times, locate

A, B = S.clip("a/A.mp4"), S.clip("b/B.mp4", 1.0, 3.5)

PERTURBATIONS = {
    "MCIT/ICIT (clean)": A,
    "MVIT": S.combine(video=B, audio=A),
    "MAIT": S.combine(video=A, audio=B),
    "MVT": S.drop_video(A),
    "MAT": S.mute(A),
    "COT-Stitch": S.concat(A, B),
    "COT-Swap": S.concat(S.combine(A, B), S.combine(B, A)),
    "COT-Swap (audio order swapped)": S.combine(video=S.concat(A, B), audio=S.concat(B, A)),
    "CAT (sequential)": S.concat(A, B),
    "CAT (mixed)": S.overlay(A, B, gains=(1.0, 0.5), video=1),
    "CAT (mixed, no video)": S.overlay(A, B, video=None),
}


@pytest.mark.parametrize("name", sorted(PERTURBATIONS))
def test_json_round_trip_every_perturbation(name):
    spec = PERTURBATIONS[name]
    text = S.to_json(spec)
    assert S.from_json(text) == spec
    assert S.to_json(S.from_json(text)) == text  # canonical: stable as a cache key
    assert json.loads(text)["op"] in ("source", "combine", "concat", "overlay")


def test_json_of_each_node_type():
    assert S.to_dict(B) == {"op": "source", "path": "b/B.mp4", "start": 1.0, "end": 3.5}
    assert S.to_dict(S.mute(A)) == {"op": "combine", "video": S.to_dict(A), "audio": None}
    o = S.to_dict(S.overlay(A, B, gains=(2, 0.5), video=None))
    assert o == {"op": "overlay", "parts": [S.to_dict(A), S.to_dict(B)], "gains": [2.0, 0.5], "video": None}
    assert S.from_dict({"op": "source", "path": "x.mp4"}) == S.Source("x.mp4", 0.0, None)


def test_structure_queries():
    assert not S.has_video(S.drop_video(A)) and S.has_audio(S.drop_video(A))
    assert S.has_video(S.mute(A)) and not S.has_audio(S.mute(A))
    assert not S.has_video(S.overlay(A, B, video=None))
    assert [s.path for s in S.sources(PERTURBATIONS["COT-Swap"])] == [
        "a/A.mp4",
        "b/B.mp4",
        "b/B.mp4",
        "a/A.mp4",
    ]


@pytest.mark.parametrize("bad", ["../x.mp4", "a/../../x.mp4", "/etc/passwd", "C:/x.mp4", ""])
def test_paths_must_stay_relative(bad):
    with pytest.raises(MediaError, match="relative"):
        S.clip(bad)


def test_resolve_path_refuses_symlink_out_of_root(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "x.mp4").write_bytes(b"x")
    os.symlink(outside, root / "link")
    with pytest.raises(MediaError, match="outside the data root"):
        S.resolve_path(root, "link/x.mp4")
    assert S.resolve_path(root, "ok/y.mp4") == (root / "ok/y.mp4").resolve()


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: S.clip("x.mp4", 2.0, 2.0), "zero-length"),
        (lambda: S.clip("x.mp4", -1.0), "negative"),
        (lambda: S.Combine(None, None), "both are None"),
        (lambda: S.concat(), "at least one part"),
        (lambda: S.overlay(A, B, gains=(1.0,)), "gains"),
        (lambda: S.overlay(A, video=3), "out of range"),
        (lambda: S.from_dict({"op": "blur"}), "not a MediaSpec"),
        (lambda: S.from_dict({"op": "source", "start": 1.0}), "'source' node is missing field 'path'"),
        (lambda: S.from_dict({"op": "concat"}), "'concat' node is missing field 'parts'"),
        (
            lambda: S.from_dict({"op": "source", "path": "x.mp4", "start": "soon"}),
            "'source' node has a field of the wrong type",
        ),
        (lambda: S.from_dict({"op": "overlay", "parts": 3}), "'overlay' node has a field of the wrong type"),
        (
            lambda: S.from_json('{"op":"combine","video":{"op":"source"}}'),
            "'source' node is missing field 'path'",
        ),
    ],
)
def test_bad_specs_are_refused(make, match):
    with pytest.raises(MediaError, match=match):
        make()


# ----------------------------------------------------------------------------- timeline (pure)


def _info(duration, video=True, audio=True):
    return MediaInfo(
        path="x",
        duration=duration,
        origin=0.0,
        has_video=video,
        has_audio=audio,
        fps=8.0,
        width=64,
        height=48,
    )


FILES = {
    "a/A.mp4": _info(3.0),
    "b/B.mp4": _info(4.0),
    "v.mp4": _info(2.0, audio=False),
    "s.mp4": _info(1.5, video=False),
}


def lookup(path):
    return Path(path), FILES[path]


def _spans(pieces):
    return [(str(p.file), p.src_start, p.at, p.length, p.gain) for p in pieces]


def test_plan_source_and_subrange():
    plan = build_plan(B, lookup)  # [1.0, 3.5] of a 4 s file
    assert plan.duration == 2.5
    assert _spans(plan.video) == _spans(plan.audio) == [("b/B.mp4", 1.0, 0.0, 2.5, 1.0)]


def test_plan_combine_duration_follows_video_and_truncates_audio():
    mvit = build_plan(S.combine(video=B, audio=A), lookup)  # video 2.5 s, audio 3 s → cut to 2.5
    assert mvit.duration == 2.5
    assert _spans(mvit.video) == [("b/B.mp4", 1.0, 0.0, 2.5, 1.0)]
    assert _spans(mvit.audio) == [("a/A.mp4", 0.0, 0.0, 2.5, 1.0)]
    mait = build_plan(S.combine(video=A, audio=S.clip("s.mp4")), lookup)  # audio 1.5 s shorter: padded
    assert mait.duration == 3.0 and _spans(mait.audio) == [("s.mp4", 0.0, 0.0, 1.5, 1.0)]
    mvt = build_plan(S.drop_video(A), lookup)
    assert mvt.video is None and mvt.duration == 3.0


def test_plan_concat_sums_and_keeps_gaps():
    plan = build_plan(S.concat(S.mute(A), B, S.clip("v.mp4")), lookup)
    assert plan.duration == 3.0 + 2.5 + 2.0
    assert [p.at for p in plan.video] == [0.0, 3.0, 5.5]
    assert _spans(plan.audio) == [("b/B.mp4", 1.0, 3.0, 2.5, 1.0)]  # audio present, with silent gaps
    assert build_plan(S.concat(S.mute(A), S.clip("v.mp4")), lookup).audio is None


def test_plan_overlay_max_duration_and_gains():
    plan = build_plan(S.overlay(A, B, gains=(0.5, 2.0), video=0), lookup)
    assert plan.duration == 3.0
    assert _spans(plan.audio) == [("a/A.mp4", 0.0, 0.0, 3.0, 0.5), ("b/B.mp4", 1.0, 0.0, 2.5, 2.0)]
    assert _spans(plan.video) == [("a/A.mp4", 0.0, 0.0, 3.0, 0.5)]
    assert build_plan(S.overlay(A, B, video=None), lookup).video is None
    nested = build_plan(S.overlay(S.overlay(A, gains=(0.5,)), gains=(0.5,)), lookup)
    assert nested.audio[0].gain == 0.25


def test_plan_nested_combine_window():
    # inner Combine lasts 2 s (v.mp4); its audio (A, 3 s) is cut at 2 s, then the outer at B's 2.5 s.
    inner = S.combine(video=S.clip("v.mp4"), audio=A)
    plan = build_plan(S.combine(video=B, audio=S.concat(inner, A)), lookup)
    assert plan.duration == 2.5
    assert _spans(plan.audio) == [("a/A.mp4", 0.0, 0.0, 2.0, 1.0), ("a/A.mp4", 0.0, 2.0, 0.5, 1.0)]


def test_plan_errors_name_the_file():
    with pytest.raises(MediaError, match="s.mp4.*no video stream"):
        build_plan(S.combine(video=S.clip("s.mp4"), audio=A), lookup)
    with pytest.raises(MediaError, match="v.mp4.*no audio stream"):
        build_plan(S.combine(video=A, audio=S.clip("v.mp4")), lookup)
    with pytest.raises(MediaError, match="a/A.mp4.*outside the clip"):
        build_plan(S.clip("a/A.mp4", 0.0, 3.5), lookup)
    with pytest.raises(MediaError, match="a/A.mp4.*outside the clip"):
        build_plan(S.clip("a/A.mp4", 3.0), lookup)
    assert build_plan(S.clip("a/A.mp4", 1.0, 3.05), lookup).duration == 2.0  # within tolerance: clamped


def test_frame_times_are_slot_centres():
    np.testing.assert_allclose(frame_times(4.0, 4, None, 32), [0.5, 1.5, 2.5, 3.5])
    np.testing.assert_allclose(frame_times(3.0, 8, 2.0, 32), [0.25, 0.75, 1.25, 1.75, 2.25, 2.75])  # fps wins
    np.testing.assert_allclose(frame_times(10.0, None, 8.0, 4), [1.25, 3.75, 6.25, 8.75])  # capped → uniform
    assert len(frame_times(5.04, None, 8.0, 1000)) == 40 and len(frame_times(0.01, None, 8.0, 9)) == 1
    with pytest.raises(MediaError):
        frame_times(3.0, 0, None, 32)


def test_locate_maps_timeline_to_file_time():
    pieces = (
        Piece(Path("a"), FILES["a/A.mp4"], 1.0, 0.0, 2.0),
        Piece(Path("b"), FILES["b/B.mp4"], 0.5, 2.0, 1.0),
    )
    assert locate(pieces, 0.5) == (pieces[0], 1.5)
    assert locate(pieces, 2.0) == (pieces[1], 0.5)  # a cut belongs to the later part
    assert locate(pieces, 3.0) is None
