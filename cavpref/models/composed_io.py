"""Model I/O for the composed AVLLM — also the worked example of "bring your own AVLLM": the four ChatModelIO
hooks below are all a new model needs (docs/models.md walks through them)."""

from __future__ import annotations

from typing import Any

import torch

import cavpref.models.composed  # noqa: F401  (registers the Auto classes used by from_pretrained)
from cavpref.media.decode import DecodedMedia
from cavpref.models.chat import ChatModelIO
from cavpref.models.common import EncodedMedia, resample, to_device, unwrap, zero_contribution


class ComposedAVModelIO(ChatModelIO):
    supports_shared_prefix = True
    language_model_prefix = "language_model"
    vision_modules = ("vision_tower",)
    audio_modules = ("audio_tower",)
    projector_modules = ("video_projector", "audio_projector")

    def __init__(self, processor: Any, **kwargs: Any):
        super().__init__(processor, **kwargs)
        self.sample_rate = int(processor.feature_extractor.sampling_rate)

    @property
    def placeholder_ids(self) -> tuple[int, ...]:
        return (self.processor.video_token_id, self.processor.audio_token_id)

    # ----- CPU side: one media item -> placeholder expansions + tensors ---------------------------------------
    def encode_media(self, media: DecodedMedia) -> EncodedMedia:
        proc, enc = self.processor, EncodedMedia(expansions={})
        if media.frames is not None:
            out = proc(text=[proc.video_token], videos=[media.frames])
            enc.expansions[proc.video_token_id] = out["input_ids"][0].tolist()
            enc.video = {k: out[k] for k in ("pixel_values_videos", "video_num_frames")}
        if media.audio is not None:
            wave = resample(media.audio, int(media.sample_rate), self.sample_rate)
            out = proc(text=[proc.audio_token], audio=[wave])
            enc.expansions[proc.audio_token_id] = out["input_ids"][0].tolist()
            enc.audio = {k: out[k] for k in ("input_features", "audio_num_tokens")}
        return enc

    def stack_media(self, videos: list[dict], audios: list[dict]) -> dict[str, torch.Tensor]:
        return {
            k: torch.cat([it[k] for it in items])
            for items in (videos, audios)
            for k in (items[0] if items else {})
        }

    # ----- device side ---------------------------------------------------------------------------------------
    def _media_kwargs(self, media: dict, vrows: list[int], arows: list[int]) -> dict[str, Any]:
        """Model kwargs that make the model run its encoders on the rows' own media (no reuse)."""
        kw: dict[str, Any] = {}
        if vrows:
            chunks = media["pixel_values_videos"].split(media["video_num_frames"].tolist())
            kw.update(
                pixel_values_videos=torch.cat([chunks[i] for i in vrows]),
                video_num_frames=media["video_num_frames"][vrows],
            )
        if arows:
            kw.update(
                input_features=media["input_features"][arows],
                audio_num_tokens=media["audio_num_tokens"][arows],
            )
        return kw

    def _dummy_outputs(self, core: torch.nn.Module, need_video: bool, need_audio: bool) -> list[torch.Tensor]:
        outs, cfg = [], core.config
        if need_video:
            size = cfg.vision_config.image_size
            pv = torch.zeros(1, cfg.vision_config.num_channels, size, size, device=core.device)
            outs += list(core.get_video_features(pv, torch.tensor([1])))
        if need_audio:
            frames = 2 * cfg.audio_config.max_source_positions
            feats = torch.zeros(1, cfg.audio_config.num_mel_bins, frames, device=core.device)
            outs += list(core.get_audio_features(feats, torch.tensor([1])))
        return outs

    def forward_logits(
        self, model: torch.nn.Module, batch: dict, *, reuse_encoders: bool = True
    ) -> torch.Tensor:
        core = unwrap(model)
        b = to_device({k: v for k, v in batch.items() if k not in ("row_ids", "labels")}, core.device)
        media, am = b["media"], b["attention_mask"]
        vrows = [int(v) for v in b["row_video"] if v >= 0]
        arows = [int(a) for a in b["row_audio"] if a >= 0]
        kw: dict[str, Any] = {
            "input_ids": b["input_ids"],
            "attention_mask": am,
            "use_cache": False,
            "position_ids": b["position_ids"] if "position_ids" in b else (am.cumsum(-1) - 1).clamp(min=0),
        }
        if reuse_encoders:
            if vrows:
                feats = core.get_video_features(media["pixel_values_videos"], media["video_num_frames"])
                kw["video_embeds"] = [feats[i] for i in vrows]
            if arows:
                feats = core.get_audio_features(media["input_features"], media["audio_num_tokens"])
                kw["audio_embeds"] = [feats[i] for i in arows]
        else:
            kw.update(self._media_kwargs(media, vrows, arows))
        if self.missing_modality == "zero_dummy" and (not vrows or not arows):
            zero = zero_contribution(*self._dummy_outputs(core, not vrows, not arows))
            media_kw = {
                k: kw.pop(k)
                for k in list(kw)
                if k not in ("input_ids", "attention_mask", "use_cache", "position_ids")
            }
            embeds = core.embed(kw.pop("input_ids"), **media_kw)
            kw["inputs_embeds"] = embeds + zero.to(embeds.dtype)
        return model(**kw).logits

    def generate_ids(self, model: torch.nn.Module, batch: dict, **generation_kwargs) -> torch.Tensor:
        core = unwrap(model)
        b = to_device({k: v for k, v in batch.items() if k != "row_ids"}, core.device)
        vrows = [int(v) for v in b["row_video"] if v >= 0]
        arows = [int(a) for a in b["row_audio"] if a >= 0]
        kw = {"pad_token_id": self.pad_id, "eos_token_id": self.eos_ids(core)}
        kw.update(generation_kwargs)
        return core.generate(
            input_ids=b["input_ids"],
            attention_mask=b["attention_mask"],
            **self._media_kwargs(b["media"], vrows, arows),
            **kw,
        )
