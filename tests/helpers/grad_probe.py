"""The gradient of one optimizer step, for the batch-shape property test (no tests here).

``step_gradients(cases, fixtures)`` trains each case for one optimizer step on the same data and returns the
gradient the optimizer would apply (after DDP's all-reduce, no clipping), flattened. Runnable as a script under
``accelerate launch`` (``tests/helpers/grad_probe.py OUT.pt FIXTURE_DIR CASES.json``) so the same cases run on
real gloo processes; rank 0 writes ``{name: gradient}`` to OUT.pt."""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path

import torch
from transformers import TrainerCallback

from tests.helpers import trainer_fixtures as F  # under accelerate launch: PYTHONPATH holds the repository

# The user example: 8 preference rows, mixed tasks (MVIT twice).
MIXED_TASKS = ("MVIT", "MAIT", "MVT", "MAT", "MCIT", "COT-Swap", "ICIT", "MVIT")


def datasets():
    """mixed: the 8 rows above; task_homogeneous: 8 COT-Swap + 8 MVIT rows (one task per optimizer batch)."""
    from datasets import Dataset

    pool = F.examples(2)
    picked, seen = [], {}
    for t in MIXED_TASKS:
        rows = [e for e in pool if e.task == t]
        picked.append(rows[seen.get(t, 0)])
        seen[t] = seen.get(t, 0) + 1
    homogeneous = [e for e in F.examples(8, seed=1) if e.task in ("COT-Swap", "MVIT")]
    return {
        "mixed": Dataset.from_list([e.to_row() for e in picked]),
        "task_homogeneous": Dataset.from_list([e.to_row() for e in homogeneous]),
    }


class _Grab(TrainerCallback):
    """The flat gradient right before the optimizer step (after DDP's all-reduce; clipping is off)."""

    def __init__(self):
        self.grad = None

    def on_pre_optimizer_step(self, args, state, control, model=None, **kw):
        if self.grad is None:
            self.grad = torch.cat(
                [
                    p.grad.detach().reshape(-1).clone()
                    for _, p in model.named_parameters()
                    if p.grad is not None
                ]
            )


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    """The relative difference ``|a − b| / |b|`` of two flat gradients."""
    return float((a - b).norm() / b.norm())


def step_gradients(cases: list[dict], fixtures: dict[str, Path], out_dir: Path) -> dict[str, torch.Tensor]:
    """``cases``: dicts with ``name``, ``sampler`` and any CAVPrefConfig overrides (batch size, accumulation...)."""
    from cavpref.config import CAVPrefConfig
    from cavpref.media.decode import FramePolicy
    from cavpref.models import AVModelArguments, load_model_io
    from cavpref.trainer import CAVPrefTrainer

    data = datasets()
    model_io = load_model_io(AVModelArguments(model_name_or_path=str(fixtures["model"]), dtype="float32"))
    out = {}
    for case in cases:
        kw = dict(case)
        name = kw.pop("name")
        args = CAVPrefConfig(
            output_dir=str(out_dir / name),
            max_steps=1,
            bf16=False,
            use_cpu=True,
            activation_checkpointing=False,
            report_to="none",
            logging_steps=1,
            learning_rate=1e-3,
            optim="sgd",
            max_grad_norm=0.0,
            save_strategy="no",
            disable_tqdm=True,
            media_root=str(fixtures["media"]),
            dataloader_num_workers=0,
            seed=0,
            # the reference stays precomputed (the exact normaliser's pass is the policy's only), cached once
            precompute_ref_log_probs=True,
            ref_cache_dir=str(out_dir / "ref_logps"),
            **kw,
        )
        model = load_model_io(
            AVModelArguments(model_name_or_path=str(fixtures["model"]), dtype="float32")
        ).model
        grab = _Grab()
        tr = CAVPrefTrainer(
            model,
            model_io,
            args=args,
            train_dataset=data[args.sampler],
            callbacks=[grab],
            frames=FramePolicy(num_frames=2),
        )
        # Move the policy away from its (already copied) reference: non-zero margins, so the soft-min / soft-max
        # weights differ between samples and a per-micro-batch normaliser or min-max would show.
        gen = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for p in tr.model.parameters():
                p.add_(0.05 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
        tr.train()
        out[name] = grab.grad
    return out


if __name__ == "__main__":
    out_file, fixture_dir, cases_file = sys.argv[1:4]
    fx = F.build_all(Path(fixture_dir))
    grads = step_gradients(json.loads(Path(cases_file).read_text()), fx, Path(out_file).parent / "runs")
    from accelerate import PartialState

    state = PartialState()
    if state.is_main_process:
        torch.save(grads, out_file)
    # a gloo group left to interpreter teardown aborts a rank now and then ("terminate called without an active
    # exception"): wait for every rank, free the trainers' DDP wrappers (reference cycles: they hold the group),
    # then destroy it, as `cavpref train` does
    state.wait_for_everyone()
    gc.collect()
    state.destroy_process_group()
