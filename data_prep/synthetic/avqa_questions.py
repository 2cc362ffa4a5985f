"""AVQA questions for one clip: 4-way multiple choice over the world's sound sources and facts.

Covers every released ``question_type`` (Which, Come From, Happening, Where, Why, Before Next, When,
Used For) with the released ``question_relation`` values (View, Both, Sound). Distractors are drawn
from the other sources' facts, so every option is a plausible answer somewhere in the world.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .catalogue import AVQA_SOURCES, SOURCE_BY_NAME
from .scenes import WHEN

WHERE_SLOT = {"left": "On the left", "middle": "In the middle", "right": "On the right"}
WHERE_OPTIONS = ("On the left", "In the middle", "On the right", "Off screen")
SCENE_TEXT = {"indoor": "Indoors", "street": "On the street", "field": "In a field"}
SCENE_OPTIONS = ("Indoors", "On the street", "In a field", "Underwater")


def _options(
    answer: str,
    pool: list[str],
    rng: np.random.Generator,
    fixed: tuple[str, ...] | None = None,
    must: str | None = None,
):
    """Exactly four options containing ``answer`` once (and ``must``, a required distractor), in random
    order; returns (options, index of the answer)."""
    if fixed is not None:
        opts = list(fixed)
    else:
        head = [answer] + ([must] if must else [])
        others = [p for p in dict.fromkeys(pool) if p not in head]
        opts = head + [str(x) for x in rng.choice(others, 4 - len(head), replace=False)]
    opts = [opts[i] for i in rng.permutation(4)]
    return opts, opts.index(answer)


def _fact(name: str, field: str) -> str:
    return getattr(SOURCE_BY_NAME[name], field)


def clip_questions(clip: dict[str, Any], k: int, rng: np.random.Generator) -> list[dict]:
    """Up to ``k`` questions, each on a different question type."""
    a = clip["sources"][0]
    b = clip["sources"][1] if len(clip["sources"]) > 1 else None
    name = a["name"]
    names = list(AVQA_SOURCES)
    cands: list[tuple] = []

    def add(qtype, relation, text, answer, pool=None, fixed=None, must=None):
        cands.append((qtype, relation, text, answer, pool, fixed, must))

    if clip["role"] != "next":
        add(
            "Come From",
            "Both",
            "Where does the sound come from?",
            name.capitalize(),
            [n.capitalize() for n in names],
        )
    if clip["role"] == "silent":
        add(
            "Which",
            "Both",
            "Which object in the video is making the sound?",
            name.capitalize(),
            [n.capitalize() for n in names],
            must=b["name"].capitalize(),
        )
    else:
        add("Which", "Both", "What is making the sound?", name.capitalize(), [n.capitalize() for n in names])
    add(
        "Happening",
        "View",
        "What happened in the video?",
        _fact(name, "event"),
        [_fact(n, "event") for n in names],
    )
    if clip["role"] != "next":
        add("Where", "Both", "Where is the sounding object?", WHERE_SLOT[a["slot"]], fixed=WHERE_OPTIONS)
    add("Where", "View", "Where is this video taken?", SCENE_TEXT[clip["scene"]], fixed=SCENE_OPTIONS)
    add(
        "Why",
        "Both",
        "Why is there a sound in the video?",
        _fact(name, "why"),
        [_fact(n, "why") for n in names],
    )
    if clip["role"] == "next":
        add(
            "Before Next",
            "Both",
            f"What makes a sound after the {name}?",
            b["name"].capitalize(),
            [n.capitalize() for n in names],
        )
        add(
            "Before Next",
            "Both",
            f"What makes a sound before the {b['name']}?",
            name.capitalize(),
            [n.capitalize() for n in names],
        )
    add("When", "Sound", f"When does the {name} make a sound?", a["when"], fixed=WHEN)
    add(
        "Used For",
        "View",
        f"What is the {name} used for?",
        _fact(name, "used_for"),
        [_fact(n, "used_for") for n in names],
    )

    by_type: dict[str, list] = {}
    for c in cands:
        by_type.setdefault(c[0], []).append(c)
    types = list(by_type)
    out = []
    for ti in sorted(rng.choice(len(types), min(k, len(types)), replace=False)):
        group = by_type[types[ti]]
        qtype, relation, text, answer, pool, fixed, must = group[int(rng.integers(len(group)))]
        options, index = _options(answer, pool or [], rng, fixed, must)
        out.append(
            {
                "question_type": qtype,
                "question_relation": relation,
                "question_text": text,
                "multi_choice": options,
                "answer": index,
            }
        )
    return out
