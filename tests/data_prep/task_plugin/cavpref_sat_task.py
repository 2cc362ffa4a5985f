"""SAT — Silent Audio Test: a tenth task, declared the way a user adds one (tests/data_prep/test_tenth_task.py).

A module of its own, outside the package: the task's ``TaskSpec`` (its templates, abstention sentence and
patterns, Eq. 6 switches) and its generator. An installed distribution makes it a task of every ``cavpref``
process by naming it under the entry-point group ``cavpref.tasks``::

    [project.entry-points."cavpref.tasks"]
    sat = "cavpref_sat_task"

SAT is MAT's perturbation (the audio track removed) on AVQA's everyday-scene clips, where MAT draws from
MUSIC-AVQA: abstaining is correct, the original answer is rejected, and the audio anchor (γ = 1) pairs that
answer under the clean clip with it under no audio.
"""

from __future__ import annotations

import random

from cavpref.data import SETTINGS
from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tasks.context import Context
from cavpref.data_prep.tasks.drafts import Draft, run
from cavpref.data_prep.tasks.mvt import missing
from cavpref.data_prep.tasks.spec import TaskSpec, register_task
from cavpref.data_prep.tasks.templates import PromptTemplate

TASK = "SAT"
SPEC = register_task(
    TaskSpec(
        name=TASK,
        dimension="Modality-specific dependency",
        abstains=True,
        switches=(0, 1),  # (eta, gamma) of Eq. 6: the audio term only
        sources=("avqa",),
        templates=tuple(
            PromptTemplate(q, i)
            for q, i in (
                ("{question}", "If the clip is silent, answer None of the above."),
                ("Listen to the clip. {question}", "If you hear nothing, choose None of the above."),
                ("Question: {question}", "If the audio is missing, respond with None of the above."),
                ("About this clip: {question}", "Answer None of the above when there is no sound."),
                ("Using the sound, answer: {question}", "Without audio, pick None of the above."),
            )
        ),
        abstention="The clip is silent, so I cannot answer.",
        abstention_response="The clip is silent.",
        abstention_patterns=(r"\b(?:clip|video|audio) is silent\b",),
        judge_options=("The clip is silent / I cannot answer",),
    )
)


def draft(record: QARecord, ctx: Context, rng: random.Random) -> Draft | str:
    return missing(record, ctx, rng, "audio")


def generate(records, tables, *, seed: int, settings=SETTINGS, **kw):
    """SAT items and preference examples; see :func:`cavpref.data_prep.tasks.drafts.run` for the keywords."""
    return run(TASK, draft, records, tables, seed=seed, settings=settings, **kw)
