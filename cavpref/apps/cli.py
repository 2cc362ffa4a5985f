"""`cavpref` command line: one sub-command per stage, each owned by its stage's module.

The dispatcher only routes; every sub-command parses its own arguments with ``cavpref.parsing.parse_args``
(TRL's ``TrlParser`` over the stage's config dataclasses: ``--config FILE.yaml`` plus ``--key value``
overrides), so a recipe key and a command-line flag are the same thing, and ``cavpref <command> --help``
lists every key.
"""

from __future__ import annotations

import importlib
import sys

# name -> ("module:function", one-line help). The function takes argv (list[str]) and returns an exit code.
COMMANDS: dict[str, tuple[str, str]] = {
    "world": (
        "cavpref.data_prep.synthetic.cli:main",
        "generate the synthetic audio-visual world (embedded default data)",
    ),
    "prep": (
        "cavpref.data_prep.cli:main",
        "read source datasets and build AVTrustBench items + preference data",
    ),
    "build": (
        "cavpref.data_prep.builders.cli:main",
        "build AURA- / TraceAV-Bench-style benchmarks from your own videos; audit agreement",
    ),
    "data": (
        "cavpref.data_prep.formats.cli:main",
        "import / export LLaMA-Factory, ms-swift and TRL files (SFT and preference rows)",
    ),
    "train": ("cavpref.apps.train:main", "train with a recipe (SFT / DPO / CAVPref)"),
    "export": (
        "cavpref.models.export:main",
        "a trained thinker (or LoRA adapter) as a full Qwen2.5-Omni checkpoint (talker and token2wav included)",
    ),
    "check": (
        "cavpref.apps.check:main",
        "dry run before renting GPUs: parameters, tokens per row, memory per GPU vs --gpu_memory_gb",
    ),
    "eval": ("cavpref.eval.cli:main", "evaluate a checkpoint (avtrustbench, compare, score, ...)"),
    "model": (
        "cavpref.apps.model_cli:main",
        "build tiny offline models (Qwen2.5-Omni thinker, composed AVLLM, CLAP / CLIP scorers)",
    ),
    "quickstart": ("cavpref.apps.quickstart:main", "the embedded default, end to end"),
}


def _usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: cavpref <command> [args...]", "", "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += [
        "",
        "Every command takes [--config FILE.yaml] [--key value ...] (the command line overrides the file);",
        "`cavpref <command> --help` lists its keys.",
    ]
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
    from cavpref.cpu import default_cpu_isa

    default_cpu_isa()  # before the command computes anything (cavpref/cpu.py)
    module_name, func_name = target.split(":")
    module = importlib.import_module(module_name)
    return int(getattr(module, func_name)(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
