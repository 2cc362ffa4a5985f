"""TraceAV-Bench (Heinz217/TraceAV-Bench): multi-hop multiple choice over long videos, exact set match."""

from __future__ import annotations

from typing import Any

from cavpref.eval.benchmarks import reports, traceav
from cavpref.eval.benchmarks.base import ReasoningBenchmark
from cavpref.eval.benchmarks.pipeline import durations_for
from cavpref.eval.registry import register
from cavpref.eval.runner import Job


@register
class TraceAV(ReasoningBenchmark):
    name = traceav.BENCHMARK
    title = "TraceAV-Bench"
    default_max_new_tokens = 32
    uses_judge = False
    prediction_format = '\'response\' (free text) or \'prediction\' (letters: "A,C" or ["A", "C"])'

    def read(self, args):
        return traceav.read(args.data)

    def plugin(self, args, client=None, nli=None, backend=None):
        from cavpref.eval.benchmarks.plugins import TraceAVBenchmark

        return TraceAVBenchmark(args.long_policy(backend), args.sample_rate, args.protocol)

    def frame_policy(self, args, plugin):
        return plugin.policy.frame_policy()  # long-video sampling decides the frames

    def metrics(self, args, recs, media_root, *, judged) -> dict[str, Any]:
        lengths = durations_for(args, [it for it, _ in recs], media_root)
        return traceav.traceav_metrics(
            [
                traceav.TraceRecord(
                    it.task,
                    tuple(r["predicted"]),
                    it.answer_letters,
                    len(it.options),
                    len(it.meta["trajectory"]),
                    traceav.first_hop_minute(it.meta["trajectory"]),
                    lengths.get(it.meta["video_id"]),
                )
                for it, r in recs
            ]
        )

    def prediction_key(self, row):
        if {"task_type", "question_id"} <= set(row):
            return f"{traceav.BENCHMARK}/{row['task_type']}/{row['question_id']}"
        return None

    def prediction(self, args, row):
        if "prediction" in row:
            pred = row["prediction"]
            return (",".join(map(str, pred)) if isinstance(pred, list) else str(pred or "")), ""
        if "response" in row:
            return str(row["response"] or ""), ""
        return None

    def score_answers(self, plugin, items, answers, reasonings):
        return plugin.score([Job(i, 0, plugin.request(i, 0), i.id, output=a) for i, a in zip(items, answers)])

    def headline(self, results):
        m = results["metrics"]
        return {"overall": m["overall"], "gen_avg": m["gen_avg"]["acc"], "mh_avg": m["mh_avg"]["acc"]}

    def section(self, results):
        return reports.traceav_section(results)

    def figures(self, results):
        return reports.traceav_figures(results)
