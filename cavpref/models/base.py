"""The model_io protocol: the only way the trainer and the evaluator talk to an audio-visual LLM.

Fine-tuning "your own AVLLM" means writing one ``AVModelIO`` subclass. The split between ``collate``
(CPU, in data-loader workers: tokenisation, processor, feature extraction) and ``logps`` / ``generate``
(device, with a model passed in explicitly) lets the trainer call the same model_io with the policy, the
reference, or a PEFT model with its adapter disabled.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from cavpref.media.decode import DecodedMedia

#: the label of every token that is not scored (prompt, padding, media placeholders): ``collate``'s contract
IGNORE_INDEX = -100


class ModelIOError(ValueError):
    """A row the model_io cannot turn into model inputs. The message names the row."""


@dataclass
class Row:
    """One (prompt, response, media) triple.

    ``media_key`` identifies the presented media (canonical MediaSpec JSON, or any stable id): rows with
    the same key share encoder outputs within a batch. ``media=None`` means a text-only row; a
    DecodedMedia with ``frames=None`` / ``audio=None`` marks a missing stream, fed as the model_io's
    ``missing_modality`` policy says.
    """

    prompt: str
    response: str = ""
    media: DecodedMedia | None = None
    media_key: str | None = None
    row_id: str = ""
    #: False: score ``response`` as the *start* of the answer, without the end-of-turn token the chat template
    #: closes an answer with (the answer letter alone: eval's ``option_score: letter``)
    end_turn: bool = True
    #: the row's own ``use_audio_in_video`` (a preference row's column of that name): whether a video's sound is
    #: interleaved with its frames by time (Qwen2.5-Omni); None: the model I/O's (the recipe's) flag
    use_audio_in_video: bool | None = None


class AVModelIO(ABC):
    """Turns rows into model inputs and returns per-row summed response log-probs; also generates."""

    #: how a missing stream is fed: "drop" (no placeholder tokens, no encoder call) or "zero_dummy"
    #: (a dummy input goes through the encoder and is multiplied by zero: every rank runs the same
    #: encoder calls, which ZeRO-3 requires).
    missing_modality: str = "drop"

    #: audio sample rate (Hz) the model_io feeds its model; decode at this rate to avoid resampling. None: no audio.
    sample_rate: int | None = None

    @abstractmethod
    def collate(self, rows: Sequence[Row]) -> dict[str, Any]:
        """Tokenise and featurise a batch (CPU). Response tokens are labelled; prompt, padding and media
        placeholders are -100. Raises ModelIOError naming the row for an empty response / bad media."""

    @abstractmethod
    def logps(
        self, model: torch.nn.Module, batch: dict[str, Any], *, reuse_encoders: bool = True
    ) -> torch.Tensor:
        """(B,) fp32 sums of response-token log-probs. Differentiable w.r.t. ``model``. Padding-invariant."""

    @abstractmethod
    def generate(self, model: torch.nn.Module, rows: Sequence[Row], **generation_kwargs) -> list[str]:
        """Greedy (by default) responses for the rows' prompts; ``Row.response`` is ignored."""

    def settings(self) -> dict[str, Any]:
        """Everything besides the weights that decides this model I/O's log-probs, for cache keys (the reference
        log-prob cache, ``cavpref.trainer.reference``): its class, every constructor option of every class in its
        MRO, read back from the attribute of the same name (so a new media budget or prompt option counts without
        anyone listing it), and its processor's configuration. A subclass that keeps an option under another name
        overrides this; one that keeps none fails here, naming it, instead of sharing a cache it should not."""
        options: dict[str, Any] = {}
        for cls in type(self).__mro__:
            init = cls.__dict__.get("__init__")
            if init is None or cls is object:
                continue
            for name, param in inspect.signature(init).parameters.items():
                if name in ("self", "processor", "model") or param.kind in (
                    param.VAR_POSITIONAL,
                    param.VAR_KEYWORD,
                ):
                    continue
                if not hasattr(self, name):
                    raise AttributeError(
                        f"{type(self).__name__}: constructor option {name!r} is not kept as self.{name}; override "
                        "settings() to report it (reference log-probs are cached under these settings)"
                    )
                options.setdefault(name, getattr(self, name))
        processor = getattr(self, "processor", None)
        return {
            "class": f"{type(self).__module__}.{type(self).__qualname__}",
            "options": options,
            "processor": processor_settings(processor) if processor is not None else None,
        }

    def option_logps(
        self, model: torch.nn.Module, rows: Sequence[Row], options: Sequence[Sequence[str]]
    ) -> list[torch.Tensor]:
        """Log-likelihood of each candidate response: for row i, a tensor (len(options[i]),)."""
        return [s["sum"] for s in self.option_scores(model, rows, options)]

    def option_scores(
        self,
        model: torch.nn.Module,
        rows: Sequence[Row],
        options: Sequence[Sequence[str]],
        letters: Sequence[Sequence[str | None]] | None = None,
    ) -> list[dict[str, torch.Tensor]]:
        """What eval's likelihood mode reads from each candidate, for row i a dict of (len(options[i]),) tensors:
        ``sum`` (summed log-prob of the whole candidate, end of turn included), ``tokens`` (how many tokens that
        sum runs over, so ``sum / tokens`` is the per-token score) and, with ``letters`` (candidate j's answer
        letter, or None for a candidate without one), ``letter``: the log-prob of the letter alone as the start
        of the answer (no end of turn; NaN where None).

        Why one batch: the letter is its own continuation of the same prompt and media, so with shared-prefix
        scoring every candidate and every letter of a row ride on one packed prefix (one forward)."""
        flat = [
            Row(
                r.prompt,
                o,
                r.media,
                r.media_key,
                f"{r.row_id}/opt{j}",
                use_audio_in_video=r.use_audio_in_video,
            )
            for r, opts in zip(rows, options)
            for j, o in enumerate(opts)
        ]
        letter_at = []  # (row, candidate) of each letter row
        for i, r in enumerate(rows):
            for j, letter in enumerate(letters[i] if letters is not None else ()):
                if letter is not None:
                    letter_at.append((i, j))
                    flat.append(
                        Row(
                            r.prompt,
                            letter,
                            r.media,
                            r.media_key,
                            f"{r.row_id}/letter{j}",
                            end_turn=False,
                            use_audio_in_video=r.use_audio_in_video,
                        )
                    )
        batch = self.collate(flat)
        with torch.no_grad():
            scores = self.logps(model, batch).float().cpu()
        tokens = (batch["labels"] != IGNORE_INDEX).sum(-1).cpu()
        out, i = [], 0
        for opts in options:
            n = len(opts)
            out.append({"sum": scores[i : i + n], "tokens": tokens[i : i + n]})
            i += n
        if letters is not None:
            for row in out:
                row["letter"] = torch.full_like(row["sum"], float("nan"))
            for k, (r, j) in enumerate(letter_at):
                out[r]["letter"][j] = scores[i + k]
        return out


def processor_settings(processor: Any) -> dict[str, Any]:
    """A processor's (or tokenizer's) configuration: its sub-processors' settings (``to_dict``: frame sizes, pixel
    limits, audio features), its chat template and its tokenizer's class, special tokens and vocabulary."""
    tokenizer = getattr(processor, "tokenizer", processor)
    out = processor.to_dict() if processor is not tokenizer and hasattr(processor, "to_dict") else {}
    out["chat_template"] = getattr(processor, "chat_template", None) or getattr(
        tokenizer, "chat_template", None
    )
    if hasattr(tokenizer, "get_vocab"):
        out["tokenizer"] = {
            "class": type(tokenizer).__name__,
            "special_tokens": {k: str(v) for k, v in getattr(tokenizer, "special_tokens_map", {}).items()},
            "vocab": sorted(tokenizer.get_vocab().items()),
        }
    return out
