"""One command-line convention for every ``cavpref`` command: TRL's ``TrlParser``.

Every command is a set of config dataclasses (a ``help`` on each field). It is called as::

    cavpref <command> [CONFIG.yaml | --config CONFIG.yaml] [--key value ...]

* the YAML file (``yaml.safe_load``: data, never code) sets the defaults and the command line overrides it;
* an ``env:`` mapping in the file sets environment variables (TRL's behaviour);
* an unknown key, in the file or on the command line, is an error naming it;
* ``--help`` lists every key of every dataclass of the command.

A leading positional ``*.yaml`` is the same as ``--config`` (the alignment-handbook habit:
``accelerate launch scripts/train.py recipes/x.yaml``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from trl import TrlParser

YAML_SUFFIXES = (".yaml", ".yml")


def config_argv(argv: Sequence[str]) -> list[str]:
    """``[CONFIG.yaml, *rest]`` -> ``["--config", CONFIG.yaml, *rest]``; anything else unchanged."""
    argv = list(argv)
    if argv and not argv[0].startswith("-") and argv[0].endswith(YAML_SUFFIXES):
        return ["--config", argv[0], *argv[1:]]
    return argv


def parse_args(types: Sequence[type], argv: Sequence[str], prog: str | None = None) -> tuple[Any, ...]:
    """Parse ``argv`` (config file + overrides) into one instance of each dataclass in ``types``.

    ``--help`` exits (argparse); an unknown key raises ``ValueError`` (config file) or exits (command line),
    naming the key.
    """
    parser = TrlParser(list(types), prog=prog)
    # TrlParser takes --config out of argv before argparse sees it; declared here only so --help shows it.
    parser.add_argument(
        "--config",
        default=argparse.SUPPRESS,
        metavar="CONFIG.yaml",
        help="YAML file of defaults for every key below (the command line overrides it; an env: mapping sets "
        "environment variables)",
    )
    return tuple(parser.parse_args_and_config(args=config_argv(argv), fail_with_unknown_args=True))
