"""Loopback OpenAI-compatible servers answering the benchmark builders' model roles deterministically.

A helper module (like ``judge_server``), imported by the builder tests. One ``RoleServer`` answers every role,
told apart by the request's ``model``; each reply is a pure function of the request, so two builds of the same
videos get the same replies, and a request can be recognised again across processes (its ``digest``). The
server records every request and every reply it finished sending, and can be told to fail a role (HTTP 500)
or to hang (to kill a build while requests are in flight).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading

from cavpref.chat_client import request_hash
from tests.helpers.judge_server import LoopbackServer, completion, publish

INSTRUMENTS = ("violin", "cello", "flute", "piano", "drum", "guitar", "trumpet", "accordion")
COLOURS = ("red", "blue", "green", "yellow", "purple", "orange")


def digest(body: dict) -> tuple[str, str]:
    """A request as the client's reply cache keys it: (model, ``request_hash`` of its messages and parameters)."""
    params = {k: v for k, v in body.items() if k not in ("model", "messages")}
    return body["model"], request_hash(body["messages"], params)


def _pick(seq, text: str, salt: str = ""):
    return seq[int(hashlib.sha256((salt + text).encode()).hexdigest(), 16) % len(seq)]


def _media_key(body: dict) -> str:
    """The media parts of a user message (what a captioner is shown)."""
    parts = body["messages"][-1]["content"]
    return (
        json.dumps([p for p in parts if p.get("type") != "text"]) if isinstance(parts, list) else str(parts)
    )


def _text(body: dict) -> str:
    msgs = body["messages"]
    return "\n".join(m["content"] if isinstance(m["content"], str) else "" for m in msgs)


def aura_generator(body: dict) -> str:
    """Valid AURA questions for any task prompt, with planted faults: TPR's third question names an answer
    key that is not an option, UANS's second repeats its first."""
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    n = int(re.search(r"a list of (\d+) objects", system).group(1))
    task = re.search(r"Task: ([a-z /-]+)", system).group(1).strip()
    seed = hashlib.sha256(user.encode()).hexdigest()[:6]
    items = []
    for k in range(n):
        thing = _pick(INSTRUMENTS, user, str(k))
        items.append(
            {
                "question": f"[{task}] Which detail goes with the {thing} sound? ({seed}-{k})",
                "options": {
                    "A": f"The {thing} player on the left",
                    "B": f"The {_pick(COLOURS, user, str(k))} backdrop",
                    "C": "A person off screen",
                    "D": "Nothing at all",
                },
                "correct_answer_key": "A",
                "gold_reasoning": f"The {thing} is heard while the player on the left bows it.",
            }
        )
    if task.startswith("timbre") and n == 3:
        items[2]["correct_answer_key"] = "E"
    if task.startswith("unanswerability") and n == 2:
        items[1]["question"] = items[0]["question"]
    return json.dumps(items)


class RoleServer(LoopbackServer):
    """``answers``: model name -> ``f(body) -> reply text`` (the builder roles' models). ``fail``: models
    answered with HTTP 500; ``hang_after``: after that many finished replies, every request hangs until
    ``release`` is set."""

    def __init__(self, answers: dict, *, fail: tuple[str, ...] = (), hang_after: int | None = None):
        self.answers, self.fail, self.hang_after = answers, set(fail), hang_after
        self.finished: list[tuple[str, str]] = []  # digests of the replies sent
        self.release = threading.Event()
        self._done = threading.Lock()
        self._answered = 0  # requests let through (hang_after counts these, so exactly that many finish)
        super().__init__(self._reply)

    def _reply(self, body: dict, n: int):
        with self._done:
            hang = self.hang_after is not None and self._answered >= self.hang_after
            self._answered += not hang
        if hang:
            self.release.wait(60)
            return 503, {}, {"error": "released"}, 0
        if body["model"] in self.fail:
            return 500, {}, {"error": {"message": "role down"}}, 0
        text = self.answers[body["model"]](body)
        with self._done:
            self.finished.append(digest(body))
        return 200, {}, completion(text), 0

    def digests(self) -> list[tuple[str, str]]:
        with self.lock:
            return [digest(r["body"]) for r in self.requests]


def aura_answers() -> dict:
    return {
        "visual": lambda b: (
            f"A musician plays the {_pick(INSTRUMENTS, _media_key(b))} in front of a "
            f"{_pick(COLOURS, _media_key(b), 'c')} wall."
        ),
        "audio": lambda b: (
            f"A {_pick(('slow', 'bright', 'deep'), _media_key(b))} {_pick(INSTRUMENTS, _media_key(b))} melody."
        ),
        "generator": aura_generator,
    }


# ----------------------------------------------------------------------------- TraceAV-Bench roles


def _segment(text: str) -> int:
    return int(re.search(r"segment (\d+)", text).group(1))


def trace_visual(body: dict) -> str:
    """A caption per segment, from the frames sent; "Performer" is in every segment (the entity bridge)."""
    media, text = _media_key(body), _text(body) + json.dumps(body["messages"][-1]["content"][-1])
    k = _segment(text)
    thing, colour = _pick(INSTRUMENTS, media), _pick(COLOURS, media, "c")
    known = "Performer" in text.split("earlier segments", 1)[-1]
    performer = {"Performer": f"a musician in a {colour} shirt"}
    reply = {
        "minute_summary": f"Segment {k}: a musician in a {colour} shirt plays the {thing} on a dark stage.",
        "present_entities": performer if known else {},
        "new_entities": {**({} if known else performer), f"{thing.title()}": f"a {colour} {thing}"},
    }
    return json.dumps(reply)


def trace_fusion(body: dict) -> str:
    text = json.dumps(body["messages"][-1]["content"][-1])
    thing = _pick(INSTRUMENTS, _media_key(body))
    caption = re.search(r"What is seen in it:\\n(.*?)\\n", text).group(1)
    return json.dumps(
        {
            "integrated_caption": f"{caption} A {thing} is heard.",
            "updated_entities": {"Performer": f"a musician whose {thing} is heard"},
        }
    )


LABELS_BY_PREFIX = {
    "av": ["visual", "audio", "audio-visual"],
    "v": ["visual"] * 3,
    "a": ["audio"] * 3,
    "mh": ["audio-visual"] * 3,
}


def trace_generator(body: dict) -> str:
    """Segmentation (a cut every other segment, one overlap), proposals (a too-short chain first, then a
    valid one), questions with planted faults per sub-task (module docstring of the test)."""
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    if system.startswith("You segment"):
        k = _segment(user)
        action = "OVERLAP_TRANSITION" if k == 5 else ("HARD_CUT" if k % 2 == 1 else "CONTINUE")
        return json.dumps(
            {"action": action, "reason": "scene", "updated_summary": f"Event around segment {k}."}
        )
    payload = json.loads(user)
    if "trajectory proposal" in system:
        ids = [e["event_id"] for e in payload["events"]]
        good = ids[:: max(1, (len(ids) - 1) // 2)][:3] if len(ids) >= 3 else ids
        return json.dumps(
            {
                "trajectory_candidates": [
                    {"trajectory_id": "t0", "event_ids": ids[:2], "why_multihop": "adjacent"},
                    {
                        "trajectory_id": "t1",
                        "event_ids": good,
                        "why_multihop": "spread",
                        "question_direction": {"focus": "the performer"},
                    },
                ]
            }
        )
    task = payload["task_type"]
    events = payload["trajectory_events"]
    labels = LABELS_BY_PREFIX[task.split("_")[0]]
    hops = []
    for n, ev in enumerate(events):
        minute = (
            ev["start_minute"] - 1 if n == 0 else ev["end_minute"]
        )  # the first hop's minute is outside its event
        hops.append(
            {
                "event_id": ev["event_id"],
                "evidence": ev["minute_captions"][-1]["text"],
                "label": labels[n % 3],
                "reason": "r",
                "timestamp_minute": minute,
            }
        )
    if task == "a_background_music":
        hops[0]["label"] = "visual"  # breaks the audio-only rule
    multiple = task == "av_temporal_sequencing"
    guessable = "[guessable]" if task == "v_visual_counting" else ""
    question = {
        "question": f"{guessable}Across {len(events)} events, what does the performer do with the instrument? ({task})",
        "options": {
            "A": "Plays it indeed",
            "B": "Never touches it",
            "C": "Tunes it indeed" if multiple else "Sells it",
            "D": "Hides it",
        },
        "question_type": "multiple" if multiple else "single",
        "correct_options": ["A", "C"] if multiple else ["A"],
        "answer_text": "Plays it",
        "difficulty": "medium",
        "final_trajectory": hops,
    }
    return json.dumps(question)


def trace_verifier(body: dict) -> str:
    drop = "av_entity_tracking" in body["messages"][1]["content"]
    return json.dumps(
        {
            "is_real_multihop": not drop,
            "answer_leakage": False,
            "distractors_plausible": True,
            "options_uniform": True,
            "should_drop": drop,
            "drop_reasons": ["pseudo"] if drop else [],
        }
    )


def trace_blindfold(body: dict) -> str:
    """Guesses right only on the planted "[guessable]" question (the options saying "indeed"); abstains
    otherwise."""
    text = body["messages"][1]["content"]
    picked = re.findall(r"^([A-D])\. .*indeed", text, re.MULTILINE) if "[guessable]" in text else []
    return json.dumps({"predicted_options": picked, "confidence": 0.9 if picked else 0.0, "reason": "text"})


def trace_answers() -> dict:
    return {
        "visual": trace_visual,
        "fusion": trace_fusion,
        "generator": trace_generator,
        "verifier": trace_verifier,
        "blindfold": trace_blindfold,
    }


def simulate_raters(src: str, dst: str, columns: list[str], seed: int = 0) -> None:
    """``src``'s audit sample with ``columns`` filled as human raters would (docs/builders.md's agreement
    example): each row a seeded 1-5 quality, each rater within one point of it, and ``label`` "reject" where the
    raters' mean is below 2."""
    import csv
    import io
    import random

    rng = random.Random(seed)
    with open(src, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        base = rng.randint(1, 5)
        scores = [min(5, max(1, base + rng.choice((-1, 0, 1)))) for _ in columns]
        row.update(zip(columns, scores), label="reject" if sum(scores) / len(scores) < 2 else "keep")
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=[*rows[0]])
    writer.writeheader()
    writer.writerows(rows)
    with open(dst, "w", encoding="utf-8", newline="") as f:
        f.write(buf.getvalue())


if (
    __name__ == "__main__"
):  # the docs' stand-ins: aura|traceav URL_FILE (a role server), raters SRC DST COL...
    if sys.argv[1] == "raters":
        simulate_raters(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        publish(RoleServer({"aura": aura_answers, "traceav": trace_answers}[sys.argv[1]]()), sys.argv[2])
