"""Model I/O registry: name → model_io class, and model_type → name, so ``load_model_io(folder)`` picks the right
model_io from the folder's ``config.json``. A user's own AVLLM registers itself with one decorator:

    @register_model_io("my_avllm", model_types=("my_avllm",))
    class MyModelIO(ChatModelIO): ...

Built-ins are registered by import path so that importing the registry stays cheap.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable
from typing import Any

from transformers.utils import logging

from cavpref.models.base import AVModelIO
from cavpref.models.config import AVModelArguments

logger = logging.get_logger(__name__)

_MODEL_IOS: dict[str, type[AVModelIO] | str] = {
    "qwen2_5_omni": "cavpref.models.qwen_omni:QwenOmniModelIO",
    "composed": "cavpref.models.composed_io:ComposedAVModelIO",
}
_MODEL_TYPES: dict[str, str] = {
    "qwen2_5_omni_thinker": "qwen2_5_omni",
    "qwen2_5_omni": "qwen2_5_omni",
    "cavpref_composed": "composed",
}


def register_model_io(
    name: str, model_io: type[AVModelIO] | str | None = None, *, model_types: Iterable[str] = ()
) -> Callable | type:
    """Register ``model_io`` (a class or "module:Class") under ``name`` for the given config model_types.
    Without ``model_io`` it returns a class decorator."""

    def _register(cls: type[AVModelIO] | str):
        _MODEL_IOS[name] = cls
        for mt in model_types:
            _MODEL_TYPES[mt] = name
        return cls

    return _register if model_io is None else _register(model_io)


def registered_model_ios() -> dict[str, list[str]]:
    """name → the config model_types that select it."""
    return {n: sorted(mt for mt, a in _MODEL_TYPES.items() if a == n) for n in _MODEL_IOS}


def model_io_class(name: str) -> type[AVModelIO]:
    if name not in _MODEL_IOS:
        raise KeyError(f"unknown model_io {name!r}; registered: {sorted(_MODEL_IOS)}")
    target = _MODEL_IOS[name]
    if isinstance(target, str):
        module, cls = target.split(":")
        target = _MODEL_IOS[name] = getattr(importlib.import_module(module), cls)
    return target


def check_model_path(path_or_id: str, key: str = "model_name_or_path") -> None:
    """Refuse, before anything loads, a ``model_name_or_path`` that is neither a model folder nor a hub id: a
    local path (``./x``, ``/x``, ``~/x``, ``a/b/c``, or ``a/b`` where ``a`` is a local folder) that does not
    exist, a bare name without ``org/`` (which the hub client would retry for a minute before failing), or a
    folder that holds no model (another stage's output: ``not_a_model``). ``org/name`` is left to the hub (or
    its cache)."""
    if not path_or_id:
        raise ValueError("model_name_or_path is not set: add it to the recipe or pass --model_name_or_path")
    if os.path.isdir(path_or_id):
        problem = not_a_model(path_or_id)
        if problem:
            raise ValueError(f"{key} {path_or_id!r} is {problem}")
        return
    head = path_or_id.split("/", 1)[0]
    local = (
        path_or_id.startswith((".", "/", "~"))
        or path_or_id.count("/") != 1
        or (os.path.isdir(head) and not os.path.isdir(path_or_id))
    )
    if local:
        raise FileNotFoundError(
            f"{key} {path_or_id!r}: no such folder or Hub id (a tiny offline model: `cavpref model "
            f"tiny-qwen --out {path_or_id}`; a hub model: its id, e.g. Qwen/Qwen2.5-Omni-7B)"
        )


# what another stage's folder holds, by a file only that stage writes (a folder passed as --model by mistake)
_NOT_MODELS = (
    ("world.json", "a `cavpref world` folder (the source clips)"),
    ("lookup_tables.json", "a `cavpref prep` folder (benchmark items and preference rows)"),
    ("dataset_dict.json", "a `datasets` folder (save_to_disk)"),
    ("state.json", "a `datasets` folder (save_to_disk)"),
    ("results.json", "a `cavpref eval` run folder"),
)


def not_a_model(folder: str) -> str | None:
    """Why ``folder`` is no model folder (it has no ``config.json``), naming what it is instead; None for a
    model folder."""
    if os.path.isfile(os.path.join(folder, "config.json")):
        return None
    what = next((w for f, w in _NOT_MODELS if os.path.isfile(os.path.join(folder, f))), None)
    hint = "pass a model folder (one with config.json, e.g. `cavpref model tiny-qwen --out DIR`) or a Hub id"
    checkpoints = sorted(
        (e for e in os.listdir(folder) if e.startswith("checkpoint-") and e[11:].isdigit()),
        key=lambda e: int(e[11:]),
    )
    if what is None and checkpoints:
        last = os.path.join(folder, checkpoints[-1])
        return f"a training run folder without a final model, not a model; its last checkpoint is {last}"
    return f"{what or 'a folder without config.json'}, not a model; {hint}"


def model_io_name_for(path_or_id: str) -> str:
    """The registered model_io for a checkpoint, from the ``model_type`` in its config.json."""
    from transformers import PreTrainedConfig

    check_model_path(path_or_id, key="model")
    try:
        raw, _ = PreTrainedConfig.get_config_dict(path_or_id)
    except (OSError, ValueError) as err:
        raise ValueError(f"{path_or_id}: cannot read config.json to pick a model I/O ({err})") from err
    model_type = raw.get("model_type")
    if model_type is None:
        raise ValueError(f"{path_or_id}/config.json: no model_type (not a transformers model config)")
    if model_type not in _MODEL_TYPES:
        raise ValueError(
            f"{path_or_id}/config.json: model_type {model_type!r} has no registered model_io "
            f"(known: {sorted(_MODEL_TYPES)}); register one with register_model_io(..., model_types=...)"
        )
    return _MODEL_TYPES[model_type]


def load_model_io(
    name_or_path: str | AVModelArguments, *, model_io: str | None = None, **kwargs: Any
) -> AVModelIO:
    """Load processor + model from a hub id or folder into the model_io its config selects (or ``model_io``).
    ``kwargs`` are AVModelArguments fields; a AVModelArguments may be passed instead of a path. The model is
    ``model_io.model``."""
    trusted = (
        name_or_path.trust_remote_code
        if isinstance(name_or_path, AVModelArguments)
        else kwargs.get("trust_remote_code", False)
    )
    if trusted:  # the folder's own Python files will be imported and run
        folder = (
            name_or_path.model_name_or_path if isinstance(name_or_path, AVModelArguments) else name_or_path
        )
        logger.warning(f"trust_remote_code is on: running the Python code shipped in {folder}")
    check_model_path(
        name_or_path.model_name_or_path if isinstance(name_or_path, AVModelArguments) else name_or_path,
        key="model",
    )
    if isinstance(name_or_path, AVModelArguments):
        cfg = name_or_path
        name = model_io or cfg.model_io or model_io_name_for(cfg.model_name_or_path)
        return model_io_class(name).from_pretrained(cfg.model_name_or_path, config=cfg)
    name = model_io or model_io_name_for(name_or_path)
    return model_io_class(name).from_pretrained(name_or_path, **kwargs)
