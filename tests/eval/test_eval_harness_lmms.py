"""The exported AVTrustBench task inside lmms-eval itself: its TaskManager indexes the folder, its
ConfigurableTask loads the docs, runs the task's ``process_results`` on a recorded reply and aggregates with
the task's metrics — to the numbers ``cavpref eval score`` gives on the same replies.

lmms-eval is the optional extra ``.[lmms_eval]`` (its full install pulls wandb, spacy, …): this file is
outside the default suite (``-m slow``) and skips when lmms_eval is not importable. What its loader needs
is smaller: ``pip install --no-deps lmms-eval==0.7.3 && pip install loguru pytz tenacity evaluate sacrebleu
portalocker tabulate lxml`` (docs/evaluation.md, "In lmms-eval and VLMEvalKit").
"""

import json

import numpy as np
import pytest

from cavpref.data import BenchmarkItem
from cavpref.eval.args import EvalArgs
from cavpref.eval.circular import rotate
from cavpref.eval.cli import main
from cavpref.eval.pipeline import score_predictions
from cavpref.media.spec import clip, mute, to_json
from cavpref.media.write import write_mp4

pytestmark = pytest.mark.slow


def _items():
    src = clip("clip.mp4")
    out = []
    for setting in ("base", "instruction"):
        for record, answer in (("r1", "A"), ("r2", "B")):
            options = {"A": "piano", "B": "violin", "C": "drum"}
            if setting == "instruction":
                options["D"] = "None of the above"
            for task, media in (("CLEAN", src), ("MAT", mute(src))):
                abstain = "D" if setting == "instruction" else None
                out.append(
                    BenchmarkItem(
                        id=f"{task}:{setting}:{record}",
                        task=task,
                        source="music_avqa",
                        category="Counting",
                        question=f"What plays in {record}?",
                        options=options,
                        answer=answer if task == "CLEAN" else abstain,
                        setting=setting,
                        template_id=0,
                        media=to_json(media),
                        abstain_letter=abstain,
                        meta={"record": record},
                    )
                )
    return out


def _reply(item, k):
    """Right everywhere but CLEAN r2's last rotation; MAT abstains in words."""
    options, new_of = rotate(item.options, k)
    if item.task == "CLEAN" and item.meta["record"] == "r2" and k == len(options) - 1:
        return f"The answer is {next(x for x in options if x != new_of[item.answer])}."
    if item.answer is None:
        return "The audio is missing."
    return f"Answer: {new_of[item.answer]}"


def test_lmms_eval_loads_the_exported_task_and_scores_a_recorded_reply_as_cavpref(
    tmp_path, monkeypatch, capsys
):
    pytest.importorskip("lmms_eval")
    from lmms_eval.tasks import TaskManager

    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf_datasets"))  # the JSON docs' Arrow cache
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    t = np.arange(16000, dtype=np.float32) / 16000
    write_mp4(tmp_path / "clip.mp4", np.full((4, 32, 32, 3), 80, np.uint8), 4.0, 0.3 * np.sin(880 * t), 16000)
    items = _items()
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(i.to_row()) + "\n" for i in items))
    out = tmp_path / "task"
    tasks = ["--tasks", "CLEAN", "MAT"]
    assert main(["export", "--harness", "lmms_eval", "--data", str(data), "--output", str(out), *tasks]) == 0
    # the export's own check: lmms-eval's TaskManager, from the CLI
    again = ["--overwrite_output_dir", "--check"]
    assert (
        main(["export", "--harness", "lmms_eval", "--data", str(data), "--output", str(out), *tasks, *again])
        == 0
    )
    assert "TaskManager loaded avtrustbench_cavpref: 28 docs" in capsys.readouterr().out

    manager = TaskManager(include_path=str(out), include_defaults=False)
    assert manager.all_tasks == ["avtrustbench_cavpref"]
    task = manager.load_task_or_group(["avtrustbench_cavpref"])["avtrustbench_cavpref"]
    docs = task.test_docs()
    assert len(docs) == sum(len(i.options) for i in items)  # every CircularEval rotation is a doc
    by_id = {i.id: i for i in items}
    values, preds = [], []
    for doc in docs:
        assert task.doc_to_visual(doc)[0].endswith(".mp4")
        reply = _reply(by_id[doc["id"]], doc["pass"])
        values.append(task.process_results(doc, [reply]))  # lmms-eval's own call, the task's hook
        preds.append({"id": doc["id"], "rotation": doc["pass"], "response": reply})
    got = {m: agg([v[m] for v in values]) for m, agg in task.aggregation().items()}
    assert task.higher_is_better()["trust_instruction_false_abstention"] is False

    path = tmp_path / "preds.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in preds))
    want = score_predictions(EvalArgs(data=str(data), tasks=["CLEAN", "MAT"]), path)["metrics"]
    assert got["circular"] == want["overall"]["circular"] == 75.0  # CLEAN r2 fails in both settings
    assert got["vanilla"] == want["overall"]["vanilla"] == 100.0
    for setting in ("base", "instruction"):
        trust = want["trust"]["settings"][setting]
        assert got[f"trust_{setting}_paired"] == trust["paired"]["circular"] == 50.0
        assert got[f"trust_{setting}_false_abstention"] == trust["false_abstention"] == 0.0
