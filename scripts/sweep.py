"""λ / β sweep in the style of the paper's Fig. 6: train one run per grid value, evaluate it, plot.

    python scripts/sweep.py recipes/tiny/cavpref.yaml --out runs/sweep \\
        --lambda_y 0.5,1.0,2.0 --lambda_v 0.5,1.0,2.0 --lambda_a 0.4,0.8,1.6 \\
        --eval_data runs/tiny/bench [--eval_limit 50] [--eval_mode likelihood] [-- --max_steps 200 ...]

Each axis is varied alone, the others staying at the recipe's values (Fig. 6: λ_y is read on MCIT, λ_V on MVIT,
λ_A on MAIT; β axes on all tasks unless ``--task_for``). A run is ``cavpref train RECIPE --<axis> <value>`` (in
this process, or under ``--launch "accelerate launch --config_file …"``); its evaluation is the eval module's
``eval.pipeline.evaluate`` on ``--eval_data``. Without ``--eval_data`` (or with ``--no_eval``) the sweep still
trains every run and plots its final training metrics (the hook stays: add the data later and re-run; finished
runs and evaluations are reused). Writes ``sweep.json`` and ``sweep.png`` in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

AXES = ("lambda_y", "lambda_v", "lambda_a", "beta_y", "beta_v", "beta_a", "beta_scale", "beta_offset")
FIG6_TASK = {"lambda_y": "MCIT", "lambda_v": "MVIT", "lambda_a": "MAIT", "beta_v": "MVIT", "beta_a": "MAIT"}
ROOT = Path(__file__).resolve().parents[1]


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("recipe")
    p.add_argument("--out", required=True)
    for axis in AXES:
        p.add_argument(f"--{axis}", default=None, help="comma-separated values")
    p.add_argument(
        "--task_for",
        action="append",
        default=[],
        metavar="AXIS=TASK",
        help="task an axis is read on (default: Fig. 6's MCIT / MVIT / MAIT, else all tasks)",
    )
    p.add_argument(
        "--eval_data", default=None, help="benchmark items for eval (prep output, datasets or JSONL)"
    )
    p.add_argument("--eval_split", default="test")
    p.add_argument("--eval_limit", type=int, default=None)
    p.add_argument("--eval_mode", default="likelihood", choices=["generate", "likelihood"])
    p.add_argument("--eval_setting", default=None, choices=[None, "base", "instruction"])
    p.add_argument("--eval_media_root", default=None)
    p.add_argument("--no_eval", action="store_true")
    p.add_argument(
        "--launch",
        default=None,
        help='e.g. "accelerate launch --config_file recipes/accelerate/multi_gpu.yaml"',
    )
    args, extra = p.parse_known_args(argv)
    args.extra = [a for a in extra if a != "--"]
    grid = {a: [float(v) for v in getattr(args, a).split(",")] for a in AXES if getattr(args, a)}
    if not grid:
        p.error("give at least one axis, e.g. --lambda_a 0.4,0.8,1.6")
    tasks = dict(FIG6_TASK)
    for spec in args.task_for:
        axis, _, task = spec.partition("=")
        tasks[axis] = task
    return args, grid, tasks


def train_run(args, axis: str, value: float, run_dir: Path) -> None:
    if (run_dir / "logs.jsonl").exists() and any(run_dir.glob("*.safetensors")):
        return  # finished earlier
    argv = [args.recipe, f"--{axis}", repr(value), "--output_dir", str(run_dir), *args.extra]
    if args.launch:
        cmd = [*shlex.split(args.launch), str(ROOT / "scripts" / "train.py"), *argv]
        subprocess.run(cmd, check=True)
    else:
        from cavpref.train import main

        if main(argv) != 0:
            raise RuntimeError(f"training {run_dir} failed")


def training_summary(run_dir: Path) -> dict[str, float]:
    """The last logged value of every numeric training metric (the fallback when there is no evaluation)."""
    last: dict[str, float] = {}
    for line in (run_dir / "logs.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if "loss" in rec:
            last.update({k: v for k, v in rec.items() if isinstance(v, (int, float))})
    return last


def evaluate_run(args, run_dir: Path, task: str | None) -> dict | None:
    """Accuracy (%) per task from the eval module (circular where run, else vanilla); None without data."""
    if args.no_eval or not args.eval_data:
        return None
    try:
        from cavpref.eval.metrics import primary
        from cavpref.eval.pipeline import EvalArgs, evaluate
    except ImportError as err:  # eval is a separate stage; keep the sweep usable without it
        print(f"[sweep] evaluation unavailable ({err}); plotting training metrics", file=sys.stderr)
        return None
    from cavpref.data import TASKS

    out = run_dir / "eval"
    results_file = out / "results.json"
    if results_file.exists():
        results = json.loads(results_file.read_text())
    else:
        eargs = EvalArgs(
            model=str(run_dir),
            data=args.eval_data,
            output=str(out),
            split=args.eval_split,
            tasks=[task] if task else list(TASKS),
            limit=args.eval_limit,
            mode=args.eval_mode,
            setting=args.eval_setting,
            media_root=args.eval_media_root,
            label=run_dir.name,
            no_judge=True,
        )
        results = evaluate(eargs)
    acc = {}
    for setting in results["metrics"]["settings"].values():
        for t, block in setting["tasks"].items():
            acc.setdefault(t, []).append(primary(block))
    return {t: sum(v) / len(v) for t, v in acc.items() if all(x is not None for x in v)}


def plot(summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    axes = list(summary["axes"])
    fig, subplots = plt.subplots(1, len(axes), figsize=(4 * len(axes), 3.2), squeeze=False)
    for ax, axis in zip(subplots[0], axes):
        runs = summary["axes"][axis]
        xs = [r["value"] for r in runs]
        if all(r.get("accuracy") is not None for r in runs):
            task = summary["tasks"].get(axis)
            ys = [
                r["accuracy"].get(task) if task else sum(r["accuracy"].values()) / len(r["accuracy"])
                for r in runs
            ]
            ax.set_ylabel(f"{task or 'mean'} accuracy (%)")
        else:
            ys = [r["train"].get("loss") for r in runs]
            ax.set_ylabel("final training loss (no eval)")
        ax.plot(xs, ys, marker="o")
        for x, y in zip(xs, ys):
            if y is not None:
                ax.annotate(
                    f"{y:.2f}", (x, y), textcoords="offset points", xytext=(0, 5), ha="center", fontsize=7
                )
        ax.set_xlabel(axis.replace("lambda_", "λ_").replace("beta_", "β_"))
        ax.grid(alpha=0.3)
    fig.suptitle("CAVPref sweep (Fig. 6 style)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    args, grid, tasks = parse(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = {
        "recipe": args.recipe,
        "extra": args.extra,
        "tasks": {a: tasks.get(a) for a in grid},
        "axes": {},
    }
    for axis, values in grid.items():
        summary["axes"][axis] = []
        for value in values:
            run_dir = out / f"{axis}={value:g}"
            train_run(args, axis, value, run_dir)
            summary["axes"][axis].append(
                {
                    "value": value,
                    "run": str(run_dir),
                    "train": training_summary(run_dir),
                    "accuracy": evaluate_run(args, run_dir, tasks.get(axis)),
                }
            )
            (out / "sweep.json").write_text(json.dumps(summary, indent=1))
    plot(summary, out / "sweep.png")
    print(f"[sweep] {sum(len(v) for v in grid.values())} runs -> {out / 'sweep.json'}, {out / 'sweep.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
