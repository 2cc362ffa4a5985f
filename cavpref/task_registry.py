"""The task set as data: the few facts of each task the core needs, in one table that can grow.

The core (rows, collator, loss, trainer metrics, ``train_tasks``) needs four facts of a task: its name, its
dimension (the evaluator's grouping), whether its correct response is to abstain, and its default Eq. 6
switches (η: visual term, γ: audio term). The paper's nine tasks and ``CLEAN`` are built in.

A built-in task is one unit in data_prep: ``data_prep/tasks/<task>.py`` (its generator) and
``data_prep/tasks/<task>.yaml`` (every fact of it: order, name, dimension, abstains, switches, sources,
templates, abstention sentences and patterns, judge options). :data:`BUILTIN_TASKS` is derived from those
YAML files, read here as package data: the core locates the folder with ``importlib.util.find_spec``, which
finds the installed ``cavpref.data_prep`` without running any of its code, so a training process that never
imports data_prep knows the built-in tasks and the core still imports nothing of data_prep
(``tests/core/test_layering.py``). Why data files, not the generator modules: importing a generator pulls
in the whole prep stage (and would be an import of data_prep by the core); why not a table here: then a task
was edited in the core and in data_prep, and the two had to be kept equal by a test. The ``order`` key of
each file fixes the order of every task list, table, report and generation seed loop (the paper's order,
CLEAN last); file names play no part in it.

A new task is added without editing the core: its data_prep module's ``register_task(TaskSpec(...))``
declares its facts here (:func:`declare_task`), and a training process that never imports data_prep learns
them from the table prep writes into ``manifest.json`` (``tasks``, read back with :func:`declare_table`). The
core never imports data_prep: facts flow in as data.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

DIMENSION_NAMES = (
    "Adversarial attack",
    "Compositional reasoning",
    "Modality-specific dependency",
    "Reference",
)
REFERENCE = "Reference"  # CLEAN's dimension: the unperturbed questions, not an AVTrustBench task
SWITCH_VARIANTS = ("paper", "released")


@dataclass(frozen=True)
class TaskInfo:
    """What the core knows of one task (data_prep's ``TaskSpec`` holds the rest)."""

    name: str
    dimension: str
    abstains: bool
    switches: tuple[int, int]  # default (eta, gamma) of Eq. 6
    released_switches: tuple[int, int] | None = None  # the released code's (eta, gamma) where it differs

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"task name must be a non-empty string, got {self.name!r}")
        if self.dimension not in DIMENSION_NAMES:
            raise ValueError(f"task {self.name}: unknown dimension {self.dimension!r} ({DIMENSION_NAMES})")
        for what, pair in (("switches", self.switches), ("released_switches", self.released_switches)):
            if pair is None and what == "released_switches":
                continue
            if len(pair) != 2 or any(s not in (0, 1) for s in pair):
                raise ValueError(f"task {self.name}: {what} must be (eta, gamma) of 0/1, got {pair}")
        object.__setattr__(self, "switches", tuple(int(s) for s in self.switches))
        if self.released_switches is not None:
            object.__setattr__(self, "released_switches", tuple(int(s) for s in self.released_switches))

    def switch_pair(self, variant: str = "paper") -> tuple[int, int]:
        if variant not in SWITCH_VARIANTS:
            raise ValueError(f"unknown switch variant {variant!r}; expected 'paper' or 'released'")
        return self.released_switches if variant == "released" and self.released_switches else self.switches

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["switches"] = list(self.switches)
        d["released_switches"] = list(self.released_switches) if self.released_switches else None
        return d


TASK_FILES_PACKAGE = "cavpref.data_prep"  # the built-in task files: <its folder>/tasks/*.yaml
_CORE_KEYS = ("order", "name", "dimension", "abstains", "switches")  # the keys the core reads (and needs)


def builtin_task_folder() -> Path:
    """The folder of the built-in task files (``data_prep/tasks/``), found without importing data_prep:
    ``find_spec`` of a sub-package imports its parent (``cavpref``) only, and the folder is where the
    package's files are installed (an editable install maps it to the checkout's ``data_prep/``)."""
    spec = importlib.util.find_spec(TASK_FILES_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"{TASK_FILES_PACKAGE} is not installed: the built-in task files live in it")
    return Path(next(iter(spec.submodule_search_locations))) / "tasks"


def read_task_file(path: str | Path) -> dict[str, Any]:
    """One task file as a dict; a file that is not a mapping with the core's keys is an error naming it."""
    path = Path(path)
    try:
        facts = yaml.load(
            path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        )
    except (OSError, yaml.YAMLError) as err:
        raise ValueError(f"{path}: not a readable task file ({' '.join(str(err).split())})") from None
    # one error type (ValueError) for every fault of a file, a wrong type included
    if not isinstance(facts, dict):
        problem = f"a task file is a mapping of keys, got {type(facts).__name__}"
    elif missing := [k for k in _CORE_KEYS if k not in facts]:
        problem = f"missing key(s) {missing} (a task file has {list(_CORE_KEYS)} and more)"
    elif not isinstance(facts["order"], int) or isinstance(facts["order"], bool):
        problem = f"order must be an integer, got {facts['order']!r}"
    elif not isinstance(facts["abstains"], bool):
        problem = f"abstains must be true or false, got {facts['abstains']!r}"
    else:
        problem = None
    if problem:
        raise ValueError(f"{path}: {problem}")
    return facts


def info_from_facts(facts: Mapping[str, Any], where: str) -> TaskInfo:
    """The core's :class:`TaskInfo` of a task file's facts; an error names ``where``."""
    try:
        released = facts.get("released_switches")
        return TaskInfo(
            name=facts["name"],
            dimension=facts["dimension"],
            abstains=facts["abstains"],
            switches=tuple(facts["switches"]),
            released_switches=tuple(released) if released else None,
        )
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"{where}: {err}") from None


def load_builtin_tasks(folder: str | Path | None = None) -> tuple[TaskInfo, ...]:
    """The built-in tasks of every ``*.yaml`` file of ``folder`` (default :func:`builtin_task_folder`), in
    the order of their ``order`` keys (two files with one order, or one name, are an error naming both)."""
    folder = Path(folder) if folder is not None else builtin_task_folder()
    files = sorted(folder.glob("*.yaml"))
    if not files:
        raise FileNotFoundError(f"{folder}: no built-in task files (*.yaml)")
    entries: list[tuple[int, Path, TaskInfo]] = []
    for path in files:
        facts = read_task_file(path)
        info = info_from_facts(facts, str(path))
        for order, other, known in entries:
            if order == facts["order"] or known.name == info.name:
                what = f"order {order}" if order == facts["order"] else f"name {info.name!r}"
                raise ValueError(f"{path}: {what} is also {other}'s")
        entries.append((facts["order"], path, info))
    return tuple(info for _, _, info in sorted(entries, key=lambda e: e[0]))


BUILTIN_TASKS: tuple[TaskInfo, ...] = load_builtin_tasks()
_BUILTIN_NAMES = frozenset(t.name for t in BUILTIN_TASKS)
_REGISTRY: dict[str, TaskInfo] = {t.name: t for t in BUILTIN_TASKS}


def declare_task(info: TaskInfo) -> TaskInfo:
    """Add a task (idempotent); the same name with other facts is an error, naming both."""
    old = _REGISTRY.get(info.name)
    if old is not None and old != info:
        raise ValueError(f"task {info.name!r} is declared twice with different facts: {old} vs {info}")
    _REGISTRY[info.name] = info
    return info


def forget_task(name: str) -> None:
    """Remove a declared (not built-in) task: a test's clean-up, or a plugin unloaded."""
    if name in _BUILTIN_NAMES:
        raise ValueError(f"task {name!r} is built in and cannot be removed")
    _REGISTRY.pop(name, None)


def is_task(name: Any) -> bool:
    return isinstance(name, str) and name in _REGISTRY


def task_info(name: str) -> TaskInfo:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown task {name!r}; expected one of {task_names()}") from None


def task_names() -> tuple[str, ...]:
    """Every declared task, built-ins first (the paper's order, then CLEAN), then in declaration order."""
    return tuple(_REGISTRY)


def benchmark_tasks() -> tuple[str, ...]:
    """The perturbation tasks (every task but the reference CLEAN)."""
    return tuple(n for n, t in _REGISTRY.items() if t.dimension != REFERENCE)


def abstain_tasks() -> tuple[str, ...]:
    return tuple(n for n, t in _REGISTRY.items() if t.abstains)


def dimensions() -> dict[str, tuple[str, ...]]:
    """{dimension: its tasks} over the declared tasks (the reference excluded), in DIMENSION_NAMES order."""
    out = {d: tuple(n for n, t in _REGISTRY.items() if t.dimension == d) for d in DIMENSION_NAMES[:3]}
    return {d: ts for d, ts in out.items() if ts}


def switch_table(variant: str = "paper") -> dict[str, tuple[int, int]]:
    """{task: (eta, gamma)} of every declared task."""
    return {n: t.switch_pair(variant) for n, t in _REGISTRY.items()}


def task_table(names: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    """The declared tasks' facts as JSON-able data (what prep writes to ``manifest.json`` under ``tasks``)."""
    return {n: _REGISTRY[n].to_dict() for n in (names if names is not None else _REGISTRY)}


def declare_table(table: Mapping[str, Mapping[str, Any]], where: str = "task table") -> list[str]:
    """Declare every task of a :func:`task_table` (e.g. read from a prep ``manifest.json``); returns the names
    that were not declared before. A fact that disagrees with a declared task is an error naming ``where``."""
    added = []
    for name, facts in table.items():
        try:
            info = TaskInfo(
                name=name,
                dimension=facts["dimension"],
                abstains=bool(facts["abstains"]),
                switches=tuple(facts["switches"]),
                released_switches=(
                    tuple(facts["released_switches"]) if facts.get("released_switches") else None
                ),
            )
        except (KeyError, TypeError) as err:
            raise ValueError(f"{where}: task {name!r}: bad entry {dict(facts)!r} ({err})") from None
        if name not in _REGISTRY:
            added.append(name)
        try:
            declare_task(info)
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
    return added


def order(names: Iterable[str]) -> list[str]:
    """``names`` in declaration order; names no task declares come last, sorted."""
    names = set(names)
    return [n for n in _REGISTRY if n in names] + sorted(names - set(_REGISTRY))
