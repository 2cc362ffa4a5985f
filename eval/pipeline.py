"""AVTrustBench end to end: arguments -> items -> runner -> results.json / report.md / plots.

``EvalArgs`` is the one config of ``cavpref eval avtrustbench`` (every field is a ``--flag`` and a YAML
key). ``evaluate`` is the Python entry (tests and notebooks pass a ready backend); ``score_predictions``
scores answers produced by any external tool; ``export_prompts`` writes the exact prompts to answer.
"""

from __future__ import annotations

import json
import os
import platform
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cavpref.eval.args import JudgeArguments, EvalModelArguments
from cavpref.eval.avtrustbench import AVTrustBench, AVTrustBenchOptions
from cavpref.eval.extract import ABSTAIN, Extraction, is_correct
from cavpref.eval.loader import DataError, LoadResult, load_items
from cavpref.eval.metrics import ItemOutcome, summarize
from cavpref.eval.option_score import OPTION_SCORES, check_option_score
from cavpref.eval.registry import write_reports
from cavpref.eval.runner import Job, RunConfig, Runner
from cavpref.eval.trust import references, trust_summary
from transformers.utils import logging

from cavpref import task_registry
from cavpref.data import CLEAN_TASK, TASKS
from cavpref.media.args import MediaArguments
from cavpref.media.spec import drop_video, mute, to_json

logger = logging.get_logger(__name__)


@dataclass
class EvalArgs(EvalModelArguments, MediaArguments, JudgeArguments):
    """Every field is a ``--flag`` and a YAML key of ``cavpref eval avtrustbench | score | prompts``."""

    data: str = field(default="", metadata={"help": "prep output folder, datasets folder, or JSONL of items"})
    output: str = field(default="", metadata={"help": "run folder (records, results.json, report.md, plots)"})
    tasks: list[str] = field(
        default_factory=lambda: list(TASKS),
        metadata={
            "help": "AVTrustBench task codes; add CLEAN for the paired trust score and the false-abstention rate"
        },
    )
    setting: str | None = field(default=None, metadata={"help": "base | instruction (default: both)"})
    split: str = field(default="test", metadata={"help": "split of a prep output folder"})
    circular: bool = field(default=True, metadata={"help": "CircularEval (default); --vanilla for one pass"})
    vanilla: bool = field(default=False, metadata={"help": "one pass per item (no CircularEval)"})
    limit: int | None = field(
        default=None, metadata={"help": "first N items (by id) of each task and setting"}
    )
    mode: str = field(default="generate", metadata={"help": "generate (free-form + extraction) | likelihood"})
    option_score: str = field(
        default="sum",
        metadata={
            "help": "likelihood mode: how an option's log-likelihood is read for the headline — sum (summed over "
            "its tokens) | per_token (that sum over its token count) | letter (the answer letter alone); all "
            "three are recorded and reported (docs/evaluation.md)",
            "choices": list(OPTION_SCORES),
        },
    )
    label: str | None = field(default=None, metadata={"help": "name of this run in reports and `compare`"})
    batch_size: int = field(default=8, metadata={"help": "items per generation batch"})
    chunk_size: int = field(
        default=64, metadata={"help": "items decoded and scored per chunk (records flushed)"}
    )
    max_new_tokens: int = field(default=64, metadata={"help": "generation length"})
    post_prompt: str = field(default="", metadata={"help": "text appended to every prompt"})
    pin_abstain: bool = field(
        default=False, metadata={"help": "keep 'None of the above' fixed while rotating"}
    )
    skip_invalid: bool = field(
        default=False, metadata={"help": "skip (and count) bad rows instead of failing"}
    )
    media_root: str | None = field(default=None, metadata={"help": "default: the prep manifest's data_root"})
    sample_rate: int = field(default=16000, metadata={"help": "audio sample rate fed to the model"})
    missing_stream: str = field(
        default="allow",
        metadata={
            "help": "a stream an item keeps but its file lacks (no audio track): allow (evaluate without it, counted "
            "per task in results.json) | error"
        },
    )
    drop_stream: str | None = field(
        default=None,
        metadata={
            "help": "ablation: remove the video or the audio from every item (does the model use that stream?)"
        },
    )

    def __post_init__(self):
        MediaArguments.__post_init__(self)
        if self.vanilla:
            self.circular = False
        unknown = sorted(set(self.tasks) - set(task_registry.task_names()))
        if unknown:
            raise ValueError(
                f"--tasks: unknown task(s) {unknown}; choose from {list(task_registry.task_names())}"
            )
        if self.setting not in (None, "base", "instruction"):
            raise ValueError(f"--setting must be base or instruction, got {self.setting!r}")
        if self.mode not in ("generate", "likelihood"):
            raise ValueError(f"--mode must be generate or likelihood, got {self.mode!r}")
        check_option_score(self.option_score)
        if self.drop_stream not in (None, "video", "audio"):
            raise ValueError(f"--drop_stream must be video or audio, got {self.drop_stream!r}")

    def public(self) -> dict[str, Any]:
        from cavpref.redact import public_config

        # env-variable *names* only, never keys; URLs lose their user info and secret query parameters
        return public_config(asdict(self))


def load(args: EvalArgs) -> LoadResult:
    def keep(item):
        return (
            item.benchmark == AVTrustBench.name
            and item.task in args.tasks
            and args.setting in (None, item.setting)
        )

    loaded = load_items(
        args.data,
        split=args.split,
        keep=keep,
        limit=args.limit,
        skip_invalid=args.skip_invalid,
        media_root=args.media_root,
    )
    if not loaded.items:  # an empty run would write an empty report and exit 0
        raise DataError(
            f"{args.data}: no items selected (--tasks {' '.join(args.tasks)}, --setting "
            f"{args.setting or 'base+instruction'}, --split {args.split}): {loaded.filtered} row(s) "
            f"outside the selection, {sum(loaded.skipped.values())} invalid row(s) skipped"
        )
    if args.drop_stream:
        strip = drop_video if args.drop_stream == "video" else mute
        for item in loaded.items:
            item.media = to_json(strip(item.spec))
    return loaded


def metrics(outcomes: list[ItemOutcome], items, *, circular: bool) -> dict:
    """results.json's ``metrics``: the accuracies, the paired trust score and abstention rates (``trust``),
    and the computed "always abstain" / "never abstain" rows on the same evaluated items (``references``)."""
    evaluated = {o.item_id for o in outcomes if o.status == "evaluated"}
    if not any(o.task == CLEAN_TASK for o in outcomes):
        logger.warning(
            "no CLEAN items evaluated: the paired trust score needs each perturbed item's clean twin "
            "(add CLEAN to --tasks)"
        )
    return {
        **summarize(outcomes, circular=circular),
        "trust": trust_summary(outcomes, circular=circular),
        "references": references([i for i in items if i.id in evaluated], circular=circular),
    }


def build_judge(args: EvalArgs):
    """The step-2 judge, or None when none is configured (or --no_judge)."""
    from cavpref.eval.choice_judge import ChoiceJudge
    from cavpref.eval.judge import ChatClient, ChatConfig

    if args.no_judge or not (args.judge_model or os.environ.get("CAVPREF_JUDGE_MODEL")):
        return None
    cache = args.judge_cache or str(Path(args.output) / "judge_cache.sqlite")
    return ChoiceJudge(
        ChatClient(
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
    )


def build_backend(args: EvalArgs):
    """An endpoint backend for http(s) models, else the checkpoint's adapter on this process's device."""
    from cavpref.eval.backends import EndpointBackend, ModelIOBackend

    if args.model.startswith(("http://", "https://")):
        from cavpref.eval.judge import ChatClient, ChatConfig

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


def _loading(loaded: LoadResult, args: EvalArgs) -> dict:
    present = {item.task for item in loaded.items}
    return {
        "files": loaded.files,
        "media_root": loaded.media_root,
        "invalid": dict(loaded.skipped),
        "filtered": loaded.filtered,
        "rows_read": len(loaded.items) + loaded.filtered + sum(loaded.skipped.values()),
        # a requested task the data has no items for (in this split / setting) is named, not silently absent
        "tasks_without_items": [t for t in args.tasks if t not in present],
    }


def evaluate(
    args: EvalArgs, *, backend=None, judge=None, rank: int | None = None, world: int | None = None
) -> dict | None:
    """Run (or resume) an evaluation; returns the results dict on the main process, None elsewhere."""
    if not args.output:
        raise ValueError("--output is required")
    loaded = load(args)
    backend = backend if backend is not None else build_backend(args)
    judge = judge if judge is not None else build_judge(args)
    bench = AVTrustBench(
        AVTrustBenchOptions(
            circular=args.circular,
            pin_abstain=args.pin_abstain,
            post_prompt=args.post_prompt,
            mode=args.mode,
            option_score=args.option_score,
        ),
        judge,
    )
    runner = Runner(
        bench,
        backend,
        RunConfig(
            args.output,
            loaded.media_root,
            args.mode,
            args.batch_size,
            args.chunk_size,
            args.frame_policy(),
            args.sample_rate,
            missing_stream=args.missing_stream,
        ),
        rank=rank,
        world=world,
    )
    stats = runner.run(loaded.items)
    log = {"rank": runner.rank, **stats, "judge_calls": judge.client.stats if judge else None}
    Path(args.output, f"run_log.rank{runner.rank}.json").write_text(json.dumps(log, indent=1) + "\n")
    if not runner.is_main:
        return None
    outcomes, used = runner.collect(loaded.items)
    results = {
        "benchmark": bench.name,
        "label": args.label,
        "mode": args.mode,
        "config": args.public(),
        "model": backend.describe(),
        "judge": bench.describe()["judge"],
        "evaluation": bench.describe(),
        "versions": versions(),
        "loading": _loading(loaded, args),
        "metrics": metrics(outcomes, loaded.items, circular=args.circular),
        "missing_streams": missing_stream_counts(loaded.items, used),
    }
    if args.mode == "likelihood":
        results["by_option_score"] = by_option_score(bench, loaded.items, outcomes, used, args.circular)
    write_reports(results, args.output)
    return results


def by_option_score(
    bench: AVTrustBench, items, outcomes: list[ItemOutcome], used: list[dict], circular: bool
):
    """``{protocol: summarize(...) + {"trust": ...}}``: the same passes read under each option-scoring protocol
    (``cavpref.eval.option_score``); skipped and incomplete items stay as they are."""
    records: dict[str, list[dict]] = defaultdict(list)
    for rec in sorted(used, key=lambda r: r["pass"]):
        records[rec["item_id"]].append(rec)
    by_id = {o.item_id: o for o in outcomes}
    out = {}
    for protocol in OPTION_SCORES:
        outs = [
            bench.outcome(item, records[item.id], protocol)
            if by_id[item.id].status == "evaluated"
            else by_id[item.id]
            for item in sorted(items, key=lambda i: i.id)
        ]
        out[protocol] = {
            **summarize(outs, circular=circular),
            "trust": trust_summary(outs, circular=circular),
        }
    return out


def missing_stream_counts(items, records: list[dict]) -> dict[str, dict[str, int]]:
    """task -> stream -> items evaluated without a stream their spec keeps (the file lacks it)."""
    task_of = {i.id: i.task for i in items}
    seen: dict[str, list[str]] = {}
    for rec in records:
        if rec.get("missing_streams"):
            seen[rec["item_id"]] = rec["missing_streams"]
    counts: dict[str, Counter] = defaultdict(Counter)
    for item_id, streams in seen.items():
        for stream in streams:
            counts[task_of[item_id]][stream] += 1
    if counts:
        logger.warning(
            "evaluated with a missing stream (the file lacks it): "
            + ", ".join(f"{t}: {dict(c)}" for t, c in sorted(counts.items()))
            + " (--missing_stream error refuses)"
        )
    return {t: dict(sorted(c.items())) for t, c in sorted(counts.items())}


# ------------------------------------------------------------------------------------------ external predictions


def export_prompts(args: EvalArgs, path: str | Path) -> int:
    """Write every pass a model must answer (all rotations when circular) as JSONL; returns the row count."""
    loaded = load(args)
    bench = AVTrustBench(
        AVTrustBenchOptions(
            circular=args.circular, pin_abstain=args.pin_abstain, post_prompt=args.post_prompt
        )
    )
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for item in loaded.items:
            for k in range(bench.n_passes(item)):
                req = bench.request(item, k)
                fh.write(
                    json.dumps(
                        {
                            "id": item.id,
                            "rotation": k,
                            "task": item.task,
                            "setting": item.setting,
                            "prompt": req.prompt,
                            "options": req.info["options"],
                            "media": item.media,
                            "media_root": loaded.media_root,
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                )
                n += 1
    return n


def read_predictions(path: str | Path) -> dict[tuple[str, int], dict]:
    """(id, rotation) -> prediction row; errors name the file, line and field."""
    preds: dict[tuple[str, int], dict] = {}
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}: line {n}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{where}: not JSON ({err.msg})") from err
            if not isinstance(row, dict) or not isinstance(row.get("id"), str):
                raise DataError(f"{where}: field 'id' (string) is required")
            if ("response" in row) == ("choice" in row):
                raise DataError(f"{where}: give exactly one of 'response' (free text) or 'choice' (a letter)")
            rotation = row.get("rotation", 0)
            if not isinstance(rotation, int) or rotation < 0:
                raise DataError(f"{where}: field 'rotation' must be a non-negative integer, got {rotation!r}")
            if (row["id"], rotation) in preds:
                raise DataError(f"{where}: duplicate prediction for id {row['id']!r} rotation {rotation}")
            preds[(row["id"], rotation)] = row
    return preds


def score_predictions(args: EvalArgs, predictions: str | Path, *, judge=None) -> dict:
    """Score an external tool's answers with the same extraction, judge, CircularEval and reports."""
    loaded = load(args)
    preds = read_predictions(predictions)
    judge = judge if judge is not None else build_judge(args)
    bench = AVTrustBench(
        AVTrustBenchOptions(
            circular=args.circular, pin_abstain=args.pin_abstain, post_prompt=args.post_prompt
        ),
        judge,
    )
    history: dict[str, list[dict]] = defaultdict(list)
    missing: dict[str, str] = {}
    active = list(loaded.items)
    while active:
        jobs, given = [], []
        for item in active:
            k = bench.next_pass(item, history[item.id])
            if k is None:
                continue
            row = preds.get((item.id, k))
            if row is None:
                missing[item.id] = f"no prediction for rotation {k}"
                continue
            job = Job(item, k, bench.request(item, k), f"{item.id}/{k}", output=row.get("response"))
            (given if "choice" in row else jobs).append((job, row))
        for (job, _), rec in zip(jobs, bench.score([j for j, _ in jobs])):
            history[job.item.id].append({"response": job.output, **rec})
        for job, row in given:
            history[job.item.id].append(_given_choice(job, row["choice"]))
        active = [j.item for j, _ in jobs + given]
    outcomes = []
    for item in loaded.items:
        if item.id in missing:
            outcomes.append(
                ItemOutcome(
                    item.id,
                    item.task,
                    item.setting,
                    item.source,
                    item.category,
                    status="skipped",
                    reason="no prediction",
                )
            )
        else:
            outcomes.append(bench.outcome(item, history[item.id]))
    known = {(i.id, k) for i in loaded.items for k in range(bench.n_passes(i))}
    used = {(i, k) for i, recs in history.items() for k in range(len(recs))}
    unused = Counter(
        "not among the selected items" if (i, k) not in known else "not needed (decided earlier)"
        for i, k in preds
        if (i, k) not in used
    )
    results = {
        "benchmark": bench.name,
        "label": args.label,
        "mode": "external predictions",
        "config": args.public(),
        "model": {"predictions": str(predictions)},
        "judge": bench.describe()["judge"],
        "evaluation": bench.describe(),
        "versions": versions(),
        "loading": _loading(loaded, args),
        "predictions": {"rows": len(preds), "unused": dict(sorted(unused.items()))},
        "metrics": metrics(outcomes, loaded.items, circular=args.circular),
    }
    if args.output:
        Path(args.output).mkdir(parents=True, exist_ok=True)
        write_reports(results, args.output)
    return results


def _given_choice(job: Job, choice: Any) -> dict:
    """A prediction that already names a letter (or "ABSTAIN") bypasses extraction."""
    options = job.request.info["options"]
    valid = isinstance(choice, str) and (choice in options or choice == ABSTAIN)
    ext = (
        Extraction(choice, "provided", "prediction letter")
        if valid
        else Extraction(None, "unparsed", f"prediction letter {choice!r} is not an option")
    )
    return {
        "choice": ext.choice,
        "method": ext.method,
        "rule": ext.rule,
        "rotation": job.k,
        "answer": job.request.info["answer"],
        "correct": is_correct(ext.choice, job.request.info["answer"]),
    }
