"""Long videos made of the world's clips, for long-video builders (``cavpref build traceav``) and their tests.

A long video is ``scenes`` clips of a generated world (MUSIC-AVQA performances and AVQA scenes, each its own
scene: other shapes, places and sounds) played one after another: a ``Concat`` MediaSpec, written once with
``materialize``. So it has ``scenes - 1`` hard cuts at known times and the world's sound throughout, which is
what TraceAV-Bench's collection filters look for (scene transitions, mean volume). ``long_videos.json`` next
to the videos lists each one's clips in order.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from cavpref.media.materialize import materialize
from cavpref.media.spec import clip, concat


def write_long_videos(
    world: str | Path, out: str | Path, *, videos: int = 3, scenes: int = 6, seed: int = 0
) -> list[Path]:
    """Write ``videos`` files ``long_00.mp4`` ... to ``out``, each ``scenes`` distinct clips of ``world``
    (a ``cavpref world`` folder) chosen with ``seed``; returns their paths."""
    world, out = Path(world), Path(out)
    manifest = json.loads((world / "world.json").read_text(encoding="utf-8"))
    pool = sorted(c["file"] for source in ("music_avqa", "avqa") for c in manifest[source])
    if scenes < 1 or scenes > len(pool):
        raise ValueError(
            f"scenes must be within 1..{len(pool)} (the world's MUSIC-AVQA and AVQA clips), got {scenes}"
        )
    rng = random.Random(seed)
    written, parts = [], {}
    for k in range(videos):
        chosen = rng.sample(pool, scenes)
        path = out / f"long_{k:02d}.mp4"
        materialize(concat(*[clip(f) for f in chosen]), world, path)
        written.append(path)
        parts[path.name] = chosen
    (out / "long_videos.json").write_text(json.dumps(parts, indent=1) + "\n", encoding="utf-8")
    return written
