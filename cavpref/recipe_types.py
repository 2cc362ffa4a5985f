"""Type-check recipe values by key before they reach the config dataclasses.

A YAML recipe hands values to TRL's / HF's parser as *defaults*, which argparse does not convert or check:
``lambda_a: [1, 2]`` used to surface as ``TypeError: '>' not supported …`` from deep inside
``__post_init__``, without the key. Here every value is checked against its field's annotation (float,
int, bool, str, list, dict and their ``| None`` forms), and an error names the file, the key, the
expected type and the value found.
"""

from __future__ import annotations

import dataclasses
import enum
import reprlib
import types
import typing
from typing import Any

_SIMPLE = {float: "float", int: "int", bool: "bool", str: "str", list: "list", dict: "dict"}


def _hints(cls) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - an unresolvable annotation elsewhere must not hide the others
        return {f.name: f.type for f in dataclasses.fields(cls) if not isinstance(f.type, str)}


def _accepts(tp: Any, value: Any) -> tuple[bool, str]:
    """(does ``value`` fit annotation ``tp``, the annotation in words); unknown annotations accept anything."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        parts = [_accepts(a, value) for a in args if a is not type(None)]
        words = " or ".join(w for _, w in parts) + (" or null" if type(None) in args else "")
        return (value is None and type(None) in args) or any(ok for ok, _ in parts), words
    if origin is typing.Literal:
        choices = typing.get_args(tp)
        return value in choices, f"one of {list(choices)}"
    base = origin or tp
    if isinstance(base, type) and issubclass(base, enum.Enum):
        return isinstance(value, str) or isinstance(value, base), f"one of {[e.value for e in base]}"
    if base is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool), "float"
    if base is int:
        return isinstance(value, int) and not isinstance(value, bool), "int"
    if base is bool:
        return isinstance(value, bool), "bool (true / false)"
    if base is str:
        return isinstance(value, str), "str"
    if base in (list, tuple):
        return isinstance(value, (list, tuple)), "list"
    if base is dict:
        return isinstance(value, dict), "dict"
    return True, str(tp)


def check_recipe_types(values: dict[str, Any], classes, where: str) -> None:
    """Raise ``TypeError`` naming ``where`` and the key for any value of ``values`` that does not fit the
    annotation of the field of that name in ``classes`` (keys no class has are left to the parser)."""
    hints: dict[str, Any] = {}
    for cls in classes:
        hints.update(_hints(cls))
    for key, value in values.items():
        if key in hints:
            ok, words = _accepts(hints[key], value)
            if not ok:
                raise TypeError(
                    f"{where}: key '{key}' must be {words}, got {short_repr(value)} ({type(value).__name__})"
                )


def short_repr(value: Any) -> str:
    """``repr`` cut to a few elements, levels and characters: an error message never expands a huge (or
    alias-shared) value."""
    r = reprlib.Repr()
    r.maxlevel, r.maxlist, r.maxtuple, r.maxdict, r.maxstring, r.maxother = 2, 4, 4, 4, 80, 80
    return r.repr(value)
