"""Unit tests of the synthetic world's pure pieces: sounds, shapes, catalogue invariants, question rules."""

import json

import numpy as np
import pytest

from cavpref.data_prep.synthetic import avqa_questions, catalogue, music_questions, scenes, sounds, visuals
from cavpref.data_prep.synthetic.config import WorldConfig
from tests.helpers.source_facts import MUSIC_AVQA_INSTRUMENTS


# ----------------------------------------------------------------------------- sounds
def test_gate_ramps_by_hand():
    g = sounds.gate([[0.5, 1.0]], 1200, 1000)  # 1 kHz: one sample per ms, ramps of 10 samples
    assert g[499] == 0 and g[500] == 0  # t - on = 0
    assert g[505] == pytest.approx(0.5)
    assert g[510] == 1 and g[750] == 1
    assert g[995] == pytest.approx(0.5)
    assert g[1000] == 0 and g[1100] == 0


def test_since_onset_and_note_envelope():
    ph = sounds.since_onset([[0.2, 0.6]], 1000, 1000)
    assert ph[100] == 0 and ph[200] == 0 and ph[350] == pytest.approx(0.15) and ph[700] == 0
    env = sounds.note_envelope(np.array([0.0, 0.0025, 0.005, 0.25, 0.5]), period=0.5, decay=0.1)
    assert env == pytest.approx([0.0, 0.5 * np.exp(-0.025), np.exp(-0.05), np.exp(-2.5), 0.0])


def test_harmonic_leaves_out_partials_above_0_45_sr():
    sr, n = 8000, 8000
    x = sounds.harmonic(1500.0, n, sr, (1.0, 1.0, 1.0, 1.0))  # 4.5 and 6 kHz are above 0.45 sr = 3.6 kHz
    spec = np.abs(np.fft.rfft(x))  # 1 Hz bins
    assert spec[1500] > 1000 and spec[3000] > 1000
    # had they been kept they would alias to 8000 - 4500 = 3500 Hz and 8000 - 6000 = 2000 Hz
    assert spec[3500] < 1e-6 * spec[1500] and spec[2000] < 1e-6 * spec[1500]


def test_entity_sound_is_unit_rms_inside_events_and_silent_outside():
    rng = np.random.default_rng(0)
    sr, n = 16000, 32000
    for entity in (
        catalogue.INSTRUMENT_BY_NAME["piano"],
        catalogue.SOURCE_BY_NAME["dog"],
        catalogue.SOURCE_BY_NAME["rain"],
    ):
        x = sounds.entity_sound(entity, [[0.5, 1.5]], n, sr, rng)
        g = sounds.gate([[0.5, 1.5]], n, sr)
        assert np.sqrt(np.sum(x**2) / np.sum(g**2)) == pytest.approx(1.0, rel=1e-6)
        assert not x[: int(0.5 * sr)].any() and not x[int(1.5 * sr) :].any()
    assert not sounds.entity_sound(catalogue.SOURCE_BY_NAME["dog"], [], n, sr, rng).any()


def test_mix_scales_the_whole_mix_only_when_it_would_clip():
    a, b = np.array([0.5, -0.5, 0.0]), np.array([1.0, 0.0, 0.25])
    quiet = sounds.mix([(a, 0.5), (b, 0.25)], 3)
    assert quiet == pytest.approx([0.5, -0.25, 0.0625])  # peak 0.5 <= 0.95: untouched
    loud = sounds.mix([(a, 1.0), (b, 1.0)], 3)  # [1.5, -0.5, 0.25] -> scaled by 0.95 / 1.5
    assert loud == pytest.approx(np.array([1.5, -0.5, 0.25]) * 0.95 / 1.5, rel=1e-6)
    assert loud.dtype == np.float32


# ----------------------------------------------------------------------------- catalogue
def test_instrument_pitches_are_separable():
    f0 = {i.name: i.f0 for i in catalogue.INSTRUMENTS}
    for a in catalogue.INSTRUMENTS:
        assert a.harmonics[0] == max(a.harmonics) and len(a.harmonics) <= 4
        for b in catalogue.INSTRUMENTS:
            if a is b:
                continue
            assert abs(np.log(a.f0 / b.f0)) >= np.log(1.11) - 1e-9, (a.name, b.name)
            for k in range(2, len(a.harmonics) + 1):
                assert abs(k * f0[a.name] - f0[b.name]) / f0[b.name] >= 0.05, (a.name, k, b.name)


def test_entities_are_distinguishable_and_named_as_released():
    looks = [(e.color, e.shape) for e in catalogue.INSTRUMENTS + catalogue.SOURCES]
    assert len(set(looks)) == len(looks)
    assert all(s in catalogue.SHAPES for _, s in looks)
    assert catalogue.HIGHLIGHT not in {c for c, _ in looks}
    assert {i.name for i in catalogue.INSTRUMENTS} <= MUSIC_AVQA_INSTRUMENTS


def test_ontology_is_a_tree_with_the_released_label_paths():
    mids = [row[0] for row in catalogue.ONTOLOGY]
    assert len(set(mids)) == len(mids)
    children = [c for row in catalogue.ONTOLOGY for c in row[2]]
    assert len(children) == len(set(children)) and set(children) <= set(mids)
    for e in catalogue.INSTRUMENTS + catalogue.SOURCES:
        assert e.audioset is None or e.audioset in catalogue.ONTOLOGY_BY_MID
    # Bark: Animal > Domestic animals, pets > Dog > Bark, all labelled, sorted as in the csvs
    assert catalogue.segment_labels("/m/05tny_") == ["/m/05tny_", "/m/068hy", "/m/0bt9lr", "/m/0jbk"]
    # Thunder sits under the abstract "Natural sounds": that one is not a label
    assert catalogue.segment_labels("/m/0ngt1") == ["/m/0jb2l", "/m/0ngt1"]
    assert catalogue.supercategory("/m/0ngt1") == "Natural sounds"
    assert catalogue.supercategory("/m/0912c9") == "Vehicle"


# ----------------------------------------------------------------------------- visuals
def test_render_draws_colour_in_slot_and_highlight_only_while_sounding():
    red = (230, 40, 40)
    frames = visuals.render(
        "indoor", [visuals.Placed(red, "square", 0, [[1.0, 2.0]])], duration=2.0, fps=2, width=96, height=64
    )
    assert frames.shape == (4, 64, 96, 3) and frames.dtype == np.uint8
    geo = visuals.geometry(96, 64)
    cx, cy = int(geo["centers_x"][0]), int(geo["center_y"])
    for i in range(4):
        assert tuple(frames[i, cy, cx]) == red
        assert tuple(frames[i, cy, int(geo["centers_x"][2])]) == visuals.BACKGROUNDS["indoor"][0]
    white = [(frames[i] == 255).all(-1).sum() for i in range(4)]  # frames at t = 0, 0.5, 1.0, 1.5
    assert white[0] == white[1] == 0 and white[2] > 0 and white[3] > 0
    plain = visuals.render(
        "indoor", [visuals.Placed(red, "square", 0, [[1.0, 2.0]])], 2.0, 2, 96, 64, highlight=False
    )
    assert not (plain == 255).all(-1).any()


def test_background_ramp_lights_the_width_and_not_the_shapes():
    top, bottom, _ = visuals.BACKGROUNDS["outdoor"]
    flat = visuals.background("outdoor", 9, 4)
    assert (flat[0] == top).all() and (visuals.background("outdoor", 9, 4, ramp=0) == flat).all()
    lit = visuals.background("outdoor", 9, 4, ramp=40).astype(int)
    # -40 at the left edge, 0 in the middle column, +40 at the right edge, by hand: linspace(-40, 40, 9)
    assert lit[0, :, 0].tolist() == [0, 10, 20, 30, 40, 50, 60, 70, 80]  # red 40 - 40 = 0 at the left edge
    assert lit[0, :, 2].tolist() == [70, 80, 90, 100, 110, 120, 130, 140, 150]
    assert (lit[0] == lit[1]).all() and (lit[3, 4] == bottom).all()  # the same ramp on every row
    wall = visuals.background("indoor", 3, 2, ramp=40)[0, 0].tolist()
    assert wall == [15, 2, 0]  # (55, 42, 32) - 40, clipped at 0
    red = (230, 40, 40)
    frames = visuals.render("outdoor", [visuals.Placed(red, "square", 2, [])], 1.0, 1, 96, 64, ramp=40)
    geo = visuals.geometry(96, 64)
    assert tuple(frames[0, int(geo["center_y"]), int(geo["centers_x"][2])]) == red
    with pytest.raises(ValueError, match=r"WorldConfig\.background_ramp=128"):
        WorldConfig(background_ramp=128)


def test_background_spot_reddens_the_middle_and_not_the_edges():
    flat = visuals.background("outdoor", 9, 4).astype(int)
    lit = visuals.background("outdoor", 9, 4, spot=40).astype(int)
    # +40 red at the centre column falling to 0 at both edges, by hand: 40 * (1 - |linspace(-1, 1, 9)|)
    assert (lit - flat)[0, :, 0].tolist() == [0, 10, 20, 30, 40, 30, 20, 10, 0]
    assert ((lit - flat)[..., 1:] == 0).all() and (lit[0] == lit[1]).all()  # red only, every row
    both = visuals.background("outdoor", 9, 4, ramp=40, spot=40).astype(int)
    assert (both - flat)[0, :, 0].tolist() == [-40, -20, 0, 20, 40, 40, 40, 40, 40]  # red 40 - 40 + 0 = 0 ...
    assert (both - flat)[0, :, 2].tolist() == [
        -40,
        -30,
        -20,
        -10,
        0,
        10,
        20,
        30,
        40,
    ]  # ... blue: the ramp only
    with pytest.raises(ValueError, match=r"WorldConfig\.background_spot=-1"):
        WorldConfig(background_spot=-1)


def test_shape_scale_and_slot_spread_move_the_shapes():
    assert visuals.geometry(112, 112)["centers_x"] == [18.67, 56.0, 93.33]  # the thirds' centres, as before
    geo = visuals.geometry(112, 112, shape_scale=0.7, slot_spread=5 / 6)
    # int(112 / 3 * 0.36 * 0.7) = int(9.41) = 9; 56 -/+ 5/6 * 56 = 9.33 / 102.67, by hand
    assert geo["radius"] == 9 and geo["centers_x"] == [9.33, 56.0, 102.67]
    red = (230, 40, 40)
    frames = visuals.render(
        "outdoor",
        [visuals.Placed(red, "square", 0, [])],
        1.0,
        1,
        112,
        112,
        shape_scale=0.7,
        slot_spread=5 / 6,
    )
    columns = np.nonzero((frames[0] == red).all(-1).any(0))[0]
    assert columns.min() >= 0 and columns.max() <= 18  # square half-side 0.85 * 9 around x = 9.33
    assert WorldConfig(shape_scale=0.7, slot_spread=5 / 6).slot_spread == 5 / 6
    with pytest.raises(ValueError, match=r"WorldConfig\.slot_spread=0.9: puts the left shape"):
        WorldConfig(slot_spread=0.9)
    with pytest.raises(ValueError, match=r"WorldConfig\.shape_scale=0: must be within"):
        WorldConfig(shape_scale=0)


def test_every_shape_covers_its_centre():
    yy, xx = np.mgrid[-20:21, -20:21].astype(float)
    for shape in catalogue.SHAPES:
        mask = visuals.shape_mask(shape, xx, yy, 13)
        assert mask[20, 20] and 100 < mask.sum() < 41 * 41
    with pytest.raises(ValueError, match="unknown shape"):
        visuals.shape_mask("star", xx, yy, 13)


# ----------------------------------------------------------------------------- scenes, config
def test_split_sizes_by_hand():
    fr = {"train": 0.7, "val": 0.1, "test": 0.2}
    assert scenes.split_sizes(10, fr) == {"train": 7, "val": 1, "test": 2}
    assert scenes.split_sizes(3, fr) == {"train": 1, "val": 1, "test": 1}
    assert scenes.split_sizes(1, fr) == {"train": 1, "val": 0, "test": 0}
    assert scenes.assign_splits(4, {"a": 0.5, "b": 0.5}) == ["a", "a", "b", "b"]


def test_music_clip_invariants_over_many_seeds():
    names = [i.name for i in catalogue.INSTRUMENTS[:8]]
    for seed in range(200):
        clip = scenes.music_clip(np.random.default_rng(seed), names, 4.0)
        inst = clip["instruments"]
        assert any(e["sounding"] for e in inst)
        gains = [e["gain"] for e in inst if e["sounding"]]
        assert len(set(gains)) == len(gains)  # "louder" always has one answer
        slots = [e["slot"] for e in inst if e["visible"]]
        assert len(set(slots)) == len(slots) and 1 <= len(slots) <= 3
        for e in inst:
            for on, off in e["events"]:
                assert 0 <= on < off <= 4.0 and (on * 2).is_integer() and (off * 2).is_integer()
        json.dumps(clip)  # plain JSON (no numpy scalars)


def test_level_ratio_sets_the_instruments_gains():
    assert scenes.levels() == (0.04, 0.08, 0.16, 0.32)  # the default world's gains, bit for bit
    quiet = scenes.levels(2**0.5)  # 3 dB apart: the quietest 9 dB under the loudest, not 18
    assert quiet[-1] == 0.32 and np.isclose(20 * np.log10(quiet[-1] / quiet[0]), 9.03, atol=0.01)
    names = [i.name for i in catalogue.INSTRUMENTS[:8]]
    for seed in range(50):  # same draws, other gains: only the level of each instrument moves
        a = scenes.music_clip(np.random.default_rng(seed), names, 4.0)
        b = scenes.music_clip(np.random.default_rng(seed), names, 4.0, level_ratio=2**0.5)
        ga, gb = ([e.pop("gain") for e in c["instruments"]] for c in (a, b))
        assert a == b
        assert [scenes.levels().index(g) if g else -1 for g in ga] == [
            quiet.index(g) if g else -1 for g in gb
        ]
    with pytest.raises(ValueError, match=r"WorldConfig\.level_ratio=1"):
        WorldConfig(level_ratio=1)


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match=r"WorldConfig\.width=41"):
        WorldConfig(width=41)
    with pytest.raises(ValueError, match=r"WorldConfig\.num_instruments=13"):
        WorldConfig(num_instruments=13)
    with pytest.raises(ValueError, match=r"WorldConfig\.audioset_clips=0"):
        WorldConfig(audioset_clips=0)
    assert WorldConfig(num_clips=5, avqa_clips=2).clips("avqa") == 2
    assert "out" not in WorldConfig().knobs() and "workers" not in WorldConfig().knobs()


# ----------------------------------------------------------------------------- question rules
def _inst(name, slot, events, gain, visible=True):
    e = {"name": name, "slot": slot, "visible": visible, "events": events, "gain": gain}
    return scenes._summarise(e, 4.0)


HAND_CLIP = {
    "scene": "outdoor",
    "duration": 4.0,
    "instruments": [
        _inst("piano", "left", [[1.0, 3.0]], 0.16),  # second in, rhythmic 3 Hz
        _inst("violin", "middle", [], 0.0),  # silent
        _inst("cello", "right", [[0.0, 4.0]], 0.04),  # first in, always playing, quietest
        _inst("flute", None, [[2.0, 3.0]], 0.32, visible=False),  # off screen, last in, loudest
    ],
}


def _answers(rule, clip=HAND_CLIP):
    return {
        tuple(v): a
        for v, a in rule(
            music_questions.View(clip, ["piano", "violin", "cello", "flute", "drum"]),
            np.random.default_rng(0),
        )
    }


def test_music_rules_on_a_hand_made_clip():
    q = music_questions
    assert _answers(q.av_from_video) == {(): "no"}  # the flute is heard, not seen
    assert _answers(q.av_count_sounding) == {}  # ambiguous with an off-screen instrument: not asked
    assert _answers(q.av_count_silent) == {(): "one"}
    assert _answers(q.av_always) == {("piano",): "no", ("violin",): "no", ("cello",): "yes"}
    assert _answers(q.av_where_fl) == {("first",): "right"}  # the last one (flute) is off screen
    assert _answers(q.av_th) == {("first",): "cello", ("second",): "piano", ("third",): "flute"}
    assert _answers(q.av_before_after) == {
        ("after", "piano"): "flute",
        ("before", "piano"): "cello",
        ("after", "cello"): "piano",
    }
    assert _answers(q.av_where_ll) == {("lowest",): "right"}  # loudest is the unseen flute
    assert _answers(q.av_lr_louder) == {("left", "right"): "yes", ("right", "left"): "no"}
    assert _answers(q.av_lr_rhythmic) == {("left", "right"): "yes", ("right", "left"): "no"}
    assert _answers(q.a_heard) == {(): "three"}
    assert _answers(q.a_louder)[("flute", "piano")] == "yes"
    assert _answers(q.a_longer) == {
        ("piano", "cello"): "no",
        ("cello", "piano"): "yes",
        ("piano", "flute"): "yes",
        ("flute", "piano"): "no",
        ("cello", "flute"): "yes",
        ("flute", "cello"): "no",
    }
    assert _answers(q.v_kinds) == {(): "three"}
    assert _answers(q.v_beside) == {
        ("right", "piano"): "violin",
        ("left", "violin"): "piano",
        ("right", "violin"): "cello",
        ("left", "cello"): "violin",
    }
    assert _answers(q.v_leftest) == {("leftest",): "piano", ("rightest",): "cello"}
    assert _answers(q.v_where_performance) == {(): "outdoor"}
    assert _answers(q.av_same_time) == {}  # piano overlaps both cello and flute


def test_two_of_a_kind_and_simultaneous_onsets():
    clip = {
        "scene": "indoor",
        "duration": 4.0,
        "instruments": [
            _inst("violin", "left", [[2.0, 4.0]], 0.08),
            _inst("violin", "right", [[0.5, 1.5]], 0.16),
        ],
    }
    assert _answers(music_questions.av_which_obj_fl, clip) == {
        ("violin", "first"): "right",
        ("violin", "last"): "left",
    }
    assert _answers(music_questions.av_count_kind, clip) == {("violin",): "two"}
    assert _answers(music_questions.v_how_many, clip) == {("violin",): "two"}
    clip["instruments"][0] = _inst("violin", "left", [[0.5, 4.0]], 0.08)
    assert _answers(music_questions.av_which_obj_fl, clip) == {
        ("violin", "first"): "simultaneously",
        ("violin", "last"): "simultaneously",
    }


def test_clip_questions_prefer_audio_visual_templates():
    names = [i.name for i in catalogue.INSTRUMENTS[:8]]
    counts = {"Audio": 0, "Visual": 0, "Audio-Visual": 0}
    for seed in range(60):
        rng = np.random.default_rng(seed)
        clip = scenes.music_clip(rng, names, 4.0)
        qs = music_questions.clip_questions(clip, names, 6, rng)
        assert len({q["content"] for q in qs}) == len(qs) <= 6
        for q in qs:
            assert q["content"].count("<") == len(q["values"])
            counts[q["modality"]] += 1
    assert (
        counts["Audio-Visual"] > counts["Audio"] + counts["Visual"] and counts["Audio"] and counts["Visual"]
    )


def test_avqa_options_hold_the_answer_once_and_the_required_distractor():
    rng = np.random.default_rng(0)
    pool = ["A", "B", "C", "D", "E", "F"]
    for _ in range(50):
        opts, i = avqa_questions._options("C", pool, rng, must="E")
        assert len(opts) == 4 == len(set(opts)) and opts[i] == "C" and "E" in opts
    opts, i = avqa_questions._options("In the middle", [], rng, fixed=avqa_questions.WHERE_OPTIONS)
    assert sorted(opts) == sorted(avqa_questions.WHERE_OPTIONS) and opts[i] == "In the middle"
