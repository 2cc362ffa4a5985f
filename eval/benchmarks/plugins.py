"""AURA, MMAR and TraceAV-Bench as benchmarks of the shared runner (``eval.runner.Benchmark``).

Each is one pass per item (no CircularEval: the released protocols score one answer), a prompt builder,
a scorer over a wave of answers, and an outcome. The runner does the rest exactly as for AVTrustBench:
records appended as produced, keyed by model / generation / prompt / media, resume, sharding. A record
whose judge step failed is re-scored from its stored response on the next run (``needs_rescore``), never
regenerated. TraceAV-Bench also decodes its own media (``decode_media``: long-video sampling) and adds
the sampling policy to the record key (``key_extra``).
"""

from __future__ import annotations

from typing import Any

from cavpref.eval.benchmarks import aura, mmar, traceav
from cavpref.eval.benchmarks.aura_judge import AuraJudges, is_scored
from cavpref.eval.benchmarks.aura_judge import score as aura_score
from cavpref.eval.benchmarks.common import split_response
from cavpref.eval.benchmarks.longvideo import LongVideoPolicy, decode_long
from cavpref.eval.benchmarks.mmar_judge import MMARJudge, ratings_of
from cavpref.eval.benchmarks.mmar_judge import score as mmar_score
from cavpref.eval.metrics import ItemOutcome
from cavpref.eval.runner import Job, PassRequest


class _OnePass:
    """One pass per item; an item whose scoring is still pending counts as skipped (retried on resume)."""

    name = ""
    protocol = "paper"  # "paper" | "official" (docs/reasoning_benchmarks.md)

    def next_pass(self, item, records: list[dict]) -> int | None:
        return None if records else 0

    def request(self, item, k: int) -> PassRequest:
        return PassRequest(self.prompt(item))

    def prompt(self, item) -> str:
        raise NotImplementedError

    def scored(self, record: dict) -> bool:
        return True

    def needs_rescore(self, record: dict) -> bool:
        """A record scored under the other protocol is re-scored from its stored response."""
        return record.get("protocol", "paper") != self.protocol

    def outcome(self, item, records: list[dict]) -> ItemOutcome:
        rec = records[0]
        out = ItemOutcome(
            item.id,
            item.task,
            item.setting,
            item.source,
            item.category,
            vanilla=bool(rec.get("correct")),
            circular=bool(rec.get("correct")),
            passes_run=1,
            passes_total=1,
        )
        if not self.scored(rec):
            out.status, out.reason = "skipped", f"judge pending: {str(rec.get('error'))[:60]}"
        return out


class AuraBenchmark(_OnePass):
    name = aura.BENCHMARK

    def __init__(self, judges: AuraJudges, protocol: str = "paper"):
        self.judges, self.protocol = judges, protocol

    def prompt(self, item) -> str:
        return aura.prompt(item)

    def score(self, jobs: list[Job]) -> list[dict]:
        parts = [split_response(j.output or "") for j in jobs]
        recs = aura_score([j.item for j in jobs], [a for a, _ in parts], [r for _, r in parts], self.judges)
        return [{**r, "protocol": self.protocol} for r in recs]

    def scored(self, record: dict) -> bool:
        return is_scored(record) if self.judges.client is not None else record.get("correct") is not None

    def needs_rescore(self, record: dict) -> bool:
        return (self.judges.client is not None and not is_scored(record)) or super().needs_rescore(record)

    def describe(self) -> dict[str, Any]:
        return {"benchmark": self.name, "passes": 1, "protocol": self.protocol, **self.judges.describe()}


class MMARBenchmark(_OnePass):
    name = mmar.BENCHMARK

    def __init__(self, judge: MMARJudge):
        self.judge = judge
        self.protocol = judge.protocol

    def prompt(self, item) -> str:
        return mmar.prompt(item)

    def score(self, jobs: list[Job]) -> list[dict]:
        parts = [split_response(j.output or "") for j in jobs]
        return mmar_score([j.item for j in jobs], [a for a, _ in parts], [r for _, r in parts], self.judge)

    def scored(self, record: dict) -> bool:
        return not record.get("correct") or self.judge.client is None or ratings_of(record) is not None

    def needs_rescore(self, record: dict) -> bool:
        return (self.judge.client is not None and not self.scored(record)) or super().needs_rescore(record)

    def describe(self) -> dict[str, Any]:
        return {"benchmark": self.name, "passes": 1, "protocol": self.protocol, **self.judge.describe()}


class TraceAVBenchmark(_OnePass):
    name = traceav.BENCHMARK

    def __init__(self, policy: LongVideoPolicy, sample_rate: int = 16000, protocol: str = "paper"):
        self.policy, self.sample_rate, self.protocol = policy, sample_rate, protocol
        self.key_extra = policy.describe()
        self._sampled: dict[str, dict] = {}

    def prompt(self, item) -> str:
        return traceav.prompt(item)

    def decode_media(self, item, media_root: str):
        """Long-video sampling: N frames by seeking, the audio window filled with spread chunks."""
        media, sampled = decode_long(item.media, media_root, self.policy, sample_rate=self.sample_rate)
        self._sampled[item.id] = sampled
        return media

    def score(self, jobs: list[Job]) -> list[dict]:
        out = []
        for j in jobs:
            predicted, rule = traceav.parse_prediction(j.output, list(j.item.options), self.protocol)
            gold = j.item.answer_letters
            out.append(
                {
                    "task_type": j.item.task,
                    "predicted": list(predicted),
                    "gold": list(gold),
                    "rule": rule,
                    "correct": bool(predicted) and set(predicted) == set(gold),
                    "abstained": not predicted,
                    "sampled": self._sampled.get(j.item.id),
                    "protocol": self.protocol,
                }
            )
        return out

    def describe(self) -> dict[str, Any]:
        return {
            "benchmark": self.name,
            "passes": 1,
            "protocol": self.protocol,
            "sampling": self.policy.describe(),
            "judge": None,
        }
