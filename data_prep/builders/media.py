"""What the builders measure on a video before any model sees it: loudness per second, scene changes,
a content signature — and how they pick a clip window from that.

``scan`` walks a video in chunks (a minute by default) through ``cavpref.media.decode``: the audio of each
chunk at 16 kHz mono and, when asked, frames at ``fps`` downscaled to a small size, so a two-hour video
costs a few thousand small frames and never sits in memory whole. The rest are pure functions over the
scan (tested with hand-computed numbers):

* ``mean_volume_db``: 10 log10 of the mean squared sample (dBFS, what ffmpeg's ``volumedetect`` calls
  ``mean_volume``; ours is on the 16 kHz mono mix). TraceAV-Bench drops videos under -50 dB.
* ``transitions``: consecutive sampled frames whose mean absolute difference (0-255 levels) exceeds a
  threshold are a scene change (TraceAV-Bench drops videos with fewer than 3).
* ``best_window``: the ``length``-second window with the most sound energy (AURA trims its clips by activity).
* ``signature``: an average hash of three frames, for finding re-encoded copies.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from cavpref.media.decode import DecodedMedia, FramePolicy, decode
from cavpref.media.probe import probe
from cavpref.media.spec import Combine, MediaSpec, Source, resolve_path

SAMPLE_RATE = 16000


@dataclass(frozen=True)
class Scan:
    """``power[k]``: mean squared sample of second k (None without audio); ``diffs[k]``: mean absolute
    difference between sampled frames k and k+1 (None without video or frames not asked for)."""

    duration: float
    has_video: bool
    has_audio: bool
    power: list[float] | None
    diffs: list[float] | None
    signature: str | None


def scan(
    rel: str,
    root: str | os.PathLike,
    *,
    frames: bool,
    fps: float = 1.0,
    size: tuple[int, int] = (32, 32),
    chunk_s: float = 60.0,
) -> Scan:
    """Scan ``rel`` (a path under ``root``) chunk by chunk; see the module docstring."""
    info = probe(resolve_path(root, rel))
    duration = info.duration
    power_sum: list[float] = []
    sampled: list[np.ndarray] = []
    start = 0.0
    while start < duration - 1e-6:
        end = min(duration, start + chunk_s)
        policy = None
        if frames and info.has_video:
            n = max(1, math.floor((end - start) * fps + 0.5))
            policy = FramePolicy(num_frames=None, fps=fps, max_frames=n, size=size)
        m = decode(Source(rel, start, end), root, frames=policy, sample_rate=SAMPLE_RATE)
        if m.audio is not None:
            x = m.audio.astype(np.float64)
            for k in range(0, len(x), SAMPLE_RATE):
                power_sum.append(float(np.mean(x[k : k + SAMPLE_RATE] ** 2)))
        if m.frames is not None:
            sampled.extend(m.frames)
        start = end
    diffs = signature = None
    if frames and sampled:
        stack = np.stack(sampled).astype(np.float32)
        diffs = [float(d) for d in np.abs(np.diff(stack, axis=0)).mean(axis=(1, 2, 3))]
        signature = average_hash([sampled[len(sampled) * k // 4] for k in (1, 2, 3)])
    return Scan(
        duration, info.has_video, info.has_audio, power_sum if info.has_audio else None, diffs, signature
    )


def mean_volume_db(power: list[float] | None) -> float:
    """dBFS of the mean squared sample over the whole track (per-second means weighted equally; the last,
    shorter second too); -inf for silence or no audio."""
    if not power:
        return -math.inf
    mean = sum(power) / len(power)
    return 10.0 * math.log10(mean) if mean > 0 else -math.inf


def transitions(diffs: list[float] | None, threshold: float) -> int:
    """Scene changes: sampled frame pairs differing by more than ``threshold`` levels on average."""
    return sum(d > threshold for d in diffs or [])


def best_window(
    power: list[float] | None, duration: float, length: float, *, room_after: float = 0.0
) -> tuple[float, float]:
    """The ``length``-second window (whole-second starts) with the most sound energy that leaves
    ``room_after`` seconds of the file after it (an audio shift needs them); the whole usable file when it
    is shorter. Ties and silence: the earliest window."""
    usable = duration - room_after
    if usable <= 0:
        raise ValueError(f"a {duration:.2f} s video has no room for a {room_after} s shift")
    if usable <= length or not power:
        return 0.0, round(min(usable, length), 3)
    seconds = int(length)
    best, best_start = -1.0, 0
    for s in range(int(usable - length) + 1):
        energy = sum(power[s : s + seconds])
        if energy > best + 1e-15:
            best, best_start = energy, s
    return float(best_start), float(best_start) + length


def average_hash(frames: list[np.ndarray]) -> str:
    """Hex of the 8x8 average hash (grey level above the frame's mean) of each frame, joined."""
    out = []
    for f in frames:
        grey = f.astype(np.float32).mean(axis=2)
        h, w = grey.shape
        small = (
            grey[: h - h % 8, : w - w % 8].reshape(8, (h - h % 8) // 8, 8, (w - w % 8) // 8).mean(axis=(1, 3))
        )
        bits = (small > small.mean()).flatten()
        out.append(f"{int(''.join('1' if b else '0' for b in bits), 2):016x}")
    return "-".join(out)


def for_role(spec: MediaSpec, root: str | os.PathLike, stream: str, frames: FramePolicy) -> DecodedMedia:
    """What a captioner hears or sees of ``spec``: only its video (``stream="video"``, frames by ``frames``)
    or only its audio (``"audio"``), so a visual captioner is never told by the sound track and vice versa."""
    if stream == "video":
        return decode(Combine(video=spec, audio=None), root, frames=frames, sample_rate=SAMPLE_RATE)
    if stream == "audio":
        return decode(Combine(video=None, audio=spec), root, frames=None, sample_rate=SAMPLE_RATE)
    raise ValueError(f"stream must be 'video' or 'audio', got {stream!r}")


VIDEO_EXTENSIONS = (".mp4", ".mkv", ".mov", ".webm", ".avi")


def find_videos(
    root: str | os.PathLike, extensions: tuple[str, ...] | list[str] = VIDEO_EXTENSIONS
) -> list[str]:
    """Video files under ``root`` (symlinked folders not followed), as sorted POSIX paths relative to it;
    hidden files and folders are skipped."""
    root = os.fspath(root)
    wanted = tuple(e.lower() for e in extensions)
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            if not name.startswith(".") and name.lower().endswith(wanted):
                found.append(os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/"))
    return sorted(found)


def video_ids(paths: list[str]) -> dict[str, str]:
    """A readable id per relative path: the path without its extension, '/' and odd characters as '_'; ids
    that would collide get a short hash of their path."""
    import hashlib
    import re
    from collections import Counter

    base = {p: re.sub(r"[^A-Za-z0-9._-]+", "_", os.path.splitext(p)[0]) for p in paths}
    clashes = Counter(base.values())
    return {
        p: b if clashes[b] == 1 else f"{b}-{hashlib.sha1(p.encode()).hexdigest()[:6]}"
        for p, b in base.items()
    }
