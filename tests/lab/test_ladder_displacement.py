"""The ladder's displacement table and plot (issue 53) from runs' ``logs.jsonl``: CLEAN's chosen log-ratio at
each budget, the last logged value at or before it."""

import json

from cavpref_lab.ladder.displacement import KEY, at, displacement, series


def test_the_table_reads_each_runs_clean_log_ratio_at_the_budgets(tmp_path):
    run = tmp_path / "curves" / "clean_abstain" / "cavpref"
    run.mkdir(parents=True)
    logs = [
        {"step": 1, KEY: 0.0},
        {"step": 60, KEY: -1.5},
        {"step": 120, KEY: -4.25},
        {"step": 121, "loss": 1.0},
    ]
    (run / "logs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in logs))
    assert series(run) == [(1, 0.0), (60, -1.5), (120, -4.25)]
    assert at(series(run), 100) == -1.5 and at(series(run), 0) is None
    lines, stats = displacement(
        tmp_path, {"CAVPref": "curves/clean_abstain/cavpref", "none": "x"}, [60, 120], 16
    )
    assert "| run | 960 | 1920 |" in lines and "| CAVPref | -1.50 | -4.25 |" in lines
    assert list(stats) == ["CAVPref"] and (tmp_path / "plots" / "ladder_displacement.png").stat().st_size > 0
