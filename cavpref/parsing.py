"""One command-line convention for every ``cavpref`` command: TRL's ``TrlParser``.

Every command is a set of config dataclasses (a ``help`` on each field). It is called as::

    cavpref <command> [CONFIG.yaml | --config CONFIG.yaml] [--key value ...]

* the YAML file (``load_yaml``: ``yaml.safe_load``, data, never code, with aliases bounded) sets the defaults
  and the command line overrides it;
* an ``env:`` mapping in the file sets environment variables (TRL's behaviour);
* an unknown key, in the file or on the command line, is an error naming it, and so is a file value of the
  wrong type (``check_config``: a list where a string is expected, a list of lists, ...);
* ``--help`` lists the command's own keys (declared in ``cavpref``, outside the dataclass's ``help_groups``, and
  the inherited keys it names in ``help_inherited``);
  ``--help_all`` adds the grouped ones (e.g. the quickstart's preset-controlled sizes) and those a dataclass
  inherits from TRL / transformers (``cavpref train``'s ``TrainingArguments``), one section each.

A leading positional ``*.yaml`` is the same as ``--config`` (the alignment-handbook habit:
``accelerate launch scripts/train.py recipes/x.yaml``).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

import yaml
from trl import TrlParser

YAML_SUFFIXES = (".yaml", ".yml")
HELP_FLAGS = ("-h", "--help", "--help_all")
CONFIG_HELP = (
    "YAML file of defaults for every key below (the command line overrides it; an env: mapping sets "
    "environment variables)"
)
# values a YAML document may expand to once its aliases are followed (a recipe has a few hundred): a
# "billion laughs" file of a few hundred bytes hung every command that printed or copied its values
MAX_YAML_VALUES = 100_000


class YAMLLimitError(ValueError):
    """A YAML file whose aliases expand past ``MAX_YAML_VALUES`` (or nest too deeply); names the file."""


def _expanded_size(node, where: str, memo: dict[int, int | None]) -> int:
    """Scalars, sequences and mappings the composed ``node`` stands for with every alias followed
    (an alias reuses its anchor's node, so shared nodes are counted from ``memo``, never walked twice)."""
    key = id(node)
    if key in memo:
        if memo[key] is None:
            raise YAMLLimitError(f"{where}: a YAML alias refers to itself (a recursive anchor)")
        return memo[key]
    memo[key] = None
    n = 1
    if isinstance(node, yaml.SequenceNode):
        n += sum(_expanded_size(child, where, memo) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        n += sum(_expanded_size(k, where, memo) + _expanded_size(v, where, memo) for k, v in node.value)
    if n > MAX_YAML_VALUES:
        raise YAMLLimitError(
            f"{where}: its YAML aliases expand to more than {MAX_YAML_VALUES} values (an alias bomb?); "
            "write the values out instead of nesting aliases"
        )
    memo[key] = n
    return n


def load_yaml(path: str) -> Any:
    """THE YAML loader of the project: ``yaml.safe_load`` of ``path`` (data, never code), refused with one
    line naming the file when its aliases expand past ``MAX_YAML_VALUES`` values — checked on the composed
    document, before any value is built, printed or copied — or when it nests too deeply."""
    with open(path, encoding="utf-8") as f:
        loader = yaml.SafeLoader(f.read())
    try:
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _expanded_size(node, str(path), {})
            return loader.construct_document(node)
        except RecursionError:
            raise YAMLLimitError(f"{path}: YAML nested too deeply") from None
    finally:
        loader.dispose()


def config_argv(argv: Sequence[str]) -> list[str]:
    """``[CONFIG.yaml, *rest]`` -> ``["--config", CONFIG.yaml, *rest]``; anything else unchanged."""
    argv = list(argv)
    if argv and not argv[0].startswith("-") and argv[0].endswith(YAML_SUFFIXES):
        return ["--config", argv[0], *argv[1:]]
    return argv


def parse_args(types: Sequence[type], argv: Sequence[str], prog: str | None = None) -> tuple[Any, ...]:
    """Parse ``argv`` (config file + overrides) into one instance of each dataclass in ``types``.

    ``--help`` exits; an unknown key, in the file or on the command line (spelled in full: no argparse prefix
    matching), raises ``ValueError`` naming the key.
    """
    help_flags = [a for a in argv if a in HELP_FLAGS]
    if help_flags:
        print(format_help(types, prog, full="--help_all" in help_flags))
        raise SystemExit(0)
    # no prefix matching: `--max_step 2` is an unknown key, not max_steps (argparse abbreviates by default)
    parser = TrlParser(list(types), prog=prog, allow_abbrev=False)
    # TrlParser takes --config out of argv before argparse sees it; declared here only so --help shows it.
    parser.add_argument(
        "--config",
        default=argparse.SUPPRESS,
        metavar="CONFIG.yaml",
        help=CONFIG_HELP,
    )
    argv = config_argv(argv)
    check_flags(parser, argv, prog)
    if "--config" in argv[:-1]:  # checked here (bounded aliases, value types) before TrlParser loads it
        check_config(argv[argv.index("--config") + 1], types)
    return tuple(parser.parse_args_and_config(args=argv, fail_with_unknown_args=True))


def check_flags(parser: argparse.ArgumentParser, argv: Sequence[str], prog: str | None) -> None:
    """Every ``--key`` of ``argv`` is a key of the command, spelled in full: one line naming an unknown one and
    the key it is closest to (argparse's own message lists the leftover tokens as a Python list)."""
    known = parser._option_string_actions  # argparse's table of option strings; no public accessor
    for token in argv:
        if not token.startswith("--") or token == "--":
            continue
        key = token.partition("=")[0]
        if key not in known:
            close = difflib.get_close_matches(key, [k for k in known if k.startswith("--")], n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ValueError(f"unknown key {key}{hint}; `{prog or 'cavpref'} --help` lists the keys")


def check_config(path: str, types: Sequence[type]) -> None:
    """A config file is a YAML mapping whose values fit their fields' annotations (``recipe_types``): argparse
    takes file values as defaults unchecked, so ``tasks: MCIT`` reached the code as the letters M, C, I, T
    and ``post_prompt: [a, b]`` failed deep in the prompt code. One line naming the file and the key."""
    from cavpref.recipe_types import RecipeTypeError, check_recipe_types

    config = load_yaml(path)
    if config is None:
        return
    if not isinstance(config, dict):
        raise RecipeTypeError(
            f"{path}: a config file must be a YAML mapping of keys, got {type(config).__name__}"
        )
    odd = [k for k in config if not isinstance(k, str)]
    if odd:  # TrlParser: "keywords must be strings"
        raise RecipeTypeError(
            f"{path}: key {odd[0]!r} is not a string (YAML reads yes / no / on / off as booleans)"
        )
    check_recipe_types({k: v for k, v in config.items() if k != "env"}, types, path)


def _declared_here(cls: type, name: str) -> bool:
    """Whether ``name`` is declared (or re-declared) by ``cls`` itself or a ``cavpref`` class in its MRO, not
    only inherited from a library's class (TRL's ``DPOConfig``, transformers' ``TrainingArguments``)."""
    return any(
        name in vars(k).get("__annotations__", {}) and (k is cls or k.__module__.split(".")[0] == "cavpref")
        for k in cls.__mro__
    )


def _section(cls: type, f: dataclasses.Field) -> str | None:
    """The ``--help_all`` section of a field; None for the keys ``--help`` shows (a class's own, and the
    inherited ones it names in ``help_inherited``: ``cavpref train``'s learning_rate, max_steps, ...)."""
    if not _declared_here(cls, f.name) and f.name not in getattr(cls, "help_inherited", ()):
        base = next(k for k in cls.__mro__ if f.name in vars(k).get("__annotations__", {}))
        return f"inherited from {base.__module__.split('.')[0]} ({base.__name__})"
    return getattr(cls, "help_groups", {}).get(f.name)


def _value(f: dataclasses.Field) -> str:
    if f.metadata.get("choices"):
        return "{" + ",".join(map(str, f.metadata["choices"])) + "}"
    kind = str(f.type)
    if "bool" in kind:
        return "[true|false]"
    if "list" in kind:
        return "X [X ...]"
    return f.name.upper()


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return "required"


def _entry(f: dataclasses.Field, width: int) -> str:
    head = f"  --{f.name} {_value(f)}"
    text = str(f.metadata.get("help", "")).strip()
    default = _default(f)
    if default is not None and "(default" not in text:
        text += f" (default: {default})"
    body = textwrap.wrap(text, width=max(40, width - 8)) or [""]
    return "\n".join([head, *("        " + line for line in body)])


def format_help(types: Sequence[type], prog: str | None, *, full: bool = False) -> str:
    """``--help`` (the command's own keys) or ``--help_all`` (every key, one section per group) as text."""
    prog = prog or sys.argv[0]
    width = 110
    sections: dict[str | None, list[str]] = {None: [_entry_config(width)]}
    for cls in types:
        for f in dataclasses.fields(cls):
            if f.init:
                sections.setdefault(_section(cls, f), []).append(_entry(f, width))
    lines = [f"usage: {prog} [CONFIG.yaml | --config CONFIG.yaml] [--key value ...]", "", "options:"]
    lines += sections.pop(None)
    hidden = {name: len(entries) for name, entries in sections.items()}
    if full:
        for name, entries in sections.items():
            lines += ["", f"{name}:", *entries]
    elif hidden:
        shown = ", ".join(f"{name}: {n}" for name, n in hidden.items())
        lines += ["", f"{sum(hidden.values())} more keys ({shown}): {prog} --help_all"]
    return "\n".join(lines)


def _entry_config(width: int) -> str:
    body = textwrap.wrap(CONFIG_HELP, width=max(40, width - 8))
    return "\n".join(["  --config CONFIG.yaml", *("        " + line for line in body)])
