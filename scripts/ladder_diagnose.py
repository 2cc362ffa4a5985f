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
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

from cavpref.eval.benchmarks.avtrustbench.reader import load_items
from cavpref.eval.benchmarks.avtrustbench.trust import record_key
from cavpref.eval.option_score import OPTION_SCORES
from cavpref.eval.tables import fmt, table

from cavpref.data import CLEAN_TASK
from cavpref.parsing import parse_args

sys.path.insert(0, str(Path(__file__).parent))
from ladder_report import margins


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


def pooled_auroc(perturbed: list[float], clean: list[float]) -> float:
    """P(margin of a perturbed item > margin of a clean item) over all pairs, ties half, in %."""
    wins = sum((p > c) + 0.5 * (p == c) for p in perturbed for c in clean)
    return 100 * wins / (len(perturbed) * len(clean))


def option_mix(options: list[str], instruments: set[str]) -> str:
    """ "mixed" when the options hold instrument names and other words together, else "one kind"."""
    kinds = {o.strip().lower() in instruments for o in options}
    return "mixed" if len(kinds) > 1 else "one kind"


def diagnose(run: Path, items: dict, instruments: set[str], protocol: str) -> dict:
    """The run's paired separation, pooled AUROC and clean abstention (overall and by source × option mix)."""
    m = margins(run, items, protocol)
    twins = {
        record_key(i): i.id for i in items.values() if i.task == CLEAN_TASK and i.id in m and record_key(i)
    }
    pairs = [
        (m[i.id], m[twins[record_key(i)]])
        for i in items.values()
        if i.task != CLEAN_TASK and i.id in m and record_key(i) in twins
    ]
    if not pairs:
        raise ValueError(
            f"{run}: no (perturbed item, clean twin) pair among its first passes; evaluate CLEAN and a perturbed "
            "task in the instruction setting"
        )
    clean = [m[i] for i in twins.values()]
    groups: dict[str, list[bool]] = {}
    for iid in twins.values():
        item = items[iid]
        shown = [t for letter, t in item.options.items() if letter != item.abstain_letter]
        groups.setdefault(f"{item.source}, {option_mix(shown, instruments)}", []).append(m[iid] > 0)
    return {
        "pairs": len(pairs),
        "separation": 100 * statistics.fmean((p > c) + 0.5 * (p == c) for p, c in pairs),
        "pooled AUROC": pooled_auroc([p for p, _ in pairs], clean),
        "abstains perturbed": 100 * statistics.fmean(p > 0 for p, _ in pairs),
        "abstains clean": 100 * statistics.fmean(c > 0 for c in clean),
        "clean by group": {g: (sum(v), len(v)) for g, v in sorted(groups.items())},
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
