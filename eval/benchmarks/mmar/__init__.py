"""MMAR / MMAR-Rubrics (ddlBoJack/MMAR): accuracy by string match, rubric scores by K judge raters, and
either reading of "five runs, mean of the middle three" (``data``: raters / runs / inference_runs).

``data`` reads ``MMAR-meta.jsonl`` and holds the prompt, correctness and the pure metrics; ``judge`` the
K raters; ``report`` the report section. ``--runs R`` asks the model R times per item (sampling with
seed ``run_seed + k`` for run k; records of every run kept, a killed run resumes), every report names the
protocol each number comes from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from cavpref.eval.benchmarks.mmar import data, report
from cavpref.eval.common import media_root_of, pass_number, select, split_response
from cavpref.eval.registry import Benchmark, Loaded, ReasonedAnswers, register
from cavpref.eval.runner import PassRequest


@dataclass
class MMAROptions:
    """``cavpref eval mmar`` keys of its own."""

    raters: int = field(default=5, metadata={"help": "MMAR: judge ratings per correct answer"})
    rater_seed: int = field(
        default=42, metadata={"help": "MMAR: judge seed (paper: rater k uses seed + k; official: all use it)"}
    )
    runs: int = field(
        default=1,
        metadata={
            "help": "MMAR: inference runs per item (5 = the card's five runs, mean of the middle three); "
            "1 answers once, greedily"
        },
    )
    run_seed: int = field(default=0, metadata={"help": "MMAR: sampling seed of run 0 (run k: run_seed + k)"})
    run_temperature: float = field(default=1.0, metadata={"help": "MMAR: sampling temperature of the runs"})

    def __post_init__(self):
        if self.raters < 1 or self.runs < 1:
            raise ValueError(f"--raters and --runs must be >= 1, got {self.raters} / {self.runs}")


@register
class MMAR(ReasonedAnswers, Benchmark):
    name = data.BENCHMARK
    title = "MMAR-Rubrics"
    Options = MMAROptions
    defaults: ClassVar[dict[str, Any]] = {"max_new_tokens": 1024, "batch_size": 4, "chunk_size": 32}
    protocols = ("paper", "official")
    uses_judge = True
    rank_by = ("Avg", "Rubrics", "CRS")
    report = report
    prediction_format = "'answer_prediction' (or 'model_prediction') with 'thinking_prediction', or 'response'; 'run' with --runs"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        from cavpref.eval.benchmarks.mmar.judge import MMARJudge

        self.judge = MMARJudge(
            self.client, raters=self.opt.raters, seed=self.opt.rater_seed, protocol=self.protocol
        )

    def read(self) -> Loaded:
        items = select(data.read(self.args.data), self.args.tasks, self.args.limit, data=self.args.data)
        return Loaded(
            items,
            media_root_of(self.args.data, self.args.media_root),
            {"files": [self.args.data], "items": len(items)},
        )

    def n_passes(self, item) -> int:
        return self.opt.runs

    def request(self, item, k: int) -> PassRequest:
        sampling = None
        if self.opt.runs > 1:
            sampling = {
                "do_sample": True,
                "temperature": self.opt.run_temperature,
                "seed": self.opt.run_seed + k,
            }
        return PassRequest(data.prompt(item), sampling=sampling)

    def score_answers(self, jobs, answers, reasonings):
        from cavpref.eval.benchmarks.mmar.judge import score

        recs = score([j.item for j in jobs], answers, reasonings, self.judge)
        return [{**r, "run": j.k} for j, r in zip(jobs, recs)]

    def scored(self, record: dict) -> bool:
        from cavpref.eval.benchmarks.mmar.judge import ratings_of

        return not record.get("correct") or self.client is None or ratings_of(record) is not None

    def metrics(self, scored, outcomes) -> dict[str, Any]:
        from cavpref.eval.benchmarks.mmar.judge import ratings_of

        def record(it, r):
            return data.MMARRecord(
                it.id,
                bool(r["correct"]),
                ratings_of(r) or (),
                it.task,
                it.category,
                it.meta.get("sub_category"),
            )

        judged = self.client is not None
        if self.opt.runs > 1:
            per_item = [[record(it, r) for r in sorted(rs, key=lambda r: r["pass"])] for it, rs in scored]
            return {"inference_runs": data.inference_runs_metrics(per_item, rated=judged)}
        rated = [record(it, rs[0]) for it, rs in scored]
        return data.mmar_metrics(rated, ("raters", "runs") if judged else ("accuracy",))

    def describe(self) -> dict[str, Any]:
        runs = None
        if self.opt.runs > 1:
            seeds = [self.opt.run_seed + k for k in range(self.opt.runs)]
            runs = {"runs": self.opt.runs, "seeds": seeds, "temperature": self.opt.run_temperature}
        return {
            "benchmark": self.name,
            "passes": self.opt.runs,
            "protocol": self.protocol,
            "inference_runs": runs,
            **self.judge.describe(),
        }

    # external predictions: the released evaluator's input (one row per item, or per item and run)
    def prediction_key(self, row):
        return (str(row["id"]), pass_number(row, "run")) if "id" in row else None

    def answer_and_reasoning(self, row) -> tuple[str, str] | None:
        for name in ("answer_prediction", "model_prediction"):  # current release; MMAR's first evaluator
            if name in row:
                return str(row[name] or ""), str(row.get("thinking_prediction") or "")
        if "response" in row:
            return split_response(row["response"])
        return None

    # reports
    def headline(self, results):
        return {p: b["overall"] for p, b in results["metrics"].items()}

    def columns(self, results):
        m = results["metrics"]
        protocol = next(iter(m))  # inference_runs, raters or accuracy: the report names it
        o = m[protocol]["overall"]
        return {
            **{f"{k} Avg": v["Avg"] for k, v in m[protocol]["modality"].items()},
            "Avg": o["Avg"],
            "Rubrics": o["Rubrics"],
            "CRS": o["CRS"],
        }
