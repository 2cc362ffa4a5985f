"""Decode a MediaSpec into frames and audio, reading only what the sampling policy needs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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
    """What a model sees. A missing stream is ``None`` — never silent zeros — so adapters decide how
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
