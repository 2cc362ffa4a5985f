"""All three readers (and the tables) on a generated synthetic world, checked against its world.json."""

from __future__ import annotations

import csv
import json

import pytest

from cavpref.data import CATEGORIES
from cavpref.data_prep.readers import filter_single_modality, read_source
from cavpref.data_prep.tables import build_tables
from cavpref.media.spec import from_json, resolve_path, sources

synthetic = pytest.importorskip("cavpref.data_prep.synthetic.world")
WorldConfig = pytest.importorskip("cavpref.data_prep.synthetic.config").WorldConfig


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    out = tmp_path_factory.mktemp("world") / "w"
    synthetic.generate_world(WorldConfig(out=str(out), num_clips=4, seed=3))
    return out, json.loads((out / "world.json").read_text())


def test_readers_read_the_generated_world(world):
    root, manifest = world
    music = read_source("music_avqa", sorted((root / "music_avqa/json").glob("avqa-*.json")))
    avqa = read_source("avqa", sorted((root / "avqa/annotation").glob("*_qa.json")))
    audioset = read_source(
        "audioset",
        sorted((root / "audioset").glob("*_segments.csv")),
        labels=str(root / "audioset/class_labels_indices.csv"),
    )
    counts = manifest["files"]
    assert len(music.records) == sum(counts["music_avqa"]["questions"].values()) and not music.skipped
    assert len(avqa.records) == sum(counts["avqa"]["questions"].values()) and not avqa.skipped
    assert len(audioset.records) == sum(counts["audioset"]["segments"].values()) and not audioset.skipped

    files = {c["video_id"]: c["file"] for c in manifest["music_avqa"]}
    files.update({c["video_name"]: c["file"] for c in manifest["avqa"]})
    for r in music.records + avqa.records:  # every spec names the clip world.json says, and it exists
        assert r.category in CATEGORIES and r.question and r.answer
        assert [s.path for s in sources(from_json(r.media))] == [files[r.source_id]]
        assert resolve_path(root, files[r.source_id]).is_file()
    for r in avqa.records:
        assert r.answer in r.options and len(r.options) == 4

    segs = {(c["ytid"], c["start_seconds"]): c for c in manifest["audioset"]}
    with open(root / "audioset/class_labels_indices.csv", newline="") as f:
        names = {row[1]: row[2] for row in list(csv.reader(f))[1:]}
    for r in audioset.records:
        truth = segs[(r.source_id, r.start)]
        spec = from_json(r.media)
        assert (spec.path, spec.start, spec.end) == (
            truth["file"],
            0.0,
            truth["end_seconds"] - truth["start_seconds"],
        )
        assert resolve_path(root, spec.path).is_file()
        assert sorted(r.label_ids) == sorted(truth["labels"]) and len(r.labels) == len(r.label_ids)
        assert [names[m] for m in r.label_ids] == r.labels

    kept, excluded = filter_single_modality(music.records + avqa.records + audioset.records)
    assert len(kept) + sum(excluded.values()) == len(music.records) + len(avqa.records) + len(
        audioset.records
    )
    assert all(r.modality in (None, "Audio-Visual", "Both") for r in kept)

    tables = build_tables(kept, root / "audioset/ontology.json")
    assert tables.t2 and tables.t1 and any(tables.t3.values())
    for r in audioset.records:  # every AudioSet label has a supercategory
        assert all(tables.group_of(label) for label in r.labels)
    blacklisted = [
        c["name"]
        for c in json.loads((root / "audioset/ontology.json").read_text())
        if "blacklist" in c["restrictions"]
    ]
    assert blacklisted and not any(tables.group_of(name) for name in blacklisted)
