"""The GPU check: one prepared command that measures what only a GPU can tell about the real-width path.

On the real-width, reduced-depth Qwen2.5-Omni thinker (``cavpref.models.real_config``: every published width and
the 152,064-id vocabulary, 1-2 layers per stack), trained through ``cavpref train``'s own path (the 7B LoRA
recipe parsed with overrides, ``cavpref.train.build_trainer``), on the shared-prefix benchmark's rows
(``cavpref.bench.rows``: the 9-task mix, 8 frames of 448 x 448 + 10 s of audio per clip):

1. ``exactness``: one CAVPref step (policy, reference, loss, backward, optimizer; full fine-tuning, so every
   language-model weight gets a gradient) with shared prefixes on and off: per-row log-probs of policy and
   reference, the loss and every parameter gradient; in float32 all within ``fp32_rtol`` (TF32 off); in bfloat16
   log-probs and loss within ``bf16_rtol`` (torch.testing's bfloat16 default) and the gradients no farther from
   the float32 step than full rows' own bf16 gradients are, within ``bf16_grad_factor``;
2. ``attention``: per requested implementation (sdpa, eager, flash_attention_2, flex_attention): whether it
   loads, whether shared prefixes ran or the reason logged for scoring full rows, the attention ops the profiler
   saw in the language model and in the encoders, and log-probs against sdpa's full rows;
3. ``memory``: peak allocated memory (``torch.cuda.max_memory_allocated``) of a step at 1 and 2 layers, LoRA
   and full fine-tuning, against ``cavpref check``'s estimate for the same batch (``cavpref.apps.check``); per
   layer: bytes per token measured vs estimated, and autograd's saved bytes per position vs the formula;
4. ``throughput``: step time and LM tokens per second of DPO full rows, DPO shared, CAVPref full, CAVPref
   shared, the speed ratios next to the token ideal;
5. ``real_row``: an 8-frame 640 x 360 + 10 s clip decoded and collated through the 7B's processor settings:
   tokens per row measured in the batch that ran through the model, vs ``cavpref check``'s prediction.

Writes ``gpu_check.json`` and ``gpu_check.md`` (the tables) to ``--out`` (default ``$OUT``) after every
section, so a run stopped by its time limit still leaves what it measured. Exit status 1 when a section failed
or a check did not hold. GPU: ``cavpref_lab/bench/README.md`` ("The GPU check") gives the one command (wheels for the
packages the GPU image lacks: ``scripts/gpu_wheels.sh``). On CPU at tiny widths (``tests/lab/test_gpu_check.py``
runs this with smaller clips and float32 only, so the script cannot rot):

    OMP_NUM_THREADS=1 python scripts/gpu_check.py --device cpu --width tiny --rounds 1 --warmup 0 --out DIR
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import torch

from cavpref.apps.gpu_check.sections import SECTIONS, Context
from cavpref.apps.gpu_check.tables import render
from cavpref.parsing import parse_args

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class GpuCheckArguments:
    """What to run and how large; the defaults are the prepared GPU run."""

    out: str | None = field(
        default=None, metadata={"help": "folder for gpu_check.json / gpu_check.md (None: the OUT variable)"}
    )
    device: Literal["auto", "cuda", "cpu"] = field(default="auto", metadata={"help": "auto: cuda if present"})
    width: Literal["real", "tiny"] = field(
        default="real",
        metadata={"help": "real: the 7B's widths; tiny: test widths (same vocabulary and ids)"},
    )
    recipe: str = field(
        default=str(ROOT / "recipes/qwen2.5-omni-7b/lora_cavpref.yaml"),
        metadata={"help": "the recipe every trainer is built from (with the check's overrides)"},
    )
    sections: list[str] = field(
        default_factory=lambda: list(SECTIONS), metadata={"help": f"sections to run, of {list(SECTIONS)}"}
    )
    batch: int = field(default=9, metadata={"help": "samples per step (9: one per task, the uniform mix)"})
    frames: int = field(default=8, metadata={"help": "frames per clip of the benchmark rows"})
    frame_size: int = field(default=448, metadata={"help": "frame height = width of the benchmark rows"})
    audio_seconds: float = field(default=10.0, metadata={"help": "audio per clip of the benchmark rows"})
    rounds: int = field(default=3, metadata={"help": "timed rounds per throughput config"})
    warmup: int = field(default=1, metadata={"help": "untimed rounds before them (CUDA kernels, allocator)"})
    exact_layers: int = field(
        default=1, metadata={"help": "decoder layers of the exactness / attention model"}
    )
    memory_layers: list[int] = field(
        default_factory=lambda: [1, 2], metadata={"help": "decoder layers of the memory runs (two depths)"}
    )
    memory_modes: list[str] = field(
        default_factory=lambda: ["lora", "full"], metadata={"help": "lora (the recipe's r=16) and/or full"}
    )
    time_layers: int = field(default=2, metadata={"help": "decoder layers of the throughput model"})
    dtypes: list[str] = field(
        default_factory=lambda: ["float32", "bfloat16"], metadata={"help": "dtypes of the exactness step"}
    )
    attention: list[str] = field(
        default_factory=lambda: ["sdpa", "eager", "flash_attention_2", "flex_attention"],
        metadata={"help": "attention implementations to try"},
    )
    fp32_rtol: float = field(default=1e-5, metadata={"help": "float32: shared vs full rows, relative"})
    bf16_rtol: float = field(
        default=1.6e-2,
        metadata={
            "help": "bfloat16: log-probs and loss, shared vs full rows, relative (torch.testing's default)"
        },
    )
    bf16_grad_factor: float = field(
        default=2.0,
        metadata={
            "help": "bfloat16: shared prefixes' gradient distance to the float32 step at most this times full rows'"
        },
    )
    height: int = field(default=360, metadata={"help": "real row: clip height in pixels"})
    width_px: int = field(default=640, metadata={"help": "real row: clip width in pixels"})
    seconds: float = field(default=10.0, metadata={"help": "real row: clip length in seconds"})
    budget_s: float = field(
        default=360.0, metadata={"help": "a section not started within this many seconds is skipped"}
    )
    work_dir: str | None = field(
        default=None, metadata={"help": "scratch folder for models and data (None: a temporary one, removed)"}
    )


def versions(device: str) -> dict:
    import importlib.metadata as md
    import platform

    out = {"python": platform.python_version(), "torch": torch.__version__, "device": device}
    for pkg in ("transformers", "trl", "datasets", "peft", "accelerate", "av", "numpy", "pyarrow", "fsspec"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = None
    if device == "cuda":
        out["gpu"] = torch.cuda.get_device_name()
        out["cuda"] = torch.version.cuda
        out["gpu_memory_gib"] = round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)
    return out


class Report:
    """The check's results: written as JSON and as Markdown tables after every section."""

    def __init__(self, out: Path, args: GpuCheckArguments, device: str):
        self.out, self.t0 = out, time.perf_counter()
        self.data = {"settings": asdict(args), "environment": versions(device), "sections": {}}

    def run(self, name: str, fn, ctx: Context, budget_s: float) -> None:
        start = time.perf_counter() - self.t0
        if start > budget_s:
            self.data["sections"][name] = {
                "status": "skipped",
                "reason": f"{start:.0f} s > budget {budget_s:g} s",
            }
        else:
            print(f"[gpu_check] {name} (at {start:.0f} s)", flush=True)
            try:
                result = fn(ctx)
                status = "ok" if result.get("passed", True) else "failed"
                self.data["sections"][name] = {"status": status, **result}
            except Exception as err:  # noqa: BLE001 - one section's failure must not lose the others
                self.data["sections"][name] = {
                    "status": "error",
                    "error": f"{type(err).__name__}: {err}",
                    "traceback": traceback.format_exc(limit=12),
                }
            finally:
                ctx.release()
            self.data["sections"][name]["seconds"] = round(time.perf_counter() - self.t0 - start, 1)
        self.write()

    @property
    def ok(self) -> bool:
        return all(s["status"] == "ok" for s in self.data["sections"].values())

    def write(self) -> None:
        self.data["elapsed_s"] = round(time.perf_counter() - self.t0, 1)
        self.data["ok"] = self.ok
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "gpu_check.json").write_text(json.dumps(self.data, indent=1, default=str))
        (self.out / "gpu_check.md").write_text(render(self.data))


def main(argv: list[str] | None = None) -> int:
    (args,) = parse_args(
        [GpuCheckArguments], sys.argv[1:] if argv is None else argv, prog="scripts/gpu_check.py"
    )
    out = args.out or os.environ.get("OUT")
    if not out:
        raise SystemExit("gpu_check: give --out DIR (or set OUT)")
    unknown = [s for s in args.sections if s not in SECTIONS]
    if unknown:
        raise SystemExit(f"gpu_check: unknown section(s) {unknown}; choose from {list(SECTIONS)}")
    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    if device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("gpu_check: --device cuda but torch sees no GPU")
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="gpu_check_"))
    report = Report(Path(out), args, device)
    try:
        ctx = Context(args, device, work)
        for name in args.sections:
            report.run(name, SECTIONS[name], ctx, args.budget_s)
    finally:
        if args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(render(report.data), flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
