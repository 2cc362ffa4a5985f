"""Each evaluated item's abstention margin, read back from an evaluation's recorded option scores (issue 38).

The margin of one pass is the value of the "None of the above" option minus the best other option's under one
option-scoring protocol (> 0: the model abstains); with it, whether that best other option is the answer. The
ladder's report reads the separation of perturbed items from their clean twins from it through the product's
own functions (``cavpref.eval.benchmarks.avtrustbench.separation``, what training-time trust reports), and
``scripts/ladder_diagnose.py`` the pooled AUROC, the clean abstention and the fitted cut; nothing is re-run. What
stays here is what the product does not read: every pass's margin (``readings``, for the circular figure at a
fitted cut) with whether the best other option is the answer, and the twin pairs by id.
"""

from __future__ import annotations

import json
from pathlib import Path

from cavpref.data import CLEAN_TASK
from cavpref.eval.benchmarks.avtrustbench.reader import load_items
from cavpref.eval.benchmarks.avtrustbench.separation import first_pass_margins, separation
from cavpref.eval.benchmarks.avtrustbench.trust import record_key
from cavpref.eval.option_score import option_values
from cavpref.eval.runner import load_records
from cavpref.prompts import n_passes, rotate


def readings(run: Path, items: dict, protocol: str) -> dict[str, list[tuple[float, bool] | None]]:
    """item id -> per CircularEval pass (in pass order), the abstention margin under ``protocol`` (the value of
    the "None of the above" option minus the best other option's; > 0: the model abstains) and whether that
    best other option is the answer, read from the run's recorded scores and its ``pin_abstain`` setting. A pass
    the evaluation never ran is None: CircularEval stops an item at the first pass every protocol got wrong."""
    config = run / "results.json"
    settings = json.loads(config.read_text()).get("config", {}) if config.is_file() else {}
    pin, circular = bool(settings.get("pin_abstain")), settings.get("circular", True)
    records = load_records(run)
    if not records:
        raise FileNotFoundError(
            f"{run}: no evaluation records (records.rank*.jsonl); name a `cavpref eval avtrustbench` output folder"
        )
    passes: dict[str, dict[int, tuple[float, bool]]] = {}
    for rec in records.values():
        item = items.get(rec["item_id"])
        if rec["status"] != "ok" or item is None or item.abstain_letter is None:
            continue
        values = option_values(rec["scores"], protocol)
        shown, new_of = rotate(item.options, rec["rotation"], pin=item.abstain_letter if pin else None)
        letters = list(shown)
        k = letters.index(new_of[item.abstain_letter])
        others = [(v, j) for j, v in enumerate(values[: len(letters)]) if j != k and v is not None]
        if values[k] is not None and others:
            best, j = max(others)
            passes.setdefault(item.id, {})[rec["pass"]] = (values[k] - best, letters[j] == rec["answer"])
    out = {}
    for i, by_pass in passes.items():
        if 0 in by_pass:
            total = n_passes(
                items[i].options, circular=circular, pin=items[i].abstain_letter if pin else None
            )
            out[i] = [by_pass.get(p) for p in range(total)]
    return out


def first_pass(run: Path, items: dict, protocol: str) -> dict[str, tuple[float, bool]]:
    """item id -> the first pass's (margin, best other option right) (``readings``)."""
    return {i: r[0] for i, r in readings(run, items, protocol).items()}


def run_margins(run: Path, items: dict, protocol: str) -> dict[str, float]:
    """item id -> the first pass's abstention margin: the product's ``first_pass_margins`` on the run's records,
    with the run's ``pin_abstain`` setting (what training-time trust and the report read)."""
    config = run / "results.json"
    settings = json.loads(config.read_text()).get("config", {}) if config.is_file() else {}
    records = load_records(run)
    if not records:
        raise FileNotFoundError(
            f"{run}: no evaluation records (records.rank*.jsonl); name a `cavpref eval avtrustbench` output folder"
        )
    return first_pass_margins(records.values(), items, protocol, pin=bool(settings.get("pin_abstain")))


def run_separation(run: Path, items: dict, protocol: str) -> dict[str, dict]:
    """Per perturbed task and ``"all"``, the run's paired separation and each side's abstention rate: the
    product's ``separation`` of ``run_margins``."""
    return separation(run_margins(run, items, protocol), items)


def twin_pairs(reading: dict, items: dict) -> list[tuple[str, str]]:
    """(perturbed item, its clean twin) id pairs among the items ``reading`` holds: the twin is the CLEAN item of
    the same source record and setting (COT-Stitch / COT-Swap / CAT come from event records: no twin)."""
    twins = {
        (i.setting, record_key(i)): i.id
        for i in items.values()
        if i.task == CLEAN_TASK and i.id in reading and record_key(i)
    }
    return [
        (i.id, twins[(i.setting, record_key(i))])
        for i in items.values()
        if i.task != CLEAN_TASK and i.id in reading and (i.setting, record_key(i)) in twins
    ]


def test_items(data: Path) -> dict:
    """The instruction setting's AVTrustBench test items (with CLEAN), by id."""
    items = load_items(str(data), split="test").items
    return {i.id: i for i in items if i.setting == "instruction"}
