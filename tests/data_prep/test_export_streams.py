"""``cavpref data export`` lists a file only for the streams it has (issue 57 item 5).

Before: a clip of a silent video was written as ``videos: [4.mp4], audios: [4.mp4]`` in all three formats
(LLaMA-Factory / ms-swift then load an audio track that is not there), and a clip of an audio file was listed
as a video. A video-only record now exports as ``videos`` only and reads back equal, with or without the
``cavpref_*`` columns.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf
from datasets import load_from_disk

from cavpref.data import PreferenceExample
from cavpref.data_prep.formats import ExportArgs, ImportArgs, export_dataset, import_dataset
from cavpref.data_prep.tasks.schema import PREFERENCE_FEATURES, to_dataset
from cavpref.media.spec import Source, from_json, to_json
from cavpref.media.write import write_mp4

FORMATS = ("llamafactory", "swift", "trl")


@pytest.fixture(scope="module")
def prefs(tmp_path_factory):
    root = tmp_path_factory.mktemp("streams")
    media = root / "media"
    media.mkdir()
    frames = np.zeros((4, 16, 16, 3), np.uint8)
    write_mp4(media / "silent.mp4", frames, fps=4)  # no audio stream
    write_mp4(media / "av.mp4", frames, fps=4, audio=np.zeros(16000, np.float32))
    sf.write(media / "tone.wav", np.zeros(16000, np.float32), 16000)
    rows = [
        PreferenceExample(id=f"r{k}", task="CLEAN", source="mine", category="", prompt="Which?", media=Source(name),
                          chosen="A", rejected="B", source_ids=[name])
        for k, name in enumerate(("silent.mp4", "av.mp4", "tone.wav"))
    ]  # fmt: skip
    to_dataset(rows, PREFERENCE_FEATURES).save_to_disk(str(root / "prefs"))
    return root


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_file_is_listed_only_for_the_streams_it_has(prefs, fmt, tmp_path):
    out = tmp_path / "x"
    export_dataset(ExportArgs(format=fmt, data=str(prefs / "prefs"), output_dir=str(out),
                              media_root=str(prefs / "media"), paths="relative"))  # fmt: skip
    lines = [json.loads(x) for x in (out / "cavpref_train.jsonl").read_text().splitlines()]
    names = [
        ([p.rsplit("/", 1)[-1] for p in r["videos"]], [p.rsplit("/", 1)[-1] for p in r["audios"]])
        for r in lines
    ]
    assert names == [(["silent.mp4"], []), (["av.mp4"], ["av.mp4"]), ([], ["tone.wav"])]
    # back with the cavpref_* columns: equal; without them (another trainer's file): the silent clip is equal too
    import_dataset(
        ImportArgs(format=fmt, files=[str(out / "cavpref_train.jsonl")], output_dir=str(tmp_path / "b"))
    )
    back = [dict(r) for r in load_from_disk(str(tmp_path / "b" / "preferences"))["train"]]
    assert back == [dict(r) for r in load_from_disk(str(prefs / "prefs"))]
    plain = out / "plain.jsonl"
    plain.write_text("".join(json.dumps({k: v for k, v in r.items() if not k.startswith("cavpref_")}) + "\n"
                             for r in lines[:2]))  # fmt: skip
    import_dataset(ImportArgs(format=fmt, files=[str(plain)], output_dir=str(tmp_path / "p"),
                              data_root=str(prefs / "media")))  # fmt: skip
    media = [from_json(r["media"]) for r in load_from_disk(str(tmp_path / "p" / "preferences"))["train"]]
    assert [to_json(m) for m in media] == [to_json(Source("silent.mp4")), to_json(Source("av.mp4"))]


def test_an_unreadable_clip_is_an_export_error_naming_the_row(prefs, tmp_path):
    (tmp_path / "media").mkdir()
    (tmp_path / "media" / "silent.mp4").write_bytes(b"")
    with pytest.raises(ValueError, match=r"row r0: field 'media': .*silent.mp4: zero-length clip"):
        export_dataset(ExportArgs(format="swift", data=str(prefs / "prefs"), output_dir=str(tmp_path / "x"),
                                  media_root=str(tmp_path / "media")))  # fmt: skip
