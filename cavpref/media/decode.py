"""Decode a MediaSpec into frames and audio, reading only what the sampling policy needs.

``decode`` plans the spec's timeline (``cavpref.media.timeline``: which file range plays where), samples
frame times on that timeline, maps each to (file, local time), and reads only those frames — grouped
by file, with seeks (``cavpref.media.backends``). Audio is each leaf range resampled to the target rate
and mixed into place. Nothing is re-encoded; nothing outside the sampled frames is converted to RGB.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from cavpref.media.backends import read_audio, read_frames, resolve_backend
from cavpref.media.probe import probe
from cavpref.media.spec import MediaError, MediaSpec, from_json, resolve_path
from cavpref.media.timeline import build_plan, covering, frame_times


@dataclass(frozen=True)
class FramePolicy:
    """Which frames to read: ``num_frames`` uniform frames, or ``fps`` capped at ``max_frames``
    (then uniform). ``size=(height, width)`` resizes; None keeps the source size."""

    num_frames: int | None = 8
    fps: float | None = None
    max_frames: int = 32
    size: tuple[int, int] | None = None


@dataclass
class DecodedMedia:
    """What a model sees. A missing stream is ``None`` — never silent zeros — so model I/Os decide how
    to feed it."""

    frames: np.ndarray | None  # (T, H, W, 3) uint8
    frame_times: np.ndarray | None  # (T,) seconds on the spec's timeline
    audio: np.ndarray | None  # (N,) float32 mono
    sample_rate: int
    duration: float

    @property
    def has_video(self) -> bool:
        return self.frames is not None

    @property
    def has_audio(self) -> bool:
        return self.audio is not None


def decode(
    spec: MediaSpec | str,
    root: str | os.PathLike,
    *,
    frames: FramePolicy | None = FramePolicy(),
    sample_rate: int = 16000,
    backend: str = "auto",
) -> DecodedMedia:
    """Decode ``spec`` (a MediaSpec or its JSON) with media paths under ``root``.

    Frames are sampled on the spec's timeline by ``frames`` (None: skip video decoding) and read with
    seeks from the files that show them; audio is every leaf range resampled to ``sample_rate`` mono
    float32 and mixed into place. A stream that no part provides is None; gaps inside a present stream
    are black frames / silence (see ``cavpref.media.timeline`` for the rules per node).
    """
    if isinstance(spec, str):
        spec = from_json(spec)
    if not isinstance(sample_rate, int) or sample_rate <= 0:
        raise MediaError(f"sample_rate must be a positive int, got {sample_rate!r}")
    resolve_backend(backend)
    plan = build_plan(spec, _lookup(root))
    video = times = None
    if frames is not None and plan.video is not None:
        times = frame_times(plan.duration, frames.num_frames, frames.fps, frames.max_frames)
        video = _decode_video(plan.video, times, frames.size or plan.size, backend)
    audio = None if plan.audio is None else _decode_audio(plan.audio, plan.duration, sample_rate)
    return DecodedMedia(
        frames=video,
        frame_times=None if video is None else times,
        audio=audio,
        sample_rate=sample_rate,
        duration=plan.duration,
    )


def _lookup(root):
    def lookup(path: str):
        full = resolve_path(root, path)
        return full, probe(full)

    return lookup


# Decode budget: pixels of one source frame (8K UHD). A 4.5 MB file of 12000 x 12000 frames would need 432 MB
# of RGB per frame (GBs for a clip) before any resize; it is refused, naming the file and its frame size.
MAX_FRAME_PIXELS = 7680 * 4320


def _check_budget(pieces) -> None:
    for piece in pieces:
        w, h = piece.info.width or 0, piece.info.height or 0
        if w * h > MAX_FRAME_PIXELS:
            mb = os.path.getsize(piece.file) / 1e6
            raise MediaError(
                f"{piece.file} ({mb:.1f} MB): video frames of {w}x{h} = {w * h / 1e6:.1f} M pixels exceed the "
                f"decode budget of {MAX_FRAME_PIXELS / 1e6:.1f} M pixels per frame "
                f"(cavpref.media.decode.MAX_FRAME_PIXELS, 8K UHD); downscale the video first"
            )


def _decode_video(pieces, times, size, backend) -> np.ndarray:
    """``size``: the plan's natural size unless the policy sets one (the first video part's size, other
    files resized to it; a Stack's bands side by side); gaps are black."""
    _check_budget(pieces)  # before any frame is decoded or any buffer allocated
    if size is None or len(size) != 2 or min(size) < 1:
        raise MediaError(f"FramePolicy.size must be (height, width) with positive ints, got {size!r}")
    h, w = int(size[0]), int(size[1])
    out = np.zeros((len(times), h, w, 3), dtype=np.uint8)
    groups: dict = {}  # (file, region) -> frames to read there: one pass with seeks per file and band
    for k, t in enumerate(times):
        for piece, local in covering(pieces, float(t)):
            if piece.blank:  # a Mask span shows black
                continue
            g = groups.setdefault((piece.file, piece.region), (piece.info, [], []))
            g[1].append(k)
            g[2].append(local)
    for (file, region), (info, idx, local) in groups.items():
        y0, y1 = round(region[0] * h), round((region[0] + region[2]) * h)
        x0, x1 = round(region[1] * w), round((region[1] + region[3]) * w)
        if y1 > y0 and x1 > x0:
            frames = read_frames(file, info, np.asarray(local), backend)
            out[idx, y0:y1, x0:x1] = resize_frames(frames, (y1 - y0, x1 - x0))
    return out


def _decode_audio(pieces, duration: float, sample_rate: int) -> np.ndarray:
    total = round(duration * sample_rate)
    out = np.zeros(total, dtype=np.float32)
    for p in pieces:
        n0 = round(p.at * sample_rate)
        n = min(round(p.length * sample_rate), total - n0)
        if n > 0 and not p.blank:  # a Mask span stays silent
            out[n0 : n0 + n] += np.float32(p.gain) * read_audio(p.file, p.info, p.src_start, n, sample_rate)
    return out


def resize_frames(frames: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Resize (T, H, W, 3) uint8 to ``size=(height, width)``: bilinear with antialiasing (torch), the
    same function for both backends so their outputs stay comparable. No aspect-ratio preservation."""
    if frames.shape[1:3] == tuple(size):
        return frames
    import torch
    import torch.nn.functional as F

    x = torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2).contiguous()
    y = F.interpolate(x, size=tuple(size), mode="bilinear", antialias=True, align_corners=False)
    return y.permute(0, 2, 3, 1).contiguous().numpy()
