"""``cavpref prep``: build, merge shards, or read sources.

cavpref prep [CONFIG.yaml | --config CONFIG.yaml] [--key value ...]   build (every PrepConfig key)
cavpref prep --world DIR --output_dir OUT                              build without a YAML file
cavpref prep merge [--config M.yaml] --output_dir OUT --shards SHARD_DIR [SHARD_DIR ...]
cavpref prep read [--config R.yaml] --source ... FILE ...              print source records (prep read --help)
accelerate launch --num_processes N -m cavpref.data_prep.cli CONFIG.yaml   one shard per process (GPU), merged
accelerate launch --config_file recipes/accelerate/cpu_2proc.yaml -m cavpref.data_prep.cli CONFIG.yaml   2 CPU processes

Every form parses with ``cavpref.parsing.parse_args``: the YAML file sets the keys, the command line
overrides them, an unknown key is an error and ``--help`` lists every key.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from cavpref.cpu import default_cpu_isa
from cavpref.data_prep.build import PrepConfig, PrepError, build_distributed, format_stats, merge
from cavpref.data_prep.readers.cli import main as read_main
from cavpref.output_dir import OutputArguments, expand_path
from cavpref.parsing import parse_args

USAGE = __doc__


@dataclass
class MergeArgs(OutputArguments):
    """``cavpref prep merge``: the outputs of every shard build of one config -> one build."""

    output_dir: str = field(default="", metadata={"help": "folder the merged build is written to (required)"})
    shards: list[str] = field(
        default_factory=list,
        metadata={"help": "the shard builds' output folders, one per shard index, in any order (required)"},
    )


def parse_config(argv: list[str]) -> PrepConfig:
    """``[CONFIG.yaml | --config CONFIG.yaml] [--key value ...]`` -> PrepConfig (command line wins)."""
    (config,) = parse_args([PrepConfig], argv, prog="cavpref prep")
    return config


def parse_merge(argv: list[str]) -> MergeArgs:
    """``--output_dir OUT --shards A B ...``; the older positional ``OUT A B ...`` still works, deprecated."""
    if argv and not argv[0].startswith("-") and not argv[0].endswith((".yaml", ".yml")):
        print(
            "cavpref prep merge: the positional form `merge OUT SHARD_DIR ...` is deprecated; "
            "use `merge --output_dir OUT --shards SHARD_DIR ...`",
            file=sys.stderr,
        )
        argv = ["--output_dir", argv[0], *(["--shards", *argv[1:]] if argv[1:] else [])]
    (args,) = parse_args([MergeArgs], argv, prog="cavpref prep merge")
    if not args.output_dir or not args.shards:
        raise ValueError("merge needs --output_dir OUT and --shards SHARD_DIR [SHARD_DIR ...]")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    default_cpu_isa()  # scores (clap_delta, hence beta) the same on CPUs with and without AVX-512
    if argv and argv[0] == "read":
        return read_main(argv[1:])
    if not argv or argv == ["-h"] or argv == ["--help"]:
        print(USAGE)
        if not argv:
            return 2
        parse_config(["--help"])  # argparse prints every key and exits 0
    if argv[0] == "merge":
        try:
            args = parse_merge(argv[1:])
        except ValueError as err:  # a usage error
            print(f"cavpref prep merge: error: {err}", file=sys.stderr)
            return 2
        try:
            out = expand_path(args.output_dir)
            stats = merge(out, args.shards, overwrite=args.overwrite_output_dir)
        except ValueError as err:  # shards that do not make one build, an output folder it may not use
            print(f"cavpref prep merge: error: {err}", file=sys.stderr)
            return 1
        print(f"merged {len(args.shards)} shards into {out}")
        print(format_stats(stats, _splits(out)))
        return 0
    try:
        config = parse_config(argv)
        stats = build_distributed(config)  # build, or one shard per process under accelerate launch
    except (PrepError, ValueError, FileNotFoundError) as err:
        print(f"cavpref prep: error: {err}", file=sys.stderr)
        return 1
    from accelerate import PartialState

    if (
        not PartialState().is_main_process
    ):  # initialised by build_distributed  # a shard process: the main one prints the merged build
        return 0
    if stats.get("up_to_date"):
        print(
            f"cavpref prep: {config.output_dir} is up to date (same config, inputs and code); nothing to do"
        )
        return 0
    print(format_stats(stats, config.resolved().splits()))
    print(f"wrote {expand_path(config.output_dir)}")
    return 0


def _splits(out: str) -> list[str]:
    cfg = json.loads((Path(out) / "manifest.json").read_text())["config"]
    return PrepConfig(**{k: v for k, v in cfg.items() if k in PrepConfig.__dataclass_fields__}).splits()


if __name__ == "__main__":
    sys.exit(main())
