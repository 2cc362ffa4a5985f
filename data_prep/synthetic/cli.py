"""``cavpref world [CONFIG.yaml | --config CONFIG.yaml] [--key value ...]``: generate the synthetic world
and report what was written (every key: ``cavpref world --help``)."""

from __future__ import annotations

import os
import sys
import time

from cavpref.output_dir import OutputDirError, expand_path
from cavpref.parsing import parse_args

from .config import WorldConfig
from .world import generate_world


def _size(path: str) -> tuple[int, int]:
    """(number of files, bytes) under ``path``."""
    files = total = 0
    for root, _, names in os.walk(path):
        for name in names:
            files += 1
            total += os.path.getsize(os.path.join(root, name))
    return files, total


def report(manifest: dict, out: str, seconds: float) -> str:
    """A table: per source, files and MB on disk and what they hold; then the total and the time."""
    f = manifest["files"]

    def per_split(d: dict[str, int]) -> str:
        return ", ".join(f"{k}={v}" for k, v in d.items())

    music = f["music_avqa"]
    what = {
        "music_avqa": f"{music['videos']} videos, questions {per_split(music['questions'])}",
        "avqa": f"{f['avqa']['videos']} videos, questions {per_split(f['avqa']['questions'])}",
        "audioset": f"{f['audioset']['clips']} clips of {f['audioset']['classes']} classes, "
        f"segments {per_split(f['audioset']['segments'])}",
    }
    rows = [("source", "files", "MB", "contents")]
    for src, text in what.items():
        n, size = _size(os.path.join(out, src))
        rows.append((src, str(n), f"{size / 1e6:.2f}", text))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [f"{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:>{widths[2]}}  {r[3]}" for r in rows]
    total = sum(int(r[1]) for r in rows[1:])
    lines.append(f"world.json + {total} files in {out}  (seed {manifest['seed']}, {seconds:.1f} s)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    try:
        (cfg,) = parse_args([WorldConfig], list(sys.argv[1:] if argv is None else argv), prog="cavpref world")
    except ValueError as err:
        print(f"cavpref world: {err}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    try:
        manifest = generate_world(cfg)
    except OutputDirError as err:
        print(f"cavpref world: {err}", file=sys.stderr)
        return 2
    print(report(manifest, expand_path(cfg.out, "out"), time.perf_counter() - start))
    return 0
