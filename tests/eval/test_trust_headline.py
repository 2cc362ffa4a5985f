"""The report's first table (issue 56): Wilson and mean intervals by hand, a row read from a results dict, the
reference policies' rows, and the one-line sentence."""

import pytest

from cavpref.eval.benchmarks.avtrustbench import headline


def test_wilson_interval_by_hand():
    lo, hi = headline.wilson(0, 10)  # centre = half = (z²/20) / (1 + z²/10) = 0.138767
    assert lo == 0.0 and hi == pytest.approx(27.753, abs=1e-3)
    lo, hi = headline.wilson(5, 10)  # half = z·sqrt(0.025 + z²/400) / (1 + z²/10) = 0.263413
    assert (lo, hi) == (pytest.approx(23.659, abs=1e-3), pytest.approx(76.341, abs=1e-3))
    assert headline.wilson(0, 0) is None


def test_mean_interval_by_hand():
    # mean 0.625, sd 0.478714, se 0.239357, z·se 0.469128: the upper end clipped at 100
    lo, hi = headline.mean_interval([1, 0, 0.5, 1])
    assert lo == pytest.approx(15.587, abs=1e-3) and hi == 100.0
    assert headline.mean_interval([1]) is None


def _results(paired, n_pairs, fa, clean, n_clean):
    trust = {"settings": {"instruction": {"paired": {"n": n_pairs, "vanilla": paired, "circular": paired},
                                          "false_abstention": fa}}}  # fmt: skip
    tasks = {"CLEAN": {"n": n_clean, "vanilla": clean, "circular": clean}}
    return {"trust": trust, "settings": {"instruction": {"tasks": tasks}}}


def test_a_row_and_its_sentence_from_results():
    start = {"metrics": _results(0.0, 10, 10.0, 90.0, 10)}
    start["metrics"]["references"] = {"always abstain": _results(0.0, 10, 100.0, 0.0, 10)}
    trained = {"metrics": _results(50.0, 10, 0.0, 80.0, 10)}
    row = headline.trust_row(trained, "instruction", pair_scores=[1, 0, 0.5, 1])
    assert row["paired"]["value"] == 50.0 and row["paired"]["ci"] == headline.wilson(5, 10)
    assert row["false_abstention"]["ci"] == headline.wilson(0, 10)
    assert row["clean"]["ci"] == headline.wilson(8, 10)
    assert row["separation"]["value"] == 62.5 and row["separation"]["n"] == 4
    assert headline.cell(row["paired"]) == "50.00 [23.66, 76.34]"
    s_row = headline.trust_row(start, "instruction")
    assert headline.cell(s_row["separation"]) == "–"  # a generate run: no margins
    assert headline.sentence("DPO", s_row, row) == (
        "DPO: paired trust 0.00 → 50.00 %, false abstention 10.00 → 0.00 %, CLEAN 90.00 → 80.00 %."
    )
    refs = headline.reference_rows(start, "instruction")
    assert refs["always abstain"]["false_abstention"]["value"] == 100.0
    cells = headline.table_rows({"DPO": row})
    assert cells == [["DPO", "50.00 [23.66, 76.34]", "0.00 [0.00, 27.75]", "62.50 [15.59, 100.00]",
                      "80.00 [49.02, 94.33]", "10 / 10"]]  # fmt: skip


def test_wilson_ends_are_exact_and_contain_the_share():
    assert headline.wilson(10, 10)[1] == 100.0 and headline.wilson(0, 3)[0] == 0.0
    for n in range(1, 30):
        for k in range(n + 1):
            lo, hi = headline.wilson(k, n)
            assert lo <= 100 * k / n <= hi
