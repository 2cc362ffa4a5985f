"""What trust during training costs (issue 55, part 3): one evaluation of the held-out slice against one
training step, in one run.

    OMP_NUM_THREADS=1 python scripts/bench_trust_eval.py [--out runs/bench_trust] [--limit 4 8] [--steps 8]

Builds a small synthetic world, a prep folder (every task + CLEAN, a validation split) and the tiny Qwen2.5-Omni
thinker of ``cavpref model tiny-qwen``, then per ``--limit`` trains ``--steps`` DPO steps with
``trust_eval_steps`` = steps / 2 and reads each step's wall time (a callback timing ``on_step_begin`` →
``on_step_end``, before the evaluation runs) and each evaluation's ``trust/seconds`` from ``logs.jsonl``. Prints
the table: items and passes per evaluation (the ideal is linear in passes), the median step, the median
evaluation and their ratio — "one evaluation costs R training steps".
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from transformers import TrainerCallback

from cavpref.data import CLEAN_TASK, TASKS
from cavpref.eval.during_training import trust_callbacks
from cavpref.jsonl import read_jsonl
from cavpref.parsing import parse_args
from cavpref.train import main as train_main


class StepTimer(TrainerCallback):
    def __init__(self):
        self.seconds: list[float] = []

    def on_step_begin(self, args, state, control, **kwargs):
        self.start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self.seconds.append(time.perf_counter() - self.start)


def inputs(out: Path) -> dict[str, Path]:
    from cavpref.data_prep.build import PrepConfig, build
    from cavpref.data_prep.synthetic import WorldConfig, generate_world
    from cavpref.models.tiny import build_tiny_qwen_omni

    world, prep, model = out / "world", out / "prep", out / "model"
    if not (world / "world.json").exists() and not any(world.glob("*")):
        generate_world(WorldConfig(out=str(world), seed=0, num_clips=16, workers=1))
    if not (prep / "manifest.json").exists():
        build(PrepConfig(output_dir=str(prep), world=str(world), tasks=[*TASKS, CLEAN_TASK], val_fraction=0.2,
                         formats=["arrow", "jsonl"], progress=False))  # fmt: skip
    if not (model / "config.json").exists():
        build_tiny_qwen_omni(model)
    return {"world": world, "prep": prep, "model": model}


def run_one(out: Path, paths: dict, limit: int, steps: int) -> dict:
    run = out / f"limit{limit}"
    recipe = {
        "method": "dpo", "beta": 0.1, "learning_rate": 2e-4, "lr_scheduler_type": "constant",
        "train_dataset": str(paths["prep"] / "preferences"), "media_root": str(paths["world"]),
        "per_device_train_batch_size": 4, "max_steps": steps, "logging_steps": 1, "save_strategy": "no",
        "seed": 0, "bf16": False, "use_cpu": True, "activation_checkpointing": False, "report_to": "none",
        "disable_tqdm": True, "dataloader_num_workers": 0, "num_threads": 1,
        "model_name_or_path": str(paths["model"]), "dtype": "float32", "lora_r": 0, "num_frames": 4,
        "frame_height": 56, "frame_width": 56, "trust_eval_data": str(paths["prep"]),
        "trust_eval_steps": max(1, steps // 2), "trust_eval_limit": limit, "output_dir": str(run),
        "overwrite_output_dir": True,
    }  # fmt: skip
    (out / f"limit{limit}.yaml").write_text(yaml.safe_dump(recipe))
    timer = StepTimer()
    code = train_main([str(out / f"limit{limit}.yaml")], extensions=(lambda *a: [timer], trust_callbacks))
    if code:
        raise SystemExit(f"training failed ({code})")
    logs = [rec for _, rec in read_jsonl(run / "logs.jsonl")]
    evals = [r["trust/seconds"] for r in logs if "trust/seconds" in r]
    results = json.loads((run / "trust" / f"step-{steps}" / "results.json").read_text())
    passes = sum(len(read_jsonl(f)) for f in (run / "trust" / f"step-{steps}").glob("records.rank*.jsonl"))
    step = statistics.median(timer.seconds[1:] or timer.seconds)  # the first step warms caches
    return {"limit": limit, "items": results["metrics"]["overall"]["n"], "passes": passes, "step_s": step,
            "eval_s": statistics.median(evals), "ratio": statistics.median(evals) / step}  # fmt: skip


@dataclass
class BenchArguments:
    """The bench's keys (``--help`` lists them)."""

    out: str = field(default="runs/bench_trust", metadata={"help": "folder: world, prep, model and the runs"})
    limit: list[int] = field(default_factory=lambda: [4, 8], metadata={"help": "trust_eval_limit values"})
    steps: int = field(default=8, metadata={"help": "training steps per run (evaluated every steps / 2)"})


def main(argv=None) -> None:
    (a,) = parse_args(
        [BenchArguments], sys.argv[1:] if argv is None else argv, prog="scripts/bench_trust_eval.py"
    )
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    paths = inputs(out)
    rows = [run_one(out, paths, limit, a.steps) for limit in a.limit]
    print("| trust_eval_limit | items | passes (ideal: linear) | step s | evaluation s | evaluation / step |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['limit']} | {r['items']} | {r['passes']} | {r['step_s']:.3f} | {r['eval_s']:.2f} | "
              f"{r['ratio']:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
