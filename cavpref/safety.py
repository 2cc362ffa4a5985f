"""Turn opaque low-level failures into errors that say what happened and where (output folders are
``cavpref.output_dir``'s)."""

from __future__ import annotations

import errno
import os
import shutil

_IO_FAILURES = ("iostream error", "file write failed", "PytorchStreamWriter failed")


def disk_full_error(err: BaseException, path: str) -> OSError | None:
    """An ``OSError(ENOSPC)`` naming ``path`` when ``err`` is a full disk, else None.

    torch.save reports a full disk as ``RuntimeError: basic_ios::clear: iostream error`` (or
    ``PytorchStreamWriter failed writing file``); that is taken as ENOSPC when the file system of ``path``
    has (almost) no free space left."""
    if isinstance(err, OSError) and err.errno == errno.ENOSPC:
        pass
    elif isinstance(err, RuntimeError) and any(s in str(err) for s in _IO_FAILURES):
        probe = path
        while probe and not os.path.exists(probe):
            probe = os.path.dirname(probe)
        try:
            if shutil.disk_usage(probe or ".").free > 64 * 2**20:
                return None
        except OSError:
            return None
    else:
        return None
    return OSError(
        errno.ENOSPC,
        f"No space left on device while writing {path} ({err}); free space, then resume "
        "with --resume_from_checkpoint last (the last complete checkpoint is used)",
        path,
    )


def die_with_parent(parent_pid: int | None = None) -> None:
    """Make this (worker) process end when its parent dies, even by ``kill -9``.

    A ``ProcessPoolExecutor`` worker whose parent is killed never learns it: it sleeps on its call queue
    forever. On Linux ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` has the kernel kill it; everywhere, a daemon
    thread also checks once a second that the parent is still the one that started it. Use it as the
    pool's ``initializer`` (with ``os.getpid()`` of the parent as argument)."""
    import signal
    import sys
    import threading
    import time

    parent = parent_pid if parent_pid is not None else os.getppid()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the prctl took effect
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()
