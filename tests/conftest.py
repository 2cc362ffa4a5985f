"""Shared fixtures."""

import pytest
import torch

from cavpref.cpu import default_cpu_isa

# What every `cavpref` command starts with (cavpref/cpu.py), set before this process computes anything: the
# suite's in-process runs then use the same CPU code as the subprocesses it launches, which inherit the
# variables once a command has set them.
default_cpu_isa()


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
