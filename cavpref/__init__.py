"""cavpref: trustworthy audio-visual LLMs — AVTrustBench data, CAVPref training, evaluation.

The public training API is importable from the top level (``from cavpref import CAVPrefTrainer``). The names are
resolved on first use (module ``__getattr__``), so ``import cavpref`` stays cheap and ``import cavpref.eval`` does
not load TRL."""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_PUBLIC = {
    "CAVPrefTrainer": "cavpref.trainer",
    "CAVPrefConfig": "cavpref.config",
    "DataArguments": "cavpref.train",
    "AVModelArguments": "cavpref.models.config",
    "CAVPrefCollator": "cavpref.collator",
    "PreferenceBatchSampler": "cavpref.collator",
    "cavpref_loss": "cavpref.loss",
    "calibrate_beta": "cavpref.loss",
    "switches_for": "cavpref.loss",
    "CAVPrefLossOutput": "cavpref.loss",
    "AVModelIO": "cavpref.models.base",
    "register_model_io": "cavpref.models.registry",
    "load_model_io": "cavpref.models.registry",
    "prepare_model": "cavpref.models.prepare",
    "PreferenceExample": "cavpref.data",
}

__all__ = ["__version__", *_PUBLIC]  # noqa: PLE0604


def __getattr__(name: str):
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'cavpref' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
