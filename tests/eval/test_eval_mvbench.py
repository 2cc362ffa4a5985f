"""MVBench, the fifth benchmark (issue 45), added as one folder: its released layout read from the fixtures in
that folder (json/<sub_task>.json + video/<folder>/<clip>), bounded clips cut to start / end, the notebook's
check_ans under --protocol official, the strict extraction under paper, a run against a served model on
loopback, external predictions, and `eval compare` across two runs."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from cavpref.apps.cli import main as cavpref_main
from cavpref.eval.benchmarks.mvbench import data as mvbench
from cavpref.eval.common import BenchmarkInputError
from cavpref.media.write import write_mp4
from tests.helpers.html_report_check import check_run_page
from tests.helpers.judge_server import LoopbackServer, completion

FIXTURES = Path(mvbench.__file__).parent / "fixtures"


@pytest.fixture
def release(tmp_path):
    """The fixture release with its clips written: 4 s at 4 fps, grey level 50 * (second + 1), with audio
    (which MVBench does not feed)."""
    root = tmp_path / "MVBench"
    shutil.copytree(FIXTURES / "json", root / "json")
    frames = np.concatenate([np.full((4, 24, 32, 3), 50 * (s + 1), np.uint8) for s in range(4)])
    tone = (0.3 * np.sin(np.arange(4 * 16000) / 3)).astype(np.float32)
    for task, clips in (
        ("action_sequence", ("0A8ZT.mp4", "1BQZK.mp4")),
        ("object_existence", ("video_10001.mp4", "video_10002.mp4")),
    ):
        folder = root / "video" / mvbench.SUBTASKS[task][0]
        for name in clips:
            write_mp4(folder / name, frames, 4.0, tone, 16000)
    return root


def test_reader_follows_the_released_layout(release):
    items = mvbench.read(release)
    assert [i.id for i in items] == [
        "mvbench/action_sequence/0",
        "mvbench/action_sequence/1",
        "mvbench/episodic_reasoning/0",
        "mvbench/object_existence/0",
        "mvbench/object_existence/1",
    ]
    first = items[0]
    assert first.options == {
        "A": "Ate the medicine.",
        "B": "Tidied up the blanket.",
        "C": "Put down the cup/glass/bottle.",
        "D": "Took the box.",
    }
    assert first.answer == "A" and items[1].answer == "B" and items[3].answer == "C"
    # bounded sub-task: the clip cut to [start, end]; video stream only
    assert json.loads(first.media) == {
        "op": "combine",
        "audio": None,
        "video": {"op": "source", "path": "video/star/Charades_v1_480/0A8ZT.mp4", "start": 1.0, "end": 3.0},
    }
    assert json.loads(items[3].media)["video"]["end"] is None
    assert items[2].meta["data_type"] == "frame"
    assert "(A) Ate the medicine.\n(B)" in mvbench.prompt(first)
    assert mvbench.prompt(first, official=True).startswith(mvbench.SYSTEM + "\nQuestion: What happened")
    assert mvbench.prompt(first, official=True).endswith("Only give the best option.")
    unbounded = mvbench.read(release / "json" / "action_sequence.json", bounds=False)
    assert json.loads(unbounded[0].media)["video"]["end"] is None


@pytest.mark.parametrize(
    "change, field",
    [({"answer": "Flew away."}, "answer"), ({"candidates": "A"}, "candidates"), ({"start": None}, "start")],
)
def test_reader_names_the_bad_field(release, change, field):
    path = release / "json" / "action_sequence.json"
    rows = json.loads(path.read_text())
    rows[1] = {**rows[1], **change}
    path.write_text(json.dumps(rows))
    with pytest.raises(BenchmarkInputError, match=rf"action_sequence\.json: record 1, field '{field}'"):
        mvbench.read(release)


@pytest.mark.parametrize(
    "response, correct",
    [
        ("A) Ate the medicine.", True),  # the notebook's own answer form after its "Best option:("
        ("A", True),
        ("a", True),
        ("(A) Ate the medicine.", True),  # "((a)" contains "(a)"
        ("B) Tidied up the blanket.", False),
        ("The answer is A.", False),  # "(the" is no option
        ("", True),  # "(" is a substring of "(a)": the notebook's rule, kept under official
        ("A\nbecause B", True),  # only the first line
    ],
)
def test_official_check_ans(release, response, correct):
    item = mvbench.read(release)[0]
    assert mvbench.ground_truth(item) == "(A) Ate the medicine."
    assert mvbench.check_ans(mvbench.official_prediction(response), mvbench.ground_truth(item)) is correct


def test_metrics_by_hand():
    m = mvbench.mvbench_metrics(
        [("action_sequence", True, 4), ("action_sequence", False, 4), ("object_existence", True, 3)]
    )
    assert m["overall"] == {"n": 3, "Avg": pytest.approx(200 / 3)}  # correct / total, the notebook's Avg
    assert m["task_mean"] == {"n_tasks": 2, "acc": pytest.approx(75.0)}
    assert m["per_subtask"]["object_existence"] == {
        "n": 1,
        "acc": 100.0,
        "random_guess": pytest.approx(100 / 3),
    }


def test_run_against_a_served_model_then_predictions_and_compare(release, tmp_path):
    """A served model on loopback gets the bounded clip's frames (from 1-3 s only) and no audio; the
    frame-folder sub-task is skipped with a reason; paper and official score the same answers by their own
    rules; external predictions and `eval compare` work on the folder's format."""
    import base64
    import io

    import av

    received = {}

    def reply(body, n):
        parts = {p["type"]: p for p in body["messages"][0]["content"]}
        text = parts["text"]["text"]
        with av.open(
            io.BytesIO(base64.b64decode(parts["video_url"]["video_url"]["url"].split(",", 1)[1]))
        ) as c:
            levels = [round(f.to_ndarray(format="rgb24").mean() / 10) * 10 for f in c.decode(video=0)]
        received.setdefault(
            text.split("\n")[0 if text.startswith("Question") else 1], (sorted(parts), levels)
        )
        answers = {
            "person took": "A) Ate the medicine.",
            "person opened": "The answer is B.",
            "green": "(C) no",
        }
        return (
            200,
            {},
            completion(next(v for k, v in answers.items() if k in text) if "red" not in text else "B"),
            0,
        )

    server = LoopbackServer(reply)
    base = ["eval", "mvbench", "--model", server.url, "--endpoint_model", "m", "--data", str(release)]
    try:
        assert (
            cavpref_main(
                [*base, "--output", str(tmp_path / "paper"), "--num_frames", "4", "--label", "paper"]
            )
            == 0
        )
        assert (
            cavpref_main(
                [*base, "--output", str(tmp_path / "official"), "--protocol", "official", "--label", "off"]
            )
            == 0
        )
    finally:
        server.close()
    kinds, levels = received["Question: What happened after the person took the food?"]
    assert kinds == ["text", "video_url"]  # MVBench feeds the video only
    assert levels == [100, 100, 150, 150]  # 4 frames of seconds 1-3 (grey 100, 150): cut to the bound
    paper = json.loads((tmp_path / "paper" / "results.json").read_text())
    official = json.loads((tmp_path / "official" / "results.json").read_text())
    assert paper["counts"]["skip_reasons"] == {"media: MediaError": 1}  # episodic_reasoning: frame folders
    # paper: A (letter) right; "The answer is B." right; "(C) no" right; "B" (= "no") wrong -> 3 / 4
    assert paper["metrics"]["overall"] == {"n": 4, "Avg": 75.0}
    # official: "(A) Ate..." right; "(The answer is B." wrong; "((C) no" right; "(B" wrong -> 2 / 4
    assert official["metrics"]["overall"] == {"n": 4, "Avg": 50.0}
    assert official["metrics"]["per_subtask"]["action_sequence"]["acc"] == 50.0
    assert "- protocol: **official**" in (tmp_path / "official" / "report.md").read_text()
    rows = check_run_page(tmp_path / "paper")  # report.html: the frame-folder item shows why it was skipped
    assert rows["mvbench/episodic_reasoning/0"]["media"]["error"].startswith("MediaError: episodic_reasoning")
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        "\n".join(
            json.dumps(r)
            for r in (
                {"id": "mvbench/action_sequence/0", "pred": "(A) Ate the medicine."},
                {"id": "mvbench/action_sequence/1", "response": "C"},
                {"id": "mvbench/object_existence/0", "response": "C"},
                {"id": "mvbench/nope/0", "response": "A"},
            )
        )
    )
    out = tmp_path / "scored"
    argv = ["eval", "score", "--benchmark", "mvbench", "--predictions", str(preds), "--data", str(release)]
    assert cavpref_main([*argv, "--output", str(out), "--protocol", "official"]) == 0
    scored = json.loads((out / "results.json").read_text())
    assert scored["metrics"]["overall"] == {"n": 3, "Avg": pytest.approx(200 / 3)}
    assert scored["counts"]["skip_reasons"] == {"no prediction": 2}
    assert scored["predictions"]["unused"] == {"not among the selected items": 1}
    scored_rows = check_run_page(out)  # no records kept: `eval report --html` scores the predictions again
    assert scored_rows["mvbench/action_sequence/0"]["passes"][0]["output"] == "(A) Ate the medicine."
    table = tmp_path / "t.md"
    assert (
        cavpref_main(
            ["eval", "compare", str(tmp_path / "paper"), str(tmp_path / "official"), "--output", str(table)]
        )
        == 0
    )
    md = table.read_text()
    assert md.splitlines()[0] == "| Run | action_sequence | object_existence | Avg | Rank (Avg) |"
    assert "| off | 50.00 (-50.00) | 50.00 (+0.00) | 50.00 (-25.00) | 2 |" in md
    assert "**Warning: the rows differ in answer mode or protocol" in md
