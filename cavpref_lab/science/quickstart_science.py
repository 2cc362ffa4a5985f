"""The quickstart's science on the embedded default: seeds, the stream ablation and the λ sweep (Fig. 6).

    python scripts/quickstart_science.py --out runs/quickstart [--seeds 0 1 2] [--grid 0.5 1 2] [quickstart keys]
    python scripts/quickstart_science.py --config science.yaml [--key value ...]   (the same keys in a YAML file)
    python scripts/quickstart_science.py --preset perceiving --out runs/sci256   (cavpref_lab/science/README.md)

1. runs (or reuses) ``cavpref quickstart`` in ``--out`` with the given flags;
2. seeds: every quickstart method (SFT, DPO, CAVPref w/o Robustness, CAVPref, CAVPref with a fixed β) again
   from the *same* starting model with preference-training seeds ``--seeds`` (data order and sampling; the
   quickstart's own seed is reused, not retrained) -> mean ± std (sample std, ddof=1) per task, for the
   modality tasks (MVIT, MAIT, MVT, MAT) against the rest, the paired trust score and CLEAN's false
   abstention; paired-by-seed differences CAVPref − DPO, − CAVPref w/o Robustness, − CAVPref (fixed β);
3. dynamics: each method's logged per-component margins, reward accuracies and β (y, v, a), first and last
   logged step (``trainer_state.json``), mean over the seeds;
4. ablation: the starting model and the seed-0 DPO / CAVPref evaluated with the video or the audio removed
   (``EvalArgs.drop_stream``): if accuracy does not drop, the model does not use that stream;
5. clean mix: DPO and CAVPref per seed again with CLEAN's rows added to the preference mix, so that
   "always abstain" is no longer free (``clean_mix_block``);
6. probes of the starting model: CLEAN in both answer modes with each stream removed, and caption exact
   match on the test clips;
7. sweep: CAVPref with one λ scaled by each ``--grid`` factor at a time (the others at the paper values),
   read on MCIT (λ_y), MVIT (λ_V) and MAIT (λ_A) as in Fig. 6; plotted with ``scripts/sweep.py``'s plot.

Every run is a quickstart stage (``.done.json``): a second call reuses what finished, and a stage another
process is running is waited for (a lock per stage), so on two cores a second process started with
``--worker`` and the same keys takes a share of the runs (the last seed, the sweep, the ablation). Writes
``science.json``, ``science.md`` and ``plots/lambda_sweep.png`` in ``--out``. The evaluation is the
quickstart's (instruction setting, CircularEval, its answer mode) and is never changed per result.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from cavpref.apps.quickstart import (
    CAPTION_PROBES,
    LABELS,
    WITHOUT,
    QuickstartConfig,
    Stages,
    clip_captions,
    eval_stage,
    probe_clips,
    recipe,
    run,
    stage_folders,
    start_stages,
    task_accuracy,
    train_stage,
)
from cavpref.config import PAPER_LAMBDAS
from cavpref.data import CLEAN_TASK, TASKS
from cavpref.media.decode import FramePolicy, decode
from cavpref.media.spec import clip, to_json
from cavpref.models.base import Row
from cavpref.models.registry import load_model_io
from cavpref.parsing import parse_args
from cavpref_lab.sweep import plot as sweep_plot

MODALITY = ("MVIT", "MAIT", "MVT", "MAT")
REST = tuple(t for t in TASKS if t not in MODALITY)
FIG6 = {"lambda_y": ("y", "MCIT"), "lambda_v": ("v", "MVIT"), "lambda_a": ("a", "MAIT")}
COMPARED = ("dpo", "cavpref")  # the stream ablation and the CLEAN-mix comparison
# Paired-by-seed differences printed under the seeds table: what the method adds over DPO, what the robust
# aggregation adds, what calibrating β adds.
DIFFS = (("cavpref", "dpo"), ("cavpref", "cavpref_norobust"), ("cavpref", "cavpref_fixed_beta"))
# Logged per-component training metrics read back from each stage's trainer_state.json (docs/training.md).
DYNAMICS = tuple(f"{c}/{m}" for c in ("y", "v", "a") for m in ("margin", "reward_accuracy", "beta"))


def mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof=1; 0 for a single value); NaN where a task had no items."""
    x = np.asarray(values, dtype=float)
    return float(x.mean()), (float(x.std(ddof=1)) if len(x) > 1 else 0.0)


def group_mean(results: dict, tasks: tuple[str, ...], metric: str = "circular") -> float:
    """Macro mean over ``tasks`` of one run (a task without items counts as missing, not as zero)."""
    vals = [v for t in tasks if (v := task_accuracy(results, t, metric)) is not None]
    return statistics.fmean(vals) if vals else float("nan")


def _nan(v: float | None) -> float:
    return float("nan") if v is None else v


def trust(results: dict, key: str, metric: str = "circular") -> float:
    """The instruction setting's paired trust score over every perturbed item with its clean twin
    (``key="paired"``) or CLEAN's false-abstention rate (``key="false_abstention"``), from results.json."""
    block = results["metrics"].get("trust", {}).get("settings", {}).get("instruction", {})
    value = block.get(key)
    return _nan(value.get(metric) if isinstance(value, dict) else value)


def _load(path: Path) -> dict:
    return json.loads((path / "results.json").read_text())


def per_seed_runs(
    cfg,
    stage: Stages,
    qs: dict,
    seeds: list[int],
    *,
    prefix: str,
    tasks: list[str],
    methods: tuple[str, ...] = COMPARED,
    tag: str = "",
    own: bool = False,
    only: set | None = None,
) -> dict:
    """{method: {seed: results}} for ``methods`` trained on ``tasks`` with each preference seed, as stages
    ``<prefix>/<seed>/<method>``. ``own``: the quickstart's runs stand for its own seed. ``only``: the
    (seed, method) pairs to run, for splitting the work across processes."""
    root, data, world, start = Path(qs["root"]), Path(qs["data"]), Path(qs["world"]), Path(qs["start"])
    prefs = Path(qs["pref_data"])
    out: dict[str, dict[int, dict]] = {m: {} for m in methods}
    for seed in seeds:
        for method in methods:
            if only is not None and (seed, method) not in only:
                continue
            if own and seed == cfg.seed:
                out[method][seed] = _load(root / "eval" / method)
                continue
            name = f"{prefix}/{seed}/{method}"
            model = stage(
                name,
                train_stage,
                recipe(
                    cfg,
                    method=method,
                    model=start,
                    train=prefs,
                    world=world,
                    out=root / name,
                    steps=cfg.pref_steps,
                    seed=seed,
                    lr=cfg.pref_learning_rate,
                    tasks=list(tasks),
                ),
            ).dir
            ev = stage(
                f"{prefix}/{seed}/eval/{method}",
                eval_stage,
                model,
                data,
                world,
                f"{LABELS[method]}{tag} s{seed}",
            )
            out[method][seed] = _load(ev.dir)
    return out


def seeds_block(cfg, stage: Stages, qs: dict, seeds: list[int], only: set | None = None) -> dict:
    """Every quickstart method on the paper's mix (the nine tasks), one run per seed."""
    return per_seed_runs(
        cfg,
        stage,
        qs,
        seeds,
        prefix="seeds",
        tasks=list(TASKS),
        methods=tuple(cfg.methods),
        own=True,
        only=only,
    )


def clean_mix_block(cfg, stage: Stages, qs: dict, seeds: list[int], only: set | None = None) -> dict:
    """DPO and CAVPref per seed with CLEAN's rows added to the nine tasks' preference mix ("clean_mix/...").

    In the paper's mix 7 of 9 tasks reward abstaining and nothing rewards answering, so "always abstain" is
    a cheap optimum that needs neither stream; with CLEAN rows (chosen = the right answer, no anchors) it
    costs accuracy, and abstaining pays only where the model can tell the perturbed inputs apart."""
    return per_seed_runs(
        cfg, stage, qs, seeds, prefix="clean_mix", tasks=[*TASKS, CLEAN_TASK], tag=" +CLEAN", only=only
    )


def seeds_table(
    per_seed: dict[str, dict[int, dict]], start: dict, metric: str = "circular"
) -> tuple[list[str], dict]:
    cols = [
        *TASKS,
        CLEAN_TASK,
        "modality (MVIT MAIT MVT MAT)",
        "rest (5 tasks)",
        "paired trust",
        "false abstention",
    ]

    def values(res: dict) -> list[float]:
        return [
            *(_nan(task_accuracy(res, t, metric)) for t in (*TASKS, CLEAN_TASK)),
            group_mean(res, MODALITY, metric),
            group_mean(res, REST, metric),
            trust(res, "paired", metric),
            trust(res, "false_abstention"),
        ]

    stats = {}
    lines = [
        "| Method | " + " | ".join(cols) + " |",
        "|---" * (len(cols) + 1) + "|",
        "| ZS (start) | " + " | ".join(f"{v:.2f}" for v in values(start)) + " |",
    ]
    for method, runs in per_seed.items():
        rows = [values(r) for r in runs.values()]
        ms = [mean_std([row[i] for row in rows]) for i in range(len(cols))]
        stats[method] = dict(zip(cols, ms))
        lines.append(
            f"| {LABELS[method]} (n={len(rows)}) | " + " | ".join(f"{m:.2f} ± {s:.2f}" for m, s in ms) + " |"
        )
    for hi, lo in DIFFS:
        if hi not in per_seed or lo not in per_seed:
            continue
        common = sorted(set(per_seed[hi]) & set(per_seed[lo]))
        diffs = [[x - y for x, y in zip(values(per_seed[hi][s]), values(per_seed[lo][s]))] for s in common]
        ms = [mean_std([d[i] for d in diffs]) for i in range(len(cols))]
        stats[f"{hi}_minus_{lo}"] = dict(zip(cols, ms))
        lines.append(
            f"| {LABELS[hi]} − {LABELS[lo]} (paired by seed, n={len(common)}) | "
            + " | ".join(f"{m:+.2f} ± {s:.2f}" for m, s in ms)
            + " |"
        )
    return lines, stats


def log_history(run: Path) -> list[dict]:
    """The logged training metrics of a ``cavpref train`` run folder (``trainer_state.json``)."""
    path = run / "trainer_state.json"
    return json.loads(path.read_text())["log_history"] if path.exists() else []


def dynamics(qs: dict, methods: tuple[str, ...], seeds: list[int], cfg) -> tuple[list[str], dict]:
    """Per method, the per-component margins (β-free), reward accuracies and mean β at the first and the last
    logged step, mean over the seeds: what each loss term moved during training (anchor terms included)."""
    root = Path(qs["root"])
    stats, lines = {}, []
    head = " | ".join(f"{k} first → last" for k in DYNAMICS)
    lines += [f"| Method (n seeds) | {head} |", "|---" * (len(DYNAMICS) + 1) + "|"]
    for method in methods:
        runs = [root / method if s == cfg.seed else root / "seeds" / str(s) / method for s in seeds]
        logs = [[e for e in log_history(r) if "loss" in e and "epoch" in e] for r in runs]
        logs = [lg for lg in logs if lg]
        if not logs:
            continue
        cells = {}
        for key in DYNAMICS:
            first = [lg[0].get(key) for lg in logs if lg[0].get(key) is not None]
            last = [lg[-1].get(key) for lg in logs if lg[-1].get(key) is not None]
            cells[key] = (statistics.fmean(first), statistics.fmean(last)) if first and last else None
        stats[method] = {
            "seeds": len(logs),
            "first_step": logs[0][0]["step"],
            "last_step": logs[0][-1]["step"],
            **{k: v for k, v in cells.items()},
        }
        lines.append(
            f"| {LABELS[method]} ({len(logs)}) | "
            + " | ".join(
                "–" if cells[k] is None else f"{cells[k][0]:.3g} → {cells[k][1]:.3g}" for k in DYNAMICS
            )
            + " |"
        )
    return lines, stats


def ablation(cfg, stage: Stages, qs: dict) -> tuple[list[str], dict]:
    root, data, world = Path(qs["root"]), Path(qs["data"]), Path(qs["world"])
    models = {"start": Path(qs["start"]), **{m: root / m for m in COMPARED}}
    rows, stats = [], {}
    for name, model in models.items():
        full = _load(root / "eval" / name)
        res = {"both": full}
        for stream in ("video", "audio"):
            ev = stage(
                f"ablation/{name}/no_{stream}",
                eval_stage,
                model,
                data,
                world,
                f"{LABELS[name]} without {stream}",
                drop_stream=stream,
            )
            res[f"no_{stream}"] = _load(ev.dir)
        for metric in ("vanilla", "circular"):
            cells = {
                k: (
                    task_accuracy(r, CLEAN_TASK, metric),
                    group_mean(r, MODALITY, metric),
                    group_mean(r, REST, metric),
                )
                for k, r in res.items()
            }
            stats.setdefault(name, {})[metric] = cells
            rows.append(
                f"| {LABELS[name]} | {metric} | "
                + " | ".join(
                    " / ".join("–" if v is None else f"{v:.1f}" for v in cells[k])
                    for k in ("both", "no_video", "no_audio")
                )
                + " |"
            )
    head = ["| Model | metric | both streams | video removed | audio removed |", "|---|---|---|---|---|"]
    return ["Cells: CLEAN / modality-task mean / rest mean (%)", "", *head, *rows], stats


def protocol_probe(cfg, stage: Stages, qs: dict) -> tuple[list[str], dict]:
    """The starting model on CLEAN in both answer modes, with each stream removed. Generation (the paper's
    protocol) needs the model to point at the right letter *and* copy its text; option likelihood
    ("A. <text>") also rewards knowing the answer's text — together they tell "does not know" from "knows
    but cannot point at the letter"."""
    data, world, start = Path(qs["data"]), Path(qs["world"]), Path(qs["start"])
    cells = {}
    for mode in ("likelihood", "generate"):
        in_mode = Stages(replace(cfg, eval_mode=mode), stage.root)  # the same stages, evaluated in ``mode``
        for drop in (None, "video", "audio"):
            name = f"probe/start_{mode}_{'both' if drop is None else 'no_' + drop}"
            res = _load(
                in_mode(
                    name,
                    eval_stage,
                    start,
                    data,
                    world,
                    f"ZS {mode} {drop or 'both'}",
                    tasks=[CLEAN_TASK],
                    drop_stream=drop,
                ).dir
            )
            cells[f"{mode}/{drop or 'both'}"] = (
                task_accuracy(res, CLEAN_TASK, "vanilla"),
                task_accuracy(res, CLEAN_TASK),
            )
        stage.timings.update(in_mode.timings)
    lines = ["| CLEAN | both streams | video removed | audio removed |", "|---|---|---|---|"]
    lines += [
        f"| {mode}, {metric} | "
        + " | ".join(f"{cells[f'{mode}/{k}'][i]:.2f}" for k in ("both", "video", "audio"))
        + " |"
        for mode in ("likelihood", "generate")
        for i, metric in enumerate(("vanilla", "circular"))
    ]
    return lines, cells


def caption_answers(
    cfg, qs: dict, model: str | None = None, clips: str = "test", drop: str | None = None
) -> list[dict]:
    """Per clip of ``caption_probe``: the greedy answers to the caption prompts, whether each matches the
    world's ground truth exactly (``ok``), and how many entities the clip shows (``seen``) and sounds it has
    (``heard``) -- a list of three is harder than a list of one, and splits differ in how many they hold.
    ``drop="audio"`` asks "what do you see" alone of the clips without their audio, ``drop="video"`` "what do
    you hear" alone without their video (``caption_probe``)."""
    world, chosen = probe_clips(qs, clips)
    model_io = load_model_io(
        model or qs["start"],
        dtype="float32",
        num_frames=cfg.num_frames,
        frame_height=cfg.frame_size,
        frame_width=cfg.frame_size,
        audio_max_seconds=cfg.audio_seconds,
    )
    policy = FramePolicy(num_frames=cfg.num_frames, size=(cfg.frame_size, cfg.frame_size))
    records, (without, _, asked) = [], WITHOUT[drop]
    for c in chosen:
        media = decode(to_json(without(clip(c["file"]))), str(world), frames=policy)
        caps = clip_captions(c, cfg.caption_places, cfg.caption_see)[asked]
        out = model_io.generate(
            model_io.model, [Row(p, "", media, c["file"], c["file"]) for p, _ in caps], max_new_tokens=24
        )
        entities = c.get("instruments") or c.get("sources") or []
        records.append(
            {
                "file": c["file"],
                "prompts": [p for p, _ in caps],
                "asked": list(CAPTION_PROBES[asked]),
                "answers": [o.strip() for o in out],
                "ok": [int(o.strip() == t) for o, (_, t) in zip(out, caps)],
                "seen": sum(bool(e.get("visible") and e.get("slot")) for e in entities),
                "heard": sum(bool(e.get("sounding")) for e in entities),
            }
        )
    return records


def probe_accuracy(records: list[dict]) -> dict[str, float]:
    """{prompt: exact-match accuracy %} over ``caption_answers`` records."""
    prompts = records[0]["prompts"] if records else []
    return {p: 100.0 * sum(r["ok"][k] for r in records) / len(records) for k, p in enumerate(prompts)}


def caption_probe(
    cfg, qs: dict, model: str | None = None, clips: str = "test", drop: str | None = None
) -> tuple[list[str], dict]:
    """Does the starting model see and hear? Greedy answers to the three caption prompts, exact match against
    the world's ground truth (``clip_captions``), of ``model`` (default: the start) on the run's *test*
    clips (never trained on; ``clips="train"``: its train clips, ``"caption_world"``: every 20th clip of the
    caption world, to tell a model that cannot fit its captions from one that learnt them by heart).
    ``drop="audio"``: "what do you see" alone, asked of the clips without their audio — whether the names come from
    the pixels or only from what is heard; ``drop="video"``: "what do you hear" alone, without the video -- whether
    the sounds are counted from the audio or from what is on screen."""
    records = caption_answers(cfg, qs, model, clips, drop)
    acc = probe_accuracy(records)
    what = f"{clips} clips, {drop} removed" if drop else f"{clips} clips"
    lines = [f"| caption prompt ({what}, exact match) | accuracy % |", "|---|---|"]
    lines += [f"| {p} | {a:.1f} |" for p, a in acc.items()] + ["", f"{len(records)} {clips} clips."]
    return lines, acc


def sweep(cfg, stage: Stages, qs: dict, grid: list[float]) -> tuple[dict, Path]:
    root, data, world, start = Path(qs["root"]), Path(qs["data"]), Path(qs["world"]), Path(qs["start"])
    prefs = Path(qs["pref_data"])
    summary = {"tasks": {axis: task for axis, (_, task) in FIG6.items()}, "axes": {}}
    for axis, (key, task) in FIG6.items():
        summary["axes"][axis] = []
        for factor in grid:
            value = round(PAPER_LAMBDAS[key] * factor, 4)
            if factor == 1.0:
                res = _load(root / "eval" / "cavpref")
            else:
                name = f"sweep/{axis}={value:g}"
                model = stage(
                    name,
                    train_stage,
                    recipe(
                        cfg,
                        method="cavpref",
                        model=start,
                        train=prefs,
                        world=world,
                        out=root / name,
                        steps=cfg.pref_steps,
                        lr=cfg.pref_learning_rate,
                        tasks=list(TASKS),
                        **{axis: value},
                    ),
                ).dir
                res = _load(
                    stage(
                        f"sweep/eval/{axis}={value:g}",
                        eval_stage,
                        model,
                        data,
                        world,
                        f"CAVPref {axis}={value:g}",
                        tasks=[t for _, t in FIG6.values()],
                    ).dir
                )
            acc = {t: _nan(task_accuracy(res, t)) for _, t in FIG6.values()}
            summary["axes"][axis].append({"value": value, "factor": factor, "accuracy": acc, "train": {}})
    path = root / "plots" / "lambda_sweep.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep_plot(summary, path)
    return summary, path


@dataclass
class ScienceArguments:
    """The science script's own keys; every ``QuickstartConfig`` key is accepted too (``--help`` lists both,
    ``--help_all`` every key)."""

    seeds: list[int] = field(
        default_factory=lambda: [0, 1, 2],
        metadata={
            "help": "preference-training seeds (the quickstart's own seed is always included, and reused)"
        },
    )
    grid: list[float] = field(
        default_factory=lambda: [0.5, 1.0, 2.0], metadata={"help": "factors applied to one paper λ at a time"}
    )
    no_ablation: bool = field(default=False, metadata={"help": "skip the stream ablation"})
    no_sweep: bool = field(default=False, metadata={"help": "skip the λ sweep"})
    no_clean_mix: bool = field(
        default=False, metadata={"help": "skip DPO / CAVPref with CLEAN in the preference mix"}
    )
    worker: bool = field(
        default=False,
        metadata={
            "help": "a second process for a 2-core machine: start it next to the main command with the same "
            "keys; it waits for the starting model, then trains and evaluates the last seed's runs, the "
            "sweep and the ablation, and exits (the stage locks keep the two apart; the main command reuses "
            "what it finished and writes the report)"
        },
    )


# --help_all's section of the skip flags (cavpref.parsing.format_help); set after the class, not as a ClassVar
# annotation, which dataclasses cannot resolve when multiprocessing re-runs this script as __mp_main__.
ScienceArguments.help_groups = dict.fromkeys(
    ("no_ablation", "no_sweep", "no_clean_mix"), "blocks left out (all run by default)"
)


def parse(argv=None) -> tuple[ScienceArguments, QuickstartConfig]:
    return parse_args(
        [ScienceArguments, QuickstartConfig],
        sys.argv[1:] if argv is None else argv,
        prog="scripts/quickstart_science.py",
    )


def worker(args: ScienceArguments, cfg, seeds: list[int]) -> int:
    """``--worker``: the share of a second process (see ``ScienceArguments.worker``)."""
    root = Path(cfg.out)
    qs = stage_folders(root)
    stage = Stages(cfg, root)
    # the main command builds the start; going through its stages waits on their locks (every one of them, not
    # only the start: a start copied in does not make the scored prep done) and pins the CPU numerics
    start_stages(cfg, stage)
    last = [s for s in seeds if s != cfg.seed][-1:]
    seeds_block(cfg, stage, qs, last)
    while not all((root / "eval" / m / ".done.json").exists() for m in COMPARED):
        time.sleep(10)  # the sweep's factor 1 and the ablation read the main command's own runs
    if not args.no_sweep:
        sweep(cfg, stage, qs, list(args.grid))
    if not args.no_ablation:
        ablation(cfg, stage, qs)
    return 0


def main(argv=None) -> int:
    args, cfg = parse(argv)
    t0 = time.perf_counter()
    seeds = list(args.seeds)
    if cfg.seed not in seeds:
        seeds = [cfg.seed, *seeds]
    cfg = replace(cfg, methods=list(dict.fromkeys([*cfg.methods, *COMPARED])))
    if args.worker:
        return worker(args, cfg, seeds)
    qs = run(cfg)
    root = Path(qs["root"])
    stage = Stages(cfg, root)
    start = _load(root / "eval" / "start")
    per_seed = seeds_block(cfg, stage, qs, seeds)
    table, seed_stats = seeds_table(per_seed, start)
    vtable, vstats = seeds_table(per_seed, start, "vanilla")
    report = [
        "# cavpref quickstart — science",
        "",
        (
            f"Seeds {seeds} (preference training; one starting model). Circular accuracy (%), "
            "instruction setting, mean ± sample std."
        ),
        "",
        *table,
        "",
        "Vanilla (first pass only), same runs:",
        "",
        *vtable,
        "",
    ]
    lines, dyn = dynamics(qs, tuple(cfg.methods), seeds, cfg)
    report += [
        "## What each method moved during training (logged per component)",
        "",
        (
            "Margins are β-free log-ratio differences (chosen − rejected; for v / a: clean − perturbed stream); "
            "first and last logged step, mean over the seeds."
        ),
        "",
        *lines,
        "",
    ]
    science = {
        "seeds": seeds,
        "per_seed": {
            m: {s: {t: task_accuracy(r, t) for t in (*TASKS, CLEAN_TASK)} for s, r in runs.items()}
            for m, runs in per_seed.items()
        },
        "seed_stats": seed_stats,
        "seed_stats_vanilla": vstats,
        "dynamics": dyn,
    }
    if not args.no_clean_mix:
        mix = clean_mix_block(cfg, stage, qs, seeds)
        table, science["clean_mix"] = seeds_table(mix, start)
        vtable, science["clean_mix_vanilla"] = seeds_table(mix, start, "vanilla")
        report += [
            "## The same comparison with CLEAN in the preference mix",
            "",
            "Circular accuracy (%), mean ± sample std over the seeds:",
            "",
            *table,
            "",
            "Vanilla:",
            "",
            *vtable,
            "",
        ]
    if not args.no_ablation:
        lines, science["ablation"] = ablation(cfg, stage, qs)
        report += ["## Stream ablation (test split, instruction setting)", "", *lines, ""]
    lines, science["caption_probe"] = caption_probe(cfg, qs)
    report += ["## Starting model: does it see and hear? (caption probe)", "", *lines, ""]
    lines, science["protocol_probe"] = protocol_probe(cfg, stage, qs)
    report += ["## Starting model on CLEAN: option likelihood vs generation (paper protocol)", "", *lines, ""]
    if not args.no_sweep:
        grid = list(args.grid)
        science["sweep"], png = sweep(cfg, stage, qs, grid)
        report += [
            "## λ sweep (Fig. 6 style; circular accuracy)",
            "",
            "| axis | value | MCIT | MVIT | MAIT |",
            "|---|---|---|---|---|",
        ]
        report += [
            f"| {axis} | {r['value']:g} | "
            + " | ".join(f"{r['accuracy'][t]:.2f}" for t in ("MCIT", "MVIT", "MAIT"))
            + " |"
            for axis, runs in science["sweep"]["axes"].items()
            for r in runs
        ]
        report += ["", f"Plot: `{png.relative_to(root)}`", ""]
    science["timings"] = stage.timings
    science["wall_s"] = time.perf_counter() - t0
    report += [f"Wall time of this invocation: {science['wall_s']:.0f} s", ""]
    (root / "science.json").write_text(json.dumps(science, indent=1, default=str))
    (root / "science.md").write_text("\n".join(report))
    print("\n".join(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
