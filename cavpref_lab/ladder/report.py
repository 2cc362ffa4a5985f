"""The ladder's tables and plots (``scripts/ladder.py``): read from the stages' results.json, never from a model.

Every number is read under one option-scoring protocol (``LadderConfig.option_score``) from results.json's
``by_option_score`` (every protocol is recorded on every pass), so switching the protocol re-renders without
running anything. ``ladder.md``: which protocol separates the start and the ceiling from chance on each task,
the ceiling's curve, the methods' curves, the decisive table (mean ± sample std over seeds, paired-by-seed
differences) and every stage's wall time; ``ladder.json``: the same numbers; ``plots/``: paired trust and CLEAN
accuracy against training rows seen.
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass, field, replace
from itertools import cycle
from pathlib import Path

from datasets import load_from_disk
from scipy.stats import binomtest

from cavpref.apps.quickstart import Stage, say
from cavpref.data import CLEAN_TASK, TASKS
from cavpref.eval.option_score import OPTION_SCORES
from cavpref.eval.tables import fmt, table
from cavpref.parsing import parse_args
from cavpref.plotting import pyplot
from cavpref_lab.ladder.config import METHODS, MIXES, LadderConfig, source_config
from cavpref_lab.ladder.displacement import displacement
from cavpref_lab.ladder.margins import run_separation, test_items

MODALITY = ("MVIT", "MAIT", "MVT", "MAT")
REST = tuple(t for t in TASKS if t not in MODALITY)
COLUMNS = (*TASKS, CLEAN_TASK, "modality", "rest", "paired trust", "false abstention")
# the differences of the decisive table, paired by seed (what each ingredient adds)
DIFFS = (
    ("cavpref", "dpo"),
    ("cavpref", "cavpref_norobust"),
    ("cavpref", "cavpref_fixed_beta"),
    ("cavpref_paper_anchor", "cavpref"),
    ("ceiling", "cavpref"),
)
# the decisive table's columns: the curves' and the paired separation over every perturbed task
DECISIVE_COLUMNS = (*COLUMNS, "separation")


def diff_pairs(decisive_methods: list[str]) -> list[tuple[str, str]]:
    """``DIFFS``, then every other decisive method against DPO: issue 53's recommendation rule compares a
    CAVPref-family objective with DPO, paired by seed."""
    named = {hi for hi, _ in DIFFS}
    return [*DIFFS, *((m, "dpo") for m in decisive_methods if m not in named and m != "dpo")]


def load(root: Path, name: str) -> dict | None:
    path = root / name / "results.json"
    return json.loads(path.read_text()) if Stage(root, name).done and path.exists() else None


def cells(results: dict, protocol: str, metric: str = "circular") -> dict[str, float | None]:
    """One evaluation under ``protocol``, instruction setting: per task (and CLEAN) accuracy, the modality /
    rest macro means, the paired trust score and CLEAN's false-abstention rate (%)."""
    view = results["by_option_score"][protocol]
    tasks = view["settings"].get("instruction", {}).get("tasks", {})
    trust = view["trust"]["settings"].get("instruction", {})
    out = {t: tasks.get(t, {}).get(metric) for t in (*TASKS, CLEAN_TASK)}
    for name, group in (("modality", MODALITY), ("rest", REST)):
        vals = [out[t] for t in group if out[t] is not None]
        out[name] = statistics.fmean(vals) if vals else None
    out["paired trust"] = (trust.get("paired") or {}).get(metric)
    out["false abstention"] = trust.get("false_abstention")
    return out


def abstention(results: dict, protocol: str) -> dict[str, float | None]:
    tasks = results["by_option_score"][protocol]["trust"]["settings"].get("instruction", {}).get("tasks", {})
    return {t: b.get("abstention_rate") for t, b in tasks.items()}


def chance(data: Path) -> dict[str, float]:
    """Per task, the vanilla chance of the instruction test items: the mean of 1 / (number of options)."""
    out = {}
    for task in (*TASKS, CLEAN_TASK):
        rows = [
            r for r in load_from_disk(str(data / "benchmark" / task))["test"] if r["setting"] == "instruction"
        ]
        out[task] = sum(1 / len(r["option_letters"]) for r in rows) / max(1, len(rows))
    return out


def against_chance(results: dict, protocol: str, odds: dict[str, float], alpha: float = 0.01) -> dict:
    """Per task: vanilla accuracy, n, chance and whether the accuracy is above / below chance (two one-sided
    exact binomial tests at ``alpha``) — "can the stick move" on that task under ``protocol``."""
    tasks = results["by_option_score"][protocol]["settings"].get("instruction", {}).get("tasks", {})
    out = {}
    for task, p in odds.items():
        block = tasks.get(task)
        if not block or not block["n"]:
            continue
        k, n = round(block["vanilla"] * block["n"] / 100), block["n"]
        side = (
            "above"
            if binomtest(k, n, p, alternative="greater").pvalue < alpha
            else "below"
            if binomtest(k, n, p, alternative="less").pvalue < alpha
            else "chance"
        )
        out[task] = {
            "vanilla": block["vanilla"],
            "circular": block["circular"],
            "n": n,
            "chance": 100 * p,
            "side": side,
        }
    return out


def stick_tables(root: Path, data: Path, models: dict[str, str]) -> tuple[list[str], dict]:
    """For each model (start, ceiling): per protocol and task, vanilla accuracy with its side of chance
    (↑ above, ↓ below, = indistinguishable), circular accuracy, and the first-pass abstention rate."""
    odds, lines, stats = chance(data), [], {}
    mark = {"above": "↑", "below": "↓", "chance": "="}
    for label, name in models.items():
        res = load(root, name)
        if res is None:
            continue
        rows = []
        for p in OPTION_SCORES:
            sides, abst = against_chance(res, p, odds), abstention(res, p)
            stats.setdefault(label, {})[p] = {"tasks": sides, "abstention": abst}
            rows.append(
                [
                    p,
                    *(
                        f"{fmt(s['vanilla'])} {mark[s['side']]} / {fmt(s['circular'])} / {fmt(abst.get(t))}"
                        if (s := sides.get(t))
                        else "–"
                        for t in odds
                    ),
                ]
            )
        lines += [
            f"**{label}** (`{name}`): vanilla % (↑ / ↓ / = chance, p < 0.01) / circular % / abstention %",
            "",
        ]
        lines += table(["protocol", *odds], rows)
    lines += ["Chance (vanilla, %): " + ", ".join(f"{t} {100 * p:.1f}" for t, p in odds.items()), ""]
    return lines, stats


def separation_table(root: Path, runs: dict[str, str], items: dict, protocol: str) -> tuple[list[str], dict]:
    stats = {
        label: run_separation(root / name, items, protocol)
        for label, name in runs.items()
        if load(root, name)
    }
    tasks = [t for t in (*TASKS, "all") if any(t in s for s in stats.values())]
    rows = [
        [label, *(fmt(s[t]["separation"]) if t in s else "–" for t in tasks)]
        + [f"{fmt(s['all']['abstain perturbed'])} / {fmt(s['all']['abstain clean'])}" if "all" in s else "–"]
        for label, s in stats.items()
    ]
    return table(["model", *tasks, "abstains: perturbed / clean %"], rows), stats


def curve(root: Path, run: str, protocol: str, batch: int) -> list[tuple[int, dict]]:
    """(rows seen, cells) at every evaluated checkpoint of ``run``."""
    out = []
    for ev in sorted((root / run / "eval").glob("*")):
        res = load(root, f"{run}/eval/{ev.name}")
        if res is not None:
            out.append((int(ev.name) * batch, cells(res, protocol)))
    return out


def plot(
    curves: dict[str, list], ceilings: dict[str, list], key: str, refs: dict[str, float], path: Path
) -> Path:
    """``key`` against training rows seen: one line per run (dashed: with CLEAN's rows; dash-dotted: CLEAN's
    rows rejecting abstention), the ceilings in black, the reference levels as dotted lines."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 6.5))
    for label, pts in curves.items():
        if pts:
            style = (
                "-." if label.endswith(MIX_LABELS["clean_abstain"]) else "--" if "+CLEAN" in label else "-"
            )
            ax.plot([x for x, _ in pts], [c[key] for _, c in pts], style, marker="o", ms=3, label=label)
    for (label, pts), style in zip(ceilings.items(), cycle(("-", "--", ":"))):
        ax.plot([x for x, _ in pts], [c[key] for _, c in pts], "k" + style, lw=2.5, marker="s", label=label)
    for name, value in refs.items():
        ax.axhline(value, color="grey", lw=1, ls=":")
        ax.annotate(name, (ax.get_xlim()[0], value), fontsize=7, color="grey", va="bottom")
    ax.set_xscale("log")
    ax.set_xlabel("training rows seen (steps × batch)")
    ax.set_ylabel(f"{key} (%, CircularEval)")
    ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.12))  # below: no line hidden
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")  # the whole legend, however long the labels
    plt.close(fig)
    return path


def mean_std(values: list[float]) -> tuple[float, float]:
    vals = [v for v in values if v is not None]
    if not vals:
        return float("nan"), float("nan")
    return statistics.fmean(vals), (statistics.stdev(vals) if len(vals) > 1 else 0.0)


def decisive(root: Path, cfg, methods: dict, seed0: int, steps: int, items: dict) -> tuple[list[str], dict]:
    """Mean ± std over seeds at ``steps`` per (mix, method), then the paired-by-seed differences (``items``:
    the test items, for the paired separation)."""
    step, rows, stats = f"{steps:05d}", [], {}
    per: dict[tuple[str, str], dict[int, dict]] = {}
    for mix in cfg.decisive_mixes:
        for method in cfg.decisive_methods:
            for seed in cfg.decisive_seeds:
                if method == "ceiling":
                    name = "ceiling/run" if seed == seed0 else f"decisive/{seed}/ceiling"
                else:
                    name = f"curves/{mix}/{method}" if seed == seed0 else f"decisive/{seed}/{mix}/{method}"
                res = load(root, f"{name}/eval/{step}")
                if res is not None:
                    row = cells(res, cfg.option_score)
                    sep = run_separation(root / name / "eval" / step, items, cfg.option_score)
                    row["separation"] = sep.get("all", {}).get("separation")
                    per.setdefault((mix, method), {})[seed] = row
    for (mix, method), by_seed in per.items():
        ms = {c: mean_std([v[c] for v in by_seed.values()]) for c in DECISIVE_COLUMNS}
        stats[f"{mix}/{method}"] = {"n": len(by_seed), **ms}
        name = f"{methods[method][2]}" + ("" if method == "ceiling" else f" [{mix}]")
        rows.append([f"{name} (n={len(by_seed)})", *(f"{m:.2f} ± {s:.2f}" for m, s in ms.values())])
    for mix in cfg.decisive_mixes:
        for hi, lo in diff_pairs(cfg.decisive_methods):
            a, b = per.get((mix, hi)), per.get((mix, lo))
            if not a or not b:
                continue
            common = sorted(set(a) & set(b))
            ms = {
                c: mean_std([a[s][c] - b[s][c] for s in common if None not in (a[s][c], b[s][c])])
                for c in DECISIVE_COLUMNS
            }
            stats[f"{mix}/{hi}-{lo}"] = {"n": len(common), **ms}
            rows.append(
                [f"{methods[hi][2]} − {methods[lo][2]} [{mix}] (by seed, n={len(common)})"]
                + [f"{m:+.2f} ± {s:.2f}" for m, s in ms.values()]
            )
    return table(["Method", *DECISIVE_COLUMNS], rows), stats


def wall_times(root: Path) -> tuple[list[str], dict]:
    """Every stage's wall and CPU seconds (its ``.done.json``), and the sums."""
    times = {}
    for marker in sorted(root.glob("**/.done.json")):
        info = json.loads(marker.read_text())
        if "seconds" in info:
            times[str(marker.parent.relative_to(root))] = [info["seconds"], info.get("cpu_seconds")]
    rows = [[name, f"{w:.0f}", fmt(c)] for name, (w, c) in times.items()]
    cpu = sum(c or 0 for _, c in times.values())
    rows.append(["**all stages**", f"{sum(w for w, _ in times.values()):.0f}", f"{cpu:.0f}"])
    return table(["stage", "wall s", "CPU s"], rows), times


def ceiling_runs(methods: dict) -> dict[str, str]:
    """Every ceiling method of the ladder (``ceiling*``) -> its run folder, derived from ``methods``."""
    return {m: f"{m}/run" for m in methods if m.startswith("ceiling")}


def write_report(cfg, qcfg, root: Path, methods: dict, mixes: dict) -> Path:
    p, batch = cfg.option_score, qcfg.batch_size
    data = Path(cfg.source) / "data"
    out = [
        "# Learnability ladder",
        "",
        (
            f"Source run `{cfg.source}`; every cell: test split, instruction setting, CircularEval, option "
            f"likelihood read **{p}** (every protocol is recorded). Command: `python scripts/ladder.py --source "
            f"{cfg.source} --out {cfg.out} --parts {' '.join(cfg.parts)}`."
        ),
        "",
        "## Which option score moves",
        "",
    ]
    stick, stick_stats = stick_tables(
        root, data, {"start": "start/eval", "ceiling": _last_eval(root, "ceiling/run")}
    )
    out += stick
    ceilings = {methods[m][2]: curve(root, run, p, batch) for m, run in ceiling_runs(methods).items()}
    ceilings = {label: pts for label, pts in ceilings.items() if pts}
    for label, pts in ceilings.items():
        out += [f"## {label}", ""]
        out += table(["rows seen", *COLUMNS], [[str(x), *(fmt(c[k]) for k in COLUMNS)] for x, c in pts])
    runs = {
        (mix, method): f"curves/{mix}/{method}"
        for mix in mixes
        for method in methods
        if not method.startswith("ceiling") and (root / f"curves/{mix}/{method}").is_dir()
    }
    curves = {_label(methods, m, mix): curve(root, run, p, batch) for (mix, m), run in runs.items()}
    out += ["## Curves", ""]
    rows = [[label, str(x), *(fmt(c[k]) for k in COLUMNS)] for label, pts in curves.items() for x, c in pts]
    out += table(["run", "rows seen", *COLUMNS], rows)
    out += _anchor(root, runs, methods, p, batch)
    items = test_items(data)
    evals = {"start": "start/eval"}
    for label, run in [
        *((methods[m][2], r) for m, r in ceiling_runs(methods).items()),
        *((_label(methods, m, mix), r) for (mix, m), r in runs.items()),
    ]:
        for ev in sorted((root / run / "eval").glob("*")) if (root / run / "eval").is_dir() else []:
            evals[f"{label} @{int(ev.name) * batch}"] = f"{run}/eval/{ev.name}"
    sep_lines, sep_stats = separation_table(root, evals, items, p)
    out += [
        "## Paired separation",
        "",
        (
            "Per perturbed task, the share of (perturbed item, its clean twin) pairs in which the model is more "
            "inclined to abstain on the perturbed one (first pass, abstention margin; ties half): 100 % tells "
            "every twin apart, 50 % none, whatever the model's bias. Last column: first-pass abstention on each "
            "side."
        ),
        "",
        *sep_lines,
    ]
    start = load(root, "start/eval")
    refs_pt = {"always / never abstain: 0": 0.0}
    if start is not None:
        refs_pt["start"] = cells(start, p)["paired trust"]
    refs_clean = {"always abstain: 0": 0.0, "never abstain: 100": 100.0}
    if start is not None:
        refs_clean["start"] = cells(start, p)[CLEAN_TASK]
    plots = [
        plot(curves, ceilings, "paired trust", refs_pt, root / "plots" / "ladder_paired_trust.png"),
        plot(curves, ceilings, CLEAN_TASK, refs_clean, root / "plots" / "ladder_clean.png"),
    ]
    out += [f"Plots: {', '.join(f'`{x.relative_to(root)}`' for x in plots)}", ""]
    disp_lines, disp_stats = displacement(
        root, {_label(methods, m, mix): run for (mix, m), run in runs.items()}, sorted(cfg.budgets), batch
    )
    out += disp_lines
    dec_stats = {}
    for steps in sorted(cfg.decisive_steps):
        out += [f"## Decisive table ({steps} steps, seeds {cfg.decisive_seeds})", ""]
        lines, dec_stats[str(steps)] = decisive(root, cfg, methods, qcfg.seed, steps, items)
        out += lines + [""]
    out += ["## Wall and CPU time per stage", ""]
    lines, times = wall_times(root)
    out += lines
    (root / "ladder.md").write_text("\n".join(out) + "\n")
    summary = {
        "option_score": p,
        "stick": stick_stats,
        "ceilings": ceilings,
        "curves": curves,
        "separation": sep_stats,
        "displacement": disp_stats,
        "decisive": dec_stats,
        "wall_cpu_s": times,
    }
    (root / "ladder.json").write_text(json.dumps(summary, indent=1))
    return root / "ladder.md"


MIX_LABELS = {
    "paper": "",
    "clean": " +CLEAN",
    "clean_abstain": " +CLEAN rejecting abstention",
    "clean_abstain_anchors": " +CLEAN rejecting abstention, twins' anchors",
}


def _label(methods: dict, method: str, mix: str) -> str:
    return methods[method][2] + MIX_LABELS.get(mix, f" [{mix}]")  # a new mix still gets a label of its own


def _anchor(root: Path, runs: dict, methods: dict, protocol: str, batch: int) -> list[str]:
    """CAVPref with the original answer as anchor (the default) against the chosen response (the paper's
    Eq. 2-3), same mix and budget."""
    rows = []
    for mix in ("paper", "clean"):
        a, b = runs.get((mix, "cavpref")), runs.get((mix, "cavpref_paper_anchor"))
        if not a or not b:
            continue
        ours, paper = dict(curve(root, a, protocol, batch)), dict(curve(root, b, protocol, batch))
        for x in sorted(set(ours) & set(paper)):
            rows.append(
                [mix, str(x)]
                + [
                    f"{fmt(ours[x][k])} / {fmt(paper[x][k])}"
                    for k in ("paired trust", CLEAN_TASK, "false abstention", "modality", "rest")
                ]
            )
    if not rows:
        return []
    head = ["mix", "rows seen", "paired trust", CLEAN_TASK, "false abstention", "modality", "rest"]
    return ["## Anchor: original answer / chosen response (CAVPref, calibrated β)", ""] + table(head, rows)


def _last_eval(root: Path, run: str) -> str:
    evals = sorted((root / run / "eval").glob("*")) if (root / run / "eval").is_dir() else []
    done = [e for e in evals if Stage(root, f"{run}/eval/{e.name}").done]
    return f"{run}/eval/{done[-1].name}" if done else f"{run}/eval/none"


@dataclass
class ReportArguments:
    out: str = field(
        default="",
        metadata={"help": "a ladder's folder (scripts/ladder.py --out); its ladder_config.json is read"},
    )
    option_score: str | None = field(
        default=None,
        metadata={
            "help": "the protocol the tables and plots read (default: the ladder's)",
            "choices": OPTION_SCORES,
        },
    )


def main(argv: list[str] | None = None) -> int:
    """Re-render a ladder's ladder.md / ladder.json / plots from its stages' results, e.g. under another option
    score, with the keys the ladder ran with (``scripts/ladder.py ... --report_only`` with them retyped)."""
    (args,) = parse_args(
        [ReportArguments], sys.argv[1:] if argv is None else argv, prog="scripts/ladder_report.py"
    )
    saved = Path(args.out) / "ladder_config.json"
    if not saved.is_file():
        raise FileNotFoundError(f"{saved}: not found; --out must be a folder scripts/ladder.py wrote")
    cfg = replace(LadderConfig(**json.loads(saved.read_text())), out=args.out, worker=False)
    if args.option_score:
        cfg = replace(cfg, option_score=args.option_score)
    say(f"report: {write_report(cfg, source_config(cfg), Path(args.out), METHODS, MIXES)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
