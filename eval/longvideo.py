"""Sampling long videos (TraceAV-Bench: 10–140 min) for a model with a fixed frame budget and audio window.

A 2-hour video cannot be decoded whole: 16 kHz mono audio alone is 460 MB of float32, and a model sees a
few dozen frames and one audio window (30 s for Whisper-style encoders — the Qwen2.5-Omni adapter cuts
anything longer). So:

- frames: ``N`` uniform frames over the whole video, or ``fps`` capped at ``max_frames`` — exactly
  ``cavpref.media.decode.FramePolicy``, read with seeks (only the sampled frames are decoded);
- audio: the window is filled with ``audio_segments`` equal chunks spread uniformly over the video (chunk
  k centred at (k + 0.5)/S of the duration), decoded as a ``Concat`` of those ranges — only they are read.
  A video no longer than the window keeps its whole audio track.

Frame times stay on the video's own timeline; the audio chunk ranges are returned so results record what
the model heard. The policy itself goes into results.json (``describe``). The stream ablations apply: a
removed stream (``Combine`` with a ``None`` side) is not decoded, and ``Mask`` spans (black frames,
silence over evidence hops) are kept on the sampled frames and on every audio chunk they overlap.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

from cavpref.media.decode import DecodedMedia, FramePolicy, decode
from cavpref.media.probe import probe
from cavpref.media.spec import (
    Combine,
    Concat,
    Mask,
    MediaError,
    MediaSpec,
    Source,
    from_json,
    resolve_path,
    to_json,
)

STREAMS = ("video", "audio")


@dataclass(frozen=True)
class LongVideoPolicy:
    num_frames: int | None = 64  # uniform frames over the whole video; None: use fps
    fps: float | None = None  # frames per second, capped at max_frames
    max_frames: int = 64
    frame_size: tuple[int, int] | None = None  # (height, width); None keeps the source size
    audio_window_s: float = 30.0  # the model's audio window
    audio_segments: int = 8  # chunks sharing the window, spread over the video

    def __post_init__(self):
        if self.num_frames is None and self.fps is None:
            raise ValueError("LongVideoPolicy needs num_frames or fps")
        if self.audio_window_s <= 0 or self.audio_segments < 1:
            raise ValueError(
                f"audio_window_s must be > 0 and audio_segments >= 1, got {self.audio_window_s}, "
                f"{self.audio_segments}"
            )

    def frame_policy(self) -> FramePolicy:
        return FramePolicy(
            num_frames=self.num_frames, fps=self.fps, max_frames=self.max_frames, size=self.frame_size
        )

    def describe(self) -> dict:
        return {"kind": "long_video", **asdict(self)}


def window_from_processor(processor) -> float | None:
    """The audio window of an HF processor's feature extractor (Whisper: ``chunk_length`` = 30 s)."""
    fe = getattr(processor, "feature_extractor", processor)
    n, sr = getattr(fe, "n_samples", None), getattr(fe, "sampling_rate", None)
    if n and sr:
        return float(n) / float(sr)
    chunk = getattr(fe, "chunk_length", None)
    return float(chunk) if chunk else None


def audio_windows(duration: float, window_s: float, segments: int) -> list[tuple[float, float]]:
    """(start, end) ranges, in order, whose lengths sum to min(duration, window_s)."""
    if duration <= 0:
        raise ValueError(f"duration must be positive, got {duration}")
    if duration <= window_s:
        return [(0.0, float(duration))]
    length = window_s / segments
    out = []
    for k in range(segments):
        centre = (k + 0.5) * duration / segments
        start = min(max(0.0, centre - length / 2), duration - length)
        out.append((round(start, 6), round(start + length, 6)))
    return out


def _unwrap(spec: MediaSpec) -> tuple[Source, dict[str, tuple | None]]:
    """(the one clip, per stream: None when removed, else the masked spans, () for none)."""
    if isinstance(spec, Source):
        return spec, {"video": (), "audio": ()}
    if isinstance(spec, Mask):
        src, streams = _unwrap(spec.part)
        for s in STREAMS:
            if getattr(spec, s) and streams[s] is not None:
                streams[s] = streams[s] + spec.spans
        return src, streams
    if isinstance(spec, Combine):
        parts = {s: None if getattr(spec, s) is None else _unwrap(getattr(spec, s)) for s in STREAMS}
        clips = {found[0] for found in parts.values() if found is not None}
        if len(clips) == 1:
            return clips.pop(), {s: None if parts[s] is None else parts[s][1][s] for s in STREAMS}
    raise MediaError(
        f"long-video sampling takes one clip (a Source, masked or with a stream removed), got {to_json(spec)}"
    )


def _within(spans: tuple, a: float, b: float) -> list[tuple[float, float]]:
    """``spans`` (clip seconds) clipped to the window [a, b), on the window's own clock."""
    return [(max(s, a) - a, min(e, b) - a) for s, e in spans if s < b and e > a]


def decode_long(
    spec: MediaSpec | str,
    root: str | os.PathLike,
    policy: LongVideoPolicy,
    *,
    sample_rate: int = 16000,
    backend: str = "auto",
) -> tuple[DecodedMedia, dict]:
    """Decode a long clip under ``policy``: (DecodedMedia, what was sampled). ``DecodedMedia.duration`` is
    the clip's duration; ``audio`` is the concatenated chunks (at most ``audio_window_s`` seconds)."""
    src, streams = _unwrap(from_json(spec) if isinstance(spec, str) else spec)
    info = probe(resolve_path(root, src.path))
    end = info.duration if src.end is None else min(src.end, info.duration)
    duration = end - src.start
    if duration <= 0:
        raise MediaError(f"{src.path}: zero-length clip range [{src.start}, {end}]")
    frames = times = None
    if info.has_video and streams["video"] is not None:
        video: MediaSpec = Combine(video=src, audio=None)
        if streams["video"]:
            video = Mask(video, streams["video"], video=True, audio=False)
        shown = decode(
            video,
            root,
            frames=policy.frame_policy(),
            sample_rate=sample_rate,
            backend=backend,
        )
        frames, times = shown.frames, shown.frame_times
    audio, windows = None, []
    if info.has_audio and streams["audio"] is not None:
        windows = audio_windows(duration, policy.audio_window_s, policy.audio_segments)
        parts = []
        for a, b in windows:
            part: MediaSpec = Source(src.path, src.start + a, src.start + b)
            blank = _within(streams["audio"], a, b)
            parts.append(Mask(part, blank, video=False, audio=True) if blank else part)
        heard = decode(
            Combine(video=None, audio=Concat(parts)),
            root,
            frames=None,
            sample_rate=sample_rate,
            backend=backend,
        )
        audio = heard.audio
    media = DecodedMedia(
        frames=frames, frame_times=times, audio=audio, sample_rate=sample_rate, duration=duration
    )
    sampled = {
        "duration_s": round(duration, 3),
        "n_frames": 0 if frames is None else int(frames.shape[0]),
        "frame_times": [] if times is None else [round(float(t), 3) for t in times],
        "audio_windows": [list(w) for w in windows],
        "masked": {s: [list(x) for x in streams[s]] for s in STREAMS if streams[s]},
    }
    return media, sampled
