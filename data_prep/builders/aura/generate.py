"""AURA generation, the pure part: the generator's user prompt, reading its reply, checking each question,
shuffling the options.

The released generators parse the reply, check the keys and append each question to the jsonl (paper
Sec. 3.2, "Structured Output and Validation"). Here a reply that is not the list asked for is re-asked (a
new seed) and, if it stays unusable, counted as a failed call; each question in a usable reply is then
checked on its own (``problem``), so every generated question ends kept or rejected with a reason.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from cavpref.chat_json import parse_json_reply
from cavpref.data_prep.builders.aura.tasks import AuraTask

LETTERS = ("A", "B", "C", "D")
NOT_SAID = "(no speech recognised)"


def _describe(inputs: Mapping[str, str], transcript: bool) -> str:
    lines = [f"Visual description:\n{inputs['visual']}", f"Audio description:\n{inputs['audio']}"]
    if transcript:
        lines.append(f"Speech transcript:\n{inputs.get('transcript') or NOT_SAID}")
    return "\n\n".join(lines)


def user_prompt(task: AuraTask, parts: Mapping[str, Mapping[str, str]], truth: Mapping[str, Any]) -> str:
    """The generator's input for one clip: its descriptions (per half / per performance for ID and PSP) and
    the ground truth the task needs (TSA's sync status, PSP's order)."""
    if task.layout == "stack":
        body = "\n\n".join(
            f"--- {half.upper()} half ---\n{_describe(parts[half], False)}" for half in ("top", "bottom")
        )
    elif task.layout == "sequence":
        body = "\n\n".join(
            f"--- {which.upper()} performance ---\n{_describe(parts[which], False)}"
            for which in ("first", "second")
        )
        body += f"\n\nGround truth: the {truth['first']} performs first, then the {truth['second']}."
    else:
        body = _describe(parts["clip"], task.transcript)
        if task.layout == "sync":
            status, shift = truth["sync_status"], truth["shift_s"]
            detail = (
                "the sound track is aligned with the picture"
                if status == "Aligned"
                else (
                    f"the sound track runs {abs(shift):g} s {'ahead of' if shift > 0 else 'behind'} the picture"
                )
            )
            body += f"\n\nGround truth: {status} ({detail})."
    return f"{body}\n\nWrite {task.per_call} question(s) for this video, following every rule."


def parse_reply(task: AuraTask, text: str | None) -> list[dict]:
    """The reply's list of ``task.per_call`` objects (one bare object for a one-question task); anything else
    is ValueError (the caller re-asks)."""
    try:
        value = parse_json_reply(text, want=list)
    except ValueError:
        if task.per_call != 1:
            raise
        value = [parse_json_reply(text, want=dict)]
    if len(value) != task.per_call or not all(isinstance(v, dict) for v in value):
        raise ValueError(f"expected a list of {task.per_call} objects, got {len(value)} item(s)")
    return value


def problem(item: Mapping[str, Any]) -> str | None:
    """Why one generated question cannot go into the benchmark, or None: the rule-based checks."""
    question, options = item.get("question"), item.get("options")
    if not isinstance(question, str) or not question.strip():
        return "no question"
    if not isinstance(options, dict) or sorted(options) != list(LETTERS):
        return "options are not A-D"
    texts = [options[k].strip().lower() if isinstance(options[k], str) else "" for k in LETTERS]
    if not all(texts):
        return "an empty option"
    if len(set(texts)) != len(texts):
        return "duplicate options"
    if item.get("correct_answer_key") not in options:
        return "answer key is not an option"
    reasoning = item.get("gold_reasoning")
    if not isinstance(reasoning, str) or not reasoning.strip():
        return "no gold reasoning"
    return None


def released_record(
    item: Mapping[str, Any], video_id: str, task: AuraTask, rng: random.Random, truth: Mapping[str, Any]
) -> dict:
    """The question as the released files hold it, options permuted with ``rng`` (the released TSA generator
    shuffles its options; here every task's are, so the key's position carries no signal)."""
    order = list(LETTERS)
    rng.shuffle(order)
    options = {new: item["options"][old].strip() for new, old in zip(LETTERS, order)}
    record = {
        "question": item["question"].strip(),
        "options": options,
        "correct_answer_key": LETTERS[order.index(item["correct_answer_key"])],
        "gold_reasoning": item["gold_reasoning"].strip(),
        "video_id": video_id,
        "category": task.category,
    }
    if task.layout == "sync":
        record["sync_status"] = truth["sync_status"]
    return record
