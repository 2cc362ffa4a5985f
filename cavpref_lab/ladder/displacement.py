"""The displacement diagnostic of issue 53: how each run's chosen answers moved from the start while it trained.

Every training run logs, per task, the chosen row's summed log-prob and its change from the reference (the
start): ``task/<TASK>/chosen_logp`` and ``task/<TASK>/chosen_logratio`` (``cavpref.trainer.metrics``). On CLEAN
the chosen row is the original answer under clean media — the likelihood a relative objective can lower while
its margins grow — so its log-ratio over training is the mechanism behind a method's false abstention, not only
its outcome. Read from each run's ``logs.jsonl``; a table at the budgets and one PNG."""

from __future__ import annotations

from pathlib import Path

from cavpref.data import CLEAN_TASK
from cavpref.jsonl import read_jsonl
from cavpref.plotting import pyplot

KEY = f"task/{CLEAN_TASK}/chosen_logratio"


def series(run: Path, key: str = KEY) -> list[tuple[int, float]]:
    """(step, value) of ``key`` in ``run/logs.jsonl``, in step order (the last record of a resumed step wins)."""
    path = run / "logs.jsonl"
    if not path.is_file():
        return []
    points = {int(r["step"]): float(r[key]) for _, r in read_jsonl(path) if key in r and "step" in r}
    return sorted(points.items())


def at(points: list[tuple[int, float]], step: int) -> float | None:
    """The logged value at the last logged step <= ``step`` (logging runs every few steps)."""
    before = [v for s, v in points if s <= step]
    return before[-1] if before else None


def displacement(root: Path, runs: dict[str, str], budgets: list[int], batch: int) -> tuple[list[str], dict]:
    """Markdown lines (a table of CLEAN's chosen log-ratio at each budget, per run) and the series, with the
    plot written to ``root/plots/ladder_displacement.png``."""
    got = {label: series(root / run) for label, run in runs.items()}
    got = {label: pts for label, pts in got.items() if pts}
    if not got:
        return [], {}
    lines = [
        "## Displacement: the original answer on clean media",
        "",
        (
            f"`{KEY}` (the chosen CLEAN row's summed log-prob minus the start's, from each run's logs; below 0: "
            "training pushed the answer the clean media support down), at the budgets (rows seen = steps × "
            f"{batch})."
        ),
        "",
        "| run | " + " | ".join(str(b * batch) for b in budgets) + " |",
        "|---|" + "---|" * len(budgets),
    ]
    for label, pts in got.items():
        cells = [at(pts, b) for b in budgets]
        lines.append(f"| {label} | " + " | ".join("–" if c is None else f"{c:+.2f}" for c in cells) + " |")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for label, pts in got.items():
        ax.plot([s * batch for s, _ in pts], [v for _, v in pts], label=label, lw=1)
    ax.axhline(0.0, color="grey", lw=1, ls=":")
    ax.set_xscale("log")
    ax.set_xlabel("training rows seen (steps × batch)")
    ax.set_ylabel("CLEAN: log π(answer | clean) − log π_start (nats)")
    ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.14))
    path = root / "plots" / "ladder_displacement.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")  # the whole legend, however long the labels
    plt.close(fig)
    return [*lines, "", f"Plot: `{path.relative_to(root)}`", ""], {k: v for k, v in got.items()}
