"""Long-video sampling (TraceAV-Bench, issue 7): seek-sampled frames + chunked audio vs decoding whole.

    python scripts/bench_longvideo.py [--minutes 20]

Writes a synthetic long clip (64x64, 1 fps, 16 kHz noise) into a temp dir, then times both paths once
after a warm-up and prints a table: seconds, seconds of audio kept, peak traced memory.
"""

from __future__ import annotations

import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass, field

import numpy as np

from cavpref.eval.longvideo import LongVideoPolicy, decode_long
from cavpref.media.decode import FramePolicy, decode
from cavpref.media.spec import clip
from cavpref.media.write import write_mp4
from cavpref.parsing import parse_args


@dataclass
class BenchArguments:
    minutes: float = field(default=20.0, metadata={"help": "length of the generated long video"})


def main(argv=None) -> None:
    (args,) = parse_args(
        [BenchArguments], sys.argv[1:] if argv is None else argv, prog="scripts/bench_longvideo.py"
    )
    n = int(args.minutes * 60)
    root = tempfile.mkdtemp()
    rng = np.random.default_rng(0)
    write_mp4(
        f"{root}/long.mp4",
        rng.integers(0, 255, (n, 64, 64, 3), dtype=np.uint8),
        1.0,
        (0.1 * rng.standard_normal(n * 16000)).astype(np.float32),
        16000,
    )
    policy = LongVideoPolicy(num_frames=32, audio_window_s=30.0, audio_segments=8)
    cases = [
        (
            "decode (32 frames + whole audio)",
            lambda: decode(clip("long.mp4"), root, frames=FramePolicy(num_frames=32)),
        ),
        ("decode_long (32 frames + 8 audio windows)", lambda: decode_long(clip("long.mp4"), root, policy)[0]),
    ]
    print(f"| method ({n} s clip) | seconds | audio kept (s) | peak MiB |\n| --- | --- | --- | --- |")
    for name, fn in cases:
        fn()
        tracemalloc.start()
        t = time.perf_counter()
        m = fn()
        dt = time.perf_counter() - t
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        print(f"| {name} | {dt:.2f} | {m.audio.shape[0] / 16000:.0f} | {peak:.1f} |")


if __name__ == "__main__":
    main()
