"""MVBench (OpenGVLab/MVBench): 20 temporal video sub-tasks, multiple choice — the fifth benchmark, added as
one folder (``data``: the released layout, prompt, both scoring rules, metrics; this module: its
registered class, keys and report; ``fixtures/``: a miniature release for the tests). The AVTrustBench
paper evaluates it before and after CAVPref (its Table 14: average accuracy on the 20 tasks).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from cavpref.eval.benchmarks.mvbench import data
from cavpref.eval.common import select
from cavpref.eval.extract import match_choice
from cavpref.eval.option_score import best_option
from cavpref.eval.registry import Benchmark, Loaded, register
from cavpref.eval.runner import PassRequest
from cavpref.eval.tables import fmt
from cavpref.eval.tables import table as _table


@dataclass
class MVBenchOptions:
    """``cavpref eval mvbench`` keys of its own."""

    video_folders: list[str] = field(
        default_factory=list,
        metadata={
            "help": "MVBench: 'SUB_TASK=FOLDER' video folders (relative to the media root) that differ from the release's"
        },
    )
    use_bounds: bool = field(
        default=True, metadata={"help": "MVBench: cut the four bounded sub-tasks to their start / end"}
    )

    def __post_init__(self):
        self.folders: dict[str, str] = {}
        for entry in self.video_folders:
            task, sep, folder = entry.partition("=")
            if not sep or task not in data.SUBTASKS:
                raise ValueError(
                    f"--video_folders: {entry!r} is not SUB_TASK=FOLDER with a sub-task of {list(data.SUBTASKS)}"
                )
            self.folders[task] = folder


@register
class MVBench(Benchmark):
    name = data.BENCHMARK
    title = "MVBench"
    Options = MVBenchOptions
    defaults: ClassVar[dict[str, Any]] = {"max_new_tokens": 16, "batch_size": 8, "chunk_size": 64}
    modes = ("generate", "likelihood")
    protocols = ("paper", "official")
    rank_by = ("Avg",)
    prediction_format = "{id, response} rows, or the notebook's {id, pred} (already starting with its '(')"

    def read(self) -> Loaded:
        items = data.read(self.args.data, folders=self.opt.folders, bounds=self.opt.use_bounds)
        items = select(items, self.args.tasks, self.args.limit, data=self.args.data)
        # the release folder: json/ and video/ side by side
        root = self.args.media_root or str(data.json_files(self.args.data)[0].parent.parent)
        return Loaded(items, root, {"files": [self.args.data], "items": len(items)})

    def decode_media(self, item, media_root: str):
        from cavpref.media.decode import decode
        from cavpref.media.spec import MediaError

        if item.meta.get("data_type") == "frame":
            raise MediaError(
                f"{item.task} is released as folders of JPEG frames ({item.meta['video']}); write each folder "
                "as an mp4 and point --video_folders at them"
            )
        return decode(item.media, media_root, frames=self.frame_policy(), sample_rate=self.args.sample_rate)

    def request(self, item, k: int) -> PassRequest:
        official = self.protocol == "official"
        candidates = letters = None
        if (
            self.args.mode == "likelihood"
        ):  # every option-scoring protocol recorded (cavpref.eval.option_score)
            candidates, letters = [f"({x}) {t}" for x, t in item.options.items()], list(item.options)
        return PassRequest(data.prompt(item, official), candidates, letters=letters)

    def score(self, jobs):
        out = []
        for j in jobs:
            item = j.item
            if self.args.mode == "likelihood":
                best = best_option(j.output, self.args.option_score)
                letter = None if best is None else list(item.options)[best]
                rule, correct = f"argmax {self.args.option_score}", letter == item.answer
            elif self.protocol == "official":
                pred = j.request.info.get("pred") or data.official_prediction(j.output)
                letter, rule = None, f"check_ans({pred[:40]!r})"
                correct = data.check_ans(pred, data.ground_truth(item))
            else:
                ext = match_choice(j.output or "", item.options, task=item.task, prompt=j.request.prompt)
                letter, rule = ext.choice, ext.rule
                correct = letter == item.answer
            out.append(
                {
                    "task": item.task,
                    "choice": letter,
                    "rule": rule,
                    "correct": correct,
                    "protocol": self.protocol,
                }
            )
        return out

    def metrics(self, scored, outcomes) -> dict[str, Any]:
        return data.mvbench_metrics([(it.task, bool(rs[0]["correct"]), len(it.options)) for it, rs in scored])

    def describe(self) -> dict[str, Any]:
        return {"benchmark": self.name, "passes": 1, "protocol": self.protocol, "judge": None}

    # external predictions: {id, response}, or the notebook's answers {id, pred} ("(" already in front)
    def prediction(self, row):
        for name in ("response", "pred"):
            if row.get(name) is not None:
                return str(row[name])
        return None

    def score_predictions(self, jobs, rows):
        for job, row in zip(jobs, rows):
            if "pred" in row and "response" not in row:
                job.request.info["pred"] = str(row["pred"])
        return self.score(jobs)

    # reports
    def headline(self, results):
        m = results["metrics"]
        return {"Avg": m["overall"]["Avg"], "task_mean": m["task_mean"]["acc"], "n": m["overall"]["n"]}

    def section(self, results):
        m = results["metrics"]
        rows = [[t, str(v["n"]), fmt(v["acc"]), fmt(v["random_guess"])] for t, v in m["per_subtask"].items()]
        rows += [
            ["**Avg** (all items)", str(m["overall"]["n"]), fmt(m["overall"]["Avg"]), ""],
            ["task mean (unweighted)", str(m["task_mean"]["n_tasks"]), fmt(m["task_mean"]["acc"]), ""],
        ]
        return ["## Accuracy per sub-task", ""] + _table(["Sub-task", "N", "Acc", "random guess"], rows)

    def figures(self, results):
        per = results["metrics"]["per_subtask"]
        tasks = list(per)
        series = {
            "accuracy": [per[t]["acc"] for t in tasks],
            "random guess": [per[t]["random_guess"] for t in tasks],
        }
        return [("mvbench_subtasks.png", [tasks], [series], ["MVBench per sub-task"])]

    def columns(self, results):
        m = results["metrics"]
        return {**{t: v["acc"] for t, v in m["per_subtask"].items()}, "Avg": m["overall"]["Avg"]}
