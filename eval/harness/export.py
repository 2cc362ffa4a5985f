"""``cavpref eval export --harness lmms_eval|vlmevalkit`` and the harness readers of ``cavpref eval score``.

The export claims its folder like every output folder (``cavpref.output_dir``), so nothing of the user's is
overwritten; ``--overwrite_output_dir`` replaces an earlier export.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from cavpref.eval.args import EvalArgs
from cavpref.eval.harness import lmms_eval, vlmevalkit
from cavpref.eval.harness.passes import HARNESSES, export_config, load_passes
from cavpref.output_dir import claim_output_dir


@dataclass
class ExportArgs:
    harness: str = field(default="", metadata={"help": "lmms_eval (a task folder) | vlmevalkit (an MCQ TSV)"})
    task_name: str = field(
        default="",
        metadata={
            "help": "the lmms-eval task / VLMEvalKit dataset name (default: <benchmark>_cavpref, "
            "VLMEvalKit's with _circular under CircularEval, which its MCQ scoring keys on)"
        },
    )

    check: bool = field(
        default=False,
        metadata={
            "help": "lmms_eval: load the written task with lmms-eval's own TaskManager (lmms_eval installed)"
        },
    )

    def __post_init__(self):
        if self.harness not in HARNESSES:
            raise ValueError(f"--harness must be one of {', '.join(HARNESSES)}, got {self.harness!r}")
        if self.task_name and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", self.task_name):
            raise ValueError(f"--task_name {self.task_name!r}: letters, digits, '_', '.', '-' only")


def default_name(bench, harness: str) -> str:
    circular = bool(getattr(bench.opt, "circular", False))
    return f"{bench.name}_cavpref" + ("_circular" if harness == "vlmevalkit" and circular else "")


def export(args: EvalArgs, options, eargs: ExportArgs) -> dict:
    """Write the export into ``args.output``; what was written (also the folder's export.json)."""
    if not (args.data and args.output):
        raise ValueError("--data and --output are required")
    out = Path(
        claim_output_dir(
            args.output,
            "eval export",
            overwrite=args.overwrite_output_dir,
            inputs={"data": args.data},
            markers=("export.json",),
            key="output",
        )
    )
    bench, passes, info = load_passes(args, options, out, separate_audio=eargs.harness == "vlmevalkit")
    name = eargs.task_name or default_name(bench, eargs.harness)
    config = export_config(args, options, bench, eargs.harness, info)
    if eargs.harness == "lmms_eval":
        max_new = args.max_new_tokens or bench.defaults.get("max_new_tokens", 64)
        written = lmms_eval.write_task(out, name, bench, passes, config, max_new)
        if eargs.check:
            info["lmms_eval_docs"] = lmms_eval.check_with_lmms_eval(out, name)
    else:
        written = vlmevalkit.write_export(out, name, passes, config)
    return {"folder": str(out), "name": name, "files": written, **info}


def read_harness(harness: str, path: str) -> list[tuple[str, dict]]:
    """A harness's per-sample answers as cavpref predictions rows ``(where, {id, rotation, response})``."""
    if harness == "lmms_eval":
        return lmms_eval.read_samples(path)
    if harness == "vlmevalkit":
        return vlmevalkit.read_predictions(path)
    raise ValueError(f"--harness must be cavpref, {' or '.join(HARNESSES)}, got {harness!r}")
