"""TraceAV-Bench's collection (Sec. 3.1): deduplication, then the automatic quality filters.

Per video one ``collect`` unit measures (``measure``): the SHA-256 of the file's bytes, duration, streams, the scene-change differences and content signature of frames sampled at ``scene_fps``, and the
mean volume. ``select`` (pure) then decides, in path order:

1. duplicates: the same bytes as an earlier video, or the same duration (to 0.1 s) and frame signature (a
   re-encoded copy) — the paper deduplicates "by video metadata and content hashing";
2. filters: an audio track, at least ``min_duration_s``, at least ``min_transitions`` scene changes, a mean
   volume of at least ``min_volume_db``.

The paper's third criterion, annotators judging the "multi-hop reasoning potential", is human work: the
kept list is in ``stats.json`` for such a review.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

from cavpref.data_prep.builders.media import mean_volume_db, scan, transitions
from cavpref.data_prep.builders.traceav.config import TraceConfig


def sha256_file(path: Path, block: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(block):
            h.update(chunk)
    return h.hexdigest()


def measure(rel: str, root: Path, fps: float) -> dict[str, Any]:
    """What ``select`` needs of one video (JSON, stored by the ``collect`` stage)."""
    s = scan(rel, root, frames=True, fps=fps)
    return {
        "sha256": sha256_file(root / rel),
        "duration": s.duration,
        "has_video": s.has_video,
        "has_audio": s.has_audio,
        "diffs": s.diffs,
        "signature": s.signature,
        "volume_db": mean_volume_db(s.power) if s.power else None,
    }


def select(measured: dict[str, dict], cfg: TraceConfig) -> tuple[list[str], dict[str, str]]:
    """(kept relative paths, {dropped path: reason}), in path order; the first of duplicates is kept."""
    kept, dropped = [], {}
    by_bytes: dict[str, str] = {}
    by_content: dict[tuple, str] = {}
    for rel in sorted(measured):
        m = measured[rel]
        content = (round(m["duration"], 1), m["signature"])
        if m["sha256"] in by_bytes:
            dropped[rel] = f"duplicate: same bytes as {by_bytes[m['sha256']]}"
            continue
        if m["signature"] is not None and content in by_content:
            dropped[rel] = f"duplicate: same duration and frames as {by_content[content]}"
            continue
        by_bytes[m["sha256"]] = rel
        if m["signature"] is not None:
            by_content[content] = rel
        reason = problem(m, cfg)
        if reason:
            dropped[rel] = reason
        else:
            kept.append(rel)
    return kept, dropped


def problem(m: dict[str, Any], cfg: TraceConfig) -> str | None:
    """The first filter a measured video fails, or None."""
    if not m["has_video"]:
        return "no video stream"
    if not m["has_audio"]:
        return "no audio track"
    if m["duration"] < cfg.min_duration_s:
        return f"shorter than {cfg.min_duration_s:g} s"
    if transitions(m["diffs"], cfg.scene_threshold) < cfg.min_transitions:
        return f"fewer than {cfg.min_transitions} scene transitions"
    if m["volume_db"] is None or m["volume_db"] < cfg.min_volume_db:
        return f"mean volume below {cfg.min_volume_db:g} dB"
    return None


def reasons(dropped: dict[str, str]) -> dict[str, int]:
    """Dropped videos counted by reason (a duplicate's reason without the path it duplicates)."""
    return dict(sorted(Counter(r.split(" as ")[0] for r in dropped.values()).items()))
