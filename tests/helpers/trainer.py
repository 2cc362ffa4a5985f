"""The trainer tests' builders (no tests here): a ``CAVPrefConfig`` for a tiny CPU run, a fresh tiny model,
a ``CAVPrefTrainer`` on the shared inputs (the ``fx`` fixture, tests/conftest.py)."""

from __future__ import annotations

from cavpref.config import CAVPrefConfig


def frames():
    from cavpref.media.decode import FramePolicy

    return FramePolicy(num_frames=2)


def config(tmp_path, **kw) -> CAVPrefConfig:
    base = {
        "output_dir": str(tmp_path / "out"),
        "per_device_train_batch_size": 4,
        "max_steps": 1,
        "bf16": False,
        "use_cpu": True,
        "activation_checkpointing": False,
        "report_to": "none",
        "logging_steps": 1,
        "learning_rate": 1e-3,
        "save_strategy": "no",
        "disable_tqdm": True,
        "media_root": ".",
    }
    base.update(kw)
    return CAVPrefConfig(**base)


def fresh_model(fx):
    from cavpref.models import AVModelArguments, load_model_io

    return load_model_io(AVModelArguments(model_name_or_path=str(fx["model"]), dtype="float32")).model


def trainer(fx, model_io, dataset, tmp_path, model=None, **kw):
    from cavpref.trainer import CAVPrefTrainer

    args = config(tmp_path, media_root=str(fx["media"]), **kw)
    return CAVPrefTrainer(
        model if model is not None else fresh_model(fx),
        model_io,
        args=args,
        train_dataset=dataset,
        frames=frames(),
    )
