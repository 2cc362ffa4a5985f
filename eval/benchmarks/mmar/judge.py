"""MMAR-Rubrics scoring: K judge ratings per correctly answered item, raw scores kept.

A rater is one independent judge request: rater k of an answer is its own call with its own cache entry
(the cache key includes the rater), under either protocol — ``paper`` sends rater k with
``seed = base_seed + k``, ``official`` sends all K with ``base_seed`` as the released script does (five
identical calls; a seeded judge answers them alike). So a fresh run makes exactly K calls per correct
answer, whatever the thread timing, and a rerun makes none (each rating comes back from the cache). A reply that does not parse (wrong length, a score
outside the criterion's choices) is asked again with the seed moved. The released script re-asks with
the same seed; against a seeded, deterministic judge that repeats the same unparsable reply, so the project
differs here on purpose (only unparsable replies are affected; parsed ratings are the script's).
A wrong answer gets no judge call (r_i = 0). Every rating keeps the judge's reply and the per-criterion
scores, so ``mmar.mmar_metrics`` recomputes both variance protocols offline; an item whose K ratings are
not all valid stays unscored with the error recorded, and a resumed run asks again for what failed in
transport (valid ratings come back from the cache).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cavpref.chat_json import ask
from cavpref.data import BenchmarkItem
from cavpref.eval.benchmarks.mmar.data import (
    DEFAULT_RATERS,
    PROMPT_VERSION,
    is_correct,
    parse_rubric_reply,
    rubric_fraction,
    rubric_messages,
)


@dataclass
class MMARJudge:
    client: Any = None  # cavpref.chat_client.ChatClient; None: accuracy only
    raters: int = DEFAULT_RATERS
    seed: int = 42
    max_tokens: int = 1024
    parse_retries: int = 2  # a reply that does not parse is asked again with the seed moved
    # "paper": rater k uses seed + k (distinct requests); "official": every rater uses ``seed``, as the
    # released ``code/evaluation_rubrics.py`` (SEED = 42 for all NUM_RATERS calls), and correctness is
    # string match alone (``mmar.is_correct``)
    protocol: str = "paper"

    def seeds(self) -> list[int]:
        return [self.seed + (0 if self.protocol == "official" else k) for k in range(self.raters)]

    def describe(self) -> dict:
        if self.client is None:
            return {"judge": None}
        return {
            "judge": {
                **self.client.describe(),
                "prompt_version": PROMPT_VERSION,
                "raters": self.raters,
                "seeds": self.seeds(),
                "rater": "one independent request per rater (the cache key includes the rater)",
            }
        }


def score(
    items: Sequence[BenchmarkItem], answers: Sequence[str], reasonings: Sequence[str], judge: MMARJudge
) -> list[dict[str, Any]]:
    """One record per item: ``correct``, ``correct_by``, ``ratings`` (K dicts: seed, reply, per-criterion
    scores, r — or error) and ``error``. A correct item has usable r values only when all K ratings do."""
    recs, requests, owners = [], [], []
    for i, (item, answer, reasoning) in enumerate(zip(items, answers, reasonings)):
        ok, how = is_correct(answer, item, judge.protocol)
        recs.append(
            {
                "id": item.id,
                "modality": item.task,
                "category": item.category,
                "sub_category": item.meta.get("sub_category"),
                "answer_prediction": answer,
                "thinking_prediction": reasoning,
                "correct": ok,
                "correct_by": how,
                "ratings": [],
                "protocol": judge.protocol,
                "error": None,
            }
        )
        if ok and judge.client is not None:
            if not item.meta.get("rubric"):
                recs[-1]["error"] = "no rubric in the benchmark record"
                continue
            messages = rubric_messages(item, reasoning, answer)
            for k, seed in enumerate(judge.seeds()):
                requests.append((messages, seed, f"rater {k}"))
                owners.append((i, k))
    if judge.client is None or not requests:
        return recs

    def parse(j, text):
        return parse_rubric_reply(text, items[owners[j][0]].meta["rubric"])

    replies = ask(
        judge.client,
        requests,
        parse,
        max_tokens=judge.max_tokens,
        retries=judge.parse_retries,
        desc="mmar rubric",
    )
    for (i, k), (_, seed, _), rep in zip(owners, requests, replies):
        rating = {"rater": k, "seed": seed, "reply": rep.text, "attempts": rep.attempts}
        if rep.error is None:
            rating.update(scores=rep.value, r=rubric_fraction(rep.value, items[i].meta["rubric"]))
        else:
            rating["error"] = rep.error
            recs[i]["error"] = recs[i]["error"] or f"rater {k}: {rep.error}"
        recs[i]["ratings"].append(rating)
    return recs


def ratings_of(rec: dict) -> tuple[float, ...] | None:
    """The K r values of a fully rated record (None when some rating failed or is missing)."""
    rs = [x.get("r") for x in rec.get("ratings", [])]
    return tuple(rs) if rs and all(r is not None for r in rs) else None
