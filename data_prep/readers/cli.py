"""``cavpref prep read --source {music_avqa,avqa,audioset} FILE... [--labels CSV] [--ontology JSON]``.

Prints every record exactly as read (no filtering) as JSON lines on stdout, so a user can check what a
release contains before building; counts (read, skipped by reason, and what the single-modality filter
*would* exclude) go to stderr.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Literal

from transformers import HfArgumentParser

from cavpref.data_prep.readers import ReaderConfig, ReaderError, filter_single_modality, read_source


@dataclass
class ReadArgs(ReaderConfig):
    source: Literal["music_avqa", "avqa", "audioset"] = field(
        kw_only=True, metadata={"help": "which dataset format the files are in (required)"})
    labels: str | None = field(default=None, metadata={"help": "AudioSet class_labels_indices.csv"})
    ontology: str | None = field(default=None, metadata={"help": "AudioSet ontology.json"})


def main(argv: list[str] | None = None) -> int:
    parser = HfArgumentParser(ReadArgs, prog="cavpref prep read",
                              description="Print source records as JSON lines, unfiltered.")
    parser.add_argument("files", nargs="+", metavar="FILE", help="annotation files (json / segments csv)")
    args, extra = parser.parse_args_into_dataclasses(args=sys.argv[1:] if argv is None else argv,
                                                     look_for_args_file=False)
    try:
        result = read_source(args.source, extra.files, args, labels=args.labels, ontology=args.ontology)
    except (ReaderError, ValueError) as err:
        print(f"cavpref prep read: error: {err}", file=sys.stderr)
        return 1
    try:
        for record in result.records:
            sys.stdout.write(json.dumps(record.to_dict(), ensure_ascii=False) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # `cavpref prep read ... | head`: the reader of the pipe has seen enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
    _, would_exclude = filter_single_modality(result.records)
    print(f"read {result.n_in} records from {len(extra.files)} file(s): {len(result.records)} out, "
          f"{sum(result.skipped.values())} skipped", file=sys.stderr)
    for reason, n in sorted(result.skipped.items()):
        print(f"  skipped  {n:>7}  {reason}", file=sys.stderr)
    for reason, n in sorted(would_exclude.items()):
        print(f"  single-modality filter would exclude {n:>7}  {reason}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
