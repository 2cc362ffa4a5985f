"""Tiny CLAP / CLIP (and Perception Encoder AV) built from configs, saved, and loaded back by path."""

import numpy as np
import pytest

from cavpref.data_prep.scoring import Scorers, ScoringConfig
from cavpref.data_prep.scoring.tiny import save_tiny_clap, save_tiny_clip
from cavpref.media.decode import DecodedMedia
from tests.helpers.scoring_media import SR, media_set


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("scoring_models")
    return str(save_tiny_clap(root / "clap")), str(save_tiny_clip(root / "clip"))


def config(tiny_models, **kw):
    clap, clip = tiny_models
    return ScoringConfig(clap_model=clap, clip_model=clip, progress=False, **kw)


def count_calls(obj, name):
    calls = []
    original = getattr(obj, name)

    def wrapped(items):
        calls.append(len(items))
        return original(items)

    setattr(obj, name, wrapped)
    return calls


def test_load_from_saved_folder_and_scores_are_finite(tiny_models):
    scorers = Scorers(config(tiny_models))
    media = media_set()
    texts = ["dog", "a piano", "rain on a roof", "speech", "engine", "violin"]
    clap, clip = scorers.clap.score(media, texts), scorers.clip.score(media, texts)
    avsm = scorers.avsm.score(media, ["dog", "piano", "rain"])
    for s in (clap, clip, avsm):
        assert s.shape == (6,) and np.isfinite(s).all() and ((0 <= s) & (s <= 1)).all()
    assert scorers.clap.encoder.sample_rate == SR and scorers.clap.encoder.window_samples == SR
    # missing streams score 0 (the bottom of the scale), present ones are > 0 for random models
    assert clap[5] == 0 and clip[4] == 0 and avsm[4] == 0 and avsm[5] == 0
    assert (clap[:5] > 0).all() and (avsm[:4] > 0).all()


def test_batched_equals_unbatched(tiny_models):
    media, texts, vocab = media_set(1), ["a", "bb", "ccc dd", "e", "ff", "g"], ["dog", "piano", "rain"]
    big, one = Scorers(config(tiny_models, batch_size=4)), Scorers(config(tiny_models, batch_size=1))
    assert np.allclose(big.clap.score(media, texts), one.clap.score(media, texts), atol=1e-5)
    assert np.allclose(big.clip.score(media, texts), one.clip.score(media, texts), atol=1e-5)
    assert np.allclose(big.avsm.score(media, vocab), one.avsm.score(media, vocab), atol=1e-5)
    # and item by item, each alone
    alone = [one.clap.score([m], [t])[0] for m, t in zip(media, texts)]
    assert np.allclose(big.clap.score(media, texts), alone, atol=1e-5)


def test_long_audio_is_the_mean_of_its_windows(tiny_models):
    scorers = Scorers(config(tiny_models))
    wave = (0.1 * np.random.default_rng(2).standard_normal(int(2.5 * SR))).astype(np.float32)
    long = scorers.clap.audio_embeddings([DecodedMedia(None, None, wave, SR, 2.5)])[0]
    windows = scorers.clap.encoder.embed_audio(
        [wave[0:SR], wave[int(0.75 * SR) : int(1.75 * SR)], wave[int(1.5 * SR) :]]
    )
    expected = windows.mean(0) / np.linalg.norm(windows.mean(0))
    assert np.allclose(long, expected, atol=1e-5)


def test_cache_hit_avoids_recomputation_in_memory_and_on_disk(tiny_models, tmp_path):
    cfg = config(tiny_models, cache_dir=str(tmp_path / "cache"), batch_size=2)
    scorers = Scorers(cfg)
    audio_calls = count_calls(scorers.clap.encoder, "embed_audio")
    image_calls = count_calls(scorers.clip.encoder, "embed_images")
    media, vocab = media_set(3), ["x", "y"]
    first = scorers.avsm.score(media + media[:2], vocab)  # repeated items are embedded once
    assert len(audio_calls) == 3  # 5 audio streams in batches of 2
    assert len(image_calls) == 3  # 5 video streams in batches of 2
    scorers.avsm.score(media, vocab)
    assert len(audio_calls) == 3 and len(image_calls) == 3  # all hits in memory

    fresh = Scorers(cfg)  # new process, same cache dir: hits on disk
    audio2 = count_calls(fresh.clap.encoder, "embed_audio")
    image2 = count_calls(fresh.clip.encoder, "embed_images")
    assert np.allclose(fresh.avsm.score(media + media[:2], vocab), first, atol=1e-6)
    assert audio2 == [] and image2 == []

    other = Scorers(config(tiny_models, cache_dir=str(tmp_path / "cache"), num_frames=4))  # new frame policy
    image3 = count_calls(other.clip.encoder, "embed_images")
    other.clip.video_embeddings(media)
    assert sum(image3) == sum(len(m.media.frames) for m in media if m.media.frames is not None)


def test_unkeyed_decoded_media_are_scored_but_not_cached(tiny_models):
    scorers = Scorers(config(tiny_models))
    calls = count_calls(scorers.clap.encoder, "embed_audio")
    plain = media_set(4)[0].media
    a = scorers.clap.score([plain], ["x"])
    b = scorers.clap.score([plain], ["x"])
    assert np.allclose(a, b) and len(calls) == 2
    assert scorers.clap.audio_store.cache.memory == {}


def test_unknown_and_optional_backends_fail_clearly(tiny_models):
    with pytest.raises(ValueError, match="unknown clap backend 'nope'"):
        _ = Scorers(config(tiny_models, clap_backend="nope")).clap
    # the optional extras are normally absent: then choosing them must say how to install them
    for kw, extra in (
        ({"clap_backend": "laion_clap"}, "laion_clap"),
        ({"clip_backend": "open_clip"}, "open_clip"),
    ):
        try:
            __import__(extra)
        except ImportError:
            scorers = Scorers(config(tiny_models, **kw))
            with pytest.raises(ImportError, match=rf"pip install 'cavpref\[{extra}\]'"):
                _ = scorers.clap if extra == "laion_clap" else scorers.clip
    with pytest.raises(ValueError, match="needs av_model"):
        ScoringConfig(avsm_backend="pe_audio_video")
    with pytest.raises(ValueError, match="at least 2 texts"):
        Scorers(config(tiny_models)).avsm.score(media_set()[:1], ["only one"])


def test_pe_audio_video_direct_backend(tmp_path):
    pytest.importorskip("timm")  # the PE video tower is a timm model
    from cavpref.data_prep.scoring.tiny import save_tiny_pe_audio_video

    path = save_tiny_pe_audio_video(tmp_path / "pe")
    media = media_set(5)
    cfg = {"avsm_backend": "pe_audio_video", "av_model": str(path), "progress": False}
    big = Scorers(ScoringConfig(batch_size=4, **cfg)).avsm
    assert big.kind == "joint"
    scores = big.score(media)
    assert np.isfinite(scores).all() and (scores[:4] > 0).all() and scores[4] == scores[5] == 0
    one = Scorers(ScoringConfig(batch_size=1, **cfg)).avsm.score(media)
    assert np.allclose(scores, one, atol=1e-5)
