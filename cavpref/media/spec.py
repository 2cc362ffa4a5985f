"""MediaSpec: a lazy, JSON-serialisable description of the audio and video a model sees.

A benchmark of 600K perturbed items must not cost 600K re-encoded videos, so every AVTrustBench
perturbation is a small tree over time ranges of source files, decoded only when a batch needs it.

Nodes
-----
``Source(path, start, end)``       both streams of a time range of one file (``end=None``: to the end).
``Combine(video=X, audio=Y)``      "video of X with audio of Y"; ``None`` marks a missing stream.
``Concat(parts)``                  parts one after the other in time.
``Overlay(parts, gains, video)``   audio of the parts mixed with gains; video taken from ``parts[video]``
                                   (``video=None``: no video).
``Mask(part, spans, video, audio)`` ``part`` with black frames (``video``) and / or silence (``audio``) over
                                   ``spans`` of its own timeline: the stream stays present, its content
                                   there is blank (evaluation ablations: TraceAV-Bench's evidence-hop masking).
``Stack(parts, axis, gains)``      split screen: the parts' frames side by side in one frame (``axis``
                                   "vertical": top to bottom), their audio mixed with gains.

Every task is expressible (see ``tests/media/test_media_spec.py``)::

    MVIT       Combine(video=B, audio=A)           MAIT      Combine(video=A, audio=B)
    MVT        A.drop_video()                      MAT       A.mute()
    COT-Stitch Concat([A, B])                      COT-Swap  Concat([Combine(A, B), Combine(B, A)])
    CAT        Concat([...]) or Overlay([...])

and so are the AURA builder's media (``cavpref.data_prep.builders.aura``): trims are Sources with ranges,
an audio shift is ``shift_audio(Source)``, a split screen ``Stack([A, B])``, novice / expert ``Concat``.

Paths are relative to a data root chosen at decode time; ``resolve_path`` refuses anything that would
escape it (absolute paths, ``..``), because specs travel in shared datasets.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any


class MediaError(ValueError):
    """Bad media input. The message always names the file (and spec part) involved."""


@dataclass(frozen=True)
class Source:
    path: str
    start: float = 0.0
    end: float | None = None

    def __post_init__(self):
        _check_relative(self.path)
        if self.start < 0:
            raise MediaError(f"{self.path}: start {self.start} is negative")
        if self.end is not None and self.end <= self.start:
            raise MediaError(f"{self.path}: zero-length or reversed range [{self.start}, {self.end}]")


@dataclass(frozen=True)
class Combine:
    video: MediaSpec | None = None
    audio: MediaSpec | None = None

    def __post_init__(self):
        if self.video is None and self.audio is None:
            raise MediaError("Combine needs a video or an audio part (both are None)")


@dataclass(frozen=True)
class Concat:
    parts: tuple[MediaSpec, ...] = field(default_factory=tuple)

    def __post_init__(self):
        object.__setattr__(self, "parts", tuple(self.parts))
        if not self.parts:
            raise MediaError("Concat needs at least one part")


@dataclass(frozen=True)
class Overlay:
    parts: tuple[MediaSpec, ...] = field(default_factory=tuple)
    gains: tuple[float, ...] | None = None
    video: int | None = 0

    def __post_init__(self):
        object.__setattr__(self, "parts", tuple(self.parts))
        if not self.parts:
            raise MediaError("Overlay needs at least one part")
        gains = tuple(float(g) for g in self.gains) if self.gains is not None else (1.0,) * len(self.parts)
        if len(gains) != len(self.parts):
            raise MediaError(f"Overlay has {len(self.parts)} parts but {len(gains)} gains")
        object.__setattr__(self, "gains", gains)
        if self.video is not None and not 0 <= self.video < len(self.parts):
            raise MediaError(f"Overlay video index {self.video} out of range for {len(self.parts)} parts")


@dataclass(frozen=True)
class Mask:
    """``part`` blanked over ``spans`` ((start, end) seconds on ``part``'s timeline): black frames where
    ``video``, silence where ``audio``. Unlike ``mute`` / ``drop_video`` the stream is not removed — the
    model still receives frames and samples, only their content over the spans is gone, so a question's
    evidence can be taken out without changing what the input looks like elsewhere. Spans are sorted and
    overlapping ones merged, so equal masks give equal JSON (record keys)."""

    part: MediaSpec
    spans: tuple[tuple[float, float], ...] = ()
    video: bool = True
    audio: bool = True

    def __post_init__(self):
        if not (self.video or self.audio):
            raise MediaError("Mask blanks neither stream (video=False, audio=False)")
        merged: list[list[float]] = []
        for span in sorted((float(a), float(b)) for a, b in self.spans):
            a, b = span
            if a < 0 or b <= a:
                raise MediaError(f"Mask span [{a}, {b}] must have 0 <= start < end")
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        if not merged:
            raise MediaError("Mask needs at least one span")
        object.__setattr__(self, "spans", tuple((a, b) for a, b in merged))


STACK_AXES = ("vertical", "horizontal")


@dataclass(frozen=True)
class Stack:
    """Split screen: every part's frames in its own band of one frame (``axis="vertical"``: top to bottom, as
    AURA's implicit-distraction videos; "horizontal": left to right), bands sized by the parts' frame sizes;
    the parts' audio mixed with ``gains``; duration = the longest part's."""

    parts: tuple[MediaSpec, ...] = field(default_factory=tuple)
    axis: str = "vertical"
    gains: tuple[float, ...] | None = None

    def __post_init__(self):
        object.__setattr__(self, "parts", tuple(self.parts))
        if len(self.parts) < 2:
            raise MediaError(f"Stack needs at least two parts, got {len(self.parts)}")
        if self.axis not in STACK_AXES:
            raise MediaError(f"Stack axis must be one of {STACK_AXES}, got {self.axis!r}")
        gains = tuple(float(g) for g in self.gains) if self.gains is not None else (1.0,) * len(self.parts)
        if len(gains) != len(self.parts):
            raise MediaError(f"Stack has {len(self.parts)} parts but {len(gains)} gains")
        object.__setattr__(self, "gains", gains)


MediaSpec = Source | Combine | Concat | Overlay | Mask | Stack
_NODES = {
    "source": Source,
    "combine": Combine,
    "concat": Concat,
    "overlay": Overlay,
    "mask": Mask,
    "stack": Stack,
}


def _check_relative(path: str) -> None:
    p = PurePosixPath(path.replace("\\", "/"))
    if not path or p.is_absolute() or (len(path) > 1 and path[1] == ":") or ".." in p.parts:
        raise MediaError(f"{path!r}: media paths must be relative to the data root and must not contain '..'")


def resolve_path(root: str | os.PathLike, path: str) -> Path:
    """Resolve ``path`` under ``root``; refuse paths that escape it (also through symlinks)."""
    _check_relative(path)
    try:
        root = Path(root).resolve()
        full = (root / path).resolve()
    except (RuntimeError, OSError) as err:  # a symlink loop: RuntimeError before Python 3.13, OSError after
        raise MediaError(f"{path!r} under {root}: cannot be resolved ({err})") from None
    if root != full and root not in full.parents:
        raise MediaError(f"{path!r} resolves to {full}, outside the data root {root}")
    return full


# ----------------------------------------------------------------------------- constructors


def clip(path: str, start: float = 0.0, end: float | None = None) -> Source:
    return Source(path, start, end)


def combine(video: MediaSpec | None, audio: MediaSpec | None) -> Combine:
    """Video of ``video`` with audio of ``audio`` (either may be None = that stream is missing)."""
    return Combine(video=video, audio=audio)


def mute(spec: MediaSpec) -> Combine:
    return Combine(video=spec, audio=None)


def drop_video(spec: MediaSpec) -> Combine:
    return Combine(video=None, audio=spec)


def mask(spec: MediaSpec, spans: Any, *, video: bool = True, audio: bool = True) -> Mask:
    """``spec`` with black frames / silence over ``spans`` ((start, end) seconds on its timeline)."""
    return Mask(spec, tuple(tuple(s) for s in spans), video, audio)


def concat(*parts: MediaSpec) -> Concat:
    return Concat(tuple(parts))


def overlay(*parts: MediaSpec, gains: tuple[float, ...] | None = None, video: int | None = 0) -> Overlay:
    return Overlay(tuple(parts), gains, video)


def stack(*parts: MediaSpec, axis: str = "vertical", gains: tuple[float, ...] | None = None) -> Stack:
    """Split screen of ``parts`` (top to bottom by default), their audio mixed with ``gains``."""
    return Stack(tuple(parts), axis, gains)


def shift_audio(src: Source, seconds: float) -> Combine:
    """The video of ``src`` with its own sound track taken ``seconds`` later (> 0: every sound comes
    ``seconds`` early; < 0: late), the length kept: a desynchronised clip with nothing re-encoded. The
    shifted range must lie inside the file (checked when the spec is planned)."""
    if src.end is None:
        raise MediaError(f"{src.path}: shift_audio needs a Source with an explicit end")
    if src.start + seconds < 0:
        raise MediaError(f"{src.path}: audio shifted by {seconds} s would start before the file")
    return Combine(video=src, audio=Source(src.path, src.start + seconds, src.end + seconds))


# ----------------------------------------------------------------------------- structure queries


def has_video(spec: MediaSpec) -> bool:
    if isinstance(spec, Source):
        return True
    if isinstance(spec, Mask):
        return has_video(spec.part)
    if isinstance(spec, Combine):
        return spec.video is not None and has_video(spec.video)
    if isinstance(spec, (Concat, Stack)):
        return any(has_video(p) for p in spec.parts)
    return spec.video is not None and has_video(spec.parts[spec.video])


def has_audio(spec: MediaSpec) -> bool:
    if isinstance(spec, Source):
        return True
    if isinstance(spec, Mask):
        return has_audio(spec.part)
    if isinstance(spec, Combine):
        return spec.audio is not None and has_audio(spec.audio)
    return any(has_audio(p) for p in spec.parts)


def sources(spec: MediaSpec) -> Iterator[Source]:
    """All leaves, in order (used for split-leak checks and cache keys)."""
    if isinstance(spec, Source):
        yield spec
    elif isinstance(spec, Mask):
        yield from sources(spec.part)
    elif isinstance(spec, Combine):
        for part in (spec.video, spec.audio):
            if part is not None:
                yield from sources(part)
    else:
        for part in spec.parts:
            yield from sources(part)


# ----------------------------------------------------------------------------- JSON


def to_dict(spec: MediaSpec) -> dict[str, Any]:
    if isinstance(spec, Source):
        return {"op": "source", "path": spec.path, "start": spec.start, "end": spec.end}
    if isinstance(spec, Combine):
        return {
            "op": "combine",
            "video": None if spec.video is None else to_dict(spec.video),
            "audio": None if spec.audio is None else to_dict(spec.audio),
        }
    if isinstance(spec, Concat):
        return {"op": "concat", "parts": [to_dict(p) for p in spec.parts]}
    if isinstance(spec, Mask):
        return {
            "op": "mask",
            "part": to_dict(spec.part),
            "spans": [list(x) for x in spec.spans],
            "video": spec.video,
            "audio": spec.audio,
        }
    if isinstance(spec, Overlay):
        return {
            "op": "overlay",
            "parts": [to_dict(p) for p in spec.parts],
            "gains": list(spec.gains),
            "video": spec.video,
        }
    if isinstance(spec, Stack):
        return {
            "op": "stack",
            "parts": [to_dict(p) for p in spec.parts],
            "axis": spec.axis,
            "gains": list(spec.gains),
        }
    raise MediaError(f"not a MediaSpec node: {spec!r}")


def from_dict(d: dict[str, Any]) -> MediaSpec:
    """Inverse of ``to_dict``; a node with a missing or mistyped field is a MediaError naming it."""
    if not isinstance(d, dict) or d.get("op") not in _NODES:
        raise MediaError(f"not a MediaSpec dict (needs 'op' in {sorted(_NODES)}): {d!r}")
    try:
        return _from_dict(d)
    except MediaError:
        raise
    except KeyError as err:
        raise MediaError(f"MediaSpec {d['op']!r} node is missing field {err.args[0]!r}: {d!r}") from None
    except (TypeError, ValueError) as err:
        raise MediaError(f"MediaSpec {d['op']!r} node has a field of the wrong type ({err}): {d!r}") from None


def _from_dict(d: dict[str, Any]) -> MediaSpec:
    op = d["op"]
    if op == "source":
        return Source(
            d["path"], float(d.get("start", 0.0)), None if d.get("end") is None else float(d["end"])
        )
    if op == "combine":
        return Combine(
            video=None if d.get("video") is None else from_dict(d["video"]),
            audio=None if d.get("audio") is None else from_dict(d["audio"]),
        )
    if op == "mask":
        return Mask(from_dict(d["part"]), tuple(tuple(x) for x in d["spans"]), d["video"], d["audio"])
    parts = tuple(from_dict(p) for p in d["parts"])
    if op == "concat":
        return Concat(parts)
    if op == "stack":
        return Stack(parts, d.get("axis", "vertical"), d.get("gains"))
    return Overlay(parts, d.get("gains"), d.get("video", 0))


def to_json(spec: MediaSpec) -> str:
    """Canonical JSON (sorted keys, no spaces): equal specs give equal strings, usable as cache keys."""
    return json.dumps(to_dict(spec), sort_keys=True, separators=(",", ":"))


def from_json(s: str) -> MediaSpec:
    try:
        return from_dict(json.loads(s))
    except RecursionError:  # a hostile spec thousands of levels deep: one line, not a bare RecursionError
        raise MediaError("media spec nested too deeply to read") from None
