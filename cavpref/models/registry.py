"""Adapter registry: name → adapter class, and model_type → name, so ``load_adapter(folder)`` picks the right
adapter from the folder's ``config.json``. A user's own AVLLM registers itself with one decorator:

    @register_adapter("my_avllm", model_types=("my_avllm",))
    class MyAdapter(ChatAdapter): ...

Built-ins are registered by import path so that importing the registry stays cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any

from transformers.utils import logging

from cavpref.models.base import AVAdapter
from cavpref.models.config import ModelConfig

logger = logging.get_logger(__name__)

_ADAPTERS: dict[str, type[AVAdapter] | str] = {
    "qwen2_5_omni": "cavpref.models.qwen_omni:QwenOmniAdapter",
    "composed": "cavpref.models.composed_adapter:ComposedAVAdapter",
}
_MODEL_TYPES: dict[str, str] = {
    "qwen2_5_omni_thinker": "qwen2_5_omni",
    "qwen2_5_omni": "qwen2_5_omni",
    "cavpref_composed": "composed",
}


def register_adapter(name: str, adapter: type[AVAdapter] | str | None = None, *,
                     model_types: Iterable[str] = ()) -> Callable | type:
    """Register ``adapter`` (a class or "module:Class") under ``name`` for the given config model_types.
    Without ``adapter`` it returns a class decorator."""

    def _register(cls: type[AVAdapter] | str):
        _ADAPTERS[name] = cls
        for mt in model_types:
            _MODEL_TYPES[mt] = name
        return cls

    return _register if adapter is None else _register(adapter)


def registered_adapters() -> dict[str, list[str]]:
    """name → the config model_types that select it."""
    return {n: sorted(mt for mt, a in _MODEL_TYPES.items() if a == n) for n in _ADAPTERS}


def adapter_class(name: str) -> type[AVAdapter]:
    if name not in _ADAPTERS:
        raise KeyError(f"unknown adapter {name!r}; registered: {sorted(_ADAPTERS)}")
    target = _ADAPTERS[name]
    if isinstance(target, str):
        module, cls = target.split(":")
        target = _ADAPTERS[name] = getattr(importlib.import_module(module), cls)
    return target


def adapter_name_for(path_or_id: str) -> str:
    """The registered adapter for a checkpoint, from the ``model_type`` in its config.json."""
    from transformers import PreTrainedConfig

    try:
        raw, _ = PreTrainedConfig.get_config_dict(path_or_id)
    except (OSError, ValueError) as err:
        raise ValueError(f"{path_or_id}: cannot read config.json to pick an adapter ({err})") from err
    model_type = raw.get("model_type")
    if model_type not in _MODEL_TYPES:
        raise ValueError(f"{path_or_id}/config.json: model_type {model_type!r} has no registered adapter "
                         f"(known: {sorted(_MODEL_TYPES)}); register one with register_adapter(..., model_types=...)")
    return _MODEL_TYPES[model_type]


def load_adapter(name_or_path: str | ModelConfig, *, adapter: str | None = None, **kwargs: Any) -> AVAdapter:
    """Load processor + model from a hub id or folder into the adapter its config selects (or ``adapter``).
    ``kwargs`` are ModelConfig fields; a ModelConfig may be passed instead of a path. The model is
    ``adapter.model``."""
    trusted = name_or_path.trust_remote_code if isinstance(name_or_path, ModelConfig) else \
        kwargs.get("trust_remote_code", False)
    if trusted:  # the folder's own Python files will be imported and run
        folder = name_or_path.model_name_or_path if isinstance(name_or_path, ModelConfig) else name_or_path
        logger.warning(f"trust_remote_code is on: running the Python code shipped in {folder}")
    if isinstance(name_or_path, ModelConfig):
        cfg = name_or_path
        name = adapter or cfg.adapter or adapter_name_for(cfg.model_name_or_path)
        return adapter_class(name).from_pretrained(cfg.model_name_or_path, config=cfg)
    name = adapter or adapter_name_for(name_or_path)
    return adapter_class(name).from_pretrained(name_or_path, **kwargs)
