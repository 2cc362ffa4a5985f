"""Choice extraction, step 2 (AVTrustBench appendix B.2): an LLM judge, MMBench style.

The judge sees the question, the options and the model's answer, plus task-specific extra options
that name the abstentions of B.2 ("the audio is missing", "the options are irrelevant", a masked correct
answer for MCIT/ICIT when the item carries one in ``meta["masked_answer"]``). Choosing an extra option
is an abstention. "No match found" stays unparsed and counts as wrong — never a random letter, unlike
MMBench's fallback — and a judge that is down or replies nonsense is recorded as a judge error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cavpref.chat_client import ChatClient
from cavpref.data import LETTERS
from cavpref.data_prep.tasks import TASK_SPECS
from cavpref.eval.extract import ABSTAIN, Extraction, normalise

PROMPT_VERSION = "avtrustbench-choice/v1"

# B.2, per task: the options added for the judge (each one means "the model abstained"): TaskSpec.judge_options.
JUDGE_EXTRA_OPTIONS: dict[str, tuple[str, ...]] = {
    name: spec.judge_options for name, spec in TASK_SPECS.items() if spec.judge_options
}
NO_MATCH = "No match found"
JUDGE_ERROR = "judge error"

_INSTRUCTIONS = f"""You match a model's free-form answer to the options of a multiple-choice question.
Output the letter of the single option that the answer chooses or states in its own words.
If the answer chooses several options, none of them, or asks for clarification, output "{NO_MATCH}".
Output only the letter or "{NO_MATCH}", nothing else.

Example
Question: What is the main sound source in the video?
Options:
A. A dog
B. A car engine
C. Rain
Answer: I hear an engine revving, so it must be the vehicle.
Output: B

Example
Question: How many instruments are playing?
Options:
A. One
B. Two
Answer: Could you please clarify what you mean?
Output: {NO_MATCH}
"""


@dataclass(frozen=True)
class JudgeQuery:
    """One step-2 request: what the judge sees and what each extra letter means."""

    messages: list[dict]
    letters: tuple[str, ...]  # the item's letters
    extra_letters: tuple[str, ...]  # letters of the added abstention options


def build_query(
    question: str, options: Mapping[str, str], response: str, *, task: str, masked_answer: str | None = None
) -> JudgeQuery:
    spec = TASK_SPECS.get(task)  # a task registered after this import (a plugin loaded late): its spec
    extras = list(JUDGE_EXTRA_OPTIONS.get(task) or (spec.judge_options if spec else ()))
    if masked_answer and task in ("MCIT", "ICIT"):
        extras.insert(0, masked_answer)
    free = [x for x in LETTERS if x not in options]
    extra_letters = tuple(free[: len(extras)])
    shown = {**options, **dict(zip(extra_letters, extras))}
    listing = "\n".join(f"{k}. {v}" for k, v in shown.items())
    user = f"{_INSTRUCTIONS}\nQuestion: {question}\nOptions:\n{listing}\nAnswer: {response}\nOutput:"
    return JudgeQuery([{"role": "user", "content": user}], tuple(options), extra_letters)


def parse_reply(text: str, query: JudgeQuery, abstain_letter: str | None) -> Extraction:
    """Map the judge's reply to an Extraction; a reply that is neither a valid letter nor "no match" is a
    judge error (kept unparsed, retried on resume)."""
    reply = normalise(text)
    if "no match" in reply.lower():
        return Extraction(None, "unparsed", "judge: no match", text)
    m = re.fullmatch(r"[(\[]?([A-Z])[)\]]?[.:]?(?:\s.*)?", reply)
    letter = m.group(1) if m else None
    if letter in query.letters:
        return Extraction(letter, "judge", "judge", text)
    if letter in query.extra_letters:
        return Extraction(
            ABSTAIN if abstain_letter is None else abstain_letter, "judge", "judge: abstention", text
        )
    return Extraction(None, "unparsed", f"{JUDGE_ERROR}: unusable reply {text[:80]!r}", text)


class ChoiceJudge:
    """Step 2 over a batch, through the shared ``ChatClient`` (cache, retries, concurrency)."""

    prompt_version = PROMPT_VERSION

    def __init__(self, client: ChatClient):
        self.client = client

    def describe(self) -> dict:
        return {**self.client.describe(), "prompt_version": self.prompt_version}

    def judge(self, queries: Sequence[JudgeQuery], abstain_letters: Sequence[str | None]) -> list[Extraction]:
        results = self.client.chat_many([q.messages for q in queries], desc="judge")
        out = []
        for q, r, abstain in zip(queries, results, abstain_letters):
            out.append(
                parse_reply(r.text, q, abstain)
                if r.ok
                else Extraction(None, "unparsed", f"{JUDGE_ERROR}: {r.error}")
            )
        return out
