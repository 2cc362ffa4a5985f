"""The nine task generators on hand-made records and look-up tables: exact options, answers, media
specs and preference anchors; determinism; templates; prompt rendering; datasets round trip."""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest

from cavpref.data import ABSTAIN_TASKS, NONE_OF_THE_ABOVE, TASKS, PreferenceExample
from cavpref.data_prep.tables import LookupTables
from cavpref.data_prep.tasks import (
    ABSTENTIONS,
    GENERATORS,
    TEMPLATES,
    TaskOptions,
    generate_all,
    item_prompt,
    render_prompt,
)
from cavpref.data_prep.tasks.cat import ATTRIBUTE_WORDS, BINDINGS
from cavpref.data_prep.tasks.common import norm
from cavpref.data_prep.tasks.cot_stitch import ORDER_PHRASES, SIMULTANEOUS
from cavpref.data_prep.tasks.schema import PREFERENCE_FEATURES, to_dataset
from cavpref.media.spec import Concat, Overlay, combine, concat, drop_video, from_json, mute
from tests.helpers.task_records import CAT, COW, DOG, GROUPS, SIREN, T3, avqa, make_tables, music, segment

M0 = music(0, "00000001", "Which instrument sounds first?", "piano", "Temporal")
M1 = music(1, "00000001", "How many guitars are playing?", "two", "Count")
M2 = music(2, "00000002", "Is the violin louder than the drum?", "yes", "Comparative")
AV0 = avqa(0, "aaaaaaaaaaa_000010", "What animal is making the sound?", "dog", ["dog", "cat", "cow", "car"])


def spec(record):
    return from_json(record.media)


def by_id(items):
    return {i.id: i for i in items}


def run(task, records, **kw):
    skips = Counter()
    items, prefs = GENERATORS[task](records, make_tables(), seed=kw.pop("seed", 0), skips=skips, **kw)
    return by_id(items), by_id(prefs), skips


def text(item, letter):
    return item.options[letter]


# ----------------------------------------------------------------------------- adversarial suite


def test_mcit_answer_replaced_by_same_category_option():
    items, prefs, skips = run("MCIT", [M0, M1, M2, AV0])
    base, inst = (
        items["MCIT:base:music_avqa:avqa-train.json:0"],
        items["MCIT:instruction:music_avqa:avqa-train.json:0"],
    )
    # Temporal vocabulary minus the answer is exactly four instruments: three distractors + the replacement
    assert {norm(t) for t in base.options.values()} == {"guitar", "violin", "drum", "flute"}
    assert base.answer is None and base.abstain_letter is None and base.instruction == ""
    assert list(inst.options) == ["A", "B", "C", "D", "E"] and inst.options["E"] == NONE_OF_THE_ABOVE
    assert inst.answer == inst.abstain_letter == "E"
    assert inst.instruction == TEMPLATES["MCIT"][inst.template_id].instruction
    assert base.media == inst.media == M0.media
    replacement = base.meta["replacement"]
    assert base.meta["replacement_from"] == "T3+T2" and norm(replacement) in {
        "guitar",
        "violin",
        "drum",
        "flute",
    }
    pb, pi = prefs[base.id], prefs[inst.id]
    letter = next(k for k, v in base.options.items() if norm(v) == norm(replacement))
    assert pb.rejected == pi.rejected == f"{letter}. {base.options[letter]}"
    assert pb.chosen == ABSTENTIONS["MCIT"] and pi.chosen == "E. None of the above"
    assert pb.visual is None and pb.audio is None
    # AVQA: its own options without the answer, plus an animal (T2 group mate of "dog") replacing it
    av = items["MCIT:instruction:avqa:train_qa.json:0"]
    assert {norm(t) for t in list(av.options.values())[:4]} == {"cat", "cow", "car", "bird"}
    # yes/no question: nothing of the same kind can replace "yes" -> counted skip
    assert skips == {"eligible": 4, "yes/no question: no same-kind replacement for the answer": 1}


def test_icit_options_unrelated_to_question_and_clip():
    items, prefs, _ = run("ICIT", [AV0, M0, M1])
    av = items["ICIT:instruction:avqa:train_qa.json:0"]
    opts = [norm(t) for t in list(av.options.values())[:-1]]
    assert len(opts) == 4 and av.meta["options_from"] == "T1"
    # T1: unrelated to dog, cat, cow (animals) AND car (vehicle) -> only instruments remain
    assert set(opts) <= {"piano", "guitar", "violin", "drum", "flute"}
    assert av.answer == "E"
    m = items["ICIT:base:music_avqa:avqa-train.json:0"]  # clip of piano + guitars: animals / vehicles only
    assert all(
        norm(t) in {"dog", "cat", "cow", "bird", "car", "train", "siren", "truck"} for t in m.options.values()
    )
    assert m.answer is None
    assert prefs[m.id].rejected in {f"{k}. {v}" for k, v in m.options.items()}


@pytest.mark.parametrize("task,stream", [("MVIT", "video"), ("MAIT", "audio")])
def test_mismatched_stream_from_unrelated_clip(task, stream):
    items, prefs, _ = run(task, [M0, M1, AV0])
    item = items[f"{task}:instruction:music_avqa:avqa-train.json:0"]
    # the only clip unrelated to piano/guitar is AV0's (dog)
    own, other = spec(M0), spec(AV0)
    expected = combine(video=other, audio=own) if stream == "video" else combine(video=own, audio=other)
    assert from_json(item.media) == expected
    assert item.meta["partner"] == AV0.key and item.meta["partner_check"] == "t1"
    assert item.answer == item.abstain_letter == "E"
    answer_letter = next(k for k, v in item.options.items() if norm(v) == "piano")  # options stay plausible
    pref = prefs[item.id]
    assert pref.rejected == f"{answer_letter}. Piano"
    anchor = pref.visual if stream == "video" else pref.audio
    assert (pref.audio if stream == "video" else pref.visual) is None
    assert anchor.response == f"{answer_letter}. Piano"
    assert from_json(anchor.clean) == own and anchor.perturbed == item.media
    assert sorted(item.source_ids) == sorted(
        {"music_avqa/videos/00000001.mp4", "avqa/videos/aaaaaaaaaaa_000010.mp4"}
    )
    assert items[f"{task}:base:music_avqa:avqa-train.json:0"].answer is None
    assert prefs[f"{task}:base:music_avqa:avqa-train.json:0"].chosen == ABSTENTIONS[task]


@pytest.mark.parametrize("task,op", [("MVT", drop_video), ("MAT", mute)])
def test_missing_stream(task, op):
    single = music(9, "00000009", "How many instruments are sounding?", "two", "Count", modality="Audio")
    items, prefs, skips = run(task, [M0, M2, single])
    item = items[f"{task}:instruction:music_avqa:avqa-train.json:0"]
    assert from_json(item.media) == op(spec(M0))
    assert "piano" in {norm(v) for v in item.options.values()} and item.answer == "E"
    pref = prefs[item.id]
    anchor = pref.visual if task == "MVT" else pref.audio
    assert anchor.clean == M0.media and anchor.perturbed == item.media
    assert anchor.response == pref.rejected and pref.rejected.endswith(". Piano")
    yes_no = items[f"{task}:base:music_avqa:avqa-train.json:2"]
    assert [norm(v) for v in yes_no.options.values()] in (["yes", "no"], ["no", "yes"])
    assert skips == {"eligible": 3, "single-modality question": 1}
    assert not run(task, [AV0])[0]  # modality dependency uses MUSIC-AVQA only (paper A.2)


# ----------------------------------------------------------------------------- compositional suite


def _order_texts(a, b):
    return {f.format(a=a, b=b) for f, _ in ORDER_PHRASES}


def test_cot_stitch_options_and_media():
    items, prefs, _ = run("COT-Stitch", [DOG, SIREN, CAT, COW])
    item = items[
        "COT-Stitch:instruction:audioset:eval_segments.csv:0"
    ]  # Dog: the only unrelated event is Siren
    assert from_json(item.media) == Concat((spec(DOG), spec(SIREN)))
    right = item.options[item.answer]
    assert right in _order_texts("Dog", "Siren") and item.abstain_letter == "E" and item.answer != "E"
    phrase = next(p for p in ORDER_PHRASES if p[0].format(a="Dog", b="Siren") == right)
    pref = prefs[item.id]
    assert pref.chosen == f"{item.answer}. {right}"
    wrong = pref.rejected.split(". ", 1)[1]
    assert wrong in {phrase[0].format(a="Siren", b="Dog"), phrase[1].format(a="Dog", b="Siren")}
    others = set(list(item.options.values())[:4]) - {right, wrong}
    simultaneous = {s.format(a="Dog", b="Siren") for s in SIMULTANEOUS}
    assert len(others & simultaneous) == 1
    assert others - simultaneous <= {phrase[0].format(a="Cat", b="Cow"), phrase[0].format(a="Cow", b="Cat")}
    assert (
        items["COT-Stitch:base:audioset:eval_segments.csv:0"].answer == item.answer
    )  # not an abstention task
    assert item.category == "Temporal" and pref.visual is None and pref.audio is None


def test_cot_swap_media_and_both_anchors():
    items, prefs, _ = run("COT-Swap", [DOG, SIREN, CAT, COW])
    item = items["COT-Swap:instruction:audioset:eval_segments.csv:0"]
    A, B = spec(DOG), spec(SIREN)
    assert from_json(item.media) == concat(combine(video=A, audio=B), combine(video=B, audio=A))
    assert item.answer == "E" and items["COT-Swap:base:audioset:eval_segments.csv:0"].answer is None
    pref = prefs[item.id]
    video_order = pref.rejected.split(". ", 1)[1]
    assert video_order in _order_texts("Dog", "Siren")  # the tempting option follows the video
    # visual anchor keeps the presented audio (Siren, then Dog): clean = Concat([B, A])
    assert from_json(pref.visual.clean) == concat(B, A) and pref.visual.perturbed == item.media
    phrase = next(p for p in ORDER_PHRASES if p[0].format(a="Dog", b="Siren") == video_order)
    assert pref.visual.response.split(". ", 1)[1] in {
        phrase[0].format(a="Siren", b="Dog"),
        phrase[1].format(a="Dog", b="Siren"),
    }
    # audio anchor (released-code variant) keeps the presented video: clean = Concat([A, B])
    assert from_json(pref.audio.clean) == concat(A, B) and pref.audio.response == pref.rejected
    assert pref.chosen == "E. None of the above"


def test_cat_binding_matches_media():
    records = [DOG, SIREN, CAT, COW] + [
        segment(10 + i, lab) for i, lab in enumerate(["Bird", "Truck", "Car", "Train"])
    ]
    modes = set()
    for seed in range(6):
        items, prefs, _ = run("CAT", records, seed=seed)
        for item in (i for i in items.values() if i.setting == "base"):
            media = from_json(item.media)
            a, b = item.meta["events"]
            if isinstance(media, Overlay):
                attribute = "loudness"
                assert media.gains == (1.0, 0.3) and media.video == 0
            else:
                attribute = "duration"
                first, second = media.parts
                assert first == spec(next(r for r in records if r.labels == [a]))
                assert second.end - second.start == pytest.approx(10.0 / 3)  # a third of A's length
            modes.add(attribute)

            def render(hi_event, lo_event, swap=False, attribute=attribute):
                out = set()
                for tpl in BINDINGS:
                    for hi, lo in ATTRIBUTE_WORDS[attribute]:
                        hi, lo = (lo, hi) if swap else (hi, lo)
                        out |= {
                            tpl.format(p=hi_event, q=lo_event, hi=hi, lo=lo),
                            tpl.format(p=lo_event, q=hi_event, hi=lo, lo=hi),
                        }
                return {t[:1].upper() + t[1:] for t in out}

            right, wrong = item.options[item.answer], prefs[item.id].rejected.split(". ", 1)[1]
            assert right in render(a, b) and wrong in render(a, b, swap=True)
            assert sorted(re.findall(r"\w+", right)) == sorted(re.findall(r"\w+", wrong))  # Winoground
    assert modes == {"loudness", "duration"}


# ----------------------------------------------------------------------------- shared behaviour


def many_records(n=60):
    rng = random.Random(1)
    recs = []
    for i in range(n):
        inst = rng.choice(GROUPS["Music"]).lower()
        recs.append(
            music(
                i,
                f"{i // 2:08d}",
                f"Which instrument plays after the {inst}?",
                rng.choice(T3["Temporal"]),
                "Temporal",
            )
        )
        opts = rng.sample(["dog", "cat", "cow", "car", "train", "siren"], 4)
        recs.append(avqa(i, f"vid{i:08d}_000000", "What is making the sound?", opts[0], opts))
        recs.append(segment(100 + i, rng.choice([m for ms in GROUPS.values() for m in ms])))
    return recs


def test_deterministic_order_independent_and_seeded():
    recs = many_records(20)
    tables = make_tables()
    a, pa, _ = generate_all(recs, tables, seed=7)
    b, pb, _ = generate_all(list(reversed(recs)), tables, seed=7)
    assert [i.to_row() for i in a] == [i.to_row() for i in b]
    assert [p.to_row() for p in pa] == [p.to_row() for p in pb]
    c, _, _ = generate_all(recs, tables, seed=8)
    assert [i.to_row() for i in a] != [i.to_row() for i in c]
    assert {i.task for i in a} == set(TASKS)


def test_at_least_five_templates_each_used():
    items, _, _ = generate_all(many_records(), make_tables(), seed=0)
    for task in TASKS:
        assert len(TEMPLATES[task]) >= 5
        assert len({i.template_id for i in items if i.task == task}) >= 5, task


def test_select_and_partner_key():
    recs, tables = many_records(20), make_tables()
    full, _, _ = generate_all(recs, tables, seed=0)
    half = lambda r: r.index % 2 == 0
    part, _, _ = generate_all(recs, tables, seed=0, select=half)
    assert {i.id for i in part} == {
        i.id for i in full if i.meta["record"].rsplit(":", 1)[1] in {str(k) for k in range(0, 200, 2)}
    }
    assert [i.to_row() for i in part] == [i.to_row() for i in full if i.id in {p.id for p in part}]
    side = {r.key: r.index % 3 == 0 for r in recs}  # partners must come from the same side
    keyed, _, _ = generate_all(recs, tables, seed=0, partner_key=lambda r: side[r.key])
    paired = [i for i in keyed if "partner" in i.meta]
    assert paired and all(side[i.meta["partner"]] == side[i.meta["record"]] for i in paired)


def test_render_prompt_is_the_preference_prompt():
    assert render_prompt("Q?", {"A": "x", "B": "y"}, "Pick one.") == "Q?\nA. x\nB. y\nPick one."
    assert render_prompt("Q?", {"A": "x"}) == "Q?\nA. x"
    items, prefs, _ = generate_all(many_records(5), make_tables(), seed=0)
    for item, pref in zip(items, prefs):
        assert pref.id == item.id and pref.prompt == item_prompt(item)
        assert pref.prompt.startswith(item.question) and (item.setting == "base") == (item.instruction == "")
        assert (item.task in ABSTAIN_TASKS) == (item.answer in (None, item.abstain_letter))


def test_preference_rows_round_trip_through_datasets():
    _, prefs, _ = generate_all(many_records(5), make_tables(), seed=0)
    ds = to_dataset(prefs, PREFERENCE_FEATURES)
    assert len(ds) == len(prefs) and ds.features == PREFERENCE_FEATURES
    back = [PreferenceExample.from_row(r) for r in ds]
    assert back == prefs
    assert any(p.visual for p in back) and any(p.audio for p in back)


def test_options_validated():
    with pytest.raises(ValueError, match="num_options"):
        TaskOptions(num_options=2)
    with pytest.raises(ValueError, match="settings"):
        GENERATORS["MCIT"]([M0], make_tables(), seed=0, settings=("zero-shot",))


def test_clean_keeps_media_and_answer():
    recs = [
        music(0, "00000001", "Where is the violin?", "left", "Localization"),
        avqa(1, "abcdefghijk_000010", "What is making the sound?", "dog", ["dog", "car", "piano", "train"]),
    ]
    items, prefs, _ = run("CLEAN", recs)
    assert len(items) == 4 and {i.setting for i in items.values()} == {"base", "instruction"}
    for item in items.values():
        rec = recs[0] if item.source == "music_avqa" else recs[1]
        assert item.spec == spec(rec)  # unperturbed media
        assert norm(text(item, item.answer)) == norm(rec.answer)  # the real answer is among the options
        last = list(item.options)[-1]
        assert item.task == "CLEAN" and item.abstain_letter == (
            last if item.setting == "instruction" else None
        )
        assert item.answer != item.abstain_letter
    for pref in prefs.values():
        assert pref.visual is None and pref.audio is None and pref.chosen != pref.rejected
        assert pref.chosen.split(".")[0] in "ABCD"


def test_same_group_distractors_keep_to_the_answers_kind():
    """T3's Localization mixes places, instruments and animals (as the embedded world's does): by default an
    instrument answer may be offered a place or an animal; ``distractors: same_group`` offers only the
    answer's T2 group (places: no group) and never a wording of the answer itself ("in the middle")."""
    mixed = {"Localization": ["left", "right", "middle", "in the middle", "piano", "guitar", "dog", "cat"]}
    tables = LookupTables(t1=make_tables().t1, t2=GROUPS, t3=mixed)
    recs = [
        music(0, "00000001", "What is the left instrument?", "piano", "Localization"),
        music(1, "00000002", "Where is the loudest instrument?", "middle", "Localization"),
    ]

    def offered(options):
        items, _ = GENERATORS["CLEAN"](recs, tables, seed=0, settings=("base",), options=options)
        return {i.meta["record"].split(":")[-1]: {norm(t) for t in i.options.values()} for i in items}

    same = offered(TaskOptions(distractors="same_group"))
    assert same["0"] == {"piano", "guitar"}  # the only other instrument in T3's Localization
    assert same["1"] == {"middle", "left", "right"}  # no "in the middle", no instrument, no animal
    by_category = offered(TaskOptions())  # the default: any T3 answer of the category
    assert len(by_category["0"]) == 4 and by_category["0"] - {"piano", "guitar"}  # a place or an animal
    with pytest.raises(ValueError, match="distractors"):
        TaskOptions(distractors="same_kind")
