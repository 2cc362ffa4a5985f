"""``ReasoningBenchmark``: the registry class the benchmarks run through ``eval.benchmarks.pipeline`` share
(AURA, MMAR, TraceAV-Bench). A subclass — one module in ``cavpref.eval.tasks`` — provides the reader,
runner plug-in (scorer), metrics, external-predictions format and report section; this class runs a model,
scores external predictions and writes the reports with them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cavpref.eval import registry
from cavpref.eval.benchmarks.external import score_predictions
from cavpref.eval.benchmarks.pipeline import BenchArgs, evaluate
from cavpref.eval.benchmarks.reports import write


class ReasoningBenchmark(registry.Benchmark):
    """A benchmark run with ``BenchArgs`` through this pipeline (AURA, MMAR, TraceAV-Bench). Subclasses
    (one module each in ``cavpref.eval.tasks``) provide the reader, runner plug-in, metrics, prediction
    format and report section; this class runs, scores predictions and writes reports with them."""

    def args_type(self) -> type:
        return BenchArgs

    def read(self, args: BenchArgs) -> list:
        raise NotImplementedError

    def plugin(self, args: BenchArgs, client=None, nli=None, backend=None):
        raise NotImplementedError

    def frame_policy(self, args: BenchArgs, plugin):
        return args.frame_policy()

    def metrics(self, args: BenchArgs, recs: list, media_root: str, *, judged: bool) -> dict[str, Any]:
        """``recs``: (item, scored record) pairs."""
        raise NotImplementedError

    # external predictions (``eval.benchmarks.external``)
    def prediction_key(self, row: dict) -> str | None:
        """The item id a predictions row without ``id`` names, else None."""
        return None

    def prediction(self, args: BenchArgs, row: dict) -> tuple[str, str] | None:
        """(answer, reasoning) of a predictions row, None when it has no field this format knows."""
        raise NotImplementedError

    def score_answers(self, plugin, items, answers, reasonings) -> list[dict]:
        raise NotImplementedError

    # reports
    def section(self, results: dict) -> list[str]:
        raise NotImplementedError

    def figures(self, results: dict) -> list:
        return []

    def command_argv(self, argv: list[str]) -> list[str]:
        return [*argv, "--benchmark", self.name]  # the sub-command names the benchmark

    def evaluate(self, args: BenchArgs) -> dict | None:
        if not args.model:
            raise ValueError("--model is required")
        return evaluate(args)

    def score_predictions(self, args: BenchArgs, predictions: str) -> dict:
        return score_predictions(args, predictions)

    def write_report(self, results: dict, out_dir: Path) -> None:
        write(results, out_dir, self.title, self.section, self.figures)
