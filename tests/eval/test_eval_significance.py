"""Paired significance in `eval compare` (issue 55 part 4): McNemar's p and the paired bootstrap interval
against hand-computed tables (eval/significance.py), then the table `eval compare` prints, writes and shows
on its HTML page for two scored runs whose per-item outcomes are known."""

import itertools
import json
import math

import pytest

from cavpref.data import BenchmarkItem
from cavpref.eval import significance as sig
from cavpref.eval.benchmarks.avtrustbench.trust import CLEAN_TASK
from cavpref.eval.circular import rotate
from cavpref.eval.cli import main as eval_main
from cavpref.eval.compare import compare
from cavpref.eval.pipeline import EvalArgs, score_predictions
from cavpref.eval.registry import write_reports
from cavpref.media.spec import clip, to_json
from tests.helpers.html_report_check import page_data


def test_mcnemar_exact_below_25_discordant_items_hand_computed():
    # b = 1, c = 9: P(X <= 1), X ~ Bin(10, 1/2) = (1 + 10) / 1024; two-sided doubles it
    assert sig.mcnemar(1, 9) == (22 / 1024, "exact")
    assert sig.mcnemar(9, 1) == (22 / 1024, "exact")
    assert sig.mcnemar(2, 0) == (0.5, "exact")  # 2 * 1/4
    assert sig.mcnemar(3, 3) == (1.0, "exact")  # capped at 1
    assert sig.mcnemar(0, 0) == (1.0, "exact")  # nothing differs
    # 24 discordant items: still exact — 2 * sum_{k<=4} C(24, k) / 2^24
    p, how = sig.mcnemar(4, 20)
    assert how == "exact" and p == pytest.approx(2 * (1 + 24 + 276 + 2024 + 10626) / 2**24)


def test_mcnemar_chi2_with_continuity_correction_from_25_discordant_items():
    # b = 10, c = 25: (|10 - 25| - 1)^2 / 35 = 5.6; the chi2(1) tail at 5.6 is 0.0179605 (tables)
    p, how = sig.mcnemar(10, 25)
    assert how == "chi2" and p == pytest.approx(0.0179605, abs=1e-7)
    # b = 12, c = 13: (1 - 1)^2 / 25 = 0 -> p = 1
    assert sig.mcnemar(12, 13) == (1.0, "chi2")


def test_pair_counts_the_shared_items_only():
    ref = {"a": True, "b": True, "c": False, "d": False, "e": True}
    other = {"a": True, "b": False, "c": True, "d": False, "f": True}
    t = sig.pair(ref, other)
    assert (t.both, t.b, t.c, t.neither, t.n) == (1, 1, 1, 1, 4)
    assert t.difference == 0.0
    assert sig.pair({"a": False, "b": False}, {"a": True, "b": True}).difference == 100.0


def exact_interval(diffs: list[int], level=0.95) -> tuple[float, float]:
    """The bootstrap percentile interval of the mean difference by enumerating every resample of the
    items (n^n equally likely index draws): the distribution a bootstrap approximates, computed exactly."""
    n = len(diffs)
    means = sorted(100.0 * sum(diffs[i] for i in draw) / n for draw in itertools.product(range(n), repeat=n))
    alpha = (1 - level) / 2
    lo = means[math.ceil(alpha * len(means)) - 1]
    hi = means[math.ceil((1 - alpha) * len(means)) - 1]
    return lo, hi


@pytest.mark.parametrize(
    "diffs",
    [
        [-1, 0, 0, 0],  # b = 1 of 4: the interval is [-75, 0] (P(3+ of 4 draws hit it) = 5.1 %)
        [1, 1, 0, -1, 0],
        [1, -1],
        [0, 0, 0],
    ],
)
def test_bootstrap_interval_matches_the_enumerated_resample_distribution(diffs):
    table = sig.Paired(
        both=0, b=diffs.count(-1), c=diffs.count(1), neither=diffs.count(0)
    )  # d = other - reference per item
    assert sig.bootstrap_interval(table, 200_000) == exact_interval(diffs)


def test_bootstrap_is_seeded_and_its_resamples_count():
    t = sig.Paired(both=40, b=7, c=15, neither=38)
    a = sig.bootstrap_interval(t, 5000)
    assert a == sig.bootstrap_interval(t, 5000)  # the fixed seed
    assert len({sig.bootstrap_interval(t, 20, seed=s) for s in range(5)}) > 1  # the seed is used
    lo, hi = sig.bootstrap_interval(t, 1)
    assert lo == hi  # one resample: its difference is both ends
    assert a[0] < t.difference < a[1]
    with pytest.raises(ValueError, match="at least one resample"):
        sig.bootstrap_interval(t, 0)


# --------------------------------------------------------------------------------- eval compare, end to end

MEDIA = to_json(clip("a.mp4"))


def item(task, k):
    return BenchmarkItem(
        id=f"{task}:{k:02d}",
        task=task,
        source="avqa",
        category="Existential",
        question=f"Q {k}?",
        options={"A": "piano", "B": "violin", "C": "None of the above"},
        answer="A",
        setting="instruction",
        template_id=0,
        media=MEDIA,
        abstain_letter="C",
        meta={"record": f"r{k}"},
    )


ITEMS = [item(CLEAN_TASK, k) for k in range(30)] + [item("MVIT", k) for k in range(4)]


def scored_run(tmp_path, name, right: set[str]):
    """A scored run right (every rotation) on exactly the items ``right`` names, wrong elsewhere."""
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(i.to_row()) + "\n" for i in ITEMS))
    rows = []
    for it in ITEMS:
        for k in range(len(it.options)):
            _, new_of = rotate(it.options, k)
            rows.append({"id": it.id, "rotation": k, "choice": new_of["A" if it.id in right else "B"]})
    preds = tmp_path / f"{name}.jsonl"
    preds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = score_predictions(EvalArgs(data=str(data), label=name, tasks=[CLEAN_TASK, "MVIT"]), preds, {})
    write_reports(res, tmp_path / name)
    return res


CLEAN = [f"{CLEAN_TASK}:{k:02d}" for k in range(30)]
MVIT = [f"MVIT:{k:02d}" for k in range(4)]
# CLEAN: both right on 0-9, zero-shot only on 10-11 (b = 2), tuned only on 12-19 (c = 8), neither on 20-29
ZS = set(CLEAN[:12]) | set(MVIT[:1])
FT = set(CLEAN[:10]) | set(CLEAN[12:20]) | set(MVIT[:4])


def test_compare_prints_the_paired_tests_per_cell(tmp_path):
    zs, ft = scored_run(tmp_path, "zs", ZS), scored_run(tmp_path, "ft", FT)
    assert zs["paired"]["measure"] == "circular"
    assert zs["paired"]["items"][CLEAN[10]] == ["instruction", CLEAN_TASK, 1]
    lines = compare([zs, ft], bootstrap_resamples=2000).splitlines()
    row = {ln.split(" | ")[1]: ln for ln in lines if ln.startswith("| ft | ")}
    clean_lo, clean_hi = sig.bootstrap_interval(sig.Paired(10, 2, 8, 10), 2000)
    # CLEAN: 30 items, +20 points, b / c = 2 / 8, exact p = 2 * (1 + 10 + 45) / 1024
    assert row[CLEAN_TASK] == (
        f"| ft | {CLEAN_TASK} | 30 | +20.00 | [{clean_lo:+.2f}, {clean_hi:+.2f}] | 2 / 8 | "
        f"{2 * 56 / 1024:.3g} (exact) |"
    )
    assert row["MVIT"].endswith("| 4 | +75.00 | [+25.00, +100.00] | 0 / 3 | 0.25 (exact) |")
    # all items: b = 2, c = 11 of 34
    assert " | all | 34 | +26.47 | " in row["all"] and row["all"].endswith("| 2 / 11 | 0.0225 (exact) |")
    assert any("2000 resamples, seed 0" in ln for ln in lines)
    assert "paired significance" not in compare([zs, ft], bootstrap_resamples=0).lower()


def test_compare_cli_writes_the_tests_to_its_table_and_html_page(tmp_path):
    scored_run(tmp_path, "zs", ZS), scored_run(tmp_path, "ft", FT)
    page, md = tmp_path / "cmp.html", tmp_path / "t.md"
    argv = ["compare", str(tmp_path / "zs"), str(tmp_path / "ft"), "--output", str(md)]
    assert eval_main([*argv, "--html", str(page), "--no_media", "--bootstrap_resamples", "500"]) == 0
    text = md.read_text()
    assert "Paired significance against zs" in text and "500 resamples, seed 0" in text
    assert "| ft | MVIT | 4 | +75.00 | [+25.00, +100.00] | 0 / 3 | 0.25 (exact) |" in text
    html = page.read_text()
    assert "Paired significance against zs" in html and "<th>McNemar p</th>" in html
    assert "<td>0.25 (exact)</td>" in html  # a table of the page's summary, not text
    assert page_data(page)["runs"] == ["zs", "ft"]
    assert eval_main([*argv, "--bootstrap_resamples", "-1"]) == 2


def test_compare_says_why_runs_from_before_paired_get_no_tests(tmp_path):
    zs, ft = scored_run(tmp_path, "zs", ZS), scored_run(tmp_path, "ft", FT)
    del zs["paired"]
    text = compare([zs, ft])
    assert "Significance not computed: zs recorded no per-item outcomes" in text
