"""`cavpref eval score --benchmark aura|mmar|traceav`: score answers produced by any other tool.

Prediction files (JSON list or JSONL), one row per item, matched to the released data; each benchmark's
class (``cavpref.eval.tasks``) reads its format (``prediction_key`` / ``prediction``):

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

from cavpref.eval import registry
from cavpref.eval.benchmarks.common import BenchmarkInputError, read_records
from cavpref.eval.benchmarks.pipeline import BenchArgs, assemble, build_benchmark, build_judge_client, load
from cavpref.eval.metrics import ItemOutcome


def _key(spec, path, where, row: dict) -> str:
    if "id" in row:
        return str(row["id"])
    key = spec.prediction_key(row)
    if key is None:
        raise BenchmarkInputError(path, where, "id", "missing (no field identifies the item)")
    return key


def _answer(spec, args: BenchArgs, path, where, row: dict) -> tuple[str, str]:
    """(answer, reasoning) of a row, as the benchmark's prediction format reads it."""
    found = spec.prediction(args, row)
    if found is None:
        raise BenchmarkInputError(
            path, where, None, f"no prediction field: expected {spec.prediction_format}"
        )
    return found


def read_predictions(args: BenchArgs, path: str | Path) -> dict[str, tuple[str, str]]:
    spec = registry.get(args.benchmark)
    preds: dict[str, tuple[str, str]] = {}
    for where, row in read_records(path):
        key = _key(spec, path, where, row)
        if key in preds:
            raise BenchmarkInputError(path, where, "id", f"duplicate prediction for item {key!r}")
        preds[key] = _answer(spec, args, path, where, row)
    return preds


def score_predictions(args: BenchArgs, predictions: str | Path, *, client=None, nli=None) -> dict[str, Any]:
    """Results (and, with --output, the run folder's results.json / report.md / plots) for the predictions."""
    items, media_root = load(args)
    preds = read_predictions(args, predictions)
    client = client if client is not None else build_judge_client(args)
    bench = build_benchmark(args, client, nli)
    given = [i for i in items if i.id in preds]
    answers = [preds[i.id][0] for i in given]
    reasonings = [preds[i.id][1] for i in given]
    recs = registry.get(args.benchmark).score_answers(bench, given, answers, reasonings)
    records = {i.id: {"item_id": i.id, **r} for i, r in zip(given, recs)}
    outcomes = [
        bench.outcome(i, [records[i.id]])
        if i.id in records
        else ItemOutcome(
            i.id, i.task, i.setting, i.source, i.category, status="skipped", reason="no prediction"
        )
        for i in items
    ]
    ids = {i.id for i in items}
    unused = Counter("matches no selected item" for k in preds if k not in ids)
    results = assemble(
        args,
        bench,
        items,
        media_root,
        outcomes,
        records,
        {"predictions": str(predictions)},
        {"predictions": {"rows": len(preds), "unused": dict(unused)}},
    )
    results["mode"] = "external predictions"
    if args.output:
        registry.write_reports(results, args.output)
    return results
