"""AVTrustBench's evaluation-time instruction override (issue 45, the paper's Table 12): several wordings swept
in one run, each instruction-setting item asked once per wording, a table per wording; and `eval compare`'s
leaderboard plot of AVTrustBench runs."""

import json

from cavpref.data import BenchmarkItem
from cavpref.eval.circular import rotate
from cavpref.eval.cli import main as eval_main
from cavpref.eval.pipeline import EvalArgs, export_prompts, score_predictions
from cavpref.media.spec import clip, to_json

WORDINGS = [
    'If the correct choice is not provided, reply with "None of the above."',
    "If no listed option is accurate, respond with ({abstain_letter}) None of the above.",
]


def _item(id_, task, answer, setting="instruction"):
    options = {"A": "piano", "B": "violin", "C": "None of the above"}
    return BenchmarkItem(
        id=id_,
        task=task,
        source="music_avqa",
        category="Count",
        question=f"Which instrument {id_}?",
        options=options if setting == "instruction" else {"A": "piano", "B": "violin"},
        answer=answer,
        setting=setting,
        template_id=0,
        media=to_json(clip("a.mp4")),
        abstain_letter="C" if setting == "instruction" else None,
        instruction="If none is right, answer None of the above.",
        meta={"record": id_.split("-")[0]},
    )


ITEMS = [
    _item("r1-clean", "CLEAN", "A"),
    _item("r1-mcit", "MCIT", "C"),
    _item("r2-clean", "CLEAN", "B"),
    _item("r2-mcit", "MCIT", "C"),
    _item("r3-mat", "MAT", None, setting="base"),
]


def test_every_wording_is_asked_and_reported(tmp_path):
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(i.to_row()) + "\n" for i in ITEMS))
    args = EvalArgs(
        data=str(data), tasks=["CLEAN", "MCIT", "MAT"], output=str(tmp_path / "run"), label="sweep"
    )
    options = {"instructions": WORDINGS}
    prompts = tmp_path / "prompts.jsonl"
    assert (
        export_prompts(args, prompts, options) == 4 * 2 * 3 + 2
    )  # 4 instruction items x 2 wordings x 3 passes
    rows = [json.loads(x) for x in prompts.read_text().splitlines()]
    by_id = {(r["id"], r["rotation"]): r for r in rows}
    assert by_id[("r1-mcit#w0", 0)]["prompt"].endswith(WORDINGS[0])
    assert by_id[("r1-mcit#w1", 1)]["prompt"].endswith(
        "respond with (B) None of the above."
    )  # pass 1: C -> B
    assert ("r3-mat", 0) in by_id and ("r3-mat#w0", 0) not in by_id  # base items once, no instruction
    # a model right everywhere under wording 0; under wording 1 it abstains on everything
    preds = []
    for it in ITEMS:
        for j in (0, 1) if it.setting == "instruction" else (None,):
            iid = it.id if j is None else f"{it.id}#w{j}"
            for k in range(len(it.options)):
                options_k, new_of = rotate(it.options, k)
                right = "ABSTAIN" if it.answer is None else new_of[it.answer]
                abstain = next(x for x, t in options_k.items() if t == "None of the above") if j else None
                preds.append({"id": iid, "rotation": k, "choice": abstain or right})
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in preds))
    res = score_predictions(args, tmp_path / "p.jsonl", options)
    m = res["metrics"]
    # the main tables are the first wording's (+ base items): all right, paired 100
    assert m["overall"]["circular"] == 100.0 and m["overall"]["n"] == 5
    assert m["trust"]["settings"]["instruction"]["paired"]["circular"] == 100.0
    sweep = m["instruction_sweep"]
    assert sweep["wordings"] == WORDINGS
    w0, w1 = sweep["per_wording"]
    assert w0["tasks"]["CLEAN"]["circular"] == 100.0 and w0["tasks"]["MCIT"]["circular"] == 100.0
    assert w1["tasks"]["CLEAN"]["circular"] == 0.0 and w1["tasks"]["MCIT"]["circular"] == 100.0
    assert w1["overall"]["circular"] == 50.0 and w1["overall"]["n"] == 4
    report = (tmp_path / "run" / "report.md").read_text()
    assert "## Instruction sweep (paper Table 12)" in report
    assert f"| 1: {WORDINGS[1]} |" in report and f"### Wording 0: {WORDINGS[0]}" in report
    assert res["evaluation"]["instructions"] == WORDINGS


def test_compare_draws_the_leaderboard_for_avtrustbench(tmp_path):
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(i.to_row()) + "\n" for i in ITEMS))
    for name, choice in (("zs", "A"), ("ft", "C")):
        rows = [
            {"id": it.id, "rotation": k, "choice": choice} for it in ITEMS for k in range(len(it.options))
        ]
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        argv = ["score", "--predictions", str(tmp_path / f"{name}.jsonl"), "--data", str(data)]
        assert (
            eval_main(
                [*argv, "--tasks", "CLEAN", "MCIT", "MAT", "--output", str(tmp_path / name), "--label", name]
            )
            == 0
        )
    plot = tmp_path / "board.png"
    assert eval_main(["compare", str(tmp_path / "zs"), str(tmp_path / "ft"), "--plot", str(plot)]) == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
