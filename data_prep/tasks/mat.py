"""MAT — Missing Audio Detection (paper Sec. 3, App. A.2).

MVT with the audio removed (``mute``): abstaining ("the audio is missing") is correct, the original
answer is rejected, and the audio anchor pairs that answer under the clean clip with it under no audio.
"""

from __future__ import annotations

import random

from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tasks.context import Context
from cavpref.data_prep.tasks.drafts import Draft, run
from cavpref.data_prep.tasks.mvt import missing
from cavpref.data_prep.tasks.spec import TaskSpec, register_task
from cavpref.data_prep.tasks.templates import TEMPLATES

from cavpref.data import SETTINGS

TASK = "MAT"
SPEC = register_task(
    TaskSpec(
        name=TASK,
        dimension="Modality-specific dependency",
        abstains=True,
        switches=(0, 1),  # (eta, gamma) of Eq. 6
        sources=("music_avqa", "custom"),
        templates=TEMPLATES[TASK],
        abstention="The audio is missing, so I cannot answer.",
        abstention_response="The audio is missing.",
        abstention_patterns=(
            "(?:audio|sound)(?: track)? is (?:missing|absent|not (?:present|available|provided))",
            "\\b(?:there is |has |with )?no (?:audio|sound)\\b",
            "\\b(?:video|clip) is (?:silent|muted)",
        ),
        judge_options=("The audio is missing / I cannot answer",),
    )
)


def draft(record: QARecord, ctx: Context, rng: random.Random) -> Draft | str:
    return missing(record, ctx, rng, "audio")


def generate(records, tables, *, seed: int, settings=SETTINGS, **kw):
    """MAT items and preference examples; see :func:`data_prep.tasks.drafts.run` for the keywords."""
    return run(TASK, draft, records, tables, seed=seed, settings=settings, **kw)
