"""A malformed LLaMA-Factory ``dataset_info.json`` is a one-line error naming the file, the entry and the field
(issue 54 item 7: five of six shapes ended in a ``TypeError`` / ``AttributeError`` traceback).

The entry's keys are those of LLaMA-Factory's ``data/README.md`` ("dataset_name": hf_hub_url, ms_hub_url,
script_url, cloud_file_name, file_name, formatting, ranking, subset, split, folder, num_samples, columns, tags).
"""

from __future__ import annotations

import json
import re

import pytest

from cavpref.data_prep.formats.cli import main as data_main

GOOD = {"file_name": "d.jsonl", "formatting": "sharegpt", "columns": {"messages": "messages", "videos": "videos"},
        "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user", "assistant_tag": "assistant"}}  # fmt: skip


@pytest.fixture
def folder(tmp_path):
    row = {"messages": [{"role": "user", "content": "<video>Which?"}, {"role": "assistant", "content": "A"}],
           "videos": ["v.mp4"]}  # fmt: skip
    (tmp_path / "d.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "v.mp4").write_bytes(b"\0")
    return tmp_path


def run(folder, info, capsys) -> tuple[int, str]:
    (folder / "dataset_info.json").write_text(json.dumps(info))
    argv = ["import", "--format", "llamafactory", "--dataset_info", str(folder / "dataset_info.json"),
            "--dataset", "x", "--output_dir", str(folder / "out")]  # fmt: skip
    rc = data_main(argv)
    return rc, capsys.readouterr().err


@pytest.mark.parametrize(
    ("info", "said"),
    [
        ([GOOD], r"dataset_info.json: expected an object of dataset entries .*got list"),
        ({"x": None}, r"dataset 'x': expected an object \(file_name, .*got NoneType null"),
        ({"x": "d.jsonl"}, r"dataset 'x': expected an object .*got str \"d.jsonl\""),
        (
            {"x": {**GOOD, "columns": ["messages"]}},
            r"dataset 'x': field 'columns': expected an object of names",
        ),
        (
            {"x": {**GOOD, "file_name": ["d.jsonl"]}},
            r"dataset 'x': field 'file_name': expected a file or folder",
        ),
        ({"x": {**GOOD, "tags": "role"}}, r"dataset 'x': field 'tags': expected an object of names"),
        # beyond the six
        ({"x": {**GOOD, "formatting": ["sharegpt"]}}, r"field 'formatting': expected sharegpt or alpaca"),
        ({"x": {**GOOD, "ranking": "yes"}}, r"field 'ranking': expected true or false, got str"),
        ({"x": {**GOOD, "columns": {"messages": 3}}}, r"field 'columns.messages': expected a name"),
        (
            {"x": {**GOOD, "columns": {"vidoes": "videos"}}},
            r"field 'columns.vidoes': not one of LLaMA-Factory's",
        ),
        ({"x": {**GOOD, "tags": {"role": "role"}}}, r"field 'tags.role': not one of LLaMA-Factory's tags"),
        ({"x": {**GOOD, "hf_hub_url": "org/name"}}, r"field 'hf_hub_url': hub / script / cloud datasets"),
        ({"x": {**GOOD, "num_samples": 1}}, r"field 'num_samples': not applied by cavpref data import"),
    ],
)
def test_each_malformed_entry_is_one_line_naming_file_entry_and_field(folder, capsys, info, said):
    rc, err = run(folder, info, capsys)
    assert rc == 1 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert str(folder / "dataset_info.json") in err and re.search(said, err), err
    assert not (folder / "out" / "preferences").exists()


def test_a_folder_file_name_reads_its_json_files_but_not_the_info_file(folder, capsys):
    (folder / "more").mkdir()
    (folder / "more" / "v.mp4").write_bytes(b"\0")
    for name in ("a.jsonl", "b.json"):
        row = json.loads((folder / "d.jsonl").read_text())
        (folder / "more" / name).write_text(
            json.dumps(row) + "\n" if name.endswith("l") else json.dumps([row])
        )
    (folder / "more" / "dataset_info.json").write_text(json.dumps({"x": {**GOOD, "file_name": "."}}))
    argv = ["import", "--format", "llamafactory", "--dataset_info", str(folder / "more" / "dataset_info.json"),
            "--dataset", "x", "--output_dir", str(folder / "out")]  # fmt: skip
    assert data_main(argv) == 0, capsys.readouterr().err
    assert json.loads((folder / "out" / "stats.json").read_text())["records_read"] == 2
