"""``cavpref model``: build tiny offline models.

    cavpref model tiny-qwen --out DIR [--hidden_size 64 --num_hidden_layers 2 ... --corpus_file words.txt]
    cavpref model tiny-composed --out DIR [--text_model_type llama ...]
    cavpref model tiny-whisper --out DIR [--d_model 16 ...]   (speech recognition, for the benchmark builders)
    cavpref model tiny-qwen-full --out DIR [--thinker THINKER_DIR]   (talker + token2wav + speakers added)

Flags are the builder's keyword arguments (a dataclass generated from the builder's signature, so the two never
drift), plus ``--out`` and ``--corpus_file`` (extra tokenizer corpus lines); parsed like every command by
``cavpref.parsing.parse_args`` (``--config x.yaml`` or a leading ``x.yaml``, overrides, ``--help`` lists every key).
"""

from __future__ import annotations

import inspect
import sys
import typing
from collections.abc import Callable
from dataclasses import asdict, field, fields, make_dataclass
from pathlib import Path

from cavpref.models import tiny
from cavpref.output_dir import OutputArguments, OutputDirError, claim_output_dir, release_output_dir

BUILDERS: dict[str, Callable] = {
    "tiny-qwen": tiny.build_tiny_qwen_omni,
    "tiny-composed": tiny.build_tiny_composed,
    "tiny-whisper": tiny.build_tiny_whisper,
    "tiny-qwen-full": tiny.build_tiny_qwen_omni_full,
}


def _args_class(name: str, builder: Callable) -> type:
    specs = [("out", str, field(metadata={"help": "output folder (an HF model folder)"}))]
    for p in inspect.signature(builder).parameters.values():
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name != "extra_corpus":
            kind = str | None if p.default is None else type(p.default)  # an optional folder
            specs.append((p.name, kind, field(default=p.default)))
    if "extra_corpus" in inspect.signature(builder).parameters:
        specs.append(
            (
                "corpus_file",
                str,
                field(default="", metadata={"help": "extra tokenizer corpus, one line each"}),
            )
        )
    hints = typing.get_type_hints(OutputArguments)
    specs += [
        (f.name, hints[f.name], field(default=f.default, metadata=f.metadata))
        for f in fields(OutputArguments)
    ]
    return make_dataclass(name.replace("-", "_").title().replace("_", "") + "Args", specs)


def _usage() -> str:
    return "usage: cavpref model {" + ",".join(BUILDERS) + "} --out DIR [options]   (--help after the name)"


def main(argv: list[str] | None = None) -> int:
    from cavpref.parsing import parse_args

    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in BUILDERS:
        print(_usage(), file=sys.stderr if argv and argv[0] not in ("-h", "--help") else sys.stdout)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    name, rest = argv[0], argv[1:]
    try:
        (args,) = parse_args([_args_class(name, BUILDERS[name])], rest, prog=f"cavpref model {name}")
    except (ValueError, OSError) as err:  # an unknown key, a missing config file: one line
        print(f"cavpref model {name}: error: {err}", file=sys.stderr)
        return 2
    kwargs = asdict(args)
    out, corpus_file = kwargs.pop("out"), kwargs.pop("corpus_file", "")
    overwrite = kwargs.pop("overwrite_output_dir")
    extra = []
    if corpus_file:
        path = Path(corpus_file)
        if not path.is_file():
            print(f"cavpref model {name}: --corpus_file {corpus_file} does not exist", file=sys.stderr)
            return 2
        extra = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if "extra_corpus" in inspect.signature(BUILDERS[name]).parameters:
        kwargs["extra_corpus"] = extra
    # the builder's folder arguments (tiny-qwen-full's --thinker) are inputs: never written over
    params = inspect.signature(BUILDERS[name]).parameters
    inputs = {k: v for k, v in kwargs.items() if "Path" in str(params[k].annotation)}
    try:
        out = claim_output_dir(out, "model", overwrite=overwrite, inputs=inputs, key="out")
    except OutputDirError as err:
        print(f"cavpref model {name}: {err}", file=sys.stderr)
        return 2
    folder = BUILDERS[name](out, **kwargs)
    release_output_dir(out)
    print(f"wrote {name} model to {folder}")
    return 0
