"""``cavpref data export|import``: cavpref preference rows <-> LLaMA-Factory / ms-swift / TRL files.

    cavpref data export --format llamafactory --data PREP_OUT --output_dir OUT [--kind sft] [--paths relative]
    cavpref data import --format swift --files prefs.jsonl --output_dir OUT [--data_root DIR] [--task CLEAN]
    cavpref data import --format llamafactory --dataset_info data/dataset_info.json --dataset NAME --output_dir OUT

Each parses with ``cavpref.parsing.parse_args`` (``[CONFIG.yaml | --config CONFIG.yaml] [--key value ...]``;
``--help`` after the verb lists every key). Errors name the file, record (line) and field.
"""

from __future__ import annotations

import sys

from cavpref.data_prep.formats.common import sft_note
from cavpref.data_prep.formats.convert import ExportArgs, ImportArgs, export_dataset, import_dataset
from cavpref.data_prep.readers.common import ReaderError
from cavpref.parsing import parse_args

VERBS = {"export": (ExportArgs, export_dataset), "import": (ImportArgs, import_dataset)}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in VERBS:
        print(__doc__, file=sys.stdout if not argv or argv[0] in ("-h", "--help") else sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    verb, rest = argv[0], argv[1:]
    args_type, run = VERBS[verb]
    try:
        (args,) = parse_args([args_type], rest, prog=f"cavpref data {verb}")
        result = run(args)
    except (ReaderError, ValueError, FileNotFoundError) as err:
        print(f"cavpref data {verb}: error: {err}", file=sys.stderr)
        return 1
    if verb == "export":
        print(f"wrote {sum(result['rows'].values())} rows as {args.format} files to {args.output_dir}")
    else:
        print(
            f"imported {result['imported']} of {result['records_read']} records into {args.output_dir}/preferences "
            f"(skipped {sum(result['skipped'].values())}); train with media_root {', '.join(result['data_root'])}"
        )
        if sft_note(result):
            print(sft_note(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
