"""Speech transcripts with a local Whisper through transformers (AURA transcribes with Whisper).

The transformers ``automatic-speech-recognition`` pipeline on the clip's 16 kHz mono audio, cut into the
model's own 30-second windows (Whisper's input length: longer audio would be truncated by the feature
extractor) and batched; the window texts are joined in order. Greedy decoding, so a transcript is a pure
function of the audio and the weights. The model is a local folder or a hub id (``openai/whisper-small``);
nothing is downloaded at build time unless the user names a hub model that is not cached yet.
"""

from __future__ import annotations

import numpy as np


class Transcriber:
    """``Transcriber(model)(audio, sample_rate) -> text``; the pipeline is built on first use."""

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
        self._pipe = None

    def describe(self) -> dict:
        """What the stage key records: the transcript changes with any of these."""
        return {"model": self.model, "language": self.language, "max_new_tokens": self.max_new_tokens}

    def _pipeline(self):
        if self._pipe is None:
            from transformers import pipeline

            self._pipe = pipeline("automatic-speech-recognition", model=self.model, device=self.device)
        return self._pipe

    def window_samples(self, sample_rate: int) -> int:
        fe = self._pipeline().feature_extractor
        return int(getattr(fe, "chunk_length", 30) * sample_rate)

    def __call__(self, audio: np.ndarray | None, sample_rate: int) -> str:
        if audio is None or len(audio) == 0:
            return ""
        pipe, step = self._pipeline(), self.window_samples(sample_rate)
        windows = [
            {"raw": np.ascontiguousarray(audio[k : k + step], dtype=np.float32), "sampling_rate": sample_rate}
            for k in range(0, len(audio), step)
        ]
        # the decoder prompt (start, language, task, no-timestamps) and the text share max_target_positions
        cap = getattr(pipe.model.config, "max_target_positions", 448) - 4
        kwargs = {"max_new_tokens": min(self.max_new_tokens, cap), "task": "transcribe"}
        if self.language:
            kwargs["language"] = self.language
        out = pipe(windows, batch_size=self.batch_size, generate_kwargs=kwargs)
        return " ".join(o["text"].strip() for o in out if o["text"].strip())
