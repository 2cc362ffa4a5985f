"""Does the quickstart's starting model see and hear? Builds only the start and measures it (issue 19 item 2).

    OMP_NUM_THREADS=1 python scripts/bench_start_perception.py --out runs/perception/base --num_clips 48 \\
        --sft_steps 400 [--frame_size 84] [any quickstart key]

Runs the quickstart's stages up to the starting model (world -> prep -> tiny thinker -> start data -> SFT;
finished stages are reused, so several settings can share a world by sharing ``--out`` up to ``start``
only if they differ in SFT keys alone — simplest is one ``--out`` per setting) and measures, on the
*test* clips (never trained on):

- the caption probe: greedy answers to "what do you see / hear / which objects are sounding, and where",
  exact match against the world's ground truth (``quickstart_science.caption_probe``);
- CLEAN accuracy (the quickstart's evaluation: instruction setting, CircularEval, its answer mode) with
  both streams, with the video removed and with the audio removed (``EvalArgs.drop_stream``); every
  CLEAN question is audio-visual (the single-modality questions are excluded by prep), so the drops are
  over all CLEAN test items.

Writes ``perception.json`` and prints one markdown row (targets: see / hear >= 80 %, where >= 60 %,
CLEAN drops >= 15 points without either stream). Wall times come from the stage timer; on a shared
machine quote ratios, not absolute times.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cavpref.eval.loader import load_items

from cavpref.apps.quickstart import QuickstartConfig, Stages, eval_stage, task_accuracy
from cavpref.apps.quickstart.pipeline import start_stages
from cavpref.data import CLEAN_TASK
from cavpref.parsing import parse_args


@dataclass
class PerceptionArguments:
    """The script's own keys; every ``QuickstartConfig`` key is accepted too (``--help`` lists both)."""

    drop_streams: list[str] = field(
        default_factory=lambda: ["video", "audio"],
        metadata={
            "help": "streams removed, one at a time, for the CLEAN probe (video, audio; empty: both streams only)"
        },
    )

    def __post_init__(self):
        unknown = sorted(set(self.drop_streams) - {"video", "audio"})
        if unknown:
            raise ValueError(f"--drop_streams: unknown {unknown}; choose from video, audio")


def _science():
    """``scripts/quickstart_science.py`` as a module (its caption probe is the one the science report uses)."""
    spec = importlib.util.spec_from_file_location(
        "quickstart_science", Path(__file__).with_name("quickstart_science.py")
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def build_start(cfg: QuickstartConfig, stage: Stages) -> dict:
    world, data, start = start_stages(cfg, stage)
    return {"root": str(Path(cfg.out)), "world": str(world), "data": str(data), "start": str(start)}


def circular_by_category(run: Path, data: Path) -> dict[str, list[int]]:
    """{"source/category": [items right on every CircularEval pass, items]} of one CLEAN evaluation, from
    its per-pass records: which questions lose accuracy without a stream (a Localization item needs the
    video, a World-knowledge one does not)."""
    category = {it.id: f"{it.source}/{it.category}" for it in load_items(data, split="test").items}
    passes: dict[str, list[bool]] = {}
    for path in sorted(run.glob("records.rank*.jsonl")):
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            passes.setdefault(rec["item_id"], []).append(bool(rec["correct"]))
    out: dict[str, list[int]] = {}
    for item, ok in passes.items():
        counts = out.setdefault(category.get(item, "?"), [0, 0])
        counts[0] += all(ok)
        counts[1] += 1
    return dict(sorted(out.items()))


def measure(cfg: QuickstartConfig, stage: Stages, qs: dict, drops: list[str]) -> dict:
    lines, captions = _science().caption_probe(cfg, qs)
    clean = {}
    for drop in (None, *drops):
        name = f"perception/clean_{drop or 'both'}"
        res = json.loads(
            (
                stage(
                    name,
                    eval_stage,
                    Path(qs["start"]),
                    Path(qs["data"]),
                    Path(qs["world"]),
                    f"start {drop or 'both'}",
                    tasks=[CLEAN_TASK],
                    drop_stream=drop,
                ).dir
                / "results.json"
            ).read_text()
        )
        clean[drop or "both"] = {m: task_accuracy(res, CLEAN_TASK, m) for m in ("circular", "vanilla")}
        clean[drop or "both"]["categories"] = circular_by_category(stage.root / name, Path(qs["data"]))
    return {"captions": captions, "caption_clips": lines[-1], "clean": clean}


def row(cfg: QuickstartConfig, m: dict) -> str:
    caps = list(m["captions"].values())
    c = {k: v["circular"] for k, v in m["clean"].items()}
    drop = " | ".join(f"{c['both'] - c[s]:+.1f}" if s in c else "–" for s in ("video", "audio"))
    return (
        f"| {cfg.frame_size} | {cfg.sft_steps} | {cfg.hidden_size} | {cfg.vision_hidden_size} | "
        + " | ".join(f"{v:.1f}" for v in caps)
        + f" | {c['both']:.1f} | {drop} |"
    )


HEADER = (
    "| frame px | SFT steps | width | vision width | see % | hear % | where % | CLEAN circ. % | "
    "drop w/o video | drop w/o audio |\n|---|---|---|---|---|---|---|---|---|---|"
)


def main(argv=None) -> int:
    args, cfg = parse_args(
        [PerceptionArguments, QuickstartConfig],
        sys.argv[1:] if argv is None else argv,
        prog="scripts/bench_start_perception.py",
    )
    t0 = time.perf_counter()
    Path(cfg.out).mkdir(parents=True, exist_ok=True)
    stage = Stages(cfg, Path(cfg.out))
    qs = build_start(cfg, stage)
    m = measure(cfg, stage, qs, list(args.drop_streams))
    out = {"config": asdict(cfg), **m, "timings": stage.timings, "wall_s": time.perf_counter() - t0}
    (Path(cfg.out) / "perception.json").write_text(json.dumps(out, indent=1))
    print(HEADER)
    print(row(cfg, m))
    print("\nCLEAN circular by question category (right on every pass / items):")
    for name, res in m["clean"].items():
        print(f"- {name}: " + ", ".join(f"{k} {a}/{n}" for k, (a, n) in res["categories"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
