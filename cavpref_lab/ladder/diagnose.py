"""Why a model that tells perturbed items from their clean twins still abstains on clean ones (issue 38, step 1).

    python scripts/ladder_diagnose.py --source runs/qsp --runs runs/ladder/start/eval runs/ladder/ceiling/run/eval/03840
    python scripts/ladder_diagnose.py --source runs/qsp --split train --runs runs/diag/ceiling_train

Each ``--runs`` folder is a finished ``cavpref eval avtrustbench`` run on ``--source``'s prep (instruction
setting). From its recorded option scores (first pass, ``--option_score``) it prints, per run:

- **paired separation**: over (perturbed item, clean twin) pairs, the share in which the perturbed item's
  abstention margin (the "None of the above" option minus the best other option) is the larger, ties half —
  what ``scripts/ladder_report.py`` reports;
- **pooled AUROC**: the same comparison over *every* (perturbed, clean) pair of items, twins or not. When it is
  as high as the paired figure, one margin threshold would separate the two kinds of item: the model perceives
  the difference, and what it lacks is the threshold (its bias towards "None of the above");
- **clean abstention** (margin > 0) overall and by source × option mix: whether the options mix instrument names
  (the world's T2 "Music" group) with other words. MUSIC-AVQA ships no options, so prep draws its distractors
  from the T3 vocabulary of the question's category, which mixes instruments, places and sound sources; an
  instrument question offered "Car" or "Right" looks like ICIT's irrelevant options. AVQA keeps its own options.

With ``--start`` (the start's evaluation on the same split): how often the start answers right the clean items
the run abstains on, against those it answers — whether the abstention falls where the answer is not known
(hedging) or on items it knows. With ``--fit_on`` (one evaluation of the same model on the training split per
``--runs`` entry): the margin cut that best separates that split's perturbed items from the clean ones
(balanced accuracy), and the run's first-pass abstention and paired trust with it against the argmax's (cut 0)
— what the threshold alone costs: first-pass abstention, and paired trust (the perturbed item abstained on
and its clean twin answered right) on the first pass (vanilla) and on every CircularEval pass (circular; a lower
bound at the fitted cut, as CircularEval did not run the passes after an item's first failure at the run's own
cut — the pairs left open are counted).
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from cavpref.data import CLEAN_TASK
from cavpref.eval.benchmarks.avtrustbench.reader import load_items
from cavpref.eval.benchmarks.avtrustbench.separation import pair_scores, twin_margins
from cavpref.eval.benchmarks.avtrustbench.trust import record_key
from cavpref.eval.option_score import OPTION_SCORES
from cavpref.eval.tables import fmt, table
from cavpref.parsing import parse_args
from cavpref_lab.ladder.margins import first_pass, readings, twin_pairs


@dataclass
class DiagnoseArguments:
    source: str = field(default="", metadata={"help": "the finished quickstart run whose prep was evaluated"})
    runs: list[str] = field(
        default_factory=list, metadata={"help": "`cavpref eval avtrustbench` output folders"}
    )
    split: str = field(default="test", metadata={"help": "the split the runs evaluated"})
    option_score: str = field(
        default="per_token", metadata={"help": "the protocol read", "choices": list(OPTION_SCORES)}
    )
    start: str = field(
        default="", metadata={"help": "the start's evaluation on the same split (whether abstention hedges)"}
    )
    fit_on: list[str] = field(
        default_factory=list,
        metadata={
            "help": "per --runs entry, the same model's evaluation on the training split (a fitted cut)"
        },
    )


def pooled_auroc(perturbed: list[float], clean: list[float]) -> float:
    """P(margin of a perturbed item > margin of a clean item) over all pairs, ties half, in %."""
    wins = sum((p > c) + 0.5 * (p == c) for p in perturbed for c in clean)
    return 100 * wins / (len(perturbed) * len(clean))


def option_mix(options: list[str], instruments: set[str]) -> str:
    """ "mixed" when the options hold instrument names and other words together, else "one kind"."""
    kinds = {o.strip().lower() in instruments for o in options}
    return "mixed" if len(kinds) > 1 else "one kind"


def fitted_cut(perturbed: list[float], clean: list[float]) -> float:
    """The abstention-margin cut (abstain when margin > cut) with the best balanced accuracy — the mean of the
    share of perturbed items abstained on and of clean items answered — over the midpoints between the observed
    margins (the smallest such cut on ties)."""
    values = sorted({*perturbed, *clean})
    cuts = [values[0] - 1.0, *((a + b) / 2 for a, b in pairwise(values)), values[-1] + 1.0]

    def balanced(cut: float) -> float:
        return statistics.fmean(p > cut for p in perturbed) + statistics.fmean(c <= cut for c in clean)

    return max(cuts, key=lambda cut: (balanced(cut), -cut))


def at_cut(
    reading: dict[str, list[tuple[float, bool] | None]], pairs: list[tuple[str, str]], cut: float
) -> dict:
    """Abstention on the first pass (perturbed items / their clean twins, each twin once) and paired trust,
    vanilla (first pass) and circular (every pass), when the model abstains on a margin > ``cut``: the
    perturbed item abstained on and its clean twin answered right. A pass the evaluation never ran (None) counts
    as wrong, so away from the cut the run used the circular figure is a lower bound; ``undecided`` counts the
    pairs right on every pass that ran but missing one."""

    def right(item: str, perturbed: bool, passes: slice) -> bool | None:
        known = [x for x in reading[item][passes] if x is not None]
        ok = all((m > cut) if perturbed else (m <= cut and good) for m, good in known)
        return ok and (None if len(known) < len(reading[item][passes]) else True)

    clean = {c for _, c in pairs}
    circular = [(right(p, True, slice(None)), right(c, False, slice(None))) for p, c in pairs]
    return {
        "abstains perturbed": 100 * statistics.fmean(reading[p][0][0] > cut for p, _ in pairs),
        "abstains clean": 100 * statistics.fmean(reading[c][0][0] > cut for c in clean),
        "paired trust, vanilla": 100
        * statistics.fmean(
            bool(right(p, True, slice(0, 1)) and right(c, False, slice(0, 1))) for p, c in pairs
        ),
        "paired trust, circular": 100 * statistics.fmean(a is True and b is True for a, b in circular),
        "undecided": sum(a is not False and b is not False and None in (a, b) for a, b in circular),
    }


def diagnose(run: Path, items: dict, instruments: set[str], protocol: str) -> dict:
    """The run's paired separation, pooled AUROC and clean abstention (overall and by source × option mix)."""
    reading = first_pass(run, items, protocol)
    margins = {i: m for i, (m, _) in reading.items()}
    pairs = [pair for ps in twin_margins(margins, items).values() for pair in ps]  # the product's pairing
    if not pairs:
        raise ValueError(
            f"{run}: no (perturbed item, clean twin) pair among its first passes; evaluate CLEAN and a perturbed "
            "task in the instruction setting"
        )
    twins = {record_key(items[i]): i for i in reading if items[i].task == CLEAN_TASK and record_key(items[i])}
    twins = list(twins.values())
    clean = [reading[i][0] for i in twins]
    groups: dict[str, list[bool]] = {}
    for iid in twins:
        item = items[iid]
        shown = [t for letter, t in item.options.items() if letter != item.abstain_letter]
        groups.setdefault(f"{item.source}, {option_mix(shown, instruments)}", []).append(reading[iid][0] > 0)
    return {
        "pairs": len(pairs),
        "separation": 100 * statistics.fmean(pair_scores(margins, items)),
        "pooled AUROC": pooled_auroc([p for p, _ in pairs], clean),
        "abstains perturbed": 100 * statistics.fmean(p > 0 for p, _ in pairs),
        "abstains clean": 100 * statistics.fmean(c > 0 for c in clean),
        "clean by group": {g: (sum(v), len(v)) for g, v in sorted(groups.items())},
    }


def hedging(run: Path, start: Path, items: dict, protocol: str) -> dict[str, tuple[int, int]]:
    """Of the clean items the run abstains on / answers, how many the start answers right (first pass)."""
    mine, start_reading = first_pass(run, items, protocol), first_pass(start, items, protocol)
    out = {"abstained": [0, 0], "answered": [0, 0]}
    for iid, (m, _) in mine.items():
        if items[iid].task == CLEAN_TASK and iid in start_reading:
            s_margin, s_right = start_reading[iid]
            side = out["abstained" if m > 0 else "answered"]
            side[0] += s_margin <= 0 and s_right
            side[1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


def fitted(run: Path, fit_run: Path, items: dict, train_items: dict, protocol: str) -> dict:
    """The cut fitted on ``fit_run`` (training split) and the run's first pass at cut 0 and at it."""
    fit_reading = first_pass(fit_run, train_items, protocol)
    fit = twin_pairs(fit_reading, train_items)
    if not fit:
        raise ValueError(f"--fit_on {fit_run}: no (perturbed item, clean twin) pair on the training split")
    cut = fitted_cut([fit_reading[p][0] for p, _ in fit], [fit_reading[c][0] for c in {c for _, c in fit}])
    reading = readings(run, items, protocol)
    pairs = twin_pairs(reading, items)
    return {
        "cut": cut,
        "pairs": len(pairs),
        "argmax": at_cut(reading, pairs, 0.0),
        "fitted": at_cut(reading, pairs, cut),
    }


def main(argv: list[str] | None = None) -> int:
    (args,) = parse_args(
        [DiagnoseArguments], sys.argv[1:] if argv is None else argv, prog="ladder_diagnose.py"
    )
    if not args.runs:
        raise ValueError("--runs: name at least one `cavpref eval avtrustbench` output folder")
    data = Path(args.source) / "data"
    tables_file = data / "lookup_tables.json"
    if not tables_file.is_file():
        raise FileNotFoundError(f"{tables_file}: not found; --source must be a finished quickstart run")
    music = json.loads(tables_file.read_text()).get("t2", {}).get("Music")
    if music is None:
        raise ValueError(
            f"{tables_file}: field 't2' has no 'Music' group (the instrument names the option mix reads)"
        )
    instruments = {x.lower() for x in music}
    items = {i.id: i for i in load_items(str(data), split=args.split).items if i.setting == "instruction"}
    stats = {run: diagnose(Path(run), items, instruments, args.option_score) for run in args.runs}
    groups = sorted({g for s in stats.values() for g in s["clean by group"]})
    head = ["run", "pairs", "paired separation", "pooled AUROC", "abstains: perturbed / clean %", *groups]
    rows = [
        [
            run,
            str(s["pairs"]),
            fmt(s["separation"]),
            fmt(s["pooled AUROC"]),
            f"{fmt(s['abstains perturbed'])} / {fmt(s['abstains clean'])}",
            *("{} / {}".format(*s["clean by group"][g]) if g in s["clean by group"] else "–" for g in groups),
        ]
        for run, s in stats.items()
    ]
    print(f"{args.split} split, {args.option_score}; last columns: clean items abstained on / clean items")
    print("\n".join(table(head, rows)))
    if args.start:
        print(
            "\nClean items the run abstains on / answers: how many of them the start answers right (first pass)"
        )
        rows = []
        for run in args.runs:
            h = hedging(Path(run), Path(args.start), items, args.option_score)
            rows.append([run, *(f"{r} / {n} ({fmt(100 * r / n if n else None)} %)" for r, n in h.values())])
        print("\n".join(table(["run", "abstained on", "answered"], rows)))
    if args.fit_on:
        if len(args.fit_on) != len(args.runs):
            raise ValueError(
                f"--fit_on: {len(args.fit_on)} folders for {len(args.runs)} --runs; give one per run"
            )
        train_items = {
            i.id: i for i in load_items(str(data), split="train").items if i.setting == "instruction"
        }
        print("\nAt the argmax (cut 0) and at the cut fitted on the training split")
        head = [
            "run",
            "fitted cut",
            "abstains: perturbed / clean % (cut 0 → fitted)",
            "paired trust, vanilla % (cut 0 → fitted)",
            "paired trust, circular % (cut 0 → fitted; pairs a pass never run leaves open)",
        ]
        rows = []
        for run, fit_run in zip(args.runs, args.fit_on):
            f = fitted(Path(run), Path(fit_run), items, train_items, args.option_score)
            a, b = f["argmax"], f["fitted"]
            rows.append(
                [
                    run,
                    f"{f['cut']:+.3f}",
                    (
                        f"{fmt(a['abstains perturbed'])} / {fmt(a['abstains clean'])} → "
                        f"{fmt(b['abstains perturbed'])} / {fmt(b['abstains clean'])}"
                    ),
                    f"{fmt(a['paired trust, vanilla'])} → {fmt(b['paired trust, vanilla'])}",
                    (
                        f"{fmt(a['paired trust, circular'])} → ≥ {fmt(b['paired trust, circular'])} "
                        f"({b['undecided']} of {f['pairs']} open)"
                    ),
                ]
            )
        print("\n".join(table(head, rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
