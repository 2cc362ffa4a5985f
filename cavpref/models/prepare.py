"""``prepare_model``: make a loaded model trainable as a AVModelArguments says — LoRA (PEFT) on the language model,
encoders frozen or trained, projectors optionally trained.

With LoRA, everything that trains besides LoRA (unfrozen encoders, projectors) goes into PEFT's
``modules_to_save``: PEFT keeps an untouched original next to the trained copy, so ``disable_adapter()`` gives
exactly the base model — the reference policy of DPO / CAVPref needs no second model in memory.
Without LoRA (``lora_r=0``) the whole model trains except frozen encoders and (unless ``train_projectors``)
projectors; the reference must then be a separate frozen copy.
"""

from __future__ import annotations

import re

import torch

from cavpref.models.config import AVModelArguments


def _inside(name: str, parents: list[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in parents)


def lora_target_pattern(language_model_prefix: str, target_modules: list[str]) -> str:
    """PEFT regex (matched with ``re.fullmatch`` against module names) for the target linears of the language
    model only: vision / audio encoders often reuse names such as ``q_proj`` or ``gate_proj``."""
    names = "|".join(re.escape(t) for t in target_modules)
    return rf"{re.escape(language_model_prefix)}\.(?:.*\.)?(?:{names})"


def prepare_model(
    model: torch.nn.Module, config: AVModelArguments, model_io, *, gradient_checkpointing: bool = False
) -> torch.nn.Module:
    """Apply ``config`` to ``model`` (laid out as ``model_io`` — an instance or class — describes) and return the
    model to train: a ``peft.PeftModel`` when ``config.lora_r > 0``, else ``model`` itself.

    ``gradient_checkpointing`` is for Python callers that train outside ``CAVPrefTrainer``; under the trainer the
    one switch is ``CAVPrefConfig.activation_checkpointing`` (the Trainer enables it)."""
    encoders = ([] if config.freeze_vision else list(model_io.vision_modules)) + (
        [] if config.freeze_audio else list(model_io.audio_modules)
    )
    projectors = [
        p for p in model_io.projector_modules if config.train_projectors and not _inside(p, encoders)
    ]
    for name in encoders + projectors:
        model.get_submodule(name)  # fail early, naming the module, if the layout is wrong
    if gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if config.lora_r <= 0:
        model.requires_grad_(True)
        for name in model_io.vision_modules if config.freeze_vision else ():
            model.get_submodule(name).requires_grad_(False)
        for name in model_io.audio_modules if config.freeze_audio else ():
            model.get_submodule(name).requires_grad_(False)
        for name in model_io.projector_modules:
            model.get_submodule(name).requires_grad_(config.train_projectors)
        return model

    from peft import LoraConfig, get_peft_model

    lora = LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        bias="none",
        target_modules=lora_target_pattern(model_io.language_model_prefix, config.lora_target_modules),
        modules_to_save=(encoders + projectors) or None,
    )
    peft_model = get_peft_model(model, lora)
    if gradient_checkpointing:
        peft_model.enable_input_require_grads()
    return peft_model
