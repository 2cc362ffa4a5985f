"""`cavpref eval <benchmark>` end to end, for every benchmark: data -> items -> runner -> results.json,
report.md, plots.

One pipeline and one arguments class (``eval.args.EvalArgs``) for all benchmarks; what differs is the
benchmark's class (``eval.registry``) and its ``Options``. ``evaluate`` is the Python entry (tests and
notebooks pass a ready backend or judge client); ``score_predictions`` scores answers produced by any
other tool in the benchmark's predictions format; ``export_prompts`` writes the exact prompts to answer.
The stream ablations (``--drop_stream``, ``--text_only``) are applied here to every benchmark's items
(``eval.ablation``), before the runner sees them, so they enter the record keys like any other input.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from collections import Counter, defaultdict
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from transformers.utils import logging

from cavpref.eval import registry
from cavpref.eval.ablation import ablate
from cavpref.eval.args import EvalArgs
from cavpref.eval.common import BenchmarkInputError, DataError, read_records
from cavpref.eval.metrics import ItemOutcome, counts
from cavpref.eval.runner import Job, RunConfig, Runner

logger = logging.get_logger(__name__)


def load(args: EvalArgs, options=None, *, bench: registry.Benchmark | None = None) -> registry.Loaded:
    """The run's items: the benchmark's reader (its ``--tasks`` / ``--limit`` selection), then the stream
    ablations. No item selected is an error (an empty run would write an empty report and exit 0)."""
    bench = bench if bench is not None else registry.create(args, options)
    loaded = bench.read()
    if not loaded.items:
        why = f" (--tasks {' '.join(args.tasks)})" if args.tasks else " (the file holds none)"
        raise DataError(f"{args.data}: no {bench.name} items selected{why}")
    given = loaded.loading.get("input", {})  # a benchmark's own input changes (TraceAV's hop masking)
    loaded.loading["input"] = {
        **given,
        **ablate(loaded.items, drop_stream=args.drop_stream, text_only=args.text_only),
    }
    return loaded


def build_judge_client(args: EvalArgs):
    """The LLM judge's client, or None (no judge configured, ``--no_judge``, or a benchmark without one)."""
    configured = args.judge_model or os.environ.get("CAVPREF_JUDGE_MODEL")
    if not registry.get(args.benchmark).uses_judge or args.no_judge or not configured:
        return None
    from cavpref.chat_client import ChatClient, ChatConfig

    cache = args.judge_cache or (str(Path(args.output) / "judge_cache.sqlite") if args.output else None)
    return ChatClient(
        ChatConfig(
            base_url=args.judge_base_url,
            model=args.judge_model,
            api_key_env=args.judge_api_key_env,
            cache_path=cache,
            max_concurrency=args.judge_concurrency,
            max_retries=args.judge_max_retries,
            timeout_s=args.judge_timeout_s,
            max_reply_bytes=args.max_reply_bytes,
        )
    )


def build_backend(args: EvalArgs):
    """An endpoint backend for http(s) models, else the checkpoint's adapter on this process's device."""
    from cavpref.eval.backends import EndpointBackend, ModelIOBackend

    if not args.model:
        raise ValueError("--model is required")
    if args.model.startswith(("http://", "https://")):
        from cavpref.chat_client import ChatClient, ChatConfig

        client = ChatClient(
            ChatConfig(
                base_url=args.model,
                model=args.endpoint_model,
                env_prefix="CAVPREF_ENDPOINT",
                api_key_env=args.endpoint_api_key_env,
                max_tokens=args.max_new_tokens,
                max_concurrency=args.endpoint_concurrency,
                timeout_s=args.endpoint_timeout_s,
                max_retries=args.endpoint_max_retries,
                max_reply_bytes=args.max_reply_bytes,
            )
        )
        return EndpointBackend(client, media_format=args.media_format, max_tokens=args.max_new_tokens)
    from cavpref.eval.runner import dist_state
    from cavpref.models import load_model_io

    # a chunk's media are featurised once for all their CircularEval passes (exact: cavpref.models.feature_cache)
    model_io = load_model_io(
        args.model,
        model_io=args.model_io,
        dtype=args.dtype,
        audio_max_seconds=args.audio_max_seconds,
        feature_cache_size=args.chunk_size,
    )
    model_io.model.to(dist_state().device).eval()
    return ModelIOBackend(model_io, generation={"max_new_tokens": args.max_new_tokens, "do_sample": False})


def versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("cavpref", "torch", "transformers", "accelerate", "datasets", "httpx"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def evaluate(
    args: EvalArgs,
    options=None,
    *,
    backend=None,
    client=None,
    nli=None,
    rank: int | None = None,
    world: int | None = None,
) -> dict | None:
    """Run (or resume) ``args.benchmark``; the results dict on the main process, None elsewhere.
    ``options``: the benchmark's ``Options`` (or a dict of its keys); ``client``: the judge's
    ``ChatClient`` (default: from the judge keys)."""
    if not (args.data and args.output):
        raise ValueError("--data and --output are required")
    client = client if client is not None else build_judge_client(args)
    bench = registry.create(args, options, client=client, nli=nli)
    loaded = load(args, bench=bench)
    bench.backend = backend if backend is not None else build_backend(args)
    runner = runner_for(args, bench, loaded, rank=rank, world=world)
    stats = runner.run(loaded.items)
    log = {"rank": runner.rank, **stats, "judge_calls": None if client is None else client.stats}
    Path(args.output, f"run_log.rank{runner.rank}.json").write_text(json.dumps(log, indent=1) + "\n")
    if not runner.is_main:
        return None
    outcomes, used = runner.collect(loaded.items)
    results = assemble(args, bench, loaded, outcomes, used, bench.backend.describe())
    results["missing_streams"] = missing_stream_counts(loaded.items, used)
    registry.write_reports(results, args.output)
    write_html(args, bench, loaded, outcomes, used, results)
    return nothing_evaluated_is_an_error(results, args.output)


def runner_for(args: EvalArgs, bench, loaded: registry.Loaded, *, rank=None, world=None) -> Runner:
    """The run's runner on ``bench.backend`` (its record keys: the backend's fingerprint, the run's keys)."""
    return Runner(
        bench,
        bench.backend,
        RunConfig(
            args.output,
            loaded.media_root,
            args.mode,
            args.batch_size,
            args.chunk_size,
            bench.frame_policy(),
            args.sample_rate,
            missing_stream=args.missing_stream,
        ),
        rank=rank,
        world=world,
    )


def write_html(args: EvalArgs, bench, loaded: registry.Loaded, outcomes, records: list[dict], results: dict):
    """report.html beside report.md (``eval.html_report``), unless ``--no_html``."""
    if args.no_html:
        return None
    from cavpref.eval.html_report.write import RunView, by_item, write_run

    view = RunView(results, bench, loaded.items, by_item(records), outcomes, loaded.media_root, args)
    return write_run(view, args.output, args)


class NothingEvaluated(DataError):
    """Every selected item failed (skipped or incomplete): results.json and report.md are written, but a
    run with no score is an error, not an empty table and exit 0."""


def nothing_evaluated_is_an_error(results: dict, where: str, *, report: bool = True) -> dict:
    """``results`` unchanged when at least one item was evaluated; else ``NothingEvaluated`` naming the
    run folder (or predictions file), the counts and the commonest skip reasons."""
    c = results["counts"]
    if c["evaluated"]:
        return results
    reasons = sorted(c["skip_reasons"].items(), key=lambda kv: -kv[1])
    why = "; ".join(f"{n}× {reason}" for reason, n in reasons[:3]) or "no reason recorded"
    raise NothingEvaluated(
        f"{where}: none of the {c['items']} items was evaluated ({c['skipped']} skipped, "
        f"{c['incomplete']} incomplete: {why})" + ("; report.md there lists them" if report else "")
    )


def assemble(
    args: EvalArgs, bench, loaded: registry.Loaded, outcomes, records: list[dict], model: dict
) -> dict[str, Any]:
    """results.json (before the benchmark's ``metrics`` and the run's extras): the same keys for every
    benchmark (docs/evaluation.md, "Run folder")."""
    evaluated = {o.item_id for o in outcomes if o.status == "evaluated"}
    by_item: dict[str, list[dict]] = defaultdict(list)
    for rec in records:
        by_item[rec["item_id"]].append(rec)
    scored = [(i, by_item[i.id]) for i in loaded.items if i.id in evaluated]
    described = {**bench.describe(), "input": loaded.loading["input"]}
    return {
        "benchmark": bench.name,
        "protocol": args.protocol,
        "label": args.label,
        "mode": args.mode,
        "config": {**args.public(), **_public(bench.opt)},
        # what config's relative paths (data, media_root) are relative to: a run re-read from another working
        # folder (`eval report`, `eval compare`, run from the quickstart's report folder) finds its data there
        "working_dir": os.getcwd(),
        "model": model,
        "evaluation": described,
        "judge": described.get("judge"),
        "versions": versions(),
        "loading": loaded.loading,
        "counts": counts(outcomes),
        "items": item_set(loaded.items, evaluated),
        "metrics": bench.metrics(scored, outcomes),
        "paired": bench.paired(loaded.items, outcomes),
        **bench.extra_results(scored, outcomes),
    }


def item_set(items, evaluated: set[str]) -> dict[str, Any]:
    """Which items a run selected and evaluated (counts and sha256 of the sorted ids): ``eval compare``
    refuses to subtract runs over different items (a full run against a ``--limit 1`` run)."""

    def digest(ids) -> str:
        return hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()

    ids = [i.id for i in items]
    return {
        "selected": len(ids),
        "selected_sha256": digest(ids),
        "evaluated": len(evaluated),
        "evaluated_sha256": digest(evaluated),
    }


def _public(options) -> dict[str, Any]:
    from cavpref.redact import public_config

    return public_config(asdict(options)) if is_dataclass(options) else {}


def missing_stream_counts(items, records: list[dict]) -> dict[str, dict[str, int]]:
    """task -> stream -> items evaluated without a stream their spec keeps (the file lacks it)."""
    task_of = {i.id: i.task for i in items}
    seen: dict[str, list[str]] = {}
    for rec in records:
        if rec.get("missing_streams"):
            seen[rec["item_id"]] = rec["missing_streams"]
    found: dict[str, Counter] = defaultdict(Counter)
    for item_id, streams in seen.items():
        for stream in streams:
            found[task_of[item_id]][stream] += 1
    if found:
        logger.warning(
            "evaluated with a missing stream (the file lacks it): "
            + ", ".join(f"{t}: {dict(c)}" for t, c in sorted(found.items()))
            + " (--missing_stream error refuses)"
        )
    return {t: dict(sorted(c.items())) for t, c in sorted(found.items())}


# ------------------------------------------------------------------------------------------ external predictions


def export_prompts(args: EvalArgs, path: str | Path, options=None) -> int:
    """Every pass a model must answer (AVTrustBench: all rotations when circular) as JSONL; the row count."""
    bench = registry.create(args, options)
    loaded = load(args, bench=bench)
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for item in loaded.items:
            for k in range(bench.n_passes(item)):
                req = bench.request(item, k)
                row = {
                    "id": item.id,
                    "rotation": k,
                    "task": item.task,
                    "setting": item.setting,
                    "prompt": req.prompt,
                    "options": req.info.get("options", item.options),
                    "media": item.media,
                    "media_root": loaded.media_root,
                }
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                n += 1
    return n


def read_predictions(bench, path: str | Path, rows=None) -> dict[tuple[str, int], dict]:
    """(item id, pass) -> predictions row, read as the benchmark's format says; errors name the file, the
    row and the problem. ``rows``: ``(where, row)`` pairs already read from ``path`` (another harness's
    file, converted by ``eval.harness``), instead of reading it as JSON."""
    preds: dict[tuple[str, int], dict] = {}
    for where, row in read_records(path) if rows is None else rows:
        try:
            key = bench.prediction_key(row)
        except ValueError as err:
            raise BenchmarkInputError(path, where, None, str(err)) from None
        if key is None:
            raise BenchmarkInputError(path, where, "id", "missing (no field identifies the item)")
        if not bench.answered(row):
            raise BenchmarkInputError(
                path, where, None, f"no prediction field: expected {bench.prediction_format}"
            )
        if key in preds:
            raise BenchmarkInputError(
                path, where, "id", f"duplicate prediction for item {key[0]!r} pass {key[1]}"
            )
        preds[key] = row
    return preds


def score_external(
    bench, loaded: registry.Loaded, predictions: str | Path, rows=None
) -> tuple[list[ItemOutcome], list[dict], dict]:
    """(outcomes, records, results.json ``predictions``: rows read, rows unused by reason) of an external
    tool's answers, scored with the benchmark's own scoring; kept in memory (nothing is written).
    ``rows``: as in ``read_predictions``."""
    preds = read_predictions(bench, predictions, rows)
    history: dict[str, list[dict]] = defaultdict(list)
    missing: set[str] = set()
    active = list(loaded.items)
    while active:
        jobs, rows = [], []
        for item in active:
            k = bench.next_pass(item, history[item.id])
            if k is None:
                continue
            row = preds.get((item.id, k))
            if row is None:
                missing.add(item.id)
                continue
            jobs.append(Job(item, k, bench.request(item, k), f"{item.id}/{k}", output=bench.prediction(row)))
            rows.append(row)
        for job, rec in zip(jobs, bench.score_predictions(jobs, rows) if jobs else []):
            history[job.item.id].append(
                {"item_id": job.item.id, "pass": job.k, "response": job.output, **rec}
            )
        active = [j.item for j in jobs]
    outcomes = [
        bench.outcome(item, history[item.id])
        if item.id not in missing
        else ItemOutcome(
            item.id,
            item.task,
            item.setting,
            item.source,
            item.category,
            status="skipped",
            reason="no prediction",
        )
        for item in loaded.items
    ]
    known = {(i.id, k) for i in loaded.items for k in range(bench.n_passes(i))}
    used = {(i, r["pass"]) for i, recs in history.items() for r in recs}
    unused = Counter(
        "not among the selected items" if key not in known else "not needed (decided earlier)"
        for key in preds
        if key not in used
    )
    records = [r for recs in history.values() for r in recs]
    return outcomes, records, {"rows": len(preds), "unused": dict(sorted(unused.items()))}


def score_predictions(
    args: EvalArgs, predictions: str | Path, options=None, *, client=None, nli=None, rows=None, harness=None
) -> dict:
    """Score an external tool's answers with the benchmark's own scoring (extraction, judges, passes,
    metrics, reports); with ``args.output``, the run folder's results.json / report.md / plots and
    report.html too. ``rows`` / ``harness``: the predictions as read from another harness's file
    (``eval.harness``) and its name (results.json ``predictions.harness``)."""
    client = client if client is not None else build_judge_client(args)
    bench = registry.create(args, options, client=client, nli=nli)
    loaded = load(args, bench=bench)
    outcomes, records, read = score_external(bench, loaded, predictions, rows)
    if harness is not None:
        read["harness"] = harness
    results = assemble(args, bench, loaded, outcomes, records, {"predictions": str(predictions)})
    results["mode"] = "external predictions"
    results["predictions"] = read
    if args.output:
        registry.write_reports(results, args.output)
        write_html(args, bench, loaded, outcomes, records, results)
    return nothing_evaluated_is_an_error(results, args.output or str(predictions), report=bool(args.output))
