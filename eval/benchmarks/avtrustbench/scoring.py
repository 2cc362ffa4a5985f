"""AVTrustBench's passes and scoring (paper section 4, appendix B): CircularEval views, the prompt of a pass,
two-step choice extraction, the item outcome.

Prompt of a pass (the paper fixes no wording beyond the B.1 instruction, which data_prep stores per item)::

    <question>
    A. <option>
    B. <option>
    ...
    <item.instruction>     (instruction setting; "{abstain_letter}" in it becomes the current letter)
    <post_prompt>          (optional, e.g. "Answer with the option's letter.")

Two answer modes. *generate* (the paper's protocol): free-form answer -> heuristics (step 1) -> optional
judge (step 2) -> letter / abstention / unparsed. *likelihood*: the option strings ``"A. <text>"`` are
scored by the model's log-likelihood and the best one is the answer — no parsing; in the base setting of
an abstention task (no "None of the above" option) the task's short abstention response is scored as one
more candidate, so abstaining stays possible. Results say which mode ran.
"Best" is read three ways (``cavpref.eval.option_score``: summed, per token, the letter alone); every
pass records all three, ``option_score`` picks the headline, and CircularEval runs each item's passes
until every protocol has decided it, so each protocol's circular accuracy is exact.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from cavpref.data import BenchmarkItem
from cavpref.data_prep.tasks import task_spec
from cavpref.eval import circular as circ
from cavpref.eval.benchmarks.avtrustbench.choice_judge import JUDGE_ERROR, ChoiceJudge, build_query
from cavpref.eval.benchmarks.avtrustbench.trust import record_key
from cavpref.eval.extract import ABSTAIN, Extraction, abstention_response, is_correct, match_choice
from cavpref.eval.metrics import ItemOutcome
from cavpref.eval.option_score import OPTION_SCORES, best_option
from cavpref.eval.runner import Job, PassRequest
from cavpref.prompts import render_prompt, rotated_view

__all__ = [
    "JUDGE_ERROR",
    "LETTER_CHOICE",
    "choice",
    "correct_under",
    "extract",
    "given_choice",
    "outcome",
    "record",
    "request",
    "view",
]


def format_prompt(
    item: BenchmarkItem, options: dict[str, str], abstain_letter: str | None, post_prompt: str = ""
) -> str:
    """The prompt of one pass: ``cavpref.prompts.render_prompt``, the renderer of the training rows too."""
    return render_prompt(item.question, options, item.instruction, abstain_letter, post_prompt)


def view(item: BenchmarkItem, k: int, pin: str | None) -> tuple[dict[str, str], str | None, str | None]:
    """(options, answer, abstain letter) as pass ``k`` shows them."""
    options, new_of = circ.rotate(item.options, k, pin=pin)
    answer = None if item.answer is None else new_of[item.answer]
    abstain = None if item.abstain_letter is None else new_of[item.abstain_letter]
    return options, answer, abstain


def request(
    item: BenchmarkItem, k: int, *, pin: str | None, post_prompt: str, likelihood: bool
) -> PassRequest:
    options, answer, abstain = view(item, k, pin)
    _, _, prompt = rotated_view(item, k, pin=pin, post_prompt=post_prompt)
    candidates = letters = None
    if likelihood:
        candidates, letters = [f"{x}. {t}" for x, t in options.items()], list(options)
        if abstain is None and abstention_response(item.task) is not None and task_spec(item.task).abstains:
            candidates.append(abstention_response(item.task))
            letters.append(None)
    info = {"options": options, "answer": answer, "abstain_letter": abstain, "rotation": k}
    return PassRequest(prompt, candidates, info, letters=letters)


def extract(
    jobs: Sequence[Job],
    *,
    option_score: str | None,
    judge: ChoiceJudge | None,
    extra_abstentions: Mapping[str, Sequence[str]],
) -> list[Extraction]:
    """What each pass chose: the likelihood argmax under ``option_score`` (likelihood mode), or step 1 then
    (for what it left) step 2."""
    if option_score is not None:
        return [_argmax(j, option_score) for j in jobs]
    found = [
        match_choice(
            j.output or "",
            j.request.info["options"],
            task=j.item.task,
            abstain_letter=j.request.info["abstain_letter"],
            extra_abstentions=extra_abstentions,
            prompt=j.request.prompt,
        )
        for j in jobs
    ]
    if judge is not None:
        todo = [i for i, e in enumerate(found) if e.choice is None and e.rule != "empty response"]
        queries = [
            build_query(
                jobs[i].item.question,
                jobs[i].request.info["options"],
                jobs[i].output,
                task=jobs[i].item.task,
                masked_answer=masked_answer(jobs[i].item),
            )
            for i in todo
        ]
        for i, ext in zip(todo, judge.judge(queries, [jobs[i].request.info["abstain_letter"] for i in todo])):
            found[i] = ext
    return found


def record(job: Job, ext: Extraction, judge: ChoiceJudge | None, option_score: str | None = None) -> dict:
    """A pass's record; a likelihood pass also keeps its choice under every protocol (``choices``)."""
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
    if ext.rule.startswith("judge") and judge is not None:
        rec["judge"] = judge.describe()
    if ext.reply is not None:  # what the judge answered, shown in the HTML report beside the rule
        rec["judge_reply"] = ext.reply
    if option_score is not None:
        rec["choices"] = {p: _argmax(job, p).choice for p in OPTION_SCORES}
        rec["option_score"] = option_score
    return rec


# what a predictions row's ``choice`` may hold (checked when the file is read, naming the line)
LETTER_CHOICE = re.compile(r"\s*(?:[A-Za-z]|(?i:abstain))\s*")


def given_choice(job: Job, choice) -> dict:
    """A prediction that already names a letter (or "ABSTAIN") bypasses extraction. Either case: "b" is
    option B (every lower-case letter used to be unparsed)."""
    options = job.request.info["options"]
    if isinstance(choice, str):
        choice = choice.strip()
        choice = ABSTAIN if choice.upper() == ABSTAIN else choice
        choice = choice.upper() if choice not in options and choice.upper() in options else choice
    valid = isinstance(choice, str) and (choice in options or choice == ABSTAIN)
    ext = (
        Extraction(choice, "provided", "prediction letter")
        if valid
        else Extraction(None, "unparsed", f"prediction letter {choice!r} is not an option")
    )
    return record(job, ext, None)


def _argmax(job: Job, protocol: str) -> Extraction:
    best = best_option(job.output, protocol)
    letters = list(job.request.info["options"])
    if best is None:
        return Extraction(None, "unparsed", f"no candidate scored under {protocol}")
    return Extraction(letters[best] if best < len(letters) else ABSTAIN, "likelihood", f"argmax {protocol}")


def choice(record: dict, protocol: str | None) -> str | None:
    """The pass's answer under ``protocol`` (a likelihood record keeps all three), else its own choice."""
    return record["choices"][protocol] if protocol is not None and "choices" in record else record["choice"]


def correct_under(records: list[dict], protocol: str | None) -> list[bool]:
    """Pass results under ``protocol`` (None: the record's own), up to and including its first failure."""
    out = []
    for r in records:
        out.append(is_correct(choice(r, protocol), r["answer"]))
        if not out[-1]:
            break
    return out


def outcome(
    item: BenchmarkItem, records: list[dict], n_passes: int, pin: str | None, option_score: str | None = None
) -> ItemOutcome:
    """The item's outcome; ``option_score`` reads a likelihood run under that protocol, from the passes that
    protocol needed."""
    if option_score is not None:
        records = records[: len(correct_under(records, option_score))]
    records = [{**r, "choice": choice(r, option_score)} for r in records]
    res = circ.circular_outcome([is_correct(r["choice"], r["answer"]) for r in records], n_passes)
    unparsed = [r for r in records if r["choice"] is None]
    first = next((r for r in records if r.get("rotation", 0) == 0), None)
    abstained = None
    if first is not None:  # whether the first pass chose the abstention (its letter there, or ABSTAIN)
        _, _, abstain_letter = view(item, 0, pin)
        abstained = first["choice"] is not None and first["choice"] in (ABSTAIN, abstain_letter)
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
        abstained=abstained,
    )
    for r in unparsed:
        out.unparsed_reasons[_reason(r["rule"])] += 1
    return out


def masked_answer(item: BenchmarkItem) -> str | None:
    """The correct answer that MCIT / ICIT removed from the options (data_prep keeps it in meta)."""
    meta = item.meta or {}
    return meta.get("masked_answer") or meta.get("source_answer")


def _reason(rule: str) -> str:
    for prefix in ("names several options", "quotes several options", "names option", "judge error"):
        if rule.startswith(prefix):
            return prefix
    return rule
