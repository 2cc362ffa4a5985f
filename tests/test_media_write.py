"""write_mp4 gives the same file whatever the process's heap holds (libx264 reads memory it never wrote)."""

import ctypes
import subprocess
import sys
from contextlib import nullcontext

import numpy as np
import pytest
from cavpref.data_prep.synthetic.visuals import Placed, render

from cavpref.media import write
from cavpref.media.write import write_mp4

libc = ctypes.CDLL(None)
if not hasattr(libc, "mallopt"):
    pytest.skip("needs glibc (mallopt)", allow_module_level=True)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]

FRAMES = render(  # a world clip: two shapes, one outlined in white while it sounds
    "indoor",
    [Placed((200, 40, 40), "circle", 0, [(0.5, 2.0)]), Placed((40, 40, 200), "square", 2, [(1.0, 3.5)])],
    duration=4.0,
    fps=8.0,
    width=112,
    height=112,
)


def _leave_on_heap(byte):
    """Allocate blocks of the sizes an encoder uses, fill them with ``byte`` and free them, so the next
    allocations reuse memory holding it."""
    blocks = []
    for size in [64, 256, 1024, 4096, 16384, 40000, 65536, 100000] * 40:
        p = libc.malloc(size)
        libc.memset(p, byte, size)
        blocks.append(p)
    for p in blocks:
        libc.free(p)


def _written(path, byte):
    _leave_on_heap(byte)
    write_mp4(path, FRAMES, 8.0)
    return path.read_bytes()


def test_the_file_does_not_depend_on_what_the_heap_held(tmp_path):
    fresh = tmp_path / "fresh.mp4"
    np.save(tmp_path / "frames.npy", FRAMES)
    code = (
        "import sys, numpy as np; from cavpref.media.write import write_mp4; "
        "write_mp4(sys.argv[2], np.load(sys.argv[1]), 8.0)"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "frames.npy"), str(fresh)], check=True)
    for byte in (0xFF, 0x00, 0xFF):  # 0xff runs read as NaN floats
        same = _written(tmp_path / "x.mp4", byte) == fresh.read_bytes()
        assert same, f"heap left holding {byte:#x}: not the file a fresh process writes"


def test_the_heap_did_change_the_file_without_zeroed_allocations(tmp_path, monkeypatch):
    """The fault the guard is for is real here: without it, 0xff left on the heap changes the file."""
    monkeypatch.setattr(write, "zeroed_allocations", nullcontext)
    changed = _written(tmp_path / "a.mp4", 0x00) != _written(tmp_path / "b.mp4", 0xFF)
    assert changed


def test_guard_is_reference_counted_and_nests():
    with write.zeroed_allocations():
        with write.zeroed_allocations():
            assert write._heap_users == 2
        assert write._heap_users == 1
    assert write._heap_users == 0
