"""The quickstart's stages in order and ``run``: world -> prep -> tiny thinker -> starting SFT -> the Table-5
methods -> evaluation of each -> ``report.md``. Each stage is a function ``(cfg, stage, *inputs)`` run by
``Stages`` (reused when it finished before)."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path

import torch
import yaml

from cavpref import interrupts
from cavpref.apps.quickstart.config import LABELS, MEASURED_WALL, QuickstartConfig
from cavpref.apps.quickstart.data import caption_data, corpus, start_data
from cavpref.apps.quickstart.recipes import recipe, write_recipe
from cavpref.apps.quickstart.report import items_caption, load_results, table5, write_report
from cavpref.apps.quickstart.stages import Stage, Stages, say
from cavpref.apps.train import main as train_main
from cavpref.cpu import pin_cpu
from cavpref.data import CLEAN_TASK, TASKS
from cavpref.data_prep.build import PrepConfig, build
from cavpref.data_prep.scoring import ScoringConfig
from cavpref.data_prep.scoring.train_tiny import (
    TinyScorerConfig,
    train_tiny_clap,
    train_tiny_clip,
    world_labels,
)
from cavpref.data_prep.synthetic import WorldConfig, generate_world
from cavpref.eval.pipeline import EvalArgs, evaluate
from cavpref.models.tiny import build_tiny_qwen_omni
from cavpref.output_dir import OutputDirError, claim_output_dir, release_output_dir
from cavpref.parsing import parse_args
from cavpref.train import last_complete_checkpoint


def world_stage(cfg: QuickstartConfig, stage: Stage) -> None:
    """The synthetic audio-visual world (``cavpref world``) with the run's seed and size."""
    _world(cfg, stage, cfg.seed, cfg.num_clips)


# The caption world's seed is the run's plus this, so the two worlds never draw the same clips.
CAPTION_WORLD_SEED_OFFSET = 1_000_003


def caption_world_stage(cfg: QuickstartConfig, stage: Stage) -> None:
    """A second synthetic world, ``cfg.caption_clips`` clips per source, seed ``cfg.seed`` +
    ``CAPTION_WORLD_SEED_OFFSET``: the captioned clips of the captions-only stage (``data.caption_data``)."""
    _world(cfg, stage, cfg.seed + CAPTION_WORLD_SEED_OFFSET, cfg.caption_clips)


def _world(cfg: QuickstartConfig, stage: Stage, seed: int, num_clips: int) -> None:
    world = WorldConfig(
        out=str(stage.dir),
        seed=seed,
        num_clips=num_clips,
        **cfg.world_keys(),
    )
    manifest = generate_world(world)
    stage.finish(files=manifest.get("files", {}) and len(manifest["files"]))


def scorers_stage(cfg: QuickstartConfig, stage: Stage, world: Path) -> None:
    """Tiny CLAP and CLIP trained on the world's *train* clips (``cavpref model tiny-clap`` / ``tiny-clip``: the
    split hash prep uses, with the run's seed), and ``scoring.yaml``, the ``ScoringConfig`` prep scores with:
    the text-bridged AVSM over the world's own label set, the names as they are (no prompt template)."""
    common = dict(world=str(world), seed=cfg.seed, split_seed=cfg.seed)
    infos = {
        "clap": train_tiny_clap(
            TinyScorerConfig(out=str(stage.dir / "clap"), steps=cfg.clap_steps, **common)
        ),
        "clip": train_tiny_clip(
            TinyScorerConfig(out=str(stage.dir / "clip"), steps=cfg.clip_steps, **common)
        ),
    }
    scoring = ScoringConfig(
        clap_model=str(stage.dir / "clap"),
        clip_model=str(stage.dir / "clip"),
        vocabulary=world_labels(json.loads((world / "world.json").read_text())),
        num_frames=cfg.num_frames,
    )
    (stage.dir / "scoring.yaml").write_text(yaml.safe_dump(asdict(scoring), sort_keys=False))
    stage.finish(
        threads=torch.get_num_threads(), **{f"{k}_loss_last": v["loss_last"] for k, v in infos.items()}
    )


def prep_stage(cfg: QuickstartConfig, stage: Stage, world: Path, scorers: Path | None) -> None:
    """AVTrustBench items of every task + CLEAN and the preference data (``cavpref prep``) from the world, each
    preference row under one CircularEval rotation drawn from (seed, id) (``rotate_options``); with scorers,
    every preference row's ``clap_delta`` / ``avsm_delta_*`` is filled (``score: true``)."""
    stats = build(
        PrepConfig(
            output_dir=str(stage.dir),
            world=str(world),
            tasks=[*TASKS, CLEAN_TASK],
            seed=cfg.seed,
            split_seed=cfg.seed,
            score=scorers is not None,
            scoring_config=str(scorers / "scoring.yaml") if scorers is not None else None,
            rotate_options=True,
            distractors=cfg.distractors,
        )
    )
    stage.finish(stats_file=str(stage.dir / "stats.json"), items=stats.get("items"))


def model_stage(cfg: QuickstartConfig, stage: Stage, data: Path) -> None:
    """A random tiny Qwen2.5-Omni thinker whose tokenizer is trained on the training split's text."""
    build_tiny_qwen_omni(
        stage.dir,
        hidden_size=cfg.hidden_size,
        num_hidden_layers=cfg.num_hidden_layers,
        num_attention_heads=cfg.num_attention_heads,
        num_key_value_heads=cfg.num_key_value_heads,
        intermediate_size=cfg.intermediate_size,
        vision_hidden_size=cfg.vision_hidden_size,
        vision_depth=cfg.vision_depth,
        audio_d_model=cfg.audio_d_model,
        audio_layers=cfg.audio_layers,
        frame_pixels=cfg.frame_size * cfg.frame_size,
        extra_corpus=corpus(data),
        vocab_size=cfg.vocab_size,
        seed=cfg.seed,
    )
    stage.finish()


def train_stage(cfg: QuickstartConfig, stage: Stage, recipe: dict) -> None:
    """``cavpref train`` on the stage's recipe (written to ``<root>/recipes/``), resuming a partial run."""
    stage.dir.mkdir(parents=True, exist_ok=True)
    path = write_recipe(stage, recipe)
    argv = [str(path)]
    if last_complete_checkpoint(str(stage.dir)):
        argv += ["--resume_from_checkpoint", "last"]
    else:  # none (only a half-written one, or the stage's run finished but not marked): the stage starts over
        argv += ["--overwrite_output_dir", "true"]
    code = train_main(argv, interrupt_line=False)  # ^C: run()'s caller says how to resume the quickstart
    if code:
        raise RuntimeError(f"training stage {stage.name} failed (exit {code}); recipe {path}")
    stage.finish(recipe=str(path))


def eval_stage(
    cfg: QuickstartConfig,
    stage: Stage,
    model: Path,
    data: Path,
    world: Path,
    label: str,
    *,
    tasks: list[str] | None = None,
    drop_stream: str | None = None,
) -> dict:
    """The paper protocol on the test split: instruction setting, CircularEval (vanilla = its first pass)."""
    args = EvalArgs(
        model=str(model),
        data=str(data),
        output=str(stage.dir),
        tasks=tasks or [*TASKS, CLEAN_TASK],
        limit=cfg.eval_limit,
        mode=cfg.eval_mode,
        label=label,
        media_root=str(world),
        num_frames=cfg.num_frames,
        frame_height=cfg.frame_size,
        frame_width=cfg.frame_size,
        audio_max_seconds=cfg.audio_seconds,
        max_new_tokens=24,
        no_judge=True,
        drop_stream=drop_stream,
    )
    results = evaluate(args, {"setting": "instruction", "circular": True})  # none evaluated: an error
    stage.finish(label=label)
    return results


def stage_folders(root: Path) -> dict[str, str]:
    """The shared stage folders of a run under ``root`` (a stage's folder is ``root / name``), so a second
    process can find them without running the stages."""
    return {
        "root": str(root),
        "world": str(root / "world"),
        "data": str(root / "data"),
        "start": str(root / "start"),
        "caption_world": str(root / "caption_world"),
        "pref_data": str(root / "data" / "preferences"),  # rotated by prep (rotate_options)
    }


# Keys a rerun may change: more methods add stages; where the run lives and whether it may overwrite change
# no stage's output.
RERUN_MAY_CHANGE = ("methods", "out", "overwrite_output_dir")
# The value a run folder written before a key existed was made with (what that version always did).
BEFORE_KEY = {"distractors": "category"}


def check_same_keys(cfg: QuickstartConfig) -> None:
    """Refuse to resume ``cfg.out`` under other keys: its finished stages would be reused as they are (a world
    of another seed, items with other distractors, evaluations of another limit) while the report and
    ``quickstart_config.json`` named the new keys."""
    path = Path(cfg.out) / "quickstart_config.json"
    if not path.exists():
        return
    saved = {**BEFORE_KEY, **json.loads(path.read_text())}
    changed = [
        f"{k}: {saved.get(k, '(unset)')!r} -> {v!r}"
        for k, v in asdict(cfg).items()
        if k not in RERUN_MAY_CHANGE and saved.get(k, "(unset)") != v
    ]
    if changed:
        raise OutputDirError(
            f"{cfg.out} is a quickstart run made with other keys ({'; '.join(changed)}); resuming it would reuse "
            "its finished stages under the new keys: give the keys it was made with, or a new --out"
        )


def write_config(cfg: QuickstartConfig) -> Path:
    """``<out>/quickstart_config.json``: the run's keys, written before any stage, so a second process (the
    science worker, a probe of a checkpoint still training) rebuilds the same ``QuickstartConfig``."""
    path = Path(cfg.out) / "quickstart_config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(cfg), indent=1))
    return path


def start_stages(cfg: QuickstartConfig, stage: Stages) -> tuple[Path, Path, Path]:
    """(world, prep output, starting model) folders: the stages every run shares up to the starting SFT
    (with ``cfg.caption_steps``, first a captions-only SFT on a second world's clips, from which the starting
    SFT goes on)."""
    root = Path(cfg.out)
    pin_cpu(cfg.num_threads, cfg.cpu_isa)  # before the scorers train: no recipe has pinned them yet
    world = stage("world", world_stage).dir
    scorers = stage("scorers", scorers_stage, world).dir if cfg.calibrate_beta else None
    data = stage("data", prep_stage, world, scorers).dir
    init = stage("model_init", model_stage, data).dir
    sft_data = stage("start_data", start_data, world, data).dir

    def start_sft(name: str, model: Path, train: Path, media: Path, steps: int, lr: float) -> Path:
        """One SFT stage of the start (towers and projectors trained), output in ``root / name``."""
        rec = recipe(
            cfg,
            method="sft",
            model=model,
            train=train,
            world=media,
            out=root / name,
            steps=steps,
            lr=lr,
            tasks=[CLEAN_TASK],
            encoders=True,
        )
        return stage(name, train_stage, rec).dir

    # captions only first: the towers must carry the clip before any question's text can stand in for it
    if cfg.caption_steps:
        caption_world = stage("caption_world", caption_world_stage).dir
        captions = stage("caption_data", caption_data, caption_world, data).dir
        init = start_sft(
            "start_captions",
            init,
            captions / "train",
            caption_world,
            cfg.caption_steps,
            cfg.caption_learning_rate,
        )
    start = start_sft("start", init, sft_data / "train", world, cfg.sft_steps, cfg.sft_learning_rate)
    return world, data, start


def stage_plan(cfg: QuickstartConfig) -> list[str]:
    """Every stage ``run`` goes through, in order (``start_stages``, the methods, their evaluations)."""
    captions = ["caption_world", "caption_data", "start_captions"] if cfg.caption_steps else []
    return [
        "world",
        *(["scorers"] if cfg.calibrate_beta else []),
        "data",
        "model_init",
        "start_data",
        *captions,
        "start",
        *cfg.methods,
        *(f"eval/{name}" for name in ("start", *cfg.methods)),
    ]


def run(cfg: QuickstartConfig) -> dict:
    """Every stage under ``cfg.out`` (reusing finished ones), then ``report.md``; returns the stage folders."""
    # never a folder of the user's (cavpref.output_dir); a run folder of an earlier quickstart is resumed
    out = claim_output_dir(
        cfg.out,
        "quickstart",
        overwrite=cfg.overwrite_output_dir,
        markers=("quickstart_config.json",),
        key="out",
    )
    cfg = replace(cfg, out=out)
    root = Path(cfg.out)
    check_same_keys(cfg)
    write_config(cfg)
    plan = stage_plan(cfg)
    wall = MEASURED_WALL.get(cfg.preset) if cfg == QuickstartConfig(preset=cfg.preset, out=cfg.out) else None
    say(
        f"{len(plan)} stages into {root}; "
        + (
            f"a whole {cfg.preset} run took {wall} on a quiet 2-core machine"
            if wall
            else "keys changed from the preset: no measured time"
        )
    )
    stage = Stages(cfg, root, plan)
    world, data, start = start_stages(cfg, stage)
    prefs = data / "preferences"  # rotated by prep (rotate_options)
    trained = {}
    for method in cfg.methods:
        trained[method] = stage(
            method,
            train_stage,
            recipe(
                cfg,
                method=method,
                model=start,
                train=prefs,
                world=world,
                out=root / method,
                steps=cfg.pref_steps,
                lr=cfg.pref_learning_rate,
                # CLEAN in the mix, rejecting abstention (prep's clean_rejected): the ladder's lesson
                tasks=[*TASKS, CLEAN_TASK],
            ),
        ).dir
    runs = {}
    for name, model in {"start": start, **trained}.items():
        runs[name] = stage(f"eval/{name}", eval_stage, model, data, world, LABELS[name]).dir
    times = root / "timings.json"  # every stage's wall time, from the invocation that ran it
    recorded = {**(json.loads(times.read_text()) if times.exists() else {}), **stage.timings}
    times.write_text(json.dumps(recorded, indent=1))
    report = write_report(cfg, root, runs, recorded)
    results = load_results(runs)
    print(f"{items_caption(cfg, results['start'])}\n\n{table5(results)}")  # the headline table: the output
    say(f"report: {report}")
    release_output_dir(out)
    return {
        "report": str(report),
        "runs": {k: str(v) for k, v in runs.items()},
        "timings": stage.timings,
        **stage_folders(root),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """``cavpref quickstart [--config FILE.yaml] [--key value ...]`` (every key: ``--help``). A key, a config
    file or an ``--out`` folder it may not use is one line on stderr and exit code 2, as in ``cavpref train``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        (cfg,) = parse_args([QuickstartConfig], argv, prog="cavpref quickstart")
    except (ValueError, OSError) as err:  # an unknown key, a config file that is missing or no mapping
        print(f"cavpref quickstart: error: {err}", file=sys.stderr)
        return 2
    try:
        with interrupts.catch_interrupts():  # a ^C swallowed by a DataLoader's __del__ is raised again
            run(cfg)
    except OutputDirError as err:  # --out a folder of the user's, a file, ...: refused before any stage
        print(f"cavpref quickstart: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            f"cavpref quickstart: interrupted; the same command resumes it (finished stages are reused, a "
            f"training stage goes on from its last checkpoint): cavpref quickstart {shlex.join(argv)}".rstrip(),
            file=sys.stderr,
        )
        return 130
    return 0
