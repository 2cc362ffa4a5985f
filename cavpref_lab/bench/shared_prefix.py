"""Shared-prefix scoring at realistic proportions (issue 15), in one run: DPO full rows (the TRL-style baseline),
DPO shared, CAVPref full rows, CAVPref shared, on all-MVIT, all-MCIT and the paper's uniform 9-task mix; then
eval's option-likelihood mode (items/s) with and without shared prefixes.

    python scripts/bench_shared_prefix.py [--batch 9] [--rounds 3] [--hidden 128] [--layers 4] [--frames 8]
        [--frame_size 448] [--audio_seconds 10] [--device auto]

Rows are what a real audio-visual row looks like: 8 frames at 448×448 give 1,024 video tokens and 10 s of audio
250 audio tokens per clip (the tiny Qwen2.5-Omni thinker's own processor counts them), against a ~40-token prompt
and responses of a few tokens. The clips are deterministic synthetic media of the streams each task's MediaSpec
presents (MVT has no video, MAT no audio), so every task's row pattern is the real one.

A step is ``trainer.training_step`` (policy forward, reference forward, loss, backward) plus the optimizer step,
configurations interleaved round by round, best time of each reported (the estimate least disturbed by other
load); ratios are taken within this one run. "LM tokens" is what the language model processes per forward
(policy and reference alike): its ratio to DPO full rows is the token-count ideal of a step whose cost is linear
in tokens. "saved MB" is the bytes autograd keeps for backward (activation memory) on CPU, peak allocated on CUDA.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import torch

from cavpref.bench.rows import RealisticMedia, benchmark_rows
from cavpref.bench.steps import media_tokens, prepare, timed_step
from cavpref.parsing import parse_args

CLOCK = [time.perf_counter]  # the step timer, set from --clock


@dataclass
class BenchArguments:
    batch: int = field(default=9, metadata={"help": "samples per step (one per task in the mix)"})
    rounds: int = field(default=3, metadata={"help": "timed rounds (best and median reported)"})
    hidden: int = field(default=128, metadata={"help": "hidden size of the tiny thinker's language model"})
    layers: int = field(default=4, metadata={"help": "language-model layers"})
    frames: int = field(default=8, metadata={"help": "frames per clip"})
    frame_size: int = field(
        default=448, metadata={"help": "frame height = width (448: 256 video tokens per 2 frames)"}
    )
    audio_seconds: float = field(
        default=10.0, metadata={"help": "audio per clip (25 audio tokens per second)"}
    )
    eval_items: int = field(default=9, metadata={"help": "items scored in the option-likelihood part"})
    device: Literal["auto", "cpu", "cuda"] = field(
        default="auto", metadata={"help": "auto: cuda when available"}
    )
    clock: Literal["wall", "cpu"] = field(
        default="wall",
        metadata={
            "help": "wall: time.perf_counter; cpu: this process's CPU time (use with OMP_NUM_THREADS=1 on a CPU "
            "shared with other jobs: it counts the work, not the wait for a core)"
        },
    )


def build(root: Path, args: BenchArguments):
    from datasets import Dataset

    from cavpref.models.tiny import build_tiny_qwen_omni

    examples = benchmark_rows(max(1, args.batch))
    build_tiny_qwen_omni(
        root / "model",
        hidden_size=args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=4 * args.hidden,
        frame_pixels=args.frame_size**2,
        extra_corpus=[e.prompt + " " + e.chosen + " " + e.rejected for e in examples],
    )
    return Dataset.from_list([e.to_row() for e in examples])


def make_case(name, method, tasks, shared, data, root, args, media, device):
    from cavpref.config import CAVPrefConfig
    from cavpref.models import AVModelArguments, load_model_io
    from cavpref.models.shared_prefix import token_counts
    from cavpref.trainer import CAVPrefTrainer

    rows = data if tasks == "mix" else data.select([i for i, t in enumerate(data["task"]) if t in tasks])
    rows = rows.select(range(min(args.batch, len(rows))))
    cfg = CAVPrefConfig(
        output_dir=str(root / "runs" / name.replace(" ", "_")),
        method=method,
        per_device_train_batch_size=args.batch,
        max_steps=1,
        bf16=False,
        use_cpu=device == "cpu",
        activation_checkpointing=False,
        report_to="none",
        learning_rate=1e-4,
        media_root=str(root / "media"),
        save_strategy="no",
        disable_tqdm=True,
    )
    model_io = load_model_io(
        AVModelArguments(model_name_or_path=str(root / "model"), dtype="float32", shared_prefix=shared)
    )
    tr = CAVPrefTrainer(model_io.model, model_io, args=cfg, train_dataset=rows)
    inputs = prepare(tr, tr.train_dataset, media)
    counts = token_counts(inputs["model_inputs"])
    return {
        "name": name,
        "trainer": tr,
        "inputs": inputs,
        "rows": int(inputs["num_rows"]),
        "tokens": counts["shared_prefix" if shared else "full_rows"],
        "prefixes": int(inputs["model_inputs"]["packed"]["input_ids"].shape[0])
        if shared and "packed" in inputs["model_inputs"]
        else int(inputs["num_rows"]),
        "media_tokens": media_tokens(model_io, inputs["model_inputs"]),
        "times": [],
        "mem": [],
    }


def step(case, device):
    m = timed_step(case["trainer"], case["inputs"], device, CLOCK[0])
    return m.seconds, (m.peak_bytes if device == "cuda" else m.saved_bytes)


def bench_eval(root: Path, args: BenchArguments, media: RealisticMedia, data, device: str) -> None:
    """``--mode likelihood``: every option of an item scored against the item's (prompt, media) prefix."""
    from cavpref.models import AVModelArguments, Row, load_model_io

    items = [Row(ex["prompt"], "", media(ex["media"]), ex["media"], ex["id"]) for ex in data][
        : args.eval_items
    ]
    options = [["(A) a violin", "(B) a cello", "(C) a flute", "(D) a drum", "(E) None of the above"]] * len(
        items
    )
    ios = {
        s: load_model_io(
            AVModelArguments(model_name_or_path=str(root / "model"), dtype="float32", shared_prefix=s)
        )
        for s in (False, True)
    }
    for io in ios.values():
        io.model.to(device).eval()
    times = {False: [], True: []}
    for _ in range(args.rounds + 1):
        for shared, io in ios.items():
            t0 = CLOCK[0]()
            for item, opts in zip(items, options):  # the evaluator's batch of one item
                io.option_logps(io.model, [item], [opts])
            times[shared].append(CLOCK[0]() - t0)
    best = {s: min(t[1:]) for s, t in times.items()}
    print("\nOption likelihood (eval --mode likelihood), 5 options per item, one item per call:")
    print("| scoring | items/s (best) | items/s (median) | speed-up | LM tokens per item | token ideal |")
    print("|---|---|---|---|---|---|")
    from cavpref.models.shared_prefix import token_counts

    batch = ios[True].collate(
        [Row(items[0].prompt, o, items[0].media, items[0].media_key) for o in options[0]]
    )
    tok = token_counts(batch)
    for shared in (False, True):
        n = tok["shared_prefix" if shared else "full_rows"]
        print(
            f"| {'shared prefix' if shared else 'full rows'} | {len(items) / best[shared]:.2f} | "
            f"{len(items) / statistics.median(times[shared][1:]):.2f} | {best[False] / best[shared]:.2f} | {n} | "
            f"{tok['full_rows'] / n:.2f} |"
        )


def main(argv=None):
    (args,) = parse_args(
        [BenchArguments], sys.argv[1:] if argv is None else argv, prog="scripts/bench_shared_prefix.py"
    )
    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    CLOCK[0] = time.process_time if args.clock == "cpu" else time.perf_counter
    root = Path(tempfile.mkdtemp(prefix="bench_shared_prefix_"))
    data = build(root, args)
    media = RealisticMedia(args.frames, args.frame_size, args.audio_seconds)
    specs = []
    for tasks, label in (("mix", "mix9"), (("MVIT",), "MVIT"), (("MCIT",), "MCIT")):
        for method in ("dpo", "cavpref"):
            for shared in (False, True):
                specs.append((f"{method} {'shared' if shared else 'full'}  {label}", method, tasks, shared))
    cases = [make_case(n, m, t, s, data, root, args, media, device) for n, m, t, s in specs]
    for case in cases:  # warm-up
        step(case, device)
    for _ in range(args.rounds):
        for case in cases:
            dt, mem = step(case, device)
            case["times"].append(dt)
            case["mem"].append(mem)
    print(
        f"device={device} hidden={args.hidden} layers={args.layers} batch={args.batch} rounds={args.rounds} "
        f"frames={args.frames}x{args.frame_size}^2 audio={args.audio_seconds}s torch_threads={torch.get_num_threads()} clock={args.clock} "
        f"media tokens per row (max)={max(c['media_tokens'] for c in cases)}"
    )
    mem_label = "peak MB" if device == "cuda" else "saved MB"
    print(
        f"| config | rows | prefixes | LM tokens / forward | step s (best) | step s (median) | speed vs DPO full | "
        f"token ideal | {mem_label} | memory vs same method full |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    by = {c["name"]: c for c in cases}
    best = {n: min(c["times"]) for n, c in by.items()}
    for c in cases:
        label = c["name"].split("  ")[1]
        base = by[f"dpo full  {label}"]
        same_full = by[c["name"].replace("shared", "full")]
        print(
            f"| {c['name']} | {c['rows']} | {c['prefixes']} | {c['tokens']} | {best[c['name']]:.3f} | "
            f"{statistics.median(c['times']):.3f} | {best[base['name']] / best[c['name']]:.2f}x | "
            f"{base['tokens'] / c['tokens']:.2f}x | {max(c['mem']) / 2**20:.1f} | "
            f"{max(c['mem']) / max(same_full['mem']):.2f} |"
        )
    mix = {k: best[f"{k}  mix9"] for k in ("dpo full", "dpo shared", "cavpref shared")}
    print(
        f"\n9-task mix: DPO shared = {mix['dpo full'] / mix['dpo shared']:.2f}x DPO full (target >= 1.8); "
        f"CAVPref shared = {mix['dpo full'] / mix['cavpref shared']:.2f}x DPO full (target >= 1.2)"
    )
    bench_eval(root, args, media, data, device)


if __name__ == "__main__":
    main()
