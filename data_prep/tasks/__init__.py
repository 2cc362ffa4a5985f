"""The nine AVTrustBench task generators (paper Sec. 3, App. A.2), each declaring its ``TaskSpec``.

Each module has ``generate(records, tables, *, seed, settings=("base", "instruction"), **kw) ->
(list[BenchmarkItem], list[PreferenceExample])``; ``GENERATORS`` maps the task name to it and
``generate_all`` runs several over one shared :class:`~data_prep.tasks.context.Context`.
Keywords (all optional): ``context``, ``options`` (TaskOptions), ``select`` (which records to generate
for, e.g. one shard; partners still come from all records), ``partner_key`` (partners must share it,
e.g. the train/test split), ``skips`` (a Counter receiving 'eligible' and the skip reasons),
``ontology`` (the AudioSet ontology or its path: which segments are single-event).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from cavpref.data_prep.tasks import cat, clean, cot_stitch, cot_swap, icit, mait, mat, mcit, mvit, mvt
from cavpref.data_prep.tasks.common import LLMConfig, TaskError, TaskOptions, item_prompt
from cavpref.data_prep.tasks.context import Context, TableView, make_context
from cavpref.data_prep.tasks.drafts import Draft
from cavpref.data_prep.tasks.spec import TASK_SPECS, TaskSpec, register_task, switch_table, task_spec

from cavpref.data import ALL_TASKS, SETTINGS, TASKS, BenchmarkItem, PreferenceExample
from cavpref.prompts import render_prompt

GENERATORS: dict[str, Callable] = {
    m.TASK: m.generate for m in (mcit, icit, mvit, mait, cot_stitch, cot_swap, cat, mvt, mat, clean)
}
assert tuple(GENERATORS) == ALL_TASKS and set(TASK_SPECS) == set(ALL_TASKS)
# Views of the specs, for readers that want one fact of every task.
TEMPLATES = {name: spec.templates for name, spec in TASK_SPECS.items()}
ABSTENTIONS = {name: spec.abstention for name, spec in TASK_SPECS.items() if spec.abstains}

__all__ = [
    "ABSTENTIONS",
    "GENERATORS",
    "TASK_SPECS",
    "TEMPLATES",
    "Context",
    "Draft",
    "LLMConfig",
    "TableView",
    "TaskError",
    "TaskOptions",
    "TaskSpec",
    "generate_all",
    "item_prompt",
    "make_context",
    "register_task",
    "render_prompt",
    "switch_table",
    "task_spec",
]


def generate_all(
    records,
    tables,
    *,
    seed: int,
    tasks: Sequence[str] = TASKS,
    settings: Sequence[str] = SETTINGS,
    context: Context | None = None,
    **kw,
) -> tuple[list[BenchmarkItem], list[PreferenceExample], dict[str, Counter]]:
    """Run ``tasks`` over one shared context: (items, preference examples, skip counters per task)."""
    unknown = [t for t in tasks if t not in GENERATORS]
    if unknown:
        raise ValueError(f"unknown task(s) {unknown} (expected some of {ALL_TASKS})")
    context_kw = {k: kw.pop(k) for k in ("options", "partner_key", "ontology") if k in kw}
    ctx = context or make_context(records, tables, seed=seed, **context_kw)
    items, prefs, skips = [], [], {}
    for task in tasks:
        skips[task] = Counter()
        i, p = GENERATORS[task](
            ctx.records, tables, seed=seed, settings=settings, context=ctx, skips=skips[task], **kw
        )
        items += i
        prefs += p
    return items, prefs, skips
