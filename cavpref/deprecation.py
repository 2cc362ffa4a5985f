"""Old public names kept importable for one release, each with one ``FutureWarning`` per process.

Every module that renamed something declares ``__getattr__ = deprecated_aliases(__name__, globals(), {...})``
instead of repeating the lookup-and-warn code.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

_warned: set[str] = set()


def warn_once(key: str, message: str) -> None:
    """A ``FutureWarning`` once per process and key."""
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, FutureWarning, stacklevel=3)


def deprecated_aliases(module: str, namespace: Mapping[str, Any], aliases: Mapping[str, str]) -> Callable:
    """A module ``__getattr__`` resolving each old name in ``aliases`` to its new name in ``namespace``."""

    def __getattr__(name: str):
        if name in aliases:
            new = aliases[name]
            warn_once(
                f"{module}.{name}",
                f"{module}.{name} is deprecated, use {new} (the old name goes in the next release)",
            )
            return namespace[new]
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
