"""Does the quickstart's starting model see and hear? Builds only the start and measures it (issue 19 item 2).

    OMP_NUM_THREADS=1 python scripts/bench_start_perception.py --out runs/perception/base --num_clips 48 \\
        --sft_steps 400 [--frame_size 84] [any quickstart key]

Runs the quickstart's stages up to the starting model (world -> prep -> tiny thinker -> start data -> SFT;
finished stages are reused, so several settings can share a world by sharing ``--out`` up to ``start``
only if they differ in SFT keys alone — simplest is one ``--out`` per setting) and measures, on the
*test* clips (never trained on):

- the caption probe: greedy answers to "what do you see / hear / which objects are sounding, and where",
  exact match against the world's ground truth (``quickstart_science.caption_answers``), also by how many
  entities a clip shows and sounds it has (a split's share of three-entity clips moves the total);
- CLEAN accuracy (the quickstart's evaluation: instruction setting, CircularEval, its answer mode) with
  both streams, with the video removed and with the audio removed (``EvalArgs.drop_stream``); every
  CLEAN question is audio-visual (the single-modality questions are excluded by prep), so the drops are
  over all CLEAN test items; the video's also on the questions that need it (``needs_video``), per source,
  and on those the audio suffices for: a start that answers worse without the video whatever the question
  drops on both.

Writes ``perception.json`` and prints one markdown row (targets: see / hear >= 80 %, where >= 60 %,
CLEAN drops >= 15 points without either stream). Wall times come from the stage timer; on a shared
machine quote ratios, not absolute times.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cavpref import jsonl
from cavpref.apps.quickstart import (
    QuickstartConfig,
    Stages,
    eval_stage,
    stage_folders,
    start_stages,
    task_accuracy,
    write_config,
)
from cavpref.data import CLEAN_TASK
from cavpref.eval.benchmarks.avtrustbench.reader import load_items
from cavpref.parsing import parse_args
from cavpref_lab.science import quickstart_science as science

PROBE_CLIPS = ("test", "train", "caption_world", "test_muted", "test_blind")


@dataclass
class PerceptionArguments:
    """The script's own keys; every ``QuickstartConfig`` key is accepted too (``--help`` lists both)."""

    drop_streams: list[str] = field(
        default_factory=lambda: ["video", "audio"],
        metadata={
            "help": "streams removed, one at a time, for the CLEAN probe (video, audio; empty: both streams only)"
        },
    )

    probe_clips: list[str] = field(
        default_factory=lambda: ["test"],
        metadata={
            "help": "clips the caption probe runs on, for the start and (with --caption_steps) the captions-only "
            "checkpoint: test (held out), train (the run's train clips), caption_world (every 20th clip of "
            'the caption world), test_muted ("what do you see" of the test clips without their audio), '
            'test_blind ("what do you hear" without their video): train and caption_world tell learnt-by-heart '
            "from cannot-fit, test_muted names from the pixels from names from the audio, test_blind sounds "
            "counted from the audio from sounds counted on screen"
        },
    )

    def __post_init__(self):
        unknown = sorted(set(self.drop_streams) - {"video", "audio"})
        if unknown:
            raise ValueError(f"--drop_streams: unknown {unknown}; choose from video, audio")
        unknown = sorted(set(self.probe_clips) - set(PROBE_CLIPS))
        if unknown:
            raise ValueError(f"--probe_clips: unknown {unknown}; choose from {', '.join(PROBE_CLIPS)}")


def build_start(cfg: QuickstartConfig, stage: Stages) -> dict:
    start_stages(cfg, stage)
    return stage_folders(Path(cfg.out))


# A CLEAN question needs the video when its answer is a place on screen or it names one: the world's sources
# are also heard, so "what is making the sound" / "where does the sound come from" (a source's name) can be
# answered from the audio, while "where is the <...> instrument / sounding object" (left / middle / right / off
# screen), "where is this video taken" (the background) and every question naming a screen position cannot.
# Decided from the question text alone, before any model was measured on it. The group is also counted per
# source: an AVQA clip has one sounding object ("where is the sounding object" reads its slot), a MUSIC-AVQA
# clip several instruments ("is the instrument on the left louder ...", "where is the loudest instrument" bind
# a sound to a slot), and a split's share of each moves the total.
VIDEO_CUES = ("left", "right", "middle", "where is the", "where is this video taken")


def needs_video(item) -> bool:
    """Does this CLEAN item's answer depend on the video (``VIDEO_CUES`` in its source question)?"""
    meta = item.meta if isinstance(item.meta, dict) else {}
    question = str(meta.get("source_question") or item.question).lower()
    return any(cue in question for cue in VIDEO_CUES)


def circular_by_category(run: Path, data: Path) -> dict[str, list[int]]:
    """{"source/category": [items right on every CircularEval pass, items]} of one CLEAN evaluation, from
    its per-pass records, plus the groups "needs video" / "audio suffices" (``needs_video``) and "needs video:
    <source>": which questions lose accuracy without a stream."""
    items = load_items(data, split="test").items
    category = {it.id: f"{it.source}/{it.category}" for it in items}
    groups = {
        it.id: ("needs video", f"needs video: {it.source}") if needs_video(it) else ("audio suffices",)
        for it in items
    }
    passes: dict[str, list[bool]] = {}
    for path in sorted(run.glob("records.rank*.jsonl")):
        for _, rec in jsonl.read_jsonl(path):
            passes.setdefault(rec["item_id"], []).append(bool(rec["correct"]))
    out: dict[str, list[int]] = {}
    for item, ok in passes.items():
        for key in (category.get(item, "?"), *groups.get(item, ("?",))):
            counts = out.setdefault(key, [0, 0])
            counts[0] += all(ok)
            counts[1] += 1
    return dict(sorted(out.items()))


def caption_probes(cfg: QuickstartConfig, qs: dict, clips: list[str]) -> dict[str, list[dict]]:
    """{"<model>/<clips>": per-clip caption answers (``quickstart_science.caption_answers``)} for the start and,
    when it was trained, the captions-only checkpoint (``start_captions``): what the captions stage taught, and
    what the mixed SFT kept."""
    models = [m for m in ("start_captions", "start") if (Path(qs["root"]) / m / ".done.json").exists()]
    return {
        f"{m}/{c}": science.caption_answers(
            cfg,
            qs,
            model=str(Path(qs["root"]) / m),
            clips=c.removesuffix("_muted").removesuffix("_blind"),
            drop="audio" if c.endswith("_muted") else "video" if c.endswith("_blind") else None,
        )
        for m in models
        for c in clips
        if c != "caption_world" or (Path(qs["caption_world"]) / "world.json").exists()
    }


# The caption prompts, and the count each is broken down by: a list of three is harder than a list of one.
PROBES = (("see", "seen"), ("hear", "heard"), ("where", "heard"))


def by_count(records: list[dict]) -> dict[str, dict[str, list[int]]]:
    """{"see" / "hear" / "where": {count: [right, clips]}}, "see" by entities on screen, "hear" and "where"
    by sounds heard (counts of 3 and more pooled as "3+"): accuracy with a split's composition taken out."""
    key = dict(PROBES)
    out: dict[str, dict[str, list[int]]] = {}
    for r in records:
        for probe, ok in zip(r["asked"], r["ok"]):
            counts = out.setdefault(probe, {}).setdefault(
                str(min(r[key[probe]], 3)).replace("3", "3+"), [0, 0]
            )
            counts[0] += ok
            counts[1] += 1
    return {p: dict(sorted(c.items())) for p in key if (c := out.get(p))}


def measure(cfg: QuickstartConfig, stage: Stages, qs: dict, drops: list[str], clips: list[str]) -> dict:
    answers = caption_probes(cfg, qs, clips)
    probes = {name: science.probe_accuracy(records) for name, records in answers.items()}
    counts = {name: by_count(records) for name, records in answers.items()}
    captions = probes.get("start/test") or science.caption_probe(cfg, qs)[1]
    clean = {}
    for drop in (None, *drops):
        limit = f"_limit{cfg.eval_limit}" if cfg.eval_limit else "_all"  # a stage per item set
        name = f"perception/clean_{drop or 'both'}{limit}"
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
    return {
        "captions": captions,
        "caption_probes": probes,
        "caption_counts": counts,
        "caption_answers": answers,  # per clip: what a wrong answer said (perception.json)
        "clean": clean,
    }


def subset_accuracy(m: dict, stream: str, group: str) -> float | None:
    """Circular accuracy (%) of one CLEAN run (``both`` / ``video`` / ``audio`` removed) on one question group."""
    right, n = m["clean"][stream]["categories"].get(group, (0, 0))
    return 100.0 * right / n if n else None


def video_change(m: dict, group: str) -> str:
    """Circular accuracy without the video minus with it, in points (negative: the video helped), on one
    question group; "–" if unmeasured."""
    both = subset_accuracy(m, "both", group)
    without = subset_accuracy(m, "video", group) if "video" in m["clean"] else None
    return f"{without - both:+.1f}" if both is not None and without is not None else "–"


def row(cfg: QuickstartConfig, m: dict) -> str:
    caps = list(m["captions"].values())
    c = {k: v["circular"] for k, v in m["clean"].items()}
    change = " | ".join(f"{c[s] - c['both']:+.1f}" if s in c else "–" for s in ("video", "audio"))
    groups = ("needs video", "needs video: avqa", "needs video: music_avqa", "audio suffices")
    px = cfg.frame_size
    return (
        f"| {px} | {cfg.sft_steps} | {cfg.hidden_size} | {cfg.vision_hidden_size} | "
        + " | ".join(f"{v:.1f}" for v in caps)
        + f" | {c['both']:.1f} | {change} | "
        + " | ".join(video_change(m, g) for g in groups)
        + " |"
    )


HEADER = (
    "| frame px | SFT steps | width | vision width | see % | hear % | where % | CLEAN circ. % | change w/o video "
    "| w/o audio | w/o video, needs video | of it AVQA (one object) | of it MUSIC-AVQA (sound to slot) "
    "| w/o video, audio suffices |\n" + "|---" * 14 + "|"
)


def main(argv=None) -> int:
    args, cfg = parse_args(
        [PerceptionArguments, QuickstartConfig],
        sys.argv[1:] if argv is None else argv,
        prog="scripts/bench_start_perception.py",
    )
    t0 = time.perf_counter()
    write_config(cfg)  # as `cavpref quickstart` does: scripts/probe_where.py reads it, also mid-run
    stage = Stages(cfg, Path(cfg.out))
    qs = build_start(cfg, stage)
    m = measure(cfg, stage, qs, list(args.drop_streams), list(args.probe_clips))
    # a rerun on a finished folder reuses every stage and only recounts: keep the stage times measured before
    path = Path(cfg.out) / "perception.json"
    before = json.loads(path.read_text()).get("timings", {}) if path.exists() else {}
    timings = {**before, **stage.timings}
    out = {"config": asdict(cfg), **m, "timings": timings, "wall_s": time.perf_counter() - t0}
    path.write_text(json.dumps(out, indent=1))
    print(HEADER)
    print(row(cfg, m))
    print("\n| caption probe (model / clips) | see % | hear % | where % |\n|---|---|---|---|")
    for name, acc in m["caption_probes"].items():
        asked = dict(zip(m["caption_answers"][name][0]["asked"], acc.values())) if acc else {}
        print(f"| {name} | " + " | ".join(f"{asked[p]:.1f}" if p in asked else "–" for p, _ in PROBES) + " |")
    print(
        "\n| caption probe by count (model / clips) | see: entities on screen | hear: sounds | where: sounds |"
    )
    print("|---|---|---|---|")
    for name, counts in m["caption_counts"].items():
        cells = [
            ", ".join(f"{n}: {a}/{t}" for n, (a, t) in counts.get(p, {}).items()) or "–" for p, _ in PROBES
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print("\nCLEAN circular by question category (right on every pass / items):")
    for name, res in m["clean"].items():
        print(f"- {name}: " + ", ".join(f"{k} {a}/{n}" for k, (a, n) in res["categories"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
