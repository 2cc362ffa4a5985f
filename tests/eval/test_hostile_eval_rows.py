"""Hostile-input pass (issue 18, #5 and #19): malformed eval JSONL rows are refused with the row and the field
named in words, never silently truncated nor a raw KeyError."""

import json

import pytest

from cavpref.data import BenchmarkItem
from cavpref.eval.benchmarks.avtrustbench.reader import DataError, load_items


def _row(**change):
    item = BenchmarkItem(
        "r1",
        "MCIT",
        "avqa",
        "Existential",
        "Which?",
        {"A": "cat", "B": "dog", "C": "cow", "D": "None of the above"},
        "A",
        "instruction",
        0,
        None,
        "D",
    )
    row = item.to_row()
    row.update(change)
    return {k: v for k, v in row.items() if v is not KeyError}


def _write(tmp_path, *rows):
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_option_letters_and_texts_of_different_lengths_are_refused(tmp_path):
    path = _write(tmp_path, _row(id="ok"), _row(id="short", option_letters=["A", "B"]))
    with pytest.raises(DataError) as err:
        load_items(path)
    msg = str(err.value)
    assert "row 1" in msg and "'short'" in msg and "2 option_letters" in msg and "4 option_texts" in msg
    loaded = load_items(path, skip_invalid=True)  # skipping: counted, not truncated to A and B
    assert [i.id for i in loaded.items] == ["ok"] and sum(loaded.skipped.values()) == 1


@pytest.mark.parametrize("field", ["option_texts", "question", "task"])
def test_a_row_missing_a_field_names_the_row_and_the_field(tmp_path, field):
    path = _write(tmp_path, _row(id="ok"), _row(id="holey", **{field: KeyError}))
    with pytest.raises(DataError) as err:
        load_items(path)
    msg = str(err.value)
    assert "row 1" in msg and "'holey'" in msg and f"missing field '{field}'" in msg and "KeyError" not in msg
