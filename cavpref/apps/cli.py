"""`cavpref` command line: one sub-command per stage, each owned by its stage's module.

The dispatcher only routes; every sub-command parses its own arguments (HF ``HfArgumentParser`` over the
stage's config dataclass), so a recipe key and a command-line flag are the same thing.
"""

from __future__ import annotations

import importlib
import sys

# name -> ("module:function", one-line help). The function takes argv (list[str]) and returns an exit code.
COMMANDS: dict[str, tuple[str, str]] = {
    "world": ("cavpref.data_prep.synthetic.cli:main", "generate the synthetic audio-visual world (embedded default data)"),
    "prep": ("cavpref.data_prep.cli:main", "read source datasets and build AVTrustBench items + preference data"),
    "train": ("cavpref.train:main", "train with a recipe (SFT / DPO / CAVPref)"),
    "eval": ("cavpref.eval.cli:main", "evaluate a checkpoint (avtrustbench, compare, score, ...)"),
    "model": ("cavpref.apps.model_cli:main", "build tiny offline models (Qwen2.5-Omni thinker, composed AVLLM, CLAP / CLIP scorers)"),
    "quickstart": ("cavpref.apps.quickstart:main", "the embedded default, end to end"),
}


def _usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: cavpref <command> [args...]", "", "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"cavpref: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    target, _ = COMMANDS[name]
    module_name, func_name = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name and (module_name == err.name or module_name.startswith(err.name + ".")):
            print(f"cavpref {name}: not yet available in this version ({module_name} is not implemented)",
                  file=sys.stderr)
            return 2
        raise
    return int(getattr(module, func_name)(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
