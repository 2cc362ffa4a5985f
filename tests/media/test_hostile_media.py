"""Second hostile-input pass (issue 40, #17), decode budgets: a 4-s clip whose container header claims 10 h
decoded to copies of its last frame and a 2.3 GB audio buffer; a small file of 12000 x 12000 frames needed
> 4 GB and the error named neither file nor size. The header's duration is checked against the streams'
packets, and the frame size against a pixel budget before anything is decoded. Real files (PyAV)."""

from __future__ import annotations

import importlib
import struct

import av
import numpy as np
import pytest

from cavpref.media.decode import FramePolicy, decode
from cavpref.media.probe import clear_cache, probe
from cavpref.media.spec import MediaError, clip

decode_module = importlib.import_module("cavpref.media.decode")  # the package's `decode` is the function


def write_mkv(path, seconds: int = 4, fps: int = 4, size: int = 64) -> None:
    """A Matroska clip of ``seconds``: frame k is grey level 15*k (so each frame is recognisable), a tone."""
    with av.open(str(path), "w", format="matroska") as c:
        v = c.add_stream("libx264", rate=fps)
        v.width = v.height = size
        v.pix_fmt = "yuv420p"
        a = c.add_stream("aac", rate=16000)
        a.layout = "mono"
        for k in range(seconds * fps):
            frame = av.VideoFrame.from_ndarray(np.full((size, size, 3), 15 * k, np.uint8), format="rgb24")
            for p in v.encode(frame):
                c.mux(p)
        for p in v.encode():
            c.mux(p)
        t = np.arange(seconds * 16000) / 16000
        tone = (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
        for i in range(0, len(tone), 1024):
            f = av.AudioFrame.from_ndarray(tone[None, i : i + 1024], format="fltp", layout="mono")
            f.sample_rate, f.pts = 16000, i
            for p in a.encode(f):
                c.mux(p)
        for p in a.encode():
            c.mux(p)


def claim_duration(path, seconds: float) -> None:
    """Rewrite the Matroska Segment Info ``Duration`` (EBML id 0x4489, in milliseconds) in place."""
    data = bytearray(path.read_bytes())
    at = data.find(b"\x44\x89")
    size = data[at + 2] & 0x7F
    fmt = ">d" if size == 8 else ">f"
    data[at + 3 : at + 3 + size] = struct.pack(fmt, seconds * 1000)
    path.write_bytes(bytes(data))


def test_a_header_claiming_10_hours_is_checked_against_the_streams(tmp_path):
    honest, liar = tmp_path / "honest.mkv", tmp_path / "liar.mkv"
    write_mkv(honest)
    write_mkv(liar)
    claim_duration(liar, 10 * 3600)
    clear_cache()
    with av.open(str(liar)) as c:
        assert c.duration / 1e6 == pytest.approx(36000)  # what the header says
    assert probe(liar).duration == pytest.approx(4.0, abs=0.1)  # what the streams hold
    assert probe(honest).duration == pytest.approx(4.0, abs=0.1)
    got = decode(clip("liar.mkv"), tmp_path, frames=FramePolicy(num_frames=4))
    want = decode(clip("honest.mkv"), tmp_path, frames=FramePolicy(num_frames=4))
    assert abs(got.audio.size - want.audio.size) < 1000 and got.audio.size < 16000 * 5  # not 10 h (2.3 GB)
    assert len({int(x) for x in got.frames[:, 32, 32, 0]}) == 4  # four frames, not four copies of the last
    assert np.array_equal(got.frames[:3], want.frames[:3])


def test_frames_over_the_pixel_budget_are_refused_before_decoding_naming_file_and_size(tmp_path, monkeypatch):
    write_mkv(tmp_path / "big.mkv", seconds=1, size=96)
    clear_cache()
    monkeypatch.setattr(decode_module, "MAX_FRAME_PIXELS", 64 * 64)  # 96 x 96 plays 12000 x 12000 here
    monkeypatch.setattr(
        decode_module, "read_frames", lambda *a, **k: pytest.fail("decoded before the budget was checked")
    )
    with pytest.raises(MediaError) as err:
        decode(clip("big.mkv"), tmp_path, frames=FramePolicy(num_frames=2))
    message = str(err.value)
    assert "big.mkv" in message and "96x96" in message and "MB" in message and "MAX_FRAME_PIXELS" in message
    audio_only = decode(clip("big.mkv"), tmp_path, frames=None)  # the audio alone is within budget
    assert audio_only.frames is None and audio_only.audio is not None


def test_the_default_budget_refuses_12000_squared_frames():
    assert 7680 * 4320 == decode_module.MAX_FRAME_PIXELS < 12000 * 12000
