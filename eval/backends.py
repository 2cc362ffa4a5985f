"""Where answers come from: a local model adapter, or an OpenAI-compatible endpoint serving a model.

Both take the runner's batch (prompts + decoded media) and return, per row, ``(text, error)`` for
generation or ``(scores, error)`` for option log-likelihood. Each has a ``fingerprint`` that goes into
every cache key, so a changed model (weights, config, template, serving URL) never reuses answers.

What an endpoint receives (OpenAI chat format, one user message, no history): the frames the local adapters
see and the audio as content parts (``cavpref.media.chat_parts``: an mp4 or JPEG frames, a WAV; a missing
stream is simply not sent), then the prompt text.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from typing import Any

from cavpref.media.chat_parts import MEDIA_FORMATS, content_parts
from cavpref.media.decode import DecodedMedia

Output = tuple[Any, str | None]  # (text or scores, error)


def _stable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def model_fingerprint(adapter: Any, model: Any) -> str:
    """sha256 over the adapter class and its simple settings, the model config (minus its path), the
    tokenizer / chat template, and per-tensor (shape, dtype, sum, sum of squares) of every weight —
    cheap even for 7B models (one reduction per tensor, on the model's device) and any fine-tune moves it."""
    import torch

    h = hashlib.sha256()
    h.update(f"{type(adapter).__module__}.{type(adapter).__qualname__}".encode())
    settings = {
        k: _stable(v)
        for k, v in sorted(vars(adapter).items())
        if isinstance(v, (str, int, float, bool, type(None))) and not k.startswith("_")
    }
    h.update(json.dumps(settings, sort_keys=True).encode())
    config = getattr(model, "config", None)
    if config is not None:
        cfg = {
            k: v for k, v in config.to_dict().items() if k not in ("_name_or_path", "transformers_version")
        }
        h.update(json.dumps(cfg, sort_keys=True, default=str).encode())
    tok = getattr(adapter, "tokenizer", None)
    if tok is not None:
        h.update(
            json.dumps(
                [len(tok), getattr(tok, "chat_template", None), str(tok.all_special_tokens)], default=str
            ).encode()
        )
    with torch.no_grad():
        for name, t in sorted(model.state_dict().items()):
            d = t.detach().double()
            h.update(
                f"{name}|{tuple(t.shape)}|{t.dtype}|{d.sum().item():.10e}|{(d * d).sum().item():.10e}".encode()
            )
    return h.hexdigest()


class ModelIOBackend:
    """A cavpref ``AVModelIO`` and its model (``model_io.model`` unless given), greedy by default."""

    kind = "local"

    def __init__(self, model_io: Any, model: Any = None, *, generation: dict[str, Any] | None = None):
        self.model_io = model_io
        self.model = model if model is not None else model_io.model
        if self.model is None:
            raise ValueError(f"{type(model_io).__name__}: no model (pass model= or load with load_model_io)")
        self.generation = {"max_new_tokens": 64, "do_sample": False, **(generation or {})}
        self.fingerprint = model_fingerprint(model_io, self.model)

    def describe(self) -> dict[str, Any]:
        cfg = getattr(self.model, "config", None)
        return {
            "kind": self.kind,
            "model_io": type(self.model_io).__name__,
            "fingerprint": self.fingerprint,
            "name_or_path": getattr(cfg, "_name_or_path", None),
            "generation": self.generation,
        }

    def _rows(self, prompts, media, keys):
        from cavpref.models.base import Row

        return [Row(prompt=p, media=m, media_key=k, row_id=k or "") for p, m, k in zip(prompts, media, keys)]

    def generate(
        self,
        prompts: Sequence[str],
        media: Sequence[DecodedMedia | None],
        keys: Sequence[str],
        sampling: dict[str, Any] | None = None,
    ) -> list[Output]:
        """Greedy answers, or sampled ones (``sampling``: ``do_sample``, ``temperature``, ``seed``). A sampled
        batch seeds torch from the seed and the batch's prompts and media keys, so it is reproducible for
        the same batch (HF ``generate`` draws one random stream per batch, not per row)."""
        import torch

        generation = dict(self.generation)
        if sampling is not None:
            generation.update({k: v for k, v in sampling.items() if k != "seed"})
            blob = json.dumps([sampling.get("seed"), list(prompts), [str(k) for k in keys]]).encode()
            torch.manual_seed(int.from_bytes(hashlib.sha256(blob).digest()[:7], "big"))
        with torch.no_grad():
            texts = self.model_io.generate(self.model, self._rows(prompts, media, keys), **generation)
        return [(t, None) for t in texts]

    def option_logps(
        self,
        prompts,
        media,
        keys,
        candidates: Sequence[Sequence[str]],
        letters: Sequence[Sequence[str | None] | None] | None = None,
    ) -> list[Output]:
        """Per row ``{"sum": [...], "tokens": [...], "letter": [...]}`` (``AVModelIO.option_scores``); a letter
        score is None where the candidate has no letter (or none was given)."""
        letters = [ls or [None] * len(c) for ls, c in zip(letters or [None] * len(candidates), candidates)]
        scores = self.model_io.option_scores(
            self.model, self._rows(prompts, media, keys), candidates, letters
        )
        return [
            (
                {
                    "sum": [float(x) for x in s["sum"]],
                    "tokens": [int(x) for x in s["tokens"]],
                    "letter": [None if math.isnan(x) else float(x) for x in s["letter"].tolist()],
                },
                None,
            )
            for s in scores
        ]


class EndpointBackend:
    """A model behind an OpenAI-compatible chat endpoint (e.g. ``vllm serve``), through ``ChatClient``."""

    kind = "endpoint"

    def __init__(self, client: Any, *, media_format: str = "mp4", max_tokens: int = 64):
        if media_format not in MEDIA_FORMATS:
            raise ValueError(f"media_format must be one of {MEDIA_FORMATS}, got {media_format!r}")
        self.client, self.media_format, self.max_tokens = client, media_format, max_tokens
        desc = client.describe()
        self.fingerprint = hashlib.sha256(
            json.dumps([desc["base_url"], desc["model"], media_format, max_tokens]).encode()
        ).hexdigest()

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            **self.client.describe(),
            "media_format": self.media_format,
            "fingerprint": self.fingerprint,
            "generation": {"max_tokens": self.max_tokens, "temperature": 0.0},
        }

    def messages(self, prompt: str, media: DecodedMedia | None) -> list[dict]:
        content = content_parts(media, self.media_format) + [{"type": "text", "text": prompt}]
        return [{"role": "user", "content": content}]

    def generate(self, prompts, media, keys, sampling: dict[str, Any] | None = None) -> list[Output]:
        """``sampling`` (``temperature``, ``seed``, ...) goes into the request body (the API's ``seed`` is
        best effort on most servers); ``do_sample`` is implied by a temperature above 0."""
        params = {k: v for k, v in (sampling or {}).items() if k != "do_sample"}
        results = self.client.chat_many(
            [self.messages(p, m) for p, m in zip(prompts, media)],
            desc="endpoint",
            max_tokens=self.max_tokens,
            **params,
        )
        return [(r.text, None) if r.ok else (None, f"endpoint: {r.error}") for r in results]

    def option_logps(self, *args, **kwargs):
        raise ValueError(
            "likelihood mode needs a local model adapter: a chat endpoint does not score given "
            "responses; use --mode generate with an endpoint"
        )
