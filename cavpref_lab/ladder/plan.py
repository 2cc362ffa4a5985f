"""The learnability ladder (issue 38): can preference training teach the quickstart's start to notice a perturbed
stream, and could anything?

    python scripts/ladder.py --source runs/qsp --out runs/ladder [--parts start ceiling] [--worker]
    python scripts/ladder.py --source runs/qsp --out runs/ladder --parts start ceiling curves [--budgets 120 240 …]
    python scripts/ladder.py --source runs/qsp --out runs/ladder --parts decisive --decisive_steps 480 1920
    python scripts/ladder.py --source runs/qsp --out runs/ladder --report_only   (tables and PNGs only)
    python scripts/ladder_report.py --out runs/ladder [--option_score sum]   (the same, with the ladder's keys)

``--source`` is a finished ``cavpref quickstart`` run (its world, scored prep and starting model are read,
never written). Every run below starts from that start; every evaluation is the quickstart's (test split,
instruction setting, CircularEval, option likelihood) on **all** test items, recording every option-scoring
protocol (``cavpref.eval.option_score``); ``--option_score`` only picks the one the tables and plots read.

Parts (``--parts``):

- ``start``: the start evaluated.
- ``ceiling``: SFT from the start on every *perturbed* training item's correct response, each with its clean
  twin's (CLEAN, same record and setting) answer — balanced one to one (COT-Stitch / COT-Swap / CAT have no
  twin and enter alone). What a supervised learner reaches on this world: the ceiling of the curves.
- ``ceiling_weighted``: the ceiling's rows with each clean twin ``--ceiling_clean_copies`` times — the same
  supervision with a cost on abstaining where an answer is wanted (the balanced ceiling's abstention sits off
  by a constant its own training items measure: ``scripts/ladder_diagnose.py --fit_on``).
- ``curves``: DPO, CAVPref w/o Robustness, CAVPref (calibrated β), CAVPref (fixed β) and CAVPref with the
  paper's anchor (``anchor_response: chosen``), each on the paper's mix (the 9 tasks), with CLEAN's rows added
  as prep built them before its default changed (``clean``: a wrong option rejected), or with CLEAN's rows
  rejecting abstention (``clean_abstain``, prep's default now) (``--mixes``). Each mix names its kind of CLEAN
  row (``cavpref_lab.ladder.rows.MIX_CLEAN_REJECTED``): the mix whose kind the source's prep built trains on the
  source's rows; the other is built once by the product's rule (``mixes/<mix>/data``, ``rows.mix_data``).
- ``decisive``: ``--decisive_methods`` over ``--decisive_seeds`` at each of ``--decisive_steps`` (one table
  each; seed 0 is the curve's checkpoint: the same run). One run per seed goes to the largest budget and keeps a
  checkpoint at every one, so a budget added later extends the runs without losing the earlier checkpoints.

**Curve points are checkpoints of one run.** Every run trains at a constant learning rate after
``--warmup_steps`` (``constant_with_warmup``) and saves every ``--save_every`` steps; the data order depends
only on (seed, epoch) (``PreferenceBatchSampler``), so the checkpoint at step N *is* the run with
``max_steps = N`` (checked bit for bit, cavpref_lab/ladder/README.md) at a fraction of the cost of separate runs. Each run
goes to ``--budgets`` and on to at least ``--epochs`` epochs of its own data.

Resumable stage by stage: each stage is a folder with a ``.done.json`` marker (with its wall time); a killed
run resumes its training from its last checkpoint (``--allow_recipe_change`` where the run was started by an
older version whose recipe differs). Two processes share the work (the second with
``--worker``): each takes the next stage nobody holds (a lock per stage); evaluations of saved checkpoints go
first. Writes ``ladder.md``, ``ladder.json`` and ``plots/`` in ``--out``.
"""

from __future__ import annotations

import fcntl
import json
import math
import resource
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import NamedTuple

from datasets import load_from_disk
from tqdm.auto import tqdm

from cavpref.apps.quickstart import QuickstartConfig, Stage, eval_stage, recipe, say, train_stage
from cavpref.parsing import parse_args
from cavpref_lab.ladder.config import METHODS, MIXES, LadderConfig, source_config
from cavpref_lab.ladder.report import write_report
from cavpref_lab.ladder.rows import (
    MIX_CLEAN_REJECTED,
    ceiling_data,
    ceiling_order,
    ceiling_rot_data,
    clean_anchor_data,
    mix_data,
    source_clean_rejected,
)


class Job(NamedTuple):
    """One stage (a NamedTuple, not a dataclass: the script's only argument class is ``LadderConfig``)."""

    name: str  # stage folder under --out
    run: Callable[[Stage], None]
    ready: Callable[[], bool] = lambda: True
    kind: str = "train"  # eval stages go first


def run_steps(cfg: LadderConfig, rows: int, batch: int) -> int:
    """The run's last step: the largest budget or ``epochs`` epochs, up to a multiple of ``save_every``."""
    need = max(max(cfg.budgets), math.ceil(cfg.epochs * rows / batch))
    return cfg.save_every * math.ceil(need / cfg.save_every)


def points(cfg: LadderConfig, last: int) -> list[int]:
    """A curve's evaluated checkpoints: the budgets, its last step, and the decisive budgets it reaches (its
    checkpoint there is seed 0 of the decisive table)."""
    return sorted({*cfg.budgets, last, *(d for d in cfg.decisive_steps if d <= last)})


def checkpoint(run: Path, step: int) -> Path:
    return run / f"checkpoint-{step}"


def saved(run: Path, step: int) -> bool:
    return (checkpoint(run, step) / "trainer_state.json").exists()  # written last by the Trainer


def prune(run: Path, keep: list[int]) -> None:
    """After a run: drop the checkpoints no point needs, and the optimizer state of all but the last."""
    for ckpt in run.glob("checkpoint-*"):
        step = int(ckpt.name.split("-")[1])
        if step not in keep:
            shutil.rmtree(ckpt)
        elif step != max(keep):
            for f in ("optimizer.pt", "scheduler.pt"):
                (ckpt / f).unlink(missing_ok=True)


def plan(cfg: LadderConfig, qcfg: QuickstartConfig) -> list[Job]:
    """Every stage of ``cfg.parts`` in order."""
    src, root = Path(cfg.source), Path(cfg.out)
    data, world, start, prefs = src / "data", src / "world", src / "start", src / "data" / "preferences"
    train_rows = load_from_disk(str(prefs))["train"]
    ids, tasks = train_rows["id"], train_rows["task"]
    n_rows = {mix: sum(t in MIXES[mix] for t in tasks) for mix in MIXES}
    n_rows["ceiling"] = len(ceiling_order(ids, tasks)[0])
    n_rows["ceiling_weighted"] = len(ceiling_order(ids, tasks, cfg.ceiling_clean_copies)[0])
    jobs: list[Job] = []
    mix_dir = {mix: prefs for mix in MIXES}
    wanted = {*cfg.mixes, *cfg.decisive_mixes}
    if "clean_abstain_anchors" in wanted:
        wanted.add("clean_abstain")  # its rows are clean_abstain's, each CLEAN row with its twins' anchors
    built = source_clean_rejected(src) if {*MIX_CLEAN_REJECTED} & wanted else None
    for mix, kind in MIX_CLEAN_REJECTED.items():
        if kind != built and mix in wanted:
            mix_dir[mix] = root / "mixes" / mix / "data"
            jobs.append(Job(f"mixes/{mix}/data", lambda st, mix=mix: mix_data(st, src, mix)))
    if "clean_abstain_anchors" in wanted:
        base = mix_dir["clean_abstain"]
        mix_dir["clean_abstain_anchors"] = root / "mixes" / "clean_abstain_anchors" / "data"
        ready = (lambda: True) if base == prefs else (lambda: Stage(root, "mixes/clean_abstain/data").done)
        jobs.append(Job("mixes/clean_abstain_anchors/data", lambda st: clean_anchor_data(st, base), ready))

    def evaluate(name: str, model: Path, label: str, ready=lambda: True) -> None:
        jobs.append(Job(name, lambda st: eval_stage(qcfg, st, model, data, world, label), ready, "eval"))

    ref_cache = root / "ref_cache"

    def reference(mix: str, overrides: dict) -> str:
        """Stage ``ref/<mix>[/<anchor>]``: the start's reference log-probs of every row of the mix, cached once
        for every run on it (a 1-step DPO run computes them; its model is not kept)."""
        anchor = overrides.get("anchor_response")
        name = f"ref/{mix}" + (f"/{anchor}" if anchor else "")
        if not any(j.name == name for j in jobs):
            rec = recipe(
                qcfg,
                method="dpo",
                model=start,
                train=mix_dir[mix],
                world=world,
                out=root / name / "run",
                steps=1,
                lr=qcfg.pref_learning_rate,
                tasks=MIXES[mix],
                precompute_ref_log_probs=True,
                ref_cache_dir=str(ref_cache),
                save_strategy="no",
                **overrides,
            )

            def go(st: Stage) -> None:
                train_stage(qcfg, st, rec)
                shutil.rmtree(root / name / "run")

            data_job = None if mix_dir[mix] == prefs else f"mixes/{mix}/data"
            jobs.append(Job(name, go, lambda: data_job is None or Stage(root, data_job).done))
        return name

    def train(
        name: str,
        method: str,
        train_dir: Path,
        tasks: list[str],
        rows: int,
        seed: int,
        keep_steps=(),
        mix=None,
    ):
        kind, overrides, label = METHODS[method]
        ref, needs = {}, f"{method}/data" if method.startswith("ceiling") else None
        if cfg.precompute_ref and kind != "sft":
            ref = {"precompute_ref_log_probs": True, "ref_cache_dir": str(ref_cache)}
            needs = reference(mix, overrides)
        last = max(keep_steps, default=0) or run_steps(cfg, rows, qcfg.batch_size)
        run = root / name
        rec = recipe(
            qcfg,
            method=kind,
            model=start,
            train=train_dir,
            world=world,
            out=run,
            steps=last,
            lr=qcfg.pref_learning_rate,
            tasks=tasks,
            seed=seed,
            lr_scheduler_type="constant_with_warmup",
            warmup_steps=cfg.warmup_steps,
            save_steps=cfg.save_every,
            save_total_limit=None,
            allow_recipe_change=cfg.allow_recipe_change,
            **ref,
            **overrides,
        )
        keep = sorted(keep_steps) if keep_steps else points(cfg, last)

        def go(st: Stage) -> None:
            train_stage(qcfg, st, rec)
            prune(run, keep)

        ready = (lambda: Stage(root, needs).done) if needs else (lambda: True)
        jobs.append(Job(name, go, ready))
        for step in keep:
            evaluate(
                f"{name}/eval/{step:05d}",
                checkpoint(run, step),
                f"{label} s{seed} @{step}",
                lambda step=step: saved(run, step),
            )

    ceiling_dir = root / "ceiling" / "data"
    if "start" in cfg.parts:
        evaluate("start/eval", start, "ZS (start)")
    if "ceiling" in cfg.parts:
        jobs.append(Job("ceiling/data", lambda st: ceiling_data(qcfg, st, prefs)))
        train("ceiling/run", "ceiling", ceiling_dir, MIXES["clean"], n_rows["ceiling"], qcfg.seed)
    if "ceiling_rot" in cfg.parts:  # the same optimizer steps as the ceiling, over its rows' every rotation
        jobs.append(Job("ceiling_rot/data", lambda st: ceiling_rot_data(qcfg, st, prefs, data)))
        rot_dir = root / "ceiling_rot" / "data"
        train("ceiling_rot/run", "ceiling_rot", rot_dir, MIXES["clean"], n_rows["ceiling"], qcfg.seed)
    if "ceiling_weighted" in cfg.parts:  # the ceiling's rows with every clean twin ceiling_clean_copies times
        copies = cfg.ceiling_clean_copies
        jobs.append(Job("ceiling_weighted/data", lambda st: ceiling_data(qcfg, st, prefs, copies)))
        w_dir = root / "ceiling_weighted" / "data"
        train(
            "ceiling_weighted/run",
            "ceiling_weighted",
            w_dir,
            MIXES["clean"],
            n_rows["ceiling_weighted"],
            qcfg.seed,
        )
    if "curves" in cfg.parts:
        for mix in cfg.mixes:
            for method in cfg.methods:
                train(
                    f"curves/{mix}/{method}",
                    method,
                    mix_dir[mix],
                    MIXES[mix],
                    n_rows[mix],
                    qcfg.seed,
                    mix=mix,
                )
    if "decisive" in cfg.parts and cfg.decisive_steps:
        for seed in cfg.decisive_seeds:
            if seed == qcfg.seed:
                continue  # the curves' checkpoint at decisive_steps is this run (see the module docstring)
            for mix in cfg.decisive_mixes:
                for method in cfg.decisive_methods:
                    if method == "ceiling" and mix != cfg.decisive_mixes[0]:
                        continue  # one ceiling per seed: it has its own data
                    train_dir, tasks = (
                        (ceiling_dir, MIXES["clean"]) if method == "ceiling" else (mix_dir[mix], MIXES[mix])
                    )
                    name = f"decisive/{seed}/{'ceiling' if method == 'ceiling' else f'{mix}/{method}'}"
                    train(name, method, train_dir, tasks, 0, seed, keep_steps=cfg.decisive_steps, mix=mix)
    return jobs


def cpu_seconds() -> float:
    """User + system CPU time of this process and its finished children (data-loader workers): the stage's
    cost on a shared machine, where wall time mostly measures the load."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _claim(root: Path, name: str):
    """A non-blocking lock on stage ``name`` (released when the process dies), or None if another holds it."""
    path = root / ".locks" / f"{name.replace('/', '__')}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "w")  # noqa: SIM115 - the open file holds the lock while the stage runs
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fh
    except BlockingIOError:
        fh.close()
        return None


def run_jobs(jobs: list[Job], root: Path, poll_s: float = 60.0) -> None:
    """Run every job not done yet, evaluations first, skipping those another process holds; wait while the
    rest are held or not ready (a checkpoint still training)."""
    bar = tqdm(total=len(jobs), desc="ladder stages", unit="stage")
    while True:
        todo = [j for j in jobs if not Stage(root, j.name).done]
        bar.n = len(jobs) - len(todo)
        bar.refresh()
        if not todo:
            break
        ran = held = False
        for job in sorted(todo, key=lambda j: j.kind != "eval"):
            if not job.ready():
                continue
            lock = _claim(root, job.name)
            if lock is None:
                held = True
                continue
            with lock:
                stage = Stage(root, job.name)
                if stage.done:
                    continue
                stage.dir.mkdir(parents=True, exist_ok=True)
                say(f"{job.name}: running ...")
                t0, c0 = time.perf_counter(), cpu_seconds()
                job.run(stage)
                info = {
                    **stage.info(),
                    "seconds": round(time.perf_counter() - t0, 1),
                    "cpu_seconds": round(cpu_seconds() - c0, 1),
                }
                stage.finish(**info)
                say(f"{job.name}: finished in {info['seconds']:.0f} s ({info['cpu_seconds']:.0f} CPU s)")
            ran = True
            break
        if not ran and not held:  # nothing runs here or elsewhere, and what is left cannot start
            raise RuntimeError(f"ladder: stages that cannot start: {[j.name for j in todo]}")
        if not ran:
            time.sleep(poll_s)
    bar.close()


def main(argv: list[str] | None = None) -> int:
    (cfg,) = parse_args([LadderConfig], sys.argv[1:] if argv is None else argv, prog="scripts/ladder.py")
    qcfg = source_config(cfg)
    root = Path(cfg.out)
    root.mkdir(parents=True, exist_ok=True)
    if not cfg.report_only:
        (root / "ladder_config.json").write_text(json.dumps(asdict(cfg), indent=1))
        run_jobs(plan(cfg, qcfg), root)
    if not cfg.worker:
        say(f"report: {write_report(cfg, qcfg, root, METHODS, MIXES)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
