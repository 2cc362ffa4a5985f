"""What a benchmark reads off a step without changing it: the log-probs a model I/O returned (``LogpsRecorder``),
the warnings a logger emitted (``CapturedWarnings``: the shared-prefix fallback reason), the attention ops the
profiler saw (``attention_ops``), and float32 kept float32 on CUDA (``full_fp32``: no TF32)."""

from __future__ import annotations

import contextlib
import logging

import torch


class LogpsRecorder:
    """Records every ``model_io.logps`` result, detached, in call order (in a training step: the policy's, then
    the reference's) until ``close``."""

    def __init__(self, model_io):
        self.io, self.inner, self.calls = model_io, model_io.logps, []
        model_io.logps = self

    def __call__(self, model, batch, **kw):
        out = self.inner(model, batch, **kw)
        self.calls.append(out.detach().float())
        return out

    def close(self):
        del self.io.logps  # the class's method again


class CapturedWarnings(logging.Handler):
    """The warnings ``logger`` emits inside the ``with`` block."""

    def __init__(self, logger: str):
        super().__init__(logging.WARNING)
        self.logger, self.messages = logging.getLogger(logger), []

    def emit(self, record):
        self.messages.append(record.getMessage())

    def __enter__(self):
        self.logger.addHandler(self)
        return self

    def __exit__(self, *exc):
        self.logger.removeHandler(self)


def attention_ops(prof, lm_heads: int) -> dict[str, list[str]]:
    """The attention ops a ``torch.profiler.profile(record_shapes=True)`` saw, split by the head count of their
    4-D input: the language model's (``lm_heads``) vs the encoders'. sdpa shows its backend op
    (``aten::_scaled_dot_product_efficient_attention``, ``..._flash_attention``, ``..._cudnn_attention``,
    ``..._flash_attention_for_cpu``, ...), eager its softmax."""
    found: dict[str, set[str]] = {"language_model": set(), "encoders": set()}
    for evt in prof.key_averages(group_by_input_shape=True):
        name = evt.key
        if not (name.startswith("aten::_scaled_dot_product") or name in ("aten::_softmax", "aten::softmax")):
            continue
        shape = next((s for s in evt.input_shapes if len(s) == 4), None)
        if shape is not None:
            found["language_model" if shape[1] == lm_heads else "encoders"].add(name)
    return {k: sorted(v) for k, v in found.items()}


@contextlib.contextmanager
def full_fp32(device: str):
    """float32 as float32 while inside: no TF32 in CUDA matrix products or convolutions."""
    if device != "cuda":
        yield
        return
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
