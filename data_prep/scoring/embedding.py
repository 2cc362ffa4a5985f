"""What every embedding backend implements and uses: the three encoder protocols and ``as_unit_numpy``.

Its own module so the registry (``encoders``) and the backends that live in modules of their own
(``encoders_pe``) both import it, and neither imports the other's module back.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import torch


@runtime_checkable
class AudioTextEncoder(Protocol):
    fingerprint: str
    sample_rate: int
    window_samples: int | None  # longest input the model takes at once (None = any)
    logit_scale: float  # audio -> text softmax temperature the model was trained with

    def embed_audio(self, waves: list[np.ndarray]) -> np.ndarray: ...
    def embed_text(self, texts: list[str]) -> np.ndarray: ...


@runtime_checkable
class ImageTextEncoder(Protocol):
    fingerprint: str
    logit_scale: float

    def embed_images(self, images: list[np.ndarray]) -> np.ndarray: ...  # (H, W, 3) uint8 each
    def embed_text(self, texts: list[str]) -> np.ndarray: ...


@runtime_checkable
class AudioVideoEncoder(Protocol):
    fingerprint: str
    sample_rate: int

    def embed_audio(self, waves: list[np.ndarray]) -> np.ndarray: ...
    def embed_video(self, clips: list[np.ndarray]) -> np.ndarray: ...  # (T, H, W, 3) uint8 each


def as_unit_numpy(x) -> np.ndarray:
    """Model output (tensor, or a ModelOutput whose pooler_output is the embedding) -> unit rows."""
    if not isinstance(x, torch.Tensor):
        x = x.pooler_output
    x = torch.nn.functional.normalize(x.detach().float(), dim=-1)
    return x.cpu().numpy().astype(np.float32)
