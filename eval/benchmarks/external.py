"""`cavpref eval score --benchmark aura|mmar|traceav`: score answers produced by any other tool.

Prediction files (JSON list or JSONL), one row per item, matched to the released data:

- AURA: the released evaluator's input — the AURA records with ``<model_key>_answer`` and
  ``<model_key>_reason`` (``--model_key``), matched by (category, video_id, question); or rows
  ``{"id", "answer", "reasoning"}`` / ``{"id", "response"}`` (free text, split like a model response).
- MMAR: the released evaluator's input — MMAR records (or just ``id``) with ``answer_prediction`` and
  ``thinking_prediction`` (``model_prediction``, the key of MMAR's first evaluator, is read like
  ``answer_prediction``); or ``{"id", "response"}``.
- TraceAV-Bench: ``{"id"}`` or ``{"task_type", "question_id"}`` with ``"response"`` (free text, parsed
  like a model's) or ``"prediction"`` (letters: "A,C" or ["A", "C"]).

The scoring, judges, metrics and reports are the ones a model run uses; items without a prediction are
reported as skipped ("no prediction"), rows that match no item are counted as unused.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from cavpref.eval.benchmarks import aura
from cavpref.eval.benchmarks.common import BenchmarkInputError, read_records, split_response
from cavpref.eval.benchmarks.pipeline import BenchArgs, assemble, build_benchmark, build_judge_client, load
from cavpref.eval.metrics import ItemOutcome
from cavpref.eval.runner import Job


def _key(args: BenchArgs, path, where, row: dict) -> str:
    if "id" in row:
        return str(row["id"])
    if args.benchmark == "aura" and {"question", "video_id", "category"} <= set(row):
        task = aura.task_code(str(row["category"]))
        if task is not None:
            return aura.item_id(task, str(row["video_id"]), str(row["question"]))
    if args.benchmark == "traceav" and {"task_type", "question_id"} <= set(row):
        return f"traceav/{row['task_type']}/{row['question_id']}"
    raise BenchmarkInputError(path, where, "id", "missing (no field identifies the item)")


def _answer(args: BenchArgs, path, where, row: dict) -> tuple[str, str]:
    """(answer, reasoning) of a row; TraceAV: (response text, "")."""
    key = args.model_key
    if args.benchmark == "aura" and key and f"{key}_answer" in row:
        return str(row[f"{key}_answer"] or ""), str(row.get(f"{key}_reason") or "")
    if args.benchmark == "mmar":
        for name in ("answer_prediction", "model_prediction"):  # current release; MMAR's first evaluator
            if name in row:
                return str(row[name] or ""), str(row.get("thinking_prediction") or "")
    if args.benchmark == "aura" and "answer" in row and "reasoning" in row:
        return str(row["answer"] or ""), str(row["reasoning"] or "")
    if args.benchmark == "traceav" and "prediction" in row:
        pred = row["prediction"]
        return (",".join(map(str, pred)) if isinstance(pred, list) else str(pred or "")), ""
    if "response" in row:
        return (str(row["response"] or ""), "") if args.benchmark == "traceav" else split_response(row["response"])
    wanted = {"aura": f"'{key}_answer'" if key else "'response' or 'answer'+'reasoning' (or --model_key)",
              "mmar": "'answer_prediction' (or 'model_prediction') or 'response'",
              "traceav": "'response' or 'prediction'"}[args.benchmark]
    raise BenchmarkInputError(path, where, None, f"no prediction field: expected {wanted}")


def read_predictions(args: BenchArgs, path: str | Path) -> dict[str, tuple[str, str]]:
    preds: dict[str, tuple[str, str]] = {}
    for where, row in read_records(path):
        key = _key(args, path, where, row)
        if key in preds:
            raise BenchmarkInputError(path, where, "id", f"duplicate prediction for item {key!r}")
        preds[key] = _answer(args, path, where, row)
    return preds


def score_predictions(args: BenchArgs, predictions: str | Path, *, client=None, nli=None) -> dict[str, Any]:
    """Results (and, with --output, the run folder's results.json / report.md / plots) for the predictions."""
    from cavpref.eval.benchmarks.aura_judge import score as aura_score
    from cavpref.eval.benchmarks.mmar_judge import score as mmar_score

    items, media_root = load(args)
    preds = read_predictions(args, predictions)
    client = client if client is not None else build_judge_client(args)
    bench = build_benchmark(args, client, nli)
    given = [i for i in items if i.id in preds]
    answers = [preds[i.id][0] for i in given]
    reasonings = [preds[i.id][1] for i in given]
    if args.benchmark == "aura":
        recs = aura_score(given, answers, reasonings, bench.judges)
    elif args.benchmark == "mmar":
        recs = mmar_score(given, answers, reasonings, bench.judge)
    else:
        recs = bench.score([Job(i, 0, bench.request(i, 0), i.id, output=a) for i, a in zip(given, answers)])
    records = {i.id: {"item_id": i.id, **r} for i, r in zip(given, recs)}
    outcomes = [bench.outcome(i, [records[i.id]]) if i.id in records else
                ItemOutcome(i.id, i.task, i.setting, i.source, i.category, status="skipped", reason="no prediction")
                for i in items]
    ids = {i.id for i in items}
    unused = Counter("matches no selected item" for k in preds if k not in ids)
    results = assemble(args, bench, items, media_root, outcomes, records, {"predictions": str(predictions)},
                       {"predictions": {"rows": len(preds), "unused": dict(unused)}})
    results["mode"] = "external predictions"
    if args.output:
        from cavpref.eval.report import write_reports

        Path(args.output).mkdir(parents=True, exist_ok=True)
        write_reports(results, args.output)
    return results
