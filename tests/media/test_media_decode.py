"""Decoding real mp4s (written with write_mp4): colours per second tell which file and which second a
frame came from; a sine of known frequency per clip tells whose audio plays where."""

import os
import shutil

import numpy as np
import pytest

from cavpref.media import backends
from cavpref.media import spec as S
from cavpref.media.decode import FramePolicy, decode
from cavpref.media.materialize import materialize
from cavpref.media.probe import _probe, probe
from cavpref.media.spec import MediaError
from cavpref.media.write import write_mp4

SR = 16000
RED, GREEN, BLUE, YELLOW, MAGENTA, WHITE, BLACK = (
    (255, 0, 0),
    (0, 255, 0),
    (0, 0, 255),
    (255, 255, 0),
    (255, 0, 255),
    (255, 255, 255),
    (0, 0, 0),
)


def _video(colours, fps, hw):
    frames = np.zeros((len(colours) * fps, *hw, 3), np.uint8)
    for i, c in enumerate(colours):
        frames[i * fps : (i + 1) * fps] = c
    return frames


def _sine(freq, seconds, sr, amp=0.5):
    return (amp * np.sin(2 * np.pi * freq * np.arange(int(seconds * sr)) / sr)).astype(np.float32)


@pytest.fixture(scope="session")
def root(tmp_path_factory):
    """A: 3 s red/green/blue 48x64, 440 Hz @16 kHz. B: 2 s yellow/magenta 32x40, 1000 Hz @44.1 kHz.
    V: video only. S: audio only (2500 Hz). L: 60 s, 4 fps, GOP 3 s (for seeking). bad: not media."""
    d = tmp_path_factory.mktemp("media")
    write_mp4(d / "A.mp4", _video([RED, GREEN, BLUE], 8, (48, 64)), 8, _sine(440, 3, SR), SR)
    write_mp4(d / "B.mp4", _video([YELLOW, MAGENTA], 8, (32, 40)), 8, _sine(1000, 2, 44100), 44100)
    write_mp4(d / "W48.mp4", _video([GREEN, RED], 4, (32, 48)), 4, None)  # width 48: decord 0.6 fails
    write_mp4(d / "sub/V.mp4", _video([WHITE, BLACK], 8, (48, 64)), 8, None)
    write_mp4(d / "S.mp4", None, 8, _sine(2500, 2, SR), SR)
    levels = [(v, v, v) for v in np.arange(60) * 4]  # second k has grey level 4k
    write_mp4(d / "L.mp4", _video(levels, 4, (32, 32)), 4, None, gop=12)
    (d / "bad.mp4").write_bytes(os.urandom(4096))
    (d / "empty.mp4").write_bytes(b"")
    return d


def colours(frames):
    return [tuple(round(v / 255.0) * 255 for v in f[f.shape[0] // 2, f.shape[1] // 2]) for f in frames]


def peak_hz(x, sr=SR):
    spec = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return np.argmax(spec) * sr / len(x)


def test_source_frames_audio_and_times(root):
    for backend in ("decord", "pyav"):
        m = decode(S.clip("A.mp4"), root, frames=FramePolicy(num_frames=6), backend=backend)
        assert m.frames.shape == (6, 48, 64, 3) and m.frames.dtype == np.uint8
        assert colours(m.frames) == [RED, RED, GREEN, GREEN, BLUE, BLUE]
        np.testing.assert_allclose(m.frame_times, [0.25, 0.75, 1.25, 1.75, 2.25, 2.75])
        assert m.duration == pytest.approx(3.0, abs=0.01) and m.sample_rate == SR
        assert m.audio.dtype == np.float32 and m.audio.shape == (round(m.duration * SR),)
        assert peak_hz(m.audio) == pytest.approx(440, abs=2)
        assert abs(_phase(m.audio, 440)) < 2 * np.pi * 440 * 0.5 / SR  # starts in phase: no offset
        assert np.sqrt(np.mean(m.audio[SR // 2 : -SR // 2] ** 2)) == pytest.approx(0.5 / np.sqrt(2), rel=0.05)


def test_subrange_and_json_input(root):
    m = decode(S.to_json(S.clip("A.mp4", 1.0, 2.5)), root, frames=FramePolicy(num_frames=3))
    assert m.duration == 1.5 and colours(m.frames) == [GREEN, GREEN, BLUE]  # local 1.25, 1.75, 2.25


def _phase(x, freq, sr=SR):
    """Phase of the ``freq`` component by a least-squares sine fit."""
    t = np.arange(len(x)) / sr
    basis = np.stack([np.sin(2 * np.pi * freq * t), np.cos(2 * np.pi * freq * t)], 1)
    (a, b), *_ = np.linalg.lstsq(basis, x, rcond=None)
    return np.arctan2(b, a)


def test_audio_subrange_is_aligned_after_seek(root):
    full = decode(S.clip("A.mp4"), root, frames=None).audio
    sub = decode(S.clip("A.mp4", 1.3, 2.6), root, frames=None).audio  # seeks (start > preroll)
    np.testing.assert_array_equal(sub, full[int(1.3 * SR) : int(1.3 * SR) + len(sub)])  # 16 kHz: exact
    # 44.1 kHz source: the resampler's output grid starts at the seeked packet → within half a sample
    full_b = decode(S.clip("B.mp4"), root, frames=None).audio
    sub_b = decode(S.clip("B.mp4", 0.77, 1.9), root, frames=None).audio
    ref = full_b[int(0.77 * SR) : int(0.77 * SR) + len(sub_b)]
    shift = (_phase(sub_b, 1000) - _phase(ref, 1000) + np.pi) % (2 * np.pi) - np.pi
    assert abs(shift / (2 * np.pi * 1000)) <= 0.5 / SR + 1e-6


def test_mvit_takes_video_of_b_and_audio_of_a(root):
    m = decode(
        S.combine(video=S.clip("B.mp4"), audio=S.clip("A.mp4")), root, frames=FramePolicy(num_frames=4)
    )
    assert m.duration == pytest.approx(2.0, abs=0.01)  # the video part's duration
    assert m.frames.shape[1:3] == (32, 40) and colours(m.frames) == [YELLOW, YELLOW, MAGENTA, MAGENTA]
    assert len(m.audio) == 2 * SR and peak_hz(m.audio) == pytest.approx(440, abs=2)


def test_mait_pads_short_audio_with_silence(root):
    m = decode(S.combine(video=S.clip("A.mp4"), audio=S.clip("B.mp4")), root)
    assert m.duration == pytest.approx(3.0, abs=0.01) and len(m.frames) == 8
    assert peak_hz(m.audio[: 2 * SR]) == pytest.approx(1000, abs=2)  # resampled from 44.1 kHz
    assert np.abs(m.audio[int(2.05 * SR) :]).max() < 1e-3


def test_concat_duration_is_sum_and_parts_in_order(root):
    m = decode(S.concat(S.clip("A.mp4"), S.clip("B.mp4")), root, frames=FramePolicy(num_frames=10))
    assert m.duration == pytest.approx(5.0, abs=0.02)
    assert m.frames.shape[1:3] == (48, 64)  # the first video part's size; B is resized to it
    assert colours(m.frames) == [RED, RED, GREEN, GREEN, BLUE, BLUE, YELLOW, YELLOW, MAGENTA, MAGENTA]
    assert peak_hz(m.audio[: 3 * SR]) == pytest.approx(440, abs=2)
    assert peak_hz(m.audio[3 * SR :]) == pytest.approx(1000, abs=2)


def test_overlay_audio_is_gain_weighted_sum(root):
    a = decode(S.clip("A.mp4"), root, frames=None).audio
    b = decode(S.clip("B.mp4"), root, frames=None).audio
    m = decode(S.overlay(S.clip("A.mp4"), S.clip("B.mp4"), gains=(1.0, 0.5)), root, frames=FramePolicy(3))
    assert m.duration == pytest.approx(3.0, abs=0.01) and colours(m.frames) == [RED, GREEN, BLUE]
    expected = a.copy()
    expected[: len(b)] += 0.5 * b
    np.testing.assert_allclose(m.audio, expected, atol=1e-6)
    spec = np.abs(np.fft.rfft(m.audio[: 2 * SR])) / SR  # amplitude per bin (0.5 Hz bins)
    assert spec[880] == pytest.approx(0.5, rel=0.1) and spec[2000] == pytest.approx(0.25, rel=0.1)
    # video from the shorter part: black once it ends
    m2 = decode(S.overlay(S.clip("B.mp4"), S.clip("A.mp4"), video=0), root, frames=FramePolicy(3))
    assert m2.duration == pytest.approx(3.0, abs=0.01) and colours(m2.frames) == [YELLOW, MAGENTA, BLACK]


def test_missing_streams_are_none(root):
    mat = decode(S.mute(S.clip("A.mp4")), root)
    assert mat.audio is None and not mat.has_audio and mat.frames is not None
    mvt = decode(S.drop_video(S.clip("A.mp4")), root)
    assert mvt.frames is None and mvt.frame_times is None and mvt.audio is not None
    assert decode(S.clip("sub/V.mp4"), root).audio is None
    assert decode(S.clip("S.mp4"), root).frames is None
    assert decode(S.clip("A.mp4"), root, frames=None).frames is None  # skipped on request
    assert decode(S.concat(S.mute(S.clip("A.mp4")), S.clip("sub/V.mp4")), root).audio is None


def test_concat_gaps_are_silence_and_black(root):
    m = decode(S.concat(S.mute(S.clip("A.mp4")), S.clip("S.mp4")), root, frames=FramePolicy(num_frames=5))
    assert m.audio is not None and np.all(m.audio[: 3 * SR] == 0)
    assert peak_hz(m.audio[3 * SR :]) == pytest.approx(2500, abs=2)
    assert colours(m.frames) == [RED, GREEN, BLUE, BLACK, BLACK]  # S has no video: black, video kept


def test_frame_policy_fps_cap_and_size(root):
    m = decode(S.clip("A.mp4"), root, frames=FramePolicy(num_frames=None, fps=2.0, size=(24, 32)))
    assert m.frames.shape == (6, 24, 32, 3) and colours(m.frames) == [RED, RED, GREEN, GREEN, BLUE, BLUE]
    capped = decode(S.clip("A.mp4"), root, frames=FramePolicy(fps=8.0, max_frames=3))
    np.testing.assert_allclose(capped.frame_times, [0.5, 1.5, 2.5])


def test_backends_agree(root):
    spec = S.concat(S.clip("A.mp4", 0.5), S.clip("B.mp4"), S.clip("L.mp4", 10.0, 12.0))
    d = decode(spec, root, frames=FramePolicy(num_frames=16), backend="decord")
    p = decode(spec, root, frames=FramePolicy(num_frames=16), backend="pyav")
    assert backends.resolve_backend("auto") == "pyav"  # the default by measurement (scripts/bench_media.py)
    assert np.abs(d.frames.astype(int) - p.frames.astype(int)).mean() < 2.0
    np.testing.assert_allclose(d.audio, p.audio, atol=1e-6)


def test_seeking_decodes_a_fraction_of_a_long_video(root):
    import av

    times = [7.5, 7.9, 22.5, 37.5, 52.5]  # 7.9: same GOP as 7.5, decoded forward without a seek
    with av.open(str(root / "L.mp4")) as c:
        reader = backends._SeekingReader(c, c.streams.video[0], probe(root / "L.mp4"))
        levels = [int(reader.frame_at(t).to_ndarray(format="rgb24")[16, 16, 0]) for t in times]
    assert levels == pytest.approx([28, 28, 88, 148, 208], abs=3)  # grey level 4 * second
    assert reader.seeks == 4 and reader.decoded <= 4 * 13  # ≤ one GOP each, not 240 frames
    m = decode(S.clip("L.mp4"), root, frames=FramePolicy(num_frames=4), backend="decord")
    assert [int(f[16, 16, 0]) for f in m.frames] == pytest.approx([28, 88, 148, 208], abs=3)


def test_probe_is_cached_per_file_version(root, tmp_path):
    probe(root / "A.mp4")
    hits = _probe.cache_info().hits
    decode(S.concat(S.clip("A.mp4"), S.clip("A.mp4", 1.0)), root, frames=FramePolicy(2))
    assert _probe.cache_info().hits >= hits + 2
    f = tmp_path / "x.mp4"
    shutil.copy(root / "A.mp4", f)
    assert probe(f).has_audio
    write_mp4(f, _video([RED], 8, (16, 16)), 8, None)  # rewritten in place: probed again
    assert not probe(f).has_audio and probe(f).duration == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize(
    "spec, match",
    [
        (S.clip("nope.mp4"), "nope.mp4: media file not found"),
        (S.clip("bad.mp4"), "bad.mp4: corrupt or unsupported"),
        (S.clip("empty.mp4"), "empty.mp4: zero-length clip"),
        (
            S.combine(video=S.clip("A.mp4"), audio=S.clip("sub/V.mp4")),
            "sub/V.mp4: Combine audio part has no audio",
        ),
        (S.combine(video=S.clip("S.mp4"), audio=S.clip("A.mp4")), "S.mp4: Combine video part has no video"),
        (S.clip("A.mp4", 1.0, 9.0), "A.mp4: time range .* outside the clip"),
        (S.clip("A.mp4", 4.0), "A.mp4: time range .* outside the clip"),
    ],
)
def test_bad_input_names_the_file(root, spec, match):
    with pytest.raises(MediaError, match=match):
        decode(spec, root)


def test_symlink_escape_is_refused(root, tmp_path):
    link_root = tmp_path / "r"
    link_root.mkdir()
    os.symlink(root / "A.mp4", link_root / "A.mp4")
    with pytest.raises(MediaError, match="outside the data root"):
        decode(S.clip("A.mp4"), link_root)


def test_auto_is_pyav_and_reads_what_decord_cannot(root, caplog):
    # decord 0.6 cannot return frames of some widths (16, 24, 48, 72 px); the default (PyAV) never touches it
    with pytest.raises(MediaError, match="W48.mp4: decord failed"):
        decode(S.clip("W48.mp4"), root, frames=FramePolicy(2), backend="decord")
    with caplog.at_level("WARNING", logger="cavpref.media.backends"):
        m = decode(S.clip("W48.mp4"), root, frames=FramePolicy(2), backend="auto")
    assert colours(m.frames) == [GREEN, RED] and "decord" not in caplog.text


def test_backend_choice_without_decord(root, monkeypatch):
    monkeypatch.setitem(backends._decord_state, "ok", False)
    assert backends.resolve_backend("auto") == "pyav"
    with pytest.raises(MediaError, match="decord cannot be imported"):
        decode(S.clip("A.mp4"), root, backend="decord")
    assert colours(decode(S.clip("A.mp4"), root, frames=FramePolicy(3)).frames) == [RED, GREEN, BLUE]
    with pytest.raises(ValueError, match="backend must be one of"):
        decode(S.clip("A.mp4"), root, backend="ffmpeg")


def test_materialize_writes_a_playable_mp4(root, tmp_path):
    out = materialize(S.concat(S.clip("A.mp4", 1.0), S.clip("B.mp4")), root, tmp_path / "o" / "cot.mp4")
    info = probe(out)
    assert info.has_video and info.has_audio and info.fps == 8.0 and (info.height, info.width) == (48, 64)
    assert info.duration == pytest.approx(4.0, abs=0.1)
    m = decode(S.clip("cot.mp4"), tmp_path / "o", frames=FramePolicy(num_frames=4))
    assert colours(m.frames) == [GREEN, BLUE, YELLOW, MAGENTA]
    assert peak_hz(m.audio[: 2 * SR]) == pytest.approx(440, abs=2)
    assert peak_hz(m.audio[2 * SR : 4 * SR]) == pytest.approx(1000, abs=2)
    muted = probe(materialize(S.mute(S.clip("A.mp4")), root, tmp_path / "mat.mp4", fps=4, size=(16, 16)))
    assert not muted.has_audio and muted.fps == 4.0 and (muted.height, muted.width) == (16, 16)
    assert not probe(materialize(S.drop_video(S.clip("A.mp4")), root, tmp_path / "mvt.mp4")).has_video
