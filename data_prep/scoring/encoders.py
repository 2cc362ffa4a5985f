"""Embedding backends behind three small protocols, and the registry that picks one by name.

``AudioTextEncoder`` (CLAP), ``ImageTextEncoder`` (CLIP) and ``AudioVideoEncoder`` (a direct joint
audio-video space: Perception Encoder AV ships, ImageBind-style models fit) return unit-norm float32
embeddings, one row per input. Batching, windowing, frame pooling and caching live in the scorers, so a
new backend only has to embed. Default backends load with ``from_pretrained(path_or_id)``; the optional
``laion_clap`` / ``open_clip`` packages are imported only when chosen.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from .cache import fingerprint
from .config import ScoringConfig
from .embedding import AudioTextEncoder, AudioVideoEncoder, ImageTextEncoder, as_unit_numpy
from .encoders_pe import PeAudioVideo


class HFClap:
    """transformers ``ClapModel`` + ``ClapProcessor`` (loads the LAION CLAP checkpoints)."""

    def __init__(self, model: str, device: str = "cpu"):
        from transformers import AutoModel, AutoProcessor

        self.processor = AutoProcessor.from_pretrained(model)
        self.model = AutoModel.from_pretrained(model).to(device).eval()
        self.device = device
        fe = self.processor.feature_extractor
        self.sample_rate = int(fe.sampling_rate)
        self.window_samples = int(fe.nb_max_samples)
        self.logit_scale = float(self.model.logit_scale_a.detach().exp())
        self.fingerprint = fingerprint(
            backend="transformers-clap",
            model=model,
            sr=self.sample_rate,
            window=self.window_samples,
            truncation=fe.truncation,
            padding=fe.padding,
        )

    @torch.inference_mode()
    def embed_audio(self, waves: list[np.ndarray]) -> np.ndarray:
        inputs = self.processor.feature_extractor(waves, sampling_rate=self.sample_rate, return_tensors="pt")
        return as_unit_numpy(self.model.get_audio_features(**inputs.to(self.device)))

    @torch.inference_mode()
    def embed_text(self, texts: list[str]) -> np.ndarray:
        inputs = self.processor.tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
        return as_unit_numpy(self.model.get_text_features(**inputs.to(self.device)))


class HFClip:
    """transformers ``CLIPModel`` + ``CLIPProcessor`` (any AutoModel with get_image/text_features)."""

    def __init__(self, model: str, device: str = "cpu"):
        from transformers import AutoModel, AutoProcessor

        self.processor = AutoProcessor.from_pretrained(model)
        self.model = AutoModel.from_pretrained(model).to(device).eval()
        self.device = device
        self.logit_scale = float(self.model.logit_scale.detach().exp())
        self.fingerprint = fingerprint(backend="transformers-clip", model=model)

    @torch.inference_mode()
    def embed_images(self, images: list[np.ndarray]) -> np.ndarray:
        inputs = self.processor.image_processor(images=list(images), return_tensors="pt")
        return as_unit_numpy(
            self.model.get_image_features(pixel_values=inputs["pixel_values"].to(self.device))
        )

    @torch.inference_mode()
    def embed_text(self, texts: list[str]) -> np.ndarray:
        inputs = self.processor.tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
        return as_unit_numpy(self.model.get_text_features(**inputs.to(self.device)))


def _optional(module: str, extra: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(
            f"the {module!r} scoring backend needs the optional package: "
            f"pip install 'cavpref[{extra}]' ({err})"
        ) from err


class LaionClap:
    """The original ``laion_clap`` package (optional extra: it pins numpy<2, keep it in its own env).

    laion_clap resolves three hub ids by name (``tiny.LAION_CLAP_HUB_IDS``): its ``training.data`` module loads
    their tokenizers at import and ``CLAP_Module`` builds its RoBERTa text tower from ``roberta-base`` before the
    checkpoint overwrites the weights. They come from the HF cache, or — offline — from local folders of those
    names in the working directory (``from_pretrained`` takes a local folder first; docs/scoring.md)."""

    sample_rate = 48_000
    window_samples = 480_000

    def __init__(
        self, checkpoint: str, device: str = "cpu", amodel: str = "HTSAT-tiny", fusion: bool = False
    ):
        import importlib.util
        import os

        # the package first: importing it needs the hub ids below, so its OSError is caught with them
        if importlib.util.find_spec("laion_clap") is None:
            _optional("laion_clap", "laion_clap")  # raises, saying how to install the extra
        if not os.path.isfile(checkpoint):
            raise FileNotFoundError(
                f"laion_clap backend: clap_model must be a checkpoint file (.pt), got {checkpoint!r}"
            )
        try:
            laion_clap = _optional("laion_clap", "laion_clap")
            self.model = laion_clap.CLAP_Module(enable_fusion=fusion, amodel=amodel, device=device)
        except OSError as err:  # a hub id laion_clap loads by name is neither cached nor a local folder
            raise OSError(
                "laion_clap backend: laion_clap loads 'bert-base-uncased', 'roberta-base' and "
                "'facebook/bart-base' by name; put them in the HF cache or, offline, run from a folder holding "
                f"local copies of those names (docs/scoring.md 'The laion_clap environment'): {err}"
            ) from err
        self.model.load_ckpt(checkpoint, verbose=False)
        self.logit_scale = float(self.model.model.logit_scale_a.detach().exp())
        self.fingerprint = fingerprint(backend="laion_clap", model=checkpoint, amodel=amodel, fusion=fusion)

    def embed_audio(self, waves: list[np.ndarray]) -> np.ndarray:
        # The package's own preprocessing: int16 round trip, repeat-padding of a short window (one window at
        # most reaches here: the scorer cuts long audio into windows).
        x = [np.asarray(w, dtype=np.float32) for w in waves]
        return as_unit_numpy(torch.as_tensor(self.model.get_audio_embedding_from_data(x=x, use_tensor=False)))

    def embed_text(self, texts: list[str]) -> np.ndarray:
        return as_unit_numpy(torch.as_tensor(self.model.get_text_embedding(list(texts), use_tensor=False)))


class OpenClip:
    """``open_clip`` models (optional extra), e.g. model "ViT-B-32" with pretrained "laion2b_s34b_b79k"; ``model``
    may also be a model-config JSON file and ``pretrained`` a checkpoint file (nothing downloaded)."""

    def __init__(self, model: str, pretrained: str | None = None, device: str = "cpu"):
        import os

        open_clip = _optional("open_clip", "open_clip")
        name = model
        if model.endswith(".json") and os.path.isfile(model):  # a model-config file of one's own (tiny tests)
            open_clip.add_model_config(model)
            name = os.path.splitext(os.path.basename(model))[0]
        self.model, _, self.preprocess = open_clip.create_model_and_transforms(
            name, pretrained=pretrained, device=device
        )
        self.model.eval()
        self.tokenizer = open_clip.get_tokenizer(name)
        self.device = device
        self.logit_scale = float(self.model.logit_scale.detach().exp())
        self.fingerprint = fingerprint(backend="open_clip", model=model, pretrained=pretrained)

    @torch.inference_mode()
    def embed_images(self, images: list[np.ndarray]) -> np.ndarray:
        from PIL import Image

        x = torch.stack([self.preprocess(Image.fromarray(np.asarray(im))) for im in images]).to(self.device)
        return as_unit_numpy(self.model.encode_image(x))

    @torch.inference_mode()
    def embed_text(self, texts: list[str]) -> np.ndarray:
        return as_unit_numpy(self.model.encode_text(self.tokenizer(list(texts)).to(self.device)))


BACKENDS: dict[str, dict[str, Callable[[ScoringConfig], object]]] = {
    "clap": {
        "transformers": lambda c: HFClap(c.clap_model, c.device),
        "laion_clap": lambda c: LaionClap(c.clap_model, c.device, c.laion_clap_amodel, c.laion_clap_fusion),
    },
    "clip": {
        "transformers": lambda c: HFClip(c.clip_model, c.device),
        "open_clip": lambda c: OpenClip(c.clip_model, c.clip_pretrained, c.device),
    },
    "av": {"pe_audio_video": lambda c: PeAudioVideo(c.av_model, c.device)},
}
_PROTOCOLS = {"clap": AudioTextEncoder, "clip": ImageTextEncoder, "av": AudioVideoEncoder}


def register_backend(kind: str, name: str, factory: Callable[[ScoringConfig], object]) -> None:
    """Add a backend (e.g. an ImageBind wrapper as ``register_backend("av", "imagebind", make)``)."""
    if kind not in BACKENDS:
        raise ValueError(f"unknown backend kind {kind!r} (expected one of {sorted(BACKENDS)})")
    BACKENDS[kind][name] = factory


def load_encoder(kind: str, name: str, config: ScoringConfig):
    if name not in BACKENDS.get(kind, {}):
        raise ValueError(
            f"ScoringConfig: unknown {kind} backend {name!r} (known: {sorted(BACKENDS.get(kind, {}))})"
        )
    encoder = BACKENDS[kind][name](config)
    if not isinstance(encoder, _PROTOCOLS[kind]):
        raise TypeError(
            f"{kind} backend {name!r} returned {type(encoder).__name__}, which does not implement "
            f"{_PROTOCOLS[kind].__name__}"
        )
    return encoder
