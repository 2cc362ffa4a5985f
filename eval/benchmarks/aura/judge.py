"""AuraScore's LLM-judge steps (AURA section 4, Algorithm 1) and the per-item scorer.

All judge calls go through the project's one ``ChatClient`` (``cavpref.chat_client``: cache, retries, bounded
concurrency), so a resumed or repeated run costs no judge calls; the gold-reasoning sanitisation is the
same request for every model and is cached across runs. The prompts are our wording of the three steps the
paper describes (answer equivalence, fact decomposition and matching, abstraction of the core claim); the
version string goes into results.

Per item: the answer's letter decides ACC when it names exactly one option; otherwise the judge decides
equivalence. Only correct answers are sent on: FCS (one judge call), CIS (two sanitisation calls, then the
NLI cross-encoder on all pairs in one batch). A correct answer with an empty reasoning scores FCS = CIS = 0
without calls (no fact of the gold reasoning is stated; there is no hypothesis to entail). A judge failure
leaves the item unscored with the error recorded, so a resumed run retries exactly those items.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cavpref.chat_json import ask, parse_json_reply
from cavpref.data import BenchmarkItem
from cavpref.eval.benchmarks.aura.data import letter_of
from cavpref.eval.common import score_from_reply

PROMPT_VERSION = "aura-judge/v1"

_EQUIV = """You check whether a model's answer to a multiple-choice question means the same as the correct option.
Ignore option letters: they may differ. Small wording differences are fine; a different key fact (colour,
object, person, place, number) is not. Reply with one JSON object: {"is_correct": true} or {"is_correct": false}."""

_FCS = """You are a meticulous fact checker. Compare a GENERATED reasoning with a GROUND-TRUTH reasoning.
1. Break the ground-truth reasoning into atomic facts (subject, object, attribute, action, location, time).
2. Break the generated reasoning into atomic facts the same way.
3. For each ground-truth fact, decide whether the generated reasoning states it correctly and completely.
4. The score is (number of ground-truth facts matched) / (number of ground-truth facts), between 0.0 and 1.0.
Reply with one JSON object: {"gold_facts": [...], "matched": [...], "factual_consistency_score": <float>}."""

_SANITIZE = """Rewrite a reasoning statement as its abstract core inferential claim: remove every grounded
detail (who, where, colours, named objects, instruments, places, times) and keep only the logical
relationship (possession of an attribute, a cause, a comparison), using placeholders such as "the subject",
"the object", "an attribute". Example: "The flutist in the top half wears a black polka-dot shirt" becomes
"The subject's attire has a specific pattern."
Reply with one JSON object: {"sanitized_reasoning": "<the abstract claim>"}."""


def equivalence_messages(answer: str, item: BenchmarkItem) -> list[dict]:
    correct = f"{item.answer}. {item.options[item.answer]}"
    return [
        {"role": "system", "content": _EQUIV},
        {
            "role": "user",
            "content": f"Question: {item.question}\nModel answer: {answer}\nCorrect option: {correct}",
        },
    ]


def fcs_messages(generated: str, gold: str) -> list[dict]:
    return [
        {"role": "system", "content": _FCS},
        {"role": "user", "content": f"GENERATED reasoning:\n{generated}\n\nGROUND-TRUTH reasoning:\n{gold}"},
    ]


def sanitize_messages(reasoning: str) -> list[dict]:
    return [
        {"role": "system", "content": _SANITIZE},
        {"role": "user", "content": f"Reasoning statement:\n{reasoning}"},
    ]


def parse_equivalence(text: str | None) -> bool:
    """True / False from the judge's reply; ValueError when it says neither."""
    m = re.search(r"\"?is_correct\"?\s*[:=]\s*\"?(true|false|yes|no|1|0)\b", text or "", re.IGNORECASE)
    word = m.group(1).lower() if m else (text or "").strip().strip(".").lower()
    if word in ("true", "yes", "1", "correct"):
        return True
    if word in ("false", "no", "0", "incorrect"):
        return False
    raise ValueError(f"no is_correct verdict in reply {str(text)[:120]!r}")


def parse_fcs(text: str | None) -> float:
    return score_from_reply(text, ("factual_consistency_score", "fcs", "score"))


def parse_sanitized(text: str | None) -> str:
    try:
        obj = parse_json_reply(text, want=dict)
        value = obj.get("sanitized_reasoning", obj.get("claim"))
    except ValueError:
        value = None
    if value is None and text and not text.strip().startswith("{"):
        value = text.strip()  # a bare sentence is the claim itself
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"no sanitized_reasoning in reply {str(text)[:120]!r}")
    return value.strip()


@dataclass
class AuraJudges:
    """The judge client (``cavpref.chat_client.ChatClient``; None: letters only, no FCS/CIS) and the NLI scorer
    (``eval.nli.NLIScorer``, loaded by the caller)."""

    client: Any = None
    nli: Any = None
    max_tokens: int = 512
    parse_retries: int = 2  # an unusable reply is asked again with a different seed

    def describe(self) -> dict:
        judge = None if self.client is None else {**self.client.describe(), "prompt_version": PROMPT_VERSION}
        return {"judge": judge, "nli": None if self.nli is None else self.nli.describe()}


def score(
    items: Sequence[BenchmarkItem], answers: Sequence[str], reasonings: Sequence[str], judges: AuraJudges
) -> list[dict[str, Any]]:
    """One record per item: ``correct`` (None while undecided), ``fcs``, ``cis`` (0 for a wrong answer,
    None while pending) and everything the judges said; ``error`` names the step that failed."""
    recs: list[dict[str, Any]] = []
    for item, answer, reasoning in zip(items, answers, reasonings):
        letter = letter_of(answer, item)
        recs.append(
            {
                "id": item.id,
                "task": item.task,
                "answer": answer,
                "reasoning": reasoning,
                "letter": letter,
                "correct": None if letter is None else letter == item.answer,
                "correct_by": "letter" if letter is not None else None,
                "fcs": None,
                "cis": None,
                "error": None,
            }
        )
    # 1. answers that name no single letter: the judge decides equivalence with the correct option
    todo = [i for i, r in enumerate(recs) if r["correct"] is None]
    if judges.client is None:
        for i in todo:
            recs[i].update(correct=False, correct_by="unparsed (no judge)")
    elif todo:
        replies = ask(
            judges.client,
            [(equivalence_messages(recs[i]["answer"], items[i]), None) for i in todo],
            lambda _, text: parse_equivalence(text),
            max_tokens=64,
            retries=judges.parse_retries,
            desc="aura answer",
        )
        for i, rep in zip(todo, replies):
            recs[i].update(
                equivalence_reply=rep.text,
                correct_by="judge",
                correct=rep.value,
                error=None if rep.error is None else f"answer judge: {rep.error}",
            )
    for r in recs:
        if r["correct"] is False:
            r.update(fcs=0.0, cis=0.0)
        elif r["correct"] and not r["reasoning"].strip():
            r.update(fcs=0.0, cis=0.0, note="empty reasoning")
    if judges.client is None:
        return recs
    # 2. correct answers: FCS, and both reasonings sanitised
    todo = [i for i, r in enumerate(recs) if r["correct"] and r["fcs"] is None]
    steps = (("fcs", parse_fcs), ("sanitize gold", parse_sanitized), ("sanitize generated", parse_sanitized))
    reqs = []
    for i in todo:
        gold, gen = items[i].meta["gold_reasoning"], recs[i]["reasoning"]
        reqs += [
            (fcs_messages(gen, gold), None),
            (sanitize_messages(gold), None),
            (sanitize_messages(gen), None),
        ]
    replies = ask(
        judges.client,
        reqs,
        lambda j, text: steps[j % 3][1](text),
        max_tokens=judges.max_tokens,
        retries=judges.parse_retries,
        desc="aura fcs/cis",
    )
    pairs = []
    for n, i in enumerate(todo):
        got = replies[3 * n : 3 * n + 3]
        recs[i].update(fcs_reply=got[0].text, sanitize_replies=[got[1].text, got[2].text])
        failed = [f"{name}: {rep.error}" for (name, _), rep in zip(steps, got) if rep.error is not None]
        if failed:
            recs[i]["error"] = "reasoning judge: " + "; ".join(failed)
            continue
        recs[i].update(sanitized_gold=got[1].value, sanitized_generated=got[2].value)
        pairs.append((i, got[0].value, got[1].value, got[2].value))
    if pairs:
        if judges.nli is None:
            raise ValueError("CIS needs the NLI cross-encoder (AuraJudges.nli)")
        probs = judges.nli.entailment([p[2] for p in pairs], [p[3] for p in pairs])
        for (i, fcs, _, _), p in zip(pairs, probs):
            recs[i].update(fcs=fcs, cis=float(p))
    return recs


def is_scored(rec: dict) -> bool:
    """A record whose ACC, FCS and CIS are all decided (what metrics may use)."""
    return rec.get("correct") is not None and rec.get("fcs") is not None and rec.get("cis") is not None
