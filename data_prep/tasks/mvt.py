"""MVT — Missing Video Detection (paper Sec. 3, App. A.2).

The video stream is removed (``drop_video``): only questions that need both modalities are used (the
build's single-modality filter; records labelled single-modality are skipped here too), so with the video
gone no option can be justified. The options are the original answer plus T3 answers of the category;
abstaining ("the video is missing") is correct and the original answer is the rejected response. The
visual anchor pairs the original answer under the clean clip with it under no video (paper: V_l = none).
"""

from __future__ import annotations

import random

from cavpref.data import SETTINGS
from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tasks.common import SINGLE_MODALITY_LABELS
from cavpref.data_prep.tasks.context import Context, plausible_options, record_spec
from cavpref.data_prep.tasks.drafts import Draft, run, stream_draft
from cavpref.data_prep.tasks.spec import register_task, spec_from_file
from cavpref.media.spec import drop_video, mute

SPEC = register_task(spec_from_file(__file__))  # its facts: mvt.yaml beside this file
TASK = SPEC.name


def missing(record: QARecord, ctx: Context, rng: random.Random, stream: str) -> Draft | str:
    """Shared by MVT (``stream="video"``) and MAT (``"audio"``): remove that stream."""
    if record.modality in SINGLE_MODALITY_LABELS:
        return "single-modality question"
    opts = plausible_options(record, ctx, rng)
    if isinstance(opts, str):
        return opts
    own = record_spec(record)
    media = drop_video(own) if stream == "video" else mute(own)
    return stream_draft(record, opts, rng, own, media, stream)


def draft(record: QARecord, ctx: Context, rng: random.Random) -> Draft | str:
    return missing(record, ctx, rng, "video")


def generate(records, tables, *, seed: int, settings=SETTINGS, **kw):
    """MVT items and preference examples; see :func:`data_prep.tasks.drafts.run` for the keywords."""
    return run(TASK, draft, records, tables, seed=seed, settings=settings, **kw)
