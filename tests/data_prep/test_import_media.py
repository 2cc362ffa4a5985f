"""``cavpref data import`` checks the media a record names, at import (issue 54 item 4, issue 57 item 6).

Before: a symlink out of the data root was imported (``../`` and absolute paths were refused), a URL became a
relative path ("…/http:/127.0.0.1:9/x.mp4: media file not found" at the first training step), and a missing
``.mp3`` was accepted and failed only in training.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from cavpref.data_prep.formats import ImportArgs, export_dataset, import_dataset
from cavpref.data_prep.formats.cli import main as data_main
from cavpref.data_prep.formats.convert import ExportArgs
from cavpref.data_prep.readers import ReaderError


def swift_row(**media) -> dict:
    tags = "<video>" * len(media.get("videos", [])) + "<audio>" * len(media.get("audios", []))
    return {"messages": [{"role": "user", "content": tags + "Which?"}, {"role": "assistant", "content": "A"}],
            "rejected_response": "B", **media}  # fmt: skip


def run(tmp_path, row) -> ReaderError:
    f = tmp_path / "data" / "x.jsonl"
    f.write_text(json.dumps(swift_row(videos=["ok.mp4"])) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(ReaderError) as info:
        import_dataset(ImportArgs(format="swift", files=[str(f)], output_dir=str(tmp_path / "o")))
    assert (info.value.file, info.value.index, info.value.line) == (str(f), 1, 2)
    return info.value


@pytest.fixture
def data(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "ok.mp4").write_bytes(b"\0")
    (tmp_path / "secret.mp4").write_bytes(b"\0")
    return tmp_path


def test_a_symlink_out_of_the_data_root_is_refused_like_dotdot(data):
    (data / "data" / "link.mp4").symlink_to(data / "secret.mp4")
    err = run(data, swift_row(videos=["link.mp4"]))
    assert (err.field, err.problem) == ("videos", "outside the data root")
    assert "resolves to" in str(err) and str(data / "secret.mp4") in str(err)
    (data / "data" / "sub").mkdir()  # a symlink that stays inside the root is a file like any other
    (data / "data" / "sub" / "inside.mp4").symlink_to(data / "data" / "ok.mp4")
    f = data / "data" / "y.jsonl"
    f.write_text(json.dumps(swift_row(videos=["sub/inside.mp4"])) + "\n")
    assert (
        import_dataset(ImportArgs(format="swift", files=[str(f)], output_dir=str(data / "y")))["imported"]
        == 1
    )


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/x.mp4",
        "https://example.org/a.mp4",
        "file:///tmp/x.mp4",
        "s3://b/x.mp4",
        "data:audio/wav;base64,UklGRg==",
    ],
)
def test_media_given_as_urls_are_refused_naming_record_and_field(data, url):
    err = run(data, swift_row(audios=[url]))
    assert (err.field, err.problem) == ("audios", "a URL, not a file path")
    assert "download the file" in str(err)


def test_a_missing_media_file_is_an_error_at_import_naming_record_and_field(data, capsys):
    err = run(data, swift_row(videos=["ok.mp4"], audios=["gone.mp3"]))
    assert (err.field, err.problem) == ("audios", "media file not found")
    assert str(data / "data" / "gone.mp3") in str(err)
    argv = [
        "import",
        "--format",
        "swift",
        "--files",
        str(data / "data" / "x.jsonl"),
        "--output_dir",
        str(data / "c"),
    ]
    assert data_main(argv) == 1
    said = capsys.readouterr().err.strip()
    assert len(said.splitlines()) == 1 and "record 1 (line 2): field 'audios': media file not found" in said
    assert data_main([*argv[:-1], str(data / "s"), "--on_error", "skip"]) == 0  # or skipped and counted
    stats = json.loads((data / "s" / "stats.json").read_text())
    assert stats["skipped"] == {"audios: media file not found": 1} and stats["imported"] == 1


def test_rows_written_by_cavpref_have_their_media_checked_under_the_exports_root(data):
    from cavpref.media.write import write_mp4

    write_mp4(
        data / "data" / "ok.mp4", np.zeros((2, 16, 16, 3), np.uint8), fps=2, audio=np.zeros(16000, np.float32)
    )
    f = data / "data" / "x.jsonl"
    f.write_text(json.dumps(swift_row(videos=["ok.mp4"])) + "\n")
    import_dataset(ImportArgs(format="swift", files=[str(f)], output_dir=str(data / "i")))
    export_dataset(ExportArgs(format="swift", data=str(data / "i"), output_dir=str(data / "e"),
                              media_root=str(data / "data")))  # fmt: skip
    (data / "data" / "ok.mp4").unlink()  # the clip the exported row's cavpref_media names
    with pytest.raises(
        ReaderError, match=r"record 0 \(line 1\): field 'cavpref_media': media file not found"
    ):
        import_dataset(ImportArgs(format="swift", files=[str(data / "e" / "cavpref_train.jsonl")],
                                  output_dir=str(data / "back")))  # fmt: skip
