"""CLEAN — the unperturbed question, its answer among plausible options (not an AVTrustBench task).

Every perturbation is measured against it: the quickstart fine-tunes its starting model on CLEAN (the
paper's "zero-shot" model already answers clean questions), and evaluating CLEAN after preference training
shows whether a model still answers or has learnt to abstain everywhere. The rejected response is a wrong
plausible option, so the same rows also serve a DPO run on clean data.
"""

from __future__ import annotations

import random

from cavpref.data import SETTINGS
from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tasks.common import shuffled
from cavpref.data_prep.tasks.context import Context, plausible_options, record_spec
from cavpref.data_prep.tasks.drafts import Draft, run
from cavpref.data_prep.tasks.spec import register_task, spec_from_file

SPEC = register_task(spec_from_file(__file__))  # its facts: clean.yaml beside this file
TASK = SPEC.name


def draft(record: QARecord, ctx: Context, rng: random.Random) -> Draft | str:
    opts = plausible_options(record, ctx, rng)
    if isinstance(opts, str):
        return opts
    opts, (answer, wrong) = shuffled(opts, rng, 0, 1)
    return Draft(record, record.question, opts, answer, wrong, record_spec(record), record.category)


def generate(records, tables, *, seed: int, settings=SETTINGS, **kw):
    """CLEAN items and preference examples; see :func:`data_prep.tasks.drafts.run` for the keywords."""
    return run(TASK, draft, records, tables, seed=seed, settings=settings, **kw)
