"""MAIT — Mismatched Audio Identification (paper Sec. 3, App. A.2).

MVIT with the streams exchanged: the audio comes from a clip of a non-overlapping category (T1),
``Combine(video=original, audio=partner)``; abstaining is correct, the rejected response is the original
answer, and the audio anchor (paper Eq. 3) is that answer under the clean clip vs the mismatched audio.
"""

from __future__ import annotations

import random

from cavpref.data import SETTINGS
from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tasks.context import Context
from cavpref.data_prep.tasks.drafts import Draft, run
from cavpref.data_prep.tasks.mvit import mismatched
from cavpref.data_prep.tasks.spec import register_task, spec_from_file

SPEC = register_task(spec_from_file(__file__))  # its facts: mait.yaml beside this file
TASK = SPEC.name


def draft(record: QARecord, ctx: Context, rng: random.Random) -> Draft | str:
    return mismatched(record, ctx, rng, "audio")


def generate(records, tables, *, seed: int, settings=SETTINGS, **kw):
    """MAIT items and preference examples; see :func:`data_prep.tasks.drafts.run` for the keywords."""
    return run(TASK, draft, records, tables, seed=seed, settings=settings, **kw)
