"""Issue 53's CLEAN-conditioned remedy: prep's ``clean_anchors`` gives every CLEAN row its perturbed twins'
anchor pairs (the row's own answer under clean vs the twin's perturbed media), by hand and in a real prep build;
the collator uses them where CLEAN's switches are on, and only where a row has them."""

import pytest

from cavpref.data import AnchorPair, PreferenceExample
from cavpref.data_prep.build.clean_rows import borrow_twin_anchors
from cavpref.media.spec import clip, to_json

CLEAN_MEDIA = to_json(clip("a.mp4"))
NOISE = to_json(clip("noise.mp4"))
OTHER = to_json(clip("b.mp4"))


def _pref(task, key, chosen, visual=None, audio=None, dv=None, da=None):
    return PreferenceExample(f"{task}:base:{key}", task, "avqa", "Count", "Q?", CLEAN_MEDIA, chosen, "x",
                             visual=visual, audio=audio, avsm_delta_v=dv, avsm_delta_a=da)  # fmt: skip


def test_clean_rows_borrow_their_twins_anchor_media_with_their_own_answer_by_hand():
    mvit = AnchorPair("two", CLEAN_MEDIA, OTHER)
    mait = AnchorPair("two", CLEAN_MEDIA, NOISE)
    prefs = [
        _pref("CLEAN", "r1", "one"),
        _pref("MAIT", "r1", "None", audio=mait, da=0.25),  # MAIT comes after MVIT in task order
        _pref("MVIT", "r1", "None", visual=mvit, dv=0.5),
        _pref("CLEAN", "r2", "one"),  # no twin: unchanged
    ]
    out, changed = borrow_twin_anchors(prefs)
    assert changed == 1 and out[3] == prefs[3] and out[1:3] == prefs[1:3]
    clean = out[0]
    assert clean.visual == AnchorPair("one", CLEAN_MEDIA, OTHER)  # its own answer, the twin's media
    assert clean.audio == AnchorPair("one", CLEAN_MEDIA, NOISE)
    assert (clean.avsm_delta_v, clean.avsm_delta_a) == (0.5, 0.25)  # the media pair's AVSM delta
    assert (clean.chosen, clean.rejected, clean.media) == ("one", "x", CLEAN_MEDIA)


@pytest.fixture(scope="module")
def built(small_world, tmp_path_factory):
    from datasets import load_from_disk

    from cavpref.data_prep.build import PrepConfig, build

    out = {}
    for on in (False, True):
        folder = tmp_path_factory.mktemp(f"anchors{on}") / "prep"
        stats = build(PrepConfig(output_dir=str(folder), world=str(small_world), tasks=["MVIT", "MAIT", "CLEAN"],
                                 clean_anchors=on, formats=["arrow"], progress=False))  # fmt: skip
        rows = load_from_disk(str(folder / "preferences"))["train"].to_list()
        out[on] = ({r["id"]: r for r in rows}, stats)
    return out


def test_prep_builds_clean_anchors_when_asked(built):
    rows, stats = built[True]
    before, _ = built[False]
    clean = [r for r in rows.values() if r["task"] == "CLEAN"]
    with_v = [r for r in clean if r["visual_response"] is not None]
    assert with_v and stats["clean_rows_with_twin_anchors"]["train"] >= len(with_v)
    assert all(before[r["id"]]["visual_response"] is None for r in clean)  # off by default
    for r in with_v:
        twin = rows[r["id"].replace("CLEAN:", "MVIT:", 1)]
        assert r["visual_response"] == r["chosen"] and r["visual_clean"] == twin["visual_clean"]
        assert r["visual_perturbed"] == twin["visual_perturbed"] != r["media"]
        assert {k: v for k, v in r.items() if not k.startswith(("visual", "audio", "avsm"))} == {
            k: v for k, v in before[r["id"]].items() if not k.startswith(("visual", "audio", "avsm"))
        }


def test_the_collator_uses_clean_anchors_where_the_switch_is_on_and_the_row_has_them():
    from cavpref.collator import CAVPrefCollator
    from cavpref.task_registry import task_names

    switches = {t: (0, 0) for t in task_names()} | {"CLEAN": (1, 1)}
    collator = CAVPrefCollator(model_io=None, switches=switches, method="cavpref")
    mvit = AnchorPair("two", CLEAN_MEDIA, OTHER)
    has_v = _pref("CLEAN", "r1", "one", visual=mvit).to_row()
    plain = _pref("CLEAN", "r2", "one").to_row()
    assert collator.slots_for(has_v) == ("y_w", "y_l", "v_w", "v_l")
    assert collator.slots_for(plain) == (
        "y_w",
        "y_l",
    )  # no anchor: not an error on a task that perturbs nothing
    # a perturbed task's switch stays a requirement
    mvit_row = _pref("MVIT", "r3", "None").to_row()
    strict = CAVPrefCollator(model_io=None, switches=switches | {"MVIT": (1, 0)}, method="cavpref")
    assert strict.slots_for(mvit_row) == ("y_w", "y_l", "v_w", "v_l")
