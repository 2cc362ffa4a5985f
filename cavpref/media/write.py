"""Write real mp4 files (H.264 video + AAC audio) with PyAV: test media, the synthetic world, materialize."""

from __future__ import annotations

import ctypes
import functools
import os
import threading
from contextlib import contextmanager
from fractions import Fraction

import numpy as np

_M_PERTURB = -6  # glibc <malloc.h>
_heap_lock = threading.Lock()
_heap_users = 0


@functools.cache
def _mallopt():
    try:
        return getattr(ctypes.CDLL(None), "mallopt", None)
    except (OSError, TypeError):  # no C library to open by that name (Windows)
        return None


@contextmanager
def zeroed_allocations():
    """While inside, new glibc allocations start as zeros (``mallopt(M_PERTURB, 0xff)``); a no-op where the C
    library has no ``mallopt``.

    Why: libx264's macroblock-tree rate control (on in the "veryfast" preset used here; off with
    ``mbtree=0``, which would change every file) reads memory it never wrote. Leftover bytes 0x00, 0x01, 0x7f,
    0x80 or 0xaa there change nothing; runs of 0xff (NaN as floats; freed frames' white pixels leave them)
    change how a block is coded. So the same frames encoded in a long-lived process (the test suite, a
    notebook) now and then gave another file than a fresh process does (scripts/repeat_world.py;
    docs/synthetic_world.md). Inside the guard every process writes the fresh process's bytes
    (tests/test_media_write.py fills the heap with 0xff to show the fault and the fix). Reference-counted,
    so threads that encode at once keep it on until the last one leaves.
    """
    global _heap_users
    mallopt = _mallopt()
    if mallopt is None:
        yield
        return
    with _heap_lock:
        _heap_users += 1
        if _heap_users == 1:
            mallopt(_M_PERTURB, 0xFF)
    try:
        yield
    finally:
        with _heap_lock:
            _heap_users -= 1
            if _heap_users == 0:
                mallopt(_M_PERTURB, 0)


def write_mp4(
    path: str | os.PathLike,
    frames: np.ndarray | None,
    fps: float,
    audio: np.ndarray | None = None,
    sample_rate: int = 16000,
    *,
    crf: int = 18,
    gop: int = 12,
) -> None:
    """Write ``frames`` (T, H, W, 3) uint8 at ``fps`` and mono float32 ``audio`` in [-1, 1].

    Either stream may be None (an mp4 with only audio, or only video). H and W must be even (yuv420p).
    A short GOP keeps seeks cheap, which the frame sampler relies on.
    """
    import av

    if frames is None and audio is None:
        raise ValueError(f"{path}: nothing to write (no frames and no audio)")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with zeroed_allocations(), av.open(str(path), mode="w", format="mp4") as container:
        vstream = astream = None
        if frames is not None:
            frames = np.ascontiguousarray(frames, dtype=np.uint8)
            _, h, w, c = frames.shape
            if c != 3 or h % 2 or w % 2:
                raise ValueError(f"{path}: frames must be (T, H, W, 3) with even H, W; got {frames.shape}")
            vstream = container.add_stream("libx264", rate=Fraction(fps).limit_denominator(1000))
            vstream.width, vstream.height, vstream.pix_fmt = w, h, "yuv420p"
            vstream.options = {"crf": str(crf), "g": str(gop), "preset": "veryfast", "bf": "0"}
            # one thread for libx264 and for PyAV's RGB -> YUV conversion (which takes the codec's thread
            # count; 0 = auto), so the file does not depend on the machine's cores either
            vstream.codec_context.thread_count = 1
        if audio is not None:
            audio = np.asarray(audio, dtype=np.float32).reshape(-1)
            astream = container.add_stream("aac", rate=sample_rate)
            astream.layout = "mono"
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
