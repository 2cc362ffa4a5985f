"""TraceAV-Bench's quality assurance (Sec. 3.4, App. F), in the paper's order: rules, logical verification,
blindfold solver; then the human-audit sample (``quality.audit_sample``: 15 % of every batch).

* ``rule_problem`` (pure): the sub-task's format and modality rules on the refined item: four distinct
  non-empty options, a question, ``single`` with one answer / ``multiple`` with two or more (single-choice
  sub-tasks: ``single`` only), every hop on a known event with a minute inside it, at least ``min_hops``
  hops, the dimension's label rule, a difficulty of easy / medium / hard.
* Logical verification (``verifier`` role): pseudo multi-hop, answer leakage in the stem, implausible or
  uneven distractors; the verifier's ``should_drop`` rejects, the reason taken from its findings.
* Blindfold (``blindfold`` role): the stem and options only, no video; an item it answers exactly right is
  rejected (an empty answer is an abstention and keeps the item).
"""

from __future__ import annotations

import json

from cavpref.chat_json import parse_json_reply
from cavpref.data_prep.builders.traceav.questions import LETTERS, letters
from cavpref.data_prep.builders.traceav.tasks import TraceTask

DIFFICULTIES = ("easy", "medium", "hard")

VERIFY_SYSTEM = """You audit one multiple-choice question of a benchmark of multi-hop reasoning over long audio-visual
videos, with its evidence trajectory. Check: is it truly multi-hop (no single hop answers it), or pseudo
multi-hop? Does the stem leak the answer? Are the distractors relevant and plausibly confusable, and alike
in length and style? Reply with JSON only:
{"is_real_multihop": bool, "answer_leakage": bool, "distractors_plausible": bool, "options_uniform": bool,
"should_drop": bool, "drop_reasons": [str], "summary": str}"""

BLINDFOLD_SYSTEM = """Answer a multiple-choice question about a video you cannot see or hear, from the text alone.
Reply with JSON only: {"predicted_options": ["A", ...], "confidence": number from 0 to 1, "reason": str}.
Give an empty list when you cannot tell."""


def rule_problem(item: dict, task: TraceTask, unknown_hops: int, min_hops: int) -> str | None:
    texts = [item["options"].get(k, "").strip().lower() for k in LETTERS]
    if not item["question"]:
        return "no question"
    if not all(texts) or len(set(texts)) != 4:
        return "not four distinct options"
    n = len(item["correct_options"])
    if item["question_type"] not in ("single", "multiple"):
        return "question_type is not single / multiple"
    if (item["question_type"] == "single") != (n == 1) or n == 0:
        return "question_type does not match the answers"
    if task.single_only and item["question_type"] != "single":
        return "a single-choice sub-task with several answers"
    if unknown_hops:
        return "a hop cites an unknown event"
    if len(item["trajectory_with_timestamps"]) < min_hops:
        return "fewer hops than min_hops"
    label = task.label_problem([h["label"] for h in item["trajectory_with_timestamps"]])
    if label:
        return label
    if item["difficulty"] not in DIFFICULTIES:
        return "difficulty is not easy / medium / hard"
    return None


def verify_prompt(task: TraceTask, item: dict) -> str:
    return json.dumps(
        {
            "task_type": task.task_type,
            "task_definition": task.definition,
            "question": item["question"],
            "options": item["options"],
            "question_type": item["question_type"],
            "correct_options": item["correct_options"],
            "trajectory": [
                {k: h[k] for k in ("event_id", "evidence", "label", "timestamp_minute")}
                for h in item["trajectory_with_timestamps"]
            ],
        },
        ensure_ascii=False,
    )


def parse_verdict(text: str | None) -> dict:
    obj = parse_json_reply(text, want=dict)
    if not isinstance(obj.get("should_drop"), bool):
        raise ValueError("should_drop is not a boolean")  # noqa: TRY004 - a malformed reply is a ValueError (chat_json)
    return obj


FINDINGS = (  # a verdict's flag, the value that is a problem, its name in the stats
    ("is_real_multihop", False, "pseudo multi-hop"),
    ("answer_leakage", True, "answer leakage"),
    ("distractors_plausible", False, "implausible distractors"),
    ("options_uniform", False, "uneven options"),
)
VERDICT_KEYS = tuple(f for f, _, _ in FINDINGS) + ("should_drop",)  # what the ledger records of a verdict


def verdict_reason(verdict: dict) -> str | None:
    """The rejection a verdict means, named by its first finding, or None when it keeps the item."""
    if not verdict["should_drop"]:
        return None
    for flag, bad, name in FINDINGS:
        if verdict.get(flag) is bad:
            return f"logical: {name}"
    return "logical: dropped by the verifier"


def blindfold_prompt(item: dict) -> str:
    listing = "\n".join(f"{k}. {v}" for k, v in item["options"].items())
    kind = (
        "one or more options may be correct"
        if item["question_type"] == "multiple"
        else "one option is correct"
    )
    return f"{item['question']}\n{listing}\n({kind})"


def parse_blindfold(text: str | None) -> list[str]:
    obj = parse_json_reply(text, want=dict)
    if "predicted_options" not in obj:
        raise ValueError("no predicted_options")
    return letters(obj["predicted_options"])
