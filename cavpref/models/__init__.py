"""Model I/O wrappers: the protocol (``AVModelIO``, ``Row``), the Qwen2.5-Omni thinker model I/O, the composed
"bring your own AVLLM" example, loading (``load_model_io``), fine-tuning setup (``prepare_model``) and tiny
offline models. Heavy modules are imported on first use.

A *model I/O* turns rows (text + decoded media) into one model's inputs and returns log-probs / generations; it is
not a PEFT adapter (LoRA adapters are PEFT's, see ``prepare_model``)."""

from __future__ import annotations

import importlib

from cavpref.models.base import AVModelIO, ModelIOError, Row
from cavpref.models.config import AVModelArguments
from cavpref.models.registry import load_model_io, model_io_class, register_model_io, registered_model_ios

_LAZY = {
    "ChatModelIO": "cavpref.models.chat",
    "EncodedMedia": "cavpref.models.common",
    "response_logps": "cavpref.models.common",
    "QwenOmniModelIO": "cavpref.models.qwen_omni",
    "ComposedAVModelIO": "cavpref.models.composed_io",
    "ComposedAVConfig": "cavpref.models.composed",
    "ComposedAVForCausalLM": "cavpref.models.composed",
    "ComposedAVProcessor": "cavpref.models.composed",
    "prepare_model": "cavpref.models.prepare",
    "build_tiny_qwen_omni": "cavpref.models.tiny",
    "build_tiny_composed": "cavpref.models.tiny",
    "demo_media": "cavpref.models.tiny",
}

__all__ = [  # noqa: PLE0604 - *_LAZY unpacks the lazy names (strings)
    "AVModelIO",
    "AVModelArguments",
    "ModelIOError",
    "Row",
    "load_model_io",
    "model_io_class",
    "register_model_io",
    "registered_model_ios",
    *_LAZY,
]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'cavpref.models' has no attribute {name!r}")
