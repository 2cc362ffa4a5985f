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

from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tasks.context import Context, record_spec
from cavpref.data_prep.tasks.cot_stitch import CATEGORY, event_pair, order_options
from cavpref.data_prep.tasks.drafts import Draft, run
from cavpref.data_prep.tasks.spec import TaskSpec, register_task
from cavpref.data_prep.tasks.templates import TEMPLATES

from cavpref.data import SETTINGS
from cavpref.media.spec import combine, concat

TASK = "COT-Swap"
SPEC = register_task(
    TaskSpec(
        name=TASK,
        dimension="Compositional reasoning",
        abstains=True,
        switches=(1, 0),  # (eta, gamma) of Eq. 6
        released_switches=(1, 1),  # the released code also sets gamma
        sources=("audioset", "custom_clips"),
        templates=TEMPLATES[TASK],
        abstention="The visual and the audio are incompatible, so I cannot answer.",
        abstention_response="The visual and the audio are incompatible.",
        abstention_patterns=(
            "(?:visual|video|audio|sound)s? (?:is|are) (?:incompatible|inconsistent|mismatched|out of (?:sync|order))",
            "(?:audio|sound) and (?:the )?(?:video|visual)s? (?:do not|don't) (?:match|correspond|align)",
            "\\bmismatch",
        ),
        judge_options=("The visual and audio are incompatible / I cannot answer",),
    )
)


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
