"""``Mask``: black frames and silence over spans of a clip, decoded from real mp4s. The model input must
really lack the stream over the span (pixels 0, samples 0) and keep it everywhere else."""

import numpy as np
import pytest

from cavpref.media import spec as S
from cavpref.media.decode import FramePolicy, decode
from cavpref.media.spec import MediaError
from cavpref.media.write import write_mp4

SR = 16000


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A.mp4: 4 s at 8 fps, second k white-ish grey (40 + 50k), a 440 Hz tone throughout."""
    d = tmp_path_factory.mktemp("mask")
    frames = np.zeros((32, 32, 48, 3), np.uint8)
    for k in range(4):
        frames[8 * k : 8 * (k + 1)] = 40 + 50 * k
    tone = (0.5 * np.sin(2 * np.pi * 440 * np.arange(4 * SR) / SR)).astype(np.float32)
    write_mp4(d / "A.mp4", frames, 8, tone, SR)
    return d


def _levels(frames):
    return [round(f.mean() / 10) * 10 for f in frames]  # H.264 moves a grey level by a unit or two


def _rms(x):
    return float(np.sqrt(np.mean(np.square(x)))) if len(x) else 0.0


def test_spans_are_sorted_merged_and_round_trip():
    m = S.mask(S.clip("A.mp4"), [(2.5, 3.0), (0.5, 1.5), (1.0, 2.0)])
    assert m.spans == ((0.5, 2.0), (2.5, 3.0))
    assert S.from_json(S.to_json(m)) == m
    assert S.to_dict(m)["op"] == "mask" and [s.path for s in S.sources(m)] == ["A.mp4"]
    assert S.has_video(m) and S.has_audio(m)  # blanked, not removed
    with pytest.raises(MediaError, match="start < end"):
        S.mask(S.clip("A.mp4"), [(2.0, 1.0)])
    with pytest.raises(MediaError, match="neither stream"):
        S.mask(S.clip("A.mp4"), [(0, 1)], video=False, audio=False)


def test_both_streams_blank_over_the_span_only(root):
    plain = decode(S.clip("A.mp4"), root, frames=FramePolicy(num_frames=8))
    masked = decode(S.mask(S.clip("A.mp4"), [(1.0, 2.0)]), root, frames=FramePolicy(num_frames=8))
    # frames at 0.25, 0.75, ..., 3.75 s: the two inside [1, 2) are black, the rest unchanged
    assert _levels(plain.frames) == [40, 40, 90, 90, 140, 140, 190, 190]
    assert _levels(masked.frames) == [40, 40, 0, 0, 140, 140, 190, 190]
    assert np.array_equal(masked.frames[[0, 1, 4, 5, 6, 7]], plain.frames[[0, 1, 4, 5, 6, 7]])
    a = masked.audio
    assert a.shape == plain.audio.shape
    assert np.all(a[SR : 2 * SR] == 0.0)  # silence exactly over the span
    assert _rms(a[: SR - 10]) == pytest.approx(0.5 / np.sqrt(2), rel=0.05)
    assert _rms(a[2 * SR + 10 :]) == pytest.approx(0.5 / np.sqrt(2), rel=0.05)


def test_one_stream_only(root):
    video_only = decode(
        S.mask(S.clip("A.mp4"), [(0, 2)], audio=False), root, frames=FramePolicy(num_frames=4)
    )
    assert _levels(video_only.frames) == [0, 0, 140, 190]
    assert _rms(video_only.audio[: 2 * SR]) == pytest.approx(0.5 / np.sqrt(2), rel=0.05)
    audio_only = decode(
        S.mask(S.clip("A.mp4"), [(0, 2)], video=False), root, frames=FramePolicy(num_frames=4)
    )
    assert _levels(audio_only.frames) == [40, 90, 140, 190]
    assert np.all(audio_only.audio[: 2 * SR] == 0.0) and _rms(audio_only.audio[2 * SR :]) > 0.3


def test_span_over_everything_keeps_the_stream_present(root):
    """A fully masked clip still gives frames of the clip's size and audio of its length (black, silent)."""
    m = decode(S.mask(S.clip("A.mp4"), [(0, 10)]), root, frames=FramePolicy(num_frames=3))
    assert m.frames.shape == (3, 32, 48, 3) and not m.frames.any()
    assert m.audio.shape == (4 * SR,) and not m.audio.any()


def test_spans_follow_the_parts_timeline(root):
    """A mask over a sub-range (2..4 s of the file) is on the sub-range's own clock; inside a Concat it
    moves with its part."""
    sub = decode(S.mask(S.clip("A.mp4", 2.0, 4.0), [(0.0, 1.0)]), root, frames=FramePolicy(num_frames=4))
    assert _levels(sub.frames) == [0, 0, 190, 190]
    both = decode(
        S.concat(S.clip("A.mp4", 0.0, 1.0), S.mask(S.clip("A.mp4", 1.0, 3.0), [(1.0, 2.0)])),
        root,
        frames=FramePolicy(num_frames=6),
    )
    assert _levels(both.frames) == [40, 40, 90, 90, 0, 0]
    assert np.all(both.audio[2 * SR : 3 * SR] == 0.0) and _rms(both.audio[: 2 * SR - 10]) > 0.3
