"""The split-screen node (``Stack``) and the audio shift (``shift_audio``) on real mp4s: colours tell which
file paints which band, a loudness ramp tells which second of the sound track plays when."""

import numpy as np
import pytest

from cavpref.media import spec as S
from cavpref.media.decode import FramePolicy, decode
from cavpref.media.materialize import materialize
from cavpref.media.probe import probe
from cavpref.media.spec import MediaError
from cavpref.media.write import write_mp4

SR = 16000
RED, BLUE, GREEN = (255, 0, 0), (0, 0, 255), (0, 255, 0)


def _still(colour, seconds, hw, fps=8):
    return np.tile(np.array(colour, np.uint8), (seconds * fps, *hw, 1))


def _tone(freq, seconds, amp):
    return (amp * np.sin(2 * np.pi * freq * np.arange(seconds * SR) / SR)).astype(np.float32)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """R: 3 s red 32x48, 440 Hz at 0.5. B: 2 s blue 64x48, 1000 Hz at 0.25. G: 3 s green 32x32, silent.
    RAMP: 10 s grey, a 300 Hz tone whose amplitude is t / 10 (so loudness says which second plays)."""
    d = tmp_path_factory.mktemp("stack")
    write_mp4(d / "R.mp4", _still(RED, 3, (32, 48)), 8, _tone(440, 3, 0.5), SR)
    write_mp4(d / "B.mp4", _still(BLUE, 2, (64, 48)), 8, _tone(1000, 2, 0.25), SR)
    write_mp4(d / "G.mp4", _still(GREEN, 3, (32, 32)), 8, None)
    t = np.arange(10 * SR) / SR
    ramp = (0.8 * (t / 10) * np.sign(np.sin(2 * np.pi * 300 * t))).astype(np.float32)
    write_mp4(d / "RAMP.mp4", _still((128, 128, 128), 10, (32, 32)), 8, ramp, SR)
    return d


def _colour(pixel):
    return tuple(round(v / 255.0) * 255 for v in pixel)


def test_vertical_stack_paints_bands_by_size_and_mixes_audio(root):
    spec = S.stack(S.clip("R.mp4"), S.clip("B.mp4"), gains=(1.0, 0.5))
    m = decode(spec, root, frames=FramePolicy(num_frames=3))
    # natural size: heights 32 + 64 stacked, widest width 48; the red band is the top third
    assert m.frames.shape == (3, 96, 48, 3) and m.duration == pytest.approx(3.0, abs=0.02)
    for k in range(3):
        assert _colour(m.frames[k, 16, 24]) == RED
    assert [_colour(m.frames[k, 60, 24]) for k in range(3)] == [BLUE, BLUE, (0, 0, 0)]  # B ends at 2 s
    assert _colour(m.frames[0, 31, 10]) == RED and _colour(m.frames[0, 33, 10]) == BLUE  # the band edge
    r = decode(S.clip("R.mp4"), root, frames=None).audio
    b = decode(S.clip("B.mp4"), root, frames=None).audio
    expected = r.copy()
    expected[: len(b)] += 0.5 * b
    np.testing.assert_allclose(m.audio, expected, atol=1e-6)


def test_horizontal_stack_inside_a_concat_and_a_part_without_audio(root):
    side = S.stack(S.clip("R.mp4"), S.clip("G.mp4"), axis="horizontal")
    m = decode(S.concat(side, S.clip("B.mp4")), root, frames=FramePolicy(num_frames=5))
    # the Concat's size is its first part's: max height 32, widths 48 + 32 side by side
    assert m.frames.shape[1:3] == (32, 80) and m.duration == pytest.approx(5.0, abs=0.03)
    assert _colour(m.frames[0, 16, 20]) == RED and _colour(m.frames[0, 16, 60]) == GREEN
    assert _colour(m.frames[4, 16, 20]) == BLUE and _colour(m.frames[4, 16, 60]) == BLUE  # B fills the frame
    assert m.audio is not None and np.abs(m.audio[: 3 * SR]).max() == pytest.approx(0.5, abs=0.05)


def test_stack_json_roundtrip_and_errors(root, tmp_path):
    spec = S.stack(S.clip("R.mp4", 0, 2), S.clip("B.mp4"), axis="horizontal", gains=(0.5, 0.5))
    assert S.from_json(S.to_json(spec)) == spec and S.has_video(spec) and S.has_audio(spec)
    assert [s.path for s in S.sources(spec)] == ["R.mp4", "B.mp4"]
    with pytest.raises(MediaError, match="at least two parts"):
        S.stack(S.clip("R.mp4"))
    with pytest.raises(MediaError, match="axis"):
        S.Stack((S.clip("R.mp4"), S.clip("B.mp4")), axis="diagonal")
    with pytest.raises(MediaError, match="2 parts but 1 gains"):
        S.Stack((S.clip("R.mp4"), S.clip("B.mp4")), gains=(1.0,))
    out = materialize(S.stack(S.clip("R.mp4"), S.clip("B.mp4")), root, tmp_path / "split.mp4")
    info = probe(out)
    assert (info.height, info.width) == (96, 48) and info.has_audio
    back = decode(S.clip("split.mp4"), tmp_path, frames=FramePolicy(num_frames=1))
    assert _colour(back.frames[0, 10, 24]) == RED and _colour(back.frames[0, 80, 24]) == BLUE


@pytest.mark.parametrize("shift", [3.0, -2.0])
def test_shift_audio_plays_the_track_shifted(root, shift):
    spec = S.shift_audio(S.clip("RAMP.mp4", 4.0, 6.0), shift)
    assert spec.audio == S.Source("RAMP.mp4", 4.0 + shift, 6.0 + shift) and spec.video == S.clip(
        "RAMP.mp4", 4, 6
    )
    m = decode(spec, root, frames=FramePolicy(num_frames=2))
    assert m.duration == pytest.approx(2.0) and m.audio.shape == (2 * SR,)
    # the ramp's amplitude at local second 0.5 says which second of the file is heard: 4.5 + shift
    heard = np.abs(m.audio[int(0.25 * SR) : int(0.75 * SR)]).mean() / 0.8 * 10
    assert heard == pytest.approx(4.5 + shift, abs=0.2)
    with pytest.raises(MediaError, match="before the file"):
        S.shift_audio(S.clip("RAMP.mp4", 1.0, 3.0), -2.0)
    with pytest.raises(MediaError, match="explicit end"):
        S.shift_audio(S.clip("RAMP.mp4"), 1.0)


def test_a_mask_inside_a_stack_blanks_only_its_own_band(root):
    """Both MediaSpec ops together (i45's Mask, i42's Stack): the masked part keeps its band and size, black over
    the span; the other band and the mixed audio outside the span are untouched."""
    masked = S.mask(S.clip("R.mp4"), [(1.0, 2.0)], audio=False)
    spec = S.stack(masked, S.clip("B.mp4"))
    m = decode(spec, root, frames=FramePolicy(num_frames=3))  # frames at 0.5, 1.5, 2.5 s
    assert m.frames.shape == (3, 96, 48, 3)  # the Mask keeps R's 32x48 band
    assert [_colour(m.frames[k, 16, 24]) for k in range(3)] == [RED, (0, 0, 0), RED]
    assert [_colour(m.frames[k, 60, 24]) for k in range(3)] == [BLUE, BLUE, (0, 0, 0)]
    plain = decode(S.stack(S.clip("R.mp4"), S.clip("B.mp4")), root, frames=None).audio
    np.testing.assert_allclose(m.audio, plain, atol=1e-6)  # video-only mask: the sound is unchanged
    back = decode(S.mask(spec, [(0.0, 1.0)], video=True, audio=False), root, frames=FramePolicy(num_frames=3))
    assert _colour(back.frames[0, 16, 24]) == (0, 0, 0) and _colour(back.frames[0, 60, 24]) == (0, 0, 0)
    assert _colour(back.frames[1, 60, 24]) == BLUE
