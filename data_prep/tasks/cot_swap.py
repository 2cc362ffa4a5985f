"""COT-Swap — Compositional Order, swapped (paper Sec. 3, App. A.2).

The audio of two dissimilar single-event clips is exchanged and the two are then concatenated:
``Concat([Combine(video=A, audio=B), Combine(video=B, audio=A)])`` — the video says "A, then B", the
audio "B, then A". The options are those of COT-Stitch (in the video's order); no option fits both
streams, so abstaining ("the visual and audio are incompatible") is correct and the rejected response is
the option matching the video order.

Anchors: the visual one (paper Eq. 2, η=1) keeps the presented audio (B, then A) — clean = the
consistent ``Concat([B, A])`` with its "B, then A" option, perturbed = the presented media. The audio one
(the released code's γ=1 for COT-Swap) keeps the presented video: clean ``Concat([A, B])`` with the
"A, then B" option. Which are used is the trainer's switch table.
"""

from __future__ import annotations

import random

from cavpref.data import SETTINGS
from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tasks.context import Context, record_spec
from cavpref.data_prep.tasks.cot_stitch import CATEGORY, event_pair, order_options
from cavpref.data_prep.tasks.drafts import Draft, run
from cavpref.data_prep.tasks.spec import register_task, spec_from_file
from cavpref.media.spec import combine, concat

SPEC = register_task(spec_from_file(__file__))  # its facts: cot_swap.yaml beside this file
TASK = SPEC.name


def draft(record: QARecord, ctx: Context, rng: random.Random) -> Draft | str:
    found = event_pair(record, ctx, rng)
    if isinstance(found, str):
        return found
    partner, a, b, check = found
    made = order_options(a, b, ctx, rng)
    if isinstance(made, str):
        return made
    opts, video_order, audio_order = made
    A, B = record_spec(record), record_spec(partner)
    media = concat(combine(video=A, audio=B), combine(video=B, audio=A))
    return Draft(
        record,
        "",
        opts,
        None,
        video_order,
        media,
        CATEGORY,
        visual=(audio_order, concat(B, A), media),
        audio=(video_order, concat(A, B), media),
        meta={"partner": partner.key, "partner_check": check, "events": [a, b]},
    )


def generate(records, tables, *, seed: int, settings=SETTINGS, **kw):
    """COT-Swap items and preference examples; see :func:`data_prep.tasks.drafts.run` for the keywords."""
    return run(TASK, draft, records, tables, seed=seed, settings=settings, **kw)
