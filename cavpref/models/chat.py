"""Shared machinery of chat-template model I/Os: row checks, media de-duplication, prompt/response token layout,
padding, and the response log-prob sum.

``ChatModelIO`` implements the whole ``AVModelIO`` protocol except four model-specific hooks, so bringing a new
AVLLM means one small subclass (see docs/models.md):

- ``encode_media(media)``: featurise one media item on CPU and say which token ids replace each placeholder;
- ``stack_media(videos, audios)``: stack the per-item tensors of the *unique* media of a batch;
- ``forward_logits(model, batch, reuse_encoders)``: logits for the batch (encoders once per unique media when
  ``reuse_encoders``);
- ``generate_ids(model, batch, **kw)``: new token ids for a left-padded prompt batch.

Token layout of a row: chat-template prompt (system + user turn with one placeholder per present stream + the
question) with each placeholder replaced by its expansion, then the completion: everything the template renders
after the prompt for the assistant turn (the response, the end-of-turn marker and the newline after it). Only the
completion is labelled. It is tokenised as TRL's ``DPOTrainer`` tokenises a conversational row (TRL 1.16,
``_prepare_dataset``): prompt and prompt + completion each tokenised whole, the completion starting where the two
token sequences diverge, so every method scores the tokens TRL scores (before, the newline after the end of turn
was left out: one token fewer than TRL per row, issue 57).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import torch
from transformers.utils import logging

from cavpref.media.decode import DecodedMedia
from cavpref.models.base import AVModelIO, ModelIOError, Row
from cavpref.models.common import (
    IGNORE_INDEX,
    EncodedMedia,
    HeadAtPositions,
    check_media,
    describe_row,
    gathered_logps,
    model_load_kwargs,
    pad,
    response_index,
    response_logps,
    to_device,
    unwrap,
)
from cavpref.models.feature_cache import FeatureCache
from cavpref.models.shared_prefix import (
    as_attention_mask,
    attention_kernel,
    block_mask,
    gathered_row_logps,
    pack_rows,
    packed_positions,
    unsupported_reason,
)
from cavpref.models.step import step_logits

logger = logging.get_logger(__name__)


def context_length(model: Any) -> int | None:
    """The language model's context size (``max_position_embeddings`` of its text config), or None."""
    config = getattr(model, "config", None)
    if config is None:
        return None
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    value = getattr(text, "max_position_embeddings", None) or getattr(config, "max_position_embeddings", None)
    return int(value) if isinstance(value, int) and value > 0 else None


class ChatModelIO(AVModelIO):
    """Chat-template model I/O skeleton: ``collate`` / ``logps`` / ``generate`` on top of four hooks.

    Batch (``collate``): ``input_ids`` / ``attention_mask`` / ``labels`` (B, L) right-padded, ``row_ids``,
    ``media`` (the stacked tensors of the batch's *distinct* media), ``row_video`` / ``row_audio`` (B,) indices
    into them (-1: the row has no such stream). Rows share media when their ``media_key`` is equal or they
    hold the same DecodedMedia object.

    Missing streams. ``drop``: no placeholder for the stream, no encoder call for it. ``zero_dummy``: the same
    prompt layout as ``drop`` (so a row's log-prob is bit-identical to ``drop``), and in addition every encoder
    runs exactly once per forward on every rank — on the batch's real streams, or, when no row of the batch has
    that stream, on a fixed all-zero dummy input whose output is multiplied by 0 and added to the input
    embeddings. The dummy adds exactly nothing to logits and gradients; it puts every encoder parameter in the
    graph with an exact-zero gradient, which ZeRO-3 (same collective calls on all ranks) and DDP without
    ``find_unused_parameters`` need. ``generate`` never feeds dummies.
    """

    #: where things live inside the model, for ``prepare_model`` (LoRA targets, freezing)
    language_model_prefix: str = ""
    vision_modules: tuple[str, ...] = ()
    audio_modules: tuple[str, ...] = ()
    projector_modules: tuple[str, ...] = ()
    default_system_prompt: str | None = None
    #: True when ``forward_logits`` takes ``position_ids`` from the batch and passes a 4D ``attention_mask`` through
    #: untouched — what shared-prefix scoring needs; a subclass that does not say so is scored on full rows
    supports_shared_prefix: bool = False
    #: which side packed prefix groups are padded on (log-probs are the same either way; tests check both)
    packed_padding_side: str = "right"
    #: what ``from_pretrained`` loads the model with (override ``load_model`` for anything fancier)
    auto_model_class: str = "AutoModelForCausalLM"
    #: the rows' token layout, part of ``settings()`` and so of the reference-cache key: reference log-probs
    #: cached under the layout before issue 57 (the newline after the end of turn not scored) are recomputed
    token_layout: str = "trl-1.16"

    def __init__(
        self,
        processor: Any,
        *,
        model: torch.nn.Module | None = None,
        missing_modality: str = "drop",
        system_prompt: str | None = None,
        max_length: int | None = None,
        shared_prefix: bool = True,
        feature_cache_size: int = 0,
    ):
        if missing_modality not in ("drop", "zero_dummy"):
            raise ValueError(f"missing_modality must be 'drop' or 'zero_dummy', got {missing_modality!r}")
        self.processor = processor
        self.tokenizer = getattr(processor, "tokenizer", processor)
        self.model = model
        self.missing_modality = missing_modality
        self.system_prompt = self.default_system_prompt if system_prompt is None else system_prompt
        # a row longer than the model's context would only fail deep in the forward (or exhaust memory)
        self.max_length = max_length if max_length is not None else context_length(model)
        #: score each distinct (prompt, media) prefix once (cavpref/models/shared_prefix.py); exact, so on by default
        self.shared_prefix = shared_prefix
        #: each distinct decoded media featurised once (cavpref/models/feature_cache.py); exact. Kept as an
        #: attribute for ``settings()``: like the collator's ``cache_size`` it is part of the reference-cache key
        #: (a run that changes it recomputes, never reads a wrong entry)
        self.feature_cache_size = feature_cache_size
        self.features = FeatureCache(feature_cache_size)
        self.pad_id = (
            self.tokenizer.pad_token_id
            if self.tokenizer.pad_token_id is not None
            else self.tokenizer.eos_token_id
        )
        self.end_of_turn_id = self._probe_end_of_turn()

    # ----- loading -------------------------------------------------------------------------------------------
    @classmethod
    def from_pretrained(cls, path_or_id: str, **kwargs: Any) -> ChatModelIO:
        """Processor (``AutoProcessor``) + model from a hub id or folder, exactly as a released checkpoint loads;
        ``kwargs`` are AVModelArguments fields (or ``config=AVModelArguments(...)``). The model is ``model_io.model``."""
        from transformers import AutoProcessor

        from cavpref.models.config import AVModelArguments

        cfg = kwargs.pop("config", None) or AVModelArguments.from_kwargs(path_or_id, **kwargs)
        processor = AutoProcessor.from_pretrained(path_or_id, trust_remote_code=cfg.trust_remote_code)
        return cls(processor, model=cls.load_model(path_or_id, cfg), **cls.model_io_kwargs(cfg))

    @classmethod
    def load_model(cls, path_or_id: str, cfg: Any) -> torch.nn.Module:
        import transformers

        return getattr(transformers, cls.auto_model_class).from_pretrained(
            path_or_id, **model_load_kwargs(cfg)
        )

    @classmethod
    def model_io_kwargs(cls, cfg: Any) -> dict[str, Any]:
        """Constructor options taken from a AVModelArguments."""
        return {
            "missing_modality": cfg.missing_modality,
            "system_prompt": cfg.system_prompt,
            "max_length": cfg.model_max_length,
            "shared_prefix": cfg.shared_prefix,
            "feature_cache_size": cfg.feature_cache_size,
        }

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "token_layout": self.token_layout}

    # ----- hooks ---------------------------------------------------------------------------------------------
    @property
    def placeholder_ids(self) -> tuple[int, ...]:
        """Token ids that only the model_io may place in a prompt (media placeholders)."""
        raise NotImplementedError(f"{type(self).__name__}.placeholder_ids")

    def content_items(self, has_video: bool, has_audio: bool) -> list[dict]:
        items = [{"type": "video"}] if has_video else []
        return items + ([{"type": "audio"}] if has_audio else [])

    def encode_media(self, media: DecodedMedia) -> EncodedMedia:
        """Featurise one media item (CPU): placeholder expansions + per-stream tensors."""
        raise NotImplementedError(f"{type(self).__name__}.encode_media")

    def media_options(self, row: Row) -> dict[str, Any]:
        """Keyword arguments of ``encode_media`` that a row decides besides its media (default: none). Rows share
        an encoding only when these are equal too, and the feature cache keys on them."""
        return {}

    def stack_media(self, videos: list[dict], audios: list[dict]) -> dict[str, torch.Tensor]:
        """Stack the per-item tensors of the batch's distinct videos / audios."""
        raise NotImplementedError(f"{type(self).__name__}.stack_media")

    def forward_logits(self, model: torch.nn.Module, batch: dict, *, reuse_encoders: bool) -> torch.Tensor:
        """(B, L, V) logits; encoders once per distinct media when ``reuse_encoders``. Inside ``logps`` the output
        head (``get_output_embeddings()``) is hooked to run only at the response positions, so the same code
        returns (B, K, V) there — call ``model(...)`` once and return its ``.logits``."""
        raise NotImplementedError(f"{type(self).__name__}.forward_logits")

    def generate_ids(self, model: torch.nn.Module, batch: dict, **generation_kwargs) -> torch.Tensor:
        """New token ids per row (a list or (B, N) tensor) for a left-padded prompt batch."""
        raise NotImplementedError(f"{type(self).__name__}.generate_ids")

    # ----- text layout ---------------------------------------------------------------------------------------
    def messages(self, prompt: str, has_video: bool, has_audio: bool) -> list[dict]:
        msgs = (
            [{"role": "system", "content": [{"type": "text", "text": self.system_prompt}]}]
            if self.system_prompt
            else []
        )
        content = self.content_items(has_video, has_audio) + [{"type": "text", "text": prompt}]
        return msgs + [{"role": "user", "content": content}]

    def _render(self, msgs: list[dict], **kw) -> str:
        renderer = self.processor if hasattr(self.processor, "apply_chat_template") else self.tokenizer
        return renderer.apply_chat_template(msgs, tokenize=False, **kw)

    def completion_text(self, msgs: list[dict], prompt_text: str, response: str, where: str) -> str:
        """What the template renders after the prompt for the assistant turn ``response``: the response, the end
        of turn and whatever follows it (Qwen's newline), all of which TRL labels."""
        full = self._render(msgs + [{"role": "assistant", "content": [{"type": "text", "text": response}]}])
        if not full.startswith(prompt_text):
            raise ModelIOError(
                f"{where}: the chat template does not render the prompt as a prefix of prompt + "
                "response; cannot label response tokens"
            )
        return full[len(prompt_text) :]

    def split_completion(
        self, prompt_ids: list[int], prompt_text: str, completion: str
    ) -> tuple[int, list[int]]:
        """(prompt tokens kept, completion ids), as TRL 1.16's ``DPOTrainer`` splits a row: prompt + completion
        tokenised whole, the completion starting where it diverges from the tokenised prompt. Where a BPE merge
        crosses the boundary, the prompt's diverging tail is left out, as TRL leaves it out (with its warning)."""
        full = self.tokenizer(prompt_text + completion, add_special_tokens=False)["input_ids"]
        keep = next(
            (i for i, (a, b) in enumerate(zip(prompt_ids, full)) if a != b), min(len(prompt_ids), len(full))
        )
        if keep < len(prompt_ids):
            logger.warning_once(
                "the tokenised prompt is not a prefix of the tokenised prompt + completion (a token merges across "
                f"the boundary): its tail {self.tokenizer.decode(prompt_ids[keep:])!r} is left out of the row, "
                "as TRL's DPOTrainer leaves it out"
            )
        return keep, full[keep:]

    def _probe_end_of_turn(self) -> int | None:
        msgs = self.messages("probe", False, False)
        prompt = self._render(msgs, add_generation_prompt=True)
        comp = self.completion_text(msgs, prompt, "A", "end-of-turn probe")
        ids = self.tokenizer(comp, add_special_tokens=False)["input_ids"]
        n = len(self.tokenizer("A", add_special_tokens=False)["input_ids"])
        return ids[n] if len(ids) > n else self.tokenizer.eos_token_id

    # ----- collate -------------------------------------------------------------------------------------------
    def _encode_unique(self, rows: Sequence[Row]) -> tuple[list[EncodedMedia], list[int | None]]:
        """Featurise each distinct media once. Rows share when their ``media_key`` matches or when they hold the
        same DecodedMedia object; rows claiming one key must agree on which streams are present."""
        keys: dict[Any, int] = {}
        first: dict[Any, int] = {}
        encoded, row_media = [], []
        for i, row in enumerate(rows):
            where = describe_row(i, row)
            if row.media is not None:
                check_media(row.media, where)
            if row.media is None or (row.media.frames is None and row.media.audio is None):
                row_media.append(None)
                continue
            options = tuple(sorted(self.media_options(row).items()))
            key = (
                ("key", row.media_key, options)
                if row.media_key is not None
                else ("obj", id(row.media), options)
            )
            if key in keys:
                other = rows[first[key]].media
                if (other.has_video, other.has_audio) != (row.media.has_video, row.media.has_audio):
                    raise ModelIOError(
                        f"{where}: media_key {row.media_key!r} is shared with "
                        f"{describe_row(first[key], rows[first[key]])} but the present streams differ"
                    )
            else:
                keys[key], first[key] = len(encoded), i
                try:
                    encode = functools.partial(self.encode_media, **dict(options))
                    encoded.append(self.features.get(row.media, encode, options))
                except ModelIOError:
                    raise
                except Exception as err:  # processor failures: name the row
                    raise ModelIOError(f"{where}: media could not be featurised: {err}") from err
            row_media.append(keys[key])
        return encoded, row_media

    def _prompt_tokens(
        self, row: Row, enc: EncodedMedia | None, where: str
    ) -> tuple[list[int], list[dict], str]:
        """The row's tokenised prompt (placeholders not yet expanded, each checked), messages and rendered text."""
        has_v = enc is not None and enc.video is not None
        has_a = enc is not None and enc.audio is not None and bool(enc.meta.get("audio_placeholder", True))
        msgs = self.messages(row.prompt, has_v, has_a)
        text = self._render(msgs, add_generation_prompt=True)
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        expansions = enc.expansions if enc is not None else {}
        for pid in self.placeholder_ids:
            n, expected = ids.count(pid), int(pid in expansions)
            if n != expected:
                raise ModelIOError(
                    f"{where}: prompt has {n} {self.tokenizer.convert_ids_to_tokens(pid)!r} "
                    f"placeholder(s) where {expected} is expected (media tokens in the prompt text?)"
                )
        return ids, msgs, text

    @staticmethod
    def _expand(ids: list[int], enc: EncodedMedia | None) -> list[int]:
        expansions = enc.expansions if enc is not None else {}
        out: list[int] = []
        for t in ids:
            out.extend(expansions.get(t, (t,)))
        return out

    def _prompt_ids(self, row: Row, enc: EncodedMedia | None, where: str) -> list[int]:
        """The row's generation prompt, each placeholder replaced by its expansion."""
        return self._expand(self._prompt_tokens(row, enc, where)[0], enc)

    def _row_ids(self, row: Row, enc: EncodedMedia | None, where: str) -> tuple[list[int], list[int]]:
        """(prompt ids with expansions, labelled completion ids) of a scored row."""
        ids, msgs, prompt_text = self._prompt_tokens(row, enc, where)
        completion = self.completion_text(msgs, prompt_text, row.response, where)
        if not row.end_turn:  # the answer's start only: the end of turn the template adds is not scored
            if not completion.startswith(row.response):
                raise ModelIOError(
                    f"{where}: the chat template does not render the response verbatim after the prompt; "
                    "cannot score it without its end of turn"
                )
            completion = row.response
        keep, resp = self.split_completion(ids, prompt_text, completion)
        return self._expand(ids[:keep], enc), resp

    def _media_batch(self, encoded: list[EncodedMedia], row_media: list[int | None]) -> dict[str, Any]:
        vid_index, aud_index, videos, audios = {}, {}, [], []
        for k, enc in enumerate(encoded):
            if enc.video is not None:
                vid_index[k] = len(videos)
                videos.append(enc.video)
            if enc.audio is not None:
                aud_index[k] = len(audios)
                audios.append(enc.audio)
        row_video = [vid_index.get(k, -1) if k is not None else -1 for k in row_media]
        row_audio = [aud_index.get(k, -1) if k is not None else -1 for k in row_media]
        return {
            "row_video": torch.tensor(row_video, dtype=torch.long),
            "row_audio": torch.tensor(row_audio, dtype=torch.long),
            "media": self.stack_media(videos, audios),
        }

    def collate(self, rows: Sequence[Row]) -> dict[str, Any]:
        if not rows:
            raise ModelIOError("collate: empty batch")
        encoded, row_media = self._encode_unique(rows)
        seqs, labels, prompts, responses = [], [], [], []
        for i, row in enumerate(rows):
            where = describe_row(i, row)
            if not isinstance(row.response, str) or not row.response.strip():
                raise ModelIOError(f"{where}: empty response; there is nothing to score")
            enc = encoded[row_media[i]] if row_media[i] is not None else None
            prompt_ids, resp = self._row_ids(row, enc, where)
            if self.max_length is not None and len(prompt_ids) + len(resp) > self.max_length:
                raise ModelIOError(
                    f"{where}: {len(prompt_ids) + len(resp)} tokens exceed max_length={self.max_length}"
                )
            seqs.append(prompt_ids + resp)
            labels.append([IGNORE_INDEX] * len(prompt_ids) + resp)
            prompts.append(prompt_ids)
            responses.append(resp)
        input_ids, attention_mask = pad(seqs, self.pad_id, "right")
        label_t, _ = pad(labels, IGNORE_INDEX, "right")
        batch = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "labels": label_t,
            "row_ids": [r.row_id for r in rows],
        }
        batch.update(self._media_batch(encoded, row_media))
        if (
            self.shared_prefix
        ):  # the full rows stay in the batch: the fallback when the model cannot take a block mask
            packed = pack_rows(prompts, responses, row_media, self.pad_id, self.packed_padding_side)
            if packed is not None:
                batch["packed"] = packed
        return batch

    def collate_prompts(self, rows: Sequence[Row]) -> dict[str, Any]:
        """Left-padded prompts (generation prompt appended), for ``generate``."""
        if not rows:
            raise ModelIOError("generate: empty batch")
        encoded, row_media = self._encode_unique(rows)
        seqs = [
            self._prompt_ids(r, encoded[m] if m is not None else None, describe_row(i, r))
            for i, (r, m) in enumerate(zip(rows, row_media))
        ]
        for i, (row, ids) in enumerate(zip(rows, seqs)):  # refused here, before any token reaches the model
            if self.max_length is not None and len(ids) >= self.max_length:
                raise ModelIOError(
                    f"{describe_row(i, row)}: prompt of {len(ids)} tokens leaves no room to generate "
                    f"(prompts that long exceed max_length={self.max_length})"
                )
        input_ids, attention_mask = pad(seqs, self.pad_id, "left")
        batch = {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "row_ids": [r.row_id for r in rows],
        }
        batch.update(self._media_batch(encoded, row_media))
        return batch

    # ----- device side ---------------------------------------------------------------------------------------
    def full_positions(self, model: torch.nn.Module, batch: dict[str, Any]) -> torch.Tensor:
        """Position ids of the full (right-padded) rows, (B, L) — or (3, B, L) for 3D rope; packed rows copy them."""
        am = batch["attention_mask"]
        return (am.cumsum(-1) - 1).clamp(min=0)

    def packed_batch(self, model: torch.nn.Module, batch: dict[str, Any]) -> dict[str, Any]:
        """The model batch of the packed layout: one sequence per distinct prefix, the (G, 1, L', L') block mask as
        ``attention_mask``, positions copied from the full rows, and each group's media."""
        packed, core = batch["packed"], unwrap(model)
        device = core.device
        full = self.full_positions(
            model, to_device({k: v for k, v in batch.items() if k != "packed"}, device)
        )
        mask = block_mask(packed["segment"].to(device), packed["valid"].to(device))
        dtype = (
            torch.get_autocast_dtype(device.type)
            if torch.is_autocast_enabled(device.type)
            else core.get_input_embeddings().weight.dtype
        )
        group_row = packed["group_row"]
        view = {
            "input_ids": packed["input_ids"],
            "attention_mask": as_attention_mask(mask, attention_kernel(model), dtype),
            "position_ids": packed_positions(full, packed),
            "media": batch["media"],
        }
        for key in ("row_video", "row_audio", "row_interleaved"):  # per-row media fields, per group
            if key in batch:
                view[key] = batch[key][group_row]
        return view

    def logps(
        self, model: torch.nn.Module, batch: dict[str, Any], *, reuse_encoders: bool = True
    ) -> torch.Tensor:
        packed = batch.get("packed") if self.shared_prefix else None
        if packed is not None:
            reason = (
                unsupported_reason(model)
                if self.supports_shared_prefix
                else (
                    f"{type(self).__name__} does not declare supports_shared_prefix (forward_logits must take "
                    "position_ids from the batch and pass a 4D attention_mask through); scoring full rows"
                )
            )
            if reason is None:
                return self._packed_logps(model, batch, reuse_encoders=reuse_encoders)
            logger.warning_once(f"shared-prefix scoring is off: {reason}")
        return self._full_row_logps(model, batch, reuse_encoders=reuse_encoders)

    def _packed_logps(
        self, model: torch.nn.Module, batch: dict[str, Any], *, reuse_encoders: bool
    ) -> torch.Tensor:
        packed = batch["packed"]
        view = self.packed_batch(model, batch)
        with HeadAtPositions(model, packed["target_pos"], tuple(packed["input_ids"].shape)) as head:
            logits = step_logits(model, self, view, reuse_encoders=reuse_encoders)  # one root forward (FSDP)
        if not (
            head.fired and logits.shape[:2] == packed["target_pos"].shape
        ):  # a head the hook did not catch
            index = packed["target_pos"].to(logits.device).unsqueeze(-1).expand(-1, -1, logits.shape[-1])
            logits = logits.gather(1, index)
        return gathered_row_logps(logits, packed)

    def _full_row_logps(
        self, model: torch.nn.Module, batch: dict[str, Any], *, reuse_encoders: bool
    ) -> torch.Tensor:
        labels = batch["labels"]
        positions, targets, valid = response_index(labels)
        with HeadAtPositions(model, positions, labels.shape) as head:  # logits at response positions only
            logits = step_logits(
                model, self, {k: v for k, v in batch.items() if k != "packed"}, reuse_encoders=reuse_encoders
            )  # one root forward (FSDP)
        if head.fired and logits.shape[:2] == positions.shape:
            return gathered_logps(logits, targets.to(logits.device), valid.to(logits.device))
        return response_logps(logits, labels.to(logits.device))

    def generate(self, model: torch.nn.Module, rows: Sequence[Row], **generation_kwargs) -> list[str]:
        kw = {"max_new_tokens": 32, "do_sample": False}
        kw.update(generation_kwargs)
        core = unwrap(model)  # LoRA stays active (injected in place); disable_adapter() is honoured too
        was_training = core.training
        core.eval()  # no dropout while generating; the caller's mode is restored
        try:
            new_ids = self.generate_ids(model, self.collate_prompts(rows), **kw)
        finally:
            core.train(was_training)
        return [self.tokenizer.decode(seq, skip_special_tokens=True).strip() for seq in new_ids]

    def eos_ids(self, model: torch.nn.Module) -> list[int]:
        """End-of-turn from the template plus the model's own eos ids."""
        eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        eos = [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))
        if self.end_of_turn_id is not None and self.end_of_turn_id not in eos:
            eos.insert(0, self.end_of_turn_id)
        return eos
