"""T1/T2/T3 derivation on a small ontology, name mapping, overrides, save/load."""

from __future__ import annotations

import json

import pytest

from cavpref.data_prep.readers import read_ontology
from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tables import (
    LookupTables,
    TablesConfig,
    TablesError,
    apply_overrides,
    build_tables,
    normalise,
)


def cls(id_, name, children=(), restrictions=()):
    return {
        "id": id_,
        "name": name,
        "description": "",
        "citation_uri": "",
        "positive_examples": [],
        "child_ids": list(children),
        "restrictions": list(restrictions),
    }


ONTOLOGY = [
    cls("/m/04rlf", "Music", ["/m/04szw"]),
    cls("/m/04szw", "Musical instrument", ["/m/0342h", "/m/026t6", "/m/0239kh", "/m/0395lw"], ["abstract"]),
    cls("/m/0342h", "Guitar", ["/m/042v_gx"]),
    cls("/m/042v_gx", "Acoustic guitar"),
    cls("/m/026t6", "Drum"),
    cls("/m/0239kh", "Bagpipes"),
    cls("/m/0395lw", "Bell"),  # two parents: Musical instrument and Sounds of things
    cls("/m/0jbk", "Animal", ["/m/068hy"]),
    cls("/m/068hy", "Domestic animals, pets", ["/m/0bt9lr", "/m/01yrx"]),
    cls("/m/0bt9lr", "Dog"),
    cls("/m/01yrx", "Cat"),
    cls("/t/dd00041", "Sounds of things", ["/m/07yv9", "/m/0395lw"]),
    cls("/m/07yv9", "Vehicle", ["/m/019jd"]),
    cls("/m/019jd", "Boat, Water vehicle", ["/m/0hsrw"]),
    cls("/m/0hsrw", "Sailboat, sailing ship"),
    cls("/m/0static", "Static", [], ["blacklist"]),
]


def music(answer, category, slots=()):
    return QARecord(
        "music_avqa",
        "00000001",
        "avqa-train.json",
        0,
        "{}",
        "q?",
        answer,
        None,
        category,
        "Audio-Visual",
        None,
        meta={"slots": [list(s) for s in slots]},
    )


RECORDS = [
    music("two", "Count"),
    music("yes", "Count"),
    music("two", "Count"),
    music("Two", "Count"),
    music("acoustic guitar", "Localization"),
    music("left", "Localization"),
    music("guzheng", "Existential", [("<Object>", "guzheng")]),
    music("drum", "Existential"),
    music("bagpipe", "Comparative", [("<Object>", "bagpipe"), ("<LR>", "left")]),
    QARecord(
        "avqa",
        "x_000000",
        "val_qa.json",
        0,
        "{}",
        "What is making the sound?",
        "Sailboat set sail",
        ["Sailboat set sail", "Yacht consignment", "dogs", "Pet"],
        "Existential",
        "Both",
        "Which",
    ),
    QARecord("audioset", "yt", "eval_segments.csv", 0, "{}", start=0.0, end=10.0, labels=["Dog", "Cat"]),
]

ANIMAL = ["Animal", "Cat", "Dog", "Domestic animals, pets", "Pet"]
MUSIC = ["Acoustic guitar", "Bagpipes", "Bell", "Drum", "Guitar", "guzheng", "Music"]
THINGS = [
    "Bell",
    "Boat, Water vehicle",
    "Sailboat set sail",
    "Sailboat, sailing ship",
    "Sounds of things",
    "Vehicle",
]


@pytest.fixture
def ontology(tmp_path):
    path = tmp_path / "ontology.json"
    path.write_text(json.dumps(ONTOLOGY))
    return read_ontology(str(path))


@pytest.fixture
def tables(ontology):
    return build_tables(RECORDS, ontology)


def test_normalise():
    assert normalise("acoustic_guitar") == normalise("Acoustic guitar") == "acoustic guitar"
    assert normalise("The Bagpipes") == normalise("bagpipe") == "bagpipe"
    assert normalise("Ambulance (siren)") == "ambulance siren"
    assert normalise("bass") == "bass" and normalise("Sailboat, sailing ship") == "sailboat sailing ship"


def test_t2_groups_from_top_level_supercategories(tables):
    assert tables.t2 == {"Animal": ANIMAL, "Music": MUSIC, "Sounds of things": THINGS}
    assert tables.group_of("dogs") == "Animal" and tables.group_of("acoustic_guitar") == "Music"
    assert tables.groups_of("Bell") == ["Music", "Sounds of things"] and tables.group_of("Bell") == "Music"
    assert tables.group_of("Yacht consignment") is None and tables.group_of("Static") is None


def test_name_mapping_and_fallbacks(tables):
    m = tables.mapping
    assert m["acoustic guitar"] == {"class": "Acoustic guitar", "how": "name"}
    assert m["bagpipe"] == {"class": "Bagpipes", "how": "name"}
    assert m["dogs"] == {"class": "Dog", "how": "name"}
    assert m["Pet"] == {"class": "Domestic animals, pets", "how": "alias"}
    assert m["Sailboat set sail"] == {"class": "Sailboat, sailing ship", "how": "ngram"}
    assert m["guzheng"] == {
        "class": "Musical instrument",
        "how": "instrument",
    }  # MUSIC-AVQA <Object> fallback
    assert m["Yacht consignment"] == m["left"] == m["two"] == {"class": "", "how": "none"}


def test_t1_unrelated_means_no_shared_group(tables):
    assert tables.unrelated("Bell") == ANIMAL
    assert tables.unrelated("guzheng") == sorted(
        ANIMAL + [t for t in THINGS if t != "Bell"], key=str.casefold
    )
    assert (
        tables.unrelated("dogs") == tables.unrelated("Dog") == sorted(set(MUSIC + THINGS), key=str.casefold)
    )
    assert tables.unrelated("Yacht consignment") == [] and "Yacht consignment" not in tables.t1
    for a, others in tables.t1.items():  # symmetric, never self
        assert a not in others and all(a in tables.t1[b] for b in others)


def test_t3_answer_vocabulary_per_category(tables):
    assert tables.vocab("Count") == ["two", "yes"]  # 'Two' folds into the more frequent 'two'
    assert tables.vocab("Localization") == ["acoustic guitar", "left"]
    assert tables.vocab("Existential") == [
        "dogs",
        "drum",
        "guzheng",
        "Pet",
        "Sailboat set sail",
        "Yacht consignment",
    ]
    assert tables.vocab("Comparative") == ["bagpipe"] and tables.vocab("World knowledge") == []
    with pytest.raises(KeyError, match="unknown category"):
        tables.vocab("Colour")


def test_group_level_one(ontology):
    t = build_tables(RECORDS, ontology, TablesConfig(group_level=1, include_ontology_classes=False))
    assert t.group_of("Dog") == "Domestic animals, pets" and t.group_of("Sailboat set sail") == "Vehicle"
    assert t.group_of("guzheng") == "Musical instrument"
    # only strings seen in the records (labels, then mapped answers/options as spelled there) are members now
    assert t.t2 == {
        "Domestic animals, pets": ["Cat", "Dog", "Pet"],
        "Vehicle": ["Sailboat set sail"],
        "Musical instrument": ["acoustic guitar", "bagpipe", "drum", "guzheng"],
    }


def test_no_ontology_gives_t3_only():
    t = build_tables(RECORDS)
    assert t.t1 == {} and t.t2 == {} and t.vocab("Count") == ["two", "yes"]


def test_save_load_round_trip_and_reproducible(tables, ontology, tmp_path):
    a = tables.save(tmp_path / "a" / "lookup_tables.json")
    loaded = LookupTables.load(a)
    assert loaded == tables and loaded.unrelated("bell") == ANIMAL
    b = build_tables(list(reversed(RECORDS)), ontology).save(tmp_path / "b.json")
    assert a.read_bytes() == b.read_bytes()
    assert json.loads(a.read_text())["version"] == 1
    (tmp_path / "bad.json").write_text(json.dumps({**tables.to_dict(), "version": 2}))
    with pytest.raises(TablesError, match="bad.json: key 'version'"):
        LookupTables.load(tmp_path / "bad.json")


def test_overrides_replace_key_by_key(tables, tmp_path):
    path = tmp_path / "user.json"
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "_comment": "hand edits",
                "t1": {"Dog": ["Bell"], "Cat": None},
                "t2": {"Pets": ["Dog", "Cat"]},
                "t3": {"Count": ["one", "two"]},
            }
        )
    )
    merged = apply_overrides(tables, path)
    assert merged.unrelated("dogs") == ["Bell"] and "Cat" not in merged.t1
    assert merged.t1["Bell"] == tables.t1["Bell"]
    assert merged.t2["Pets"] == ["Dog", "Cat"] and merged.t2["Animal"] == ANIMAL
    assert merged.groups_of("Dog") == ["Animal", "Pets"]
    assert merged.vocab("Count") == ["one", "two"] and merged.vocab("Localization") == tables.vocab(
        "Localization"
    )
    assert tables.unrelated("Dog") != ["Bell"] and "Cat" in tables.t1  # input unchanged
    assert LookupTables.load(merged.save(tmp_path / "m.json")) == merged


@pytest.mark.parametrize(
    "content,match",
    [
        ({"t4": {}}, r"user.json: unknown key\(s\) \['t4'\]"),
        ({"t1": {"Dog": "Bell"}}, r"user.json: key t1.'Dog': expected a list of strings or null"),
        ({"t3": []}, r"user.json: key 't3': expected an object"),
        ({"version": 2}, r"user.json: key 'version'"),
        ([], r"user.json: expected a JSON object"),
    ],
)
def test_override_errors_name_file_and_key(tables, tmp_path, content, match):
    path = tmp_path / "user.json"
    path.write_text(json.dumps(content))
    with pytest.raises(TablesError, match=match):
        apply_overrides(tables, path)
