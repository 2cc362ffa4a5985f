"""A ^C is never lost: raised where it lands, and raised again at the next safe point if something swallowed it.

Python raises ``KeyboardInterrupt`` wherever the main thread is when SIGINT arrives. When that is inside a
``__del__`` — PyTorch's DataLoader iterator joins its worker processes from ``__del__`` at the end of an epoch,
or whenever a persistent one is collected — the interpreter prints "Exception ignored in ..." and goes on: the
user's one ^C to the quickstart's main process was swallowed and the run kept training (issue 54 #14). Within
``catch_interrupts()`` the SIGINT handler records the interrupt before raising it, and ``check()`` (called by
``InterruptCheck`` at every trainer event and by the quickstart between stages) raises it again.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from transformers import TrainerCallback

_state = {"pending": False, "depth": 0}


def _on_sigint(signum, frame):
    _state["pending"] = True
    raise KeyboardInterrupt


@contextmanager
def catch_interrupts() -> Iterator[None]:
    """SIGINT recorded as well as raised for the length of the block (main thread only; nested blocks share
    one record, cleared when the outermost one ends)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _on_sigint)
    _state["depth"] += 1
    try:
        yield
    finally:
        _state["depth"] -= 1
        signal.signal(signal.SIGINT, previous)
        if _state["depth"] == 0:
            _state["pending"] = False


def check() -> None:
    """Raise ``KeyboardInterrupt`` if a ^C arrived in this block and was swallowed on its way up."""
    if _state["pending"]:
        raise KeyboardInterrupt


class InterruptCheck(TrainerCallback):
    """``check()`` at every step, epoch, save, log and evaluation event of the training loop."""

    def _check(self, args, state, control, **kwargs):
        check()

    on_step_begin = on_substep_end = on_step_end = _check
    on_epoch_begin = on_epoch_end = on_save = on_log = on_evaluate = _check
