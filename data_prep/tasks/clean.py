"""CLEAN — the unperturbed question, its answer among plausible options (not an AVTrustBench task).

Every perturbation is measured against it: the quickstart fine-tunes its starting model on CLEAN (the
paper's "zero-shot" model already answers clean questions), and evaluating CLEAN after preference training
shows whether a model still answers or has learnt to abstain everywhere. The rejected response is a wrong
plausible option, so the same rows also serve a DPO run on clean data.
"""

from __future__ import annotations

import random

from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tasks.common import shuffled
from cavpref.data_prep.tasks.context import Context, plausible_options, record_spec
from cavpref.data_prep.tasks.drafts import Draft, run
from cavpref.data_prep.tasks.spec import TaskSpec, register_task
from cavpref.data_prep.tasks.templates import TEMPLATES

from cavpref.data import CLEAN_TASK, SETTINGS

TASK = CLEAN_TASK
SPEC = register_task(
    TaskSpec(
        name=TASK,
        dimension="Reference",
        abstains=False,
        switches=(0, 0),  # (eta, gamma) of Eq. 6
        sources=("avqa", "music_avqa", "custom"),
        templates=TEMPLATES[TASK],
    )
)


def draft(record: QARecord, ctx: Context, rng: random.Random) -> Draft | str:
    opts = plausible_options(record, ctx, rng)
    if isinstance(opts, str):
        return opts
    opts, (answer, wrong) = shuffled(opts, rng, 0, 1)
    return Draft(record, record.question, opts, answer, wrong, record_spec(record), record.category)


def generate(records, tables, *, seed: int, settings=SETTINGS, **kw):
    """CLEAN items and preference examples; see :func:`data_prep.tasks.drafts.run` for the keywords."""
    return run(TASK, draft, records, tables, seed=seed, settings=settings, **kw)
