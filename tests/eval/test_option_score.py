"""Likelihood mode's three option-scoring protocols (``cavpref.eval.option_score``), with hand-computed numbers,
and what ``AVTrustBench`` makes of them: per-protocol choices on every pass, CircularEval passes until every
protocol has decided, per-protocol outcomes."""

from __future__ import annotations

import pytest

from cavpref.data import BenchmarkItem
from cavpref.eval.args import EvalArgs
from cavpref.eval.benchmarks.avtrustbench import AVTrustBench
from cavpref.eval.option_score import OPTION_SCORES, best_option, option_values
from cavpref.eval.runner import Job

# three candidates: sums -6, -4, -4.5 over 6, 2, 9 tokens -> per token -1, -2, -0.5; letters -0.1, -2, -3
SCORES = {"sum": [-6.0, -4.0, -4.5], "tokens": [6, 2, 9], "letter": [-0.1, -2.0, -3.0]}


def test_each_protocol_reads_its_own_winner():
    assert option_values(SCORES, "per_token") == [-1.0, -2.0, -0.5]
    assert [best_option(SCORES, p) for p in OPTION_SCORES] == [1, 2, 0]  # sum, per_token, letter


def test_letterless_candidate_ties_and_errors():
    scores = {"sum": [-3.0, -3.0, -1.0], "tokens": [3, 3, 1], "letter": [-1.0, -1.0, None]}
    assert best_option(scores, "sum") == 2
    assert best_option(scores, "letter") == 0  # the abstention sentence has no letter; tie -> the first
    assert best_option({"sum": [], "tokens": [], "letter": []}, "sum") is None
    assert best_option({"sum": [-1.0], "tokens": [1], "letter": [None]}, "letter") is None
    with pytest.raises(ValueError, match="option_score must be one of"):
        option_values(SCORES, "mean")
    with pytest.raises(ValueError, match="--option_score must be one of"):
        EvalArgs(mode="likelihood", option_score="mean")


def _item():
    """A CLEAN item whose right option is the text "x" (its letter moves with the CircularEval rotation)."""
    return BenchmarkItem(
        "i", "CLEAN", "avqa", "Count", "Q?", {"A": "x", "B": "y", "C": "z"}, "A", "instruction", 0, ""
    )


def _pass(bench, item, k, winners):
    """One scored likelihood pass whose sum / per-token / letter winners are the given option texts."""
    req = bench.request(item, k)
    options = req.info["options"]
    index = {text: i for i, text in enumerate(options.values())}
    sums, tokens, letter = [-9.0] * 3, [1] * 3, [-9.0] * 3
    sums[index[winners[0]]] = -1.0  # sum winner
    tokens[index[winners[1]]] = 100  # per token: -9/100 beats -1/1 and -9/1 ...
    if winners[1] == winners[0]:
        tokens[index[winners[1]]] = 1
    letter[index[winners[2]]] = -0.5
    job = Job(item, k, req, f"k{k}", output={"sum": sums, "tokens": tokens, "letter": letter})
    return bench.score([job])[0]


def test_circular_runs_until_every_protocol_decided_and_reads_each():
    bench = AVTrustBench(EvalArgs(mode="likelihood", option_score="letter"))
    item = _item()
    assert bench.request(item, 0).letters == ["A", "B", "C"]
    # winners per pass (sum, per_token, letter): sum wrong at pass 0; per token right on all three passes;
    # letter right at pass 0, wrong at pass 1
    plan = [("y", "x", "x"), ("y", "x", "y"), ("z", "x", "z")]
    recs = []
    while (k := bench.next_pass(item, recs)) is not None:
        recs.append(_pass(bench, item, k, plan[k]))
    assert len(recs) == 3  # per token keeps the item alive to the last pass
    assert recs[0]["choices"] == {"sum": "B", "per_token": "A", "letter": "A"}
    assert (
        recs[0]["choice"] == "A"
        and recs[0]["option_score"] == "letter"
        and recs[0]["rule"] == "argmax letter"
    )
    got = {p: bench.outcome(item, recs, p) for p in OPTION_SCORES}
    assert {p: (o.vanilla, o.circular, o.passes_run) for p, o in got.items()} == {
        "sum": (False, False, 1),
        "per_token": (True, True, 3),
        "letter": (True, False, 2),
    }
    headline = bench.outcome(item, recs)
    assert (headline.vanilla, headline.circular) == (True, False)  # the configured protocol: letter
    # a record written under another headline protocol is re-read from its scores, never re-run
    assert bench.needs_rescore(recs[0]) is False
    assert AVTrustBench(EvalArgs(mode="likelihood")).needs_rescore(recs[0]) is True


def test_circular_stops_when_every_protocol_failed():
    bench = AVTrustBench(EvalArgs(mode="likelihood"))
    item = _item()
    recs = [_pass(bench, item, 0, ("x", "x", "x"))]
    assert bench.next_pass(item, recs) == 1
    recs.append(_pass(bench, item, 1, ("y", "y", "y")))
    assert bench.next_pass(item, recs) is None  # all three wrong at pass 1: decided
