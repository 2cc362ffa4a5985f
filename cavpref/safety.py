"""Turn opaque low-level failures into errors that say what happened and where."""

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
    return OSError(errno.ENOSPC, f"No space left on device while writing {path} ({err}); free space, then resume "
                                 "with --resume_from_checkpoint last (the last complete checkpoint is used)", path)
