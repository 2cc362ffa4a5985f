"""Hand-made source records and look-up tables for the task-generator tests (no tests here)."""

from __future__ import annotations

from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tables import LookupTables
from cavpref.media.spec import Source, to_json

GROUPS = {
    "Music": ["Piano", "Guitar", "Violin", "Drum", "Flute"],
    "Animal": ["Dog", "Cat", "Cow", "Bird"],
    "Vehicle": ["Car", "Train", "Siren", "Truck"],
}


T3 = {
    "Temporal": ["piano", "guitar", "violin", "drum", "flute"],
    "Count": ["one", "two", "three", "four", "five"],
    "Localization": ["left", "right", "middle"],
    "Comparative": ["yes", "no"],
    "World knowledge": ["indoor", "outdoor"],
    "Existential": ["yes", "no", "dog", "cat", "cow", "bird", "car", "train", "siren", "truck"],
}


def make_tables() -> LookupTables:
    group_of = {m: g for g, ms in GROUPS.items() for m in ms}
    t1 = {m: [o for o in group_of if group_of[o] != group_of[m]] for m in group_of}
    return LookupTables(t1=t1, t2=GROUPS, t3=T3)


def music(index, vid, question, answer, category, modality="Audio-Visual"):
    return QARecord(
        "music_avqa",
        vid,
        "avqa-train.json",
        index,
        to_json(Source(f"music_avqa/videos/{vid}.mp4")),
        question,
        answer,
        None,
        category,
        modality,
        None,
    )


def avqa(index, name, question, answer, options):
    return QARecord(
        "avqa",
        name,
        "train_qa.json",
        index,
        to_json(Source(f"avqa/videos/{name}.mp4")),
        question,
        answer,
        options,
        "Existential",
        "Both",
        "Which",
    )


def segment(index, label, duration=10.0):
    return QARecord(
        "audioset",
        f"yt{index:04d}",
        "eval_segments.csv",
        index,
        to_json(Source(f"audioset/clips/yt{index:04d}_0.mp4", 0.0, duration)),
        labels=[label],
        start=0.0,
        end=duration,
    )


DOG, SIREN, CAT, COW = segment(0, "Dog"), segment(1, "Siren"), segment(2, "Cat"), segment(3, "Cow")
