"""What the reports and the CLI print says what happened (issue 57, item 9): the input line names the streams
the items carry (MVBench's clips are video only), an entropy of one pattern is 0.000 (not -0.000), MMAR's
headings carry their counts ("5 inference runs", not "R inference runs"), the CLEAN warning gives the advice
that fits, and an import's own output exports without --media_root."""

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from cavpref.apps.cli import main as cavpref_main
from cavpref.data import BenchmarkItem
from cavpref.data_prep.formats import ExportArgs, ImportArgs, export_dataset, import_dataset
from cavpref.eval.ablation import streams
from cavpref.eval.benchmarks.mmar import data as mmar
from cavpref.eval.benchmarks.mmar import report as mmar_report
from cavpref.eval.benchmarks.mvbench import data as mvbench
from cavpref.eval.benchmarks.traceav import report as traceav_report
from cavpref.eval.benchmarks.traceav.metrics import error_entropy
from cavpref.media.spec import clip, drop_video, mute, to_json
from cavpref.media.write import write_mp4


def test_mvbench_report_says_video_only(tmp_path):
    root = tmp_path / "MVBench"
    shutil.copytree(Path(mvbench.__file__).parent / "fixtures" / "json", root / "json")
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"id": "mvbench/action_sequence/0", "response": "A"}) + "\n")
    out = tmp_path / "o"
    argv = ["eval", "score", "--benchmark", "mvbench", "--predictions", str(preds), "--data", str(root)]
    assert cavpref_main([*argv, "--tasks", "action_sequence", "--output", str(out)]) == 0
    assert "- input: **video only**" in (out / "report.md").read_text()
    results = json.loads((out / "results.json").read_text())
    assert results["evaluation"]["input"]["streams"] == "video only"


def test_the_input_words_follow_the_items_media():
    def items(*media):
        return [
            BenchmarkItem(f"i{n}", "MCIT", "s", "c", "q", {"A": "x", "B": "y"}, "A", "base", 0, m)
            for n, m in enumerate(media)
        ]

    av, v, a = to_json(clip("a.mp4")), to_json(mute(clip("a.mp4"))), to_json(drop_video(clip("a.mp4")))
    assert streams(items(av, av), None, False) == "video + audio"
    assert streams(items(v), None, False) == "video only"  # MVBench
    assert streams(items(a), None, False) == "audio only"  # MMAR
    assert streams(items(v), "audio", False) == "video only (audio removed)"
    assert streams(items(av, v, a), None, False) == "video + audio / video only / audio only (by item)"
    assert streams(items(av), None, True) == "text only (no video, no audio)"


def test_traceav_entropy_of_one_error_pattern_is_plus_zero():
    from cavpref.eval.benchmarks.traceav.metrics import TraceRecord

    wrong = TraceRecord("temporal_order", ("B",), ("A",), 4, 2)  # the same wrong pattern twice
    e = error_entropy([wrong, wrong])
    assert e["bits"] == 0.0 and math.copysign(1.0, e["bits"]) == 1.0
    lines = traceav_report.analyses({"error_entropy": {"general": e, "all": e}})
    assert "| general sub-tasks | 2 | 1 | 0.000 |" in lines and not any("-0.000" in x for x in lines)


def test_mmar_headings_carry_the_run_and_rater_counts():
    per_item = [
        [mmar.MMARRecord(f"q{i}", True, (0.2, 0.4, 0.6), "music", "c", "s") for _ in range(5)]
        for i in range(2)
    ]
    results = {
        "metrics": {"inference_runs": mmar.inference_runs_metrics(per_item)},
        "evaluation": {
            "judge": {"raters": 3},
            "inference_runs": {"runs": 5, "seeds": [0, 1, 2, 3, 4], "temperature": 1.0},
        },
    }
    text = "\n".join(mmar_report.section(results))
    assert "## 5 inference runs, mean of the middle three — the model answered 5 times" in text
    assert "rated by the 3 raters" in text and "R inference" not in text
    one = [mmar.MMARRecord("q", True, (0.2, 0.4, 0.6), "music", "c", "s")]
    results = {"metrics": mmar.mmar_metrics(one), "evaluation": {"judge": {"raters": 3}}}
    text = "\n".join(mmar_report.section(results))
    assert "## one answer per item, 3 raters per answer" in text and "## 3 runs, mean of the middle" in text


@pytest.mark.parametrize(
    "tasks, advice",
    [
        # the data holds no CLEAN items: adding CLEAN to --tasks cannot help, asked for or not
        (["MCIT"], "holds none: rebuild it with `cavpref prep`"),
        (["MCIT", "CLEAN"], "holds none: rebuild it with `cavpref prep`"),
    ],
)
def test_the_clean_warning_gives_the_advice_that_fits(tmp_path, caplog, tasks, advice):
    item = BenchmarkItem(
        "p1",
        "MCIT",
        "music_avqa",
        "Count",
        "Q1 which?",
        {"A": "violin", "B": "drum", "C": "None of the above"},
        "C",
        "instruction",
        0,
        to_json(clip("a.mp4")),
        "C",
        meta={"record": "r1"},
    )
    (tmp_path / "items.jsonl").write_text(json.dumps(item.to_row()) + "\n")
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"id": "p1", "rotation": k, "response": "C"}) + "\n" for k in (0, 1)))
    argv = ["eval", "score", "--predictions", str(preds), "--data", str(tmp_path / "items.jsonl")]
    assert cavpref_main([*argv, "--output", str(tmp_path / "o"), "--tasks", *tasks]) == 0
    err = caplog.text
    assert "no CLEAN items evaluated" in err and advice in err
    if "CLEAN" in tasks:
        assert "add CLEAN to --tasks" not in err


def test_an_imports_own_output_exports_without_media_root(tmp_path):
    frames = np.full((4, 16, 16, 3), 90, np.uint8)
    write_mp4(tmp_path / "data" / "clips" / "q0.mp4", frames, 4.0, np.zeros(16000, np.float32), 16000)
    rows = [
        {"prompt": "Which instrument?", "chosen": "Violin.", "rejected": "Drum.", "videos": ["clips/q0.mp4"]}
    ]
    (tmp_path / "data" / "trl.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    imported = tmp_path / "imported"
    import_dataset(
        ImportArgs(format="trl", files=[str(tmp_path / "data" / "trl.jsonl")], output_dir=str(imported))
    )
    summary = export_dataset(
        ExportArgs(format="trl", data=str(imported), output_dir=str(tmp_path / "exported"))
    )
    assert summary["media_root"] == str((tmp_path / "data").resolve())
    (row,) = [
        json.loads(x) for x in (tmp_path / "exported" / summary["files"]["train"]).read_text().splitlines()
    ]
    assert Path(row["videos"][0]) == (tmp_path / "data" / "clips" / "q0.mp4").resolve()
