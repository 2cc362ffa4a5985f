"""λ / β sweep in the style of the paper's Fig. 6: train one run per grid value, evaluate it, plot.

    python scripts/sweep.py --recipe recipes/tiny/cavpref.yaml --out runs/sweep \\
        --lambda_y 0.5 1.0 2.0 --lambda_v 0.5 1.0 2.0 --lambda_a 0.4 0.8 1.6 \\
        --eval_data runs/tiny/bench [--eval_limit 50] [--eval_mode likelihood] [-- --max_steps 200 ...]
    python scripts/sweep.py --config sweep.yaml [--key value ...]     (the same keys in a YAML file)

Each axis is varied alone, the others staying at the recipe's values (Fig. 6: λ_y is read on MCIT, λ_V on MVIT,
λ_A on MAIT; β axes on all tasks unless ``--task_for``). A run is ``cavpref train RECIPE --<axis> <value>`` (in
this process, or under ``--launch "accelerate launch --config_file …"``); its evaluation is the eval module's
``eval.pipeline.evaluate`` on ``--eval_data``. Without ``--eval_data`` (or with ``--no_eval``) the sweep still
trains every run and plots its final training metrics (the hook stays: add the data later and re-run; finished
runs and evaluations are reused). Writes ``sweep.json`` and ``sweep.png`` in ``--out``; when the recipe (or ``--
--trust_eval_steps N --trust_eval_data PREP``) scores trust during training, also ``sweep_trust.png``: paired trust
and false abstention over the steps of every run, one panel per axis.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from cavpref import jsonl
from cavpref.apps.train import main as train_main
from cavpref.data import TASKS
from cavpref.eval.metrics import primary
from cavpref.eval.pipeline import EvalArgs, evaluate
from cavpref.parsing import parse_args
from cavpref.plotting import pyplot

AXES = ("lambda_y", "lambda_v", "lambda_a", "beta_y", "beta_v", "beta_a", "beta_scale", "beta_offset")
FIG6_TASK = {"lambda_y": "MCIT", "lambda_v": "MVIT", "lambda_a": "MAIT", "beta_v": "MVIT", "beta_a": "MAIT"}
ROOT = Path(__file__).resolve().parents[1]


@dataclass
class SweepArguments:
    """The sweep's keys (``--config sweep.yaml`` and / or the command line; ``--help`` lists them)."""

    recipe: str = field(metadata={"help": "the `cavpref train` recipe every run starts from"})
    out: str = field(metadata={"help": "sweep folder: one run folder per axis value, sweep.json, sweep.png"})
    lambda_y: list[float] | None = field(default=None, metadata={"help": "values of λ_y, e.g. 0.5 1 2"})
    lambda_v: list[float] | None = field(default=None, metadata={"help": "values of λ_V"})
    lambda_a: list[float] | None = field(default=None, metadata={"help": "values of λ_A"})
    beta_y: list[float] | None = field(default=None, metadata={"help": "values of β_y"})
    beta_v: list[float] | None = field(default=None, metadata={"help": "values of β_V"})
    beta_a: list[float] | None = field(default=None, metadata={"help": "values of β_A"})
    beta_scale: list[float] | None = field(
        default=None, metadata={"help": "values of the β calibration scale"}
    )
    beta_offset: list[float] | None = field(
        default=None, metadata={"help": "values of the β calibration offset"}
    )
    task_for: list[str] = field(
        default_factory=list,
        metadata={
            "help": "AXIS=TASK: the task an axis is read on (default: Fig. 6's MCIT / MVIT / MAIT, else all tasks)"
        },
    )
    eval_data: str | None = field(
        default=None,
        metadata={
            "help": "benchmark items for the evaluation (prep output, datasets or JSONL); none: training metrics"
        },
    )
    eval_split: str = field(default="test", metadata={"help": "split of --eval_data"})
    eval_limit: int | None = field(
        default=None, metadata={"help": "first N items of each task and setting; 0 or unset = all"}
    )
    eval_mode: Literal["generate", "likelihood"] = field(
        default="likelihood", metadata={"help": "answer mode"}
    )
    eval_setting: str | None = field(default=None, metadata={"help": "base | instruction (default: both)"})
    eval_media_root: str | None = field(
        default=None, metadata={"help": "root the items' media paths are under"}
    )
    no_eval: bool = field(default=False, metadata={"help": "train only; plot the final training metrics"})
    launch: str | None = field(
        default=None,
        metadata={
            "help": 'run each training under a launcher, e.g. "accelerate launch --config_file '
            'recipes/accelerate/multi_gpu.yaml"'
        },
    )
    train_overrides: list[str] = field(
        default_factory=list,
        metadata={
            "help": "`cavpref train` overrides for every run (in YAML: a list, e.g. [--max_steps, 200]; on the "
            "command line: after `--`)"
        },
    )

    def __post_init__(self):
        if self.eval_setting not in (None, "base", "instruction"):
            raise ValueError(f"--eval_setting must be base or instruction, got {self.eval_setting!r}")


def parse(argv=None):
    """``(args, grid, tasks)``; what follows a ``--`` goes to every ``cavpref train`` run unchanged."""
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    (args,) = parse_args([SweepArguments], argv, prog="scripts/sweep.py")
    args.extra = [*args.train_overrides, *extra]
    grid = {a: [float(v) for v in getattr(args, a)] for a in AXES if getattr(args, a)}
    if not grid:
        raise SystemExit("scripts/sweep.py: give at least one axis, e.g. --lambda_a 0.4 0.8 1.6")
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
    elif train_main(argv) != 0:
        raise RuntimeError(f"training {run_dir} failed")


def training_summary(run_dir: Path) -> dict[str, float]:
    """The last logged value of every numeric training metric (the fallback when there is no evaluation)."""
    last: dict[str, float] = {}
    for _, rec in jsonl.read_jsonl(run_dir / "logs.jsonl"):
        if "loss" in rec:
            last.update({k: v for k, v in rec.items() if isinstance(v, (int, float))})
    return last


def trust_curves(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    """``trust/<setting>/<metric>`` -> [(step, value)] from a run trained with ``trust_eval_steps``
    (``cavpref.eval.during_training``); empty without it."""
    curves: dict[str, list[tuple[int, float]]] = {}
    for _, rec in jsonl.read_jsonl(run_dir / "logs.jsonl"):
        for key, value in rec.items():
            if key.startswith("trust/") and key != "trust/seconds" and isinstance(value, (int, float)):
                curves.setdefault(key, []).append((rec["step"], value))
    return curves


def plot_trust(summary: dict, path: Path, setting: str = "instruction") -> bool:
    """One panel per axis: paired trust (solid) and false abstention (dashed) over training, one colour per
    value. False when no run logged trust during training."""
    axes = [a for a, runs in summary["axes"].items() if any(r.get("trust") for r in runs)]
    if not axes:
        return False
    plt = pyplot()
    fig, subplots = plt.subplots(1, len(axes), figsize=(4.5 * len(axes), 3.4), squeeze=False)
    for ax, axis in zip(subplots[0], axes):
        for n, run in enumerate(summary["axes"][axis]):
            colour = f"C{n}"
            for metric, style in (("paired", "-"), ("false_abstention", "--")):
                points = run.get("trust", {}).get(f"trust/{setting}/{metric}", [])
                if points:
                    label = f"{run['value']:g}" if metric == "paired" else None
                    ax.plot(*zip(*points), style, color=colour, marker=".", label=label)
        ax.set_title(axis.replace("lambda_", "λ_").replace("beta_", "β_"))
        ax.set_xlabel("step")
        ax.set_ylabel(f"{setting}: paired trust — / false abstention -- (%)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def evaluate_run(args, run_dir: Path, task: str | None) -> dict | None:
    """Accuracy (%) per task from the eval module (circular where run, else vanilla); None without data."""
    if args.no_eval or not args.eval_data:
        return None
    out = run_dir / "eval"
    results_file = out / "results.json"
    if results_file.exists():
        results = json.loads(results_file.read_text())
    else:
        eargs = EvalArgs(
            model=str(run_dir),
            data=args.eval_data,
            output=str(out),
            tasks=[task] if task else list(TASKS),
            limit=args.eval_limit,
            mode=args.eval_mode,
            media_root=args.eval_media_root,
            label=run_dir.name,
            no_judge=True,
        )
        results = evaluate(eargs, {"split": args.eval_split, "setting": args.eval_setting})
    acc = {}
    for setting in results["metrics"]["settings"].values():
        for t, block in setting["tasks"].items():
            acc.setdefault(t, []).append(primary(block))
    return {t: sum(v) / len(v) for t, v in acc.items() if all(x is not None for x in v)}


def plot(summary: dict, path: Path) -> None:
    plt = pyplot()
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
                    "trust": trust_curves(run_dir),
                    "accuracy": evaluate_run(args, run_dir, tasks.get(axis)),
                }
            )
            (out / "sweep.json").write_text(json.dumps(summary, indent=1))
    plot(summary, out / "sweep.png")
    written = [out / "sweep.json", out / "sweep.png"]
    if plot_trust(summary, out / "sweep_trust.png"):
        written.append(out / "sweep_trust.png")
    print(f"[sweep] {sum(len(v) for v in grid.values())} runs -> {', '.join(map(str, written))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
