"""score_preferences and alignment_filter end to end on real mp4 files, with hand-checkable encoders.

The encoders below are registered through the public backend registry: CLIP-like "colours" embeds a
frame as its mean RGB, CLAP-like "tones" embeds audio as its energy at 500 / 1000 / 1500 Hz, and both
embed the words red / green / blue as the matching unit vectors. With softmax scale ln 18 a perfectly
aligned clip gives label probabilities (0.9, 0.05, 0.05), so every expected number is hand-computed:
T_sim(red video, red audio)   = 0.9² + 2·0.05² = 0.815
T_sim(red video, blue audio)  = 2·0.9·0.05 + 0.05² = 0.0925
"""

import math

import numpy as np
import pytest

from cavpref.data import PreferenceExample
from cavpref.data_prep.records import QARecord
from cavpref.data_prep.scoring import (
    PAPER_THRESHOLD,
    Scorers,
    ScoringConfig,
    alignment_filter,
    derived_vocabulary,
    register_backend,
    score_preferences,
)
from cavpref.media.spec import clip, combine, drop_video, mute, to_json
from cavpref.media.write import write_mp4

WORDS = {"red": [1.0, 0, 0], "green": [0, 1.0, 0], "blue": [0, 0, 1.0]}
TONES = {"red": 500, "green": 1000, "blue": 1500}
ALIGNED, CROSSED = 0.9**2 + 2 * 0.05**2, 2 * 0.9 * 0.05 + 0.05**2


def _words(texts):
    return (
        np.array([WORDS.get(t, [1.0, 1.0, 1.0]) for t in texts])
        / np.array([1.0 if t in WORDS else math.sqrt(3) for t in texts])[:, None]
    )


class Colours:
    fingerprint, logit_scale = "colours-v1", 1.0

    def embed_images(self, images):
        return np.array([im.reshape(-1, 3).mean(0) / 255.0 for im in images]) + 1e-9

    def embed_text(self, texts):
        return _words(texts)


class Tones:
    fingerprint, sample_rate, window_samples, logit_scale = "tones-v1", 8000, None, 1.0

    def embed_audio(self, waves):
        out = []
        for w in waves:
            spectrum, freqs = np.abs(np.fft.rfft(w)), np.fft.rfftfreq(len(w), 1 / self.sample_rate)
            out.append([spectrum[np.abs(freqs - f) < 20].max() for f in TONES.values()])
        return np.array(out)

    def embed_text(self, texts):
        return _words(texts)


register_backend("clip", "colours", lambda c: Colours())
register_backend("clap", "tones", lambda c: Tones())


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("scoring_world")
    t = np.arange(16000) / 16000
    for name, rgb in (("red", (255, 0, 0)), ("green", (0, 255, 0)), ("blue", (0, 0, 255))):
        frames = np.broadcast_to(np.array(rgb, np.uint8), (8, 32, 32, 3))
        write_mp4(
            root / f"{name}.mp4",
            frames,
            8,
            (0.5 * np.sin(2 * np.pi * TONES[name] * t)).astype(np.float32),
            16000,
        )
    write_mp4(root / "silent_red.mp4", np.broadcast_to(np.array((255, 0, 0), np.uint8), (8, 32, 32, 3)), 8)
    return root


def cfg(**kw):
    base = {
        "clip_backend": "colours",
        "clap_backend": "tones",
        "clip_scale": math.log(18),
        "clap_scale": math.log(18),
        "vocabulary": ["red", "green", "blue"],
        "progress": False,
        "num_frames": 4,
    }
    return ScoringConfig(**{**base, **kw})


RED, GREEN, BLUE = clip("red.mp4", 0, 1), clip("green.mp4", 0, 1), clip("blue.mp4", 0, 1)


def pref(id_, task, media, chosen, rejected, visual=None, audio=None):
    return PreferenceExample(
        id=id_,
        task=task,
        source="avqa",
        category="Existential",
        prompt="What is it?",
        media=media,
        chosen=chosen,
        rejected=rejected,
        visual=visual,
        audio=audio,
    )


def anchor(clean, perturbed):
    return {"response": "red", "clean": to_json(clean), "perturbed": to_json(perturbed)}


def examples():
    return [
        pref("mvit", "MVIT", combine(GREEN, RED), "red", "green", visual=anchor(RED, combine(GREEN, RED))),
        pref("mvt", "MVT", drop_video(RED), "None of the above", "red", visual=anchor(RED, drop_video(RED))),
        pref("mat", "MAT", mute(RED), "None of the above", "red", audio=anchor(RED, mute(RED))),
        pref("mait", "MAIT", combine(RED, BLUE), "red", "blue", audio=anchor(RED, combine(RED, BLUE))),
        pref("mcit", "MCIT", RED, "red", "green"),
    ]


def test_score_preferences_hand_computed(world):
    scorers = Scorers(cfg(), world)
    out = score_preferences(examples(), world, cfg(), scorers=scorers)
    got = {p.id: (p.clap_delta, p.avsm_delta_v, p.avsm_delta_a) for p in out}
    nota = (1 / math.sqrt(3) + 1) / 2  # CLAP(red audio, "None of the above") on the [0, 1] scale
    expected = {
        "mvit": (1.0 - 0.5, ALIGNED - CROSSED, None),
        "mvt": (nota - 1.0, ALIGNED - 0.0, None),  # no video on the perturbed side: clean score
        "mat": (0.0, None, ALIGNED - 0.0),  # presented media has no audio: both CLAP scores are 0
        "mait": (0.5 - 1.0, None, ALIGNED - CROSSED),
        "mcit": (0.5, None, None),
    }
    for key, want in expected.items():
        for g, w in zip(got[key], want):
            assert (g is None) if w is None else g == pytest.approx(w, abs=2e-3), (key, got[key], want)
    # inputs untouched, everything else copied through
    assert all(p.clap_delta is None for p in examples()) and [p.id for p in out] == [p.id for p in examples()]
    # shared streams were embedded once: two audios (red, blue), two videos (red, green)
    assert len(scorers.clap.audio_store.cache.memory) == 2
    assert len(scorers.clip.video_store.cache.memory) == 2


def test_derived_vocabulary_skips_abstentions(world):
    prefs = examples()
    assert derived_vocabulary(prefs) == ["blue", "green", "red"]
    a = score_preferences(prefs, world, cfg())
    b = score_preferences(prefs, world, cfg(vocabulary=None))  # same labels, derived from the responses
    flat = lambda ps: [x or 0.0 for p in ps for x in (p.clap_delta, p.avsm_delta_v, p.avsm_delta_a)]
    assert flat(a) == pytest.approx(flat(b), abs=1e-9)


def records():
    specs = [RED, GREEN, combine(RED, BLUE), clip("silent_red.mp4", 0, 1)]
    labels = [["red"], ["green"], ["red"], ["blue"]]
    return [
        QARecord(
            source="audioset", source_id=f"yt{i}", file="segments.csv", index=i, media=to_json(s), labels=lab
        )
        for i, (s, lab) in enumerate(zip(specs, labels))
    ]


def test_alignment_filter_counts_and_scores(world):
    recs = records()
    kept, dropped = alignment_filter(recs, world, cfg(vocabulary=None))  # vocabulary = the records' labels
    assert (len(kept), dropped) == (2, 2) and PAPER_THRESHOLD == 0.70
    assert [r.source_id for r in kept] == ["yt0", "yt1"]
    assert [r.meta["tsim"] for r in kept] == pytest.approx([ALIGNED, ALIGNED], abs=2e-3)
    assert all("tsim" not in r.meta for r in recs)  # copies, the input is untouched
    # crossed streams pass a low threshold, a clip without audio never does
    kept, dropped = alignment_filter(recs, world, cfg(), threshold=0.05)
    assert (len(kept), dropped) == (3, 1)
    # softer probabilities (scale ln 8: 0.8/0.1/0.1) give aligned T_sim 0.66 < 0.70: all dropped
    kept, dropped = alignment_filter(recs, world, cfg(clip_scale=math.log(8), clap_scale=math.log(8)))
    assert (len(kept), dropped) == (0, 4)


def test_alignment_filter_needs_a_vocabulary(world):
    one_label = [r for r in records() if r.labels == ["red"]]
    with pytest.raises(ValueError, match="at least 2"):
        alignment_filter(one_label, world, cfg(vocabulary=None))
    assert alignment_filter([], world, cfg()) == ([], 0)


def test_bad_media_errors_name_the_spec_or_file(world):
    from cavpref.media.spec import MediaError

    with pytest.raises(MediaError, match="red.mp4.*data root"):
        Scorers(cfg(), root=None).clap.score([to_json(RED)], ["red"])
    with pytest.raises(Exception, match="missing.mp4"):
        Scorers(cfg(), world).clap.score([to_json(clip("missing.mp4", 0, 1))], ["red"])
