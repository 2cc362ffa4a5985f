"""The paired trust score, abstention rates and the computed reference rows (issue 19 item 3), hand-computed."""

import json

from cavpref.data import BenchmarkItem
from cavpref.eval.benchmarks.avtrustbench.trust import reference_outcomes, references, trust_summary
from cavpref.eval.cli import main as eval_main
from cavpref.eval.compare import compare
from cavpref.eval.metrics import ItemOutcome
from cavpref.eval.pipeline import EvalArgs, score_predictions
from cavpref.eval.registry import get, write_reports
from cavpref.media.spec import clip, to_json

MEDIA = to_json(clip("a.mp4"))


def outcome(task, record, vanilla, circular, abstained, setting="instruction"):
    return ItemOutcome(
        f"{task}:{setting}:{record}",
        task,
        setting,
        "avqa",
        "Existential",
        vanilla=vanilla,
        circular=circular,
        passes_run=1,
        passes_total=1,
        record=record,
        abstained=abstained,
    )


OUTCOMES = [
    outcome("CLEAN", "r1", True, True, False),
    outcome("CLEAN", "r2", True, False, False),
    outcome("CLEAN", "r3", False, False, True),
    outcome("MVIT", "r1", True, True, True),  # twin r1 right in both views -> paired right
    outcome("MVIT", "r2", True, True, True),  # twin r2 right at pass 0 only -> vanilla right, circular wrong
    outcome("MVIT", "r4", True, True, True),  # no CLEAN r4 -> unpaired
    outcome("CAT", "r3", True, True, False),  # twin r3 wrong -> wrong
    outcome("MVIT", "r1", True, True, True, setting="base"),  # the twin is in the other setting -> unpaired
    ItemOutcome(
        "MAT:instruction:r1",
        "MAT",
        "instruction",
        "avqa",
        "Count",
        status="skipped",
        reason="media",
        record="r1",
    ),  # not evaluated: neither paired nor counted
]


def test_paired_score_and_abstention_rates_hand_computed():
    s = trust_summary(OUTCOMES, circular=True)["settings"]
    inst = s["instruction"]
    assert inst["tasks"]["MVIT"] == {
        "abstention_rate": 100.0,
        "paired": {"n": 2, "vanilla": 100.0, "circular": 50.0},
        "unpaired": 1,
    }
    assert inst["tasks"]["CAT"] == {
        "abstention_rate": 0.0,
        "paired": {"n": 1, "vanilla": 0.0, "circular": 0.0},
        "unpaired": 0,
    }
    assert inst["tasks"]["CLEAN"] == {"abstention_rate": 33.33}  # 1 of 3 clean items abstained
    assert inst["paired"] == {"n": 3, "vanilla": 66.67, "circular": 33.33}
    assert inst["false_abstention"] == 33.33
    assert "MAT" not in inst["tasks"] or inst["tasks"]["MAT"]["paired"]["n"] == 0
    assert s["base"]["tasks"]["MVIT"]["paired"] == {"n": 0, "vanilla": None, "circular": None}
    assert s["base"]["tasks"]["MVIT"]["unpaired"] == 1 and s["base"]["false_abstention"] is None
    assert trust_summary(OUTCOMES, circular=False)["settings"]["instruction"]["paired"]["circular"] is None


def item(task, record, answer, setting="instruction"):
    options = (
        {"A": "piano", "B": "violin", "C": "None of the above"}
        if setting == "instruction"
        else {"A": "piano", "B": "violin"}
    )
    return BenchmarkItem(
        id=f"{task}:{setting}:{record}",
        task=task,
        source="avqa",
        category="Existential",
        question=f"Q {record}?",
        options=options,
        answer=answer,
        setting=setting,
        template_id=0,
        media=MEDIA,
        abstain_letter="C" if setting == "instruction" else None,
        meta={"record": record},
    )


ITEMS = [
    item("CLEAN", "r1", "A"),
    item("CLEAN", "r2", "B"),
    item("MVIT", "r1", "C"),
    item("MVIT", "r2", "C"),
    item("CAT", "r1", "B"),
    item("MVIT", "r1", None, setting="base"),
    item("CLEAN", "r1", "A", setting="base"),
]


def test_reference_policies_hand_computed():
    refs = references(ITEMS, circular=True)
    always, never = refs["always abstain"], refs["never abstain"]
    acc = {t: b["circular"] for t, b in always["settings"]["instruction"]["tasks"].items()}
    assert acc == {"MVIT": 100.0, "CAT": 0.0, "CLEAN": 0.0}
    acc = {t: b["circular"] for t, b in never["settings"]["instruction"]["tasks"].items()}
    assert acc == {"MVIT": 0.0, "CAT": 100.0, "CLEAN": 100.0}
    assert always["settings"]["base"]["tasks"]["MVIT"]["vanilla"] == 100.0  # answer None = abstain
    # always abstaining never gets a pair right: its clean twins are wrong
    assert always["trust"]["settings"]["instruction"]["paired"] == {"n": 3, "vanilla": 0.0, "circular": 0.0}
    assert always["trust"]["settings"]["instruction"]["false_abstention"] == 100.0
    t = never["trust"]["settings"]["instruction"]
    assert (
        t["tasks"]["CAT"]["paired"]["circular"] == 100.0 and t["tasks"]["MVIT"]["paired"]["circular"] == 0.0
    )
    assert t["paired"]["circular"] == 33.33 and t["false_abstention"] == 0.0
    assert all(o.abstained for o in reference_outcomes(ITEMS, "always abstain"))


def _predictions(choose):
    """CircularEval predictions: ``choose(item, rotated options, letter map)`` -> a letter per rotation."""
    from cavpref.eval.circular import rotate

    rows = []
    for it in ITEMS:
        if it.setting != "instruction":
            continue
        for k in range(len(it.options)):
            options, new_of = rotate(it.options, k)
            rows.append({"id": it.id, "rotation": k, "choice": choose(it, options, new_of)})
    return rows


def _abstain_letter(options):
    return next(x for x, t in options.items() if t == "None of the above")


def test_scored_run_compare_and_report_carry_trust_and_reference_rows(tmp_path):
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(i.to_row()) + "\n" for i in ITEMS))

    def run(name, choose):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in _predictions(choose)))
        res = score_predictions(
            EvalArgs(data=str(data), label=name, tasks=["MVIT", "CAT", "CLEAN"]),
            path,
            {"setting": "instruction"},
        )
        write_reports(res, tmp_path / name)
        return res

    def detector(it, options, new_of):  # abstains exactly where it should
        return new_of[it.answer]

    def blind(it, options, new_of):  # abstains on every item
        return _abstain_letter(options)

    good, bad = run("detector", detector), run("blind", blind)
    # the model that abstains blindly ties the detector on MVIT's plain accuracy, not on the paired score
    assert bad["metrics"]["settings"]["instruction"]["tasks"]["MVIT"]["circular"] == 100.0
    assert bad["metrics"]["trust"]["settings"]["instruction"]["paired"]["circular"] == 0.0
    assert good["metrics"]["trust"]["settings"]["instruction"]["paired"]["circular"] == 100.0
    assert bad["metrics"]["trust"]["settings"]["instruction"]["false_abstention"] == 100.0
    assert get("avtrustbench")().headline(good)["trust"]["instruction"] == {
        "paired": 100.0,
        "paired_n": 3,
        "false_abstention": 0.0,
    }
    table = compare([good, bad])
    lines = table.splitlines()
    assert lines[0] == "| Method | MVIT | CAT | CLEAN | Paired |"
    assert "| blind | 100.00 (+0.00) | 0.00 (-100.00) | 0.00 (-100.00) | 0.00 (-100.00) |" in lines
    assert "| always abstain (computed) | 100.00 | 0.00 | 0.00 | 0.00 |" in lines
    assert "| never abstain (computed) | 0.00 | 100.00 | 100.00 | 33.33 |" in lines
    assert "| Method (paired %) | MVIT | CAT | all |" in lines  # the paired score per perturbed task
    assert (
        lines[lines.index("| Method (abstention %) | MVIT | CAT | CLEAN |") + 3]
        == "| blind | 100.00 | 100.00 | 100.00 |"
    )
    md = (tmp_path / "blind" / "report.md").read_text()
    assert "### Trust — instruction setting" in md and "false-abstention rate (100.00 %)" in md
    assert "| MVIT | 2 | 0.00 | 0.00 | 100.00 | 100.00 | 100.00 | 0.00 |" in md
    assert (
        eval_main(
            [
                "compare",
                str(tmp_path / "detector"),
                str(tmp_path / "blind"),
                "--output",
                str(tmp_path / "t.md"),
            ]
        )
        == 0
    )
    assert "| always abstain (computed) |" in (tmp_path / "t.md").read_text()
