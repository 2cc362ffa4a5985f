"""Bad input: errors name file + record + field; opt-in skipping counts reasons; the `read` CLI."""

from __future__ import annotations

import json
import pickle
from collections import Counter

import pytest

from cavpref.data_prep.readers import ReaderConfig, ReaderError, read_avqa, read_music_avqa, read_source
from cavpref.data_prep.readers.cli import ReadArgs, main

GOOD = {
    "video_id": "00000001",
    "question_id": 1,
    "type": '["Audio-Visual", "Existential"]',
    "question_content": "Is the <Object> in the video always playing?",
    "templ_values": '["piano"]',
    "question_deleted": 0,
    "anser": "yes",
}
AVQA_GOOD = {
    "id": 1,
    "video_name": "abcdefghijk_000000",
    "video_id": 1,
    "question_text": "What is making the sound?",
    "multi_choice": ["dog", "cat", "car", "boat"],
    "answer": 0,
    "question_relation": "Both",
    "question_type": "Which",
}


def write(tmp_path, rel, records):
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(records if isinstance(records, str) else json.dumps(records), encoding="utf-8")
    return str(path)


MUSIC_BAD = [
    (
        {**GOOD, "type": '["Audio-Visual", "Existential"'},
        "type",
        "not a JSON list",
    ),  # malformed JSON-in-string
    ({**GOOD, "type": '["Audio-Visual", "Spelling"]'}, "type", "unknown question type"),
    ({**GOOD, "type": '["Smell", "Existential"]'}, "type", "unknown modality"),
    ({**GOOD, "templ_values": '["piano", "flute"]'}, "templ_values", "template/value count mismatch"),
    ({k: v for k, v in GOOD.items() if k != "anser"}, "anser", "missing"),
    ({**GOOD, "anser": " "}, "anser", "answer missing"),
    ({**GOOD, "video_id": 1}, "video_id", "expected str"),
    ({**GOOD, "video_id": "../../etc/passwd"}, "video_id", "bad media path"),
]


@pytest.mark.parametrize("bad,field,problem", MUSIC_BAD)
def test_music_avqa_errors_name_file_record_field(tmp_path, bad, field, problem):
    f = write(tmp_path, "m/json/avqa-test.json", [GOOD, GOOD, bad])
    with pytest.raises(ReaderError) as info:
        read_music_avqa(f)
    err = info.value
    assert (err.file, err.index, err.field) == (f, 2, field)
    assert str(err).startswith(f"{f}: record 2: field {field!r}: {problem}")


AVQA_BAD = [
    ({**AVQA_GOOD, "question_type": "Mystery"}, "question_type", "unknown question type"),
    ({**AVQA_GOOD, "answer": 4}, "answer", "answer index out of range"),
    ({**AVQA_GOOD, "answer": True}, "answer", "expected int"),
    ({**AVQA_GOOD, "multi_choice": ["a", "b", "c"]}, "multi_choice", "expected 4 non-empty strings"),
    ({**AVQA_GOOD, "question_relation": "Smell"}, "question_relation", "unknown relation"),
    ({k: v for k, v in AVQA_GOOD.items() if k != "answer"}, "answer", "missing"),
]


@pytest.mark.parametrize("bad,field,problem", AVQA_BAD)
def test_avqa_errors_name_file_record_field(tmp_path, bad, field, problem):
    f = write(tmp_path, "a/annotation/val_qa.json", [bad])
    with pytest.raises(ReaderError) as info:
        read_avqa(f)
    assert str(info.value).startswith(f"{f}: record 0: field '{field}': {problem}")


@pytest.mark.parametrize(
    "row,field,problem",
    [
        ('abc, 0.000, 10.000, "/m/unknown"', "positive_labels", "unknown label mid (/m/unknown)"),
        ("abc, 0.000, 10.000", "row", "expected 4 fields"),
        ('abc, zero, 10.000, "/m/a"', "start_seconds/end_seconds", "not a number"),
        ('abc, 10.000, 10.000, "/m/a"', "end_seconds", "empty or reversed segment"),
        ('abc, 1.500, 10.000, "/m/a"', "start_seconds", "cannot build the clip path"),  # {start:d} of 1.5
    ],
)
def test_audioset_errors_name_file_record_line_field(tmp_path, row, field, problem):
    labels = write(tmp_path, "as/class_labels_indices.csv", "index,mid,display_name\n0,/m/a,A\n")
    f = write(tmp_path, "as/eval_segments.csv", f'# a\n# b\n# YTID, x\nok, 0.000, 10.000, "/m/a"\n{row}\n')
    with pytest.raises(ReaderError) as info:
        read_source("audioset", [f], labels=labels)
    assert str(info.value).startswith(f"{f}: record 1 (line 5): field '{field}': {problem}")


def test_reader_error_pickles():
    err = ReaderError("a.json", 3, "anser", "missing", "x", line=7)
    back = pickle.loads(pickle.dumps(err))
    assert (str(back), back.reason, back.line) == (str(err), "anser: missing", 7)


def test_whole_file_errors(tmp_path):
    f = write(tmp_path, "m/json/x.json", '{"video_id": 1}')
    with pytest.raises(ReaderError) as info:
        read_music_avqa(f)
    assert str(info.value).startswith(f"{f}: expected a JSON array")
    f = write(tmp_path, "m/json/y.json", "[{]")
    with pytest.raises(ReaderError, match="not valid JSON"):
        read_music_avqa(f, ReaderConfig(on_error="skip"))  # a broken file cannot be skipped record by record
    f = write(tmp_path, "m/json/z.json", [GOOD, ["not", "an", "object"]])
    with pytest.raises(ReaderError, match=r"record 1: record is not a JSON object"):
        read_music_avqa(f)


def test_skip_counts_reconcile(tmp_path):
    records = [GOOD] + [b for b, _, _ in MUSIC_BAD] + [GOOD]
    f = write(tmp_path, "m/json/avqa-train.json", records)
    res = read_music_avqa(f, ReaderConfig(on_error="skip"))
    assert res.n_in == len(records) == len(res.records) + sum(res.skipped.values()) and res.reconciles
    assert [r.index for r in res.records] == [0, len(records) - 1]
    assert res.skipped == Counter(
        {
            "type: not a JSON list": 1,
            "type: unknown question type": 1,
            "type: unknown modality": 1,
            "templ_values: template/value count mismatch": 1,
            "anser: missing": 1,
            "anser: answer missing": 1,
            "video_id: expected str": 1,
            "video_id: bad media path": 1,
        }
    )
    # several files add up
    g = write(tmp_path, "a/annotation/val_qa.json", [AVQA_GOOD, {**AVQA_GOOD, "answer": 9}])
    assert read_avqa(g, ReaderConfig(on_error="skip")).skipped == Counter(
        {"answer: answer index out of range": 1}
    )
    both = read_source("music_avqa", [f, f], ReaderConfig(on_error="skip"))
    assert (both.n_in, len(both.records), sum(both.skipped.values())) == (2 * len(records), 4, 16)


# ----------------------------------------------------------------------------- CLI


def test_cli_prints_every_record_as_json_lines(tmp_path, capsys):
    music = write(
        tmp_path,
        "music_avqa/json/avqa-test.json",
        [GOOD, {**GOOD, "type": '["Audio", "Counting"]', "anser": "acoustic_guitar"}],
    )
    assert main(["--source", "music_avqa", music]) == 0
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 2  # unfiltered: the Audio-only question is printed too
    assert (
        rows[1]["question"] == "Is the piano in the video always playing?"
        and rows[1]["answer"] == "acoustic guitar"
    )
    assert (
        rows[1]["category"] == "Count" and rows[0]["source_id"] == "00000001" and rows[0]["options"] is None
    )
    assert "read 2 records" in err and "would exclude       1  music_avqa: audio-only question" in err

    avqa = write(tmp_path, "avqa/annotation/val_qa.json", [AVQA_GOOD])
    labels = write(tmp_path, "audioset/class_labels_indices.csv", 'index,mid,display_name\n0,/m/a,"A, b"\n')
    seg = write(tmp_path, "audioset/eval_segments.csv", '# a\n# b\n# c\nxyz, 5.000, 15.000, "/m/a"\n')
    assert main(["--source", "avqa", avqa, "--data-root", str(tmp_path)]) == 0
    row = json.loads(capsys.readouterr()[0])
    assert (row["options"], row["answer"], row["category"]) == (
        ["dog", "cat", "car", "boat"],
        "dog",
        "Existential",
    )
    assert main(["--source", "audioset", "--labels", labels, seg]) == 0
    row = json.loads(capsys.readouterr()[0])
    assert (row["source_id"], row["start"], row["end"], row["labels"]) == ("xyz", 5.0, 15.0, ["A, b"])


def test_cli_config_file_and_files_key(tmp_path, capsys):
    """`cavpref prep read --config r.yaml`: keys (files included) from the file, the command line wins."""
    good = write(tmp_path, "m/json/avqa-test.json", [GOOD, {**GOOD, "templ_values": "[]"}])
    other = write(tmp_path, "m/json/avqa-val.json", [GOOD])
    config = write(tmp_path, "read.yaml", f"source: music_avqa\non_error: skip\nfiles: [{good}]\n")
    assert main(["--config", config]) == 0
    assert "read 2 records from 1 file(s): 1 out, 1 skipped" in capsys.readouterr()[1]
    assert main([config, other, "--on_error", "raise"]) == 0  # a bare FILE replaces the file's list
    assert "read 1 records from 1 file(s)" in capsys.readouterr()[1]
    assert main(["--source", "music_avqa", "--files", good, other, "--on_error", "skip"]) == 0
    assert "read 3 records from 2 file(s)" in capsys.readouterr()[1]
    assert main(["--source", "music_avqa"]) == 2 and "no annotation files" in capsys.readouterr()[1]
    assert main(["--config", config, "--colour", "blue"]) == 2 and "--colour" in capsys.readouterr()[1]
    with pytest.raises(SystemExit):
        main(["--help"])
    printed = capsys.readouterr()[0]
    assert all(f"--{k}" in printed for k in ReadArgs.__dataclass_fields__)


def test_cli_errors_and_skip(tmp_path, capsys):
    f = write(tmp_path, "m/json/avqa-test.json", [GOOD, {**GOOD, "templ_values": "[]"}])
    assert main(["--source", "music_avqa", f]) == 1
    assert f"{f}: record 1: field 'templ_values': template/value count mismatch" in capsys.readouterr()[1]
    assert main(["--source", "music_avqa", "--on_error", "skip", f]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1
    assert "read 2 records from 1 file(s): 1 out, 1 skipped" in err
    assert "skipped        1  templ_values: template/value count mismatch" in err


def test_cli_output_piped_into_head_ends_quietly(tmp_path, capsys, monkeypatch):
    """`cavpref prep read ... | head -1`: the closed pipe ends the listing without a traceback."""

    class ClosedPipe:  # what sys.stdout does once the reading end of its pipe has gone
        def __init__(self, fd):
            self.fd = fd

        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            pass

        def fileno(self):
            return self.fd

    f = write(tmp_path, "m/json/avqa-test.json", [GOOD, GOOD])
    with open(tmp_path / "stdout", "w") as sink:
        monkeypatch.setattr("sys.stdout", ClosedPipe(sink.fileno()))
        assert main(["--source", "music_avqa", f]) == 0
    assert "read 2 records from 1 file(s): 2 out, 0 skipped" in capsys.readouterr()[1]
