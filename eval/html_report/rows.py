"""The HTML report's rows: one JSON object per item — its filter facets, summary cells and every pass as the
model saw and answered it — built from the item, its records and its outcome.

Every benchmark gets this generic view (``Benchmark.inspect`` calls ``item_view``): the prompt of each
pass (the benchmark's own ``request``, so it is the text the model received), the raw answer (``response``;
option scores in likelihood mode) and every other field its records hold (extraction rule, judge replies,
ratings, sampled frames…). A benchmark with more to show adds to it in its folder (AVTrustBench:
``eval/benchmarks/avtrustbench/inspect.py``). Every string passes through ``cavpref.redact`` here, before
anything is written.
"""

from __future__ import annotations

from typing import Any

from cavpref.redact import redact

# The facets the page filters by, in the order of its filter bar; a row carries those that apply to it.
FACETS = (
    "benchmark",
    "setting",
    "source",
    "task",
    "dimension",
    "category",
    "status",
    "reason",
    "result",
    "response",
    "twin",
    "pair",
)
# Record fields that are shown elsewhere on the page (or are plumbing), not in a pass's field list.
SHOWN = {"key", "item_id", "pass", "status", "mode", "response", "scores", "task", "setting", "reason"}
MAX_FIELD = 4000  # characters of one record field shown (a runaway reply stays readable)


def short(value: Any, limit: int = MAX_FIELD) -> str:
    """A record value as page text: strings as they are, the rest as compact JSON, cut at ``limit``."""
    import json

    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more characters]"


def outcome_facets(outcome, records: list[dict]) -> dict[str, str]:
    """status (and a skipped item's reason, as results.json counts it), result (correct / wrong: every pass
    right, the headline of a CircularEval run) and response (abstained / unparsed / answered: the first
    pass's, as the trust metrics read it)."""
    facets = {"status": outcome.status}
    if outcome.status != "evaluated":
        return {**facets, "reason": outcome.reason}
    facets["result"] = "correct" if outcome.circular else "wrong"
    first = records[0] if records else {}
    abstained = outcome.abstained if outcome.abstained is not None else first.get("abstained")
    if outcome.unparsed_passes or (first and "choice" in first and first["choice"] is None):
        facets["response"] = "unparsed"
    elif abstained:
        facets["response"] = "abstained"
    else:
        facets["response"] = "answered"
    return facets


def pass_view(bench, item, record: dict) -> dict[str, Any]:
    """One pass: its prompt (the benchmark's request), the raw answer and the record's other fields."""
    k = int(record.get("pass", 0))
    try:
        prompt = bench.request(item, k).prompt
    except Exception as err:  # noqa: BLE001 - an item the benchmark can no longer render still shows its record
        prompt = f"(prompt not rebuilt: {type(err).__name__}: {err})"
    fields = [[name, short(value)] for name, value in sorted(record.items()) if name not in SHOWN]
    return {
        "k": k,
        "title": f"pass {k}",
        "prompt": prompt,
        "options": None,
        "output": None if record.get("response") is None else short(record["response"]),
        "scores": None if record.get("scores") is None else short(record["scores"]),
        "fields": fields,
        "correct": record.get("correct"),
    }


def item_view(bench, item, records: list[dict], outcome) -> dict[str, Any]:
    """The generic row of one item (every benchmark); ``records`` are its passes in order."""
    records = sorted(records, key=lambda r: r.get("pass", 0))
    facets = {
        "benchmark": bench.name,
        "setting": item.setting,
        "source": item.source,
        "task": item.task,
        "category": item.category,
        **outcome_facets(outcome, records),
    }
    first = records[0] if records else {}
    chosen = next((first[f] for f in ("choice", "predicted", "answer") if first.get(f) is not None), None)
    return {
        "id": item.id,
        "facets": {k: str(v) for k, v in facets.items() if v not in (None, "")},
        "question": item.question,
        "answer": item.answer,
        "chosen": None if chosen is None else short(chosen, 200),
        "vanilla": outcome.vanilla,
        "circular": outcome.circular,
        "passes_run": outcome.passes_run,
        "passes_total": outcome.passes_total,
        "reason": outcome.reason,
        "passes": [pass_view(bench, item, r) for r in records],
        "media": item.media,
        "twin": None,
    }


def rows_of(bench, scored: list[tuple[Any, list[dict], Any]]) -> list[dict]:
    """Every item's row (``bench.inspect``), redacted: no registered secret reaches the page."""
    return [redact(row) for row in bench.inspect(scored)]
