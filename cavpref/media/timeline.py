"""Flatten a MediaSpec tree into timeline pieces: which file range plays where, with which gain.

Decoding is then trivial and cheap: a frame time is looked up in the video pieces and read from one
file at one local time; the audio is the sum of the audio pieces, each placed at its offset. The
planner probes files (cached) but decodes nothing.

Semantics (one rule per node)
-----------------------------
* ``Source``: ``end - start`` (``end=None`` → the file's duration). A file without audio (video) gives
  no audio (video) pieces — the stream is *absent*, not silent.
* ``Combine(video=V, audio=A)``: duration of V if given, else of A; A's audio is truncated to that
  duration (shorter audio leaves silence). A Combine slot that is given but yields no stream (a file
  without audio in the audio slot) is an error: the spec asked for a stream the file does not have.
* ``Concat``: parts one after another; duration is the sum.
* ``Overlay``: all parts start at the same time; duration is the max; audio pieces carry
  ``gain * gain_i`` and are summed; video pieces come from ``parts[video]`` only.
* ``Mask``: the part's plan with its pieces cut at the spans; the pieces inside a span are marked
  ``blank`` for the masked streams (decoded as black frames / silence, never read), so the stream stays
  present with its size and duration.
* ``Stack``: like an Overlay for time and audio, but every part with video paints its own band of the
  frame (a piece's ``region``): bands follow the parts' frame sizes (``natural_size``) along the axis and
  span the whole frame across it, so a 112x112 over a 112x112 part is a 224x112 frame.

A stream is present in the result if at least one piece provides it; gaps in a present stream
(a muted part of a Concat, the tail of an Overlay's shorter video part) are silence / black frames.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from cavpref.media.probe import MediaInfo
from cavpref.media.spec import (
    Combine,
    Concat,
    Mask,
    MediaError,
    MediaSpec,
    Overlay,
    Source,
    Stack,
    sources,
    to_json,
)

# A Source ``end`` up to this far past the file's end is clamped (container durations are rounded;
# AudioSet segments say 10.000 s for 9.98 s files). Further out is an error.
RANGE_TOLERANCE = 0.1
FULL = (0.0, 0.0, 1.0, 1.0)  # a region: (top, left, height, width) as fractions of the frame


@dataclass(frozen=True)
class Piece:
    """``length`` seconds of ``file`` from local time ``src_start``, placed at ``at`` on the timeline; its
    frames fill ``region`` of the output frame (the whole frame except inside a ``Stack``)."""

    file: Path
    info: MediaInfo
    src_start: float
    at: float
    length: float
    gain: float = 1.0
    region: tuple[float, float, float, float] = FULL
    blank: bool = False  # inside a Mask span: black frames / silence, the file is not read


@dataclass(frozen=True)
class Plan:
    duration: float
    video: tuple[Piece, ...] | None  # None: no part provides video
    audio: tuple[Piece, ...] | None  # None: no part provides audio
    size: tuple[int, int] | None = None  # (height, width) of the frame: ``natural_size``


Lookup = Callable[[str], tuple[Path, MediaInfo]]


def build_plan(spec: MediaSpec, lookup: Lookup) -> Plan:
    """Plan ``spec``; ``lookup(relative_path) -> (resolved path, MediaInfo)`` (resolve + probe)."""
    duration, video, audio = _plan(spec, lookup, at=0.0, gain=1.0, window_end=math.inf)
    return Plan(
        duration,
        None if video is None else tuple(video),
        None if audio is None else tuple(audio),
        natural_size(spec, lookup) if video else None,
    )


def natural_size(spec: MediaSpec, lookup: Lookup) -> tuple[int, int] | None:
    """(height, width) of ``spec``'s frames at source resolution, None without video: a Source's own size, the
    first part with video of a Concat, the video part of a Combine / Overlay, a Mask's part, and a Stack's
    parts side by side (heights summed, widest width kept, for ``vertical``)."""
    if isinstance(spec, Source):
        info = lookup(spec.path)[1]
        return (info.height, info.width) if info.has_video and info.height and info.width else None
    if isinstance(spec, Combine):
        return None if spec.video is None else natural_size(spec.video, lookup)
    if isinstance(spec, Mask):
        return natural_size(spec.part, lookup)
    if isinstance(spec, Overlay):
        return None if spec.video is None else natural_size(spec.parts[spec.video], lookup)
    sizes = [s for s in (natural_size(p, lookup) for p in spec.parts) if s is not None]
    if not sizes:
        return None
    if isinstance(spec, Concat):
        return sizes[0]
    if spec.axis == "vertical":
        return sum(h for h, _ in sizes), max(w for _, w in sizes)
    return max(h for h, _ in sizes), sum(w for _, w in sizes)


def _bands(spec: Stack, lookup: Lookup, region) -> list:
    """The region of each part of a Stack (None for a part without video), inside ``region``."""
    sizes = [natural_size(p, lookup) for p in spec.parts]
    axis = 0 if spec.axis == "vertical" else 1
    total = float(sum(s[axis] for s in sizes if s is not None))
    top, left, height, width = region
    out, done = [], 0.0
    for s in sizes:
        if s is None:
            out.append(None)
            continue
        a, b = done / total, s[axis] / total
        done += s[axis]
        out.append(
            (top + a * height, left, b * height, width)
            if axis == 0
            else (top, left + a * width, height, b * width)
        )
    return out


def _join(lists):
    present = [x for x in lists if x is not None]
    return None if not present else [p for x in present for p in x]


def _clip(pieces, window_end):
    if pieces is None:
        return None
    out = []
    for p in pieces:
        length = min(p.length, window_end - p.at)
        if length > 1e-9:
            out.append(p if length == p.length else replace(p, length=length))
    return out


def _source_range(src: Source, info: MediaInfo) -> tuple[float, float]:
    if info.duration <= 0:
        raise MediaError(f"{src.path}: zero-length clip ({info.path} has duration {info.duration})")
    end = info.duration if src.end is None else src.end
    if src.start >= info.duration or end > info.duration + RANGE_TOLERANCE:
        raise MediaError(
            f"{src.path}: time range [{src.start}, {src.end}] is outside the clip "
            f"(duration {info.duration:.3f} s)"
        )
    end = min(end, info.duration)
    if end - src.start <= 0:
        raise MediaError(f"{src.path}: zero-length clip range [{src.start}, {end}]")
    return src.start, end


def _plan(spec, lookup, at, gain, window_end, region=FULL):
    if isinstance(spec, Source):
        path, info = lookup(spec.path)
        start, end = _source_range(spec, info)
        d = end - start
        piece = Piece(path, info, start, at, d, gain, region)
        video = [piece] if info.has_video else None
        audio = [piece] if info.has_audio else None
        return d, _clip(video, window_end), _clip(audio, window_end)
    if isinstance(spec, Combine):
        video, d = None, None
        if spec.video is not None:
            d, video, _ = _plan(spec.video, lookup, at, gain, window_end, region)
            if video is None:
                raise MediaError(
                    f"{_files(spec.video)}: Combine video part has no video stream "
                    f"(part {to_json(spec.video)})"
                )
        audio = None
        if spec.audio is not None:
            da, _, audio = _plan(
                spec.audio, lookup, at, gain, window_end if d is None else min(window_end, at + d), region
            )
            if audio is None:
                raise MediaError(
                    f"{_files(spec.audio)}: Combine audio part has no audio stream "
                    f"(part {to_json(spec.audio)})"
                )
            d = da if d is None else d
        return d, video, audio
    if isinstance(spec, Concat):
        cur, videos, audios = at, [], []
        for part in spec.parts:
            d, v, a = _plan(part, lookup, cur, gain, window_end, region)
            videos.append(v)
            audios.append(a)
            cur += d
        return cur - at, _join(videos), _join(audios)
    if isinstance(spec, Mask):
        d, video, audio = _plan(spec.part, lookup, at, gain, window_end, region)
        spans = [(at + a, at + min(b, d)) for a, b in spec.spans if a < d]
        return d, _blank(video, spans) if spec.video else video, _blank(audio, spans) if spec.audio else audio
    if isinstance(spec, Overlay):
        results = [_plan(p, lookup, at, gain * g, window_end, region) for p, g in zip(spec.parts, spec.gains)]
        duration = max(r[0] for r in results)
        video = None if spec.video is None else results[spec.video][1]
        return duration, video, _join([r[2] for r in results])
    if isinstance(spec, Stack):
        bands = _bands(spec, lookup, region)
        results = [
            _plan(p, lookup, at, gain * g, window_end, band or region)
            for p, g, band in zip(spec.parts, spec.gains, bands)
        ]
        duration = max(r[0] for r in results)
        return duration, _join([r[1] for r in results]), _join([r[2] for r in results])
    raise MediaError(f"not a MediaSpec node: {spec!r}")


def _blank(pieces, spans):
    """``pieces`` cut at the span edges (timeline seconds), the parts inside a span marked blank."""
    if pieces is None:
        return None
    out = []
    for p in pieces:
        edges = sorted({p.at, p.at + p.length, *(t for s in spans for t in s if p.at < t < p.at + p.length)})
        for a, b in itertools.pairwise(edges):
            inside = any(s <= a and b <= e for s, e in spans)
            out.append(
                replace(p, src_start=p.src_start + (a - p.at), at=a, length=b - a, blank=p.blank or inside)
            )
    return out


def _files(spec: MediaSpec) -> str:
    return ", ".join(sorted({s.path for s in sources(spec)}))


def frame_times(duration: float, num_frames: int | None, fps: float | None, max_frames: int) -> np.ndarray:
    """Sample times on ``[0, duration)``: the centre of each of ``n`` equal slots.

    Centres (not slot starts) keep a sample away from cuts between parts and from the last frame's end,
    and for ``fps`` equal to the source rate they hit each source frame exactly once. With ``fps`` set,
    ``n = round(duration * fps)`` (at least 1) capped at ``max_frames``; else ``n = num_frames``.
    """
    if duration <= 0:
        raise MediaError(f"cannot sample frames from a timeline of duration {duration}")
    if fps is not None:
        if fps <= 0 or max_frames < 1:
            raise MediaError(
                f"FramePolicy needs fps > 0 and max_frames >= 1 (got fps={fps}, max={max_frames})"
            )
        n = min(max(1, math.floor(duration * fps + 0.5)), max_frames)
    else:
        if num_frames is None or num_frames < 1:
            raise MediaError(f"FramePolicy needs num_frames >= 1 or an fps (got num_frames={num_frames})")
        n = num_frames
    return (np.arange(n) + 0.5) * (duration / n)


def locate(pieces: tuple[Piece, ...], t: float) -> tuple[Piece, float] | None:
    """The piece showing timeline time ``t`` and the local time in its file (None: a gap)."""
    found = covering(pieces, t)
    return found[0] if found else None


def covering(pieces: tuple[Piece, ...], t: float) -> list[tuple[Piece, float]]:
    """Every piece showing timeline time ``t`` (one per region: several only inside a ``Stack``), each with
    the local time in its file."""
    return [(p, p.src_start + (t - p.at)) for p in pieces if p.at <= t < p.at + p.length]
