"""MUSIC-AVQA questions for one clip: the released templates, answered from the clip's ground truth.

Each template has the released (modality, type) pair and a rule that lists every (templ_values, answer)
it can ask about this clip; a template is skipped where its answer would be ambiguous (ties in onset or
loudness, an off-screen instrument a "how many ... in the video" question cannot see). Definitions the
released data leaves open, fixed here and documented in docs/synthetic_world.md:
"first/last/<TH>" order instruments by their first onset; "<LL>" lowest = quietest; "more rhythmic" =
more notes per second (sustained instruments have none); "heard" counts instrument kinds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import permutations
from typing import Any

import numpy as np

from .catalogue import INSTRUMENT_BY_NAME, SLOTS

NUM = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
TH = ("first", "second", "third", "fourth", "fifth")
Cands = list[tuple[list[str], str]]


@dataclass
class View:
    """Derived facts of one clip used by the question rules."""

    clip: dict[str, Any]
    pool: list[str]

    def __post_init__(self):
        inst = self.clip["instruments"]
        self.visible = sorted((e for e in inst if e["visible"]), key=lambda e: SLOTS.index(e["slot"]))
        self.sounding = [e for e in inst if e["sounding"]]
        self.vis_sounding = [e for e in self.visible if e["sounding"]]
        self.offscreen = any(not e["visible"] and e["sounding"] for e in inst)
        self.heard = sorted({e["name"] for e in self.sounding})
        kinds = [e["name"] for e in self.visible]
        self.seen = sorted(set(kinds))
        self.unique = [e for e in self.visible if kinds.count(e["name"]) == 1]  # nameable by kind alone
        onsets = sorted(e["first_onset"] for e in self.sounding)
        self.strict_order = len(set(onsets)) == len(onsets)
        self.order = sorted(self.sounding, key=lambda e: e["first_onset"])

    def first_last(self) -> dict[str, dict[str, Any]]:
        """ "first"/"last" sounding instrument where unique (by first onset)."""
        out = {}
        ons = [e["first_onset"] for e in self.order]
        if len(ons) >= 2 and ons[0] < ons[1]:
            out["first"] = self.order[0]
        if len(ons) >= 2 and ons[-1] > ons[-2]:
            out["last"] = self.order[-1]
        return out

    def neighbour(self, e: dict[str, Any], side: str) -> dict[str, Any] | None:
        i = self.visible.index(e)
        j = i - 1 if side == "left" else i + 1
        return self.visible[j] if 0 <= j < len(self.visible) else None


def _yn(b: bool) -> str:
    return "yes" if b else "no"


def _rhythm(name: str) -> float:
    return INSTRUMENT_BY_NAME[name].rhythm_hz


def _pick_absent(v: View, present: list[str], rng: np.random.Generator) -> str | None:
    absent = [n for n in v.pool if n not in present]
    return str(rng.choice(absent)) if absent else None


# ----------------------------------------------------------------------------- Audio
def a_sound(v, rng) -> Cands:
    out: Cands = [([str(rng.choice(v.heard))], "yes")]
    absent = _pick_absent(v, v.heard, rng)
    return out + ([([absent], "no")] if absent else [])


def a_two_sounds(v, rng) -> Cands:
    out: Cands = []
    if len(v.heard) >= 2:
        out.append(([str(x) for x in rng.choice(v.heard, 2, replace=False)], "yes"))
    absent = _pick_absent(v, v.heard, rng)
    if absent:
        pair = [str(rng.choice(v.heard)), absent]
        out.append((pair if rng.random() < 0.5 else pair[::-1], "no"))
    return out


def a_heard(v, rng) -> Cands:
    return [([], NUM[len(v.heard)])]


def _distinct_heard_pairs(v):
    solo = [e for e in v.sounding if [x["name"] for x in v.sounding].count(e["name"]) == 1]
    return list(permutations(solo, 2))


def a_rhythmic(v, rng) -> Cands:
    return [
        ([a["name"], b["name"]], _yn(_rhythm(a["name"]) > _rhythm(b["name"])))
        for a, b in _distinct_heard_pairs(v)
        if _rhythm(a["name"]) != _rhythm(b["name"])
    ]


def a_louder(v, rng) -> Cands:
    return [([a["name"], b["name"]], _yn(a["gain"] > b["gain"])) for a, b in _distinct_heard_pairs(v)]


def a_longer(v, rng) -> Cands:
    step = v.clip["duration"] / 8
    return [
        ([a["name"], b["name"]], _yn(a["sounding_s"] > b["sounding_s"]))
        for a, b in _distinct_heard_pairs(v)
        if abs(a["sounding_s"] - b["sounding_s"]) >= step - 1e-6
    ]


# ----------------------------------------------------------------------------- Visual
def v_there(v, rng) -> Cands:
    out: Cands = [([str(rng.choice(v.seen))], "yes")]
    absent = _pick_absent(v, v.seen, rng)
    return out + ([([absent], "no")] if absent else [])


def v_two_there(v, rng) -> Cands:
    out: Cands = []
    if len(v.seen) >= 2:
        out.append(([str(x) for x in rng.choice(v.seen, 2, replace=False)], "yes"))
    absent = _pick_absent(v, v.seen, rng)
    if absent:
        out.append(([str(rng.choice(v.seen)), absent], "no"))
    return out


def v_kinds(v, rng) -> Cands:
    return [([], NUM[len(v.seen)])]


def v_how_many(v, rng) -> Cands:
    names = [e["name"] for e in v.visible]
    return [([k], NUM[names.count(k)]) for k in v.seen]


def v_where_performance(v, rng) -> Cands:
    return [([], v.clip["scene"])]


def v_beside(v, rng) -> Cands:
    return [
        ([side, e["name"]], n["name"])
        for e in v.unique
        for side in ("left", "right")
        if (n := v.neighbour(e, side))
    ]


def v_what_kind(v, rng) -> Cands:
    return [([], v.visible[0]["name"])] if len(v.visible) == 1 else []


def v_leftest(v, rng) -> Cands:
    if len(v.visible) < 2:
        return []
    return [(["leftest"], v.visible[0]["name"]), (["rightest"], v.visible[-1]["name"])]


# ----------------------------------------------------------------------------- Audio-Visual
def av_from_video(v, rng) -> Cands:
    return [([], _yn(not v.offscreen))]


def av_always(v, rng) -> Cands:
    return [([e["name"]], _yn(e["always"])) for e in v.unique]


def av_count_sounding(v, rng) -> Cands:
    return [] if v.offscreen else [([], NUM[len(v.vis_sounding)])]


def av_count_kinds(v, rng) -> Cands:
    return [] if v.offscreen else [([], NUM[len({e["name"] for e in v.vis_sounding})])]


def av_count_silent(v, rng) -> Cands:
    return [([], NUM[sum(not e["sounding"] for e in v.visible)])]


def av_count_kind(v, rng) -> Cands:
    return [([k], NUM[sum(e["name"] == k for e in v.vis_sounding)]) for k in v.seen]


def av_where_ll(v, rng) -> Cands:
    if len(v.vis_sounding) < 2:
        return []
    out: Cands = []
    loud, quiet = max(v.sounding, key=lambda e: e["gain"]), min(v.sounding, key=lambda e: e["gain"])
    for word, e in (("loudest", loud), ("lowest", quiet)):
        if e["visible"]:
            out.append(([word], e["slot"]))
    return out


def av_fl_from(v, rng) -> Cands:
    out: Cands = []
    for fl, e in v.first_last().items():
        if not e["visible"]:
            continue
        out.append(([fl, e["slot"]], "yes"))
        others = [x["slot"] for x in v.visible if x["slot"] != e["slot"]]
        if others:
            out.append(([fl, str(rng.choice(others))], "no"))
    return out


def av_beside_fl(v, rng) -> Cands:
    return [
        ([side, fl], n["name"])
        for fl, e in v.first_last().items()
        if e["visible"]
        for side in ("left", "right")
        if (n := v.neighbour(e, side))
    ]


def _slot_pairs(v):
    return list(permutations(v.vis_sounding, 2))


def av_lr_louder(v, rng) -> Cands:
    return [([a["slot"], b["slot"]], _yn(a["gain"] > b["gain"])) for a, b in _slot_pairs(v)]


def av_lr_rhythmic(v, rng) -> Cands:
    return [([a["slot"], b["slot"]], _yn(_rhythm(a["name"]) > _rhythm(b["name"]))) for a, b in _slot_pairs(v)]


def av_obj_lr_louder(v, rng) -> Cands:
    return [
        ([a["name"], a["slot"], b["name"], b["slot"]], _yn(a["gain"] > b["gain"])) for a, b in _slot_pairs(v)
    ]


def av_obj_lr_rhythmic(v, rng) -> Cands:
    return [
        ([a["name"], a["slot"], b["name"], b["slot"]], _yn(_rhythm(a["name"]) > _rhythm(b["name"])))
        for a, b in _slot_pairs(v)
    ]


def av_where_fl(v, rng) -> Cands:
    return [([fl], e["slot"]) for fl, e in v.first_last().items() if e["visible"]]


def av_which_obj_fl(v, rng) -> Cands:
    out: Cands = []
    for k in v.seen:
        pair = [e for e in v.vis_sounding if e["name"] == k]
        if len(pair) != 2:
            continue
        a, b = sorted(pair, key=lambda e: e["first_onset"])
        same = a["first_onset"] == b["first_onset"]
        out += [
            ([k, "first"], "simultaneously" if same else a["slot"]),
            ([k, "last"], "simultaneously" if same else b["slot"]),
        ]
    return out


def av_before_after(v, rng) -> Cands:
    if not v.strict_order:
        return []
    out: Cands = []
    names = [e["name"] for e in v.order]
    for i, e in enumerate(v.order):
        if names.count(e["name"]) != 1 or not e["visible"]:
            continue
        if i + 1 < len(v.order):
            out.append((["after", e["name"]], v.order[i + 1]["name"]))
        if i > 0:
            out.append((["before", e["name"]], v.order[i - 1]["name"]))
    return out


def av_th(v, rng) -> Cands:
    if not v.strict_order or len(v.order) < 2:
        return []
    return [([TH[i]], e["name"]) for i, e in enumerate(v.order[: len(TH)])]


def av_same_time(v, rng) -> Cands:
    step = v.clip["duration"] / 8

    def overlap(a, b):
        return sum(max(0.0, min(x1, y1) - max(x0, y0)) for x0, x1 in a["events"] for y0, y1 in b["events"])

    out: Cands = []
    names = [e["name"] for e in v.sounding]
    for e in v.sounding:
        if names.count(e["name"]) != 1:
            continue
        with_e = [o for o in v.sounding if o is not e and overlap(e, o) >= step - 1e-6]
        if len(with_e) == 1 and names.count(with_e[0]["name"]) == 1:
            out.append(([e["name"]], with_e[0]["name"]))
    return out


Rule = Callable[[View, np.random.Generator], Cands]
# (question_content, modality, type, rule) — contents are the released templates.
TEMPLATES: tuple[tuple[str, str, str, Rule], ...] = (
    ("Is there a <Object> sound?", "Audio", "Counting", a_sound),
    ("Are there <Object> and <Object> sound?", "Audio", "Counting", a_two_sounds),
    ("How many musical instruments were heard throughout the video?", "Audio", "Counting", a_heard),
    ("Is the <Object> more rhythmic than the <Object>?", "Audio", "Comparative", a_rhythmic),
    ("Is the <Object> louder than the <Object>?", "Audio", "Comparative", a_louder),
    ("Is the <Object> playing longer than the <Object>?", "Audio", "Comparative", a_longer),
    ("Is there a <Object> in the entire video?", "Visual", "Counting", v_there),
    ("Are there <Object> and <Object> instruments in the video?", "Visual", "Counting", v_two_there),
    ("How many types of musical instruments appeared in the entire video?", "Visual", "Counting", v_kinds),
    ("How many <Object> are in the entire video?", "Visual", "Counting", v_how_many),
    ("Where is the performance?", "Visual", "Location", v_where_performance),
    ("What is the instrument on the <LR> of <Object>?", "Visual", "Location", v_beside),
    ("What kind of musical instrument is it?", "Visual", "Location", v_what_kind),
    ("What kind of instrument is the <LRer> instrument?", "Visual", "Location", v_leftest),
    ("Is this sound from the instrument in the video?", "Audio-Visual", "Existential", av_from_video),
    ("Is the <Object> in the video always playing?", "Audio-Visual", "Existential", av_always),
    ("How many instruments are sounding in the video?", "Audio-Visual", "Counting", av_count_sounding),
    ("How many types of musical instruments sound in the video?", "Audio-Visual", "Counting", av_count_kinds),
    (
        "How many instruments in the video did not sound from beginning to end?",
        "Audio-Visual",
        "Counting",
        av_count_silent,
    ),
    ("How many sounding <Object> in the video?", "Audio-Visual", "Counting", av_count_kind),
    ("Where is the <LL> instrument?", "Audio-Visual", "Location", av_where_ll),
    ("Is the <FL> sound coming from the <LR> instrument?", "Audio-Visual", "Location", av_fl_from),
    (
        "What is the <LR> instrument of the <FL> sounding instrument?",
        "Audio-Visual",
        "Location",
        av_beside_fl,
    ),
    (
        "Is the instrument on the <LR> louder than the instrument on the <LR>?",
        "Audio-Visual",
        "Comparative",
        av_lr_louder,
    ),
    (
        "Is the instrument on the <LR> more rhythmic than the instrument on the <LR>?",
        "Audio-Visual",
        "Comparative",
        av_lr_rhythmic,
    ),
    (
        "Is the <Object> on the <LR> louder than the <Object> on the <LR>?",
        "Audio-Visual",
        "Comparative",
        av_obj_lr_louder,
    ),
    (
        "Is the <Object> on the <LR> more rhythmic than the <Object> on the <LR>?",
        "Audio-Visual",
        "Comparative",
        av_obj_lr_rhythmic,
    ),
    ("Where is the <FL> sounding instrument?", "Audio-Visual", "Temporal", av_where_fl),
    ("Which <Object> makes the sound <FL>?", "Audio-Visual", "Temporal", av_which_obj_fl),
    ("Which instrument makes sounds <BA> the <Object>?", "Audio-Visual", "Temporal", av_before_after),
    ("What is the <TH> instrument that comes in?", "Audio-Visual", "Temporal", av_th),
    (
        "Which is the musical instrument that sounds at the same time as the <Object>?",
        "Audio-Visual",
        "Temporal",
        av_same_time,
    ),
)
WEIGHT = {"Audio-Visual": 3.0, "Audio": 1.0, "Visual": 1.0}  # mostly Audio-Visual, as released


def clip_questions(clip: dict[str, Any], pool: list[str], k: int, rng: np.random.Generator) -> list[dict]:
    """Up to ``k`` questions on distinct templates, Audio-Visual ones three times as likely."""
    view = View(clip, pool)
    avail = [(t, c) for t in TEMPLATES if (c := t[3](view, rng))]
    if not avail:
        return []
    w = np.array([WEIGHT[t[1]] for t, _ in avail])
    picked = rng.choice(len(avail), min(k, len(avail)), replace=False, p=w / w.sum())
    out = []
    for i in sorted(picked):
        (content, modality, qtype, _), cands = avail[i]
        values, answer = cands[int(rng.integers(len(cands)))]
        out.append(
            {"content": content, "modality": modality, "type": qtype, "values": values, "answer": answer}
        )
    return out
