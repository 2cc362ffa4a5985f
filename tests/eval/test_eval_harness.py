"""eval/harness: AVTrustBench exported for lmms-eval and VLMEvalKit, their answer files scored back.

The scores of a harness's files must be those of ``cavpref eval score`` on the same replies: the same
items, passes and metrics (paired trust, false abstention, per-task tables). lmms-eval itself is not needed
here (its sample log is written as lmms-eval writes it, from the exported task's own ``process_results``);
``tests/test_eval_harness_lmms.py`` runs lmms-eval's loader on the folder.
"""

import csv
import json

import numpy as np
import pytest

from cavpref.data import BenchmarkItem
from cavpref.eval.args import EvalArgs
from cavpref.eval.circular import rotate
from cavpref.eval.cli import main
from cavpref.eval.harness.lmms_eval import TaskFolder, read_samples
from cavpref.eval.harness.vlmevalkit import CIRCULAR_OFFSET, read_predictions
from cavpref.eval.pipeline import score_predictions
from cavpref.media.probe import probe
from cavpref.media.spec import clip, drop_video, mute, to_json
from cavpref.media.write import write_mp4
from cavpref.prompts import render_prompt

NOTA = "None of the above"


def _item(task, record, setting, answer_text, media):
    texts = ["piano", "violin", "drum"]
    options = dict(zip("ABC", texts))
    abstain = None
    if setting == "instruction":
        options["D"] = NOTA
        abstain = "D"
    answer = next(
        (x for x, t in options.items() if t == answer_text), abstain if answer_text is None else None
    )
    return BenchmarkItem(
        id=f"{task}:{setting}:{record}",
        task=task,
        source="music_avqa",
        category="Counting",
        question=f"Which instrument plays in {record}?",
        options=options,
        answer=answer,
        setting=setting,
        template_id=0,
        media=to_json(media),
        abstain_letter=abstain,
        instruction="If none fits, answer {abstain_letter}." if setting == "instruction" else "",
        meta={"record": record},
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Items of CLEAN, MAT (muted video) and MVT (audio only) on two records, both settings, one real clip."""
    root = tmp_path_factory.mktemp("harness_data")
    t = np.arange(16000, dtype=np.float32) / 16000
    frames = np.full((4, 32, 32, 3), 90, dtype=np.uint8)
    write_mp4(root / "clip.mp4", frames, 4.0, 0.3 * np.sin(2 * np.pi * 440 * t), 16000)
    src = clip("clip.mp4")
    items = []
    for setting in ("base", "instruction"):
        for record, answer in (("r1", "piano"), ("r2", "violin")):
            items.append(_item("CLEAN", record, setting, answer, src))
            items.append(_item("MAT", record, setting, None, mute(src)))
        items.append(_item("MVT", "r1", setting, None, drop_video(src)))
    (root / "items.jsonl").write_text("".join(json.dumps(i.to_row()) + "\n" for i in items))
    return root, items


def _reply(item, k):
    """A recorded model: free-form replies, right on most passes, abstaining in words on MAT, wrong on
    CLEAN r2's rotation 1, silent (unparsed) on MVT's rotation 2 — so every metric has something to count."""
    options, new_of = rotate(item.options, k)
    if item.task == "CLEAN" and item.meta["record"] == "r2" and k == 1:
        return "It is C."
    if item.task == "MVT" and k == 2:
        return "hmm"
    if item.answer is None:
        return "The audio is missing." if item.task == "MAT" else "The video is missing."
    return f"The answer is {new_of[item.answer]}. {options[new_of[item.answer]]}"


def _export(data, tmp_path, harness):
    root, _ = data
    out = tmp_path / harness
    code = main(
        ["export", "--harness", harness, "--data", str(root / "items.jsonl"), "--output", str(out), "--tasks",
         "CLEAN", "MAT", "MVT"]
    )  # fmt: skip
    assert code == 0
    return out


def _cavpref_scores(data, tmp_path):
    root, items = data
    rows = [
        {"id": it.id, "rotation": k, "response": _reply(it, k)}
        for it in items
        for k in range(len(it.options))
    ]
    path = tmp_path / "preds.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return score_predictions(EvalArgs(data=str(root / "items.jsonl"), tasks=["CLEAN", "MAT", "MVT"]), path)


def _by_id(items):
    return {i.id: i for i in items}


def test_vlmevalkit_tsv_follows_its_circular_convention_and_scores_as_cavpref_eval(data, tmp_path):
    _, items = data
    out = _export(data, tmp_path, "vlmevalkit")
    tsv = out / "avtrustbench_cavpref_circular.tsv"  # "circular" in the name: VLMEvalKit scores it circularly
    with open(tsv, encoding="utf-8", newline="") as fh:
        table = list(csv.DictReader(fh, delimiter="\t"))
    assert len(table) == sum(len(i.options) for i in items)  # one row per rotation
    items = _by_id(items)
    groups = {}
    for row in table:
        item, k = items[row["id"]], int(row["rotation"])
        g = groups.setdefault(row["id"], int(row["g_index"]))
        assert int(row["index"]) == g + k * CIRCULAR_OFFSET and int(row["index"]) % CIRCULAR_OFFSET == g
        options, new_of = rotate(item.options, k)
        assert {x: row[x] for x in options} == options  # the rotated options, one column per letter
        assert row["answer"] == (new_of[item.answer] if item.answer else "")
        abstain = new_of[item.abstain_letter] if item.abstain_letter else None
        assert row["prompt"] == render_prompt(item.question, options, item.instruction, abstain)
        # the media honour the spec: MAT's file has no sound track, MVT's is audio alone
        if item.task == "MAT":
            info = probe(row["video_path"])
            assert info.has_video and not info.has_audio and not row["audio_path"]  # and no WAV
        if item.task == "MVT":
            assert not row["video_path"] and row["audio_path"].endswith(".wav")
        if item.task == "CLEAN":  # a whole source file is named, not copied; its sound also as a WAV
            assert row["video_path"].endswith("clip.mp4") and row["audio_path"].endswith(".wav")
    assert len(set(groups.values())) == len(groups)
    # VLMEvalKit's prediction file: every column of the TSV (but an image) and `prediction`
    pred = tmp_path / "model_avtrustbench_cavpref_circular.tsv"
    with open(pred, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, [*table[0], "prediction"], delimiter="\t")
        writer.writeheader()
        for row in table:
            writer.writerow({**row, "prediction": _reply(items[row["id"]], int(row["rotation"]))})
    run = tmp_path / "vlm_run"
    root = data[0]
    assert main(["score", "--harness", "vlmevalkit", "--predictions", str(pred), "--data",
                 str(root / "items.jsonl"), "--tasks", "CLEAN", "MAT", "MVT", "--output", str(run)]) == 0  # fmt: skip
    got = json.loads((run / "results.json").read_text())
    want = _cavpref_scores(data, tmp_path)
    assert got["metrics"] == want["metrics"] and got["counts"] == want["counts"]
    assert got["predictions"]["harness"] == "vlmevalkit"
    trust = got["metrics"]["trust"]["settings"]["instruction"]
    # pairs (MAT r1, CLEAN r1), (MAT r2, CLEAN r2), (MVT r1, CLEAN r1): CLEAN r2 fails its rotation 1 and MVT
    # its rotation 2, so only the first pair is right on every pass
    assert trust["paired"]["n"] == 3 and trust["paired"]["circular"] == 33.33
    assert trust["false_abstention"] == 0.0


def test_vlmevalkit_prediction_file_without_the_pass_columns_is_an_error_naming_them(tmp_path):
    pred = tmp_path / "p.tsv"
    pred.write_text("index\tprediction\n0\tA\n")
    with pytest.raises(ValueError, match=r"p\.tsv: row 2, field 'id': missing"):
        read_predictions(pred)


def test_vlmevalkit_xlsx_is_read(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    book.active.append(["index", "id", "rotation", "prediction"])
    book.active.append([1000000, "CLEAN:base:r1", 1, "B"])
    book.active.append([0, "CLEAN:base:r1", 0, None])  # VLMEvalKit leaves a failed call empty
    book.save(tmp_path / "m.xlsx")
    assert read_predictions(tmp_path / "m.xlsx") == [
        ("row 2", {"id": "CLEAN:base:r1", "rotation": 1, "response": "B"}),
        ("row 3", {"id": "CLEAN:base:r1", "rotation": 0, "response": ""}),
    ]


def test_lmms_eval_task_scores_as_cavpref_eval_and_its_sample_log_reads_back(data, tmp_path):
    _, items = data
    out = _export(data, tmp_path, "lmms_eval")
    assert {p.name for p in out.iterdir()} >= {"avtrustbench_cavpref.yaml", "utils.py", "docs.jsonl"}
    yaml_text = (out / "avtrustbench_cavpref.yaml").read_text()
    assert "process_results: !function utils.process_results" in yaml_text
    assert "aggregation: !function utils.agg_trust_instruction_paired" in yaml_text
    docs = [json.loads(line) for line in (out / "docs.jsonl").read_text().splitlines()]
    assert len(docs) == sum(len(i.options) for i in items)
    task = TaskFolder(out)
    items = _by_id(items)
    # what lmms-eval does with each doc: the reply through process_results, every metric's value logged
    values, log = [], []
    for doc_id, doc in enumerate(docs):
        assert task.doc_to_text(doc) == doc["prompt"]
        visual = task.doc_to_visual(doc)
        if doc["task"] == "MVT":
            assert visual[0]["sampling_rate"] == 16000 and visual[0]["array"].ndim == 1
        else:
            assert visual == [doc["video"]]
        reply = _reply(items[doc["id"]], doc["pass"])
        metrics = task.process_results(doc, [reply])
        values.append(metrics)
        log.append({"doc_id": doc_id, "target": doc["answer"], "filtered_resps": reply, **metrics})
    want = _cavpref_scores(data, tmp_path)
    headline = want["metrics"]
    assert task.aggregate("circular", [v["circular"] for v in values]) == headline["overall"]["circular"]
    assert task.aggregate("vanilla", [v["vanilla"] for v in values]) == headline["overall"]["vanilla"]
    paired = headline["trust"]["settings"]["instruction"]["paired"]["circular"]
    assert (
        task.aggregate("trust_instruction_paired", [v["trust_instruction_paired"] for v in values]) == paired
    )
    assert task.aggregate("unparsed_rate", [v["unparsed_rate"] for v in values]) > 0
    # the sample log back through `cavpref eval score --harness lmms_eval`
    samples = tmp_path / "20260101_samples_avtrustbench_cavpref.jsonl"
    samples.write_text("".join(json.dumps(s) + "\n" for s in log))
    assert len(read_samples(samples)) == len(docs)
    run = tmp_path / "lmms_run"
    root = data[0]
    assert main(["score", "--harness", "lmms_eval", "--predictions", str(samples), "--data",
                 str(root / "items.jsonl"), "--tasks", "CLEAN", "MAT", "MVT", "--output", str(run)]) == 0  # fmt: skip
    got = json.loads((run / "results.json").read_text())
    assert got["metrics"] == want["metrics"] and got["counts"] == want["counts"]
    # the HTML report of that run is rebuilt from the folder, reading the sample log as `eval score` did
    assert main(["report", str(run), "--html"]) == 0


def test_lmms_eval_sample_log_of_another_task_is_an_error_naming_the_line(tmp_path):
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"doc_id": 0, "filtered_resps": "A", "acc": 1.0}) + "\n")
    with pytest.raises(ValueError, match=r"s\.jsonl: line 1: no metric entry holding the pass"):
        read_samples(samples)


def test_export_refuses_an_unknown_harness(data, tmp_path):
    root, _ = data
    code = main(["export", "--harness", "opencompass", "--data", str(root / "items.jsonl"), "--output",
                 str(tmp_path / "x")])  # fmt: skip
    assert code != 0
    assert not (tmp_path / "x").exists()
