"""cavpref_lab.bench.start_perception: the caption probe counted per clip size, so splits can be compared."""

from cavpref_lab.bench import start_perception as bench
from cavpref_lab.science import quickstart_science as science


def _record(ok: list[int], seen: int, heard: int, asked: tuple[str, ...] = ("see", "hear", "where")) -> dict:
    return {
        "file": "f",
        "prompts": [f"{a}?" for a in asked[: len(ok)]],
        "asked": list(asked[: len(ok)]),
        "answers": [""] * len(ok),
        "ok": ok,
        "seen": seen,
        "heard": heard,
    }


def test_by_count_splits_each_prompt_by_entities_or_sounds():
    records = [
        _record([1, 1, 1], seen=1, heard=1),
        _record([1, 0, 0], seen=2, heard=3),
        _record([0, 1, 0], seen=3, heard=4),  # 3 and 4 sounds pool as "3+"
        _record([0, 0, 1], seen=3, heard=2),
    ]
    counts = bench.by_count(records)
    assert counts["see"] == {"1": [1, 1], "2": [1, 1], "3+": [0, 2]}
    assert counts["hear"] == {"1": [1, 1], "2": [0, 1], "3+": [1, 2]}
    assert counts["where"] == {"1": [1, 1], "2": [1, 1], "3+": [0, 2]}
    assert science.probe_accuracy(records) == {"see?": 50.0, "hear?": 50.0, "where?": 50.0}


def test_by_count_of_a_muted_probe_has_see_alone():
    counts = bench.by_count([_record([1], seen=2, heard=0), _record([0], seen=2, heard=1)])
    assert counts == {"see": {"2": [1, 2]}}
    assert science.probe_accuracy([]) == {}


def test_by_count_of_a_blind_probe_has_hear_alone():
    records = [_record([1], seen=2, heard=1, asked=("hear",)), _record([0], seen=1, heard=2, asked=("hear",))]
    assert bench.by_count(records) == {"hear": {"1": [1, 1], "2": [0, 1]}}
