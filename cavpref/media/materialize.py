"""Write a MediaSpec out as a real mp4 (H.264/AAC), for tools that only take files.

Training and evaluation never need this (the collator decodes specs directly); it exists for external
judges, human inspection and models whose processors insist on a path. The whole clip is decoded into
memory first, so it is meant for benchmark-length clips (seconds to a few minutes), not hours.
"""

from __future__ import annotations

import os
from pathlib import Path

from cavpref.media.decode import FramePolicy, decode
from cavpref.media.probe import probe
from cavpref.media.spec import MediaError, MediaSpec, from_json, resolve_path
from cavpref.media.timeline import build_plan
from cavpref.media.write import write_mp4


def materialize(
    spec: MediaSpec | str,
    root: str | os.PathLike,
    out_path: str | os.PathLike,
    *,
    fps: float | None = None,
    size: tuple[int, int] | None = None,
    sample_rate: int = 16000,
    backend: str = "auto",
) -> Path:
    """Decode every frame of ``spec`` at ``fps`` (None: the first video part's frame rate) and write
    ``out_path``. ``size=(height, width)``; None keeps the spec's own frame size (``timeline.natural_size``:
    the first video part's, a split screen's bands side by side), rounded down to even numbers (yuv420p
    needs them). A stream the spec lacks is left out of the file."""
    if isinstance(spec, str):
        spec = from_json(spec)

    def lookup(path):
        full = resolve_path(root, path)
        return full, probe(full)

    plan = build_plan(spec, lookup)
    policy = None
    if plan.video is not None:
        first = plan.video[0].info
        fps = float(fps or first.fps or 25.0)
        if size is None:
            size = (plan.size[0] - plan.size[0] % 2, plan.size[1] - plan.size[1] % 2)
        if min(size) < 2 or size[0] % 2 or size[1] % 2:
            raise MediaError(f"{out_path}: materialize needs an even size of at least 2x2, got {size}")
        policy = FramePolicy(num_frames=None, fps=fps, max_frames=int(plan.duration * fps) + 2, size=size)
    media = decode(spec, root, frames=policy, sample_rate=sample_rate, backend=backend)
    write_mp4(out_path, media.frames, fps or 25.0, media.audio, sample_rate)
    return Path(out_path)
