"""AURA and TraceAV sets (the layout ``cavpref build aura|traceav`` writes: the released records beside their
videos) through ``cavpref eval export --harness lmms_eval|vlmevalkit``, their recorded replies scored back.

Both benchmarks go through the generic ``Benchmark`` interface (one pass per item, no CircularEval): the
export's prompt is the benchmark's own, and a harness's answer file scored with ``eval score --harness`` must
give the metrics and counts of ``cavpref eval score`` on the same replies as cavpref predictions."""

import csv
import json

import numpy as np
import pytest

from cavpref.eval.cli import main
from cavpref.eval.harness.lmms_eval import TaskFolder
from cavpref.media.write import write_mp4

AURA = [  # AURA's released records (what `cavpref build aura` writes), one per task family
    {"question": "Why is the panel secured?", "options": {"A": "Decoration", "B": "To keep it taut",
     "C": "Repair", "D": "Demo"}, "correct_answer_key": "B", "gold_reasoning": "The speaker says so.",
     "video_id": "v1", "category": "causal_reasoning"},
    {"question": "What does the speaker say about history?", "options": {"A": "Origins", "B": "Rules",
     "C": "Nothing: never mentioned", "D": "Future"}, "correct_answer_key": "C",
     "gold_reasoning": "Never discussed.", "video_id": "v2", "category": "unanswerability"},
    {"question": "Is the audio in sync?", "options": {"A": "Yes", "B": "Ahead", "C": "Behind", "D": "No"},
     "correct_answer_key": "D", "gold_reasoning": "The hits precede the strikes.", "video_id": "v1",
     "category": "tempo_av_sync_analysis", "sync_status": "Misaligned"},
]  # fmt: skip
AURA_REPLIES = ["Answer: B\nReasoning: he says it.", "Answer: A\nReasoning: origins.", "no idea"]


def _trace(qid, video, correct, qtype="single"):
    hops = [
        {"event_id": m, "evidence": "e", "label": "visual", "reason": "r", "timestamp_minute": m,
         "event_time_range": {"start_minute": m, "end_minute": m + 1}}
        for m in (1, 3)
    ]  # fmt: skip
    return {
        "question_id": qid,
        "video_id": video,
        "question": f"Question {qid}?",
        "options": {"A": "alpha", "B": "beta", "C": "gamma", "D": "delta"},
        "question_type": qtype,
        "correct_options": correct,
        "answer_text": "x",
        "minute_hop_count": 2,
        "hop_length_label": "short",
        "trajectory_with_timestamps": hops,
        "difficulty": "easy",
    }


TRACE = {
    "av_information_retrieval": [_trace(1, "video1", ["A"]), _trace(2, "video2", ["C"])],
    "mh_temporal_splicing_fallacy": [_trace(1, "video1", ["A", "D"], "multiple")],
}
TRACE_REPLIES = {"Question 1?": "A", "Question 2?": "I am not sure."}  # right, abstained; the multi: "A, D"


def _mp4(path):
    t = np.arange(16000, dtype=np.float32) / 16000
    write_mp4(path, np.full((4, 32, 32, 3), 60, np.uint8), 4.0, 0.2 * np.sin(2 * np.pi * 330 * t), 16000)


@pytest.fixture(scope="module")
def aura_set(tmp_path_factory):
    root = tmp_path_factory.mktemp("aura_set")
    for v in ("v1", "v2"):
        _mp4(root / f"{v}.mp4")
    (root / "aura.jsonl").write_text("".join(json.dumps(r) + "\n" for r in AURA))
    return "aura", ["--data", str(root / "aura.jsonl"), "--no_judge"]


@pytest.fixture(scope="module")
def traceav_set(tmp_path_factory):
    root = tmp_path_factory.mktemp("traceav_set")
    for v in ("video1", "video2"):
        _mp4(root / f"{v}.mp4")
    for task, items in TRACE.items():
        (root / f"{task}.json").write_text(
            json.dumps({"task_type": task, "video_count": 2, "question_count": len(items), "items": items})
        )
    return "traceav", ["--data", str(root), "--media_root", str(root)]


def _reply(bench, question, prompt):
    """The recorded model's reply to a pass."""
    if bench == "traceav" and "comma-separated" in prompt:
        return "A, D"
    return {"aura": dict(zip([r["question"] for r in AURA], AURA_REPLIES)), "traceav": TRACE_REPLIES}[bench][
        question
    ]


def _cavpref_scores(bench, keys, passes, tmp_path):
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps(p) + "\n" for p in passes))
    out = tmp_path / "cavpref_scored"
    assert (
        main(["score", "--benchmark", bench, "--predictions", str(preds), *keys, "--output", str(out)]) == 0
    )
    return json.loads((out / "results.json").read_text())


def _harness_scores(bench, keys, harness, answers, tmp_path):
    out = tmp_path / f"{harness}_scored"
    argv = ["score", "--benchmark", bench, "--harness", harness, "--predictions", str(answers), *keys]
    assert main([*argv, "--output", str(out)]) == 0
    return json.loads((out / "results.json").read_text())


@pytest.mark.parametrize("which", ["aura_set", "traceav_set"])
def test_vlmevalkit_export_of_a_built_set_scores_as_cavpref_eval(which, request, tmp_path):
    bench, keys = request.getfixturevalue(which)
    out = tmp_path / "export"
    assert main(["export", "--harness", "vlmevalkit", "--benchmark", bench, *keys, "--output", str(out)]) == 0
    tsv = out / f"{bench}_cavpref.tsv"  # one pass per item: no "circular" in the name
    with open(tsv, encoding="utf-8", newline="") as fh:
        table = list(csv.DictReader(fh, delimiter="\t"))
    assert len(table) == {"aura": 3, "traceav": 3}[bench]
    assert all(r["rotation"] == "0" and r["index"] == r["g_index"] for r in table)
    assert all(r["video_path"].endswith(".mp4") and r["audio_path"].endswith(".wav") for r in table)
    assert (out / "cavpref_vlmeval.py").is_file()
    pred = tmp_path / f"model_{bench}_cavpref.tsv"
    with open(pred, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, [*table[0], "prediction"], delimiter="\t")
        writer.writeheader()
        for row in table:
            writer.writerow({**row, "prediction": _reply(bench, row["question"], row["prompt"])})
    got = _harness_scores(bench, keys, "vlmevalkit", pred, tmp_path)
    passes = [
        {"id": r["id"], "rotation": 0, "response": _reply(bench, r["question"], r["prompt"])} for r in table
    ]
    want = _cavpref_scores(bench, keys, passes, tmp_path)
    assert got["metrics"] == want["metrics"] and got["counts"] == want["counts"]
    assert got["counts"]["evaluated"] == 3 and got["predictions"]["harness"] == "vlmevalkit"
    if bench == "aura":  # B right, A wrong (C), the silent reply unparsed: 1 of 3
        assert got["metrics"]["overall"]["ACC"] == pytest.approx(100 / 3)
    else:  # retrieval: 1 right, 1 abstained; the multi-answer question right as a set
        assert got["metrics"]["per_subtask"]["av_information_retrieval"]["abstained"] == 1
        assert got["metrics"]["mh_avg"]["acc"] == 100.0


@pytest.mark.parametrize("which", ["aura_set", "traceav_set"])
def test_lmms_eval_export_of_a_built_set_scores_as_cavpref_eval(which, request, tmp_path):
    bench, keys = request.getfixturevalue(which)
    out = tmp_path / "export"
    assert main(["export", "--harness", "lmms_eval", "--benchmark", bench, *keys, "--output", str(out)]) == 0
    docs = [json.loads(line) for line in (out / f"{bench}_cavpref.yaml").with_name("docs.jsonl").open()]
    assert len(docs) == 3 and all(d["video"].endswith(".mp4") for d in docs)
    task = TaskFolder(out)
    log, values = [], []
    for doc_id, doc in enumerate(docs):  # what lmms-eval does per doc, and its --log_samples line
        assert task.doc_to_text(doc) == doc["prompt"] and task.doc_to_visual(doc) == [doc["video"]]
        reply = _reply(bench, doc["question"], doc["prompt"])
        metrics = task.process_results(doc, [reply])
        values.append(metrics)
        log.append({"doc_id": doc_id, "target": doc["answer"], "filtered_resps": [reply], **metrics})
    samples = tmp_path / f"20260101_samples_{bench}_cavpref.jsonl"
    samples.write_text("".join(json.dumps(s) + "\n" for s in log))
    got = _harness_scores(bench, keys, "lmms_eval", samples, tmp_path)
    passes = [
        {"id": d["id"], "rotation": 0, "response": _reply(bench, d["question"], d["prompt"])} for d in docs
    ]
    want = _cavpref_scores(bench, keys, passes, tmp_path)
    assert got["metrics"] == want["metrics"] and got["counts"] == want["counts"]
    # the task's own aggregation: the benchmark's headline number, as `eval score` gives it
    name = {"aura": "ACC", "traceav": "overall_acc"}[bench]
    metric = next(iter(values[0]))
    assert task.aggregate(name, [v[metric] for v in values]) == pytest.approx(
        want["metrics"]["overall"]["ACC"] if bench == "aura" else want["metrics"]["overall"]["acc"]
    )
