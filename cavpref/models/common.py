"""Pure helpers shared by model I/Os: the response log-prob sum, media checks, resampling, padding, device moves,
unwrapping, and the zero-contribution trick for dummy encoder calls."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from math import gcd
from typing import Any

import numpy as np
import torch

from cavpref.media.decode import DecodedMedia
from cavpref.models.base import IGNORE_INDEX, ModelIOError, Row


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


def response_index(labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Where a row's response log-prob needs logits: (B, K) positions t whose logits predict a labelled token
    (labels[t+1] != -100), in order and padded to the longest response K; the (B, K) target ids; a (B, K)
    validity mask. Lets the output head run on K positions per row instead of the whole sequence."""
    target_mask = labels[:, 1:] != IGNORE_INDEX
    counts = target_mask.sum(-1)
    k = max(int(counts.max()) if counts.numel() else 0, 1)
    order = torch.sort((~target_mask).to(torch.int8), dim=1, stable=True).indices[
        :, :k
    ]  # labelled first, in order
    valid = torch.arange(order.shape[1], device=labels.device)[None] < counts[:, None]
    positions = torch.where(valid, order, torch.zeros_like(order))
    targets = labels[:, 1:].gather(1, positions).masked_fill(~valid, 0)
    return positions, targets, valid


def gathered_logps(logits: torch.Tensor, targets: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """``response_logps`` for logits already gathered at ``response_index`` positions: (B, K, V) -> (B,) fp32."""
    b_idx, j_idx = valid.nonzero(as_tuple=True)
    picked = logits[b_idx, j_idx].float().log_softmax(-1)
    token_logps = picked.gather(-1, targets[b_idx, j_idx].unsqueeze(-1)).squeeze(-1)
    out = torch.zeros(valid.shape[0], dtype=torch.float32, device=logits.device)
    return out.index_add(0, b_idx, token_logps)


class HeadAtPositions:
    """Context manager: the model's output head (``get_output_embeddings()``) runs only on the hidden states at
    ``positions`` (B, K) instead of all (B, L) positions, so ``model(...).logits`` is (B, K, V).

    The (B, L, V) logits of a long audio-visual prompt are the largest activation of a log-prob forward (and
    at a 150K vocabulary a large share of its FLOPs) while only the response positions are used. A forward
    pre-hook on the head does the gathering, so the call still goes through DDP / DeepSpeed / PEFT wrappers.
    The hook fires once, and only on a (B, L, hidden) input; ``fired`` says whether it did — when not (a model
    whose head is called differently), the logits are the full ones and the caller falls back."""

    def __init__(self, model: torch.nn.Module, positions: torch.Tensor, seq_shape: tuple[int, int]):
        get_head = getattr(unwrap(model), "get_output_embeddings", None)
        self.head = get_head() if callable(get_head) else None
        self.positions, self.seq_shape, self.fired, self._handle = positions, tuple(seq_shape), False, None

    def _hook(self, module, args):
        if (
            self.fired
            or not args
            or not torch.is_tensor(args[0])
            or args[0].dim() != 3
            or tuple(args[0].shape[:2]) != self.seq_shape
        ):
            return None
        self.fired = True
        hidden = args[0]
        index = self.positions.to(hidden.device).unsqueeze(-1).expand(-1, -1, hidden.shape[-1])
        return (hidden.gather(1, index), *args[1:])

    def __enter__(self):
        if isinstance(self.head, torch.nn.Module):
            self._handle = self.head.register_forward_pre_hook(self._hook)
        return self

    def __exit__(self, *exc) -> None:
        if self._handle is not None:
            self._handle.remove()


def describe_row(index: int, row: Row) -> str:
    return f"row {index}" + (f" (row_id={row.row_id!r})" if row.row_id else "")


def check_media(media: Any, where: str) -> None:
    """Raise ModelIOError naming the row and field for media the model_io cannot feed."""
    if not isinstance(media, DecodedMedia):
        raise ModelIOError(
            f"{where}: media must be a cavpref.media.decode.DecodedMedia, got {type(media).__name__}"
        )
    frames, audio = media.frames, media.audio
    if frames is not None:
        if not isinstance(frames, np.ndarray):
            raise ModelIOError(f"{where}: media.frames must be a numpy array, got {type(frames).__name__}")
        if frames.dtype != np.uint8:
            raise ModelIOError(f"{where}: media.frames must be uint8 (T, H, W, 3), got dtype {frames.dtype}")
        if frames.ndim != 4 or frames.shape[-1] != 3 or min(frames.shape[:3]) < 1:
            raise ModelIOError(f"{where}: media.frames must have shape (T>=1, H, W, 3), got {frames.shape}")
    if audio is not None:
        if not isinstance(audio, np.ndarray):
            raise ModelIOError(f"{where}: media.audio must be a numpy array, got {type(audio).__name__}")
        if audio.dtype != np.float32:
            raise ModelIOError(f"{where}: media.audio must be float32 mono (N,), got dtype {audio.dtype}")
        if audio.ndim != 1 or audio.size == 0:
            raise ModelIOError(f"{where}: media.audio must be a non-empty 1-D array, got shape {audio.shape}")
        if not np.isfinite(audio).all():
            raise ModelIOError(f"{where}: media.audio contains NaN or inf")
        if not isinstance(media.sample_rate, (int, np.integer)) or media.sample_rate <= 0:
            raise ModelIOError(
                f"{where}: media.sample_rate must be a positive int, got {media.sample_rate!r}"
            )


def resample(audio: np.ndarray, orig_sr: int, target_sr: int) -> np.ndarray:
    """Polyphase resampling (scipy); decode at the model_io's ``sample_rate`` to skip this entirely."""
    if orig_sr == target_sr:
        return audio
    try:
        from scipy.signal import resample_poly
    except ImportError as err:  # pragma: no cover - scipy ships with the dev environment
        raise ModelIOError(
            f"audio at {orig_sr} Hz needs resampling to {target_sr} Hz, which needs scipy; "
            f"or decode at {target_sr} Hz"
        ) from err
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
    """The transformers model inside DDP / DeepSpeed / FSDP / ``ModelIOStep`` / PEFT wrappers (LoRA layers stay
    injected in it)."""
    from cavpref.models.step import inner_model

    model = inner_model(model)
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def zero_contribution(*outputs: torch.Tensor) -> torch.Tensor:
    """0 × (sum of encoder outputs): adds exactly nothing to the activations but puts every encoder parameter
    in the autograd graph (its gradient is an exact zero), so all ranks run the same encoder calls."""
    return sum(o.float().sum() for o in outputs) * 0.0


def model_load_kwargs(cfg: Any) -> dict[str, Any]:
    """``from_pretrained`` kwargs from a AVModelArguments: dtype, attention implementation, remote-code policy."""
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
