"""ScoringConfig: which similarity models score the data, where they come from, and how media are read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cavpref.media.decode import FramePolicy

from .maths import NORMALISATIONS


@dataclass
class ScoringConfig:
    """Flat fields so the HF argument parser (and a recipe YAML) can set every one of them.

    Model fields take a hub id or a local folder and go through ``from_pretrained`` unchanged; nothing
    else is fetched. ``avsm_backend="text_bridge"`` is the paper's CLIP×CLAP ``T_sim``; any name registered
    with ``register_backend("av", ...)`` (``pe_audio_video`` ships) scores audio against video directly.
    """

    clap_backend: str = "transformers"  # or "laion_clap" (optional extra, needs a .pt checkpoint path)
    clap_model: str = "laion/clap-htsat-unfused"
    clip_backend: str = "transformers"  # or "open_clip" (optional extra)
    clip_model: str = "openai/clip-vit-base-patch32"
    clip_pretrained: str | None = None  # open_clip only: pretrained tag or checkpoint file
    avsm_backend: str = "text_bridge"  # or a direct audio-video backend, e.g. "pe_audio_video"
    av_model: str | None = None  # model of the direct backend (e.g. "facebook/pe-av-large")
    vocabulary: list[str] | None = None  # bridge texts for T_sim (labels); see docs/scoring.md
    vocabulary_file: str | None = None  # or one text per line
    clip_template: str = "{}"  # vocabulary text -> CLIP prompt, e.g. "a photo of {}"
    clap_template: str = "{}"  # vocabulary text -> CLAP prompt, e.g. "the sound of {}"
    tsim_norm: str = "softmax"  # "softmax" (probabilities over the vocabulary) or "unit"
    clip_scale: float | None = None  # softmax temperature; None = the model's own logit scale
    clap_scale: float | None = None
    device: str = "cpu"
    batch_size: int = 16
    cache_dir: str | None = None  # on-disk embedding cache (sqlite); None = in-memory only
    num_frames: int | None = 8  # frame policy for the visual side (cavpref.media.decode.FramePolicy)
    fps: float | None = None
    max_frames: int = 32
    max_audio_windows: int = 6  # long audio: mean over at most this many full CLAP windows
    progress: bool = True
    laion_clap_amodel: str = "HTSAT-tiny"  # laion_clap only: audio tower of the checkpoint
    laion_clap_fusion: bool = False  # laion_clap only: fused checkpoint

    def __post_init__(self):
        if self.tsim_norm not in NORMALISATIONS:
            raise ValueError(f"ScoringConfig.tsim_norm: {self.tsim_norm!r} not in {NORMALISATIONS}")
        if self.batch_size < 1:
            raise ValueError(f"ScoringConfig.batch_size must be >= 1, got {self.batch_size}")
        if self.avsm_backend != "text_bridge" and not self.av_model:
            raise ValueError(f"ScoringConfig.avsm_backend={self.avsm_backend!r} needs av_model")

    @property
    def frame_policy(self) -> FramePolicy:
        return FramePolicy(num_frames=self.num_frames, fps=self.fps, max_frames=self.max_frames)

    def load_vocabulary(self) -> list[str] | None:
        """The configured bridge vocabulary (list, then file), de-duplicated in order; None if unset."""
        texts = list(self.vocabulary or [])
        if self.vocabulary_file:
            path = Path(self.vocabulary_file)
            if not path.is_file():
                raise FileNotFoundError(f"ScoringConfig.vocabulary_file: {path} does not exist")
            texts += [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
        texts = list(dict.fromkeys(t for t in texts if t))
        return texts or None
