"""Collator throughput with and without the decoded-media cache (``media_cache_size``), in one run.

    python scripts/bench_collate_cache.py [--out DIR] [--rows 256] [--batch 8] [--epochs 2]

On the quickstart's own data (``cavpref quickstart --preset small`` is run into ``--out`` first, ~20 s, unless a
quickstart run is there; an existing one is used with its own frame settings): the starting-SFT rows are collated for the tiny Qwen2.5-Omni thinker, ``--epochs`` passes over
``--rows`` rows in batches of ``--batch``, once with ``cache_size=0`` and once with a cache large enough for
every clip. The epochs after the first are what the cache speeds up (the first one fills it). Prints rows/s
per epoch and the ratio; no model forward is timed (see scripts/bench_trainer.py for steps).
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
    model_io = load_model_io(str(out / "start"))
    rows = load_from_disk(str(out / "start_data" / "train"))
    rows = rows.select(range(min(args.rows, len(rows))))
    frames = FramePolicy(num_frames=cfg.num_frames, size=(cfg.frame_size, cfg.frame_size))
    table = {}
    for cache in (0, 4 * len(rows)):
        col = CAVPrefCollator(
            model_io,
            DEFAULT_SWITCHES,
            method="sft",
            media_root=str(out / "world"),
            frames=frames,
            cache_size=cache,
        )
        per_epoch = []
        for _ in range(args.epochs):
            t0 = time.perf_counter()
            for i in range(0, len(rows), args.batch):
                col([rows[j] for j in range(i, min(i + args.batch, len(rows)))])
            per_epoch.append(len(rows) / (time.perf_counter() - t0))
        table[cache] = per_epoch
    print("| cache_size | " + " | ".join(f"epoch {e + 1} rows/s" for e in range(args.epochs)) + " |")
    print("|---" * (args.epochs + 1) + "|")
    for cache, per_epoch in table.items():
        print(f"| {cache} | " + " | ".join(f"{v:.1f}" for v in per_epoch) + " |")
    last = args.epochs - 1
    print(f"\nlast epoch, cached / uncached: {table[4 * len(rows)][last] / table[0][last]:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
