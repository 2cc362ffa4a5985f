"""Seconds per training step of a quickstart stage by CPU thread count, data-loader workers and CPU instruction set
(the recipe's ``cpu_isa``), quiet and with competing processes.

    cavpref quickstart --preset small --out runs/qs --methods sft          # any quickstart run: gives the recipe
    python scripts/bench_threads.py --recipe runs/qs/recipes/start.yaml --steps 10 --rounds 1

Each cell is ``train_runtime / steps`` of one ``cavpref train`` subprocess (model loading excluded), the
thread count set by the recipe key ``num_threads``, the workers by ``dataloader_num_workers`` (persistent);
"competing" runs N busy-looping processes alongside.
Cells are run interleaved, and the table prints ratios to the first cell (1 thread, 0 workers, quiet by
default) of the same round, since absolute times on a shared machine are noise.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from cavpref import jsonl
from cavpref.parsing import parse_args


@dataclass
class BenchArguments:
    recipe: str = field(
        default="", metadata={"help": "a `cavpref train` recipe (e.g. a quickstart's recipes/start.yaml)"}
    )
    steps: int = field(default=10, metadata={"help": "training steps per cell"})
    rounds: int = field(default=1, metadata={"help": "rounds over all cells (interleaved)"})
    threads: list[int] = field(default_factory=lambda: [1, 2], metadata={"help": "num_threads values"})
    workers: list[int] = field(
        default_factory=lambda: [0, 1],
        metadata={"help": "dataloader_num_workers values (persistent workers)"},
    )
    compete: list[int] = field(default_factory=lambda: [0, 1], metadata={"help": "busy competing processes"})
    cpu_isa: list[str] = field(
        default_factory=lambda: ["avx2"], metadata={"help": "cpu_isa values (avx2, native)"}
    )


def step_time(
    recipe: str, threads: int, workers: int, compete: int, isa: str, steps: int, out: Path
) -> float:
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(compete)]
    try:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "cavpref.apps.cli",
                "train",
                recipe,
                "--output_dir",
                str(out),
                "--max_steps",
                str(steps),
                "--save_strategy",
                "no",
                "--num_threads",
                str(threads),
                "--dataloader_num_workers",
                str(workers),
                "--dataloader_persistent_workers",
                str(workers > 0).lower(),
                "--logging_steps",
                str(steps),
                "--cpu_isa",
                isa,
            ],
            check=True,
            capture_output=True,
            text=True,
        )
    finally:
        for b in burners:
            b.kill()
            b.wait()
    rows = [rec for _, rec in jsonl.read_jsonl(out / "logs.jsonl")]
    return next(r["train_runtime"] for r in rows if "train_runtime" in r) / steps


def main(argv: list[str] | None = None) -> None:
    (args,) = parse_args(
        [BenchArguments], sys.argv[1:] if argv is None else argv, prog="scripts/bench_threads.py"
    )
    if not args.recipe:
        raise SystemExit("scripts/bench_threads.py: --recipe is required")
    cells = [
        (t, w, c, i) for c in args.compete for w in args.workers for t in args.threads for i in args.cpu_isa
    ]
    times: dict[tuple[int, int, int, str], list[float]] = {cell: [] for cell in cells}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for t, w, c, i in cells:
                out = Path(tmp) / f"r{r}_t{t}_w{w}_c{c}_{i}"
                times[(t, w, c, i)].append(step_time(args.recipe, t, w, c, i, args.steps, out))
    base = times[cells[0]]
    print(
        f"{args.recipe}: {args.steps} steps, {args.rounds} round(s); ratio = s/step over the "
        f"{cells[0][0]}-thread, {cells[0][1]}-worker, {cells[0][2]}-competing, {cells[0][3]} cell of the same "
        "round"
    )
    print("| num_threads | data-loader workers | competing processes | cpu_isa | s/step (mean) | ratio |")
    print("|---|---|---|---|---|---|")
    for cell in cells:
        ratio = sum(a / b for a, b in zip(times[cell], base)) / len(base)
        mean = sum(times[cell]) / len(times[cell])
        print(f"| {cell[0]} | {cell[1]} | {cell[2]} | {cell[3]} | {mean:.3f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
