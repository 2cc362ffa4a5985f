"""``cavpref prep read [--config R.yaml] --source {music_avqa,avqa,audioset,custom} FILE... [--labels CSV] ...``.

The files are the ``files`` key: ``--files A B`` or, as before, bare file arguments anywhere among the
flags. Prints every record exactly as read (no filtering) as JSON lines on stdout, so a user can check what a
release contains before building; counts (read, skipped by reason, and what the single-modality filter
*would* exclude) go to stderr. ``--as custom`` prints the records as lines of the generic JSONL instead
(docs/your_data.md): a released dataset, or the synthetic world, converted to the user-data schema.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from transformers import HfArgumentParser

from cavpref.data_prep.readers import (
    READERS,
    ReaderConfig,
    ReaderError,
    filter_single_modality,
    read_source,
    to_custom,
)
from cavpref.parsing import config_argv, parse_args

BOOL_WORDS = ("true", "false", "yes", "no", "t", "f", "y", "n", "1", "0")


@dataclass
class ReadArgs(ReaderConfig):
    source: Literal[READERS] = field(
        kw_only=True, metadata={"help": "which dataset format the files are in (required)"}
    )
    print_as: Literal["records", "custom"] = field(
        default="records",
        metadata={
            "help": "records: every QARecord field; custom: lines of the generic JSONL schema (docs/your_data.md)",
            "aliases": ["--as"],
        },
    )
    labels: str | None = field(default=None, metadata={"help": "AudioSet class_labels_indices.csv"})
    ontology: str | None = field(default=None, metadata={"help": "AudioSet ontology.json"})
    files: list[str] = field(
        default_factory=list,
        metadata={
            "help": "annotation files (json / segments csv); bare FILE arguments on the command line set it too"
        },
    )


def files_as_key(argv: Sequence[str]) -> list[str]:
    """Bare arguments (today's ``FILE ...``) -> one ``--files`` list at the end; flags and their values kept.

    Whether a token is a flag's value follows that ``ReadArgs`` key's argparse ``nargs``; a boolean flag
    takes the next token only when it reads as a boolean (so a file after it stays a file). Unknown flags
    are kept for the parser to reject."""
    actions = HfArgumentParser(ReadArgs)._option_string_actions
    argv, kept, files, i = config_argv(argv), [], [], 0
    while i < len(argv):
        token = argv[i]
        action = actions.get(token) if token.startswith("-") else None
        nargs = action.nargs if action is not None else ("one" if token == "--config" else "bare")
        if token.startswith("-") and action is None and token != "--config":
            kept.append(token)  # unknown flag, --help, --key=value: the parser decides
            i += 1
        elif nargs is None or nargs == "one":
            kept += argv[i : i + 2]
            i += 2
        elif nargs == "?":
            value = i + 1 < len(argv) and argv[i + 1].lower() in BOOL_WORDS
            kept += argv[i : i + 1 + value]
            i += 1 + value
        elif nargs in ("+", "*"):
            j = i + 1
            while j < len(argv) and not argv[j].startswith("-"):
                j += 1
            if action.dest == "files":
                files += argv[i + 1 : j]
            else:
                kept += argv[i:j]
            i = j
        elif nargs == "bare":
            files.append(token)
            i += 1
        else:  # nargs == 0: store_true, help
            kept.append(token)
            i += 1
    return kept + (["--files", *files] if files else [])


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        (args,) = parse_args([ReadArgs], files_as_key(argv), prog="cavpref prep read")
        if not args.files:
            raise ValueError("no annotation files given (FILE ... or --files FILE ...)")
    except ValueError as err:
        print(f"cavpref prep read: error: {err}", file=sys.stderr)
        return 2
    try:
        result = read_source(args.source, args.files, args, labels=args.labels, ontology=args.ontology)
    except (ReaderError, ValueError) as err:
        print(f"cavpref prep read: error: {err}", file=sys.stderr)
        return 1
    try:
        for record in result.records:
            row = to_custom(record) if args.print_as == "custom" else record.to_dict()
            sys.stdout.write(json.dumps(row, ensure_ascii=False) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `cavpref prep read ... | head`: the reader of the pipe has seen enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
    _, would_exclude = filter_single_modality(result.records)
    print(
        f"read {result.n_in} records from {len(args.files)} file(s): {len(result.records)} out, "
        f"{sum(result.skipped.values())} skipped",
        file=sys.stderr,
    )
    for reason, n in sorted(result.skipped.items()):
        print(f"  skipped  {n:>7}  {reason}", file=sys.stderr)
    for reason, n in sorted(would_exclude.items()):
        print(f"  single-modality filter would exclude {n:>7}  {reason}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
