"""``scripts/sweep.py`` plots the trust curves every run logged during training (issue 55, part 3): read from
logs.jsonl as ``trust_eval_steps`` writes them, one panel per axis, skipped when no run has them."""

import json

from cavpref_lab.sweep import plot_trust, trust_curves


def _logs(run, records):
    run.mkdir(parents=True)
    (run / "logs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_trust_curves_are_read_from_the_logs_and_plotted(tmp_path):
    _logs(tmp_path / "a", [
        {"step": 1, "loss": 0.7},
        {"step": 2, "trust/instruction/paired": 10.0, "trust/instruction/false_abstention": 5.0, "trust/seconds": 3.2},
        {"step": 4, "trust/instruction/paired": 30.0, "trust/instruction/false_abstention": 2.5, "trust/seconds": 3.1},
    ])  # fmt: skip
    curves = trust_curves(tmp_path / "a")
    assert curves == {
        "trust/instruction/paired": [(2, 10.0), (4, 30.0)],
        "trust/instruction/false_abstention": [(2, 5.0), (4, 2.5)],
    }  # the evaluation's wall time is not a curve
    summary = {"axes": {"lambda_a": [{"value": 0.4, "trust": curves}, {"value": 1.6, "trust": {}}]}}
    png = tmp_path / "sweep_trust.png"
    assert plot_trust(summary, png) and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_no_trust_logged_means_no_plot(tmp_path):
    _logs(tmp_path / "a", [{"step": 1, "loss": 0.7}])
    summary = {"axes": {"lambda_a": [{"value": 0.4, "trust": trust_curves(tmp_path / "a")}]}}
    assert not plot_trust(summary, tmp_path / "p.png") and not (tmp_path / "p.png").exists()
