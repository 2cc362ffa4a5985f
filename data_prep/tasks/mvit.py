"""MVIT — Mismatched Video Identification (paper Sec. 3, App. A.2).

The video is replaced by the video of a clip from a non-overlapping category (T1; see
``Context.find_partner``) while the audio, the question and its plausible options stay those of the
original clip: ``Combine(video=partner, audio=original)``. Abstaining is correct; the rejected response
is the original answer (what a model answering from audio and text alone would say). The visual anchor
(paper Eq. 2) is the original answer under the clean clip vs under the mismatched video.
"""

from __future__ import annotations

import random

from cavpref.data import SETTINGS
from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tasks.context import Context, plausible_options, record_spec
from cavpref.data_prep.tasks.drafts import Draft, run, stream_draft
from cavpref.data_prep.tasks.spec import register_task, spec_from_file
from cavpref.media.spec import combine

SPEC = register_task(spec_from_file(__file__))  # its facts: mvit.yaml beside this file
TASK = SPEC.name


def mismatched(record: QARecord, ctx: Context, rng: random.Random, stream: str) -> Draft | str:
    """Shared by MVIT (``stream="video"``) and MAIT (``"audio"``): swap that stream for a partner's."""
    opts = plausible_options(record, ctx, rng)
    if isinstance(opts, str):
        return opts
    found = ctx.find_partner(record, rng, "qa")
    if isinstance(found, str):
        return found
    partner, check = found
    own, other = record_spec(record), record_spec(partner)
    media = combine(video=other, audio=own) if stream == "video" else combine(video=own, audio=other)
    return stream_draft(
        record, opts, rng, own, media, stream, {"partner": partner.key, "partner_check": check}
    )


def draft(record: QARecord, ctx: Context, rng: random.Random) -> Draft | str:
    return mismatched(record, ctx, rng, "video")


def generate(records, tables, *, seed: int, settings=SETTINGS, **kw):
    """MVIT items and preference examples; see :func:`data_prep.tasks.drafts.run` for the keywords."""
    return run(TASK, draft, records, tables, seed=seed, settings=settings, **kw)
