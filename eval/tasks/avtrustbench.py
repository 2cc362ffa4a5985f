"""AVTrustBench (the core paper's benchmark): CircularEval over nine trust tasks, two-step choice extraction.

Its metrics: per-task accuracy (``eval.metrics``) and the trust metrics that blind abstention cannot game —
the paired trust score, abstention rates and the computed "always abstain" / "never abstain" rows
(``eval.trust``), all in results.json's ``metrics``, every report and ``cavpref eval compare``.

It runs through its own pipeline (``eval.pipeline``: ``EvalArgs``, CircularEval passes, option likelihood)
and reports in the paper's layouts (``eval.report``); this class is its registry entry.
"""

from __future__ import annotations

from cavpref.eval import pipeline, report
from cavpref.eval.avtrustbench import AVTrustBench as AVTrustBenchPlugin
from cavpref.eval.metrics import primary
from cavpref.eval.registry import Benchmark, register


@register
class AVTrustBench(Benchmark):
    name = AVTrustBenchPlugin.name
    title = "AVTrustBench"
    default_max_new_tokens = 64  # EvalArgs.max_new_tokens
    prediction_format = "JSONL rows {id, rotation?, response | choice} (docs/evaluation.md)"

    def args_type(self) -> type:
        return pipeline.EvalArgs

    def evaluate(self, args):
        for name in ("model", "data", "output"):
            if not getattr(args, name):
                raise ValueError(f"--{name} is required")
        return pipeline.evaluate(args)

    def score_predictions(self, args, predictions):
        return pipeline.score_predictions(args, predictions)

    def headline(self, results):
        """Overall accuracy, plus per setting the paired trust score and CLEAN's false-abstention rate
        (``cavpref.eval.trust``), which always abstaining cannot game."""
        m = results["metrics"]
        out = dict(m["overall"])
        if m.get("trust"):
            out["trust"] = {
                s: {
                    "paired": primary(b["paired"]),
                    "paired_n": b["paired"]["n"],
                    "false_abstention": b["false_abstention"],
                }
                for s, b in m["trust"]["settings"].items()
            }
        return out

    def score_summary(self, results):
        return self.headline(results)

    def write_report(self, results, out_dir):
        report.write_report(results, out_dir)
