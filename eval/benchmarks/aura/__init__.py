"""AURA (rishieraj/aura): AuraScore ACC / FCS / CIS with an LLM judge and an NLI cross-encoder.

``data`` reads the released QA files and holds the prompt and the pure metrics; ``judge`` the judge steps
of Algorithm 1; ``nli`` the cross-encoder of CIS; ``report`` the report section (Table 2's layout).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from cavpref.eval.benchmarks.aura import data, report
from cavpref.eval.common import media_root_of, select, split_response
from cavpref.eval.registry import Benchmark, Loaded, ReasonedAnswers, register


@dataclass
class AURAOptions:
    """``cavpref eval aura`` keys of its own."""

    video_pattern: str = field(default="{video_id}.mp4", metadata={"help": "AURA: media path of a video_id"})
    nli_model: str = field(
        default="cross-encoder/nli-deberta-v3-base", metadata={"help": "AURA: the CIS cross-encoder"}
    )
    model_key: str | None = field(
        default=None, metadata={"help": "AURA predictions: the <key>_answer / <key>_reason fields"}
    )


@register
class AURA(ReasonedAnswers, Benchmark):
    name = data.BENCHMARK
    title = "AURA"
    Options = AURAOptions
    defaults: ClassVar[dict[str, Any]] = {"max_new_tokens": 512, "batch_size": 4, "chunk_size": 32}
    protocols = ("paper", "official")
    uses_judge = True
    rank_by = ("overall ACC",)
    report = report
    prediction_format = (
        "'<model_key>_answer' (+ '_reason', with --model_key: the released evaluator's input), "
        "'answer'+'reasoning', or 'response'"
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._judges = None

    @property
    def judges(self):
        """The judge client and, when there is one, the NLI cross-encoder (CIS needs both; loaded once)."""
        from cavpref.eval.benchmarks.aura.judge import AuraJudges

        if self._judges is None:
            if self.client is not None and self.nli is None:
                from cavpref.eval.benchmarks.aura.nli import NLIConfig, NLIScorer

                self.nli = NLIScorer(NLIConfig(model=self.opt.nli_model))
            self._judges = AuraJudges(self.client, self.nli)
        return self._judges

    def read(self) -> Loaded:
        items = select(
            data.read(self.args.data, video_pattern=self.opt.video_pattern),
            self.args.tasks,
            self.args.limit,
            data=self.args.data,
        )
        return Loaded(
            items,
            media_root_of(self.args.data, self.args.media_root),
            {"files": [self.args.data], "items": len(items)},
        )

    def prompt(self, item) -> str:
        return data.prompt(item)

    def score_answers(self, jobs, answers, reasonings):
        from cavpref.eval.benchmarks.aura.judge import score

        items = [j.item for j in jobs]
        return [{**r, "protocol": self.protocol} for r in score(items, answers, reasonings, self.judges)]

    def scored(self, record: dict) -> bool:
        from cavpref.eval.benchmarks.aura.judge import is_scored

        return is_scored(record) if self.client is not None else record.get("correct") is not None

    def metrics(self, scored, outcomes) -> dict[str, Any]:
        recs = [(it, rs[0]) for it, rs in scored]
        kept = recs
        if self.protocol == "official":  # evaluation.py skips a record with an empty answer or reasoning
            kept = [(it, r) for it, r in recs if not data.official_skip(r.get("answer"), r.get("reasoning"))]
        out = data.aura_metrics(
            [
                data.AuraRecord(it.task, bool(r["correct"]), r["fcs"] or 0.0, r["cis"] or 0.0)
                for it, r in kept
            ],
            reasoning=self.client is not None,
        )
        return {**out, "dropped_empty": len(recs) - len(kept)}

    def describe(self) -> dict[str, Any]:
        return {"benchmark": self.name, "passes": 1, "protocol": self.protocol, **self.judges.describe()}

    # external predictions: the released evaluator's input, or our own rows
    def prediction_key(self, row):
        if "id" in row:
            return str(row["id"]), 0
        if {"question", "video_id", "category"} <= set(row):
            task = data.task_code(str(row["category"]))
            if task is not None:
                return data.item_id(task, str(row["video_id"]), str(row["question"])), 0
        return None

    def answer_and_reasoning(self, row) -> tuple[str, str] | None:
        key = self.opt.model_key
        if key and f"{key}_answer" in row:
            return str(row[f"{key}_answer"] or ""), str(row.get(f"{key}_reason") or "")
        if "answer" in row and "reasoning" in row:
            return str(row["answer"] or ""), str(row["reasoning"] or "")
        if "response" in row:
            return split_response(row["response"])
        return None

    # reports
    def columns(self, results):
        m = results["metrics"]
        return {
            **{f"{t} ACC": b["ACC"] for t, b in m["per_task"].items()},
            "overall ACC": m["overall"]["ACC"],
            "overall FCS": m["overall"]["FCS"],
            "overall CIS": m["overall"]["CIS"],
        }
