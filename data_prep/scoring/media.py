"""What a scorer embeds: one *stream* (the audio or the video) of a media item, with a cache key.

A scorer never needs both streams of a spec at once, and perturbations reuse streams: MVIT's
``Combine(video=B, audio=A)`` has A's audio (when A and B are equally long). So each stream is keyed by
the canonical JSON of a spec that produces exactly that stream (``audio_view`` / ``video_view``), and
is decoded alone — the audio embedding of A is computed once for A, MVIT, the clean anchors, ...
Items that are already decoded (``DecodedMedia``) can be scored too; wrap them in ``KeyedMedia`` to
give them a cache key.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from math import gcd

import numpy as np

from cavpref.media.decode import DecodedMedia, FramePolicy
from cavpref.media.spec import (
    Combine,
    Concat,
    MediaError,
    MediaSpec,
    Source,
    drop_video,
    from_json,
    has_audio,
    has_video,
    mute,
    resolve_path,
    to_json,
)


@dataclass(frozen=True)
class KeyedMedia:
    """Already decoded media with a caller-chosen cache key (e.g. ``"path.mp4@0-10"``)."""

    key: str
    media: DecodedMedia


Media = str | MediaSpec | DecodedMedia | KeyedMedia  # str = canonical MediaSpec JSON


@dataclass(frozen=True)
class StreamRef:
    """One stream to embed: ``key`` (None = not cacheable) and ``load()`` returning the raw input
    (mono float32 audio at the requested rate, or uint8 frames (T, H, W, 3)), or None when the file
    turns out not to have the stream."""

    key: str | None
    load: Callable[[], np.ndarray | None]


def static_duration(spec: MediaSpec) -> float | None:
    """Duration known from the spec alone (explicit ranges), else None; follows the timeline's rules."""
    if isinstance(spec, Source):
        return None if spec.end is None else spec.end - spec.start
    if isinstance(spec, Combine):
        return static_duration(spec.video if spec.video is not None else spec.audio)
    durations = [static_duration(p) for p in spec.parts]
    if any(d is None for d in durations):
        return None
    return sum(durations) if isinstance(spec, Concat) else max(durations)


def audio_view(spec: MediaSpec) -> MediaSpec | None:
    """A spec whose only stream is exactly ``spec``'s audio (None if it has none).

    ``Combine(video=V, audio=A)`` plays A's audio for V's duration, so it shares A's key only when the
    two durations are known equal (explicit equal ranges, the usual case of same-length clips);
    otherwise its key keeps V for the duration."""
    if isinstance(spec, Source):
        return drop_video(spec)
    if isinstance(spec, Combine):
        if spec.audio is None or not has_audio(spec.audio):
            return None
        if spec.video is None:
            return audio_view(spec.audio)
        same = static_duration(spec.video) is not None and static_duration(spec.video) == static_duration(
            spec.audio
        )
        return audio_view(spec.audio) if same else drop_video(spec)
    return drop_video(spec) if has_audio(spec) else None


def video_view(spec: MediaSpec) -> MediaSpec | None:
    """A spec whose only stream is ``spec``'s video (None if it has none)."""
    if isinstance(spec, Source):
        return mute(spec)
    if isinstance(spec, Combine):
        return None if spec.video is None else video_view(spec.video)
    return mute(spec) if has_video(spec) else None


def resample(audio: np.ndarray, orig_sr: int, target_sr: int) -> np.ndarray:
    """Polyphase resampling (scipy) when a decoded item's rate differs from the model's."""
    audio = np.asarray(audio, dtype=np.float32)
    if orig_sr == target_sr:
        return audio
    from scipy.signal import resample_poly

    g = gcd(int(orig_sr), int(target_sr))
    return resample_poly(audio, target_sr // g, orig_sr // g).astype(np.float32)


class MediaReader:
    """Resolves media items to stream references, decoding specs under ``root`` on demand."""

    def __init__(self, root: str | os.PathLike | None, frames: FramePolicy):
        self.root = root
        self.frames = frames

    def _root(self, spec: MediaSpec):
        if self.root is None:
            raise MediaError(f"{to_json(spec)}: a data root is needed to decode MediaSpecs")
        return self.root

    def _decode(self, spec: MediaSpec, sample_rate: int, with_frames: bool) -> DecodedMedia:
        from cavpref.media.decode import decode

        frames = self.frames if with_frames else None
        return decode(spec, self._root(spec), frames=frames, sample_rate=sample_rate)

    def _file_has(self, view: MediaSpec, stream: str) -> bool:
        """A one-file view (a Source's audio or video) whose file lacks that stream is a missing stream
        (scored 0), not an error; composed specs ask for their streams explicitly and keep the
        decoder's errors. Probing is cached and only happens on a cache miss."""
        part = view.audio if stream == "audio" else view.video
        if not isinstance(part, Source):
            return True
        from cavpref.media.probe import probe

        info = probe(resolve_path(self._root(view), part.path))
        return bool(info.has_audio if stream == "audio" else info.has_video)

    def audio(self, media: Media, sample_rate: int) -> StreamRef | None:
        if isinstance(media, (DecodedMedia, KeyedMedia)):
            dm = media.media if isinstance(media, KeyedMedia) else media
            if dm.audio is None:
                return None
            key = None if isinstance(media, DecodedMedia) else f"audio:{media.key}"
            return StreamRef(key, lambda: resample(dm.audio, dm.sample_rate, sample_rate))
        view = audio_view(from_json(media) if isinstance(media, str) else media)
        if view is None:
            return None

        def load() -> np.ndarray | None:
            if not self._file_has(view, "audio"):
                return None
            dm = self._decode(view, sample_rate, with_frames=False)
            if dm.audio is None or len(dm.audio) == 0:
                raise MediaError(f"{to_json(view)}: decoded no audio although the spec has an audio stream")
            return resample(dm.audio, dm.sample_rate, sample_rate)

        return StreamRef(f"audio:{to_json(view)}", load)

    def video(self, media: Media) -> StreamRef | None:
        if isinstance(media, (DecodedMedia, KeyedMedia)):
            dm = media.media if isinstance(media, KeyedMedia) else media
            if dm.frames is None:
                return None
            key = None if isinstance(media, DecodedMedia) else f"video:{media.key}"
            return StreamRef(key, lambda: dm.frames)
        view = video_view(from_json(media) if isinstance(media, str) else media)
        if view is None:
            return None

        def load() -> np.ndarray | None:
            if not self._file_has(view, "video"):
                return None
            dm = self._decode(view, 16000, with_frames=True)  # a video-only view: the rate is unused
            if dm.frames is None or len(dm.frames) == 0:
                raise MediaError(f"{to_json(view)}: decoded no frames although the spec has a video stream")
            return dm.frames

        return StreamRef(f"video:{to_json(view)}", load)
