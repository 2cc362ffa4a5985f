"""Make the same small world again and again in one long-lived process, and once more with worker processes
each time; count the repeats whose files differ.

    python scripts/repeat_world.py --repeats 400

Why: a world must not depend on where it is made. A fault that shows once in a hundred worlds (libx264
reading memory it never wrote, docs/synthetic_world.md) needs a loop, not a test, to be measured; this is
that loop, for this machine's libraries. Prints one line per repeat that differs (file, bytes, pixels) and a
summary; exits 1 if any did. Each repeat also decodes every clip, as a user's process would.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import av
import numpy as np
from tqdm.auto import tqdm

from cavpref.data_prep.synthetic import WorldConfig, generate_world
from cavpref.media import write
from cavpref.parsing import parse_args


@dataclass
class RepeatArguments:
    repeats: int = field(
        default=100, metadata={"help": "worlds made in this process (each also with workers)"}
    )
    seed: int = field(default=3, metadata={"help": "the worlds' seed"})
    num_clips: int = field(default=2, metadata={"help": "clips per source"})
    music_clips: int = field(default=3, metadata={"help": "MUSIC-AVQA clips"})
    workers: int = field(default=2, metadata={"help": "worker processes of the second world of each repeat"})
    x264_params: str = field(
        default="",
        metadata={
            "help": "libx264 parameters for this process's world (empty: write.X264_OPTIONS, mbtree=0; "
            "mbtree=1 shows the fault that setting is for)"
        },
    )


def _digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _pixels(path: Path) -> np.ndarray:
    """Every frame, decoded as the package's reader does (PyAV, one thread)."""
    with av.open(str(path)) as container:
        container.streams.video[0].codec_context.thread_count = 1
        return np.stack([f.to_ndarray(format="rgb24") for f in container.decode(video=0)])


def main(argv=None) -> int:
    (args,) = parse_args(
        [RepeatArguments], sys.argv[1:] if argv is None else argv, prog="scripts/repeat_world.py"
    )
    knobs = {"seed": args.seed, "num_clips": args.num_clips, "music_clips": args.music_clips}
    if args.x264_params:  # this process only: the workers keep write.X264_OPTIONS
        write.X264_OPTIONS = {**write.X264_OPTIONS, "x264-params": args.x264_params}
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        here, there = Path(tmp, "in_process"), Path(tmp, "workers")
        for k in tqdm(range(args.repeats), desc="worlds", unit="world"):
            generate_world(WorldConfig(out=str(here), workers=1, **knobs))
            generate_world(WorldConfig(out=str(there), workers=args.workers, **knobs))
            a, b = _digests(here), _digests(there)
            differ = sorted(f for f in a.keys() | b.keys() if a.get(f) != b.get(f))
            # decode every clip, as a user's process would after making a world (it also leaves the heap
            # holding frames, white pixels included, as a long-lived process's does)
            pixels = {
                f: np.array_equal(_pixels(here / f), _pixels(there / f)) for f in a if f.endswith(".mp4")
            }
            if differ:
                bad += 1
                shown = [f"{f} ({'same' if pixels.get(f) else 'other'} pixels)" for f in differ]
                tqdm.write(f"repeat {k}: {len(differ)} files differ: {', '.join(shown)}")
            shutil.rmtree(here)
            shutil.rmtree(there)
    params = args.x264_params or write.X264_OPTIONS["x264-params"]
    print(
        f"| repeats | x264 parameters in this process | worlds with a differing file |\n|---|---|---|\n"
        f"| {args.repeats} | {params} | {bad} |"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
