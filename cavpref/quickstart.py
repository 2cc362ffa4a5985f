"""``cavpref quickstart`` — the embedded default, end to end, on a CPU.

synthetic world -> AVTrustBench items + preference data -> tiny Qwen2.5-Omni thinker -> SFT on the clean
questions (the paper's "zero-shot" starting model) -> the four methods of Table 5 (SFT, DPO, CAVPref w/o
Robustness, CAVPref) from that checkpoint, same data, steps and seed -> evaluation of all five on the test
split (9 tasks + CLEAN, instruction setting, CircularEval and vanilla) -> report.md with the Table-5 layout.

Every stage writes into its own folder under ``--out`` and is skipped when it has finished before, so a
second run only redoes what is missing. The recipes the stage trains with are written next to the
checkpoints (``recipes/*.yaml``): the quickstart runs the same ``cavpref train`` a user would.

β: CAVPref calibrates β from CLAP / AVSM similarity deltas, which need real CLAP / CLIP checkpoints —
nothing is downloaded here, and tiny random scorers would make β noise. The quickstart therefore fixes
β (``beta``) for every method, so DPO and CAVPref differ only in the anchor terms and the aggregation;
``--calibrate_beta`` scores the data with tiny offline scorers to exercise that path instead.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cavpref.data import CLEAN_TASK, TASKS

METHODS = ("sft", "dpo", "cavpref_norobust", "cavpref")
LABELS = {"start": "ZS (start)", "sft": "SFT", "dpo": "DPO", "cavpref_norobust": "CAVPref w/o Robustness",
          "cavpref": "CAVPref"}


@dataclass
class QuickstartConfig:
    out: str = field(default="runs/quickstart", metadata={"help": "run folder (every stage writes below it)"})
    small: bool = field(default=False, metadata={"help": "a few-minute pipeline check (CI): tiny world, few steps"})
    seed: int = field(default=0, metadata={"help": "seed of the world, the splits, the model and the training"})
    num_clips: int | None = field(default=None, metadata={"help": "clips per source (default 96; --small 12)"})
    # model
    hidden_size: int = 64
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    intermediate_size: int = 128
    vision_hidden_size: int = 32
    vision_depth: int = 1
    audio_d_model: int = 32
    audio_layers: int = 1
    num_frames: int = 4
    frame_size: int = 56
    # training
    sft_steps: int | None = field(default=None, metadata={"help": "steps of the starting model's SFT (default 400)"})
    pref_steps: int | None = field(default=None, metadata={"help": "steps of each Table-5 method (default 120)"})
    batch_size: int = 8
    sft_learning_rate: float = 1e-3
    pref_learning_rate: float = 2e-4
    beta: float = 0.1
    calibrate_beta: bool = False
    methods: list[str] = field(default_factory=lambda: list(METHODS))
    # evaluation
    eval_limit: int | None = field(default=None, metadata={"help": "items per task (default: all; --small 6)"})
    eval_mode: str = field(default="generate", metadata={"help": "generate (paper protocol) | likelihood"})

    def __post_init__(self):
        unknown = sorted(set(self.methods) - set(METHODS))
        if unknown:
            raise ValueError(f"--methods: unknown {unknown}; choose from {list(METHODS)}")
        small = self.small
        self.num_clips = self.num_clips or (12 if small else 96)
        self.sft_steps = self.sft_steps if self.sft_steps is not None else (8 if small else 400)
        self.pref_steps = self.pref_steps if self.pref_steps is not None else (4 if small else 120)
        if self.eval_limit is None and small:
            self.eval_limit = 6


class Stage:
    """A folder with a ``.done.json`` marker: a finished stage is reused, an unfinished one redone."""

    def __init__(self, root: Path, name: str):
        self.name, self.dir = name, root / name
        self.marker = self.dir / ".done.json"

    @property
    def done(self) -> bool:
        return self.marker.exists()

    def finish(self, **info: Any) -> None:
        self.marker.write_text(json.dumps(info, indent=1, sort_keys=True))

    def info(self) -> dict:
        return json.loads(self.marker.read_text())


def _say(msg: str) -> None:
    print(f"[quickstart] {msg}", flush=True)


def _world(cfg: QuickstartConfig, stage: Stage) -> None:
    from data_prep.synthetic import WorldConfig, generate_world

    manifest = generate_world(WorldConfig(out=str(stage.dir), seed=cfg.seed, num_clips=cfg.num_clips))
    stage.finish(files=manifest.get("files", {}) and len(manifest["files"]))


def _prep(cfg: QuickstartConfig, stage: Stage, world: Path) -> None:
    from data_prep.build import PrepConfig, build

    stats = build(PrepConfig(output_dir=str(stage.dir), world=str(world), tasks=[*TASKS, CLEAN_TASK],
                             seed=cfg.seed, split_seed=cfg.seed, score=cfg.calibrate_beta))
    stage.finish(stats_file=str(stage.dir / "stats.json"), items=stats.get("items"))


def _model(cfg: QuickstartConfig, stage: Stage) -> None:
    from cavpref.models.tiny import build_tiny_qwen_omni

    build_tiny_qwen_omni(
        stage.dir, hidden_size=cfg.hidden_size, num_hidden_layers=cfg.num_hidden_layers,
        num_attention_heads=cfg.num_attention_heads, num_key_value_heads=cfg.num_key_value_heads,
        intermediate_size=cfg.intermediate_size, vision_hidden_size=cfg.vision_hidden_size,
        vision_depth=cfg.vision_depth, audio_d_model=cfg.audio_d_model, audio_layers=cfg.audio_layers,
        frame_pixels=cfg.frame_size * cfg.frame_size, seed=cfg.seed,
    )
    stage.finish()


def _recipe(cfg: QuickstartConfig, *, method: str, model: Path, data: Path, world: Path, out: Path,
            steps: int, lr: float, tasks: list[str]) -> dict:
    beta = {} if cfg.calibrate_beta and method.startswith("cavpref") else {
        "beta": cfg.beta, "beta_y": cfg.beta, "beta_v": cfg.beta, "beta_a": cfg.beta}
    return {
        "method": method, **beta,
        "train_dataset": str(data / "preferences"), "train_tasks": tasks, "media_root": str(world),
        "output_dir": str(out), "learning_rate": lr, "max_steps": steps, "lr_scheduler_type": "cosine",
        "warmup_steps": max(1, steps // 20), "per_device_train_batch_size": cfg.batch_size, "seed": cfg.seed,
        "data_seed": cfg.seed, "logging_steps": max(1, steps // 20), "save_strategy": "steps",
        "save_steps": max(1, steps // 2), "save_total_limit": 1, "use_cpu": True, "bf16": False,
        "activation_checkpointing": False, "dataloader_num_workers": 0, "report_to": "none",
        "model": {"model_name_or_path": str(model), "dtype": "float32", "lora_r": 0,
                  "num_frames": cfg.num_frames, "frame_height": cfg.frame_size, "frame_width": cfg.frame_size},
    }


def _train(cfg: QuickstartConfig, stage: Stage, recipe: dict) -> None:
    from cavpref.train import main as train_main

    stage.dir.mkdir(parents=True, exist_ok=True)
    path = stage.dir.parent / "recipes" / f"{stage.name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    argv = [str(path)]
    if any(stage.dir.glob("checkpoint-*")):
        argv += ["--resume_from_checkpoint", "last"]
    code = train_main(argv)
    if code:
        raise RuntimeError(f"training stage {stage.name} failed (exit {code}); recipe {path}")
    stage.finish(recipe=str(path))


def _evaluate(cfg: QuickstartConfig, stage: Stage, model: Path, data: Path, world: Path, label: str) -> dict:
    from eval.pipeline import EvalArgs, evaluate

    args = EvalArgs(model=str(model), data=str(data), output=str(stage.dir), tasks=[*TASKS, CLEAN_TASK],
                    setting="instruction", circular=True, limit=cfg.eval_limit, mode=cfg.eval_mode, label=label,
                    media_root=str(world), num_frames=cfg.num_frames, frame_height=cfg.frame_size,
                    frame_width=cfg.frame_size, max_new_tokens=16, no_judge=True)
    results = evaluate(args)
    stage.finish(label=label)
    return results


def run(cfg: QuickstartConfig) -> dict:
    root = Path(cfg.out)
    root.mkdir(parents=True, exist_ok=True)
    (root / "quickstart_config.json").write_text(json.dumps(asdict(cfg), indent=1))
    timings: dict[str, float] = {}

    def stage(name: str, fn, *args) -> Stage:
        st = Stage(root, name)
        if st.done:
            _say(f"{name}: done before, reused ({st.dir})")
            return st
        _say(f"{name}: running ...")
        t0 = time.perf_counter()
        fn(cfg, st, *args)
        timings[name] = time.perf_counter() - t0
        _say(f"{name}: finished in {timings[name]:.1f} s")
        return st

    world = stage("world", _world).dir
    data = stage("data", _prep, world).dir
    init = stage("model_init", _model).dir
    start = stage("start", _train, _recipe(cfg, method="sft", model=init, data=data, world=world,
                                           out=root / "start", steps=cfg.sft_steps, lr=cfg.sft_learning_rate,
                                           tasks=[CLEAN_TASK])).dir
    trained = {}
    for method in cfg.methods:
        trained[method] = stage(method, _train, _recipe(
            cfg, method=method, model=start, data=data, world=world, out=root / method, steps=cfg.pref_steps,
            lr=cfg.pref_learning_rate, tasks=list(TASKS))).dir
    runs = {}
    for name, model in {"start": start, **trained}.items():
        runs[name] = stage(f"eval/{name}", _evaluate, model, data, world, LABELS[name]).dir
    report = write_report(cfg, root, runs, timings)
    _say(f"report: {report}")
    return {"report": str(report), "runs": {k: str(v) for k, v in runs.items()}, "timings": timings}


def write_report(cfg: QuickstartConfig, root: Path, runs: dict[str, Path], timings: dict[str, float]) -> Path:
    from eval.report import compare

    results = {name: json.loads((path / "results.json").read_text()) for name, path in runs.items()}
    names = list(results)
    table = compare([results[n] for n in names], [LABELS[n] for n in names], setting="instruction")
    lines = ["# cavpref quickstart", "", f"config: `{json.dumps(asdict(cfg))}`", "",
             "## Table 5 layout (instruction setting; difference from the starting model)", "", table, ""]
    lines += ["## Stage wall time (this invocation)", "", "| stage | seconds |", "| --- | --- |"]
    lines += [f"| {k} | {v:.1f} |" for k, v in timings.items()]
    path = root / "report.md"
    path.write_text("\n".join(lines) + "\n")
    print(table)
    return path


def main(argv: list[str] | None = None) -> int:
    from transformers import HfArgumentParser

    (cfg,) = HfArgumentParser(QuickstartConfig).parse_args_into_dataclasses(args=argv)
    run(cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
