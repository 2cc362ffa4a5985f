"""Sample the ground truth of one clip (who is where, what sounds when, how loud) from a generator.

The truth is plain JSON (it goes into world.json as is) and is the only input of both the renderer and
the question writers, so a question's answer can always be re-derived from world.json. Times sit on a
grid of ``duration / 8`` so onsets are far apart compared with a frame (1 / fps) and an audio window.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .catalogue import AVQA_SOURCES, SLOTS

GRID = 8  # time steps per clip
LOUDEST = 0.32  # RMS gain of the loudest instrument of a performance


def levels(ratio: float = 2.0) -> tuple[float, ...]:
    """The four RMS gains of a performance's instruments, each ``ratio`` louder than the one below it:
    ratio 2 (6 dB apart, 18 dB in all) gives 0.04, 0.08, 0.16, 0.32 exactly, so "louder" is never a close
    call; a smaller ratio brings the quietest instrument nearer the loudest (``WorldConfig.level_ratio``)."""
    return tuple(LOUDEST / ratio**k for k in (3, 2, 1, 0))


MUSIC_SCENES = ("indoor", "outdoor")
AVQA_SCENES = ("indoor", "street", "field")
WHEN = ("At the beginning", "In the middle", "At the end", "Throughout the video")


def _round(x: float) -> float:
    return round(float(x), 3)


def _partial_events(rng: np.random.Generator, duration: float) -> list[list[float]]:
    """One or two events on the time grid, each at least two steps long, separated by a gap."""
    step = duration / GRID
    k0 = int(rng.integers(0, GRID - 1))  # <= GRID - 2: room for two steps
    k1 = int(rng.integers(k0 + 2, GRID + 1))
    events = [[k0, k1]]
    if k1 + 3 <= GRID and rng.random() < 0.4:
        k2 = int(rng.integers(k1 + 1, GRID - 1))
        events.append([k2, int(rng.integers(k2 + 2, GRID + 1))])
    return [[_round(a * step), _round(b * step)] for a, b in events]


def _summarise(entity: dict[str, Any], duration: float) -> dict[str, Any]:
    ev = entity["events"]
    entity["sounding"] = bool(ev)
    entity["first_onset"] = ev[0][0] if ev else None
    entity["sounding_s"] = _round(sum(b - a for a, b in ev))
    entity["always"] = len(ev) == 1 and ev[0][0] == 0 and ev[0][1] >= duration
    return entity


def music_clip(
    rng: np.random.Generator, names: list[str], duration: float, level_ratio: float = 2.0
) -> dict[str, Any]:
    """A performance: 1-3 visible instruments (sometimes two of one kind), some silent, sometimes an
    off-screen one that is heard but not seen; every sounding instrument at a different level
    (``levels(level_ratio)``)."""
    n_visible = int(rng.choice([1, 2, 3], p=[0.2, 0.35, 0.45]))
    slots = sorted(rng.choice(len(SLOTS), n_visible, replace=False).tolist())
    kinds = [str(k) for k in rng.choice(names, n_visible, replace=False)]
    if n_visible >= 2 and rng.random() < 0.2:
        i, j = rng.choice(n_visible, 2, replace=False)
        kinds[j] = kinds[i]  # two of one kind: "How many sounding <Object>", "Which <Object> ... <FL>"
    entities = []
    for slot, kind in zip(slots, kinds):
        mode = rng.choice(["silent", "always", "partial"], p=[0.15, 0.2, 0.65])
        if mode == "partial":
            events = _partial_events(rng, duration)
        else:
            events = [[0.0, _round(duration)]] if mode == "always" else []
        entities.append({"name": kind, "slot": SLOTS[slot], "visible": True, "events": events})
    if not any(e["events"] for e in entities):
        entities[0]["events"] = _partial_events(rng, duration)
    unseen = [n for n in names if n not in kinds]
    if unseen and rng.random() < 0.15:
        entities.append(
            {
                "name": str(rng.choice(unseen)),
                "slot": None,
                "visible": False,
                "events": _partial_events(rng, duration),
            }
        )
    gains = rng.permutation(levels(level_ratio))
    for e, level in zip(entities, gains):
        e["gain"] = float(level) if e["events"] else 0.0
        _summarise(e, duration)
    return {"scene": str(rng.choice(MUSIC_SCENES)), "duration": _round(duration), "instruments": entities}


def avqa_clip(rng: np.random.Generator, duration: float) -> dict[str, Any]:
    """One sounding source, sometimes with a second one that is either silent or sounds after it."""
    a, b = (str(x) for x in rng.choice(AVQA_SOURCES, 2, replace=False))
    slot_a, slot_b = (int(s) for s in rng.choice(len(SLOTS), 2, replace=False))
    role = str(rng.choice(["alone", "silent", "next"], p=[0.5, 0.25, 0.25]))
    d, step = duration, duration / GRID
    if role == "next":
        when = "At the beginning"
        ev_a, ev_b = [[0.0, _round(3 * step)]], [[_round(5 * step), _round(d)]]
    else:
        when = str(rng.choice(WHEN))
        part = {"At the beginning": (0, 3), "In the middle": (3, 5), "At the end": (5, GRID)}
        lo, hi = part.get(when, (0, GRID))
        ev_a, ev_b = [[_round(lo * step), _round(hi * step)]], []
    sources = [{"name": a, "slot": SLOTS[slot_a], "visible": True, "gain": 0.3, "events": ev_a, "when": when}]
    if role != "alone":
        sources.append(
            {
                "name": b,
                "slot": SLOTS[slot_b],
                "visible": True,
                "gain": 0.3 if ev_b else 0.0,
                "events": ev_b,
                "when": "At the end" if ev_b else None,
            }
        )
    for s in sources:
        _summarise(s, duration)
    return {
        "scene": str(rng.choice(AVQA_SCENES)),
        "duration": _round(duration),
        "role": role,
        "sources": sources,
    }


def audioset_clip(rng: np.random.Generator, entity: str, duration: float) -> dict[str, Any]:
    """A single event of one entity covering most of the clip."""
    on = _round(rng.uniform(0, 0.15) * duration)
    off = _round(rng.uniform(0.85, 1.0) * duration)
    slot = SLOTS[int(rng.integers(len(SLOTS)))]
    src = _summarise(
        {"name": entity, "slot": slot, "visible": True, "gain": 0.3, "events": [[on, off]]}, duration
    )
    return {"scene": str(rng.choice(AVQA_SCENES)), "duration": _round(duration), "sources": [src]}


def split_sizes(n: int, fractions: dict[str, float]) -> dict[str, int]:
    """Contiguous split sizes summing to n; every split gets >= 1 clip when n allows it."""
    names = list(fractions)
    sizes = {k: round(n * f) for k, f in fractions.items()}
    for k in names[1:]:
        if n >= len(names):
            sizes[k] = max(1, sizes[k])
    sizes[names[0]] = n - sum(sizes[k] for k in names[1:])
    return sizes


def assign_splits(n: int, fractions: dict[str, float]) -> list[str]:
    out: list[str] = []
    for name, size in split_sizes(n, fractions).items():
        out += [name] * size
    return out


_YT = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def youtube_id(rng: np.random.Generator) -> str:
    """An 11-character YouTube-style id (may start with '-' or '_', as real ones do)."""
    return "".join(_YT[i] for i in rng.integers(0, len(_YT), 11))
