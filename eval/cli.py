"""`cavpref eval <command>`: a registered benchmark's name | score | prompts | compare | report.

    cavpref eval <benchmark> --model CKPT_OR_URL --data DATA --output RUN [--tasks …] [--limit N]
                             [--drop_stream video|audio | --text_only] [--protocol paper|official] [its own keys]
        (`cavpref eval --help` lists the registered benchmarks, `cavpref eval <benchmark> --help` every key)
    cavpref eval score [--benchmark NAME] --predictions preds.jsonl --data … [--output DIR]
                       [--harness lmms_eval|vlmevalkit]    (without --benchmark: AVTrustBench)
    cavpref eval export --harness lmms_eval|vlmevalkit [--benchmark NAME] --data DATA --output DIR [--task_name N]
    cavpref eval prompts [--benchmark NAME] --data DATA --prompts_out prompts.jsonl
    cavpref eval compare RUN_A RUN_B … [--labels …] [--output table.md] [--plot leaderboard.png] [--html compare.html]
    cavpref eval report RUN [--html] (re-render report.md and plots from RUN/results.json; --html: report.html)

Every command parses with ``cavpref.parsing.parse_args``: ``[CONFIG.yaml | --config CONFIG.yaml] [--key value …]``,
the command line overriding the file, unknown keys an error, ``--help`` listing every key: ``EvalArgs``
(every benchmark) plus the benchmark's ``Options`` (its own keys), plus ``ScoreArgs`` / ``PromptsArgs``;
``CompareArgs``; ``ReportArgs``; ``eval export``: ``EvalArgs`` + ``Options`` + ``ExportArgs`` (``eval.harness``). Benchmarks are looked up by name in ``cavpref.eval.registry``.
Multi-GPU / multi-process: ``accelerate launch -m cavpref.apps.cli eval …``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from cavpref.cpu import default_cpu_isa
from cavpref.eval import registry
from cavpref.eval.args import EvalArgs, HTMLReportArguments
from cavpref.output_dir import check_output_file, claim_output_dir

USAGE = __doc__


@dataclass
class ScoreArgs:
    predictions: str = field(
        default="",
        metadata={
            "help": "the predictions file, in the benchmark's format (docs/evaluation.md, docs/reasoning_benchmarks.md)"
        },
    )
    harness: str = field(
        default="cavpref",
        metadata={
            "help": "whose file --predictions is: cavpref (JSONL rows), lmms_eval (its --log_samples JSONL) or "
            "vlmevalkit (its .xlsx / .tsv prediction file) of a task from `cavpref eval export`"
        },
    )

    def __post_init__(self):
        if self.harness not in ("cavpref", "lmms_eval", "vlmevalkit"):
            raise ValueError(f"--harness must be cavpref, lmms_eval or vlmevalkit, got {self.harness!r}")


@dataclass
class PromptsArgs:
    prompts_out: str = field(default="", metadata={"help": "where to write the prompts JSONL"})


@dataclass
class CompareArgs:
    runs: list[str] = field(
        default_factory=list,
        metadata={"help": "run folders (or results.json files) of one benchmark; the first is the reference"},
    )
    labels: list[str] = field(
        default_factory=list, metadata={"help": "one name per run (default: their labels)"}
    )
    setting: str | None = field(
        default=None, metadata={"help": "AVTrustBench: base | instruction (default: both)"}
    )
    metric: str = field(default="headline", metadata={"help": "AVTrustBench: headline | circular | vanilla"})
    output: str | None = field(default=None, metadata={"help": "also write the table to this file"})
    plot: str | None = field(default=None, metadata={"help": "write the leaderboard plot (PNG) here"})
    html: str | None = field(
        default=None,
        metadata={
            "help": "write an HTML page here: every item side by side across the runs, where they differ"
        },
    )
    allow_different_items: bool = field(
        default=False,
        metadata={"help": "compare runs evaluated on different items (refused by default; a warning then)"},
    )
    overwrite: bool = field(
        default=False,
        metadata={
            "help": "replace existing --output / --plot / --html files cavpref did not write (a compared run's "
            "own files: never)"
        },
    )

    bootstrap_resamples: int = field(
        default=10000,
        metadata={
            "help": "resamples of the paired bootstrap interval of each difference (fixed seed; 0: no "
            "significance table)"
        },
    )

    def __post_init__(self):
        if self.bootstrap_resamples < 0:
            raise ValueError(f"--bootstrap_resamples must be 0 or more, got {self.bootstrap_resamples}")
        if self.setting not in (None, "base", "instruction"):
            raise ValueError(f"--setting must be base or instruction, got {self.setting!r}")
        if self.metric not in ("headline", "circular", "vanilla"):
            raise ValueError(f"--metric must be headline, circular or vanilla, got {self.metric!r}")


@dataclass
class ReportArgs:
    run: str = field(default="", metadata={"help": "the run folder holding results.json (also positional)"})
    html: bool = field(
        default=False, metadata={"help": "also write report.html (every item, its media and passes)"}
    )
    data: str | None = field(
        default=None,
        metadata={"help": "--html: the run's data, where it is now (default: as the run read it)"},
    )
    media_root: str | None = field(
        default=None,
        metadata={"help": "--html: the run's media folder, where it is now (default: the run's)"},
    )


def positional(argv: list[str], key: str) -> list[str]:
    """Leading positional arguments (not a config file) -> ``--key a b …``: ``eval compare RUN1 RUN2`` and
    ``eval report RUN`` keep their short forms under the one parser."""
    n = next((i for i, a in enumerate(argv) if a.startswith("-")), len(argv))
    head = [a for a in argv[:n] if not a.endswith((".yaml", ".yml"))]
    if not head:
        return argv
    config = [a for a in argv[:n] if a.endswith((".yaml", ".yml"))]
    return [*config, f"--{key}", *head, *argv[n:]]


def benchmark_in(argv: list[str]) -> str | None:
    """The value of ``--benchmark`` (``eval score`` / ``prompts`` route on it): the command line's, else the
    config file's ``benchmark:`` key, else None. Read before parsing: it decides which Options parse the rest."""
    from cavpref.parsing import config_argv

    argv = config_argv(argv)
    for i, a in enumerate(argv):
        if a == "--benchmark" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--benchmark="):
            return a.split("=", 1)[1]
    if "--config" in argv and argv.index("--config") + 1 < len(argv):
        from cavpref.parsing import load_yaml

        config = load_yaml(argv[argv.index("--config") + 1]) or {}
        if isinstance(config, dict) and config.get("benchmark") is not None:
            return str(config["benchmark"])
    return None


def parse(command: str, argv: list[str]) -> tuple:
    """The config dataclasses of ``cavpref eval <command>`` (config file + overrides, ``cavpref.parsing``):
    ``(EvalArgs, Options[, ScoreArgs | PromptsArgs])`` for a benchmark, one dataclass for compare / report."""
    from cavpref.parsing import parse_args

    prog = f"cavpref eval {command}"
    if command == "compare":
        return parse_args([CompareArgs, HTMLReportArguments], positional(argv, "runs"), prog)
    if command == "report":
        return parse_args([ReportArgs, HTMLReportArguments], positional(argv, "run"), prog)
    if command in ("score", "prompts", "export"):
        bench = registry.get(benchmark_in(argv) or registry.DEFAULT_BENCHMARK)
        if command == "export":
            from cavpref.eval.harness.export import ExportArgs

            return parse_args([EvalArgs, bench.Options, ExportArgs], argv, prog)
        extra = ScoreArgs if command == "score" else PromptsArgs
        return parse_args([EvalArgs, bench.Options, extra], argv, prog)
    bench = registry.get(command)
    return parse_args([EvalArgs, bench.Options], [*argv, "--benchmark", command], prog)


def _compare(argv: list[str]) -> int:
    from cavpref.eval.compare import compare, leaderboard

    ns, html = parse("compare", argv)
    if not ns.runs:
        raise ValueError("give at least one run folder")
    # nothing of the user's or of the compared runs is written over (issue 54, third hostile pass)
    runs_in = {
        f"run {i + 1}": str(Path(r) if Path(r).is_dir() else Path(r).parent) for i, r in enumerate(ns.runs)
    }
    for key in ("output", "plot", "html"):
        if getattr(ns, key):
            setattr(
                ns,
                key,
                str(check_output_file(getattr(ns, key), f"--{key}", inputs=runs_in, overwrite=ns.overwrite)),
            )
    runs = []
    for run in ns.runs:
        path = Path(run) / "results.json" if Path(run).is_dir() else Path(run)
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found (is {run} a finished run folder?)")
        try:
            runs.append(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, UnicodeDecodeError) as err:
            raise ValueError(f"{path}: not a results.json of a finished run (not JSON: {err})") from None
    table = compare(
        runs,
        ns.labels or None,
        setting=ns.setting,
        metric=ns.metric,
        allow_different_items=ns.allow_different_items,
        bootstrap_resamples=ns.bootstrap_resamples,
    )
    print(table)
    if ns.output:
        Path(ns.output).write_text(table + "\n")
    if ns.plot:
        print(f"wrote {leaderboard(runs, ns.labels or None, ns.plot)}")
    if ns.html:
        from cavpref.eval.html_report.compare import write_compare

        print(f"wrote {write_compare(ns.runs, ns.labels or None, ns.html, html, table=table)}")
    return 0


def _claim(args) -> None:
    """The run folder, claimed like every output folder (``cavpref.output_dir``): never a folder of the user's,
    the model's or the data's own; one run at a time."""
    if args.output:
        args.output = claim_output_dir(
            args.output,
            "eval",
            overwrite=args.overwrite_output_dir,
            inputs={"model": args.model, "data": args.data},
            markers=("results.json", "records.rank0.jsonl"),
            key="output",
        )


def _run(command: str, rest: list[str]) -> int:
    from cavpref.eval import pipeline

    if command in registry.names():
        args, options = parse(command, rest)
        _claim(args)
        if pipeline.evaluate(args, options) is not None:
            print(f"wrote {args.output}/results.json, report.md, plots/")
        return 0
    if command == "score":
        args, options, sargs = parse(command, rest)
        if not sargs.predictions or not args.data:
            raise ValueError("--predictions and --data are required")
        _claim(args)
        rows = harness = None
        if sargs.harness != "cavpref":
            from cavpref.eval.harness.export import read_harness

            rows, harness = read_harness(sargs.harness, sargs.predictions), sargs.harness
        results = pipeline.score_predictions(args, sargs.predictions, options, rows=rows, harness=harness)
        print(json.dumps(registry.get(args.benchmark)().score_summary(results)))
        return 0
    if command == "prompts":
        args, options, pargs = parse(command, rest)
        if not pargs.prompts_out or not args.data:
            raise ValueError("--prompts_out and --data are required")
        print(
            f"wrote {pipeline.export_prompts(args, pargs.prompts_out, options)} prompts to {pargs.prompts_out}"
        )
        return 0
    if command == "export":
        from cavpref.eval.harness.export import export

        args, options, eargs = parse(command, rest)
        done = export(args, options, eargs)
        print(
            f"wrote {done['passes']} passes of {done['items']} items ({done['media_files_written']} media files "
            f"written) to {done['folder']}: {', '.join(done['files'])}"
        )
        if "lmms_eval_docs" in done:
            print(f"lmms-eval's TaskManager loaded {done['name']}: {done['lmms_eval_docs']} docs")
        return 0
    if command == "compare":
        return _compare(rest)
    if command == "report":
        rargs, html = parse(command, rest)
        if not rargs.run:
            raise ValueError("usage: cavpref eval report RUN_FOLDER [--html]")
        registry.write_reports(json.loads((Path(rargs.run) / "results.json").read_text()), rargs.run)
        if rargs.html:
            from cavpref.eval.html_report.run import load_run
            from cavpref.eval.html_report.write import write_run

            view = load_run(rargs.run, data=rargs.data, media_root=rargs.media_root)
            print(f"wrote {write_run(view, rargs.run, html)}")
        return 0
    print(
        f"cavpref eval: unknown command {command!r} (benchmarks: {', '.join(registry.names())})\n{USAGE}",
        file=sys.stderr,
    )
    return 2


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    default_cpu_isa()  # the same log-likelihoods on CPUs with and without AVX-512 (cavpref/cpu.py)
    if not argv or argv[0] in ("-h", "--help"):
        print(f"{USAGE}\nbenchmarks: {', '.join(registry.names())}")
        return 0
    command, rest = argv[0], argv[1:]
    try:
        return _run(command, rest)
    except (ValueError, FileNotFoundError) as err:
        print(f"cavpref eval {command}: {err}", file=sys.stderr)
        return 2
