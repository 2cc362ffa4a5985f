"""Fixtures shared across the folders (each folder's own are in its conftest.py)."""

import os
import platform

import pytest
import torch

from cavpref.cpu import AVX2_ENV
from tests.helpers import trainer_fixtures as F

# AVX2 code for this process and every subprocess it starts, set as the shell would set it (not as
# `default_cpu_isa` does, whose variables a run with `cpu_isa: native` removes again): then an in-process
# `cavpref train` with the native default (docs/reproducibility.md) cannot switch this process to AVX-512
# kernels part-way through the session, and the suite's in-process runs compute as its subprocesses do (a
# two-process prep equals the in-process build bit for bit only so).
if platform.machine().lower() in ("x86_64", "amd64"):
    for _var, _value in AVX2_ENV.items():
        os.environ.setdefault(_var, _value)


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models gain nothing from intra-op threads; on busy shared cores they lose 5-20x to contention.
    Use with ``pytestmark = pytest.mark.usefixtures("one_thread")``."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def small_world(tmp_path_factory):
    """A small synthetic world (6 clips per source, 64 x 64, 1 s) shared by the prep tests; copy it before
    changing anything in it."""
    from cavpref.data_prep.synthetic.config import WorldConfig
    from cavpref.data_prep.synthetic.world import generate_world

    out = tmp_path_factory.mktemp("small_world") / "w"
    generate_world(
        WorldConfig(out=str(out), seed=3, num_clips=6, workers=1, width=64, height=64, fps=4, duration=1.0)
    )
    return out


@pytest.fixture(scope="module")
def world(small_world):
    """The prep tests' world where any world will do (a file that needs its own declares its own ``world``)."""
    return small_world


@pytest.fixture(scope="session")
def fx(tmp_path_factory):
    """The trainer's shared inputs (media/, prefs/, model/: tests/helpers/trainer_fixtures.py), one per session."""
    return F.shared(tmp_path_factory)
