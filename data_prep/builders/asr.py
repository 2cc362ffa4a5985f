"""Speech transcripts with a local Whisper through transformers (AURA transcribes with Whisper).

The clip's 16 kHz mono audio is cut into the model's own 30-second windows (Whisper's input length: the
feature extractor truncates anything longer), the windows go through ``WhisperProcessor`` and
``generate`` in batches, greedy, and their texts are joined in order — Whisper's documented use, so a
transcript is a pure function of the audio and the weights. The model is a local folder or a hub id
(``openai/whisper-small``); nothing is downloaded at build time unless the user names a hub model that is
not cached yet. ``check`` says so before a build starts (``HF_HUB_OFFLINE`` set, or the Hub unreachable,
and the model not in the local cache): the loader's own retries took minutes to end in the same failure.
"""

from __future__ import annotations

import os

import numpy as np

from cavpref.data_prep.builders.work import BuildError

_ADVICE = (
    "download it once where there is a network (`hf download {model}`; then HF_HUB_OFFLINE=1 works), or pass "
    "--whisper_model a local folder (`cavpref model tiny-whisper --out DIR` writes a tiny one for trials)"
)


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "on", "yes", "true")


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
        self._failed: Exception | None = None  # a load that failed fails every later unit at once
        self._local_only = False

    def check(self) -> None:
        """The model can be loaded without a network or is reachable, before any stage runs (``BuildError``
        naming ``--whisper_model`` and what to do). A local folder needs its ``config.json``; a Hub id in the
        local cache is then loaded from there alone (no request), one that is not needs the Hub."""
        from huggingface_hub import constants, try_to_load_from_cache

        model = self.model
        if os.path.isdir(model):
            if not os.path.isfile(os.path.join(model, "config.json")):
                raise BuildError(
                    f"--whisper_model {model!r}: no config.json in that folder (not a Whisper model)"
                )
            return
        if model.startswith((".", "/", "~")) or model.count("/") != 1 or os.path.isdir(model.split("/")[0]):
            raise BuildError(f"--whisper_model {model!r}: no such folder or Hub id")
        cache = os.environ.get("HF_HUB_CACHE") or constants.HF_HUB_CACHE
        if isinstance(try_to_load_from_cache(model, "config.json", cache_dir=cache), str):
            self._local_only = True
            return
        advice = _ADVICE.format(model=model)
        if _offline():
            raise BuildError(
                f"--whisper_model {model}: not in the local Hugging Face cache and HF_HUB_OFFLINE is set: {advice}"
            )
        import httpx

        endpoint = os.environ.get("HF_ENDPOINT") or constants.ENDPOINT
        try:
            reply = httpx.head(
                f"{endpoint.rstrip('/')}/api/models/{model}", timeout=10.0, follow_redirects=True
            )
        except httpx.HTTPError as err:
            raise BuildError(
                f"--whisper_model {model}: not in the local Hugging Face cache and the Hub ({endpoint}) cannot be "
                f"reached ({type(err).__name__}): {advice}"
            ) from None
        if reply.status_code in (401, 404):
            raise BuildError(
                f"--whisper_model {model!r}: no such folder or Hub id (the Hub answered {reply.status_code})"
            )

    def describe(self) -> dict:
        """What the stage key records: the transcript changes with any of these."""
        return {"model": self.model, "language": self.language, "max_new_tokens": self.max_new_tokens}

    def _load(self):
        if self._failed is not None:
            raise self._failed
        if self._loaded is None:
            from transformers import AutoModelForSpeechSeq2Seq, AutoProcessor

            kw = {"local_files_only": True} if self._local_only else {}
            if self._local_only and os.environ.get("HF_HUB_CACHE"):
                kw["cache_dir"] = os.environ["HF_HUB_CACHE"]
            try:
                processor = AutoProcessor.from_pretrained(self.model, **kw)
                model = AutoModelForSpeechSeq2Seq.from_pretrained(self.model, **kw).to(self.device).eval()
            except (OSError, ValueError) as err:
                self._failed = OSError(f"--whisper_model {self.model}: cannot load ({err})")
                raise self._failed from None
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
