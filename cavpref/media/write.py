"""Write real mp4 files (H.264 video + AAC audio) with PyAV: test media, the synthetic world, materialize."""

from __future__ import annotations

import os
from fractions import Fraction

import numpy as np

# libx264 settings of every file written here. ``mbtree=0`` switches off the macroblock-tree rate control that
# the "veryfast" preset turns on: its propagation runs in floating point through CPU-specific SIMD (FMA,
# AVX-512), so the same frames gave another file on a CPU with other instructions (243 of a 1,163-file world
# differ between libx264's AVX-512 and AVX2 code on one machine: scripts/world_across_cpus.py), and it read
# memory it never wrote (a heap holding 0xff changed a block). With it off, libx264's AVX-512, AVX2 and SSE4.2 code write the same bytes
# (docs/synthetic_world.md; tests/media/test_media_write.py).
X264_OPTIONS = {"crf": "18", "preset": "veryfast", "bf": "0", "x264-params": "mbtree=0"}


def write_mp4(
    path: str | os.PathLike,
    frames: np.ndarray | None,
    fps: float,
    audio: np.ndarray | None = None,
    sample_rate: int = 16000,
    *,
    crf: int = 18,
    gop: int = 12,
    audio_bit_rate: int | None = None,
) -> None:
    """Write ``frames`` (T, H, W, 3) uint8 at ``fps`` and mono float32 ``audio`` in [-1, 1].

    Either stream may be None (an mp4 with only audio, or only video). H and W must be even (yuv420p).
    A short GOP keeps seeks cheap, which the frame sampler relies on. ``audio_bit_rate`` (bits/s; None:
    the AAC encoder's default, about 70 kbit/s for 16 kHz mono) sizes the audio: the HTML report's clips
    are written at a low one to stay within their budget.
    """
    import av

    if frames is None and audio is None:
        raise ValueError(f"{path}: nothing to write (no frames and no audio)")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with av.open(str(path), mode="w", format="mp4") as container:
        vstream = astream = None
        if frames is not None:
            frames = np.ascontiguousarray(frames, dtype=np.uint8)
            _, h, w, c = frames.shape
            if c != 3 or h % 2 or w % 2:
                raise ValueError(f"{path}: frames must be (T, H, W, 3) with even H, W; got {frames.shape}")
            vstream = container.add_stream("libx264", rate=Fraction(fps).limit_denominator(1000))
            vstream.width, vstream.height, vstream.pix_fmt = w, h, "yuv420p"
            vstream.options = {**X264_OPTIONS, "crf": str(crf), "g": str(gop)}
            # one thread for libx264 and for PyAV's RGB -> YUV conversion (which takes the codec's thread
            # count; 0 = auto), so the file does not depend on the machine's cores either
            vstream.codec_context.thread_count = 1
        if audio is not None:
            audio = np.asarray(audio, dtype=np.float32).reshape(-1)
            astream = container.add_stream("aac", rate=sample_rate)
            astream.layout = "mono"
            if audio_bit_rate is not None:
                astream.bit_rate = int(audio_bit_rate)
        if vstream is not None:
            for img in frames:
                for packet in vstream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                    container.mux(packet)
            for packet in vstream.encode():
                container.mux(packet)
        if astream is not None:
            chunk = 1024
            for i in range(0, len(audio), chunk):
                block = audio[i : i + chunk]
                frame = av.AudioFrame.from_ndarray(block[None, :], format="fltp", layout="mono")
                frame.sample_rate = sample_rate
                frame.pts = i
                for packet in astream.encode(frame):
                    container.mux(packet)
            for packet in astream.encode():
                container.mux(packet)
