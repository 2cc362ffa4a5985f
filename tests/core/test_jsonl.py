"""``cavpref.jsonl``, the project's one JSONL reader (issue 54 item 5), and every reader of JSONL going through it.

JSON allows U+2028 / U+2029 / U+0085 raw inside a string (``json.dumps(..., ensure_ascii=False)`` writes them
so); ``str.splitlines()`` splits on them and turned a valid record into "Unterminated string". Each reader below
gets one record holding all three.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from cavpref import jsonl
from cavpref.data_prep.builders.aura.plan import read_pairs
from cavpref.data_prep.builders.quality import read_audit, write_audit
from cavpref.data_prep.formats.common import read_records as format_records
from cavpref.data_prep.readers import ReaderError
from cavpref.data_prep.readers.common import ReaderConfig
from cavpref.data_prep.readers.custom import read_custom
from cavpref.eval.common import BenchmarkInputError
from cavpref.eval.common import read_records as benchmark_records
from cavpref.eval.runner import load_records

ROOT = Path(__file__).resolve().parents[2]
ODD = "a\u2028b\u2029c\u0085d"  # legal inside a JSON string, each a line break to str.splitlines()


def write(path: Path, records: list, extra: str = "") -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records) + extra, "utf-8")
    return path


def test_lines_split_on_newline_only_and_errors_name_file_and_line(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_bytes(
        "\ufeff".encode()  # a BOM
        + json.dumps({"t": ODD}, ensure_ascii=False).encode()
        + b"\r\n\n  \t\r\n"  # CRLF, a blank line, a line of JSON whitespace
        + b'{"n": 2}'  # no newline at the end
    )
    assert jsonl.read_jsonl(path) == [(1, {"t": ODD}), (4, {"n": 2})]
    path.write_text('{"n": 1}\n\n{"n": \n', "utf-8")
    with pytest.raises(jsonl.JsonlError, match=r"x.jsonl:3: not valid JSON \(col 7: Expecting value\)"):
        jsonl.read_jsonl(path)
    kept = jsonl.read_jsonl(path, keep_errors=True)
    assert kept[0] == (1, {"n": 1}) and kept[1][0] == 3 and isinstance(kept[1][1], jsonl.JsonlError)
    path.write_text('{"n": 1}\n\u2028\n', "utf-8")  # not whitespace to JSON: an error, not a blank line
    with pytest.raises(jsonl.JsonlError, match=r"x.jsonl:2: not valid JSON"):
        jsonl.read_jsonl(path)
    path.write_bytes(b'{"n": 1}\n{"t": "\xff"}\n')
    with pytest.raises(jsonl.JsonlError, match=r"x.jsonl:2: not UTF-8 \(byte 0xff at column 8\); re-save"):
        jsonl.read_jsonl(path)
    with pytest.raises(jsonl.JsonlError, match=r"missing.jsonl: cannot read"):
        jsonl.read_jsonl(tmp_path / "missing.jsonl")


def test_every_reader_takes_a_record_with_unicode_line_separators(tmp_path):
    # data import (LLaMA-Factory / ms-swift / TRL files)
    f = write(tmp_path / "f.jsonl", [{"messages": [{"role": "user", "content": ODD}]}])
    assert format_records(str(f)) == [(1, {"messages": [{"role": "user", "content": ODD}]})]
    # prep --custom
    c = write(tmp_path / "c.jsonl", [{"id": "q1", "video": "v.mp4", "question": ODD + "?", "answer": "yes"}])
    (record,) = read_custom(str(c), ReaderConfig(data_root=str(tmp_path))).records
    assert record.question == "a b c d?"  # read (clean_question makes each break a space), not refused
    # cavpref build aura: the pairs file
    p = write(tmp_path / "pairs.jsonl", [{"novice": "x.mp4", "expert": "y.mp4", "note": ODD}])
    assert read_pairs(p, ("novice", "expert"), {"x.mp4", "y.mp4"}) == [("x.mp4", "y.mp4")]
    # the builders' audit sample, written and read back
    jsonl_path, _ = write_audit([{"id": 1, "question": ODD, "batch": 0}], tmp_path)
    assert read_audit(jsonl_path)[0]["question"] == ODD
    # released benchmark files, and the evaluator's own records
    b = write(tmp_path / "b.jsonl", [{"id": "1", "question": ODD}])
    assert benchmark_records(b) == [("line 1", {"id": "1", "question": ODD})]
    write(tmp_path / "records.rank0.jsonl", [{"key": "k", "status": "ok", "response": ODD}])
    assert load_records(tmp_path)["k"]["response"] == ODD


def test_bad_lines_are_one_line_errors_naming_file_and_line_in_every_reader(tmp_path):
    bad = '{"id": "q1"}\n{"id": \n'
    (tmp_path / "f.jsonl").write_text(bad, "utf-8")
    (_, first), (line, err) = format_records(str(tmp_path / "f.jsonl"))
    assert (
        first == {"id": "q1"}
        and isinstance(err, ReaderError)
        and line == 2
        and "record 1 (line 2): not valid JSON" in str(err)
    )
    (tmp_path / "pairs.jsonl").write_text(bad, "utf-8")
    with pytest.raises(ValueError, match=r"pairs.jsonl:2: not valid JSON"):  # was a bare JSONDecodeError
        read_pairs(tmp_path / "pairs.jsonl", ("novice", "expert"), set())
    (tmp_path / "audit.jsonl").write_text(bad, "utf-8")
    with pytest.raises(ValueError, match=r"audit.jsonl:2: not valid JSON"):
        read_audit(tmp_path / "audit.jsonl")
    (tmp_path / "b.jsonl").write_text(bad, "utf-8")
    with pytest.raises(BenchmarkInputError, match=r"b.jsonl: line 2: not JSON"):
        benchmark_records(tmp_path / "b.jsonl")


def _splitlines_feeding_json_loads(tree: ast.AST) -> list[int]:
    """Lines of loops / comprehensions that iterate over ``….splitlines()`` and call ``json.loads``."""
    found = []
    for node in ast.walk(tree):
        loops = [node] if isinstance(node, ast.For) else []
        if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp):
            loops = [node]
        for loop in loops:
            iters = [loop.iter] if isinstance(loop, ast.For) else [g.iter for g in loop.generators]
            splits = any(
                isinstance(n, ast.Attribute) and n.attr == "splitlines" for it in iters for n in ast.walk(it)
            )
            loads = any(
                isinstance(n, ast.Attribute) and n.attr == "loads" and getattr(n.value, "id", "") == "json"
                for n in ast.walk(loop)
            )
            if splits and loads:
                found.append(loop.lineno)
    return found


def test_no_module_parses_json_from_splitlines():
    offenders = []
    for folder in ("cavpref", "data_prep", "eval", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            offenders += [f"{path.relative_to(ROOT)}:{n}" for n in _splitlines_feeding_json_loads(tree)]
    assert offenders == [], f"read JSONL with cavpref.jsonl.read_jsonl: {offenders}"
