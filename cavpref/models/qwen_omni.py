"""Qwen2.5-Omni thinker model_io (native in transformers: ``Qwen2_5OmniThinkerForConditionalGeneration`` +
``Qwen2_5OmniProcessor``).

Facts this module relies on (see /work/shared/QWEN_OMNI_NOTES.md): the processor's class default video size
overrides the video processor's, so size and fps are passed on every call; ``attention_mask`` is always passed;
3D rope positions are computed here per row (``get_rope_index``, in ``collate``: CPU side, once per batch) and
passed as ``position_ids``, because the model's ``use_audio_in_video`` is one flag per forward while a CAVPref
batch mixes interleaved audio+video rows with video-only rows (MAT) — positions would silently be wrong for one
kind otherwise. The flag is per row too: a row's own ``use_audio_in_video`` (``Row``, from the preference row's
column of that name; None: the recipe's) decides whether its video's sound is interleaved with its frames by
time (one audio token run per 2 s window between the video's) or follows as a separate audio placeholder, and
the batch's ``row_interleaved`` carries that to the rope positions and to ``generate``.

Encoder reuse: each unique video goes through the vision encoder once and its features are handed to the model
as ``mm_encoder_outputs`` (one entry per row that shows it); each unique audio goes through the audio encoder
once and is scattered into ``inputs_embeds`` at the row's audio placeholders.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from transformers.modeling_outputs import BaseModelOutputWithPooling

from cavpref.media.decode import DecodedMedia
from cavpref.models.chat import ChatModelIO
from cavpref.models.common import (
    EncodedMedia,
    frames_fps,
    model_load_kwargs,
    resample,
    to_device,
    unwrap,
    zero_contribution,
)
from cavpref.models.config import AVModelArguments

#: Qwen2.5-Omni's own per-frame video budget (the processor class default, 768 merged 28x28 patches): the 7B
#: checkpoint's video processor allows 12.8 M pixels per frame, i.e. 10,764 video tokens per row at 1080p.
QWEN_VIDEO_MAX_PIXELS = 768 * 28 * 28

QWEN_OMNI_SYSTEM_PROMPT = (
    "You are Qwen, a virtual human developed by the Qwen Team, Alibaba Group, capable of "
    "perceiving auditory and visual inputs, as well as generating text and speech."
)


def _size_get(size: Any, key: str) -> int | None:
    return size.get(key) if hasattr(size, "get") else getattr(size, key, None)


class QwenOmniModelIO(ChatModelIO):
    """Model I/O for the Qwen2.5-Omni thinker. ``from_pretrained`` accepts a thinker folder or a full Omni
    checkpoint (``Qwen/Qwen2.5-Omni-7B``: the thinker is loaded, talker / token2wav weights are skipped)."""

    supports_shared_prefix = True
    language_model_prefix = "model.language_model"
    vision_modules = ("model.visual",)
    audio_modules = ("model.audio_tower",)
    projector_modules = ("model.visual.merger", "model.audio_tower.proj")
    default_system_prompt = QWEN_OMNI_SYSTEM_PROMPT

    def __init__(
        self,
        processor: Any,
        *,
        model: torch.nn.Module | None = None,
        missing_modality: str = "drop",
        system_prompt: str | None = None,
        max_length: int | None = None,
        use_audio_in_video: bool = False,
        video_fps: float = 2.0,
        video_min_pixels: int | None = None,
        video_max_pixels: int | None = None,
        cap_pixels_per_frame: bool | None = True,
        audio_max_seconds: float | None = 30.0,
        shared_prefix: bool = True,
        feature_cache_size: int = 0,
    ):
        super().__init__(
            processor,
            model=model,
            missing_modality=missing_modality,
            system_prompt=system_prompt,
            max_length=max_length,
            shared_prefix=shared_prefix,
            feature_cache_size=feature_cache_size,
        )
        self.use_audio_in_video = use_audio_in_video
        self.video_fps = video_fps
        vsize = processor.video_processor.size
        self.video_min_pixels = video_min_pixels or _size_get(vsize, "shortest_edge")
        ceiling = _size_get(vsize, "longest_edge")
        self.video_max_pixels = video_max_pixels or min(
            ceiling or QWEN_VIDEO_MAX_PIXELS, QWEN_VIDEO_MAX_PIXELS
        )
        self.cap_pixels_per_frame = cap_pixels_per_frame
        self.sample_rate = int(processor.feature_extractor.sampling_rate)
        # Every clip is padded to (cut at) this many samples: the extractor pads to max_length only, and the
        # batch's features are concatenated, so one length for all; 30 s instead of the 7B's 300 s chunk_length
        # (15.4 MB and ~20x the CPU time per clip there).
        self.audio_max_seconds = audio_max_seconds
        self.audio_samples = (
            round(audio_max_seconds * self.sample_rate)
            if audio_max_seconds
            else int(processor.feature_extractor.n_samples)
        )
        self.audio_cuts = 0  # clips cut to audio_samples (warned about once)
        self.video_token_id = processor.video_token_id
        self.audio_token_id = processor.audio_token_id

    @property
    def placeholder_ids(self) -> tuple[int, ...]:
        return (self.video_token_id, self.audio_token_id, self.processor.image_token_id)

    # ----- loading -------------------------------------------------------------------------------------------
    @classmethod
    def load_model(cls, path_or_id: str, cfg: AVModelArguments) -> torch.nn.Module:
        """The thinker from a thinker folder, or from a full Omni checkpoint (config ``qwen2_5_omni``: its
        ``thinker_config`` is used and transformers' key mapping strips the ``thinker.`` prefix; talker and
        token2wav weights are left unloaded)."""
        from transformers import PreTrainedConfig, Qwen2_5OmniConfig
        from transformers import Qwen2_5OmniThinkerForConditionalGeneration as Thinker

        load_kw = model_load_kwargs(cfg)
        raw, _ = PreTrainedConfig.get_config_dict(path_or_id)
        if raw.get("model_type") == "qwen2_5_omni":
            load_kw["config"] = Qwen2_5OmniConfig.from_pretrained(path_or_id).thinker_config
        return Thinker.from_pretrained(path_or_id, **load_kw)

    @classmethod
    def model_io_kwargs(cls, cfg: AVModelArguments) -> dict[str, Any]:
        return {
            **super().model_io_kwargs(cfg),
            "use_audio_in_video": cfg.use_audio_in_video,
            "video_fps": cfg.video_fps,
            "video_min_pixels": cfg.video_min_pixels,
            "video_max_pixels": cfg.video_max_pixels,
            "audio_max_seconds": cfg.audio_max_seconds,
        }

    # ----- CPU side ------------------------------------------------------------------------------------------
    def _videos_kwargs(self, media: DecodedMedia) -> dict[str, Any]:
        kw = {
            "size": {"shortest_edge": self.video_min_pixels, "longest_edge": self.video_max_pixels},
            "fps": frames_fps(media, self.video_fps),
            "do_sample_frames": False,
            "input_data_format": "channels_last",
        }  # never guess: a 3-pixel-high frame looks channels-first
        if self.cap_pixels_per_frame is not None:
            kw["cap_pixels_per_frame"] = self.cap_pixels_per_frame
        return kw

    def media_options(self, row) -> dict[str, Any]:
        """The row's effective ``use_audio_in_video`` (its own, else the recipe's): it changes the token layout."""
        flag = self.use_audio_in_video if row.use_audio_in_video is None else bool(row.use_audio_in_video)
        return {"use_audio_in_video": flag}

    def encode_media(self, media: DecodedMedia, use_audio_in_video: bool | None = None) -> EncodedMedia:
        proc = self.processor
        flag = self.use_audio_in_video if use_audio_in_video is None else use_audio_in_video
        audio = None
        if media.audio is not None:
            audio = resample(media.audio, int(media.sample_rate), self.sample_rate)
            if audio.shape[0] > self.audio_samples:
                self.audio_cuts += 1
                if self.audio_cuts == 1:  # one warning per model I/O, not one per clip length
                    warnings.warn(
                        f"audio cut to {self.audio_samples / self.sample_rate:g} s (audio_max_seconds; first "
                        f"clip {audio.shape[0] / self.sample_rate:.1f} s); said once, the model I/O counts the "
                        "cut clips (audio_cuts)",
                        stacklevel=2,
                    )
                audio = audio[: self.audio_samples]
        audio_kw = {"audio_kwargs": {"max_length": self.audio_samples, "truncation": True}}
        interleave = flag and media.frames is not None and audio is not None
        enc = EncodedMedia(
            expansions={}, meta={"interleaved": interleave, "audio_placeholder": not interleave}
        )
        if media.frames is not None:
            kw: dict[str, Any] = {"videos": [media.frames], "videos_kwargs": self._videos_kwargs(media)}
            if interleave:
                kw.update(audio=[audio], load_audio_from_video=True, audio_from_video_indices=[0], **audio_kw)
            out = proc(text=[proc.video_token], return_tensors="pt", **kw)
            enc.expansions[self.video_token_id] = out["input_ids"][0].tolist()
            enc.video = {
                k: out[k] for k in ("pixel_values_videos", "video_grid_thw", "video_second_per_grid")
            }
            enc.video["video_second_per_grid"] = enc.video["video_second_per_grid"].float()
            if interleave:
                enc.audio = {k: out[k] for k in ("input_features", "feature_attention_mask")}
                n_audio = int((out["input_ids"][0] == self.audio_token_id).sum())
                enc.audio["audio_num_tokens"] = torch.tensor([n_audio])
        if audio is not None and not interleave:
            out = proc(text=[proc.audio_token], audio=[audio], return_tensors="pt", **audio_kw)
            enc.expansions[self.audio_token_id] = out["input_ids"][0].tolist()
            enc.audio = {k: out[k] for k in ("input_features", "feature_attention_mask")}
            enc.audio["audio_num_tokens"] = torch.tensor([len(enc.expansions[self.audio_token_id])])
        return enc

    def collate(self, rows):
        """The ChatModelIO batch plus ``position_ids`` (3, B, L). Qwen's 3D rope positions depend only on the
        token layout and the config, so they are computed here, on the CPU side of the data pipeline (in
        data-loader workers, once per batch, shared by the policy and the reference forward), rather than row
        by row with small device ops inside every forward. Without a loaded model the forward computes them."""
        batch = super().collate(rows)
        if self.model is not None:
            batch["position_ids"] = self._row_positions(unwrap(self.model), batch)
        return batch

    def _media_batch(self, encoded, row_media) -> dict[str, Any]:
        """The ChatModelIO media batch plus ``row_interleaved`` (B,): each row's video and audio interleaved."""
        out = super()._media_batch(encoded, row_media)
        out["row_interleaved"] = torch.tensor(
            [k is not None and bool(encoded[k].meta.get("interleaved")) for k in row_media], dtype=torch.bool
        )
        return out

    def stack_media(self, videos: list[dict], audios: list[dict]) -> dict[str, torch.Tensor]:
        out = {}
        for items in (videos, audios):
            for key in items[0] if items else {}:
                out[key] = torch.cat([it[key] for it in items])
        return out

    # ----- device side ---------------------------------------------------------------------------------------
    def full_positions(self, model: torch.nn.Module, batch: dict) -> torch.Tensor:
        """The full rows' 3D rope positions (3, B, L): from ``collate`` when it had the model, else computed here."""
        return batch["position_ids"] if "position_ids" in batch else self._row_positions(unwrap(model), batch)

    def _row_positions(self, core: torch.nn.Module, b: dict) -> torch.Tensor:
        """3D rope positions per row, each with its own ``use_audio_in_video`` (``row_interleaved``: the row's
        flag and both streams shown)."""
        ids, am, media = b["input_ids"], b["attention_mask"], b["media"]
        pos = torch.ones((3, *ids.shape), dtype=torch.long, device=ids.device)
        for r in range(ids.shape[0]):
            v, a = int(b["row_video"][r]), int(b["row_audio"][r])
            interleaved = bool(b["row_interleaved"][r])
            p, _ = core.model.get_rope_index(
                ids[r : r + 1],
                None,
                media["video_grid_thw"][v : v + 1] if v >= 0 else None,
                am[r : r + 1],
                interleaved,
                media["feature_attention_mask"][a : a + 1].sum(-1) if a >= 0 else None,
                media["video_second_per_grid"][v : v + 1] if v >= 0 else None,
            )
            pos[:, r] = p[:, 0]
        return pos

    def _dummy_outputs(self, core: torch.nn.Module, need_video: bool, need_audio: bool) -> list[torch.Tensor]:
        """Encoder outputs for fixed all-zero inputs of the smallest legal size (one merged patch group; one
        audio window), used only to be multiplied by zero."""
        outs, dev = [], core.device
        if need_video:
            vc = core.config.vision_config
            m = vc.spatial_merge_size
            pv = torch.zeros(m * m, vc.in_channels * vc.temporal_patch_size * vc.patch_size**2, device=dev)
            grid = torch.tensor([[1, m, m]], device=dev)
            outs += list(core.get_video_features(pv, grid).pooler_output)
        if need_audio:
            ac = core.config.audio_config
            n = 2 * ac.n_window
            feats = torch.zeros(1, ac.num_mel_bins, n, device=dev)
            outs.append(
                core.get_audio_features(
                    feats, torch.ones(1, n, dtype=torch.long, device=dev)
                ).last_hidden_state
            )
        return outs

    def forward_logits(
        self, model: torch.nn.Module, batch: dict, *, reuse_encoders: bool = True
    ) -> torch.Tensor:
        core = unwrap(model)
        b = to_device({k: v for k, v in batch.items() if k not in ("row_ids", "labels")}, core.device)
        ids, media = b["input_ids"], b["media"]
        vrows = [int(v) for v in b["row_video"] if v >= 0]
        arows = [int(a) for a in b["row_audio"] if a >= 0]
        kw: dict[str, Any] = {
            "input_ids": ids,
            "attention_mask": b["attention_mask"],
            "use_cache": False,
            "position_ids": b["position_ids"] if "position_ids" in b else self._row_positions(core, b),
        }
        if vrows:
            kw["video_grid_thw"] = media["video_grid_thw"][vrows]
            kw["video_second_per_grid"] = media["video_second_per_grid"][vrows]
        if arows:
            kw["feature_attention_mask"] = media["feature_attention_mask"][arows]
        embeds = None
        if reuse_encoders:
            if vrows:
                feats = core.get_video_features(
                    media["pixel_values_videos"], media["video_grid_thw"]
                ).pooler_output
                kw["mm_encoder_outputs"] = {
                    "video": BaseModelOutputWithPooling(pooler_output=tuple(feats[i] for i in vrows))
                }
            if arows:
                hidden = core.get_audio_features(
                    media["input_features"], media["feature_attention_mask"]
                ).last_hidden_state
                per_audio = hidden.split(media["audio_num_tokens"].tolist())
                embeds = core.get_input_embeddings()(ids)
                mask = (ids == self.audio_token_id).unsqueeze(-1)
                embeds = embeds.masked_scatter(
                    mask, torch.cat([per_audio[i] for i in arows]).to(embeds.dtype)
                )
        else:
            if vrows:
                chunks = media["pixel_values_videos"].split(media["video_grid_thw"].prod(-1).tolist())
                kw["pixel_values_videos"] = torch.cat([chunks[i] for i in vrows])
            if arows:
                kw["input_features"] = media["input_features"][arows]
        if self.missing_modality == "zero_dummy" and (not vrows or not arows):
            zero = zero_contribution(*self._dummy_outputs(core, not vrows, not arows))
            embeds = core.get_input_embeddings()(ids) if embeds is None else embeds
            embeds = embeds + zero.to(embeds.dtype)
        if embeds is not None:
            kw["inputs_embeds"] = embeds
        return model(**kw).logits

    def generate_ids(self, model: torch.nn.Module, batch: dict, **generation_kwargs) -> list[torch.Tensor]:
        """Rows are generated in two groups (interleaved audio+video or not): ``use_audio_in_video`` is one flag
        per ``generate`` call. Missing streams are dropped here (no dummy: generation is never differentiated)."""
        core = unwrap(model)
        b = to_device({k: v for k, v in batch.items() if k != "row_ids"}, core.device)
        media, rv, ra = b["media"], b["row_video"].tolist(), b["row_audio"].tolist()
        flags = [bool(f) for f in b["row_interleaved"].tolist()]
        out: list[torch.Tensor | None] = [None] * len(rv)
        chunks = (
            media["pixel_values_videos"].split(media["video_grid_thw"].prod(-1).tolist())
            if "pixel_values_videos" in media
            else ()
        )
        for flag in sorted(set(flags)):
            rows = [r for r, f in enumerate(flags) if f == flag]
            vsel = [rv[r] for r in rows if rv[r] >= 0]
            asel = [ra[r] for r in rows if ra[r] >= 0]
            kw = {
                "input_ids": b["input_ids"][rows],
                "attention_mask": b["attention_mask"][rows],
                "use_audio_in_video": flag,
                "pad_token_id": self.pad_id,
                "eos_token_id": self.eos_ids(core),
            }
            if vsel:
                kw.update(
                    pixel_values_videos=torch.cat([chunks[i] for i in vsel]),
                    video_grid_thw=media["video_grid_thw"][vsel],
                    video_second_per_grid=media["video_second_per_grid"][vsel],
                )
            if asel:
                kw.update(
                    input_features=media["input_features"][asel],
                    feature_attention_mask=media["feature_attention_mask"][asel],
                )
            kw.update(generation_kwargs)
            seqs = core.generate(**kw)
            for r, seq in zip(rows, seqs[:, b["input_ids"].shape[1] :]):
                out[r] = seq
        return out
