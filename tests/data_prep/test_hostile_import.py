"""The third hostile pass on ``cavpref data import`` (issue 54): every documented field shape of LLaMA-Factory,
ms-swift, TRL and the project's own ``cavpref_*`` columns, given the wrong type or an edge value.

Each case is a row of docs/reliability.md, "Third hostile pass: data import / export". ``FIXED`` cases ended
in a traceback, imported silently wrong data or wrote an empty dataset with exit 0 before; ``HELD`` cases were
already a one-line error naming record and field (or imported correctly) and stay so.
"""

from __future__ import annotations

import json

import pytest
from datasets import load_from_disk

from cavpref.data_prep.formats.cli import main as data_main

U = lambda c: {"role": "user", "content": c}
A = lambda c: {"role": "assistant", "content": c}
V = {"videos": ["v.mp4"]}
# a row cavpref wrote (ms-swift layout): its own columns carry the preference row
OWN = {"messages": [U("<video>q"), A("a")], "rejected_response": "b", **V, "cavpref_id": "r0", "cavpref_task": "CLEAN",
       "cavpref_source": "swift", "cavpref_category": "",
       "cavpref_media": '{"end":null,"op":"source","path":"v.mp4","start":0.0}', "cavpref_clap_delta": None,
       "cavpref_avsm_delta_v": None, "cavpref_avsm_delta_a": None, "cavpref_source_ids": ["v.mp4"],
       **{f"cavpref_{s}_{k}": None for s in ("visual", "audio") for k in ("response", "clean", "perturbed")}}  # fmt: skip


def run(tmp_path, capsys, fmt, records, *extra, files=None) -> tuple[int, str]:
    (tmp_path / "v.mp4").write_bytes(b"\0")
    f = tmp_path / "x.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in records))
    argv = [
        "import",
        "--format",
        fmt,
        "--files",
        *(files or [str(f)]),
        "--output_dir",
        str(tmp_path / "o"),
        *extra,
    ]
    rc = data_main(argv)
    captured = capsys.readouterr()
    return rc, (captured.out if rc == 0 else captured.err).strip()


FIXED = {
    "swift: a message's content is null": (
        "swift", [{"messages": [U(None), A("a")], **V}], "field 'messages': empty or not text (None)"),
    "llamafactory alpaca: instruction is a list": (
        "llamafactory", [{"instruction": ["<video>q"], "output": "a", **V}], "field 'instruction': expected text"),
    "swift: a tools column": (
        "swift", [{"tools": "[{}]", "messages": [U("<video>q"), A("a")], **V}],
        "field 'tools': tool descriptions are not supported"),
    "own: cavpref_media is not JSON": (
        "swift", [{**OWN, "cavpref_media": "{not json"}], "field 'cavpref_media': not a MediaSpec"),
    "own: cavpref_source_ids is a string": (
        "swift", [{**OWN, "cavpref_source_ids": "v.mp4"}], "field 'cavpref_source_ids': expected a list of strings"),
    "own: cavpref_clap_delta is a string": (
        "swift", [{**OWN, "cavpref_clap_delta": "high"}], "field 'cavpref_clap_delta': expected a number or null"),
    "own: an unknown cavpref_ column": (
        "swift", [{**OWN, "cavpref_beta": 0.1}], "field 'cavpref_beta': not a cavpref column"),
    "an empty file": ("swift", [], "no record imported: the file(s) hold no record"),
}  # fmt: skip


@pytest.mark.parametrize("case", FIXED)
def test_fixed_cases_are_one_line_errors_naming_record_and_field(tmp_path, capsys, case):
    fmt, records, said = FIXED[case]
    rc, err = run(tmp_path, capsys, fmt, records)
    assert rc == 1 and len(err.splitlines()) == 1 and said in err, err
    assert records == [] or "record 0 (line 1)" in err
    assert not (tmp_path / "o" / "preferences").exists()


def test_every_record_skipped_is_an_error_not_an_empty_dataset(tmp_path, capsys):
    rc, err = run(tmp_path, capsys, "swift", [{"messages": [U("q")]}], "--on_error", "skip")
    assert rc == 1 and "no record imported: all 1 skipped ({'messages: no assistant turn" in err, err


def test_one_file_name_twice_is_refused_as_row_ids_would_collide(tmp_path, capsys):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "v.mp4").write_bytes(b"\0")
    row = {"messages": [U("<video>q"), A("a")], **V}
    (tmp_path / "sub" / "x.jsonl").write_text(json.dumps(row) + "\n")
    for files in (
        [str(tmp_path / "x.jsonl")] * 2,
        [str(tmp_path / "x.jsonl"), str(tmp_path / "sub" / "x.jsonl")],
    ):
        rc, err = run(tmp_path, capsys, "swift", [row], "--data_root", str(tmp_path), files=files)
        assert rc == 1 and "the same file name more than once" in err, err


HELD = {
    "swift: videos as one string (ms-swift takes a path or a list)": ("swift", [{"messages": [U("<video>q"), A("a")], "videos": "v.mp4"}], None),
    "swift: messages is an object": ("swift", [{"messages": {"role": "user"}}], "field 'messages': expected a list of messages"),
    "swift: rejected_response is a number": ("swift", [{"messages": [U("<video>q"), A("a")], **V, "rejected_response": 5}], "field 'rejected_response': empty or not text"),
    "swift: content as typed items": ("swift", [{"messages": [U([{"type": "text", "text": "q"}]), A("a")], **V}], "field 'messages': empty or not text"),
    "llamafactory sharegpt: from / value tags, chosen / rejected messages": ("llamafactory", [{"conversations": [{"from": "human", "value": "<video>q"}], "chosen": {"from": "gpt", "value": "a"}, "rejected": {"from": "gpt", "value": "b"}, **V}], None),
    "llamafactory: a turn's value is a number": ("llamafactory", [{"conversations": [{"from": "human", "value": 3}, {"from": "gpt", "value": "a"}], **V}], "field 'conversations': prompt is missing or empty"),
    "llamafactory alpaca: chosen is an object": ("llamafactory", [{"instruction": "<video>q", "input": "", "chosen": {"a": 1}, "rejected": "b", **V}], "field 'chosen': chosen is missing or empty"),
    "llamafactory: a video given as a list of frames": ("llamafactory", [{"messages": [U("<video>q"), A("a")], "videos": [["f1.jpg", "f2.jpg"]]}], "field 'videos': expected a file path"),
    "llamafactory: empty conversations": ("llamafactory", [{"conversations": [], **V}], "field 'conversations': expected the turns ['human', 'gpt']"),
    "trl: prompt is an object": ("trl", [{"prompt": {"role": "user", "content": "q"}, "completion": "a", **V}], "field 'prompt': expected text or a list of messages"),
    "trl: a content item is a string": ("trl", [{"prompt": [U(["q"])], "completion": "a", **V}], "field 'prompt': expected text or a list of typed content items"),
    "trl: chosen is one message, not a list": ("trl", [{"prompt": "q", "chosen": A("a"), "rejected": "b", **V}], "field 'chosen': expected a string or one assistant message"),
    "trl: prompt is an empty list": ("trl", [{"prompt": [], "completion": "a", **V}], "field 'prompt': expected one user message"),
    "trl: a video item naming its file inline": ("trl", [{"prompt": [U([{"type": "video", "video": "v.mp4"}, {"type": "text", "text": "q"}])], "completion": [A("a")]}], "field 'prompt': {'video': 1, 'audio': 0} media items but 0 video(s)"),
    "own: an unknown cavpref_task": ("swift", [{**OWN, "cavpref_task": "NOPE"}], "field 'cavpref_task': not a cavpref row"),
}  # fmt: skip


@pytest.mark.parametrize("case", HELD)
def test_held_cases(tmp_path, capsys, case):
    fmt, records, said = HELD[case]
    rc, out = run(tmp_path, capsys, fmt, records)
    if said is None:
        assert rc == 0 and len(load_from_disk(str(tmp_path / "o" / "preferences"))["train"]) == 1, out
    else:
        assert rc == 1 and len(out.splitlines()) == 1 and "record 0 (line 1)" in out and said in out, out
