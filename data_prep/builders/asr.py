"""Speech transcripts with a local Whisper through transformers (AURA transcribes with Whisper).

The clip's 16 kHz mono audio is cut into the model's own 30-second windows (Whisper's input length: the
feature extractor truncates anything longer), the windows go through ``WhisperProcessor`` and
``generate`` in batches, greedy, and their texts are joined in order — Whisper's documented use, so a
transcript is a pure function of the audio and the weights. The model is a local folder or a hub id
(``openai/whisper-small``); nothing is downloaded at build time unless the user names a hub model that is
not cached yet.
"""

from __future__ import annotations

import numpy as np


class Transcriber:
    """``Transcriber(model)(audio, sample_rate) -> text``; the model is loaded on first use."""

    def __init__(
        self,
        model: str,
        *,
        device: str = "cpu",
        language: str | None = None,
        batch_size: int = 4,
        max_new_tokens: int = 128,
    ):
        self.model, self.device, self.language = model, device, language
        self.batch_size, self.max_new_tokens = batch_size, max_new_tokens
        self._loaded = None

    def describe(self) -> dict:
        """What the stage key records: the transcript changes with any of these."""
        return {"model": self.model, "language": self.language, "max_new_tokens": self.max_new_tokens}

    def _load(self):
        if self._loaded is None:
            from transformers import AutoModelForSpeechSeq2Seq, AutoProcessor

            processor = AutoProcessor.from_pretrained(self.model)
            model = AutoModelForSpeechSeq2Seq.from_pretrained(self.model).to(self.device).eval()
            self._loaded = processor, model
        return self._loaded

    def __call__(self, audio: np.ndarray | None, sample_rate: int) -> str:
        import torch

        if audio is None or len(audio) == 0:
            return ""
        processor, model = self._load()
        fe = processor.feature_extractor
        if sample_rate != fe.sampling_rate:
            raise ValueError(f"{self.model} takes {fe.sampling_rate} Hz audio, got {sample_rate} Hz")
        step = int(fe.chunk_length * sample_rate)
        windows = [
            np.ascontiguousarray(audio[k : k + step], dtype=np.float32) for k in range(0, len(audio), step)
        ]
        # the decoder prompt (start, language, task, no-timestamps) and the text share max_target_positions
        cap = min(self.max_new_tokens, getattr(model.config, "max_target_positions", 448) - 4)
        kwargs = {
            "max_new_tokens": cap,
            "task": "transcribe",
            **({"language": self.language} if self.language else {}),
        }
        texts = []
        for i in range(0, len(windows), self.batch_size):
            features = processor(
                windows[i : i + self.batch_size], sampling_rate=sample_rate, return_tensors="pt"
            )
            with torch.no_grad():
                ids = model.generate(features.input_features.to(self.device), **kwargs)
            texts += processor.batch_decode(ids, skip_special_tokens=True)
        return " ".join(t.strip() for t in texts if t.strip())
