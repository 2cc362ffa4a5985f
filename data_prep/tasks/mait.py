"""MAIT — Mismatched Audio Identification (paper Sec. 3, App. A.2).

MVIT with the streams exchanged: the audio comes from a clip of a non-overlapping category (T1),
``Combine(video=original, audio=partner)``; abstaining is correct, the rejected response is the original
answer, and the audio anchor (paper Eq. 3) is that answer under the clean clip vs the mismatched audio.
"""

from __future__ import annotations

import random

from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tasks.context import Context
from cavpref.data_prep.tasks.drafts import Draft, run
from cavpref.data_prep.tasks.mvit import mismatched
from cavpref.data_prep.tasks.spec import TaskSpec, register_task
from cavpref.data_prep.tasks.templates import TEMPLATES

from cavpref.data import SETTINGS

TASK = "MAIT"
SPEC = register_task(
    TaskSpec(
        name=TASK,
        dimension="Adversarial attack",
        abstains=True,
        switches=(0, 1),  # (eta, gamma) of Eq. 6
        sources=("avqa", "music_avqa", "custom"),
        templates=TEMPLATES[TASK],
        abstention="The audio is incompatible with the question and the video, so I cannot answer.",
        abstention_response="The audio is incompatible with the question.",
        abstention_patterns=(
            "(?:audio|sound|soundtrack)s? (?:is|are) (?:incompatible|inconsistent|unrelated|mismatched)",
            "(?:audio|sound)s? (?:does not|doesn't|do not) (?:match|correspond|relate)",
            "(?:video|visual|audio) and (?:the )?(?:question|audio|video) (?:are|is) (?:mismatched|incompatible)",
            "\\bmismatch",
        ),
        judge_options=("The audio is incompatible with the question / I cannot answer",),
    )
)


def draft(record: QARecord, ctx: Context, rng: random.Random) -> Draft | str:
    return mismatched(record, ctx, rng, "audio")


def generate(records, tables, *, seed: int, settings=SETTINGS, **kw):
    """MAIT items and preference examples; see :func:`data_prep.tasks.drafts.run` for the keywords."""
    return run(TASK, draft, records, tables, seed=seed, settings=settings, **kw)
