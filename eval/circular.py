"""CircularEval (MMBench; AVTrustBench appendix B.3): ask the same question once per option, with the
options circularly shifted, and count it solved only if every pass is right.

Models favour some letters; a single pass rewards that bias on items whose answer happens to sit
there. Passes stop at the first failure (the item is lost either way), which is what keeps N-fold
evaluation affordable; ``passes_saved`` reports how much. Pass 0 is the unrotated question, so the
vanilla (single-pass) accuracy comes out of the same run (paper Table 8).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cavpref.prompts import n_passes, rotate  # the one rotation, shared with the training rows

__all__ = ["CircularOutcome", "circular_outcome", "n_passes", "next_pass", "rotate"]


def next_pass(pass_correct: Sequence[bool], total: int) -> int | None:
    """Index of the pass still to run, or None once the item is decided (a failure, or all passes)."""
    if any(not c for c in pass_correct) or len(pass_correct) >= total:
        return None
    return len(pass_correct)


@dataclass(frozen=True)
class CircularOutcome:
    vanilla: bool  # pass 0 right
    solved: bool  # every pass right
    passes_run: int
    passes_total: int

    @property
    def passes_saved(self) -> int:
        return self.passes_total - self.passes_run


def circular_outcome(pass_correct: Sequence[bool], total: int) -> CircularOutcome:
    """The outcome of a decided item from its pass results in order (see ``next_pass``)."""
    if not pass_correct or next_pass(pass_correct, total) is not None:
        raise ValueError(f"item undecided after {len(pass_correct)} of {total} passes: {list(pass_correct)}")
    return CircularOutcome(
        bool(pass_correct[0]), all(pass_correct) and len(pass_correct) == total, len(pass_correct), total
    )
