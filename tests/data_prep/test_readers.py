"""Readers on hand-written files reproducing every quirk of the released formats (SOURCE_FORMATS.md)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from cavpref.data_prep.readers import (
    ReaderConfig,
    ReaderError,
    filter_single_modality,
    read_avqa,
    read_music_avqa,
    read_ontology,
    read_source,
)
from cavpref.data_prep.readers.categories import avqa_category
from cavpref.media.spec import Combine, Source, from_json

# ----------------------------------------------------------------------------- fixtures (as released)

MUSIC_V1 = r"""[
 {"video_id": "00000108", "question_id": 10, "type": "[\"Audio\", \"Comparative\"]",
  "question_content": "Is the <Object> louder than the <Object>?", "templ_values": "[\"guzheng\", \"piano\"]",
  "question_deleted": 0, "anser": "yes"},
 {"video_id": "00000093", "question_id": 10, "type": "[\"Audio-Visual\", \"Counting\"]",
  "question_content": "How many sounding <Object> in the video？", "templ_values": "[\"acoustic_guitar\"]",
  "question_deleted": 0, "anser": "two"},
 {"video_id": "00000093", "question_id": 11, "type": "[\"Audio-Visual\", \"Location\"]",
  "question_content": "What is the <LR> instrument of the <FL> sounding instrument? ",
  "templ_values": "[\"left\", \"first\"]", "question_deleted": 0, "anser": "acoustic_guitar"},
 {"video_id": "00000200", "question_id": 12, "type": "[\"Visual\", \"Counting\"]",
  "question_content": "Is there a <Object> in the entire video?", "templ_values": "[\"erhu\"]",
  "question_deleted": 0, "anser": "yes"},
 {"video_id": "00000200", "question_id": 13, "type": "[\"Audio-Visual\", \"Temporal\"]",
  "question_content": "What is the <TH> instrument that comes in <BA> the <Object>?",
  "templ_values": "[\"second\", \"after\", \"electric_bass\"]", "question_deleted": 1, "anser": "more than ten"},
 {"video_id": "00000201", "question_id": 14, "type": "[\"Audio-Visual\", \"Existential\"]",
  "question_content": "Is there a voiceover?", "templ_values": "[]", "question_deleted": 0, "anser": "no"}
]"""

MUSIC_V2 = r"""[
 {"video_id": "6cjIJVzP6eI_#03", "type": "[\"Audio-Visual\", \"Comparative\"]",
  "question_content": "Is the <Object> on the <LR> more rhythmic than the <Object> on the <LR>?",
  "templ_values": "[\"flute\", \"left\", \"clarinet\", \"right\"]", "anser": "no"},
 {"video_id": "iveNvQ4jCis_flip", "question_content": "Which <Object> makes the sound <FL>?",
  "templ_values": "['xylophone', 'last']", "anser": "right", "person": "True",
  "type": "[\"Audio-Visual\", \"Temporal\"]"},
 {"video_id": "sa00006547", "unmatch_audio": "00008531", "audio_instrument": "pipa", "video_instrument": "trumpet",
  "question_content": "Is this sound from the instrument in the video?", "anser": "no", "templ_values": [],
  "type": "[\"Audio-Visual\", \"Existential\"]"},
 {"video_id": "00003353", "type": "[\"Visual\", \"Location\"]", "question_content": "Where is the performance?",
  "templ_values": "[]", "question_deleted": 0, "anser": "outdoor"}
]"""

AVQA = [
    {
        "id": 183,
        "video_name": "-HG3Omg_89c_000030",
        "video_id": 341,
        "question_text": "What happened in the video?",
        "multi_choice": ["motorboat", "Yacht consignment", "Sailboat set sail", "Consignment car"],
        "answer": 1,
        "question_relation": "View",
        "question_type": "Happening",
    },
    {
        "id": 1139,
        "video_name": "06GyG4-wONQ_000006",
        "video_id": 1395,
        "question_text": "How many animals are there in the video?",
        "multi_choice": ["3", "One", "4", "2"],
        "answer": 3,
        "question_relation": "Both",
        "question_type": "Which",
    },
    {
        "id": 1205,
        "video_name": "0AEJTlHIhz0_000358",
        "video_id": 1467,
        "question_text": "Why do the people in the video scream？ ",
        "multi_choice": [
            "Roller coaster",
            "On a pirate ship",
            "Take Ferris wheel",
            "Take the jumping machine",
        ],
        "answer": 0,
        "question_relation": "Both",
        "question_type": "Why",
    },
    {
        "id": 7,
        "video_name": "abcdefghijk_000010",
        "video_id": 8,
        "question_text": "Where is the sound coming from?",
        "multi_choice": ["dog", "cat", "car", "boat"],
        "answer": 0,
        "question_relation": "Sound",
        "question_type": "Come From",
    },
    {
        "id": 8,
        "video_name": "abcdefghijk_000010",
        "video_id": 8,
        "question_text": "Where is the dog barking?",
        "multi_choice": ["yard", "street", "beach", "room"],
        "answer": 2,
        "question_relation": "Both",
        "question_type": "Which",
    },
]

SEGMENTS = """# Segments csv created Sun Mar  5 10:54:25 2017
# num_ytids=3, num_segs=3, num_unique_labels=3, num_positive_labels=4
# YTID, start_seconds, end_seconds, positive_labels
--4gqARaEJE, 0.000, 10.000, "/m/068hy,/m/0bt9lr"
-0RWZT-miFs, 420.000, 430.000, "/m/0342h"
zzz_ABC-123, 30.000, 40.000, "/m/0bt9lr"
"""
# A copy in the wild: the third comment line lost its '# '.
SEGMENTS_LOST_HASH = SEGMENTS.replace("# YTID", "YTID")
LABELS = (
    'index,mid,display_name\n0,/m/068hy,"Domestic animals, pets"\n1,/m/0bt9lr,"Dog"\n2,/m/0342h,"Guitar"\n'
)


@pytest.fixture
def world(tmp_path):
    """A data root laid out like the synthetic world."""
    files = {
        "music_avqa/json/avqa-train.json": MUSIC_V1,
        "music_avqa/json/avqa-v2.json": MUSIC_V2,
        "avqa/annotation/train_qa.json": json.dumps(AVQA),
        "audioset/eval_segments.csv": SEGMENTS,
        "audioset/balanced_train_segments.csv": SEGMENTS_LOST_HASH,
        "audioset/class_labels_indices.csv": LABELS,
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    return tmp_path


def src(path, start=0.0, end=None):
    return Source(path, start, end)


# ----------------------------------------------------------------------------- MUSIC-AVQA


def test_music_avqa_v1_records_field_by_field(world):
    res = read_music_avqa(str(world / "music_avqa/json/avqa-train.json"))
    assert res.n_in == 6 and len(res.records) == 6 and res.reconciles
    r0, r1, r2, r3, r4, r5 = res.records
    assert (r0.source, r0.source_id, r0.index, r0.question, r0.answer, r0.options) == (
        "music_avqa",
        "00000108",
        0,
        "Is the guzheng louder than the piano?",
        "yes",
        None,
    )
    assert (r0.category, r0.modality, r0.qtype) == ("Comparative", "Audio", "Comparative")
    assert from_json(r0.media) == src("music_avqa/videos/00000108.mp4")
    assert r0.meta["question_id"] == 10 and r0.meta["slots"] == [
        ["<Object>", "guzheng"],
        ["<Object>", "piano"],
    ]
    # question_id 10 repeats with another answer: both kept, told apart by file + index
    assert r1.meta["question_id"] == 10 and r1.key != r0.key
    assert r1.question == "How many sounding acoustic guitar in the video?"  # full-width ？ -> ?
    assert (r1.answer, r1.category) == ("two", "Count")
    assert r2.question == "What is the left instrument of the first sounding instrument?"  # trailing space
    assert (r2.answer, r2.category) == ("acoustic guitar", "Localization") and r2.meta[
        "anser"
    ] == "acoustic_guitar"
    assert (r3.modality, r3.category) == ("Visual", "Count")
    assert r4.question == "What is the second instrument that comes in after the electric bass?"
    assert (r4.answer, r4.category, r4.meta["question_deleted"]) == ("more than ten", "Temporal", 1)
    assert (r5.question, r5.answer, r5.category, r5.meta["slots"]) == (
        "Is there a voiceover?",
        "no",
        "Existential",
        [],
    )


def test_music_avqa_v2_variations(world):
    res = read_music_avqa(str(world / "music_avqa/json/avqa-v2.json"))
    r0, r1, r2, r3 = res.records
    assert r0.source_id == "6cjIJVzP6eI_#03" and "question_id" not in r0.meta
    assert from_json(r0.media) == src("music_avqa/videos/6cjIJVzP6eI_#03.mp4")
    assert r0.question == "Is the flute on the left more rhythmic than the clarinet on the right?"
    assert r1.source_id == "iveNvQ4jCis_flip" and r1.meta["person"] == "True"
    assert r1.question == "Which xylophone makes the sound last?"  # single-quoted list read too
    # real-list templ_values; the video of one clip with the audio of another
    assert from_json(r2.media) == Combine(
        video=src("music_avqa/videos/sa00006547.mp4"), audio=src("music_avqa/videos/00008531.mp4")
    )
    assert (r2.meta["audio_instrument"], r2.meta["video_instrument"]) == ("pipa", "trumpet")
    assert (r3.category, r3.answer) == ("Localization", "outdoor")


def test_media_root_dir_and_template_configurable(world):
    f = str(world / "music_avqa/json/avqa-v2.json")
    cfg = ReaderConfig(
        data_root=str(world), video_dir="MUSIC-AVQA-videos-Real", video_template="{video_id}.mkv"
    )
    assert from_json(read_music_avqa(f, cfg).records[0].media) == src(
        "MUSIC-AVQA-videos-Real/6cjIJVzP6eI_#03.mkv"
    )
    cfg = ReaderConfig(data_root=str(world / "music_avqa"))
    assert from_json(read_music_avqa(f, cfg).records[3].media) == src("videos/00003353.mp4")
    with pytest.raises(ReaderError, match="not under the data root"):
        read_music_avqa(f, ReaderConfig(data_root=str(world / "avqa")))
    with pytest.raises(ReaderError, match="field 'video_dir': must be relative to the data root"):
        read_music_avqa(f, ReaderConfig(video_dir="/abs/videos"))


# ----------------------------------------------------------------------------- AVQA


def test_avqa_records_and_categories(world):
    res = read_avqa(str(world / "avqa/annotation/train_qa.json"))
    r = res.records
    assert [x.category for x in r] == [
        "Existential",
        "Existential",
        "World knowledge",
        "Localization",
        "Localization",
    ]
    assert (r[0].source, r[0].source_id, r[0].answer, r[0].modality, r[0].qtype) == (
        "avqa",
        "-HG3Omg_89c_000030",
        "Yacht consignment",
        "View",
        "Happening",
    )
    assert r[0].options == ["motorboat", "Yacht consignment", "Sailboat set sail", "Consignment car"]
    assert r[0].meta == {"id": 183, "video_id": 341, "answer_index": 1}
    assert from_json(r[0].media) == src("avqa/videos/-HG3Omg_89c_000030.mp4")
    assert r[1].answer == "2"
    assert r[2].question == "Why do the people in the video scream?"


@pytest.mark.parametrize(
    "question,qtype,expected",
    [
        ("What happened in the video?", "Happening", "Existential"),
        ("What is making the sound?", "Which", "Existential"),
        ("Where does the sound come from?", "Come From", "Localization"),
        ("Where was the video taken?", "Where", "Localization"),
        ("Where is the dog?", "Which", "Localization"),  # prefix beats the type lookup
        ("What happened before the dog barked?", "Happening", "Temporal"),
        ("What did the man do next?", "Before Next", "Temporal"),
        ("When does the bell ring?", "When", "Temporal"),
        ("Why does the crowd cheer?", "Why", "World knowledge"),
        ("Why is the man running?", "Which", "World knowledge"),
        ("What is the hammer used for?", "Used For", "World knowledge"),
        ("What is the purpose of the whistle?", "Which", "World knowledge"),
        ("What is this?", "Mystery", None),
    ],
)
def test_avqa_category_rule(question, qtype, expected):
    assert avqa_category(question, qtype) == expected


# ----------------------------------------------------------------------------- AudioSet


def test_audioset_segments_quirks(world):
    labels = str(world / "audioset/class_labels_indices.csv")
    for name in ("eval_segments.csv", "balanced_train_segments.csv"):  # with / without the third '# '
        res = read_source("audioset", [world / "audioset" / name], labels=labels)
        assert res.n_in == 3 and res.reconciles
        r0, r1, r2 = res.records
        assert (r0.source, r0.source_id, r0.start, r0.end) == ("audioset", "--4gqARaEJE", 0.0, 10.0)
        assert (r0.labels, r0.label_ids) == (["Domestic animals, pets", "Dog"], ["/m/068hy", "/m/0bt9lr"])
        assert (r0.question, r0.answer, r0.category, r0.options) == ("", "", "", None)
        assert from_json(r1.media) == src("audioset/clips/-0RWZT-miFs_420.mp4", 0.0, 10.0)
        assert r2.meta["line"] == 6 and r2.labels == ["Dog"]


def test_audioset_full_mode_template_and_ontology_names(world, tmp_path):
    onto = tmp_path / "onto.json"
    onto.write_text(
        json.dumps(
            [
                {"id": m, "name": n, "child_ids": [], "restrictions": []}
                for m, n in [("/m/068hy", "Pets"), ("/m/0bt9lr", "Dog"), ("/m/0342h", "Guitar")]
            ]
        )
    )
    cfg = ReaderConfig(audioset_clip_mode="full", video_dir="yt", video_template="{ytid}.mp4")
    r = read_source("audioset", [world / "audioset/eval_segments.csv"], cfg, ontology=str(onto)).records
    assert from_json(r[1].media) == src("yt/-0RWZT-miFs.mp4", 420.0, 430.0)
    assert r[0].labels == ["Pets", "Dog"]
    with pytest.raises(ValueError, match="--labels"):
        read_source("audioset", [world / "audioset/eval_segments.csv"])


def test_ontology_reader(tmp_path):
    f = tmp_path / "ontology.json"
    f.write_text(
        json.dumps(
            [
                {
                    "id": "/a",
                    "name": "A",
                    "child_ids": ["/b"],
                    "restrictions": ["abstract"],
                    "description": "",
                    "citation_uri": "",
                    "positive_examples": [],
                },
                {"id": "/b", "name": "B", "child_ids": [], "restrictions": []},
            ]
        )
    )
    onto = read_ontology(str(f))
    assert onto.roots == ["/a"] and list(onto.descendants("/a")) == ["/a", "/b"]
    assert onto.classes["/a"].restrictions == ["abstract"]
    f.write_text(
        json.dumps(
            [{"id": "/a", "name": "A", "child_ids": ["/b"]}, {"id": "/b", "name": "B", "child_ids": ["/a"]}]
        )
    )
    with pytest.raises(ReaderError, match="cycle"):
        read_ontology(str(f))
    f.write_text(json.dumps([{"id": "/a", "name": "A", "child_ids": ["/zz"]}]))
    with pytest.raises(ReaderError, match=r"record 0: field 'child_ids': unknown child id"):
        read_ontology(str(f))


# ----------------------------------------------------------------------------- exclusion filter


def test_single_modality_filter_counts(world):
    music = read_source("music_avqa", sorted((world / "music_avqa/json").glob("*.json"))).records
    avqa = read_avqa(str(world / "avqa/annotation/train_qa.json")).records
    audioset = read_source(
        "audioset",
        [world / "audioset/eval_segments.csv"],
        labels=str(world / "audioset/class_labels_indices.csv"),
    ).records
    kept, excluded = filter_single_modality(music + avqa + audioset)
    assert excluded == Counter(
        {
            "music_avqa: audio-only question": 1,
            "music_avqa: visual-only question": 2,
            "music_avqa: question_deleted": 1,
            "avqa: visual-only question": 1,
            "avqa: audio-only question": 1,
        }
    )
    assert len(kept) == len(music) + len(avqa) + len(audioset) - 6
    assert {r.source for r in kept} == {"music_avqa", "avqa", "audioset"}
    assert all(r.modality in (None, "Audio-Visual", "Both") for r in kept)
