"""Pure helpers shared by adapters: the response log-prob sum, media checks, resampling, padding, device moves,
unwrapping, and the zero-contribution trick for dummy encoder calls."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from math import gcd
from typing import Any

import numpy as np
import torch

from cavpref.media.decode import DecodedMedia
from cavpref.models.base import AdapterError, Row

IGNORE_INDEX = -100


def response_logps(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per-row sum of log p(label_t | tokens_<t) over labelled positions (labels != -100), in fp32.

    Only labelled positions are normalised (log-softmax of a (N_response, V) slice, not (B, L, V)), which keeps
    memory at real vocabulary sizes. Position t's logits predict token t+1, hence the shift.
    """
    shift_logits, shift_labels = logits[:, :-1], labels[:, 1:]
    b_idx, t_idx = (shift_labels != IGNORE_INDEX).nonzero(as_tuple=True)
    picked = shift_logits[b_idx, t_idx].float().log_softmax(-1)
    token_logps = picked.gather(-1, shift_labels[b_idx, t_idx].unsqueeze(-1)).squeeze(-1)
    out = torch.zeros(labels.shape[0], dtype=torch.float32, device=logits.device)
    return out.index_add(0, b_idx, token_logps)


def describe_row(index: int, row: Row) -> str:
    return f"row {index}" + (f" (row_id={row.row_id!r})" if row.row_id else "")


def check_media(media: Any, where: str) -> None:
    """Raise AdapterError naming the row and field for media the adapter cannot feed."""
    if not isinstance(media, DecodedMedia):
        raise AdapterError(f"{where}: media must be a cavpref.media.decode.DecodedMedia, got {type(media).__name__}")
    frames, audio = media.frames, media.audio
    if frames is not None:
        if not isinstance(frames, np.ndarray):
            raise AdapterError(f"{where}: media.frames must be a numpy array, got {type(frames).__name__}")
        if frames.dtype != np.uint8:
            raise AdapterError(f"{where}: media.frames must be uint8 (T, H, W, 3), got dtype {frames.dtype}")
        if frames.ndim != 4 or frames.shape[-1] != 3 or min(frames.shape[:3]) < 1:
            raise AdapterError(f"{where}: media.frames must have shape (T>=1, H, W, 3), got {frames.shape}")
    if audio is not None:
        if not isinstance(audio, np.ndarray):
            raise AdapterError(f"{where}: media.audio must be a numpy array, got {type(audio).__name__}")
        if audio.dtype != np.float32:
            raise AdapterError(f"{where}: media.audio must be float32 mono (N,), got dtype {audio.dtype}")
        if audio.ndim != 1 or audio.size == 0:
            raise AdapterError(f"{where}: media.audio must be a non-empty 1-D array, got shape {audio.shape}")
        if not np.isfinite(audio).all():
            raise AdapterError(f"{where}: media.audio contains NaN or inf")
        if not isinstance(media.sample_rate, (int, np.integer)) or media.sample_rate <= 0:
            raise AdapterError(f"{where}: media.sample_rate must be a positive int, got {media.sample_rate!r}")


def resample(audio: np.ndarray, orig_sr: int, target_sr: int) -> np.ndarray:
    """Polyphase resampling (scipy); decode at the adapter's ``sample_rate`` to skip this entirely."""
    if orig_sr == target_sr:
        return audio
    try:
        from scipy.signal import resample_poly
    except ImportError as err:  # pragma: no cover - scipy ships with the dev environment
        raise AdapterError(f"audio at {orig_sr} Hz needs resampling to {target_sr} Hz, which needs scipy; "
                           f"or decode at {target_sr} Hz") from err
    g = gcd(int(orig_sr), int(target_sr))
    return resample_poly(audio, target_sr // g, orig_sr // g).astype(np.float32)


def frames_fps(media: DecodedMedia, default: float) -> float:
    """Sampling rate of the decoded frames, from their timestamps when there are two or more."""
    times = media.frame_times
    if times is not None and len(times) >= 2:
        step = float(np.median(np.diff(np.asarray(times, dtype=np.float64))))
        if step > 0:
            return 1.0 / step
    return float(default)


def pad(seqs: Sequence[Sequence[int]], value: int, side: str = "right") -> tuple[torch.Tensor, torch.Tensor]:
    """(B, L) tensor and attention mask. Logps pad right (positions unaffected); generation pads left."""
    length = max(len(s) for s in seqs)
    out = torch.full((len(seqs), length), value, dtype=torch.long)
    mask = torch.zeros((len(seqs), length), dtype=torch.long)
    for i, s in enumerate(seqs):
        sl = slice(0, len(s)) if side == "right" else slice(length - len(s), length)
        out[i, sl] = torch.tensor(list(s), dtype=torch.long)
        mask[i, sl] = 1
    return out, mask


def to_device(obj: Any, device: torch.device) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: to_device(v, device) for k, v in obj.items()}
    return obj


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The transformers model inside DDP / DeepSpeed / PEFT wrappers (LoRA layers stay injected in it)."""
    from accelerate.utils import extract_model_from_parallel

    model = extract_model_from_parallel(model)
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def zero_contribution(*outputs: torch.Tensor) -> torch.Tensor:
    """0 × (sum of encoder outputs): adds exactly nothing to the activations but puts every encoder parameter
    in the autograd graph (its gradient is an exact zero), so all ranks run the same encoder calls."""
    return sum(o.float().sum() for o in outputs) * 0.0


def model_load_kwargs(cfg: Any) -> dict[str, Any]:
    """``from_pretrained`` kwargs from a ModelConfig: dtype, attention implementation, remote-code policy."""
    kw: dict[str, Any] = {"dtype": cfg.torch_dtype(), "trust_remote_code": cfg.trust_remote_code}
    if cfg.attn_implementation:
        kw["attn_implementation"] = cfg.attn_implementation
    return kw


@dataclass
class EncodedMedia:
    """One unique media item after CPU featurisation: ``expansions`` maps a placeholder token id to the ids
    replacing it; ``video`` / ``audio`` hold that stream's tensors (None when absent)."""

    expansions: dict[int, list[int]]
    video: dict[str, torch.Tensor] | None = None
    audio: dict[str, torch.Tensor] | None = None
    meta: dict[str, Any] = field(default_factory=dict)
