"""Perception Encoder audio-video (transformers ``PeAudioVideoModel``): a direct joint audio–video space.

The model is trained with an audio–video contrastive loss on ``audio_head(audio pooled)`` against
``video_head(video pooled)`` (see ``PeAudioVideoModel.forward``: ``logits_audio_video``), so the cosine of
those two embeddings is an audio-visual similarity without a text bridge. Its video tower is a timm
model: this backend needs ``timm`` installed.
"""

from __future__ import annotations

import numpy as np
import torch

from .cache import fingerprint
from .embedding import as_unit_numpy


class PeAudioVideo:
    def __init__(self, model: str, device: str = "cpu"):
        from transformers import AutoModel, AutoProcessor

        self.processor = AutoProcessor.from_pretrained(model)
        self.model = AutoModel.from_pretrained(model).to(device).eval()
        self.device = device
        self.sample_rate = int(self.processor.feature_extractor.sampling_rate)
        self.fingerprint = fingerprint(backend="pe_audio_video", model=model, sr=self.sample_rate)

    @torch.inference_mode()
    def embed_audio(self, waves: list[np.ndarray]) -> np.ndarray:
        x = self.processor.feature_extractor(list(waves), sampling_rate=self.sample_rate, return_tensors="pt")
        return as_unit_numpy(
            self.model.get_audio_embeds(x["input_values"].to(self.device), x["padding_mask"].to(self.device))
        )

    @torch.inference_mode()
    def embed_video(self, clips: list[np.ndarray]) -> np.ndarray:
        x = self.processor.video_processor(videos=list(clips), return_tensors="pt")
        mask = x.get("padding_mask_videos")
        video_model = self.model.video_model
        # transformers 5.24: PeVideoModel.get_video_features is (mis)defined inside __init__, so
        # PeAudioVideoModel.get_video_embeds fails; this is the computation of PeAudioVideoModel.forward.
        out = video_model.video_encoder(
            pixel_values_videos=x["pixel_values_videos"].to(self.device),
            padding_mask_videos=None if mask is None else mask.to(self.device),
        )
        return as_unit_numpy(video_model.video_head(out.pooler_output))
