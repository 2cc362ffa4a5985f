"""The CPU numerics of a run — thread count and instruction set — fixed explicitly, so that the same recipe gives
the same weights on any machine (docs/reproducibility.md).

Threads. On one machine a run with 2 intra-op threads and one with 1 thread end with different weights (up to
2e-8 after 10 steps of the quickstart's start SFT, 51 of 61 tensors; the CPU kernels' reductions are split by
thread), while 2 threads with and without a competing CPU-bound process give identical bits. torch takes its
count from the environment (``OMP_NUM_THREADS``, else the CPUs the process may use); ``pin_threads`` sets it
from the recipe instead.

Instruction set. torch's CPU kernels (ATen), oneDNN and MKL each pick code for the CPU they run on: on a machine
with AVX-512, 3 training steps of a tiny thinker end with 54 of 61 tensors different (max 2.0e-6) from the same
steps with AVX2 code, i.e. from what a CPU without AVX-512 computes. ``pin_cpu_isa("avx2")`` makes all three
use their AVX2 code (``ATEN_CPU_CAPABILITY``, ``ONEDNN_MAX_CPU_ISA``, ``MKL_CBWR``), which every x86-64 CPU
of the last decade runs, so AVX-512 and AVX2 machines compute the same bits. The libraries read these once,
at their first use in a process: pin before any torch computation.
"""

from __future__ import annotations

import os
import platform

from transformers.utils import logging

logger = logging.get_logger(__name__)

CPU_ISAS = ("avx2", "native")
# what each library reads to cap its code at AVX2 (MKL_CBWR: MKL's "conditional numerical reproducibility")
AVX2_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "AVX2"}


_DEFAULTED: set[str] = set()  # the variables default_cpu_isa set (not the shell)


def _x86() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")


def default_cpu_isa() -> None:
    """The AVX2 variables, unless the shell set them: what every ``cavpref`` command (``prep`` and ``eval``
    included, which have no ``cpu_isa`` key) starts with. A recipe's ``cpu_isa: native`` removes them again."""
    if not _x86():
        return
    for var, value in AVX2_ENV.items():
        if var not in os.environ:
            os.environ[var] = value
            _DEFAULTED.add(var)


def pin_cpu(num_threads: int, cpu_isa: str) -> None:
    """``pin_cpu_isa(cpu_isa)`` then ``pin_threads(num_threads)``: the recipe's CPU numerics, at a run's start."""
    pin_cpu_isa(cpu_isa)
    pin_threads(num_threads)


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


def pin_cpu_isa(cpu_isa: str) -> str:
    """Cap torch's CPU kernels, oneDNN and MKL at AVX2 code (``"avx2"``) or leave each its own choice
    (``"native"``). Overrides those variables from the shell, as the recipe's ``num_threads`` overrides
    ``OMP_NUM_THREADS``. Returns torch's CPU capability in use (``"AVX2"``, ``"AVX512"``, ...)."""
    import torch

    if cpu_isa not in CPU_ISAS:
        raise ValueError(f"cpu_isa must be one of {CPU_ISAS}, got {cpu_isa!r}")
    if cpu_isa == "native":
        for var in _DEFAULTED:  # the shell's own settings stay
            os.environ.pop(var, None)
        _DEFAULTED.clear()
    if cpu_isa == "native" or not _x86():
        return torch.backends.cpu.get_cpu_capability()
    os.environ.update(AVX2_ENV)
    _DEFAULTED.clear()
    used = torch.backends.cpu.get_cpu_capability()  # ATen chooses at its first kernel call, then keeps it
    if used == "AVX512":
        logger.warning(
            "cpu_isa avx2: torch already chose its AVX512 kernels in this process (it computed something "
            "before the run pinned the instruction set), so this run's numbers are those of an AVX-512 CPU; "
            "start a fresh process (`cavpref train`), or export ATEN_CPU_CAPABILITY=avx2 before Python starts"
        )
    elif used != "AVX2":
        logger.warning(
            f"cpu_isa avx2: this CPU has no AVX2 (torch uses {used} kernels); its numbers differ from AVX2 "
            "machines'"
        )
    return used
