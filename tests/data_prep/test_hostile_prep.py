"""Hostile-input pass (issue 18), data-prep cases: a source record with duplicate options (#4)."""

from __future__ import annotations

from collections import Counter

import pytest

from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tables import LookupTables
from cavpref.data_prep.tasks import GENERATORS
from cavpref.media.spec import Source, to_json

TABLES = LookupTables(
    t1={"Dog": ["Car"], "Car": ["Dog"]},
    t2={"Animal": ["Dog", "Cat"], "Vehicle": ["Car"]},
    t3={"Existential": ["dog", "cat", "car"]},
)


def avqa(index, answer, options):
    return QARecord(
        "avqa",
        f"clip{index:03d}_000010",
        "train_qa.json",
        index,
        to_json(Source(f"avqa/videos/clip{index:03d}_000010.mp4")),
        "What animal is making the sound?",
        answer,
        options,
        "Existential",
        "Both",
        "Which",
    )


@pytest.mark.parametrize("task", ["CLEAN", "MCIT"])
def test_a_record_with_duplicate_options_is_skipped_and_counted(task):
    good = avqa(0, "dog", ["dog", "cat", "cow", "car"])
    cats = avqa(1, "Cat", ["Cat", "Cat", "cat", "Cat "])  # 4 x "Cat": would be an item with one option
    skips = Counter()
    items, _ = GENERATORS[task]([good, cats], TABLES, seed=0, skips=skips)
    assert items and all(len(i.options) >= 2 + (i.setting == "instruction") for i in items)
    assert not [i for i in items if i.meta["record"] == cats.key]
    reasons = [r for r in skips if "duplicate options" in r]
    assert reasons and skips[reasons[0]] == 1, skips


def test_a_media_folder_symlinked_out_of_the_data_root_is_named_as_such(tmp_path):
    from cavpref.data_prep.build import PrepConfig, PrepError, validate
    from cavpref.media.spec import MediaError, resolve_path

    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x_0.mp4").write_bytes(b"")
    (tmp_path / "root" / "audioset").mkdir(parents=True)
    (tmp_path / "root" / "audioset" / "clips").symlink_to(tmp_path / "elsewhere")
    record = QARecord(
        "audioset",
        "x",
        "eval_segments.csv",
        0,
        to_json(Source("audioset/clips/x_0.mp4", 0.0, 1.0)),
        labels=["Dog"],
        start=0.0,
        end=1.0,
    )
    with pytest.raises(PrepError) as err:
        validate(record, None, PrepConfig(data_root=str(tmp_path / "root")), {})
    with pytest.raises(MediaError) as evaluated:  # what evaluation says about the same path
        resolve_path(tmp_path / "root", "audioset/clips/x_0.mp4")
    assert "outside the data root" in str(err.value) and "missing media file" not in str(err.value)
    assert (
        str(evaluated.value) in str(err.value)
        and err.value.reason == "media: media path outside the data root"
    )
