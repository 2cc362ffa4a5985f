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
import threading

from judge_server import LoopbackServer, completion

INSTRUMENTS = ("violin", "cello", "flute", "piano", "drum", "guitar", "trumpet", "accordion")
COLOURS = ("red", "blue", "green", "yellow", "purple", "orange")


def digest(body: dict) -> str:
    """What identifies a request across processes: its model and messages (the cache key's inputs)."""
    return hashlib.sha256(json.dumps([body["model"], body["messages"]], sort_keys=True).encode()).hexdigest()


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
        self.finished: list[str] = []  # digests of replies sent in full
        self.release = threading.Event()
        self._done = threading.Lock()
        super().__init__(self._reply)

    def _reply(self, body: dict, n: int):
        if self.hang_after is not None:
            with self._done:
                hang = len(self.finished) >= self.hang_after
            if hang:
                self.release.wait(60)
                return 503, {}, {"error": "released"}, 0
        if body["model"] in self.fail:
            return 500, {}, {"error": {"message": "role down"}}, 0
        text = self.answers[body["model"]](body)
        with self._done:
            self.finished.append(digest(body))
        return 200, {}, completion(text), 0

    def digests(self) -> list[str]:
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
