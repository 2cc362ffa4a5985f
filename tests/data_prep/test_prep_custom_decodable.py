"""``prep --custom`` builds no item that cannot be decoded (issue 57 item 3).

Before: a clip line of a silent video without an ``audio`` file, or a line whose ``end`` lies past the file's
length, was built into COT / CAT items (4 of 40 media specs on real clips) and training failed on its first
batch. Now each is refused at prep, naming the file, record and field, or skipped and counted with
``on_error: skip``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from cavpref.data_prep.build import PrepConfig, build
from cavpref.data_prep.build.reading import PrepError
from cavpref.media.write import write_mp4
from tests.helpers import user_data


@pytest.fixture
def folder(tmp_path):
    path = user_data.write_user_folder(tmp_path / "mine")
    write_mp4(tmp_path / "mine" / "events" / "silent.mp4", np.zeros((4, 16, 16, 3), np.uint8), fps=4)  # 1 s
    return path


def prep(path, tmp_path, extra: dict, **kw):
    with open(path, "a") as f:
        f.write(json.dumps(extra) + "\n")
    config = PrepConfig(output_dir=str(tmp_path / "prep"), custom=[str(path)], test_fraction=0.0,
                        formats=["arrow"], progress=False, **kw)  # fmt: skip
    return build(config)


def test_a_silent_clip_line_without_an_audio_file_is_refused_or_counted(folder, tmp_path):
    line = {"id": "quiet", "video": "events/silent.mp4", "labels": ["Dog"]}
    with pytest.raises(
        PrepError, match=r"questions.jsonl: record 20 \(quiet\): field 'audio': a clip line needs a sound"
    ):
        prep(folder, tmp_path, line)
    folder.write_text(folder.read_text().replace(json.dumps(line) + "\n", ""))
    stats = prep(folder, tmp_path, line, on_error="skip", overwrite_output_dir=True)
    assert stats["invalid_skipped"] == {"audio: clip line without sound": 1}


def test_a_line_whose_end_is_past_the_file_is_refused_or_counted(folder, tmp_path):
    line = {
        "id": "long",
        "video": "events/e0.mp4",
        "labels": ["Dog"],
        "start": 0.5,
        "end": 30,
    }  # the file: 1 s
    with pytest.raises(PrepError, match=r"record 20 \(long\): field 'end': .*outside the clip \(duration 1"):
        prep(folder, tmp_path, line)
    folder.write_text(folder.read_text().replace(json.dumps(line) + "\n", ""))
    stats = prep(folder, tmp_path, line, on_error="skip", overwrite_output_dir=True)
    assert stats["invalid_skipped"] == {"end: clip range past the end of the file": 1}
    folder.write_text(folder.read_text().replace(json.dumps(line) + "\n", ""))
    ok = {**line, "id": "within", "end": 1.05}  # within the decoder's tolerance: kept
    assert prep(folder, tmp_path, ok, on_error="skip", overwrite_output_dir=True)["invalid_skipped"] == {}
