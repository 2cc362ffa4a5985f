"""The generic AV-QA JSONL (docs/your_data.md): records, categories, paths, errors naming file / record / line /
field, counts that reconcile, tables from the user's labels and options, and ``prep read --as custom``."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from cavpref.data_prep.readers import ReaderConfig, ReaderError, read_source, to_custom
from cavpref.data_prep.readers.cli import main as read_main
from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tables import build_tables
from cavpref.media.spec import Combine, Source, from_json, to_json

GOOD = {"id": "q1", "video": "clips/a.mp4", "question": "Which instrument is playing?", "answer": "violin"}


def write(path, records) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return str(path)


def test_question_and_clip_lines_become_records(tmp_path):
    f = write(
        tmp_path / "data" / "mine.jsonl",
        [
            {**GOOD, "options": ["Piano", "Violin", "Drum"], "answer": 1, "category": "count", "labels": ["Violin"],
             "audio": "sound/a.wav", "start": 2, "end": 5.5, "modality": "Audio-Visual", "dataset": "lab",
             "meta": {"rater": 3}, "_comment": "ignored"},
            "",  # blank lines are not records
            {"id": "c1", "video": "clips/b.mp4", "labels": ["Dog", "Bark"], "end": 10},
        ],
    )  # fmt: skip
    result = read_source("custom", [f])
    assert result.n_in == 2 and result.reconciles
    q, c = result.records
    assert (q.source, q.source_id, q.index, q.answer, q.options) == (
        "custom",
        "q1",
        0,
        "Violin",
        ["Piano", "Violin", "Drum"],
    )
    assert (q.category, q.modality, q.labels, q.start, q.end) == (
        "Count",
        "Audio-Visual",
        ["Violin"],
        2.0,
        5.5,
    )
    assert from_json(q.media) == Combine(
        video=Source("clips/a.mp4", 2.0, 5.5), audio=Source("sound/a.wav", 2.0, 5.5)
    )
    assert q.meta == {"line": 1, "dataset": "lab", "user": {"rater": 3}, "category_from": "given"}
    assert (c.source, c.question, c.answer, c.labels, c.index, c.meta) == (
        "custom_clips",
        "",
        "",
        ["Dog", "Bark"],
        1,
        {"line": 3},
    )
    assert from_json(c.media) == Source("clips/b.mp4", 0.0, 10.0)
    # MUSIC-AVQA's type names are categories too ("Counting" -> Count), and answers match options case-blind
    (r,) = read_source("custom", [write(tmp_path / "b.jsonl", [{**GOOD, "options": ["Violin", "x"], "category": "Counting"}])]).records  # fmt: skip
    assert (r.category, r.answer) == ("Count", "Violin")


def test_category_from_prefix_rules_then_the_default(tmp_path):
    f = write(
        tmp_path / "m.jsonl",
        [
            {**GOOD, "id": "a", "question": "How many dogs bark?"},
            {**GOOD, "id": "b", "question": "Where is the sound coming from?"},
            {**GOOD, "id": "c", "question": "What happens after the bell?"},
            {**GOOD, "id": "d", "question": "Is it raining?"},
        ],
    )
    got = [(r.category, r.meta["category_from"]) for r in read_source("custom", [f]).records]
    assert got == [("Count", "prefix rule"), ("Localization", "prefix rule"), ("Temporal", "prefix rule"),
                   ("Existential", "default")]  # fmt: skip
    cfg = ReaderConfig(default_category="World knowledge")
    assert read_source("custom", [f], cfg).records[3].category == "World knowledge"
    with pytest.raises(ReaderError, match="default_category is not a category"):
        read_source("custom", [f], ReaderConfig(default_category="Smell"))


BAD = [
    ('{"id": "x", "video": ', None, "not valid JSON"),
    ('["not", "an", "object"]', None, "record is not a JSON object"),
    ({**GOOD, "catgory": "Count"}, "catgory", "unknown field"),
    ({**GOOD, "id": "q0"}, "id", "duplicate id"),
    ({k: v for k, v in GOOD.items() if k != "video"}, "video", "missing"),
    ({**GOOD, "video": "  "}, "video", "empty"),
    ({**GOOD, "video": "../outside.mp4"}, "video", "outside the data root"),
    ({**GOOD, "start": 3, "end": 2}, "end", "bad clip"),
    ({**GOOD, "start": True}, "start", "expected int/float"),
    ({k: v for k, v in GOOD.items() if k != "answer"}, "answer", "missing"),
    ({**GOOD, "options": ["a", "b"]}, "answer", "answer not among the options"),
    ({**GOOD, "options": ["a", "b"], "answer": 2}, "answer", "answer index without options or out of range"),
    ({**GOOD, "answer": 0}, "answer", "answer index without options or out of range"),
    ({**GOOD, "options": ["a", "A"], "answer": "a"}, "options", "duplicate options"),
    ({**GOOD, "options": ["violin"]}, "options", "expected at least 2 non-empty strings"),
    ({**GOOD, "category": "Smell"}, "category", "unknown category"),
    ({**GOOD, "modality": "taste"}, "modality", "unknown modality"),
    ({**GOOD, "labels": ["Dog", ""]}, "labels", "expected a list of non-empty strings"),
    ({"id": "c", "video": "v.mp4"}, "labels", "a clip line (no question) needs labels"),
    ({"id": "c", "video": "v.mp4", "labels": ["Dog"], "answer": "yes"}, "answer", "a clip line (no question) takes no answer"),
]  # fmt: skip


@pytest.mark.parametrize("bad,field,problem", BAD)
def test_errors_name_file_record_line_and_field(tmp_path, bad, field, problem):
    f = write(tmp_path / "d" / "mine.jsonl", [{**GOOD, "id": "q0"}, "", bad])
    with pytest.raises(ReaderError) as info:
        read_source("custom", [f])
    err = info.value
    assert (err.file, err.index, err.line, err.field, err.problem) == (f, 1, 3, field, problem)
    where = f"{f}: record 1 (line 3): " + (f"field '{field}': " if field else "")
    assert str(err).startswith(where + problem)


def test_skip_counts_every_bad_line_and_reconciles(tmp_path):
    f = write(
        tmp_path / "m.jsonl", [GOOD, {**GOOD, "id": "q2", "category": "Smell"}, "{oops", {**GOOD, "id": "q1"}]
    )
    result = read_source("custom", [f], ReaderConfig(on_error="skip"))
    assert result.n_in == 4 and len(result.records) == 1 and result.reconciles
    assert result.skipped == Counter(
        {"category: unknown category": 1, "record: not valid JSON": 1, "id: duplicate id": 1}
    )
    with pytest.raises(ReaderError, match="cannot read"):
        read_source("custom", [str(tmp_path / "absent.jsonl")])


def test_paths_are_relative_to_the_file_or_video_dir_under_the_data_root(tmp_path):
    f = write(
        tmp_path / "root" / "ann" / "m.jsonl", [{**GOOD, "audio": str(tmp_path / "root" / "wav" / "a.wav")}]
    )
    with pytest.raises(ReaderError, match="outside the data root"):
        read_source("custom", [f])  # the data root defaults to the file's folder: the wav is not under it
    root = str(tmp_path / "root")
    (r,) = read_source("custom", [f], ReaderConfig(data_root=root)).records
    assert from_json(r.media) == Combine(video=Source("ann/clips/a.mp4"), audio=Source("wav/a.wav"))
    (r,) = read_source("custom", [f], ReaderConfig(data_root=root, video_dir="media")).records
    assert from_json(r.media).video == Source("media/clips/a.mp4")


def test_records_of_any_source_write_back_as_lines_that_read_back_equal(tmp_path):
    records = [
        QARecord("avqa", "v1", "a.json", 0, to_json(Source("avqa/videos/v1.mp4")), "What is making the sound?",
                 "dog", ["dog", "cat", "car", "boat"], "Existential", "Both", "Which"),
        QARecord("music_avqa", "00001", "m.json", 3, to_json(Combine(Source("m/1.mp4"), Source("m/2.mp4"))),
                 "Is this sound from the instrument in the video?", "no", None, "Existential", "Audio-Visual"),
        QARecord("audioset", "yt", "s.csv", 0, to_json(Source("as/yt_30.mp4", 0.0, 10.0)), start=30.0, end=40.0,
                 labels=["Bark", "Dog"], label_ids=["/m/05tny_", "/m/0bt9lr"]),
    ]  # fmt: skip
    f = write(tmp_path / "all.jsonl", [to_custom(r) for r in records])
    back = read_source("custom", [f]).records
    assert [r.source for r in back] == ["custom", "custom", "custom_clips"]
    for old, new in zip(records, back):
        assert (new.media, new.question, new.answer, new.options, new.labels) == (
            old.media, old.question, old.answer, old.options, old.labels)  # fmt: skip
        assert new.meta["dataset"] == old.source and new.source_id == old.key
    assert [r.category for r in back[:2]] == ["Existential", "Existential"]
    assert [r.modality for r in back[:2]] == ["Audio-Visual", "Audio-Visual"]
    with pytest.raises(ValueError, match="different time ranges"):
        to_custom(QARecord("custom", "x", "f", 0, to_json(Combine(Source("a", 0, 1), Source("b", 0, 2)))))


def test_prep_read_prints_the_world_formats_as_custom_lines(tmp_path, capsys):
    avqa = tmp_path / "avqa" / "annotation" / "train_qa.json"
    avqa.parent.mkdir(parents=True)
    avqa.write_text(json.dumps([{"id": 1, "video_name": "v", "video_id": 1, "question_text": "Why is it loud?",
                                 "multi_choice": ["a", "b", "c", "d"], "answer": 2, "question_relation": "Sound",
                                 "question_type": "Which"}]))  # fmt: skip
    assert read_main(["--source", "avqa", str(avqa), "--as", "custom"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line) == {
        "id": "avqa:train_qa.json:0", "video": "avqa/videos/v.mp4", "question": "Why is it loud?",
        "options": ["a", "b", "c", "d"], "answer": "c", "category": "World knowledge", "modality": "audio",
        "dataset": "avqa",
    }  # fmt: skip
    mine = tmp_path / "mine.jsonl"
    mine.write_text(line + "\n")
    assert read_main(["--source", "custom", str(mine)]) == 0
    assert json.loads(capsys.readouterr().out)["modality"] == "Audio"


def test_tables_take_the_users_options_answers_and_labels(tmp_path):
    ontology = tmp_path / "ontology.json"
    ontology.write_text(json.dumps([
        {"id": "/m/music", "name": "Music", "child_ids": ["/m/violin"]},
        {"id": "/m/violin", "name": "Violin, fiddle", "child_ids": []},
        {"id": "/m/animal", "name": "Animal", "child_ids": ["/m/dog"]},
        {"id": "/m/dog", "name": "Dog", "child_ids": []},
    ]))  # fmt: skip
    f = write(
        tmp_path / "m.jsonl",
        [
            {**GOOD, "options": ["violin", "Dog", "kazoo"], "category": "Existential", "labels": ["violin"]},
            {**GOOD, "id": "q2", "question": "How many dogs?", "answer": "two"},
            {"id": "c", "video": "e.mp4", "labels": ["dogs", "zzz"]},
        ],
    )
    tables = build_tables(read_source("custom", [f]).records, ontology)
    assert tables.t3["Existential"] == ["Dog", "kazoo", "violin"] and tables.t3["Count"] == ["two"]
    assert tables.mapping["violin"] == {"class": "Violin, fiddle", "how": "alias"}
    assert tables.mapping["Dog"] == {
        "class": "Dog",
        "how": "name",
    }  # 'dogs' is a spelling of the option 'Dog'
    assert tables.mapping["zzz"]["how"] == "none"
    assert "Dog" in tables.unrelated("violin") and "violin" in tables.t2["Music"]
