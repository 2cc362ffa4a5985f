"""Decoded media of several shapes (rates, lengths, a missing stream) for the scorer tests (no tests here)."""

from __future__ import annotations

import numpy as np

from cavpref.data_prep.scoring import KeyedMedia
from cavpref.media.decode import DecodedMedia

SR = 8000  # the tiny CLAP's rate; its window is 1 s


def media_set(seed=0):
    rng = np.random.default_rng(seed)

    def item(key, n_audio=SR, frames=3, sr=SR):
        video = None if frames is None else rng.integers(0, 256, (frames, 24, 40, 3), dtype=np.uint8)
        audio = None if n_audio is None else (0.1 * rng.standard_normal(n_audio)).astype(np.float32)
        return KeyedMedia(key, DecodedMedia(video, None, audio, sr, 1.0))

    return [
        item("full"),
        item("short", n_audio=3000, frames=2),
        item("long", n_audio=int(2.5 * SR), frames=5),
        item("16k", n_audio=16000, sr=16000),
        item("no-video", frames=None),
        item("no-audio", n_audio=None),
    ]
