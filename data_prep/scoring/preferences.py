"""Fill the β-calibration scores of preference examples (paper §5: CLAP for β_y, AVSM for β_V and β_A).

    clap_delta   = CLAP(audio of the presented media, y_w) − CLAP(same audio, y_l)
    avsm_delta_v = AVSM(V_w, A_w) − AVSM(V_l, A_w)      from the ``visual`` anchor (clean − perturbed)
    avsm_delta_a = AVSM(V_w, A_w) − AVSM(V_w, A_l)      from the ``audio`` anchor

All scores are in [0, 1] and a missing stream scores 0, so: presented media without audio (MAT) give
``clap_delta = 0``; a perturbed side without video (MVT) or audio (MAT) gives the clean AVSM. An
example without a visual (audio) anchor keeps ``avsm_delta_v`` (``avsm_delta_a``) as None: no term of
the loss uses it. The loss min–max normalises each delta over the batch, so only differences matter.
"""

from __future__ import annotations

import dataclasses
import os

from cavpref.data import NONE_OF_THE_ABOVE, PreferenceExample

from .config import ScoringConfig
from .scorers import Scorers


def derived_vocabulary(prefs: list[PreferenceExample]) -> list[str]:
    """Bridge texts when none is configured: the distinct answer texts of the examples (chosen, rejected,
    anchor responses), without abstentions — the labels the preferences are about."""
    texts = []
    for p in prefs:
        texts += [p.chosen, p.rejected] + [a.response for a in (p.visual, p.audio) if a is not None]
    return sorted({t.strip() for t in texts if t and t.strip() and t.strip() != NONE_OF_THE_ABOVE})


def score_preferences(
    prefs: list[PreferenceExample],
    root: str | os.PathLike,
    config: ScoringConfig,
    scorers: Scorers | None = None,
) -> list[PreferenceExample]:
    """Return copies of ``prefs`` with ``clap_delta``, ``avsm_delta_v`` and ``avsm_delta_a`` filled.

    Every distinct stream is embedded once (batched, cached); pass ``scorers`` to reuse loaded models
    and caches across calls."""
    scorers = scorers or Scorers(config, root)
    if not prefs:
        return []
    clap = scorers.clap
    media = [p.media for p in prefs]
    chosen = clap.score(media, [p.chosen for p in prefs])
    rejected = clap.score(media, [p.rejected for p in prefs])

    anchors = [
        (i, name, pair)
        for i, p in enumerate(prefs)
        for name, pair in (("v", p.visual), ("a", p.audio))
        if pair is not None
    ]
    deltas: dict[tuple[int, str], float] = {}
    if anchors:
        vocabulary = None
        if scorers.avsm.kind == "text_bridge":
            vocabulary = config.load_vocabulary() or derived_vocabulary(prefs)
        specs = sorted({s for _, _, pair in anchors for s in (pair.clean, pair.perturbed)})
        avsm = dict(zip(specs, scorers.avsm.score(specs, vocabulary)))
        deltas = {(i, name): float(avsm[pair.clean] - avsm[pair.perturbed]) for i, name, pair in anchors}

    return [
        dataclasses.replace(
            p,
            clap_delta=float(chosen[i] - rejected[i]),
            avsm_delta_v=deltas.get((i, "v")),
            avsm_delta_a=deltas.get((i, "a")),
        )
        for i, p in enumerate(prefs)
    ]
