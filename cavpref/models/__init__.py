"""Model adapters: the protocol (``AVAdapter``, ``Row``), the Qwen2.5-Omni thinker adapter, the composed
"bring your own AVLLM" example, loading (``load_adapter``), fine-tuning setup (``prepare_model``) and tiny
offline models. Heavy modules are imported on first use."""

from __future__ import annotations

import importlib

from cavpref.models.base import AdapterError, AVAdapter, Row
from cavpref.models.config import ModelConfig
from cavpref.models.registry import adapter_class, load_adapter, register_adapter, registered_adapters

_LAZY = {
    "ChatAdapter": "cavpref.models.chat",
    "EncodedMedia": "cavpref.models.common",
    "response_logps": "cavpref.models.common",
    "QwenOmniAdapter": "cavpref.models.qwen_omni",
    "ComposedAVAdapter": "cavpref.models.composed_adapter",
    "ComposedAVConfig": "cavpref.models.composed",
    "ComposedAVForCausalLM": "cavpref.models.composed",
    "ComposedAVProcessor": "cavpref.models.composed",
    "prepare_model": "cavpref.models.prepare",
    "build_tiny_qwen_omni": "cavpref.models.tiny",
    "build_tiny_composed": "cavpref.models.tiny",
    "demo_media": "cavpref.models.tiny",
}

__all__ = ["AdapterError", "AVAdapter", "Row", "ModelConfig", "adapter_class", "load_adapter", "register_adapter",  # noqa: PLE0604
           "registered_adapters", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'cavpref.models' has no attribute {name!r}")
