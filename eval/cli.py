"""`cavpref eval <command>`: avtrustbench | score | prompts | compare | report.

    cavpref eval avtrustbench --model CKPT_OR_URL --data BENCH --output RUN [--tasks …] [--setting base|instruction]
                              [--circular | --vanilla] [--limit N] [--mode generate|likelihood] [config.yaml]
    cavpref eval score --predictions preds.jsonl --data BENCH [--output DIR] [--circular] [...]
    cavpref eval prompts --data BENCH --prompts_out prompts.jsonl [--circular] [...]
    cavpref eval compare RUN_ZS RUN_SFT RUN_DPO … [--labels …] [--setting …] [--output table.md]
    cavpref eval report RUN        (re-render report.md and plots from RUN/results.json)
    cavpref eval aura|mmar|traceav …  and  cavpref eval score --benchmark aura|mmar|traceav …
                                   (reasoning / long-video benchmarks: see eval/benchmarks/cli.py)

Flags are the fields of ``eval.pipeline.EvalArgs`` (HfArgumentParser; a YAML file works too).
Multi-GPU / multi-process: ``accelerate launch -m cavpref.apps.cli eval avtrustbench …``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

USAGE = __doc__


@dataclass
class ScoreArgs:
    predictions: str = field(default="", metadata={"help": "JSONL: {id, rotation?, response | choice} per line"})


@dataclass
class PromptsArgs:
    prompts_out: str = field(default="", metadata={"help": "where to write the prompts JSONL"})


def _parse(argv: list[str], *extra):
    from transformers import HfArgumentParser

    from cavpref.eval.pipeline import EvalArgs

    parser = HfArgumentParser((EvalArgs, *extra))
    if len(argv) == 1 and argv[0].endswith((".yaml", ".yml")):
        return parser.parse_yaml_file(argv[0])
    return parser.parse_args_into_dataclasses(argv)


def _compare(argv: list[str]) -> int:
    import argparse

    from cavpref.eval.report import compare

    ap = argparse.ArgumentParser(prog="cavpref eval compare", description="paper Table 5 from run folders")
    ap.add_argument("runs", nargs="+", help="run folders (or results.json files); the first is the zero-shot run")
    ap.add_argument("--labels", nargs="+")
    ap.add_argument("--setting", choices=("base", "instruction"))
    ap.add_argument("--metric", default="headline", choices=("headline", "circular", "vanilla"))
    ap.add_argument("--output")
    ns = ap.parse_args(argv)
    runs = []
    for run in ns.runs:
        path = Path(run) / "results.json" if Path(run).is_dir() else Path(run)
        if not path.is_file():
            print(f"cavpref eval compare: {path} not found (is {run} a finished run folder?)", file=sys.stderr)
            return 2
        runs.append(json.loads(path.read_text()))
    table = compare(runs, ns.labels, setting=ns.setting, metric=ns.metric)
    print(table)
    if ns.output:
        Path(ns.output).write_text(table + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    command, rest = argv[0], argv[1:]
    from cavpref.eval.benchmarks import cli as benchmarks  # AURA / MMAR / TraceAV-Bench

    if command in benchmarks.BENCHMARKS or (command == "score" and benchmarks.benchmark_in(rest) is not None):
        return benchmarks.main(command, rest)
    try:
        if command == "avtrustbench":
            from cavpref.eval.pipeline import evaluate

            (args,) = _parse(rest)
            for name in ("model", "data", "output"):
                if not getattr(args, name):
                    raise ValueError(f"--{name} is required")
            results = evaluate(args)
            if results is not None:
                print(f"wrote {args.output}/results.json, report.md, plots/")
            return 0
        if command == "score":
            from cavpref.eval.pipeline import score_predictions

            args, sargs = _parse(rest, ScoreArgs)
            if not sargs.predictions or not args.data:
                raise ValueError("--predictions and --data are required")
            results = score_predictions(args, sargs.predictions)
            print(json.dumps(results["metrics"]["overall"]))
            return 0
        if command == "prompts":
            from cavpref.eval.pipeline import export_prompts

            args, pargs = _parse(rest, PromptsArgs)
            if not pargs.prompts_out or not args.data:
                raise ValueError("--prompts_out and --data are required")
            print(f"wrote {export_prompts(args, pargs.prompts_out)} prompts to {pargs.prompts_out}")
            return 0
        if command == "compare":
            return _compare(rest)
        if command == "report":
            from cavpref.eval.report import write_reports

            if len(rest) != 1:
                raise ValueError("usage: cavpref eval report RUN_FOLDER")
            write_reports(json.loads((Path(rest[0]) / "results.json").read_text()), rest[0])
            return 0
    except (ValueError, FileNotFoundError) as err:
        print(f"cavpref eval {command}: {err}", file=sys.stderr)
        return 2
    print(f"cavpref eval: unknown command {command!r}\n{USAGE}", file=sys.stderr)
    return 2
