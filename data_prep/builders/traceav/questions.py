"""TraceAV-Bench Steps 3b-3c (App. D.3, Algorithm 1): trajectories over the events, then one question each.

* Proposal (``generator`` role): per video and sub-task, candidate chains of events with a question direction.
* Filter (pure, ``trajectory_problems``): between ``min_hops`` and ``max_hops`` distinct known events, a span
  of at least ``min_span`` event ids (the paper's delta), and **every** pair of consecutive events sharing a
  named entity (the paper's entity bridge; the released filter accepts a chain when any one pair shares one).
  The first ``questions_per_video`` survivors are used (the released code asks the model to pick when more
  survive; the proposer is asked to rank its candidates instead).
* Question (``generator`` role): a four-option question with a modality label and a minute per hop.
* Refinement (pure, ``released_item``): a hop's minute outside its event is mapped to the event's closest raw
  caption (word overlap, as released); ``minute_hop_count`` sums the minutes between consecutive hops and
  ``hop_length_label`` bins it; the four options are permuted with a per-question seed.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from typing import Any

from cavpref.chat_json import parse_json_reply
from cavpref.data_prep.builders.traceav.tasks import TraceTask

LETTERS = ("A", "B", "C", "D")

PROPOSE_SYSTEM = """You are the trajectory proposal agent of a benchmark of multi-hop questions over long audio-visual
videos. From the video's events, propose chains of events (trajectories) that together, and only together,
answer one hard question of the given sub-task. Rules: consecutive events of a chain share a named entity;
a chain spans at least the given number of event ids; no single event is enough to answer; the evidence
must be observed, not known from the world. Rank the candidates best first. Reply with JSON only:
{"trajectory_candidates": [{"trajectory_id": "t1", "event_ids": [int, ...], "why_multihop": str,
"question_direction": {"focus": str, "answer_hint": str, "distractor_hint": str, "answer_mode_hint": str}}]}"""

QUESTION_SYSTEM = """You are the question generation agent of a benchmark of multi-hop questions over long audio-visual
videos. Turn the given trajectory into one four-option multiple-choice question of the given sub-task:
- anti-shortcut: the question cannot be answered from general knowledge or common sense, only by observing
  the events of the trajectory;
- grounded distractors: every wrong option is plausible and taken from real events of the same video;
- uniform style: the options are alike in length, structure and wording.
Label each evidence hop with the modality it comes from ("visual", "audio" or "audio-visual") and the
segment number (minute) where it is found. Reply with JSON only:
{"question": str, "options": {"A": str, "B": str, "C": str, "D": str}, "question_type": "single" | "multiple",
"correct_options": ["A", ...], "answer_text": str, "difficulty": "easy" | "medium" | "hard",
"final_trajectory": [{"event_id": int, "evidence": str, "label": "visual" | "audio" | "audio-visual",
"reason": str, "timestamp_minute": int}]}"""


def option_mode(task: TraceTask) -> str:
    return "single_choice_only" if task.single_only else "single_or_multiple"


def catalog(events: list[dict]) -> list[dict]:
    """What the proposer sees of each event (no raw captions)."""
    return [
        {
            "event_id": e["event_id"],
            "start_minute": e["start_minute"],
            "end_minute": e["end_minute"],
            "summary": e["summary"],
            "entities": sorted(e["involved_entities"]),
        }
        for e in events
    ]


def propose_prompt(task: TraceTask, events: list[dict], cfg) -> str:
    return json.dumps(
        {
            "task_type": task.task_type,
            "task_definition": task.definition,
            "option_mode": option_mode(task),
            "constraints": {
                "min_hops": cfg.min_hops,
                "max_hops": cfg.max_hops,
                "min_span_event_ids": cfg.min_span,
                "max_candidates": cfg.max_candidates,
            },
            "events": catalog(events),
        },
        ensure_ascii=False,
    )


def parse_proposal(text: str | None) -> list[dict]:
    obj = parse_json_reply(text, want=dict)
    candidates = obj.get("trajectory_candidates")
    if not isinstance(candidates, list):
        raise ValueError("no trajectory_candidates list")  # noqa: TRY004 - a malformed reply is a ValueError (chat_json)
    return [c for c in candidates if isinstance(c, dict)]


def event_ids(candidate: dict) -> list[int] | None:
    ids = candidate.get("event_ids")
    if not isinstance(ids, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in ids):
        return None
    return ids


def trajectory_problems(candidate: dict, events_by_id: dict[int, dict], cfg) -> list[str]:
    """Every structural rule a proposed trajectory breaks (empty: it is kept)."""
    ids = event_ids(candidate)
    if ids is None:
        return ["event_ids is not a list of integers"]
    out = []
    if len(ids) < cfg.min_hops:
        out.append("too few hops")
    if len(ids) > cfg.max_hops:
        out.append("too many hops")
    if len(set(ids)) != len(ids):
        out.append("an event repeats")
    if any(i not in events_by_id for i in ids):
        return [*out, "an unknown event"]
    if ids and max(ids) - min(ids) < cfg.min_span:
        out.append("span shorter than min_span")
    bridges = [
        set(events_by_id[a]["involved_entities"]) & set(events_by_id[b]["involved_entities"])
        for a, b in itertools.pairwise(ids)
    ]
    if not all(bridges):
        out.append("consecutive events share no entity")
    return out


def question_prompt(task: TraceTask, candidate: dict, events_by_id: dict[int, dict]) -> str:
    ids = event_ids(candidate) or []
    pool: dict[str, dict] = {}
    for i in ids:
        for name, info in events_by_id[i]["involved_entities"].items():
            pool.setdefault(name, info)
    return json.dumps(
        {
            "task_type": task.task_type,
            "task_definition": task.definition,
            "option_mode": option_mode(task),
            "question_direction": candidate.get("question_direction", {}),
            "trajectory_events": [
                {
                    "event_id": i,
                    "start_minute": events_by_id[i]["start_minute"],
                    "end_minute": events_by_id[i]["end_minute"],
                    "summary": events_by_id[i]["summary"],
                    "minute_captions": [
                        {"minute": events_by_id[i]["start_minute"] + k, "text": t}
                        for k, t in enumerate(events_by_id[i]["raw_segments"])
                    ],
                }
                for i in ids
            ],
            "entity_pool": pool,
        },
        ensure_ascii=False,
    )


_TOKEN = re.compile(r"[a-z0-9]+")


def jaccard(a: str, b: str) -> float:
    ta, tb = set(_TOKEN.findall(a.lower())), set(_TOKEN.findall(b.lower()))
    return len(ta & tb) / len(ta | tb) if ta and tb else 0.0


def evidence_minute(event: dict, evidence: str) -> int:
    """The minute of the event's raw caption closest to ``evidence`` (the first on ties)."""
    scores = [jaccard(evidence, seg) for seg in event["raw_segments"]]
    best = max(range(len(scores)), key=lambda k: (scores[k], -k)) if scores else 0
    return min(event["start_minute"] + best, event["end_minute"])


def refine_hops(raw: list, events_by_id: dict[int, dict]) -> tuple[list[dict], int, int]:
    """(hops as released, hops citing an unknown event, minutes re-mapped)."""
    hops, unknown, remapped = [], 0, 0
    for node in raw if isinstance(raw, list) else []:
        eid = node.get("event_id") if isinstance(node, dict) else None
        if not isinstance(eid, int) or isinstance(eid, bool) or eid not in events_by_id:
            unknown += 1
            continue
        ev = events_by_id[eid]
        minute = node.get("timestamp_minute")
        if not (
            isinstance(minute, int)
            and not isinstance(minute, bool)
            and ev["start_minute"] <= minute <= ev["end_minute"]
        ):
            minute = evidence_minute(ev, str(node.get("evidence", "")))
            remapped += 1
        hops.append(
            {
                "event_id": eid,
                "evidence": str(node.get("evidence", "")),
                "label": str(node.get("label", "")),
                "reason": str(node.get("reason", "")),
                "timestamp_minute": minute,
                "event_time_range": {"start_minute": ev["start_minute"], "end_minute": ev["end_minute"]},
            }
        )
    return hops, unknown, remapped


def hop_length_label(minutes: int, cfg) -> str:
    return (
        "short" if minutes <= cfg.short_hop_max else ("medium" if minutes <= cfg.medium_hop_max else "long")
    )


def letters(value: Any) -> list[str]:
    """Correct options as sorted distinct letters A-D (anything else dropped)."""
    items = [value] if isinstance(value, str) else (value if isinstance(value, list) else [])
    return sorted({str(x).strip().upper() for x in items} & set(LETTERS))


def released_item(raw: dict, hops: list[dict], cfg, rng: random.Random) -> dict:
    """The released item (``question_id`` and ``video_id`` added by the writer), options permuted."""
    options = raw.get("options") if isinstance(raw.get("options"), dict) else {}
    order = list(LETTERS)
    rng.shuffle(order)
    new_options = {new: str(options.get(old, "")).strip() for new, old in zip(LETTERS, order)}
    correct = sorted(LETTERS[order.index(c)] for c in letters(raw.get("correct_options")))
    qtype = str(raw.get("question_type", "")).strip().lower()
    minutes = sum(abs(b["timestamp_minute"] - a["timestamp_minute"]) for a, b in itertools.pairwise(hops))
    return {
        "question": str(raw.get("question", "")).strip(),
        "options": new_options,
        "question_type": qtype,
        "correct_options": correct,
        "answer_text": " | ".join(new_options[c] for c in correct),
        "minute_hop_count": minutes,
        "hop_length_label": hop_length_label(minutes, cfg),
        "trajectory_with_timestamps": hops,
        "difficulty": str(raw.get("difficulty", "")).strip().lower(),
    }
