"""MMAR / MMAR-Rubrics (ddlBoJack/MMAR): accuracy by string match, rubric scores by K judge raters."""

from __future__ import annotations

from typing import Any

from cavpref.eval.benchmarks import mmar, reports
from cavpref.eval.benchmarks.base import ReasoningBenchmark
from cavpref.eval.benchmarks.common import split_response
from cavpref.eval.registry import register


@register
class MMAR(ReasoningBenchmark):
    name = mmar.BENCHMARK
    title = "MMAR-Rubrics"
    default_max_new_tokens = 1024
    prediction_format = (
        "'answer_prediction' (or 'model_prediction') with 'thinking_prediction', or 'response'"
    )

    def read(self, args):
        return mmar.read(args.data)

    def plugin(self, args, client=None, nli=None, backend=None):
        from cavpref.eval.benchmarks.mmar_judge import MMARJudge
        from cavpref.eval.benchmarks.plugins import MMARBenchmark

        return MMARBenchmark(
            MMARJudge(client, raters=args.raters, seed=args.rater_seed, protocol=args.protocol)
        )

    def metrics(self, args, recs, media_root, *, judged) -> dict[str, Any]:
        from cavpref.eval.benchmarks.mmar_judge import ratings_of

        rated = [
            mmar.MMARRecord(
                it.id,
                bool(r["correct"]),
                ratings_of(r) or (),
                it.task,
                it.category,
                it.meta.get("sub_category"),
            )
            for it, r in recs
        ]
        return mmar.mmar_metrics(rated, ("raters", "runs") if judged else ("accuracy",))

    def prediction(self, args, row):
        for name in ("answer_prediction", "model_prediction"):  # current release; MMAR's first evaluator
            if name in row:
                return str(row[name] or ""), str(row.get("thinking_prediction") or "")
        if "response" in row:
            return split_response(row["response"])
        return None

    def score_answers(self, plugin, items, answers, reasonings):
        from cavpref.eval.benchmarks.mmar_judge import score

        return score(items, answers, reasonings, plugin.judge)

    def headline(self, results):
        return {p: b["overall"] for p, b in results["metrics"].items()}

    def section(self, results):
        return reports.mmar_section(results)

    def figures(self, results):
        return reports.mmar_figures(results)
