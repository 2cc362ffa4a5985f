"""AVTrustBench in the HTML report (``eval.html_report``): what each CircularEval pass showed and how its
answer was read, and each perturbed item beside its clean twin.

Per pass: the options in that rotation (the right one, the chosen one and "None of the above" marked),
the raw free-form answer or the likelihood of every candidate under the three option-scoring protocols,
and the decision — the extraction rule (``eval/extract.py``), the judge's reply where a judge decided, or
the argmax. Per item: its dimension, and the paired-trust facts of ``trust.py`` — whether its clean twin
(same clip and question, same setting) was evaluated and which of the two were right.
"""

from __future__ import annotations

from typing import Any

from cavpref import task_registry
from cavpref.data import CLEAN_TASK
from cavpref.eval.benchmarks.avtrustbench import scoring
from cavpref.eval.benchmarks.avtrustbench.trust import pair_up
from cavpref.eval.extract import ABSTAIN
from cavpref.eval.html_report.rows import item_view, short
from cavpref.eval.option_score import OPTION_SCORES

PAIR = {
    (True, True): "both right",
    (True, False): "perturbed right, twin wrong",
    (False, True): "twin right, perturbed wrong",
    (False, False): "both wrong",
}


def _dimension(task: str) -> str:
    return next((d for d, ts in task_registry.dimensions().items() if task in ts), "")


def _scores(request, record: dict) -> list[list[Any]] | None:
    """Likelihood mode: one row per candidate — its text, summed log-prob, tokens, per token, letter."""
    scores = record.get("scores")
    if not isinstance(scores, dict) or not request.candidates:
        return None
    rows = []
    for i, text in enumerate(request.candidates):
        total = scores.get("sum", [None] * len(request.candidates))[i]
        tokens = (scores.get("tokens") or [None] * len(request.candidates))[i]
        letter = (scores.get("letter") or [None] * len(request.candidates))[i]
        per_token = None if total is None or not tokens else total / tokens
        rows.append([text, total, tokens, per_token, letter])
    return rows


def pass_view(bench, item, record: dict, base: dict) -> dict:
    """The generic pass view with the rotation's options marked and the decision spelled out."""
    k = base["k"]
    request = bench.request(item, k)
    info = request.info
    choice = record.get("choice")
    base["title"] = f"pass {k} — rotation {info.get('rotation', k)}"
    base["options"] = [
        [
            letter,
            text,
            [
                mark
                for mark, on in (
                    ("answer", letter == info["answer"]),
                    ("chosen", letter == choice),
                    ("abstain", letter == info["abstain_letter"]),
                )
                if on
            ],
        ]
        for letter, text in info["options"].items()
    ]
    decision = [
        ["right answer", info["answer"] if info["answer"] is not None else "abstain (no option)"],
        ["chosen", "abstained (a sentence)" if choice == ABSTAIN else choice or "unparsed"],
        ["method", record.get("method")],
        ["rule", record.get("rule")],
    ]
    if record.get("judge_reply") is not None:
        decision.append(["judge reply", short(record["judge_reply"])])
    if isinstance(record.get("judge"), dict):
        decision.append(
            ["judge", f"{record['judge'].get('model')} ({record['judge'].get('prompt_version')})"]
        )
    if isinstance(record.get("choices"), dict):
        decision += [[f"chosen under {p}", record["choices"].get(p)] for p in OPTION_SCORES]
    base["decision"] = [[name, "" if value is None else str(value)] for name, value in decision]
    base["scores"] = _scores(request, record)
    shown = {"choice", "method", "rule", "judge_reply", "judge", "choices", "answer", "rotation", "correct"}
    base["fields"] = [f for f in base["fields"] if f[0] not in shown]
    return base


def views(bench, scored: list) -> list[dict]:
    """Every item's row: the generic view, its passes in AVTrustBench's terms, its dimension and twin."""
    outcomes = [o for _, _, o in scored]
    pairs, _ = pair_up(outcomes)
    twin_of = {p.item_id: c for task_pairs in pairs.values() for p, c in task_pairs}
    twins = {c.item_id for c in twin_of.values()}
    rows = []
    for item, records, outcome in scored:
        row = item_view(bench, item, records, outcome)
        by_pass = sorted(records, key=lambda r: r.get("pass", 0))
        row["passes"] = [pass_view(bench, item, r, p) for r, p in zip(by_pass, row["passes"])]
        rotation0 = bench.request(item, 0).info
        row["answer"] = (
            f"{rotation0['answer']}. {rotation0['options'][rotation0['answer']]}"
            if rotation0["answer"] is not None
            else "abstain (no option)"
        )
        first = by_pass[0] if by_pass else {}
        chosen = scoring.choice(first, bench.option_score) if first else None
        row["chosen"] = (
            f"{chosen}. {rotation0['options'][chosen]}"
            if chosen in rotation0["options"]
            else ("abstained" if chosen == ABSTAIN else None if not first else "unparsed")
        )
        facets = row["facets"]
        if _dimension(item.task):
            facets["dimension"] = _dimension(item.task)
        if item.task == CLEAN_TASK:
            facets["twin"] = "is a twin" if item.id in twins else "no perturbed item"
        elif outcome.status == "evaluated":
            twin = twin_of.get(item.id)
            facets["twin"] = "has twin" if twin is not None else "no twin"
            if twin is not None:
                row["twin"] = twin.item_id
                facets["pair"] = PAIR[(outcome.circular, twin.circular)]
        rows.append(row)
    return rows
