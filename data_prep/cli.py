"""``cavpref prep``: build, merge shards, or read sources.

cavpref prep CONFIG.yaml [--key value ...]     build (every PrepConfig key can be overridden)
cavpref prep --world DIR --output_dir OUT       build without a YAML file
cavpref prep merge OUT SHARD_DIR [SHARD_DIR ...]
cavpref prep read --source ... FILE ...          print source records (data_prep.readers.cli)
"""

from __future__ import annotations

import json
import sys

import yaml
from transformers import HfArgumentParser

from cavpref.data_prep.build import PrepConfig, PrepError, build, format_stats, merge

USAGE = __doc__


def parse_config(argv: list[str]) -> PrepConfig:
    """YAML file (optional first argument) as defaults, then ``--key value`` overrides on top."""
    parser = HfArgumentParser(PrepConfig, prog="cavpref prep")
    defaults = {}
    if argv and not argv[0].startswith("-"):
        path, argv = argv[0], argv[1:]
        with open(path, encoding="utf-8") as f:
            defaults = yaml.safe_load(f) or {}
        if not isinstance(defaults, dict):
            raise ValueError(f"{path}: expected a mapping of PrepConfig keys, got {type(defaults).__name__}")
        known = {a.dest for a in parser._actions}
        unknown = sorted(set(defaults) - known)
        if unknown:
            raise ValueError(f"{path}: unknown key(s) {unknown}")
        parser.set_defaults(**defaults)
    (config,) = parser.parse_args_into_dataclasses(args=argv, look_for_args_file=False)
    return config


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "read":
        from cavpref.data_prep.readers.cli import main as read_main

        return read_main(argv[1:])
    if not argv or argv == ["-h"] or argv == ["--help"]:
        print(USAGE)
        if argv:
            HfArgumentParser(PrepConfig, prog="cavpref prep").print_help()
        return 0 if argv else 2
    try:
        if argv[0] == "merge":
            if len(argv) < 3:
                print("usage: cavpref prep merge OUT SHARD_DIR [SHARD_DIR ...]", file=sys.stderr)
                return 2
            stats = merge(argv[1], argv[2:])
            print(f"merged {len(argv) - 2} shards into {argv[1]}")
            print(format_stats(stats, _splits(argv[1])))
            return 0
        config = parse_config(argv)
        stats = build(config)
    except (PrepError, ValueError, FileNotFoundError) as err:
        print(f"cavpref prep: error: {err}", file=sys.stderr)
        return 1
    if stats.get("up_to_date"):
        print(
            f"cavpref prep: {config.output_dir} is up to date (same config, inputs and code); nothing to do"
        )
        return 0
    print(format_stats(stats, config.resolved().splits()))
    print(f"wrote {config.output_dir}")
    return 0


def _splits(out: str) -> list[str]:
    from pathlib import Path

    cfg = json.loads((Path(out) / "manifest.json").read_text())["config"]
    return PrepConfig(**{k: v for k, v in cfg.items() if k in PrepConfig.__dataclass_fields__}).splits()


if __name__ == "__main__":
    sys.exit(main())
