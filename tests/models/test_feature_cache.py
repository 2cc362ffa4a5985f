"""The feature cache (``cavpref.models.feature_cache``): content-keyed, LRU, and exact — the model inputs and
log-probs of a batch are bit-identical with and without it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cavpref.media.decode import DecodedMedia
from cavpref.models import Row, load_model_io
from cavpref.models.feature_cache import FeatureCache, media_digest
from cavpref.models.tiny import build_tiny_qwen_omni, demo_media

pytestmark = pytest.mark.usefixtures("one_thread")


def _media(seed: int, audio: bool = True) -> DecodedMedia:
    rng = np.random.default_rng(seed)
    return DecodedMedia(
        rng.integers(0, 255, (2, 8, 8, 3), dtype=np.uint8),
        np.array([0.0, 0.5]),
        rng.standard_normal(800).astype(np.float32) if audio else None,
        16000,
        1.0,
    )


def test_digest_reads_the_content_not_the_object():
    a, b = _media(0), _media(0)
    assert a is not b and media_digest(a) == media_digest(b)
    b.frames[0, 0, 0, 0] ^= 1  # one bit of one pixel
    assert media_digest(a) != media_digest(b)
    assert media_digest(_media(0)) != media_digest(_media(0, audio=False))


def test_lru_counts_and_evicts():
    calls = []

    def encode(m):
        calls.append(media_digest(m))
        return len(calls)

    cache = FeatureCache(2)
    a, b, c = _media(1), _media(2), _media(3)
    # a, b miss; a copy of a hits (b is now the oldest); c evicts b; b misses and evicts a; a misses
    assert [cache.get(m, encode) for m in (a, b, _media(1), c, b, a)] == [1, 2, 1, 3, 4, 5]
    assert (cache.hits, cache.misses) == (1, 5)
    assert FeatureCache(0).get(a, encode) == 6 and len(calls) == 6  # off: always encodes
    with pytest.raises(ValueError, match="feature_cache_size"):
        FeatureCache(-1)


def test_batches_and_logps_are_bit_identical_with_the_cache(tmp_path):
    path = build_tiny_qwen_omni(tmp_path / "tiny")
    plain = load_model_io(str(path), dtype="float32")
    cached = load_model_io(str(path), dtype="float32", feature_cache_size=8)
    cached.model = plain.model
    media = [demo_media(1), demo_media(2), demo_media(3, audio=False)]
    rows = [Row("What plays?", r, m, f"k{i}") for i, m in enumerate(media) for r in ("A. piano", "B. drum")]
    for _ in range(2):  # the second batch is served from the cache
        want, got = plain.collate(rows), cached.collate(rows)
        for key in ("input_ids", "attention_mask", "labels", "row_video", "row_audio"):
            assert torch.equal(want[key], got[key])
        for key, value in want["media"].items():
            assert torch.equal(value, got["media"][key]), key
        with torch.no_grad():
            assert torch.equal(plain.logps(plain.model, want), cached.logps(plain.model, got))
    assert (cached.features.misses, cached.features.hits) == (3, 3)
