"""Which media each AURA question is about, as ``MediaSpec`` trees over the user's videos (nothing encoded).

Per video (paper App. A.3; windows by sound energy, ``media.best_window``, as the paper trims by activity):

* ``short``: a ``short_clip_s`` window (CR, UANS, and the halves of ID);
* ``long``: a ``long_clip_s`` window (TPR, TSA aligned, the performances of PSP);
* ``shifted``: the long window with its sound track ``sync_shift_s`` later (TSA misaligned; ``shift_audio``).
  TSA takes the shifted clip for every other video in a seeded order, so the two kinds are balanced.

Across videos: ID stacks two videos' short windows top / bottom (``Stack``, audio mixed at ``stack_gain``
each), paired by a file of pairs or else greedily by the words their visual descriptions share (AURA pairs
clips with a common instrument); PSP plays a novice's and an expert's long windows one after the other
(``Concat``) in a seeded order, from a file of pairs (which performer is the expert is a human judgement,
never guessed).
"""

from __future__ import annotations

import csv
import io
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cavpref import jsonl
from cavpref.data_prep.builders.media import best_window
from cavpref.data_prep.builders.work import BuildError
from cavpref.media.spec import Combine, MediaSpec, Source, shift_audio


@dataclass(frozen=True)
class Question:
    """One generator call's subject: the task, the written video's id, the media, the parts whose
    descriptions go into the prompt (label -> clip spec), and the ground truth the task needs."""

    task: str
    video_id: str
    media: MediaSpec
    parts: dict[str, MediaSpec]
    truth: dict[str, Any] = field(default_factory=dict)


def clip_name(vid: str, spec: MediaSpec) -> str:
    """The id of a single-video clip: the video, its window and its shift (``v_12-32s``, ``v_12-32s_shift+5s``)."""
    video = spec.video if isinstance(spec, Combine) else spec
    name = f"{vid}_{video.start:g}-{video.end:g}s"
    if isinstance(spec, Combine):
        name += f"_shift{spec.audio.start - video.start:+g}s"
    return name


def windows(
    rel: str, scan: dict, short_s: float, long_s: float, shift_s: float
) -> dict[str, MediaSpec | None]:
    """The short, long and shifted clips of one video (``shifted`` None when the video has no room for the
    shift)."""
    duration, power = scan["duration"], scan["power"]
    out: dict[str, MediaSpec | None] = {}
    for name, length in (("short", short_s), ("long", long_s)):
        start, end = best_window(power, duration, length)
        out[name] = Source(rel, start, end)
    out["shifted"] = None
    if scan["has_audio"] and duration - shift_s >= 1.0:
        start, end = best_window(power, duration, long_s, room_after=shift_s)
        out["shifted"] = shift_audio(Source(rel, start, end), shift_s)
    return out


def sync_choice(ids: list[str], has_room: dict[str, bool], seed: int) -> dict[str, bool]:
    """video id -> True when its TSA question gets the shifted clip: every other video (seeded order) of
    those with room for the shift."""
    order = sorted(v for v in ids if has_room[v])
    random.Random(f"tsa:{seed}").shuffle(order)
    chosen = {v: i % 2 == 1 for i, v in enumerate(order)}
    return {v: chosen.get(v, False) for v in ids}


_WORD = re.compile(r"[a-z]{3,}")
# stop words, as one line of words (SIM905 would spell them as a 19-line list)
_STOP = frozenset("the and with that this from are while his her their its has have into over under".split())  # noqa: SIM905


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def pair_by_overlap(texts: dict[str, str]) -> list[tuple[str, str]]:
    """Disjoint pairs, greedily by the Jaccard overlap of the texts' words (ties by name); a pair is
    ordered by name. An odd one out stays unpaired."""
    bags = {k: words(v) for k, v in texts.items()}
    ids = sorted(bags)
    scored = []
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            union = bags[a] | bags[b]
            scored.append((-(len(bags[a] & bags[b]) / len(union) if union else 0.0), a, b))
    used, pairs = set(), []
    for _, a, b in sorted(scored):
        if a not in used and b not in used:
            used.update((a, b))
            pairs.append((a, b))
    return pairs


def read_pairs(path: str | Path, columns: tuple[str, str], known: set[str]) -> list[tuple[str, str]]:
    """(first, second) relative video paths from a CSV with a header naming ``columns`` or a JSONL of objects
    with those keys; every path must be one of the videos found (the error names the file and line)."""
    path = Path(path)
    try:
        text = jsonl.read_text(path)
        rows = jsonl.read_jsonl(path, text=text) if path.suffix == ".jsonl" else None
    except jsonl.JsonlError as err:
        raise BuildError(f"{err} (the pairs file)") from None
    if rows is None:
        rows = list(enumerate(csv.DictReader(io.StringIO(text)), 2))
    pairs = []
    for n, row in rows:
        values = tuple(str(row.get(c) or "").strip() for c in columns) if isinstance(row, dict) else ("", "")
        for c, v in zip(columns, values):
            if v not in known:
                raise BuildError(f"{path}: line {n}, {c!r}: {v!r} is not a video under --videos")
        pairs.append(values)
    return pairs
