"""AVTrustBench (the core paper's benchmark): CircularEval over nine trust tasks, two-step choice extraction.

Its folder: ``reader`` (data_prep's output, or anything shaped like it), ``scoring`` (the passes, prompt,
extraction and outcome), ``choice_judge`` (step 2 of B.2), ``metrics`` (the paper's tables), ``trust``
(the paired trust score, abstention rates and the computed "always abstain" / "never abstain" rows, which
blind abstention cannot game), ``sweep`` (Table 12's instruction wordings in one run), ``report``
(report.md in the paper's layouts, plots), ``table5`` (``eval compare``'s Table 5).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from transformers.utils import logging

from cavpref import task_registry
from cavpref.data import CLEAN_TASK, TASKS
from cavpref.eval import circular as circ
from cavpref.eval.benchmarks.avtrustbench import report, scoring, sweep, table5
from cavpref.eval.benchmarks.avtrustbench.headline import mean_interval
from cavpref.eval.benchmarks.avtrustbench.metrics import summarize
from cavpref.eval.benchmarks.avtrustbench.reader import DataError, load_items
from cavpref.eval.benchmarks.avtrustbench.separation import first_pass_margins, pair_scores
from cavpref.eval.benchmarks.avtrustbench.trust import references, trust_summary
from cavpref.eval.common import pass_number
from cavpref.eval.metrics import primary
from cavpref.eval.option_score import OPTION_SCORES
from cavpref.eval.registry import Benchmark, Loaded, register

logger = logging.get_logger(__name__)


@dataclass
class AVTrustBenchOptions:
    """``cavpref eval avtrustbench`` keys of its own (the shared ones are ``EvalArgs``)."""

    setting: str | None = field(default=None, metadata={"help": "base | instruction (default: both)"})
    split: str = field(default="test", metadata={"help": "split of a prep output folder"})
    circular: bool = field(default=True, metadata={"help": "CircularEval (default); --vanilla for one pass"})
    vanilla: bool = field(default=False, metadata={"help": "one pass per item (no CircularEval)"})
    pin_abstain: bool = field(
        default=False, metadata={"help": "keep 'None of the above' fixed while rotating"}
    )
    post_prompt: str = field(default="", metadata={"help": "text appended to every prompt"})
    skip_invalid: bool = field(
        default=False, metadata={"help": "skip (and count) bad rows instead of failing"}
    )
    instructions: list[str] = field(
        default_factory=list,
        metadata={
            "help": "instruction wordings swept in one run (Table 12): each instruction-setting item is asked "
            "once per wording, a table per wording; '{abstain_letter}' becomes the None-of-the-above letter"
        },
    )
    extra_abstentions: list[str] = field(
        default_factory=list,
        metadata={"help": "more abstention regexes, 'TASK:REGEX' (or '_common:REGEX' for every task)"},
    )

    def __post_init__(self):
        if self.vanilla:
            self.circular = False
        if self.setting not in (None, "base", "instruction"):
            raise ValueError(f"--setting must be base or instruction, got {self.setting!r}")
        self.abstentions: dict[str, list[str]] = defaultdict(list)
        for entry in self.extra_abstentions:
            task, sep, pattern = entry.partition(":")
            if not sep or not pattern:
                raise ValueError(f"--extra_abstentions: {entry!r} is not TASK:REGEX")
            self.abstentions[task].append(pattern)


@register
class AVTrustBench(Benchmark):
    name = "avtrustbench"
    title = "AVTrustBench"
    Options = AVTrustBenchOptions
    modes = ("generate", "likelihood")
    uses_judge = True
    rank_by = ("all",)
    prediction_format = "JSONL rows {id, rotation?, response | choice} (docs/evaluation.md)"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        from cavpref.eval.benchmarks.avtrustbench.choice_judge import ChoiceJudge

        self.judge = None if self.client is None else ChoiceJudge(self.client)
        self._items: list = []

    @property
    def option_score(self) -> str | None:
        """Likelihood mode's headline protocol (``cavpref.eval.option_score``); None in generate mode."""
        if getattr(self.args, "mode", "generate") != "likelihood":
            return None
        return self.args.option_score

    def tasks(self) -> list[str]:
        """``--tasks`` (checked against the declared tasks), default the paper's nine (``read`` adds CLEAN
        when the data holds it: the paired trust score needs the clean twins)."""
        tasks = list(self.args.tasks) or list(TASKS)
        unknown = sorted(set(tasks) - set(task_registry.task_names()))
        if unknown:
            raise ValueError(
                f"--tasks: unknown task(s) {unknown}; choose from {list(task_registry.task_names())}"
            )
        return tasks

    def read(self) -> Loaded:
        a, o, tasks = self.args, self.opt, self.tasks()
        wanted = set(tasks) | (set() if a.tasks else {CLEAN_TASK})
        self._data_tasks: set[str] = set()

        def keep(item) -> bool:
            self._data_tasks.add(item.task)
            return item.benchmark == self.name and item.task in wanted and o.setting in (None, item.setting)

        loaded = load_items(
            a.data,
            split=o.split,
            keep=keep,
            limit=a.limit,
            skip_invalid=o.skip_invalid,
            media_root=a.media_root,
        )
        if not loaded.items:  # an empty run would write an empty report and exit 0
            raise DataError(
                f"{a.data}: no items selected (--tasks {' '.join(tasks)}, --setting "
                f"{o.setting or 'base+instruction'}, --split {o.split}): {loaded.filtered} row(s) "
                f"outside the selection, {sum(loaded.skipped.values())} invalid row(s) skipped"
            )
        present = {item.task for item in loaded.items}
        if not a.tasks and CLEAN_TASK in present:
            tasks = [*tasks, CLEAN_TASK]
        self._items = sweep.expand(loaded.items, o.instructions)
        return Loaded(
            self._items,
            loaded.media_root,
            {
                "files": loaded.files,
                "media_root": loaded.media_root,
                "invalid": dict(loaded.skipped),
                "filtered": loaded.filtered,
                "rows_read": len(loaded.items) + loaded.filtered + sum(loaded.skipped.values()),
                # a requested task with no items (in this split / setting) is named, not silently absent
                "tasks_without_items": [t for t in tasks if t not in present],
                "instruction_wordings": len(o.instructions),
            },
        )

    # ------------------------------------------------------------------------------------------ passes
    def _pin(self, item) -> str | None:
        return item.abstain_letter if self.opt.pin_abstain else None

    def n_passes(self, item) -> int:
        return circ.n_passes(item.options, circular=self.opt.circular, pin=self._pin(item))

    def next_pass(self, item, records):
        """CircularEval's next pass; in likelihood mode while any protocol is still right on every pass."""
        if self.option_score is None:
            return circ.next_pass([r["correct"] for r in records], self.n_passes(item))
        alive = [
            circ.next_pass(scoring.correct_under(records, p), self.n_passes(item)) for p in OPTION_SCORES
        ]
        return next((k for k in alive if k is not None), None)

    def request(self, item, k):
        return scoring.request(
            item,
            k,
            pin=self._pin(item),
            post_prompt=self.opt.post_prompt,
            likelihood=self.option_score is not None,
        )

    def score(self, jobs):
        found = scoring.extract(
            jobs, option_score=self.option_score, judge=self.judge, extra_abstentions=self.opt.abstentions
        )
        return [scoring.record(j, e, self.judge, self.option_score) for j, e in zip(jobs, found)]

    def needs_rescore(self, record):
        """A judge error is re-judged; a likelihood pass recorded under another headline protocol is re-read
        from its stored scores (no model call)."""
        if record.get("option_score") not in (None, self.option_score):
            return True
        return self.judge is not None and record.get("rule", "").startswith(scoring.JUDGE_ERROR)

    def outcome(self, item, records, option_score: str | None = None):
        """The item's outcome; ``option_score`` reads a likelihood run under that protocol (default: the
        headline protocol)."""
        return scoring.outcome(
            item, records, self.n_passes(item), self._pin(item), option_score or self.option_score
        )

    # ------------------------------------------------------------------------------------------ results
    def _why_no_clean(self, outcomes) -> str:
        """The advice that fits: "add CLEAN to --tasks" only when it was not asked for (it used to be
        printed when it was, and the data held none)."""
        skipped = sum(o.task == CLEAN_TASK for o in outcomes)
        if CLEAN_TASK in self.tasks() and skipped:
            return (
                "the paired trust score needs each perturbed item's clean twin: the "
                f"{skipped} CLEAN item(s) selected were not evaluated, see the skip reasons"
            )
        return self.clean_advice()

    def metrics(self, scored, outcomes) -> dict:
        """The accuracies, the paired trust score and abstention rates (``trust``), and the computed
        "always abstain" / "never abstain" rows on the same evaluated items (``references``); with an
        instruction sweep, these are the first wording's and ``instruction_sweep`` has every wording's."""
        circular = self.opt.circular
        items = self._items or [it for it, _ in scored]
        main_items, main = sweep.first_wording(items, outcomes)
        evaluated = {o.item_id for o in main if o.status == "evaluated"}
        if not any(o.task == CLEAN_TASK and o.status == "evaluated" for o in main):
            logger.warning(f"no CLEAN items evaluated: {self._why_no_clean(main)}")
        out = {
            **summarize(main, circular=circular),
            "trust": trust_summary(main, circular=circular),
            "references": references([i for i in main_items if i.id in evaluated], circular=circular),
        }
        if self.option_score is not None:  # likelihood: the margins are recorded (separation.py)
            out["separation"] = self._separation(scored, main_items, evaluated)
        if self.opt.instructions:
            out["instruction_sweep"] = sweep.sweep_metrics(
                items, outcomes, self.opt.instructions, lambda group: summarize(group, circular=circular)
            )
        return out

    def _separation(self, scored, items, evaluated: set[str]) -> dict[str, dict]:
        """Per setting ``{n, value, ci}``: the paired separation of the evaluated items under the headline
        protocol (``separation.pair_scores``; ci: ``headline.mean_interval``)."""
        by_id = {i.id: i for i in items if i.id in evaluated}
        records = [r for it, rs in scored if it.id in by_id for r in rs]
        margins = first_pass_margins(records, by_id, self.option_score, pin=self.opt.pin_abstain)
        out = {}
        for setting in sorted({i.setting for i in by_id.values()}):
            scores = pair_scores(margins, {k: i for k, i in by_id.items() if i.setting == setting})
            if scores:
                out[setting] = {
                    "n": len(scores),
                    "value": 100 * sum(scores) / len(scores),
                    "ci": mean_interval(scores),
                }
        return out

    def paired(self, items, outcomes):
        """The first wording's outcomes (the main metrics'), like every other table of the run."""
        return super().paired(items, sweep.first_wording(list(items), outcomes)[1])

    def clean_advice(self) -> str:
        """What gives a run the clean twins of its perturbed items, by why it has none."""
        why = "the paired trust score needs each perturbed item's clean twin"
        if CLEAN_TASK in getattr(self, "_data_tasks", ()):
            return f"{why}: {self.args.data} holds CLEAN items, add CLEAN to --tasks"
        return (
            f"{why}, and {self.args.data} holds none: rebuild it with `cavpref prep` (CLEAN is one of its "
            "default tasks; a config listing its own `tasks`: add CLEAN there)"
        )

    def extra_results(self, scored, outcomes) -> dict:
        """Likelihood mode: ``by_option_score`` — ``{protocol: summarize(...) + {"trust": ...}}``, the same
        passes read under each option-scoring protocol (skipped and incomplete items stay as they are)."""
        if self.option_score is None:
            return {}
        records = {it.id: sorted(rs, key=lambda r: r["pass"]) for it, rs in scored}
        items, main = sweep.first_wording(self._items or [it for it, _ in scored], outcomes)
        by_id = {o.item_id: o for o in main}
        out = {}
        for protocol in OPTION_SCORES:
            outs = [
                self.outcome(item, records[item.id], protocol)
                if by_id[item.id].status == "evaluated"
                else by_id[item.id]
                for item in sorted(items, key=lambda i: i.id)
            ]
            circular = self.opt.circular
            out[protocol] = {
                **summarize(outs, circular=circular),
                "trust": trust_summary(outs, circular=circular),
            }
        return {"by_option_score": out}

    def describe(self) -> dict[str, Any]:
        return {
            "benchmark": self.name,
            "mode": getattr(self.args, "mode", "generate"),
            "circular": self.opt.circular,
            "pin_abstain": self.opt.pin_abstain,
            "post_prompt": self.opt.post_prompt,
            "instructions": list(self.opt.instructions),
            **({"option_score": self.option_score} if self.option_score else {}),
            "judge": None if self.judge is None else self.judge.describe(),
        }

    # ------------------------------------------------------------------------------------------ predictions
    def prediction_key(self, row):
        if not isinstance(row.get("id"), str):
            raise DataError("field 'id' (string) is required")
        if ("response" in row) == ("choice" in row):
            raise DataError("give exactly one of 'response' (free text) or 'choice' (a letter)")
        choice = row.get("choice")
        if choice is not None and not (isinstance(choice, str) and scoring.LETTER_CHOICE.fullmatch(choice)):
            raise DataError(f"field 'choice' must be an option letter, ABSTAIN or null, got {choice!r:.40}")
        return row["id"], pass_number(row, "rotation")

    def answered(self, row) -> bool:
        return "response" in row or "choice" in row

    def score_predictions(self, jobs, rows):
        free = [i for i, r in enumerate(rows) if "choice" not in r]
        out: list = [None] * len(jobs)
        for i, rec in zip(free, self.score([jobs[i] for i in free])):
            out[i] = rec
        for i, row in enumerate(rows):
            if "choice" in row:
                out[i] = scoring.given_choice(jobs[i], row["choice"])
        return out

    # ------------------------------------------------------------------------------------------ reports
    def headline(self, results):
        """Overall accuracy, plus per setting the paired trust score and CLEAN's false-abstention rate
        (``trust``), which always abstaining cannot game."""
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

    def inspect(self, scored):
        """The HTML report's rows: each rotation's options and decision, the clean twin (``views``)."""
        from cavpref.eval.benchmarks.avtrustbench.views import views

        return views(self, scored)

    def report_links(self):
        return report.report_links()

    def columns(self, results):
        m = results["metrics"]
        settings = m["settings"]
        chosen = "instruction" if "instruction" in settings else next(iter(settings))
        block = settings[chosen]
        return {**{t: primary(b) for t, b in block["tasks"].items()}, "all": primary(block["overall"])}

    def compare(self, runs, labels, *, setting=None, metric="headline") -> str:
        """``eval compare``: Table 5 (differences from the first, zero-shot run; trust tables)."""
        return table5.compare(runs, labels, setting=setting, metric=metric)
