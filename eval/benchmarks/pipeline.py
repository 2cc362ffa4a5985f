"""`cavpref eval aura|mmar|traceav`: released data -> shared runner -> results.json / report.md / plots.

The same harness as ``cavpref eval avtrustbench`` (``eval.pipeline``): the same model backends (a local
adapter or an OpenAI-compatible endpoint, ``build_backend``), the same runner (records appended as
produced, resume, data-parallel), the same judge client, the same run-folder layout; only the reader,
prompt, scorer and metrics are the benchmark's own (``eval.benchmarks.plugins``).

``score_predictions`` scores answers produced by any other tool, in the benchmark's released prediction
format (docs/reasoning_benchmarks.md lists the schemas).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cavpref.data import check_limit
from cavpref.eval import registry
from cavpref.eval.args import JudgeArguments, EvalModelArguments
from cavpref.eval.benchmarks.longvideo import LongVideoPolicy

from cavpref.media.args import MediaArguments
from cavpref.output_dir import OutputArguments

PROTOCOLS = ("paper", "official")


@dataclass
class BenchArgs(EvalModelArguments, MediaArguments, JudgeArguments, OutputArguments):
    """Every field is a ``--flag`` (and a YAML key) of ``cavpref eval aura|mmar|traceav`` and ``eval score``."""

    benchmark: str = field(
        default="",
        metadata={"help": "a registered benchmark (set by the sub-command): aura | mmar | traceav"},
    )
    protocol: str = field(
        default="paper",
        metadata={
            "help": "paper: the papers' rules; official: the released scoring scripts' per-item decisions and "
            "totals (docs/reasoning_benchmarks.md lists the differences)"
        },
    )
    data: str = field(
        default="", metadata={"help": "the released file (TraceAV-Bench: a task file or data/)"}
    )
    output: str = field(default="", metadata={"help": "run folder (records, results.json, report.md, plots)"})
    media_root: str | None = field(default=None, metadata={"help": "media folder (default: --data's folder)"})
    tasks: list[str] = field(
        default_factory=list, metadata={"help": "AURA task codes / MMAR modalities / TraceAV task types"}
    )
    limit: int | None = field(
        default=None, metadata={"help": "first N items (by id) of each task; 0 or unset = all"}
    )
    label: str | None = field(default=None, metadata={"help": "name of this run in reports"})
    batch_size: int = field(default=4, metadata={"help": "items per generation batch"})
    chunk_size: int = field(default=32, metadata={"help": "items decoded and scored per chunk"})
    max_new_tokens: int | None = field(
        default=None, metadata={"help": "default: aura 512, mmar 1024, traceav 32"}
    )
    sample_rate: int = field(default=16000, metadata={"help": "audio sample rate fed to the model"})
    video_pattern: str = field(default="{video_id}.mp4", metadata={"help": "AURA: media path of a video_id"})
    long_num_frames: int | None = field(default=64, metadata={"help": "TraceAV: uniform frames per video"})
    long_fps: float | None = field(default=None, metadata={"help": "TraceAV: frame rate instead (capped)"})
    long_max_frames: int = field(default=64, metadata={"help": "TraceAV: cap on frames with long_fps"})
    audio_window_s: float | None = field(
        default=None,
        metadata={
            "help": "TraceAV: the model's audio window, s (default: its processor's feature extractor, else 30)"
        },
    )
    audio_segments: int = field(default=8, metadata={"help": "TraceAV: chunks spread over the video"})
    durations: str | None = field(default=None, metadata={"help": "TraceAV: JSON video_id -> seconds"})
    nli_model: str = field(
        default="cross-encoder/nli-deberta-v3-base", metadata={"help": "AURA CIS cross-encoder"}
    )
    raters: int = field(default=5, metadata={"help": "MMAR: judge ratings per correct item"})
    rater_seed: int = field(default=42, metadata={"help": "MMAR: judge seed (paper: rater k uses seed + k)"})
    model_key: str | None = field(
        default=None, metadata={"help": "score: AURA's <key>_answer/<key>_reason fields"}
    )

    def __post_init__(self):
        MediaArguments.__post_init__(self)
        if self.benchmark:
            spec = registry.get(self.benchmark)
            if spec.args_type() is not type(self):
                raise ValueError(
                    f"--benchmark {self.benchmark!r} is not run with these arguments "
                    f"(use `cavpref eval {self.benchmark}`)"
                )
            if self.max_new_tokens is None:
                self.max_new_tokens = spec.default_max_new_tokens
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"--protocol must be one of {PROTOCOLS}, got {self.protocol!r}")

    def long_policy(self, backend=None) -> LongVideoPolicy:
        """TraceAV's sampling; the audio window defaults to what the local model's processor takes."""
        from cavpref.eval.benchmarks.longvideo import window_from_processor

        window = self.audio_window_s
        processor = getattr(getattr(backend, "adapter", None), "processor", None)
        if window is None and processor is not None:
            window = window_from_processor(processor)
        size = (self.frame_height, self.frame_width) if self.frame_height and self.frame_width else None
        return LongVideoPolicy(
            num_frames=self.long_num_frames,
            fps=self.long_fps,
            max_frames=self.long_max_frames,
            frame_size=size,
            audio_window_s=window or 30.0,
            audio_segments=self.audio_segments,
        )

    def public(self) -> dict[str, Any]:
        from cavpref.redact import public_config

        # env-variable *names* only, never keys; URLs lose their user info and secret query parameters
        return public_config(asdict(self))


# ------------------------------------------------------------------------------------------ items and plug-ins


def load(args: BenchArgs) -> tuple[list, str]:
    """(items sorted by id, media root) after --tasks and --limit."""
    items = registry.get(args.benchmark).read(args)
    if args.tasks:
        known = {i.task for i in items}
        unknown = sorted(set(args.tasks) - known)
        if unknown:
            raise ValueError(f"--tasks: {unknown} not in {args.data} (it has {sorted(known)})")
        items = [i for i in items if i.task in args.tasks]
    items.sort(key=lambda i: i.id)
    if check_limit(args.limit):
        seen: dict[str, int] = {}
        kept = []
        for item in items:
            seen[item.task] = seen.get(item.task, 0) + 1
            if seen[item.task] <= args.limit:
                kept.append(item)
        items = kept
    if not items:  # an empty run would write an empty report and exit 0
        raise ValueError(
            f"{args.data}: no {args.benchmark} items selected"
            + (f" (--tasks {' '.join(args.tasks)})" if args.tasks else " (the file holds none)")
        )
    data = Path(args.data)
    return items, args.media_root or str(data if data.is_dir() else data.parent)


def build_judge_client(args: BenchArgs):
    configured = args.judge_model or os.environ.get("CAVPREF_JUDGE_MODEL")
    if not registry.get(args.benchmark).uses_judge or args.no_judge or not configured:
        return None
    from cavpref.eval.judge import ChatClient, ChatConfig

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


def build_benchmark(args: BenchArgs, client=None, nli=None, backend=None):
    """The runner plug-in of ``args.benchmark`` (its scorer)."""
    return registry.get(args.benchmark).plugin(args, client, nli, backend)


# ------------------------------------------------------------------------------------------ results


def durations_for(args: BenchArgs, items, media_root: str) -> dict[str, float]:
    """TraceAV video lengths: --durations JSON first, else the probed media file (when present)."""
    from cavpref.media.probe import probe
    from cavpref.media.spec import MediaError, from_json, resolve_path

    given = json.loads(Path(args.durations).read_text()) if args.durations else {}
    out = {}
    for item in items:
        vid = item.meta["video_id"]
        if vid in given:
            out[vid] = float(given[vid])
        elif vid not in out:
            try:
                out[vid] = probe(resolve_path(media_root, from_json(item.media).path)).duration
            except MediaError:
                pass
    return out


def metrics_for(
    args: BenchArgs, items, records: dict[str, dict], media_root: str, *, judged: bool
) -> dict[str, Any]:
    """The benchmark's metrics from the scored records (item id -> record) of the items that have one;
    ``judged``: a judge rated the reasoning."""
    by_id = {i.id: i for i in items}
    recs = [(by_id[i], r) for i, r in records.items() if i in by_id]
    return registry.get(args.benchmark).metrics(args, recs, media_root, judged=judged)


def assemble(
    args: BenchArgs,
    bench,
    items,
    media_root: str,
    outcomes,
    records: dict[str, dict],
    model: dict,
    extra: dict | None = None,
) -> dict[str, Any]:
    from cavpref.eval.metrics import counts
    from cavpref.eval.pipeline import versions

    scored = {o.item_id for o in outcomes if o.status == "evaluated"}
    return {
        "benchmark": args.benchmark,
        "protocol": args.protocol,
        "label": args.label,
        "mode": "generate",
        "config": args.public(),
        "model": model,
        "evaluation": bench.describe(),
        "judge": bench.describe().get("judge"),
        "versions": versions(),
        "loading": {"files": [args.data], "media_root": media_root, "items": len(items)},
        "counts": counts(outcomes),
        **(extra or {}),
        "metrics": metrics_for(
            args,
            items,
            {k: v for k, v in records.items() if k in scored},
            media_root,
            judged=bench.describe().get("judge") is not None,
        ),
    }


def evaluate(
    args: BenchArgs, *, backend=None, client=None, nli=None, rank: int | None = None, world: int | None = None
) -> dict | None:
    """Run (or resume) one benchmark; the results dict on the main process, None elsewhere."""
    from cavpref.eval.pipeline import build_backend
    from cavpref.eval.runner import RunConfig, Runner

    if not (args.data and args.output):
        raise ValueError("--data and --output are required")
    items, media_root = load(args)
    backend = backend if backend is not None else build_backend(args)
    client = client if client is not None else build_judge_client(args)
    spec = registry.get(args.benchmark)
    bench = spec.plugin(args, client, nli, backend)
    frames = spec.frame_policy(args, bench)
    runner = Runner(
        bench,
        backend,
        RunConfig(
            args.output, media_root, "generate", args.batch_size, args.chunk_size, frames, args.sample_rate
        ),
        rank=rank,
        world=world,
    )
    stats = runner.run(items)
    log = {"rank": runner.rank, **stats, "judge_calls": None if client is None else client.stats}
    Path(args.output, f"run_log.rank{runner.rank}.json").write_text(json.dumps(log, indent=1) + "\n")
    if not runner.is_main:
        return None
    outcomes, used = runner.collect(items)
    records = {r["item_id"]: r for r in used}
    results = assemble(args, bench, items, media_root, outcomes, records, backend.describe())
    registry.write_reports(results, args.output)
    return results
