"""An encode after the heap was left holding a chosen byte (no tests here): the media-write tests call it in
this process and in a fresh one (``python -c`` from the repository root)."""

from __future__ import annotations

import ctypes

from cavpref.data_prep.synthetic.visuals import Placed, render
from cavpref.media import write
from cavpref.media.write import write_mp4

__all__ = ["FRAMES", "leave_on_heap", "libc", "write", "written"]  # write: the fresh process sets its options


libc = ctypes.CDLL(None)


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


def leave_on_heap(byte):
    """Allocate blocks of the sizes an encoder uses, fill them with ``byte`` and free them, so the next
    allocations reuse memory holding it."""
    blocks = []
    for size in [64, 256, 1024, 4096, 16384, 40000, 65536, 100000] * 40:
        p = libc.malloc(size)
        libc.memset(p, byte, size)
        blocks.append(p)
    for p in blocks:
        libc.free(p)


def written(path, byte):
    leave_on_heap(byte)
    write_mp4(path, FRAMES, 8.0)
    return path.read_bytes()
