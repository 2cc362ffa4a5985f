"""``FeatureCache``: a clip's model inputs (video patches, Whisper log-mel features) computed once, not per row.

Why: a preference row's media recur — the same clip is presented by several tasks, both settings, the anchor
rows and every epoch (the quickstart's 9,196 train rows present 1,945 distinct media), and an evaluation asks
each item once per CircularEval pass — while ``encode_media`` (resampling, the processor's resize / normalise /
patchify, the Whisper feature extractor) is a pure function of the decoded arrays. The cache keys on the
arrays' *content* (a BLAKE2 digest of frames, frame times, audio and sample rate), never on a name, so a hit is
exactly what ``encode_media`` would have returned; ``tests/models/test_feature_cache.py`` checks that batches and
log-probs are bit-identical with and without it.

Per process: each data-loader worker keeps its own (persistent workers keep it across epochs). The values are
shared, never copied, so nothing downstream may modify an ``EncodedMedia`` in place (``stack_media`` concatenates
into new tensors).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from cavpref.media.decode import DecodedMedia


def media_digest(media: DecodedMedia) -> str:
    """A digest of everything ``encode_media`` reads: each stream's array (dtype, shape, bytes) and the rate."""
    h = hashlib.blake2b(digest_size=20)
    for name, arr in (("frames", media.frames), ("times", media.frame_times), ("audio", media.audio)):
        if arr is None:
            h.update(f"{name}:none;".encode())
            continue
        arr = np.ascontiguousarray(arr)
        h.update(f"{name}:{arr.dtype}:{arr.shape};".encode())
        h.update(arr.tobytes())
    h.update(f"sr:{media.sample_rate};dur:{media.duration!r}".encode())
    return h.hexdigest()


class FeatureCache:
    """An LRU of ``encode_media`` results keyed by ``media_digest``; ``size`` 0 turns it off."""

    def __init__(self, size: int = 0):
        if size < 0:
            raise ValueError(f"feature_cache_size must be >= 0, got {size}")
        self.size, self.hits, self.misses = size, 0, 0
        self._items: OrderedDict[str, Any] = OrderedDict()

    def get(self, media: DecodedMedia, encode: Callable[[DecodedMedia], Any], options: tuple = ()) -> Any:
        """``encode(media)``, cached. ``options``: what besides the arrays decides the result (the row's
        ``media_options``, e.g. Qwen2.5-Omni's per-row ``use_audio_in_video``), part of the key."""
        if not self.size:
            return encode(media)
        key = media_digest(media) + (repr(options) if options else "")
        if key in self._items:
            self.hits += 1
            self._items.move_to_end(key)
            return self._items[key]
        self.misses += 1
        value = self._items[key] = encode(media)
        if len(self._items) > self.size:
            self._items.popitem(last=False)
        return value
