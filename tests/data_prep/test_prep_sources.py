"""`cavpref prep`'s inputs checked before anything is claimed or read (issue 54 #2): a mistyped `--world`, a
folder that is no world, a missing or empty annotation file, or sources none of whose records are usable is a
one-line error (exit 1) naming the key and the path — never "records: read 0", nine empty tasks and "wrote"."""

from __future__ import annotations

import json
import shutil

import pytest

from cavpref.data_prep.build import PrepConfig, build
from cavpref.data_prep.cli import main


def prep(capsys, *argv) -> tuple[int, str, str]:
    code = main([*argv, "--progress", "false"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line_error(code, out, err, *fragments):
    assert code == 1 and "wrote" not in out and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("cavpref prep: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def test_a_mistyped_world_is_one_line_and_nothing_is_written(tmp_path, capsys):
    out = tmp_path / "data"
    result = prep(capsys, "--world", str(tmp_path / "wrld"), "--output_dir", str(out))
    one_line_error(*result, f"world '{tmp_path / 'wrld'}': no such folder")
    assert not out.exists()


def test_a_file_as_world_is_not_a_folder(small_world, tmp_path, capsys):
    result = prep(capsys, "--world", str(small_world / "world.json"), "--output_dir", str(tmp_path / "o"))
    one_line_error(*result, "world.json': not a folder")


def test_an_empty_folder_as_world_names_the_layout(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    result = prep(capsys, "--world", str(tmp_path / "empty"), "--output_dir", str(tmp_path / "o"))
    one_line_error(*result, "holds none of a `cavpref world` folder's sources", "music_avqa/json/avqa-*.json")


def test_the_folder_above_a_world_points_at_it(small_world, tmp_path, capsys):
    parent = tmp_path / "runs"
    shutil.copytree(small_world, parent / "world")
    result = prep(capsys, "--world", str(parent), "--output_dir", str(tmp_path / "o"))
    one_line_error(*result, f"did you mean {parent / 'world'}?")


def test_a_prep_folder_as_world_says_what_it_is(small_world, tmp_path, capsys):
    data = tmp_path / "data"
    build(PrepConfig(world=str(small_world), output_dir=str(data), tasks=["MCIT"], progress=False))
    result = prep(capsys, "--world", str(data), "--output_dir", str(tmp_path / "o"))
    one_line_error(*result, "is a `cavpref prep` output folder, not a world")


def test_no_sources_at_all(tmp_path, capsys):
    one_line_error(*prep(capsys, "--output_dir", str(tmp_path / "o")), "no sources: pass --world DIR")


@pytest.mark.parametrize("key", ["music_avqa", "avqa", "audioset", "custom", "audioset_ontology"])
def test_a_missing_annotation_file_names_its_key(key, tmp_path, capsys):
    missing = tmp_path / "nope.json"
    result = prep(
        capsys, f"--{key}", str(missing), "--data_root", str(tmp_path), "--output_dir", str(tmp_path / "o")
    )
    one_line_error(*result, f"{key} '{missing}': no such file")
    assert not (tmp_path / "o").exists()


def test_a_folder_given_as_an_annotation_file(tmp_path, capsys):
    result = prep(capsys, "--custom", str(tmp_path), "--output_dir", str(tmp_path / "o"))
    one_line_error(*result, f"custom '{tmp_path}': a folder, not a file")


@pytest.mark.parametrize(
    ("key", "name", "text"),
    [
        ("custom", "mine.jsonl", ""),
        ("custom", "blank.jsonl", "\n\n  \n"),
        ("music_avqa", "avqa-train.json", "[]"),
    ],
)
def test_a_source_without_records_is_an_error(key, name, text, tmp_path, capsys):
    path = tmp_path / name
    path.write_text(text)
    result = prep(
        capsys, f"--{key}", str(path), "--data_root", str(tmp_path), "--output_dir", str(tmp_path / "o")
    )
    one_line_error(*result, f"no records in {path}: every source file is empty")


def test_records_none_of_which_is_usable_are_an_error(tmp_path, capsys):
    """Every record skipped (on_error: skip) used to build nine empty tasks and exit 0."""
    path = tmp_path / "mine.jsonl"
    rows = [{"video": f"clip{i}.mp4", "question": "What is sounding?", "answer": "violin"} for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = prep(capsys, "--custom", str(path), "--on_error", "skip", "--output_dir", str(tmp_path / "o"))
    line = one_line_error(*result, "none of the 3 records read is usable")
    assert "custom: id: missing: 3" in line  # the reasons, counted
