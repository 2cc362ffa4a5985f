"""AVTrustBench as a benchmark of the shared runner: prompt builder, scorer, outcome (paper section 4, App. B).

Prompt of a pass (the paper fixes no wording beyond the B.1 instruction, which data_prep stores per item)::

    <question>
    A. <option>
    B. <option>
    ...
    <item.instruction>     (instruction setting; "{abstain_letter}" in it becomes the current letter)
    <post_prompt>          (optional, e.g. "Answer with the option's letter.")

Two answer modes. *generate* (the paper's protocol): free-form answer -> heuristics (step 1) -> optional
judge (step 2) -> letter / abstention / unparsed. *likelihood*: the option strings ``"A. <text>"`` are
scored by the model's log-likelihood and the best one is the answer — no parsing, much faster; in the
base setting of an abstention task (no "None of the above" option) the task's short abstention
response is scored as one more candidate, so abstaining stays possible. Results say which mode ran.
"Best" is read three ways (``cavpref.eval.option_score``: summed, per token, the letter alone); every
pass records all three, ``option_score`` picks the headline, and CircularEval runs each item's passes
until every protocol has decided it, so each protocol's circular accuracy is exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cavpref.data_prep.tasks import task_spec
from cavpref.eval import circular as circ
from cavpref.eval.choice_judge import JUDGE_ERROR, ChoiceJudge, build_query
from cavpref.eval.extract import ABSTAIN, Extraction, abstention_response, is_correct, match_choice
from cavpref.eval.metrics import ItemOutcome
from cavpref.eval.option_score import OPTION_SCORES, best_option, check_option_score
from cavpref.eval.runner import Job, PassRequest
from cavpref.eval.trust import record_key

from cavpref.data import BenchmarkItem
from cavpref.prompts import render_prompt, rotated_view


@dataclass
class AVTrustBenchOptions:
    circular: bool = True
    pin_abstain: bool = False  # keep "None of the above" in place while the other options rotate
    post_prompt: str = ""
    mode: str = "generate"
    extra_abstentions: dict[str, list[str]] = field(default_factory=dict)
    option_score: str = "sum"  # likelihood mode's headline protocol (cavpref.eval.option_score)

    def __post_init__(self):
        check_option_score(self.option_score)


def format_prompt(
    item: BenchmarkItem, options: dict[str, str], abstain_letter: str | None, post_prompt: str = ""
) -> str:
    """The prompt of one pass: ``cavpref.prompts.render_prompt``, the renderer of the training rows too."""
    return render_prompt(item.question, options, item.instruction, abstain_letter, post_prompt)


class AVTrustBench:
    name = "avtrustbench"

    def __init__(self, options: AVTrustBenchOptions | None = None, judge: ChoiceJudge | None = None):
        self.opt = options or AVTrustBenchOptions()
        self.judge = judge

    # ----- passes ------------------------------------------------------------------------------------------
    def n_passes(self, item: BenchmarkItem) -> int:
        return circ.n_passes(item.options, circular=self.opt.circular, pin=self._pin(item))

    def _pin(self, item: BenchmarkItem) -> str | None:
        return item.abstain_letter if self.opt.pin_abstain else None

    def next_pass(self, item: BenchmarkItem, records: list[dict]) -> int | None:
        """CircularEval's next pass; in likelihood mode while any protocol is still right on every pass."""
        if self.opt.mode != "likelihood":
            return circ.next_pass([r["correct"] for r in records], self.n_passes(item))
        alive = [circ.next_pass(self._correct(records, p), self.n_passes(item)) for p in OPTION_SCORES]
        return next((k for k in alive if k is not None), None)

    def _correct(self, records: list[dict], protocol: str | None) -> list[bool]:
        """Pass results under ``protocol`` (None: the record's own), up to and including its first failure."""
        out = []
        for r in records:
            out.append(is_correct(_choice(r, protocol), r["answer"]))
            if not out[-1]:
                break
        return out

    def view(self, item: BenchmarkItem, k: int) -> tuple[dict[str, str], str | None, str | None]:
        """(options, answer, abstain letter) as pass ``k`` shows them."""
        options, new_of = circ.rotate(item.options, k, pin=self._pin(item))
        answer = None if item.answer is None else new_of[item.answer]
        abstain = None if item.abstain_letter is None else new_of[item.abstain_letter]
        return options, answer, abstain

    def request(self, item: BenchmarkItem, k: int) -> PassRequest:
        options, answer, abstain = self.view(item, k)
        _, _, prompt = rotated_view(item, k, pin=self._pin(item), post_prompt=self.opt.post_prompt)
        candidates = letters = None
        if self.opt.mode == "likelihood":
            candidates, letters = [f"{x}. {t}" for x, t in options.items()], list(options)
            if self._abstain_candidate(item, abstain):
                candidates.append(abstention_response(item.task))
                letters.append(None)
        return PassRequest(
            prompt,
            candidates,
            {"options": options, "answer": answer, "abstain_letter": abstain},
            letters=letters,
        )

    @staticmethod
    def _abstain_candidate(item: BenchmarkItem, abstain_letter: str | None) -> bool:
        return (
            abstain_letter is None
            and abstention_response(item.task) is not None
            and task_spec(item.task).abstains
        )

    # ----- scoring -----------------------------------------------------------------------------------------
    def score(self, jobs: list[Job]) -> list[dict]:
        choices = None
        if self.opt.mode == "likelihood":
            choices = [{p: self._argmax(j, p).choice for p in OPTION_SCORES} for j in jobs]
            found = [self._argmax(j, self.opt.option_score) for j in jobs]
        else:
            found = [
                match_choice(
                    j.output or "",
                    j.request.info["options"],
                    task=j.item.task,
                    abstain_letter=j.request.info["abstain_letter"],
                    extra_abstentions=self.opt.extra_abstentions,
                )
                for j in jobs
            ]
            self._judge(jobs, found)
        records = []
        for n, (job, ext) in enumerate(zip(jobs, found)):
            info = job.request.info
            rec = {
                "task": job.item.task,
                "setting": job.item.setting,
                "template_id": job.item.template_id,
                "prompt_id": f"{job.item.template_id}:{job.key[:12]}",
                "rotation": job.k,
                "answer": info["answer"],
                "choice": ext.choice,
                "method": ext.method,
                "rule": ext.rule,
                "correct": is_correct(ext.choice, info["answer"]),
            }
            if ext.rule.startswith("judge"):
                rec["judge"] = self.judge.describe()
            if choices is not None:
                rec["choices"], rec["option_score"] = choices[n], self.opt.option_score
            records.append(rec)
        return records

    def _argmax(self, job: Job, protocol: str) -> Extraction:
        best = best_option(job.output, protocol)
        letters = list(job.request.info["options"])
        if best is None:
            return Extraction(None, "unparsed", f"no candidate scored under {protocol}")
        return Extraction(
            letters[best] if best < len(letters) else ABSTAIN, "likelihood", f"argmax {protocol}"
        )

    def _judge(self, jobs: Sequence[Job], found: list[Extraction]) -> None:
        """Step 2 for what step 1 left unparsed (an empty response has nothing to judge)."""
        if self.judge is None:
            return
        todo = [i for i, e in enumerate(found) if e.choice is None and e.rule != "empty response"]
        queries = [
            build_query(
                jobs[i].item.question,
                jobs[i].request.info["options"],
                jobs[i].output,
                task=jobs[i].item.task,
                masked_answer=_masked_answer(jobs[i].item),
            )
            for i in todo
        ]
        judged = self.judge.judge(queries, [jobs[i].request.info["abstain_letter"] for i in todo])
        for i, ext in zip(todo, judged):
            found[i] = ext

    def needs_rescore(self, record: dict) -> bool:
        """A judge error is re-judged; a likelihood pass recorded under another headline protocol is re-read
        from its stored scores (no model call)."""
        if record.get("option_score") not in (None, self.opt.option_score):
            return True
        return self.judge is not None and record.get("rule", "").startswith(JUDGE_ERROR)

    # ----- outcome -----------------------------------------------------------------------------------------
    def outcome(
        self, item: BenchmarkItem, records: list[dict], option_score: str | None = None
    ) -> ItemOutcome:
        """The item's outcome; ``option_score`` reads a likelihood run under that protocol (default: the
        headline protocol), from the passes that protocol needed."""
        if option_score is None and self.opt.mode == "likelihood":
            option_score = self.opt.option_score
        if option_score is not None:
            records = records[: len(self._correct(records, option_score))]
        records = [{**r, "choice": _choice(r, option_score)} for r in records]
        res = circ.circular_outcome(
            [is_correct(r["choice"], r["answer"]) for r in records], self.n_passes(item)
        )
        unparsed = [r for r in records if r["choice"] is None]
        out = ItemOutcome(
            item.id,
            item.task,
            item.setting,
            item.source,
            item.category,
            vanilla=res.vanilla,
            circular=res.solved,
            passes_run=res.passes_run,
            passes_total=res.passes_total,
            unparsed_passes=len(unparsed),
            judged_passes=sum(r["method"] == "judge" for r in records),
            record=record_key(item),
            abstained=self._abstained(item, records),
        )
        for r in unparsed:
            out.unparsed_reasons[_reason(r["rule"])] += 1
        return out

    def _abstained(self, item: BenchmarkItem, records: list[dict]) -> bool | None:
        """Whether the first pass chose the abstention (its rotation's "None of the above" letter or ABSTAIN)."""
        first = next((r for r in records if r.get("rotation", 0) == 0), None)
        if first is None:
            return None
        _, _, abstain_letter = self.view(item, 0)
        return first["choice"] is not None and first["choice"] in (ABSTAIN, abstain_letter)

    def describe(self) -> dict[str, Any]:
        return {
            "benchmark": self.name,
            "mode": self.opt.mode,
            "circular": self.opt.circular,
            "pin_abstain": self.opt.pin_abstain,
            "post_prompt": self.opt.post_prompt,
            **({"option_score": self.opt.option_score} if self.opt.mode == "likelihood" else {}),
            "judge": None if self.judge is None else self.judge.describe(),
        }


def _choice(record: dict, protocol: str | None) -> str | None:
    """The pass's answer under ``protocol`` (a likelihood record keeps all three), else its own choice."""
    return record["choices"][protocol] if protocol is not None and "choices" in record else record["choice"]


def _masked_answer(item: BenchmarkItem) -> str | None:
    """The correct answer that MCIT / ICIT removed from the options (data_prep keeps it in meta)."""
    meta = item.meta or {}
    return meta.get("masked_answer") or meta.get("source_answer")


def _reason(rule: str) -> str:
    for prefix in ("names several options", "quotes several options", "names option", "judge error"):
        if rule.startswith(prefix):
            return prefix
    return rule
