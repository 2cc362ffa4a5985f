"""Does a synthetic world depend on the CPU's instruction sets? Make the same world with the encoders' code
for this CPU and with the code another CPU would run, and count the files that differ.

    python scripts/world_across_cpus.py --num_clips 384 --seed 1000003 --background_ramp 100

(the perceiving config's caption world). Cells: libx264 restricted to AVX2 or SSE4.2 code (its ``asm``
parameter), with the macroblock tree on (``mbtree=1``, the preset's default) and off (``mbtree=0``, what
``write_mp4`` uses); ffmpeg's own code (scaler, AAC encoder) without AVX-512 and without AVX2 / FMA3
(``av_force_cpu_flags``). Each cell is one fresh process making the world with one worker; a differing mp4 is
decoded to tell pixel differences from audio-only ones. x86-64 only. docs/synthetic_world.md.
"""

from __future__ import annotations

import ctypes
import glob
import hashlib
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from cavpref.parsing import parse_args

# libx264's instruction sets by its own names (``asm``); ffmpeg's AV_CPU_FLAG_* bits
X264_AVX2 = "MMX2,SSE,SSE2,SSE2Fast,LZCNT,SSE3,SSSE3,SSE4.2,AVX,FMA3,BMI2,AVX2"
X264_SSE42 = "MMX2,SSE,SSE2,SSE2Fast,SSE3,SSSE3,SSE4.2"
AV_AVX512 = 0x100000 | 0x200000  # AVX512, AVX512ICL
AV_AVX2_FMA3 = 0x8000 | 0x10000
# name: (x264 parameters, ffmpeg flags removed)
CELLS = {
    "mbtree=1, own code": ("mbtree=1", 0),
    "mbtree=1, x264 AVX2": (f"mbtree=1:asm={X264_AVX2}", 0),
    "mbtree=1, x264 SSE4.2": (f"mbtree=1:asm={X264_SSE42}", 0),
    "mbtree=0, own code": ("mbtree=0", 0),
    "mbtree=0, x264 AVX2": (f"mbtree=0:asm={X264_AVX2}", 0),
    "mbtree=0, x264 SSE4.2": (f"mbtree=0:asm={X264_SSE42}", 0),
    "mbtree=0, ffmpeg without AVX-512": ("mbtree=0", AV_AVX512),
    "mbtree=0, ffmpeg without AVX2/FMA3": ("mbtree=0", AV_AVX2_FMA3),
}


@dataclass
class CpuArguments:
    num_clips: int = field(default=24, metadata={"help": "clips per source"})
    seed: int = field(default=1_000_003, metadata={"help": "the world's seed"})
    background_ramp: int = field(default=0, metadata={"help": "WorldConfig.background_ramp"})
    cell: str = field(default="", metadata={"help": "internal: make one cell's world into --out"})
    out: str = field(default="", metadata={"help": "internal: the cell's folder"})


def _make(args: CpuArguments) -> None:
    import av

    from cavpref.data_prep.synthetic import WorldConfig, generate_world
    from cavpref.media import write

    params, removed = CELLS[args.cell]
    write.X264_OPTIONS = {**write.X264_OPTIONS, "x264-params": params}
    if removed:
        lib = glob.glob(os.path.join(os.path.dirname(av.__file__), "..", "av.libs", "libavutil-*.so*"))
        util = ctypes.CDLL(lib[0]) if lib else ctypes.CDLL("libavutil.so")
        util.av_force_cpu_flags(util.av_get_cpu_flags() & ~removed)
    world = WorldConfig(
        out=args.out,
        seed=args.seed,
        num_clips=args.num_clips,
        background_ramp=args.background_ramp,
        workers=1,
    )
    generate_world(world)


def _digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _same_pixels(a: Path, b: Path) -> bool:
    import av
    import numpy as np

    def frames(path):
        with av.open(str(path)) as c:
            if not c.streams.video:
                return None
            return np.stack([f.to_ndarray(format="rgb24") for f in c.decode(video=0)])

    x, y = frames(a), frames(b)
    return x is None and y is None or (x is not None and y is not None and np.array_equal(x, y))


def main(argv=None) -> int:
    (args,) = parse_args(
        [CpuArguments], sys.argv[1:] if argv is None else argv, prog="scripts/world_across_cpus.py"
    )
    if args.cell:
        _make(args)
        return 0
    keys = ["--num_clips", str(args.num_clips), "--seed", str(args.seed)]
    keys += ["--background_ramp", str(args.background_ramp)]
    with tempfile.TemporaryDirectory() as tmp:
        digests = {}
        for k, name in enumerate(CELLS):
            out = Path(tmp) / f"cell{k}"
            cmd = [sys.executable, __file__, *keys, "--cell", name, "--out", str(out)]
            subprocess.run(cmd, check=True, capture_output=True)
            digests[name] = (out, _digests(out))
        print(
            f"| world: {args.num_clips} clips per source, seed {args.seed} | files | differ from own code |"
        )
        print("| --- | --- | --- |")
        for name, (out, d) in digests.items():
            base_name = name.split(",")[0] + ", own code"
            base_out, base = digests[base_name]
            differ = [f for f in d if d[f] != base.get(f)]
            pixels = sum(not _same_pixels(base_out / f, out / f) for f in differ if f.endswith(".mp4"))
            print(f"| {name} | {len(d)} | {len(differ)} ({pixels} with other decoded pixels) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
