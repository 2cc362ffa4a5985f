"""AURA (rishieraj/aura): AuraScore ACC / FCS / CIS with an LLM judge and an NLI cross-encoder."""

from __future__ import annotations

from typing import Any

from cavpref.eval.benchmarks import aura, reports
from cavpref.eval.benchmarks.base import ReasoningBenchmark
from cavpref.eval.benchmarks.common import split_response
from cavpref.eval.registry import register


@register
class AURA(ReasoningBenchmark):
    name = aura.BENCHMARK
    title = "AURA"
    default_max_new_tokens = 512
    prediction_format = (
        "'<model_key>_answer' (+ '_reason', with --model_key: the released evaluator's input), "
        "'answer'+'reasoning', or 'response'"
    )

    def read(self, args):
        return aura.read(args.data, video_pattern=args.video_pattern)

    def plugin(self, args, client=None, nli=None, backend=None):
        """AURA loads the NLI cross-encoder only when a judge is configured (CIS needs both)."""
        from cavpref.eval.benchmarks.aura_judge import AuraJudges
        from cavpref.eval.benchmarks.plugins import AuraBenchmark

        if client is not None and nli is None:
            from cavpref.eval.nli import NLIConfig, NLIScorer

            nli = NLIScorer(NLIConfig(model=args.nli_model))
        return AuraBenchmark(AuraJudges(client, nli), args.protocol)

    def metrics(self, args, recs, media_root, *, judged) -> dict[str, Any]:
        kept = recs
        if args.protocol == "official":  # evaluation.py skips a record with an empty answer or reasoning
            kept = [(it, r) for it, r in recs if not aura.official_skip(r.get("answer"), r.get("reasoning"))]
        out = aura.aura_metrics(
            [
                aura.AuraRecord(it.task, bool(r["correct"]), r["fcs"] or 0.0, r["cis"] or 0.0)
                for it, r in kept
            ],
            reasoning=judged,
        )
        return {**out, "dropped_empty": len(recs) - len(kept)}

    def prediction_key(self, row):
        if {"question", "video_id", "category"} <= set(row):
            task = aura.task_code(str(row["category"]))
            if task is not None:
                return aura.item_id(task, str(row["video_id"]), str(row["question"]))
        return None

    def prediction(self, args, row):
        key = args.model_key
        if key and f"{key}_answer" in row:
            return str(row[f"{key}_answer"] or ""), str(row.get(f"{key}_reason") or "")
        if "answer" in row and "reasoning" in row:
            return str(row["answer"] or ""), str(row["reasoning"] or "")
        if "response" in row:
            return split_response(row["response"])
        return None

    def score_answers(self, plugin, items, answers, reasonings):
        from cavpref.eval.benchmarks.aura_judge import score

        return [{**r, "protocol": plugin.protocol} for r in score(items, answers, reasonings, plugin.judges)]

    def headline(self, results):
        return results["metrics"]["overall"]

    def section(self, results):
        return reports.aura_section(results)

    def figures(self, results):
        return reports.aura_figures(results)
