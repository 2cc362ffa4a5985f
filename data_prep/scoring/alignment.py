"""The AudioSet audio-visual alignment filter (paper, appendix on AudioSet): keep a clip only when its
video and its audio agree, ``T_sim ≥ 0.70``, with text (the AudioSet class names) as the bridge."""

from __future__ import annotations

import dataclasses
import os

from cavpref.data_prep.records import QARecord

from . import maths
from .config import ScoringConfig
from .scorers import Scorers

PAPER_THRESHOLD = 0.70


def alignment_filter(
    records: list[QARecord],
    root: str | os.PathLike,
    config: ScoringConfig,
    threshold: float = PAPER_THRESHOLD,
    scorers: Scorers | None = None,
) -> tuple[list[QARecord], int]:
    """Return ``(kept, dropped_count)``; kept records are copies with ``meta["tsim"]`` set.

    The vocabulary is ``config.vocabulary``/``vocabulary_file`` if set, else every label of the given
    records (so a record's score does not depend on how the records are batched). A clip without video
    or audio scores 0 and is dropped."""
    if not records:
        return [], 0
    scorers = scorers or Scorers(config, root)
    vocabulary = None
    if scorers.avsm.kind == "text_bridge":
        vocabulary = config.load_vocabulary() or sorted({label for r in records for label in r.labels})
        if len(vocabulary) < 2:
            raise ValueError(
                f"alignment_filter: the records carry {len(vocabulary)} distinct label(s) "
                f"({vocabulary}); T_sim needs at least 2 — set ScoringConfig.vocabulary"
            )
    scores = scorers.avsm.score([r.media for r in records], vocabulary)
    keep = maths.keep_mask(scores, threshold)
    kept = [
        dataclasses.replace(r, meta={**r.meta, "tsim": float(s)})
        for r, s, k in zip(records, scores, keep)
        if k
    ]
    return kept, int(len(records) - keep.sum())
