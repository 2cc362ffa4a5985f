"""Loading items, scoring external predictions (CircularEval semantics end to end), metrics, reports, CLI."""

import json

import pytest

from cavpref.data import BenchmarkItem
from cavpref.eval.benchmarks.avtrustbench.metrics import dimension_means, summarize
from cavpref.eval.benchmarks.avtrustbench.reader import DataError, load_items
from cavpref.eval.cli import main as eval_main
from cavpref.eval.compare import compare
from cavpref.eval.metrics import ItemOutcome, accuracy_block
from cavpref.eval.pipeline import EvalArgs, score_predictions
from cavpref.eval.registry import write_reports
from cavpref.media.spec import clip, mute, to_json

MEDIA = to_json(clip("a.mp4"))


def item(
    id_, task, options, answer, setting="instruction", abstain=None, category="Existential", source="avqa"
):
    return BenchmarkItem(
        id=id_,
        task=task,
        source=source,
        category=category,
        question=f"Question {id_}?",
        options=options,
        answer=answer,
        setting=setting,
        template_id=0,
        media=MEDIA if task != "MAT" else to_json(mute(clip("a.mp4"))),
        abstain_letter=abstain,
    )


ITEMS = [
    item("i1", "CAT", {"A": "cat then dog", "B": "dog then cat", "C": "both", "D": "bell then horn"}, "A"),
    item("i2", "CAT", {"A": "rain", "B": "wind", "C": "thunder"}, "C", category="Temporal"),
    item("i3", "MAT", {"A": "Yes", "B": "No"}, None, setting="base", source="music_avqa"),
    item(
        "i4", "MCIT", {"A": "piano", "B": "violin", "C": "flute", "D": "None of the above"}, "D", abstain="D"
    ),
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def bench(tmp_path):
    return write_jsonl(tmp_path / "items.jsonl", [i.to_row() for i in ITEMS])


def always_a(drop=()):
    rows = []
    for it in ITEMS:
        for k in range(len(it.options)):
            if (it.id, k) in drop:
                continue
            resp = "None of the above." if it.id == "i4" else "The answer is A"
            rows.append({"id": it.id, "rotation": k, "response": resp})
    return rows + [{"id": "zzz", "response": "A"}]


# ---------------------------------------------------------------------------------------------- loading


def test_load_jsonl_and_datasets_folders(tmp_path, bench):
    from datasets import Dataset, DatasetDict

    res = load_items(bench)
    assert [i.id for i in res.items] == ["i1", "i2", "i3", "i4"] and res.media_root == str(tmp_path)
    prep = tmp_path / "prep"
    for task in ("CAT", "MAT"):
        rows = [i.to_row() for i in ITEMS if i.task == task]
        DatasetDict({"test": Dataset.from_list(rows), "train": Dataset.from_list(rows[:1])}).save_to_disk(
            str(prep / "benchmark" / task)
        )
    (prep / "manifest.json").write_text(json.dumps({"config": {"data_root": "/media/root"}}))
    res = load_items(prep, split="test")
    assert [i.id for i in res.items] == ["i1", "i2", "i3"] and res.media_root == "/media/root"
    assert len(load_items(prep, split="train").items) == 2
    assert [i.id for i in load_items(prep, limit=1).items] == ["i1", "i3"]  # first item of each task
    with pytest.raises(DataError, match="no split 'validation'"):
        load_items(prep, split="validation")


def test_bad_rows_name_file_row_and_problem_or_are_counted(tmp_path):
    bad = ITEMS[0].to_row() | {"id": "bad", "answer": "Z"}
    path = write_jsonl(tmp_path / "x.jsonl", [ITEMS[1].to_row(), bad, ITEMS[1].to_row()])
    with pytest.raises(DataError, match=r"x\.jsonl: row 1 \(id 'bad'\): .*'Z' is not among options"):
        load_items(path)
    res = load_items(path, skip_invalid=True)
    assert [i.id for i in res.items] == ["i2"]
    assert dict(res.skipped) == {"invalid row: answer not among options": 1, "invalid row: duplicate id": 1}
    (tmp_path / "y.jsonl").write_text("{not json\n")
    with pytest.raises(DataError, match=r"y\.jsonl: row 0: .*line 1: not JSON"):
        load_items(tmp_path / "y.jsonl")


# ---------------------------------------------------------------------------------------------- scoring


def test_score_external_predictions_circular(tmp_path, bench):
    preds = write_jsonl(tmp_path / "preds.jsonl", always_a())
    res = score_predictions(EvalArgs(data=str(bench), output=str(tmp_path / "run"), label="ZS"), preds)
    m = res["metrics"]
    # hand-computed: i1 right at rotation 0 then wrong (answer A moves to D), i2 wrong, i3 not an abstention,
    # i4 abstains in all four rotations
    assert m["overall"] == {
        "n": 4,
        "vanilla": 50.0,
        "circular": 25.0,
        "unparsed_rate": 0.0,
        "judged_rate": 0.0,
    }
    assert m["counts"]["passes_run"] == 2 + 1 + 1 + 4 and m["counts"]["passes_full"] == 4 + 3 + 2 + 4
    assert m["counts"]["passes_saved"] == 5
    inst = m["settings"]["instruction"]["tasks"]
    assert (inst["CAT"]["vanilla"], inst["CAT"]["circular"], inst["MCIT"]["circular"]) == (50.0, 0.0, 100.0)
    assert inst["CAT"]["categories"]["Temporal"]["vanilla"] == 0.0
    assert m["settings"]["base"]["tasks"]["MAT"]["sources"]["music_avqa"]["vanilla"] == 0.0
    assert res["predictions"] == {
        "rows": 14,
        "unused": {"not among the selected items": 1, "not needed (decided earlier)": 5},
    }
    assert (tmp_path / "run" / "results.json").is_file() and (tmp_path / "run" / "report.md").is_file()


def test_vanilla_and_missing_predictions_reconcile(tmp_path, bench):
    preds = write_jsonl(tmp_path / "p.jsonl", always_a(drop={("i4", 2)}))
    res = score_predictions(EvalArgs(data=str(bench)), preds)
    c = res["metrics"]["counts"]
    assert (c["items"], c["evaluated"], c["skipped"], c["incomplete"]) == (4, 3, 1, 0)
    assert c["skip_reasons"] == {"no prediction": 1}
    van = score_predictions(EvalArgs(data=str(bench)), preds, {"vanilla": True})["metrics"]
    assert (
        van["overall"]["circular"] is None
        and van["overall"]["vanilla"] == 50.0
        and van["counts"]["passes_saved"] == 0
    )


def test_choice_predictions_and_their_validation(tmp_path, bench):
    rows = [
        {"id": it.id, "rotation": 0, "choice": "ABSTAIN" if it.answer is None else it.answer} for it in ITEMS
    ]
    res = score_predictions(
        EvalArgs(data=str(bench)), write_jsonl(tmp_path / "p.jsonl", rows), {"vanilla": True}
    )
    assert res["metrics"]["overall"]["vanilla"] == 100.0
    rows[0]["choice"] = "Q"
    res = score_predictions(
        EvalArgs(data=str(bench)), write_jsonl(tmp_path / "p.jsonl", rows), {"vanilla": True}
    )
    assert res["metrics"]["overall"]["vanilla"] == 75.0 and res["metrics"]["overall"]["unparsed_rate"] == 25.0
    write_jsonl(tmp_path / "bad.jsonl", [{"id": "i1", "response": "A", "choice": "A"}])
    with pytest.raises(DataError, match=r"bad\.jsonl: line 1: give exactly one of"):
        score_predictions(EvalArgs(data=str(bench)), tmp_path / "bad.jsonl")


def test_judge_handles_what_heuristics_cannot(tmp_path, bench):
    from tests.helpers.judge_server import LoopbackServer, completion

    def reply(body, n):
        answer = body["messages"][0]["content"].rsplit("Answer: ", 1)[1]
        return 200, {}, completion("No match found" if "clarify" in answer else "C"), 0

    server = LoopbackServer(reply)
    try:
        rows = [
            {"id": "i2", "response": "Could you clarify the question?"},
            {"id": "i1", "response": "It sounds like a dog"},
            {"id": "i3", "response": ""},
            {"id": "i4", "response": "D"},
        ]
        args = EvalArgs(
            data=str(bench),
            judge_model="jm",
            judge_base_url=server.url,
            judge_cache=str(tmp_path / "c.sqlite"),
        )
        res = score_predictions(args, write_jsonl(tmp_path / "p.jsonl", rows), {"vanilla": True})
    finally:
        server.close()
    m = res["metrics"]
    assert res["judge"]["model"] == "jm" and res["judge"]["prompt_version"] == "avtrustbench-choice/v1"
    # i1 judged C (wrong), i2 no match (wrong), i3 empty (never sent to the judge), i4 heuristic D (right)
    assert len(server.requests) == 2
    assert (
        m["overall"]["vanilla"] == 25.0
        and m["overall"]["judged_rate"] == 25.0
        and m["overall"]["unparsed_rate"] == 50.0
    )
    assert m["counts"]["unparsed_reasons"] == {"empty response": 1, "judge: no match": 1}


# ---------------------------------------------------------------------------------------------- metrics, reports


def test_metric_blocks_by_hand():
    outs = [
        ItemOutcome(
            "a", "MVT", "base", "s", "Count", vanilla=True, circular=True, passes_run=2, passes_total=2
        ),
        ItemOutcome(
            "b",
            "MVT",
            "base",
            "s",
            "Count",
            vanilla=True,
            circular=False,
            passes_run=2,
            passes_total=4,
            unparsed_passes=1,
        ),
        ItemOutcome("c", "MVT", "base", "s", "Count", status="skipped", reason="media: X"),
    ]
    assert accuracy_block(outs, True) == {
        "n": 2,
        "vanilla": 100.0,
        "circular": 50.0,
        "unparsed_rate": 25.0,
        "judged_rate": 0.0,
    }
    assert dimension_means(
        {"MVT": {"circular": 50.0}, "MAT": {"circular": 70.0}, "MCIT": {"circular": 10.0}}
    ) == {"Adversarial attack": 10.0, "Compositional reasoning": None, "Modality-specific dependency": 60.0}
    s = summarize(outs, circular=True)
    assert s["counts"]["skip_reasons"] == {"media: X": 1} and s["counts"]["items"] == 3


def test_report_plots_and_compare(tmp_path, bench):
    zs = score_predictions(
        EvalArgs(data=str(bench), label="ZS"), write_jsonl(tmp_path / "a.jsonl", always_a())
    )
    perfect = []
    for it in ITEMS:
        from cavpref.eval.circular import rotate

        for k in range(len(it.options)):
            _, new_of = rotate(it.options, k)
            perfect.append(
                {"id": it.id, "rotation": k, "choice": "ABSTAIN" if it.answer is None else new_of[it.answer]}
            )
    ft = score_predictions(
        EvalArgs(data=str(bench), label="CAVPref"), write_jsonl(tmp_path / "b.jsonl", perfect)
    )
    assert ft["metrics"]["overall"]["circular"] == 100.0
    write_reports(zs, tmp_path / "zs")
    md = (tmp_path / "zs" / "report.md").read_text()
    assert "| CAT | Compositional reasoning | 2 | 0.00 | 50.00 |" in md
    assert "passes saved by early stopping | 5 of 13" in md and "Base vs instruction" not in md
    # the default --tasks asks for all nine; the ones this data has no items for are named
    assert zs["loading"]["tasks_without_items"] == ["ICIT", "MVIT", "MAIT", "COT-Stitch", "COT-Swap", "MVT"]
    assert "| requested tasks with no items | ICIT, MVIT, MAIT, COT-Stitch, COT-Swap, MVT |" in md
    assert "### Per category — avqa, instruction setting" in md and "| Task | E | T | All |" in md
    for png in ("tasks_instruction.png", "tasks_base.png", "dimensions_radar.png"):
        assert (tmp_path / "zs" / "plots" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = compare([zs, ft])
    assert table.splitlines()[0] == "| Method | MCIT | CAT |"
    assert "ZS: external predictions / circular; CAVPref: external predictions / circular" in table
    assert "Warning" not in table
    vanilla = score_predictions(EvalArgs(data=str(bench), label="V"), tmp_path / "a.jsonl", {"vanilla": True})
    assert "mix protocols" in compare([zs, vanilla]) and "mix protocols" not in compare(
        [zs, vanilla], metric="vanilla"
    )
    assert (
        "| CAVPref | 100.00 (+0.00) | 100.00 (+100.00) |" in table
        and "| ZS (zero-shot) | 100.00 | 0.00 |" in table
    )
    write_reports(ft, tmp_path / "ft")
    assert (
        eval_main(
            [
                "compare",
                str(tmp_path / "zs"),
                str(tmp_path / "ft"),
                "--labels",
                "ZS",
                "SFT",
                "--output",
                str(tmp_path / "t5.md"),
            ]
        )
        == 0
    )
    assert "| SFT | 100.00 (+0.00) | 100.00 (+100.00) |" in (tmp_path / "t5.md").read_text()


def test_cli_score_prompts_and_errors(tmp_path, bench, capsys):
    assert eval_main(["prompts", "--data", str(bench), "--prompts_out", str(tmp_path / "pr.jsonl")]) == 0
    prompts = [json.loads(x) for x in (tmp_path / "pr.jsonl").read_text().splitlines()]
    assert (
        len(prompts) == 13
        and prompts[1]["rotation"] == 1
        and prompts[1]["prompt"].startswith("Question i1?\nA. dog then cat")
    )
    write_jsonl(tmp_path / "p.jsonl", always_a())
    assert (
        eval_main(
            [
                "score",
                "--predictions",
                str(tmp_path / "p.jsonl"),
                "--data",
                str(bench),
                "--output",
                str(tmp_path / "out"),
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["circular"] == 25.0
    assert (
        eval_main(["score", "--predictions", str(tmp_path / "p.jsonl"), "--data", str(tmp_path / "nope")])
        == 2
    )
    assert "benchmark data not found" in capsys.readouterr().err
    bad = ["avtrustbench", "--data", str(bench), "--output", str(tmp_path / "x"), "--tasks", "FOO"]
    assert eval_main(bad) == 2
    assert "unknown task(s) ['FOO']" in capsys.readouterr().err
    assert eval_main(["compare", str(tmp_path / "out")]) == 2
    assert "compare needs a zero-shot run and at least one fine-tuned run" in capsys.readouterr().err
    # a selection with no items is an error, not an empty report
    assert (
        eval_main(
            ["score", "--predictions", str(tmp_path / "p.jsonl"), "--data", str(bench), "--tasks", "MVIT"]
        )
        == 2
    )
    assert "no items selected (--tasks MVIT" in capsys.readouterr().err
