"""Issue 56: prep's CLEAN preference rows reject abstaining by default (``clean_rejected``), by hand and in a
real prep build, in both settings; ``wrong_option`` keeps today's rows."""

import pytest

from cavpref.data import NONE_OF_THE_ABOVE, BenchmarkItem, PreferenceExample
from cavpref.data_prep.build.clean_rows import reject_abstaining
from cavpref.media.spec import clip, to_json

MEDIA = to_json(clip("a.mp4"))


def _pref(task, setting, key, chosen, rejected):
    return PreferenceExample(f"{task}:{setting}:{key}", task, "avqa", "Count", "Q?", MEDIA, chosen, rejected)


def _item(task, setting, key, abstain_letter):
    options = {"A": "one", "B": "two"} | ({abstain_letter: NONE_OF_THE_ABOVE} if abstain_letter else {})
    return BenchmarkItem(id=f"{task}:{setting}:{key}", task=task, source="avqa", category="Count",
                         question="Q?", options=options, answer="A", setting=setting, template_id=0,
                         media=MEDIA, abstain_letter=abstain_letter)  # fmt: skip


def test_twinned_clean_rows_reject_the_abstention_by_hand():
    prefs = [
        _pref("CLEAN", "instruction", "r1", "A. one", "B. two"),
        _pref("MVIT", "instruction", "r1", f"C. {NONE_OF_THE_ABOVE}", "A. one"),
        _pref("CLEAN", "base", "r1", "A. one", "B. two"),
        _pref("MAT", "base", "r1", "The audio is missing.", "A. one"),  # MAT is later in task order
        _pref("MCIT", "base", "r1", "None of these answers fits.", "A. one"),
        _pref("CLEAN", "base", "r2", "A. one", "B. two"),  # no perturbed twin: unchanged
        _pref("CAT", "base", "r2", "A. one", "B. two"),  # CAT does not abstain: no twin
    ]
    items = [_item("CLEAN", "instruction", "r1", "C"), _item("CLEAN", "base", "r1", None)]
    out, changed = reject_abstaining(prefs, items)
    assert changed == 2
    assert out[0].rejected == f"C. {NONE_OF_THE_ABOVE}" and out[0].chosen == "A. one"
    assert out[2].rejected == "None of these answers fits."  # the first twin in task order: MCIT
    assert out[5].rejected == "B. two" and out[1:2] == prefs[1:2] and out[6] == prefs[6]


@pytest.fixture(scope="module")
def builds(small_world, tmp_path_factory):
    from datasets import load_from_disk

    from cavpref.data_prep.build import PrepConfig, build

    out = {}
    for mode in ("abstain", "wrong_option"):
        folder = tmp_path_factory.mktemp(mode) / "prep"
        stats = build(PrepConfig(output_dir=str(folder), world=str(small_world), tasks=["MCIT", "CLEAN"],
                                 clean_rejected=mode, formats=["arrow"], progress=False))  # fmt: skip
        prefs = load_from_disk(str(folder / "preferences"))["train"]
        out[mode] = ({r["id"]: r for r in prefs.to_list()}, stats)
    return out


def test_prep_builds_clean_rows_that_reject_abstaining_by_default(builds):
    from cavpref.data_prep.build import PrepConfig

    assert PrepConfig(output_dir="x").clean_rejected == "abstain"
    rows, stats = builds["abstain"]
    old, _ = builds["wrong_option"]
    clean = [r for r in rows.values() if r["task"] == "CLEAN"]
    twinned = [r for r in clean if r["id"].replace("CLEAN:", "MCIT:", 1) in rows]
    assert twinned and stats["clean_rows_rejecting_abstention"]["train"] == len(twinned)
    for r in clean:
        if r not in twinned:  # no perturbed twin (MCIT skipped the record): the wrong option stays
            assert r == old[r["id"]]
            continue
        twin = rows[r["id"].replace("CLEAN:", "MCIT:", 1)]
        if ":instruction:" in r["id"]:
            letter = r["rejected"].split(". ", 1)[0]  # the row's own option, at its rotated letter
            assert r["rejected"] == f"{letter}. {NONE_OF_THE_ABOVE}"
            assert f"{letter}. {NONE_OF_THE_ABOVE}" in r["prompt"]
        else:
            assert r["rejected"] == twin["chosen"]  # the twin's abstention sentence
        assert r["chosen"] == old[r["id"]]["chosen"] and old[r["id"]]["rejected"] != r["rejected"]
        assert NONE_OF_THE_ABOVE not in old[r["id"]]["rejected"]  # wrong_option: a wrong plausible option
