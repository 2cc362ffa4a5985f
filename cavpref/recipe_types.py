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


def _converts(kind: type, value: str) -> bool:
    """Whether argparse turns the string default ``value`` into a ``kind`` (it converts string defaults
    with the field's type, so ``lr: 1e-5`` — a string to YAML — is a float by the time it is used)."""
    if kind is bool:
        return value.strip().lower() in ("true", "false", "yes", "no", "y", "n", "1", "0")
    try:
        kind(value)
    except ValueError:
        return False
    return True


def _accepts(tp: Any, value: Any) -> tuple[bool, str]:
    """(does ``value`` fit annotation ``tp``, the annotation in words); unknown annotations accept anything.
    A list's elements (and a dict's values) are checked against its parameter: ``train_tasks: [[MCIT]]``
    used to end in "unhashable type: 'list'"."""
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
        return isinstance(value, (str, base)), f"one of {[e.value for e in base]}"
    if base in (float, int, bool) and isinstance(value, str):
        return _converts(base, value), {float: "float", int: "int", bool: "bool (true / false)"}[base]
    if base is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool), "float"
    if base is int:
        return isinstance(value, int) and not isinstance(value, bool), "int"
    if base is bool:
        return isinstance(value, bool), "bool (true / false)"
    if base is str:
        return isinstance(value, str), "str"
    if base in (list, tuple):
        params = [a for a in typing.get_args(tp) if a is not Ellipsis]
        if not params:
            return isinstance(value, (list, tuple)), "list"
        _, each = _accepts(params[0], None)
        words = f"a list of {each}"
        ok = isinstance(value, (list, tuple)) and all(_accepts(params[0], v)[0] for v in value)
        return ok, words
    if base is dict:
        params = typing.get_args(tp)
        if len(params) != 2:
            return isinstance(value, dict), "dict"
        _, each = _accepts(params[1], None)
        ok = isinstance(value, dict) and all(_accepts(params[1], v)[0] for v in value.values())
        return ok, f"a mapping to {each}"
    return True, str(tp)


class RecipeTypeError(TypeError, ValueError):
    """A config value of the wrong type; a ``ValueError`` too, so every command prints it as its one-line
    error."""


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
                raise RecipeTypeError(
                    f"{where}: key '{key}' must be {words}, got {short_repr(value)} ({type(value).__name__})"
                )


def short_repr(value: Any) -> str:
    """``repr`` cut to a few elements, levels and characters: an error message never expands a huge (or
    alias-shared) value."""
    r = reprlib.Repr()
    r.maxlevel, r.maxlist, r.maxtuple, r.maxdict, r.maxstring, r.maxother = 2, 4, 4, 4, 80, 80
    return r.repr(value)
