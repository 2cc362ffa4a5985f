"""Probe a media file once: duration, stream presence, fps and size — cached per (path, mtime, size).

Decoding a batch of specs touches the same source files again and again (an MVIT item and its clean
counterpart share clips), and opening a container costs far more than a dict lookup. The cache key
includes the modification time and size, so a file rewritten in place is probed again.

All times are seconds relative to the container's start (``origin``): a file whose first packet has
pts 1.25 s still starts at local time 0, as every player shows it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from cavpref.media.spec import MediaError


@dataclass(frozen=True)
class MediaInfo:
    path: str
    duration: float  # seconds from the container start to the end of its longest stream
    origin: float  # container start time in seconds (subtracted from every pts)
    has_video: bool
    has_audio: bool
    fps: float | None = None  # average frame rate of the first video stream
    width: int | None = None
    height: int | None = None
    video_start: float = 0.0  # first video pts, relative to origin
    audio_start: float = 0.0  # first audio pts, relative to origin
    audio_rate: int | None = None
    audio_channels: int | None = None


def probe(path: str | os.PathLike) -> MediaInfo:
    """Probe ``path`` (cached). Raises MediaError naming the file if it is missing or not readable media."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise MediaError(f"{p}: media file not found") from None
    if not p.is_file():
        raise MediaError(f"{p}: not a regular file")
    if st.st_size == 0:
        raise MediaError(f"{p}: zero-length clip (the file is empty)")
    return _probe(str(p), st.st_mtime_ns, st.st_size)


def clear_cache() -> None:
    _probe.cache_clear()


def _seconds(value, time_base) -> float | None:
    return None if value is None or time_base is None else float(value * time_base)


@lru_cache(maxsize=8192)
def _probe(path: str, mtime_ns: int, size: int) -> MediaInfo:
    import av

    try:
        container = av.open(path)
    except av.error.FFmpegError as err:
        raise MediaError(f"{path}: corrupt or unsupported media container ({err})") from None
    with container:
        vs = container.streams.video[0] if container.streams.video else None
        aus = container.streams.audio[0] if container.streams.audio else None
        if vs is None and aus is None:
            raise MediaError(f"{path}: zero-length clip or no media (no audio or video stream with data)")
        origin = container.start_time / 1e6 if container.start_time is not None else 0.0
        ends, starts = [], {}
        for name, s in (("video", vs), ("audio", aus)):
            if s is None:
                continue
            start = _seconds(s.start_time, s.time_base)
            starts[name] = 0.0 if start is None else max(0.0, start - origin)
            dur = _seconds(s.duration, s.time_base)
            if dur is not None:
                ends.append(starts[name] + dur)
        if container.duration is not None:
            duration = container.duration / 1e6
        elif ends:
            duration = max(ends)
        else:
            raise MediaError(f"{path}: cannot determine the duration (no container or stream duration)")
        # The header's duration is a claim: a 4-s clip whose header says 10 h would be sampled over 10 h (every
        # frame the last one) and get a 2.3 GB audio buffer. The streams' last packets say where it really ends.
        measured = _packets_end(container, [s for s in (vs, aus) if s is not None], duration, origin)
        if measured is not None and duration > measured + max(1.0, 0.01 * measured):
            duration = measured
        fps = None
        if vs is not None and vs.average_rate:
            fps = float(vs.average_rate)
        return MediaInfo(
            path=path,
            duration=float(duration),
            origin=float(origin),
            has_video=vs is not None,
            has_audio=aus is not None,
            fps=fps,
            width=vs.codec_context.width if vs is not None else None,
            height=vs.codec_context.height if vs is not None else None,
            video_start=starts.get("video", 0.0),
            audio_start=starts.get("audio", 0.0),
            audio_rate=aus.codec_context.sample_rate if aus is not None else None,
            audio_channels=aus.codec_context.layout.nb_channels if aus is not None else None,
        )


def _packets_end(container, streams, claimed: float, origin: float) -> float | None:
    """Seconds (from ``origin``) at which the last packet of ``streams`` ends: read (demuxed, not decoded) from
    the keyframe before the ``claimed`` end, or from the start when that finds nothing; None if unreadable."""
    import av

    for target in (claimed, 0.0):
        end = None
        try:
            container.seek(max(0, int((target + origin) * 1e6)), backward=True, any_frame=False)
            for packet in container.demux(*streams):
                if packet.pts is not None and packet.time_base is not None:
                    t = float((packet.pts + (packet.duration or 0)) * packet.time_base) - origin
                    end = t if end is None else max(end, t)
        except av.error.FFmpegError:
            continue
        if end is not None:
            return end
    return None
