"""``cavpref build``: benchmarks from your own videos, and the agreement of their human audits.

    cavpref build aura    [CONFIG.yaml] --videos DIR --out DIR --visual_model M --audio_model M --generator_model M [--key value ...]
    cavpref build traceav [CONFIG.yaml] --videos DIR --out DIR --visual_model M --fusion_model M --generator_model M
                          --verifier_model M --blindfold_model M [--key value ...]
    cavpref build agreement --audit FILE.csv --columns A B [...] [--measure spearman|fleiss] [--batch_column batch ...]

Every form parses with ``cavpref.parsing.parse_args`` (a YAML file sets the keys, the command line overrides
them, ``--help`` lists every key). A build resumes when run again with the same ``--out``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field

from cavpref.data_prep.builders.work import BuildError
from cavpref.parsing import parse_args

USAGE = __doc__


@dataclass
class AgreementArgs:
    """``cavpref build agreement``: how far the auditors (or an auditor and a metric) agree."""

    audit: str = field(
        default="",
        metadata={"help": "the audited sample: the CSV or JSONL `cavpref build` exported, labels filled in"},
    )
    columns: list[str] = field(
        default_factory=list,
        metadata={"help": "the columns to compare: two for spearman, two or more for fleiss"},
    )
    measure: str = field(
        default="spearman",
        metadata={
            "help": "spearman (numeric scores, AURA's check) or fleiss (categorical labels, TraceAV-Bench's)"
        },
    )
    batch_column: str | None = field(
        default=None, metadata={"help": "with --error_column: report each batch's error rate"}
    )
    error_column: str | None = field(
        default=None, metadata={"help": "the adjudicated label per item (e.g. label)"}
    )
    error_values: list[str] = field(
        default_factory=lambda: ["reject"], metadata={"help": "labels counted as errors"}
    )
    max_error_rate: float = field(
        default=0.05, metadata={"help": "a batch above this error rate is dropped (TraceAV-Bench: 5 %)"}
    )


def agreement(args: AgreementArgs) -> dict:
    from cavpref.data_prep.builders.quality import batch_error_rates, fleiss_kappa, read_audit, spearman

    if not args.audit or not args.columns:
        raise BuildError("agreement needs --audit FILE and --columns A B [...]")
    rows = read_audit(args.audit)
    missing = [c for c in args.columns if rows and c not in rows[0]]
    if missing:
        raise BuildError(f"{args.audit}: no column(s) {missing} (columns: {list(rows[0])})")
    rated = [r for r in rows if all(str(r.get(c, "")).strip() for c in args.columns)]
    result: dict = {"audit": args.audit, "rows": len(rows), "rated": len(rated), "columns": args.columns}
    if args.measure == "spearman":
        if len(args.columns) != 2:
            raise BuildError("spearman compares exactly two columns")
        try:
            x, y = ([float(r[c]) for r in rated] for c in args.columns)
        except ValueError as err:
            raise BuildError(f"{args.audit}: spearman needs numbers in {args.columns} ({err})") from None
        result["spearman"] = spearman(x, y)
    elif args.measure == "fleiss":
        result["fleiss_kappa"] = fleiss_kappa([[str(r[c]).strip() for c in args.columns] for r in rated])
    else:
        raise BuildError(f"--measure must be spearman or fleiss, got {args.measure!r}")
    if args.batch_column and args.error_column:
        result["batches"] = batch_error_rates(
            rows, args.batch_column, args.error_column, args.error_values, args.max_error_rate
        )
    return result


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    prog = f"cavpref build {name}"
    try:
        if name == "aura":
            from cavpref.data_prep.builders.aura.config import AuraConfig, AuraEndpoints
            from cavpref.data_prep.builders.aura.pipeline import build

            stats = build(*parse_args([AuraConfig, AuraEndpoints], rest, prog=prog))
        elif name == "traceav":
            from cavpref.data_prep.builders.traceav.config import TraceConfig, TraceEndpoints
            from cavpref.data_prep.builders.traceav.pipeline import build

            stats = build(*parse_args([TraceConfig, TraceEndpoints], rest, prog=prog))
        elif name == "agreement":
            (args,) = parse_args([AgreementArgs], rest, prog=prog)
            print(json.dumps(agreement(args), indent=2))
            return 0
        else:
            print(f"cavpref build: unknown builder {name!r}\n\n{USAGE}", file=sys.stderr)
            return 2
    except (BuildError, ValueError) as err:  # a bad folder, input file or setting (a missing role model)
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
    print(summary(prog, stats))
    return 0


def summary(prog: str, stats: dict) -> str:
    """The line a build ends with: its counts, where the benchmark and the stats are, and the units that
    failed this run (asked again by the same command)."""
    q, folder = stats["questions"], stats["folder"]
    benchmark = stats["outputs"].get("benchmark") or stats["outputs"].get("data")
    rejected = q["rejected"] or {}
    why = f" ({', '.join(f'{k} {n}' for k, n in rejected.items())})" if rejected else ""
    line = (
        f"{prog}: {q['generated']} questions generated, {q['kept']} kept, {sum(rejected.values())} rejected"
        f"{why}; benchmark {folder}/{benchmark}, stats {folder}/stats.json"
    )
    failed = {
        f"{stage} {reason}": n
        for stage, s in stats["stages"].items()
        for reason, n in s.get("failed", {}).items()
    }
    if failed:
        what = ", ".join(f"{k} x{n}" for k, n in failed.items())
        line += f"; {sum(failed.values())} units failed ({what}): run the same command again to retry them"
    return line
