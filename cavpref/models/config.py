"""`AVModelArguments`: everything about the model that a recipe sets — where it comes from, how it is fed, what
trains.

One flat dataclass (HfArgumentParser-friendly: a recipe key and a command-line flag are the same thing), parsed
next to ``CAVPrefConfig`` (a ``DPOConfig``) and ``DataArguments`` in one flat recipe, so no field name may repeat
one of theirs (tests/core/test_recipes.py checks). It is read by three places: ``load_model_io`` (checkpoint, dtype,
attention, how media become tokens), ``prepare_model`` (LoRA / freezing) and the collator (``frame_policy()``:
which frames the decoder reads).

Two settings live only in the training config, with one meaning each: ``trust_remote_code`` (TRL's field; copied
onto these arguments by ``cavpref train`` and settable with ``from_kwargs`` / ``load_model_io(...,
trust_remote_code=True)`` from Python) and ``activation_checkpointing`` (``CAVPrefConfig``; the Trainer enables it).
The row-length cap is ``model_max_length`` (TRL's ``max_length`` means something else: a truncation length).

Not ``trl.ModelConfig`` (TRL's model arguments for text LMs): hence the name.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import ClassVar

import torch

from cavpref.media.args import MediaArguments

MISSING_MODALITY_POLICIES = ("drop", "zero_dummy")
DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
}
DEFAULT_LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


@dataclass
class AVModelArguments(MediaArguments):
    """How to load, feed and fine-tune one audio-visual LLM (the frame fields come from ``MediaArguments``)."""

    # keys that may change on resume (cavpref/resume_guard.py: every other key defines the run), with why
    MAY_CHANGE_ON_RESUME: ClassVar[dict[str, str]] = {
        "feature_cache_size": "model inputs kept in memory: the same values (tests/models/test_feature_cache.py)",
    }

    model_name_or_path: str = field(default="", metadata={"help": "HF hub id or local folder"})
    model_io: str | None = field(
        default=None,
        metadata={"help": "registered model I/O name (register_model_io); None: from config.json"},
    )
    dtype: str = field(
        default="auto",
        metadata={"help": "auto (bf16 on a bf16 GPU, else fp32) | float32 | bfloat16 | float16"},
    )
    attn_implementation: str | None = field(
        default=None, metadata={"help": "eager | sdpa | flash_attention_2"}
    )
    # Not a command-line key: the one ``--trust_remote_code`` is TRL's (CAVPrefConfig), copied here by ``cavpref train``.
    trust_remote_code: bool = field(
        default=False,
        init=False,
        metadata={"help": "allow hub code (set from CAVPrefConfig.trust_remote_code)"},
    )

    # how rows become model inputs
    missing_modality: str = field(default="drop", metadata={"help": "drop | zero_dummy (ZeRO-3 / DDP safe)"})
    shared_prefix: bool = field(
        default=True,
        metadata={
            "help": "score each distinct (prompt, media) prefix once: one packed sequence per prefix with a block "
            "attention mask (exact; falls back to full rows, with a logged reason, on attention kernels "
            "without 4D masks such as flash_attention_2)"
        },
    )
    feature_cache_size: int = field(
        default=0,
        metadata={
            "help": "distinct decoded media whose model inputs (video patches, audio features) are kept and reused "
            "per process, keyed by their content (exact; ~0.6 MB each at the perceiving quickstart's sizes); 0 = "
            "featurise every batch's media afresh"
        },
    )
    use_audio_in_video: bool = field(
        default=False, metadata={"help": "Qwen-Omni: interleave audio with video tokens"}
    )
    system_prompt: str | None = field(
        default=None, metadata={"help": "None: the model_io's default system prompt"}
    )
    video_fps: float = field(default=2.0, metadata={"help": "fps assumed when frames carry no timestamps"})
    video_min_pixels: int | None = field(
        default=None, metadata={"help": "per-frame pixel floor (None: the model I/O default)"}
    )
    video_max_pixels: int | None = field(
        default=None,
        metadata={
            "help": "per-frame pixel cap (None: the model I/O default; Qwen: min(checkpoint's longest_edge, 768*28*28))"
        },
    )
    audio_max_seconds: float | None = field(
        default=30.0,
        metadata={
            "help": "audio fed per clip: cut at / padded to this many seconds (Qwen's extractor pads to its "
            "chunk_length, 300 s for the 7B); None: the extractor's chunk_length"
        },
    )
    model_max_length: int | None = field(
        default=None,
        metadata={
            "help": "rows longer than this (tokens) are refused, named (None: the model's context size)"
        },
    )

    # what trains
    lora_r: int = field(
        default=16, metadata={"help": "0 disables LoRA (full fine-tuning of the language model)"}
    )
    lora_alpha: int = field(
        default=32, metadata={"help": "LoRA scaling numerator (scale = lora_alpha / lora_r)"}
    )
    lora_dropout: float = field(default=0.05, metadata={"help": "dropout on the LoRA input"})
    lora_target_modules: list[str] = field(
        default_factory=lambda: list(DEFAULT_LORA_TARGETS),
        metadata={"help": "linear-layer names inside the language model"},
    )
    train_projectors: bool = field(default=False, metadata={"help": "train the modality projectors fully"})
    freeze_vision: bool = field(default=True, metadata={"help": "keep the vision encoder frozen"})
    freeze_audio: bool = field(default=True, metadata={"help": "keep the audio encoder frozen"})

    def __post_init__(self):
        if self.missing_modality not in MISSING_MODALITY_POLICIES:
            raise ValueError(
                f"AVModelArguments.missing_modality: {self.missing_modality!r} is not one of "
                f"{MISSING_MODALITY_POLICIES}"
            )
        if self.dtype != "auto" and self.dtype not in DTYPES:
            raise ValueError(
                f"AVModelArguments.dtype: {self.dtype!r} is not 'auto' or one of {sorted(DTYPES)}"
            )
        super().__post_init__()

    def torch_dtype(self) -> torch.dtype:
        """``auto`` means bf16 where the GPU supports it (training numerics stay fp32 in the loss), else fp32."""
        if self.dtype == "auto":
            if torch.cuda.is_available() and torch.cuda.is_bf16_supported():
                return torch.bfloat16
            return torch.float32
        return DTYPES[self.dtype]

    @classmethod
    def from_kwargs(cls, model_name_or_path: str, **kwargs) -> AVModelArguments:
        """Build from keyword overrides, naming any key that is not a field (typos fail loudly)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            raise TypeError(f"AVModelArguments: unknown option(s) {unknown}; valid: {sorted(names)}")
        trust = kwargs.pop("trust_remote_code", False)
        out = cls(model_name_or_path=model_name_or_path, **kwargs)
        out.trust_remote_code = bool(trust)
        return out
