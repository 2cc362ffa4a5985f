"""``TaskSpec``: every fact of one task in one place, declared by the task's own module.

A built-in task is two files: ``data_prep/tasks/<task>.py`` (its generator) and ``<task>.yaml`` beside it
(its facts); the module declares ``SPEC = register_task(spec_from_file(__file__))``. A task of a module of
its own (a plug-in) may pass a ``TaskSpec(...)`` written in Python instead. Everything else reads the
registry ``TASK_SPECS`` (filled when ``cavpref.data_prep.tasks`` is imported):
the generators (sources, templates, the base-setting abstention sentence), prep (the switch table it
writes to ``manifest.json``), and the evaluator (abstention phrases of the choice extraction, the short
abstention response of likelihood scoring, the judge's extra options). The core never imports this
module: the loss receives the switch table as data (``CAVPrefConfig.switch_table``, or the table prep
writes), see docs/data_prep.md "Adding a task". ``register_task`` also declares the facts the core needs
(name, dimension, abstains, switches) in ``cavpref.task_registry``, so rows, the collator, the loss and the
trainer's ``train_tasks`` accept the task without an edit to the core.

The core reads the same YAML files for its facts (``cavpref.task_registry.BUILTIN_TASKS``) without importing
data_prep; this module turns a file into the full ``TaskSpec``.

This module imports only the core's task registry (and the ``PromptTemplate`` data class), so every layer
may read it without a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from cavpref import task_registry
from cavpref.data_prep.tasks.templates import PromptTemplate
from cavpref.task_registry import DIMENSION_NAMES, TaskInfo


@dataclass(frozen=True)
class TaskSpec:
    """One task's facts (paper Sec. 3, App. A.2, B.1/B.2, Eq. 6)."""

    name: str  # the task name stored in every row ("MCIT", ...)
    dimension: str  # one of DIMENSION_NAMES ("Reference": CLEAN, not an AVTrustBench task)
    abstains: bool  # the correct response is to abstain (no correct option in the base setting)
    switches: tuple[int, int]  # default (eta, gamma) of Eq. 6: visual term, audio term
    sources: tuple[str, ...]  # the source datasets the task draws records from
    templates: tuple[Any, ...]  # (question, instruction) PromptTemplates, >= 5 (paper Tab. 12)
    abstention: str = ""  # chosen response of the base setting (abstaining tasks only)
    abstention_response: str = ""  # short abstention: extra candidate of likelihood scoring (base setting)
    abstention_patterns: tuple[str, ...] = ()  # regexes the choice extraction reads as abstaining (B.2)
    judge_options: tuple[str, ...] = ()  # options the LLM judge is shown in addition (B.2); each = abstain
    released_switches: tuple[int, int] | None = None  # (eta, gamma) of the released code where it differs
    description: str = field(default="", compare=False)

    def __post_init__(self):
        if self.dimension not in DIMENSION_NAMES:
            raise ValueError(
                f"TaskSpec {self.name}: unknown dimension {self.dimension!r} ({DIMENSION_NAMES})"
            )
        if any(s not in (0, 1) for s in self.switches) or len(self.switches) != 2:
            raise ValueError(
                f"TaskSpec {self.name}: switches must be (eta, gamma) of 0/1, got {self.switches}"
            )
        if self.abstains != bool(self.abstention):
            raise ValueError(
                f"TaskSpec {self.name}: an abstaining task needs an abstention sentence (and only it)"
            )
        if len(self.templates) < 5:
            raise ValueError(
                f"TaskSpec {self.name}: {len(self.templates)} templates, at least 5 needed (Tab. 12)"
            )
        if not self.sources:
            raise ValueError(f"TaskSpec {self.name}: no sources")

    def switch_pair(self, variant: str = "paper") -> tuple[int, int]:
        return self.released_switches if variant == "released" and self.released_switches else self.switches

    def info(self) -> TaskInfo:
        """The facts the core needs (``cavpref.task_registry``)."""
        return TaskInfo(self.name, self.dimension, self.abstains, self.switches, self.released_switches)


_TUPLES = ("switches", "released_switches", "sources", "abstention_patterns", "judge_options")


def spec_from_file(path: str | Path) -> TaskSpec:
    """The ``TaskSpec`` of a task file: ``<task>.yaml``, or the path of the module beside it (``__file__``).
    Its ``order`` key is the core's (the task's place in every list); an unknown key, or a template that is
    not ``{question, instruction}``, is an error naming the file."""
    path = Path(path).with_suffix(".yaml")
    facts = task_registry.read_task_file(path)
    facts.pop("order")
    unknown = sorted(set(facts) - {f.name for f in fields(TaskSpec)})
    if unknown:
        raise ValueError(f"{path}: unknown key(s) {unknown}")
    try:
        facts["templates"] = tuple(PromptTemplate(**t) for t in facts.get("templates") or ())
    except TypeError as err:
        raise ValueError(f"{path}: templates: each is {{question: ..., instruction: ...}} ({err})") from None
    for key in _TUPLES:
        if facts.get(key) is not None:
            facts[key] = tuple(facts[key])
    try:
        return TaskSpec(**facts)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{path}: {err}") from None


TASK_SPECS: dict[str, TaskSpec] = {}


def register_task(spec: TaskSpec) -> TaskSpec:
    """Add a task (its module calls this at import); a second spec of the same name is an error."""
    if spec.name in TASK_SPECS and TASK_SPECS[spec.name] != spec:
        raise ValueError(f"task {spec.name!r} is declared twice")
    task_registry.declare_task(spec.info())  # a built-in task's facts must equal the core's
    TASK_SPECS[spec.name] = spec
    return spec


def unregister_task(name: str) -> None:
    """Remove a task added by a module of its own (a test's clean-up); the built-in tasks stay."""
    task_registry.forget_task(name)
    TASK_SPECS.pop(name, None)


def task_spec(name: str) -> TaskSpec:
    try:
        return TASK_SPECS[name]
    except KeyError:
        raise KeyError(f"unknown task {name!r} (declared: {sorted(TASK_SPECS)})") from None


def switch_table(variant: str = "paper") -> dict[str, list[int]]:
    """{task: [eta, gamma]} of every declared task: what prep writes for the trainer's ``switch_table``."""
    return {name: list(spec.switch_pair(variant)) for name, spec in TASK_SPECS.items()}
