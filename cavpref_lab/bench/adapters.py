"""Model I/O throughput on tiny offline models: log-prob rows/s with and without encoder reuse on a CAVPref-shaped
batch, and generation items/s. Prints one table; all ratios are measured within this one run.

CAVPref batch (MVIT-shaped, paper Eq. 3): per sample, y_w and y_l under the presented media (video of clip B,
audio of clip A) plus the visual anchor pair — the correct answer under the clean clip (V_w, A_w) and under the
perturbed media (V_l, A_w), which for MVIT *is* the presented media. 4 rows, 2 distinct media per sample.

    python scripts/bench_adapters.py [--size tiny|small] [--samples 4] [--repeats 10] [--threads 1] [--frames 8]

Times are the minimum over repeats (the least-disturbed run on shared cores). ``--size small`` makes the
encoders a larger share of the work (wider, deeper, 112-pixel frames), which is where reuse pays.
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from cavpref.models import Row, load_model_io
from cavpref.models.tiny import build_tiny_composed, build_tiny_qwen_omni, demo_media
from cavpref.parsing import parse_args

SIZES = {
    "tiny": ({}, {}, 56),
    "small": (
        {
            "hidden_size": 64,
            "num_attention_heads": 4,
            "intermediate_size": 128,
            "vision_hidden_size": 64,
            "vision_depth": 2,
            "audio_d_model": 64,
            "audio_layers": 2,
            "frame_pixels": 112 * 112,
        },
        {
            "hidden_size": 64,
            "num_attention_heads": 4,
            "intermediate_size": 128,
            "vision_hidden_size": 64,
            "audio_d_model": 64,
            "image_size": 64,
        },
        112,
    ),
}


def cavpref_rows(samples: int, frames: int, seconds: float, size: int) -> list[Row]:
    rows = []
    for i in range(samples):
        presented = demo_media(2 * i, num_frames=frames, seconds=seconds, size=size)
        clean = demo_media(2 * i + 1, num_frames=frames, seconds=seconds, size=size)
        q = "Which is the musical instrument that sounds at the same time as the piano?"
        rows += [
            Row(q, "None of the above", presented, f"p{i}", f"{i}/yw"),
            Row(q, "violin", presented, f"p{i}", f"{i}/yl"),
            Row(q, "violin", clean, f"c{i}", f"{i}/Vw"),
            Row(q, "violin", presented, f"p{i}", f"{i}/Vl"),
        ]
    return rows


def timed(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def bench(name: str, folder: Path, args) -> list[tuple]:
    ad = load_model_io(str(folder), dtype="float32")
    model = ad.model.train()
    rows = cavpref_rows(args.samples, args.frames, args.seconds, SIZES[args.size][2])
    batch = ad.collate(rows)
    t_collate = timed(lambda: ad.collate(rows), args.repeats)

    def step(reuse: bool):
        model.zero_grad(set_to_none=True)
        ad.logps(model, batch, reuse_encoders=reuse).sum().backward()

    t_reuse, t_plain = timed(lambda: step(True), args.repeats), timed(lambda: step(False), args.repeats)
    gen_rows = [Row(r.prompt, media=r.media, media_key=r.media_key) for r in rows[::4]]
    model.eval()
    t_gen = timed(lambda: ad.generate(model, gen_rows, max_new_tokens=args.new_tokens), args.repeats)
    n = len(rows)
    return [
        (name, "collate (CPU)", n, t_collate, n / t_collate, ""),
        (name, "logps fwd+bwd, reuse", n, t_reuse, n / t_reuse, f"x{t_plain / t_reuse:.2f} vs no reuse"),
        (name, "logps fwd+bwd, no reuse", n, t_plain, n / t_plain, ""),
        (name, f"generate {args.new_tokens} tok", len(gen_rows), t_gen, len(gen_rows) / t_gen, "items/s"),
    ]


@dataclass
class BenchArguments:
    samples: int = field(
        default=4, metadata={"help": "samples per measurement (4 rows each, 2 distinct media)"}
    )
    size: str = field(default="tiny", metadata={"help": f"model size, one of {sorted(SIZES)}"})
    repeats: int = field(default=10, metadata={"help": "repeats per measurement (median reported)"})
    threads: int = field(default=1, metadata={"help": "torch CPU threads"})
    frames: int = field(default=8, metadata={"help": "video frames per clip"})
    seconds: float = field(default=4.0, metadata={"help": "clip length in seconds"})
    new_tokens: int = field(default=8, metadata={"help": "tokens generated per row"})

    def __post_init__(self):
        if self.size not in SIZES:
            raise ValueError(f"--size must be one of {sorted(SIZES)}, got {self.size!r}")


def main(argv=None) -> None:
    (args,) = parse_args(
        [BenchArguments], sys.argv[1:] if argv is None else argv, prog="scripts/bench_adapters.py"
    )
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    table = []
    with tempfile.TemporaryDirectory() as tmp:
        qwen_kw, composed_kw, _ = SIZES[args.size]
        table += bench("qwen-omni", build_tiny_qwen_omni(Path(tmp) / "q", **qwen_kw), args)
        table += bench("composed", build_tiny_composed(Path(tmp) / "c", **composed_kw), args)
    print(
        f"\nsize={args.size} threads={args.threads} samples={args.samples} (rows={4 * args.samples}, distinct media={2 * args.samples}) "
        f"frames={args.frames} audio={args.seconds}s repeats={args.repeats} (min)\n"
    )
    print(f"{'model':<10} {'what':<26} {'rows':>5} {'sec':>8} {'rows/s':>9}  note")
    for name, what, n, sec, rate, note in table:
        print(f"{name:<10} {what:<26} {n:>5} {sec:>8.3f} {rate:>9.1f}  {note}")


if __name__ == "__main__":
    main()
