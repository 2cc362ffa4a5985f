"""A composed AVLLM — the VideoLLaMA2 / video-SALMONN pattern — as a real transformers model.

Frames go through a vision encoder (any ``AutoModel`` vision tower, SigLIP by default), are pooled to
``tokens_per_frame`` tokens per frame and projected into the language model; audio log-mel features go through a
Whisper encoder, are pooled by ``audio_pool_stride`` and projected; both are scattered over their placeholder
tokens in the embedded prompt of ANY ``AutoModelForCausalLM``. It is a ``PreTrainedModel`` with its own config,
so ``save_pretrained`` / ``from_pretrained`` (safetensors) and the Auto classes work once this module is
imported. ``ComposedAVProcessor`` expands placeholders and featurises media, like a hub processor.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForCausalLM,
    AutoProcessor,
    BatchFeature,
    PreTrainedConfig,
    PreTrainedModel,
)
from transformers.configuration_utils import SubConfigSpec
from transformers.processing_utils import ProcessorMixin


class ComposedAVConfig(PreTrainedConfig):
    """Vision tower + Whisper audio encoder + causal LM, with the pooling that decides tokens per second."""

    model_type = "cavpref_composed"
    sub_configs_defaults = {  # noqa: RUF012 (a transformers ClassVar)
        "vision_config": SubConfigSpec(config_class=AutoConfig, model_type="siglip_vision_model"),
        "audio_config": SubConfigSpec(config_class=AutoConfig, model_type="whisper"),
        "text_config": SubConfigSpec(config_class=AutoConfig, model_type="qwen2"),
    }

    vision_config: dict | PreTrainedConfig | None = None
    audio_config: dict | PreTrainedConfig | None = None
    text_config: dict | PreTrainedConfig | None = None
    video_token_id: int = 0
    audio_token_id: int = 0
    tokens_per_frame: int = 4  # a square number: k×k average-pooled patch tokens per frame
    audio_pool_stride: int = 5  # encoder positions (20 ms each for Whisper) averaged into one LLM token
    initializer_range: float = 0.02
    tie_word_embeddings: bool = False


class Projector(nn.Sequential):
    """Linear-GELU-Linear, the LLaVA / VideoLLaMA2 connector."""

    def __init__(self, in_dim: int, out_dim: int):
        super().__init__(nn.Linear(in_dim, out_dim), nn.GELU(), nn.Linear(out_dim, out_dim))


def audio_tokens_for_frames(valid_frames: int, pool_stride: int) -> int:
    """LLM tokens for ``valid_frames`` mel frames: Whisper's stride-2 conv, then ceil-mode pooling."""
    return max(1, math.ceil(math.ceil(valid_frames / 2) / pool_stride))


class ComposedAVForCausalLM(PreTrainedModel):
    config: ComposedAVConfig
    config_class = ComposedAVConfig
    base_model_prefix = "composed"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _supports_flash_attn = True
    _supports_attention_backend = True

    def __init__(self, config: ComposedAVConfig):
        super().__init__(config)
        from transformers.models.whisper.modeling_whisper import WhisperEncoder

        self.vision_tower = AutoModel.from_config(config.vision_config)
        self.audio_tower = (
            WhisperEncoder(config.audio_config)
            if config.audio_config.model_type == "whisper"
            else AutoModel.from_config(config.audio_config)
        )
        hidden = config.text_config.hidden_size
        self.video_projector = Projector(config.vision_config.hidden_size, hidden)
        self.audio_projector = Projector(config.audio_config.d_model, hidden)
        self.language_model = AutoModelForCausalLM.from_config(config.text_config)
        # The language model generates; sharing its generation config lets trainers (TRL sets pad/eos ids on
        # ``model.generation_config``) and ``generate`` see one set of ids.
        self.generation_config = self.language_model.generation_config
        self.post_init()

    def get_input_embeddings(self) -> nn.Module:
        return self.language_model.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Module) -> None:
        self.language_model.set_input_embeddings(value)

    def get_output_embeddings(self) -> nn.Module:
        return self.language_model.get_output_embeddings()

    def get_video_features(
        self, pixel_values_videos: torch.Tensor, video_num_frames: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        """(sum T, 3, S, S) frames → one (T·tokens_per_frame, hidden) tensor per video. Leading non-patch tokens
        (CLIP's CLS, register tokens) are dropped: the patch grid is the last side² tokens."""
        pixel_values_videos = pixel_values_videos.to(self.vision_tower.dtype)
        patches = self.vision_tower(pixel_values=pixel_values_videos).last_hidden_state  # (F, P, D)
        side, k = math.isqrt(patches.shape[1]), math.isqrt(self.config.tokens_per_frame)
        patches = patches[:, patches.shape[1] - side * side :]
        n, _, d = patches.shape
        grid = patches.transpose(1, 2).reshape(n, d, side, side)
        pooled = F.adaptive_avg_pool2d(grid, k).flatten(2).transpose(1, 2)  # (F, k*k, D)
        tokens = self.video_projector(pooled)
        return tuple(t.reshape(-1, t.shape[-1]) for t in tokens.split(video_num_frames.tolist()))

    def get_audio_features(
        self, input_features: torch.Tensor, audio_num_tokens: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        """(N, mel, frames) log-mel → one (audio_num_tokens[i], hidden) tensor per audio (padding dropped)."""
        hidden = self.audio_tower(input_features.to(self.audio_tower.dtype)).last_hidden_state  # (N, S, D)
        s = self.config.audio_pool_stride
        pooled = F.avg_pool1d(hidden.transpose(1, 2), s, s, ceil_mode=True).transpose(1, 2)
        tokens = self.audio_projector(pooled)
        return tuple(tokens[i, :n] for i, n in enumerate(audio_num_tokens.tolist()))

    def _scatter(
        self,
        embeds: torch.Tensor,
        input_ids: torch.Tensor,
        token_id: int,
        feats: Sequence[torch.Tensor],
        name: str,
    ) -> torch.Tensor:
        mask = input_ids == token_id
        flat = torch.cat(list(feats)) if len(feats) else embeds.new_zeros(0, embeds.shape[-1])
        if int(mask.sum()) != flat.shape[0]:
            raise ValueError(f"{name}: {int(mask.sum())} placeholder tokens but {flat.shape[0]} feature rows")
        return embeds.masked_scatter(mask.unsqueeze(-1), flat.to(embeds.dtype))

    def embed(
        self,
        input_ids: torch.Tensor,
        pixel_values_videos: torch.Tensor | None = None,
        video_num_frames: torch.Tensor | None = None,
        input_features: torch.Tensor | None = None,
        audio_num_tokens: torch.Tensor | None = None,
        video_embeds: Sequence[torch.Tensor] | None = None,
        audio_embeds: Sequence[torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """Token embeddings with media features over the placeholders. ``video_embeds`` / ``audio_embeds``
        (one tensor per placeholder run, in order) skip the encoders — encoder-output reuse."""
        embeds = self.get_input_embeddings()(input_ids)
        if video_embeds is None and pixel_values_videos is not None:
            video_embeds = self.get_video_features(pixel_values_videos, video_num_frames)
        if audio_embeds is None and input_features is not None:
            audio_embeds = self.get_audio_features(input_features, audio_num_tokens)
        if video_embeds is not None or (input_ids == self.config.video_token_id).any():
            embeds = self._scatter(embeds, input_ids, self.config.video_token_id, video_embeds or (), "video")
        if audio_embeds is not None or (input_ids == self.config.audio_token_id).any():
            embeds = self._scatter(embeds, input_ids, self.config.audio_token_id, audio_embeds or (), "audio")
        return embeds

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        pixel_values_videos: torch.Tensor | None = None,
        video_num_frames: torch.Tensor | None = None,
        input_features: torch.Tensor | None = None,
        audio_num_tokens: torch.Tensor | None = None,
        video_embeds: Sequence[torch.Tensor] | None = None,
        audio_embeds: Sequence[torch.Tensor] | None = None,
        inputs_embeds: torch.Tensor | None = None,
        **kwargs: Any,
    ):
        """Causal-LM output of the language model on the multimodal embeddings (``labels`` etc. pass through)."""
        if inputs_embeds is None:
            inputs_embeds = self.embed(
                input_ids,
                pixel_values_videos,
                video_num_frames,
                input_features,
                audio_num_tokens,
                video_embeds,
                audio_embeds,
            )
        return self.language_model(inputs_embeds=inputs_embeds, attention_mask=attention_mask, **kwargs)

    @torch.no_grad()
    def generate(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        pixel_values_videos=None,
        video_num_frames=None,
        input_features=None,
        audio_num_tokens=None,
        **generation_kwargs,
    ) -> torch.Tensor:
        """Only the new tokens (the language model generates from ``inputs_embeds``). Pad prompts on the left."""
        embeds = self.embed(
            input_ids, pixel_values_videos, video_num_frames, input_features, audio_num_tokens
        )
        return self.language_model.generate(
            inputs_embeds=embeds, attention_mask=attention_mask, **generation_kwargs
        )


class ComposedAVProcessor(ProcessorMixin):
    """Tokenizer + frame image processor + Whisper feature extractor; expands each ``<|VIDEO|>`` to
    T·tokens_per_frame tokens and each ``<|AUDIO|>`` to its pooled length."""

    def __init__(
        self,
        image_processor=None,
        feature_extractor=None,
        tokenizer=None,
        chat_template=None,
        tokens_per_frame: int = 4,
        audio_pool_stride: int = 5,
    ):
        self.tokens_per_frame = tokens_per_frame
        self.audio_pool_stride = audio_pool_stride
        super().__init__(image_processor, feature_extractor, tokenizer, chat_template=chat_template)
        self.video_token, self.audio_token = tokenizer.video_token, tokenizer.audio_token
        self.video_token_id = tokenizer.convert_tokens_to_ids(self.video_token)
        self.audio_token_id = tokenizer.convert_tokens_to_ids(self.audio_token)

    def __call__(
        self,
        text: Sequence[str],
        videos: Sequence[np.ndarray] | None = None,
        audio: Sequence[np.ndarray] | None = None,
        return_tensors: str = "pt",
        **kwargs,
    ) -> BatchFeature:
        data: dict[str, Any] = {}
        video_runs, audio_runs = [], []
        if videos:
            frames = [f for v in videos for f in v]
            data["pixel_values_videos"] = self.image_processor(
                images=frames, input_data_format="channels_last", return_tensors="pt"
            )["pixel_values"]
            data["video_num_frames"] = torch.tensor([len(v) for v in videos])
            video_runs = [len(v) * self.tokens_per_frame for v in videos]
        if audio:
            fe = self.feature_extractor
            feats = fe(
                list(audio),
                sampling_rate=fe.sampling_rate,
                padding="max_length",
                truncation=True,
                return_attention_mask=True,
                return_tensors="pt",
            )
            data["input_features"] = feats["input_features"]
            audio_runs = [
                audio_tokens_for_frames(int(m.sum()), self.audio_pool_stride) for m in feats["attention_mask"]
            ]
            data["audio_num_tokens"] = torch.tensor(audio_runs)
        expanded = [self._expand(t, video_runs, audio_runs) for t in text]
        if video_runs or audio_runs:
            raise ValueError(
                f"{len(video_runs)} video(s) / {len(audio_runs)} audio(s) have no placeholder in the text"
            )
        data.update(self.tokenizer(expanded, return_tensors=return_tensors, padding=True, **kwargs))
        return BatchFeature(data)

    def _expand(self, text: str, video_runs: list[int], audio_runs: list[int]) -> str:
        pattern = f"({re.escape(self.video_token)}|{re.escape(self.audio_token)})"
        parts = []
        for piece in re.split(pattern, text):
            runs = (
                video_runs if piece == self.video_token else audio_runs if piece == self.audio_token else None
            )
            if runs is None:
                parts.append(piece)
                continue
            if not runs:
                raise ValueError(f"more {piece} placeholders in the text than media given")
            parts.append(piece * runs.pop(0))
        return "".join(parts)


AutoConfig.register(ComposedAVConfig.model_type, ComposedAVConfig, exist_ok=True)
AutoModelForCausalLM.register(ComposedAVConfig, ComposedAVForCausalLM, exist_ok=True)
AutoProcessor.register(ComposedAVConfig, ComposedAVProcessor, exist_ok=True)
