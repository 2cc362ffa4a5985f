"""``cavpref train`` and ``scripts/train.py``: the core's training run (``cavpref.train``) with the stages'
extensions added — today the trust evaluation during training (``cavpref.eval.during_training``), which the
core may not import (tests/core/test_layering.py)."""

from __future__ import annotations

from cavpref import train
from cavpref.eval.during_training import trust_callbacks


def main(argv: list[str] | None = None, *, interrupt_line: bool = True) -> int:
    """``cavpref.train.main`` (one-line errors, exit 2; ^C one line, exit 130) with ``trust_eval_steps``
    honoured."""
    return train.main(argv, extensions=(trust_callbacks,), interrupt_line=interrupt_line)


__all__ = ["main"]
