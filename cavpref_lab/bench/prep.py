"""Throughput of the nine AVTrustBench generators on a synthetic 50K-record annotation set.

Metadata only (media stay lazy MediaSpecs, nothing is decoded or written): this measures the generators
themselves — option sampling, partner search, item/preference construction — not I/O.

    python scripts/bench_prep.py [--records 50000] [--seed 0]

Prints one row per task plus the shared context build, all measured in one run: wall seconds and CPU
seconds of this process (on a shared machine the CPU figure is the stable one), items per CPU second.
"""

from __future__ import annotations

import random
import sys
import time
from dataclasses import dataclass, field

from cavpref.data import TASKS
from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tables import LookupTables
from cavpref.data_prep.tasks import GENERATORS, TaskOptions, make_context
from cavpref.data_prep.tasks.common import stable_hash
from cavpref.media.spec import Source, to_json
from cavpref.parsing import parse_args


def synthetic_tables(n_groups: int = 12, per_group: int = 25) -> tuple[LookupTables, list[str]]:
    groups = {f"Group {g}": [f"class {g}-{i}" for i in range(per_group)] for g in range(n_groups)}
    group_of = {m: g for g, ms in groups.items() for m in ms}
    classes = list(group_of)
    t1 = {c: [o for o in classes if group_of[o] != group_of[c]] for c in classes}
    t3 = {
        "Count": ["zero", "one", "two", "three", "four", "five", "six", "more than ten"],
        "Localization": ["left", "middle", "right", "indoor", "outdoor"],
        "Existential": ["yes", "no"],
        "Comparative": ["yes", "no"],
        "Temporal": classes[:22],
        "World knowledge": classes[22:80],
    }
    return LookupTables(t1=t1, t2=groups, t3=t3), classes


def synthetic_records(n: int, classes: list[str], seed: int) -> list[QARecord]:
    rng = random.Random(seed)
    n_music, n_avqa = int(n * 0.4), int(n * 0.3)
    recs = []
    for i in range(n_music):  # ~10 questions per video, as in MUSIC-AVQA
        vid = f"{i // 10:08d}"
        a = rng.choice(classes[:22])
        cat, q, ans = rng.choice(
            [
                ("Temporal", f"Which instrument sounds after the {a}?", rng.choice(classes[:22])),
                ("Count", f"How many {a} are in the video?", rng.choice(["one", "two", "three"])),
                ("Localization", f"Where is the {a}?", rng.choice(["left", "middle", "right"])),
                ("Comparative", f"Is the {a} louder than the other instrument?", rng.choice(["yes", "no"])),
            ]
        )
        recs.append(
            QARecord(
                "music_avqa",
                vid,
                "avqa-train.json",
                i,
                to_json(Source(f"music_avqa/videos/{vid}.mp4")),
                q,
                ans,
                None,
                cat,
                "Audio-Visual",
                None,
            )
        )
    for i in range(n_avqa):
        name = f"{i:011d}_000010"
        opts = rng.sample(classes, 4)
        recs.append(
            QARecord(
                "avqa",
                name,
                "train_qa.json",
                i,
                to_json(Source(f"avqa/videos/{name}.mp4")),
                "What is making the sound?",
                opts[0],
                opts,
                rng.choice(["Existential", "World knowledge"]),
                "Both",
                "Which",
            )
        )
    for i in range(n - n_music - n_avqa):
        recs.append(
            QARecord(
                "audioset",
                f"yt{i:09d}",
                "eval_segments.csv",
                i,
                to_json(Source(f"audioset/clips/yt{i:09d}_0.mp4", 0.0, 10.0)),
                labels=[rng.choice(classes)],
                start=0.0,
                end=10.0,
            )
        )
    return recs


@dataclass
class BenchArguments:
    records: int = field(default=50_000, metadata={"help": "synthetic source records"})
    seed: int = field(default=0, metadata={"help": "seed of the synthetic records"})


def main(argv=None) -> None:
    (args,) = parse_args(
        [BenchArguments], sys.argv[1:] if argv is None else argv, prog="scripts/bench_prep.py"
    )
    tables, classes = synthetic_tables()
    records = synthetic_records(args.records, classes, args.seed)
    t0, c0 = time.perf_counter(), time.process_time()
    ctx = make_context(
        records,
        tables,
        seed=args.seed,
        options=TaskOptions(progress=False),
        partner_key=lambda r: stable_hash("split", r.source_id) % 5 == 0,
    )
    t_ctx, c_ctx = time.perf_counter() - t0, time.process_time() - c0
    print(f"{args.records} records; shared context (class index): {t_ctx:.2f} s wall, {c_ctx:.2f} s CPU\n")
    print(f"{'task':<11} {'records in':>10} {'items':>8} {'wall s':>8} {'CPU s':>8} {'items/CPU s':>12}")
    total_items, total_s, total_c = 0, t_ctx, c_ctx
    for task in TASKS:
        t0, c0 = time.perf_counter(), time.process_time()
        items, _prefs = GENERATORS[task](ctx.records, tables, seed=args.seed, context=ctx)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        eligible = sum(r.source in ctx.options.sources_of(task) for r in records)
        total_items, total_s, total_c = total_items + len(items), total_s + dt, total_c + dc
        print(f"{task:<11} {eligible:>10} {len(items):>8} {dt:>8.2f} {dc:>8.2f} {len(items) / dc:>12.0f}")
    print(
        f"{'all 9':<11} {args.records:>10} {total_items:>8} {total_s:>8.2f} {total_c:>8.2f} "
        f"{total_items / total_c:>12.0f}"
    )
    print("items = benchmark items (2 settings each); as many preference examples are built alongside.")


if __name__ == "__main__":
    main()
