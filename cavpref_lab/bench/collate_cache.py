"""Collator throughput with and without the decoded-media cache (``media_cache_size``) and the feature cache
(``feature_cache_size``: each distinct clip featurised once), in one run.

    python scripts/bench_collate_cache.py [--out DIR] [--rows 256] [--batch 8] [--epochs 2] [--step]

On the quickstart's own data (``cavpref quickstart --preset small`` is run into ``--out`` first, ~20 s, unless a
quickstart run is there; an existing one is used with its own frame settings): the starting-SFT rows are collated
for the run's starting model, ``--epochs`` passes over ``--rows`` rows in batches of ``--batch``, with no cache,
the decoded-media cache, and both caches (each large enough for every clip). The epochs after the first are what
the caches speed up (the first one fills them). Prints rows/s per epoch (CPU time of this process, so a busy
machine moves both columns alike) and the ratios; ``--step`` also times the starting SFT's step on each batch
(forward and backward of the model, towers trained as in the start) and prints the share collation takes of
collation + step.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from cavpref.parsing import parse_args


@dataclass
class BenchArguments:
    out: str = field(
        default="runs/bench_collate_cache",
        metadata={
            "help": "a quickstart run folder (reused when it finished before, else a --preset small one is run there)"
        },
    )
    rows: int = field(default=256, metadata={"help": "training rows collated per epoch"})
    batch: int = field(default=8, metadata={"help": "rows per batch"})
    epochs: int = field(
        default=2, metadata={"help": "epochs per cache size (the cache pays off from epoch 2)"}
    )
    step: bool = field(default=False, metadata={"help": "also time the SFT step on each batch"})


def main(argv=None) -> int:
    (args,) = parse_args(
        [BenchArguments], sys.argv[1:] if argv is None else argv, prog="scripts/bench_collate_cache.py"
    )

    from datasets import load_from_disk

    from cavpref.apps.quickstart import QuickstartConfig, run
    from cavpref.collator import CAVPrefCollator
    from cavpref.loss import DEFAULT_SWITCHES
    from cavpref.media.decode import FramePolicy
    from cavpref.models.registry import load_model_io

    out = Path(args.out)
    saved = out / "quickstart_config.json"  # an existing run (e.g. the default size) is used as it was made
    cfg = (
        QuickstartConfig(**json.loads(saved.read_text()))
        if saved.exists()
        else QuickstartConfig(out=str(out), preset="small")
    )
    if not (out / "start" / ".done.json").exists():
        run(cfg)
    rows = load_from_disk(str(out / "start_data" / "train"))
    rows = rows.select(range(min(args.rows, len(rows))))
    frames = FramePolicy(num_frames=cfg.num_frames, size=(cfg.frame_size, cfg.frame_size))
    big = 4 * len(rows)
    configs = {"no cache": (0, 0), "media_cache_size": (big, 0), "media + feature_cache_size": (big, big)}
    table, steps = {}, {}
    for name, (media_cache, feature_cache) in configs.items():
        model_io = load_model_io(str(out / "start"), feature_cache_size=feature_cache)
        model_io.model.requires_grad_(True)
        col = CAVPrefCollator(
            model_io,
            DEFAULT_SWITCHES,
            method="sft",
            media_root=str(out / "world"),
            frames=frames,
            cache_size=media_cache,
        )
        per_epoch, step_s = [], 0.0
        for _ in range(args.epochs):
            collate_s = step_s = 0.0
            for i in range(0, len(rows), args.batch):
                t0 = time.process_time()
                batch = col([rows[j] for j in range(i, min(i + args.batch, len(rows)))])
                collate_s += time.process_time() - t0
                if args.step:
                    t0 = time.process_time()
                    (-model_io.logps(model_io.model, batch["model_inputs"]).sum()).backward()
                    model_io.model.zero_grad(set_to_none=True)
                    step_s += time.process_time() - t0
            per_epoch.append((len(rows) / collate_s, collate_s))
        table[name], steps[name] = per_epoch, step_s
    print("| caches | " + " | ".join(f"epoch {e + 1} rows/s" for e in range(args.epochs)) + " |")
    print("|---" * (args.epochs + 1) + "|")
    for name, per_epoch in table.items():
        print(f"| {name} | " + " | ".join(f"{v:.1f}" for v, _ in per_epoch) + " |")
    last, plain = args.epochs - 1, table["no cache"][args.epochs - 1][0]
    print()
    for name in list(configs)[1:]:
        print(f"last epoch, {name} / no cache: {table[name][last][0] / plain:.2f}x")
    if args.step:
        print("\nlast epoch, collation's share of collation + SFT step (CPU time):")
        for name, per_epoch in table.items():
            c = per_epoch[last][1]
            print(
                f"  {name}: {100 * c / (c + steps[name]):.1f} % (collation {c:.1f} s, step {steps[name]:.1f} s)"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
