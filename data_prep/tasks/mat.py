"""MAT — Missing Audio Detection (paper Sec. 3, App. A.2).

MVT with the audio removed (``mute``): abstaining ("the audio is missing") is correct, the original
answer is rejected, and the audio anchor pairs that answer under the clean clip with it under no audio.
"""

from __future__ import annotations

import random

from cavpref.data import SETTINGS
from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tasks.context import Context
from cavpref.data_prep.tasks.drafts import Draft, run
from cavpref.data_prep.tasks.mvt import missing
from cavpref.data_prep.tasks.spec import register_task, spec_from_file

SPEC = register_task(spec_from_file(__file__))  # its facts: mat.yaml beside this file
TASK = SPEC.name


def draft(record: QARecord, ctx: Context, rng: random.Random) -> Draft | str:
    return missing(record, ctx, rng, "audio")


def generate(records, tables, *, seed: int, settings=SETTINGS, **kw):
    """MAT items and preference examples; see :func:`data_prep.tasks.drafts.run` for the keywords."""
    return run(TASK, draft, records, tables, seed=seed, settings=settings, **kw)
