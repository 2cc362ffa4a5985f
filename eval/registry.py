"""The benchmark registry (lmms-eval's task folders): one folder per benchmark, one ``Benchmark`` class each.

A benchmark lives in ``eval/benchmarks/<name>/`` — its reader of the released format, prompt, scorer,
metrics, report section, external-predictions format and own keys (``Options``) — and registers its
``Benchmark`` subclass with ``@register`` in that folder's ``__init__.py``. The folders are scanned on the
first lookup, so a new benchmark is one new folder and nothing else (the fifth one was added so,
``tests/eval/test_eval_registry.py`` checks that no file outside its folder names it).

Everything shared is written once, outside the folders: the arguments (``eval.args.EvalArgs``), the
pipeline (``eval.pipeline``: items -> runner -> results.json), the runner (``eval.runner``: records,
resume, data parallel), backends, judge client, stream ablations, ``eval compare``. They drive a
``Benchmark`` instance through the methods below and never compare a benchmark's name.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from transformers.utils import logging

from cavpref.eval.common import split_response
from cavpref.eval.metrics import ItemOutcome
from cavpref.eval.runner import Job, PassRequest
from cavpref.redact import redact

logger = logging.get_logger(__name__)

BENCHMARKS_PACKAGE = "cavpref.eval.benchmarks"
DEFAULT_BENCHMARK = "avtrustbench"  # `cavpref eval score` without --benchmark, results.json without the field


@dataclass
class NoOptions:
    """A benchmark without keys of its own."""


@dataclass
class Loaded:
    """The items a run evaluates, the folder their media paths are relative to, and how they were read
    (results.json ``loading``)."""

    items: list
    media_root: str
    loading: dict[str, Any]


class Benchmark:
    """One benchmark. Subclasses set the class attributes and override what differs from a one-pass,
    free-form-answer benchmark.

    An instance is configured for one run — ``args`` (``eval.args.EvalArgs``), ``options`` (the class's
    ``Options``), the judge ``client`` — and is what the runner drives (``next_pass`` / ``request`` /
    ``score`` / ``needs_rescore`` / ``outcome``). The report methods read results.json alone, so
    ``cavpref eval report`` and ``eval compare`` work on an unconfigured instance (``get(name)()``).
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    Options: ClassVar[type] = NoOptions
    # EvalArgs keys left unset (None) take these values
    defaults: ClassVar[dict[str, Any]] = {"max_new_tokens": 64, "batch_size": 8, "chunk_size": 64}
    modes: ClassVar[tuple[str, ...]] = ("generate",)  # answer modes offered (eval.args.MODES)
    protocols: ClassVar[tuple[str, ...]] = ("paper",)  # "official": the released scoring script's rules
    uses_judge: ClassVar[bool] = False  # whether an LLM judge can take part in scoring
    prediction_format: ClassVar[str] = ""  # one line; `cavpref eval score` names it in its errors
    # `eval compare`: the summary columns (of ``columns``) that rank the runs, first one sorts the table
    rank_by: ClassVar[tuple[str, ...]] = ()
    # the folder's report module (``section(results)``, ``figures(results)``), when it has one
    report: ClassVar[Any] = None

    def __init__(self, args=None, options=None, *, client=None, nli=None):
        self.args = args
        self.opt = options if options is not None else self.Options()
        if isinstance(self.opt, dict):
            self.opt = self.Options(**self.opt)
        self.client, self.nli = client, nli
        self.protocol = getattr(args, "protocol", "paper")
        self.backend = None  # set by the pipeline before the runner starts (TraceAV reads its processor)

    # ------------------------------------------------------------------------------------------ data
    def read(self) -> Loaded:
        """The released data (``args.data``) as items, selected by ``args.tasks`` / ``args.limit``."""
        raise NotImplementedError

    def task_names(self, items) -> list[str]:
        """Sub-tasks the run reports (``--tasks`` or every task of the items), in the benchmark's order."""
        return sorted({i.task for i in items})

    # ------------------------------------------------------------------------------------------ the runner
    def n_passes(self, item) -> int:
        return 1

    def next_pass(self, item, records: list[dict]) -> int | None:
        return len(records) if len(records) < self.n_passes(item) else None

    def request(self, item, k: int) -> PassRequest:
        return PassRequest(self.prompt(item))

    def prompt(self, item) -> str:
        raise NotImplementedError

    def score(self, jobs: list[Job]) -> list[dict]:
        """One record per job (its answer scored: extraction, judges)."""
        raise NotImplementedError

    def scored(self, record: dict) -> bool:
        """Whether a stored record's scoring is complete (a judge step may still be pending)."""
        return True

    def needs_rescore(self, record: dict) -> bool:
        """A stored answer scored under the other ``--protocol``, or whose judge step failed, is scored
        again from its stored response (never regenerated)."""
        return record.get("protocol", "paper") != self.protocol or (
            self.client is not None and not self.scored(record)
        )

    def outcome(self, item, records: list[dict]) -> ItemOutcome:
        rec = records[0]
        out = ItemOutcome(
            item.id,
            item.task,
            item.setting,
            item.source,
            item.category,
            vanilla=bool(rec.get("correct")),
            circular=all(bool(r.get("correct")) for r in records),
            passes_run=len(records),
            passes_total=self.n_passes(item),
        )
        pending = [r for r in records if not self.scored(r)]
        if pending:
            out.status, out.reason = "skipped", f"judge pending: {str(pending[0].get('error'))[:60]}"
        return out

    def frame_policy(self):
        return self.args.frame_policy()

    # ------------------------------------------------------------------------------------------ results
    def metrics(self, scored: list[tuple[Any, list[dict]]], outcomes: list[ItemOutcome]) -> dict[str, Any]:
        """results.json ``metrics`` from (item, its records) of every evaluated item."""
        raise NotImplementedError

    def extra_results(
        self, scored: list[tuple[Any, list[dict]]], outcomes: list[ItemOutcome]
    ) -> dict[str, Any]:
        """Top-level results.json keys of the benchmark's own beside ``metrics`` (AVTrustBench's likelihood
        mode: ``by_option_score``)."""
        return {}

    def paired(self, items, outcomes: list[ItemOutcome]) -> dict[str, Any]:
        """results.json ``paired``: each evaluated item's outcome, ``{"measure": "vanilla" | "circular",
        "items": {id: [setting, task, 0 | 1]}}`` — what ``eval compare`` pairs item by item for its
        significance tests (``eval/significance.py``); the headline measure (circular where it ran)."""
        circular = bool(getattr(self.opt, "circular", False))
        measure = "circular" if circular else "vanilla"
        return {
            "measure": measure,
            "items": {
                o.item_id: [o.setting, o.task, int(getattr(o, measure))]
                for o in outcomes
                if o.status == "evaluated"
            },
        }

    def describe(self) -> dict[str, Any]:
        """results.json ``evaluation``: how answers were obtained and scored."""
        judge = None if self.client is None else self.client.describe()
        return {"benchmark": self.name, "protocol": self.protocol, "judge": judge}

    # ------------------------------------------------------------------------------------------ predictions
    def prediction_key(self, row: dict) -> tuple[str, int] | None:
        """(item id, pass) a predictions row answers; None: the row names no item this format knows."""
        return (str(row["id"]), 0) if "id" in row else None

    def prediction(self, row: dict) -> str | None:
        """The answer text of a predictions row (scored like a model's), None without a known field."""
        return None if row.get("response") is None else str(row["response"])

    def answered(self, row: dict) -> bool:
        """Whether a predictions row carries an answer in a field this format knows."""
        return self.prediction(row) is not None

    def score_predictions(self, jobs: list[Job], rows: list[dict]) -> list[dict]:
        """Records for external predictions (``job.output`` holds ``prediction(row)``)."""
        return self.score(jobs)

    # ------------------------------------------------------------------------------------------ reports
    def headline(self, results: dict) -> dict:
        """The numbers ``cavpref eval score`` prints."""
        return results["metrics"]["overall"]

    def score_summary(self, results: dict) -> dict:
        return {"counts": results["counts"], "metrics": self.headline(results)}

    def section(self, results: dict) -> list[str]:
        """report.md lines after the shared header (``eval.reports``): the report module's, by default."""
        return self.report.section(results)

    def figures(self, results: dict) -> list:
        """plots/ bar charts: (file name, label lists, series dicts, titles), ``eval.reports.draw``."""
        return self.report.figures(results) if self.report is not None else []

    def columns(self, results: dict) -> dict[str, float | None]:
        """`eval compare`: the run's number per sub-task and summary column (``rank_by`` among them)."""
        return {}

    def inspect(self, scored: list[tuple[Any, list[dict], ItemOutcome]]) -> list[dict]:
        """The HTML report's rows (``eval.html_report``), one per (item, its records, its outcome): filter
        facets, summary cells and each pass as the model saw and answered it. The default shows every
        field the records hold; a benchmark with more to show (AVTrustBench: rotations, the clean twin)
        extends the rows."""
        from cavpref.eval.html_report.rows import item_view

        return [item_view(self, item, records, outcome) for item, records, outcome in scored]

    def report_links(self) -> dict[str, dict[str, str]]:
        """report.md labels that name a set of items in the benchmark's own words (a category's letter, a
        column over paired items) -> the HTML report's item filter; labels equal to a facet value (a task,
        a setting) need no entry (``eval.html_report.summary``)."""
        return {}

    def write_report(self, results: dict, out_dir: Path) -> None:
        from cavpref.eval.reports import write

        write(results, out_dir, self)


class ReasonedAnswers:
    """Mixed into a benchmark whose answers come with their reasoning (AURA, MMAR): a model's response is
    split into the two (``common.split_response``), a predictions row gives them (``answer_and_reasoning``),
    and both are scored together (``score_answers``)."""

    def answer_and_reasoning(self, row: dict) -> tuple[str, str] | None:
        raise NotImplementedError

    def score_answers(self, jobs: list[Job], answers: list[str], reasonings: list[str]) -> list[dict]:
        raise NotImplementedError

    def score(self, jobs: list[Job]) -> list[dict]:
        parts = [split_response(j.output or "") for j in jobs]
        return self.score_answers(jobs, [a for a, _ in parts], [r for _, r in parts])

    def prediction(self, row: dict) -> str | None:
        found = self.answer_and_reasoning(row)
        return None if found is None else found[0]

    def score_predictions(self, jobs: list[Job], rows: list[dict]) -> list[dict]:
        found = [self.answer_and_reasoning(r) for r in rows]
        return self.score_answers(jobs, [a for a, _ in found], [r for _, r in found])


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
    """Import every benchmark folder of ``cavpref.eval.benchmarks`` once (each registers its class)."""
    global _DISCOVERED
    if _DISCOVERED:
        return
    _DISCOVERED = True
    package = importlib.import_module(BENCHMARKS_PACKAGE)
    for info in pkgutil.iter_modules(package.__path__):
        if info.ispkg:
            importlib.import_module(f"{BENCHMARKS_PACKAGE}.{info.name}")


def names() -> tuple[str, ...]:
    _discover()
    return tuple(sorted(_REGISTRY))


def get(name: str) -> type[Benchmark]:
    """The registered benchmark class called ``name``; an unknown name is an error listing the known ones."""
    _discover()
    if name not in _REGISTRY:
        raise ValueError(f"unknown benchmark {name!r} (registered: {', '.join(names())})")
    return _REGISTRY[name]


def create(args, options=None, **kwargs) -> Benchmark:
    """``args.benchmark``'s class configured for a run (``options``: its Options, a dict of them, or None)."""
    return get(args.benchmark)(args, options, **kwargs)


def benchmark_of(results: dict[str, Any]) -> str:
    """The benchmark a results dict belongs to (AVTrustBench results written before the field existed
    carry none)."""
    return results.get("benchmark") or DEFAULT_BENCHMARK


def write_reports(results: dict, out_dir: str | Path) -> None:
    """results.json, then the benchmark's own report.md and plots/."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = redact(results)  # no configured secret reaches a result file, whatever echoed it
    (out_dir / "results.json").write_text(
        json.dumps(results, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    get(benchmark_of(results))().write_report(results, out_dir)
    logger.info("wrote %s/results.json, report.md, plots/", out_dir)
