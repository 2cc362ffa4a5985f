"""The CPU thread count of a run, fixed explicitly so that the same recipe gives the same weights anywhere.

Measured (docs/training.md, "Same command, same numbers"): on one machine, a run with 2 intra-op threads and
one with 1 thread end with different weights (up to 2e-8 after 10 steps of the quickstart's start SFT, 51 of
61 tensors; the reduction order of the CPU kernels depends on how many threads split them), while 2 threads
with and without a competing CPU-bound process give identical bits. torch takes its thread count from the
environment (``OMP_NUM_THREADS``, else the CPUs the process may use), so two invocations of the same command
— one in a shell that sets ``OMP_NUM_THREADS=1`` because the machine is busy, one without, or under different
CPU affinity — train different models. ``pin_threads`` sets it from the recipe instead.
"""

from __future__ import annotations

import os

from transformers.utils import logging

logger = logging.get_logger(__name__)


def pin_threads(num_threads: int) -> int:
    """Fix torch's intra-op thread count (``num_threads`` > 0; 0 leaves torch's own choice) and switch off
    OpenMP / MKL dynamic thread adjustment for libraries that read it later. Returns the count in use."""
    import torch

    for var in ("OMP_DYNAMIC", "MKL_DYNAMIC"):
        os.environ.setdefault(var, "FALSE")
    if num_threads > 0:
        if torch.get_num_threads() != num_threads:
            logger.info(
                f"torch intra-op threads: {torch.get_num_threads()} -> {num_threads} (recipe num_threads)"
            )
        torch.set_num_threads(num_threads)
    return torch.get_num_threads()
