"""`cavpref eval aura|mmar|traceav …` and `cavpref eval score --benchmark aura|mmar|traceav …`.

    cavpref eval aura    --model CKPT_OR_URL --data aura.jsonl   --output RUN [--judge_model M] [--nli_model …]
    cavpref eval mmar    --model CKPT_OR_URL --data MMAR-meta.jsonl --output RUN [--judge_model M] [--raters 5]
    cavpref eval traceav --model CKPT_OR_URL --data data/ --media_root VIDEOS --output RUN [--long_num_frames 64]
    cavpref eval score --benchmark aura|mmar|traceav --predictions preds.jsonl --data … [--output RUN]
    (every one: [--protocol paper|official], docs/reasoning_benchmarks.md)

Flags are the fields of ``eval.benchmarks.pipeline.BenchArgs`` (``cavpref.parsing.parse_args``: a config file
plus overrides, unknown keys are errors, ``--help`` lists every key).
Run folders have the AVTrustBench layout (records.rank*.jsonl, results.json, report.md, plots/); rerunning
the same command resumes.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field

from cavpref.eval.benchmarks.pipeline import BENCHMARKS, BenchArgs


@dataclass
class PredictionArgs:
    predictions: str = field(default="", metadata={"help": "the predictions file (see eval.benchmarks.external)"})


def _parse(argv: list[str], *extra, prog: str):
    from cavpref.parsing import parse_args

    return parse_args([BenchArgs, *extra], argv, prog)


def benchmark_in(argv: list[str]) -> str | None:
    """The value of ``--benchmark`` in ``argv`` (``eval score`` routes on it), else None."""
    for i, a in enumerate(argv):
        if a == "--benchmark" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--benchmark="):
            return a.split("=", 1)[1]
    return None


def main(command: str, argv: list[str]) -> int:
    """``command`` is a benchmark name (run a model) or "score" (external predictions)."""
    try:
        if command in BENCHMARKS:
            from cavpref.eval.benchmarks.pipeline import evaluate

            (args,) = _parse([*argv, "--benchmark", command], prog=f"cavpref eval {command}")
            if not args.model:
                raise ValueError("--model is required")
            if evaluate(args) is not None:
                print(f"wrote {args.output}/results.json, report.md, plots/")
            return 0
        if command == "score":
            from cavpref.eval.benchmarks.external import score_predictions

            args, pargs = _parse(argv, PredictionArgs, prog="cavpref eval score")
            if not (pargs.predictions and args.data):
                raise ValueError("--predictions and --data are required")
            results = score_predictions(args, pargs.predictions)
            print(json.dumps({"counts": results["counts"], "metrics": _headline(results)}))
            return 0
    except (ValueError, FileNotFoundError) as err:
        print(f"cavpref eval {command}: {err}", file=sys.stderr)
        return 2
    print(f"cavpref eval: unknown benchmark command {command!r}", file=sys.stderr)
    return 2


def _headline(results: dict) -> dict:
    m = results["metrics"]
    if results["benchmark"] == "aura":
        return m["overall"]
    if results["benchmark"] == "mmar":
        return {p: b["overall"] for p, b in m.items()}
    return {"overall": m["overall"], "gen_avg": m["gen_avg"]["acc"], "mh_avg": m["mh_avg"]["acc"]}
