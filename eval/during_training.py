"""Trust during training: a fixed held-out slice of AVTrustBench scored every N optimizer steps.

Why: researchers ablate λ and β, and the number they care about — paired trust, which blind abstention cannot
game — otherwise appears only after training, in a separate ``cavpref eval``. The learnability ladder showed
trust moving non-monotonically over a run (CAVPref's false abstention climbing while DPO's stays flat), so a
final number alone hides where a method went wrong. ms-swift evaluates during training generically
(``eval_use_evalscope``); this is the benchmark's own protocol, in-process, on the weights being trained.

What one evaluation is: ``cavpref eval avtrustbench`` in likelihood mode (CircularEval, shared prefixes, the
option reading ``trust_eval_option_score``) on the first ``trust_eval_limit`` items of each task and setting of
``trust_eval_data``'s ``trust_eval_split`` (CLEAN twins included), written to ``<output_dir>/trust/step-<N>``
(records, results.json, report.md: the same files as a standalone run). Its headline numbers are logged with
``Trainer.log`` — so they reach ``logs.jsonl`` and every ``report_to`` logger (TensorBoard, W&B, …) — as
``trust/<setting>/{paired,false_abstention,clean,separation}`` plus ``trust/seconds``, the evaluation's wall
time (``scripts/bench_trust_eval.py`` compares it with a training step).

The evaluation runs on the main process with the model unwrapped from its data-parallel wrapper, the others
waiting; ZeRO-3 (parameters sharded across ranks) is refused at start, as a one-process forward cannot gather
them. The same slice every time: the curve shows the model changing, not the items.
"""

from __future__ import annotations

import time
from pathlib import Path

from transformers import TrainerCallback

from cavpref.data import CLEAN_TASK
from cavpref.eval.backends import ModelIOBackend
from cavpref.eval.benchmarks.avtrustbench.reader import load_items
from cavpref.eval.metrics import primary
from cavpref.eval.pipeline import EvalArgs, evaluate
from cavpref.task_registry import task_names


def trust_metrics(results: dict) -> dict[str, float]:
    """The logged numbers of one evaluation: per setting paired trust (circular where run), CLEAN's
    false-abstention rate and accuracy, and the paired separation over all perturbed tasks (likelihood runs
    record it: ``metrics.separation``)."""
    out: dict[str, float] = {}
    metrics = results["metrics"]
    for setting, block in (metrics.get("trust") or {}).get("settings", {}).items():
        out[f"trust/{setting}/paired"] = primary(block["paired"])
        out[f"trust/{setting}/false_abstention"] = block["false_abstention"]
    for setting, block in metrics.get("settings", {}).items():
        clean = block.get("tasks", {}).get(CLEAN_TASK)
        if clean:
            out[f"trust/{setting}/clean"] = primary(clean)
    for setting, sep in metrics.get("separation", {}).items():
        out[f"trust/{setting}/separation"] = sep["value"]
    return {k: v for k, v in out.items() if v is not None}


class TrustEvalCallback(TrainerCallback):
    """Scores the held-out slice every ``every`` optimizer steps and at the last step (module docstring)."""

    def __init__(self, trainer, *, data: str, every: int, split: str, limit: int, option_score: str, media):
        if getattr(trainer, "is_deepspeed_enabled", False) and _zero3(trainer):
            raise ValueError(
                "trust_eval_steps: not under ZeRO-3 (the evaluation is one process's forward); evaluate the "
                "checkpoints with `cavpref eval avtrustbench` instead"
            )
        self.trainer = trainer
        self.every = every
        self.args = dict(
            benchmark="avtrustbench",
            data=data,
            tasks=list(task_names()),  # every declared task, CLEAN among them
            limit=limit,
            mode="likelihood",
            option_score=option_score,
            no_judge=True,
            no_html=True,
            **media,
        )
        self.split = split
        self.last_scored = -1
        self.check_items()

    def check_items(self) -> None:
        """Before the first step, not at step N: the slice exists and has CLEAN twins to pair with."""
        data, split = self.args["data"], self.split
        try:
            items = load_items(data, split=split).items
        except (FileNotFoundError, KeyError, ValueError) as err:
            raise ValueError(f"trust_eval_data {data!r} (split {split!r}): {err}") from None
        if not items:
            raise ValueError(
                f"trust_eval_data {data!r}: no {split!r} items (prep with --val_fraction 0.1 for a validation "
                "split, or set trust_eval_split)"
            )
        if not any(i.task == CLEAN_TASK for i in items):
            raise ValueError(
                f"trust_eval_data {data!r}: no CLEAN items in {split!r}, so no paired trust (prep with CLEAN "
                "among --tasks)"
            )

    def on_step_end(self, args, state, control, **kwargs):
        step = state.global_step
        if step != self.last_scored and (step % self.every == 0 or step >= state.max_steps):
            self.score(step, Path(args.output_dir) / "trust" / f"step-{step}")
        return control

    def score(self, step: int, out: Path) -> dict[str, float]:
        trainer = self.trainer
        self.last_scored = step
        metrics: dict[str, float] = {}
        if trainer.accelerator.is_main_process:
            start = time.perf_counter()
            model = trainer.accelerator.unwrap_model(trainer.model)
            was_training = model.training
            model.eval()
            try:
                eval_args = EvalArgs(output=str(out), label=f"step {step}", **self.args)
                backend = ModelIOBackend(trainer.model_io, model=model)
                results = evaluate(eval_args, {"split": self.split}, backend=backend, rank=0, world=1)
            finally:
                model.train(was_training)
            metrics = trust_metrics(results)
            metrics["trust/seconds"] = time.perf_counter() - start
            trainer.log(metrics)
        trainer.accelerator.wait_for_everyone()
        return metrics


def _zero3(trainer) -> bool:
    plugin = getattr(trainer.accelerator.state, "deepspeed_plugin", None)
    return plugin is not None and plugin.zero_stage == 3


def trust_callbacks(trainer, data_args, model_args) -> list[TrainerCallback]:
    """The ``cavpref.train.run`` extension: the trust evaluation when ``trust_eval_steps`` is set."""
    if not data_args.trust_eval_steps:
        return []
    media = {
        "media_root": trainer.args.media_root,
        "num_frames": model_args.num_frames,
        "frames_fps": model_args.frames_fps,
        "max_frames": model_args.max_frames,
        "frame_height": model_args.frame_height,
        "frame_width": model_args.frame_width,
    }
    return [
        TrustEvalCallback(
            trainer,
            data=data_args.trust_eval_data,
            every=data_args.trust_eval_steps,
            split=data_args.trust_eval_split,
            limit=data_args.trust_eval_limit,
            option_score=data_args.trust_eval_option_score,
            media=media,
        )
    ]


__all__ = ["TrustEvalCallback", "trust_callbacks", "trust_metrics"]
