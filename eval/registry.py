"""The benchmark registry (lmms-eval style): one registered class per benchmark, looked up by name once.

A benchmark class owns everything that differs between benchmarks — its arguments class, reader, prompt,
runner plug-in (scorer), metrics, report section and plots, default generation length, headline numbers
and external-predictions format. The runner, ``cavpref eval score``, the reports and the command line
call ``get(name)`` and use the class's methods; no other module compares benchmark names.

Benchmarks live one per module in ``cavpref.eval.tasks`` and register themselves with ``@register``; the
package is scanned on the first lookup, so a fifth benchmark is one new module there (docs/evaluation.md).
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path
from typing import Any, ClassVar

from transformers.utils import logging

from cavpref.redact import redact

logger = logging.get_logger(__name__)

TASKS_PACKAGE = "cavpref.eval.tasks"


class Benchmark:
    """What one benchmark provides. Subclasses set the class attributes and override the methods they use."""

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    default_max_new_tokens: ClassVar[int] = 64
    uses_judge: ClassVar[bool] = True  # whether an LLM judge can take part in scoring
    # the external-predictions format (one line; `cavpref eval score` names it in its errors)
    prediction_format: ClassVar[str] = ""

    def args_type(self) -> type:
        """The config dataclass of ``cavpref eval <name>`` and of ``eval score`` for this benchmark."""
        raise NotImplementedError

    def command_argv(self, argv: list[str]) -> list[str]:
        """``cavpref eval <name> ARGV`` -> what the arguments class parses."""
        return list(argv)

    # -- running a model and scoring predictions
    def evaluate(self, args) -> dict | None:
        """Run (or resume) the benchmark; the results on the main process, None elsewhere."""
        raise NotImplementedError

    def score_predictions(self, args, predictions: str) -> dict:
        raise NotImplementedError

    # -- reports (from results.json alone)
    def headline(self, results: dict) -> dict:
        """The numbers ``eval score`` prints."""
        return results["metrics"]["overall"]

    def score_summary(self, results: dict) -> dict:
        """What ``cavpref eval score`` prints (one JSON line)."""
        return {"counts": results["counts"], "metrics": self.headline(results)}

    def write_report(self, results: dict, out_dir: Path) -> None:
        """report.md and plots/ (results.json is written by ``write_reports``)."""
        raise NotImplementedError


_REGISTRY: dict[str, type[Benchmark]] = {}
_DISCOVERED = False


def register(cls: type[Benchmark]) -> type[Benchmark]:
    """Class decorator: make ``cls`` available as ``get(cls.name)``."""
    if not cls.name:
        raise ValueError(f"{cls.__qualname__}: a registered benchmark needs a name")
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(
            f"benchmark {cls.name!r} registered twice ({_REGISTRY[cls.name].__qualname__}, "
            f"{cls.__qualname__})"
        )
    _REGISTRY[cls.name] = cls
    return cls


def _discover() -> None:
    """Import every module of ``cavpref.eval.tasks`` once (each registers its benchmark)."""
    global _DISCOVERED
    if _DISCOVERED:
        return
    _DISCOVERED = True
    package = importlib.import_module(TASKS_PACKAGE)
    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{TASKS_PACKAGE}.{info.name}")


def names() -> tuple[str, ...]:
    _discover()
    return tuple(sorted(_REGISTRY))


def get(name: str) -> Benchmark:
    """The registered benchmark called ``name``; an unknown name is an error listing the known ones."""
    _discover()
    if name not in _REGISTRY:
        raise ValueError(f"unknown benchmark {name!r} (registered: {', '.join(names())})")
    return _REGISTRY[name]()


def write_reports(results: dict, out_dir: str | Path) -> None:
    """results.json, then the benchmark's own report.md and plots/."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = redact(results)  # no configured secret reaches a result file, whatever echoed it
    (out_dir / "results.json").write_text(
        json.dumps(results, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    get(benchmark_of(results)).write_report(results, out_dir)
    logger.info("wrote %s/results.json, report.md, plots/", out_dir)


def benchmark_of(results: dict[str, Any]) -> str:
    """The benchmark a results dict belongs to (AVTrustBench results written before the field existed
    carry none)."""
    return results.get("benchmark") or DEFAULT_BENCHMARK


DEFAULT_BENCHMARK = "avtrustbench"  # `cavpref eval score` without --benchmark, old results.json
