"""CLAP, CLIP and AVSM scorers: batched, cached per media stream, every score in [0, 1].

- ``ClapScorer.score(media, texts)``: audio–text similarity ``(cos + 1) / 2``; no audio -> 0.
- ``ClipScorer.score(media, texts)``: video–text similarity, the video being the mean of its frames'
  unit embeddings; no video -> 0.
- ``AVSMScorer.score(media, vocabulary)``: how well a media item's own video and audio agree.
  ``text_bridge`` is the paper's ``T_sim = S_CLIP · S_CLAPᵀ`` over a text vocabulary (see ``maths``); a
  direct backend uses ``(cos + 1) / 2`` of the joint audio and video embeddings. Either stream missing -> 0.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Sequence

import numpy as np
from tqdm.auto import tqdm

from . import maths
from .cache import EmbeddingCache, fingerprint
from .config import ScoringConfig
from .encoders import AudioTextEncoder, AudioVideoEncoder, ImageTextEncoder, load_encoder
from .media import Media, MediaReader, StreamRef

MISSING = np.zeros(0, dtype=np.float32)


def _present(e: np.ndarray | None) -> bool:
    return e is not None and e.size > 0


class EmbeddingStore:
    """One embedding function + its cache: embeds the distinct uncached inputs in batches, in order."""

    def __init__(self, embed: Callable[[list], np.ndarray], fp: str, config: ScoringConfig, desc: str):
        self.embed_fn = embed
        self.cache = EmbeddingCache(fp, config.cache_dir)
        self.batch_size = config.batch_size
        self.progress = config.progress
        self.desc = desc

    def embed(self, refs: Sequence[StreamRef]) -> list[np.ndarray]:
        keyed = {r.key: r for r in refs if r.key is not None}
        found = self.cache.get_many(list(keyed))
        todo = [r for k, r in keyed.items() if k not in found] + [r for r in refs if r.key is None]
        computed: dict[int, np.ndarray] = {}  # uncacheable refs, by identity
        bar = tqdm(total=len(todo), desc=self.desc, disable=not self.progress or not todo, leave=False)
        for i in range(0, len(todo), self.batch_size):
            batch = todo[i : i + self.batch_size]
            inputs = [r.load() for r in batch]
            present = [j for j, x in enumerate(inputs) if x is not None]
            vectors = [MISSING] * len(batch)  # a stream found absent is cached as an empty vector
            if present:
                embedded = self.embed_fn([inputs[j] for j in present])
                if len(embedded) != len(present):
                    raise RuntimeError(
                        f"{self.desc}: the encoder returned {len(embedded)} embeddings "
                        f"for {len(present)} inputs"
                    )
                for j, vec in zip(present, embedded):
                    vectors[j] = vec
            new = {}
            for ref, vec in zip(batch, vectors):
                if ref.key is None:
                    computed[id(ref)] = vec
                else:
                    new[ref.key] = vec
            self.cache.put_many(new)
            found.update(self.cache.get_many(list(new)))
            bar.update(len(batch))
        bar.close()
        return [found[r.key] if r.key is not None else computed[id(r)] for r in refs]


def _or_none(e: np.ndarray) -> np.ndarray | None:
    return e if _present(e) else None


class TextEmbeddings:
    """Text embeddings through one encoder, cached per text (vocabularies and responses repeat a lot)."""

    def __init__(
        self, embed_text: Callable[[list[str]], np.ndarray], fp: str, config: ScoringConfig, desc: str
    ):
        self.store = EmbeddingStore(
            lambda texts: embed_text(list(texts)), fingerprint(kind="text", encoder=fp), config, desc
        )

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        refs = [StreamRef(f"text:{t}", (lambda t=t: t)) for t in texts]
        return np.stack(self.store.embed(refs)) if refs else np.zeros((0, 0), np.float32)


class ClapScorer:
    """CLAP audio–text scores; long audio is the mean over full windows (``maths.window_starts``)."""

    def __init__(self, encoder: AudioTextEncoder, reader: MediaReader, config: ScoringConfig):
        self.encoder, self.reader, self.config = encoder, reader, config
        fp = fingerprint(kind="audio", encoder=encoder.fingerprint, windows=config.max_audio_windows)
        self.audio_store = EmbeddingStore(self._embed_waves, fp, config, "CLAP audio")
        self.embed_text = TextEmbeddings(encoder.embed_text, encoder.fingerprint, config, "CLAP text")
        self.logit_scale = config.clap_scale if config.clap_scale is not None else encoder.logit_scale

    def _embed_waves(self, waves: list[np.ndarray]) -> np.ndarray:
        win = self.encoder.window_samples
        pieces, owner = [], []
        for i, w in enumerate(waves):
            starts = [0] if win is None else maths.window_starts(len(w), win, self.config.max_audio_windows)
            pieces += [w if win is None else w[s : s + win] for s in starts]
            owner += [i] * len(starts)
        emb = self.encoder.embed_audio(pieces)
        owner = np.asarray(owner)
        return np.stack([maths.mean_embedding(emb[owner == i]) for i in range(len(waves))]).astype(np.float32)

    def audio_embeddings(self, media: Sequence[Media]) -> list[np.ndarray | None]:
        refs = [self.reader.audio(m, self.encoder.sample_rate) for m in media]
        vectors = iter(self.audio_store.embed([r for r in refs if r is not None]))
        return [_or_none(next(vectors)) if r is not None else None for r in refs]

    def score(self, media: Sequence[Media], texts: Sequence[str]) -> np.ndarray:
        """Paired scores: item i against text i, in [0, 1]; 0 where the item has no audio."""
        if len(media) != len(texts):
            raise ValueError(f"ClapScorer.score: {len(media)} media but {len(texts)} texts")
        return _paired(self.audio_embeddings(media), self.embed_text(texts))


class ClipScorer:
    """CLIP video–text scores; a video is the normalised mean of its frames' unit embeddings."""

    def __init__(self, encoder: ImageTextEncoder, reader: MediaReader, config: ScoringConfig):
        self.encoder, self.reader, self.config = encoder, reader, config
        fp = fingerprint(kind="video", encoder=encoder.fingerprint, frames=config.frame_policy)
        self.video_store = EmbeddingStore(self._embed_clips, fp, config, "CLIP video")
        self.embed_text = TextEmbeddings(encoder.embed_text, encoder.fingerprint, config, "CLIP text")
        self.logit_scale = config.clip_scale if config.clip_scale is not None else encoder.logit_scale

    def _embed_clips(self, clips: list[np.ndarray]) -> np.ndarray:
        frames = [f for clip in clips for f in clip]
        emb = self.encoder.embed_images(frames)
        bounds = np.cumsum([0] + [len(c) for c in clips])
        return np.stack([maths.mean_embedding(emb[a:b]) for a, b in itertools.pairwise(bounds)]).astype(
            np.float32
        )

    def video_embeddings(self, media: Sequence[Media]) -> list[np.ndarray | None]:
        refs = [self.reader.video(m) for m in media]
        vectors = iter(self.video_store.embed([r for r in refs if r is not None]))
        return [_or_none(next(vectors)) if r is not None else None for r in refs]

    def score(self, media: Sequence[Media], texts: Sequence[str]) -> np.ndarray:
        """Paired scores: item i against text i, in [0, 1]; 0 where the item has no video."""
        if len(media) != len(texts):
            raise ValueError(f"ClipScorer.score: {len(media)} media but {len(texts)} texts")
        return _paired(self.video_embeddings(media), self.embed_text(texts))


def _paired(stream: list[np.ndarray | None], text: np.ndarray) -> np.ndarray:
    out = np.zeros(len(stream))
    present = [i for i, e in enumerate(stream) if e is not None]
    if present:
        cos = maths.paired_cosine(np.stack([stream[i] for i in present]), text[present])
        out[present] = maths.to_unit_interval(cos)
    return out


class AVSMScorer:
    """Audio-visual similarity of each item's own video and audio, in [0, 1] (0 if a stream is missing)."""

    def __init__(
        self,
        config: ScoringConfig,
        clip: ClipScorer | None = None,
        clap: ClapScorer | None = None,
        joint: AudioVideoEncoder | None = None,
        reader: MediaReader | None = None,
    ):
        if joint is None and (clip is None or clap is None):
            raise ValueError(
                "AVSMScorer needs CLIP and CLAP scorers (text bridge) or a joint audio-video encoder"
            )
        self.config, self.clip, self.clap, self.joint, self.reader = config, clip, clap, joint, reader
        if joint is not None:
            self.audio_store = EmbeddingStore(
                joint.embed_audio, fingerprint(kind="audio", encoder=joint.fingerprint), config, "AV audio"
            )
            self.video_store = EmbeddingStore(
                joint.embed_video,
                fingerprint(kind="video", encoder=joint.fingerprint, frames=config.frame_policy),
                config,
                "AV video",
            )

    @property
    def kind(self) -> str:
        return "text_bridge" if self.joint is None else "joint"

    def score(self, media: Sequence[Media], vocabulary: Sequence[str] | None = None) -> np.ndarray:
        if self.joint is not None:
            return self._score_joint(media)
        if not vocabulary or len(vocabulary) < 2:
            raise ValueError(
                "text-bridged AVSM needs a vocabulary of at least 2 texts (ScoringConfig.vocabulary "
                f"or vocabulary_file); got {list(vocabulary or [])}"
            )
        video = self.clip.video_embeddings(media)
        audio = self.clap.audio_embeddings(media)
        out = np.zeros(len(media))
        both = [i for i in range(len(media)) if video[i] is not None and audio[i] is not None]
        if both:
            cfg = self.config
            clip_text = self.clip.embed_text([cfg.clip_template.format(t) for t in vocabulary])
            clap_text = self.clap.embed_text([cfg.clap_template.format(t) for t in vocabulary])
            s_clip = maths.similarity_rows(
                np.stack([video[i] for i in both]), clip_text, self.clip.logit_scale, cfg.tsim_norm
            )
            s_clap = maths.similarity_rows(
                np.stack([audio[i] for i in both]), clap_text, self.clap.logit_scale, cfg.tsim_norm
            )
            out[both] = maths.paired_tsim(s_clip, s_clap)
        return out

    def _score_joint(self, media: Sequence[Media]) -> np.ndarray:
        a_refs = [self.reader.audio(m, self.joint.sample_rate) for m in media]
        v_refs = [self.reader.video(m) for m in media]
        both = [i for i in range(len(media)) if a_refs[i] is not None and v_refs[i] is not None]
        out = np.zeros(len(media))
        audio = self.audio_store.embed([a_refs[i] for i in both])
        video = self.video_store.embed([v_refs[i] for i in both])
        ok = [k for k in range(len(both)) if _present(audio[k]) and _present(video[k])]
        if ok:
            cos = maths.paired_cosine(np.stack([video[k] for k in ok]), np.stack([audio[k] for k in ok]))
            out[[both[k] for k in ok]] = maths.to_unit_interval(cos)
        return out


class Scorers:
    """The three scorers for one config and data root; models load on first use, once."""

    def __init__(self, config: ScoringConfig, root: str | os.PathLike | None = None):
        self.config = config
        self.reader = MediaReader(root, config.frame_policy)
        self._clap = self._clip = self._avsm = None

    @property
    def clap(self) -> ClapScorer:
        if self._clap is None:
            enc = load_encoder("clap", self.config.clap_backend, self.config)
            self._clap = ClapScorer(enc, self.reader, self.config)
        return self._clap

    @property
    def clip(self) -> ClipScorer:
        if self._clip is None:
            enc = load_encoder("clip", self.config.clip_backend, self.config)
            self._clip = ClipScorer(enc, self.reader, self.config)
        return self._clip

    @property
    def avsm(self) -> AVSMScorer:
        if self._avsm is None:
            if self.config.avsm_backend == "text_bridge":
                self._avsm = AVSMScorer(self.config, clip=self.clip, clap=self.clap)
            else:
                joint = load_encoder("av", self.config.avsm_backend, self.config)
                self._avsm = AVSMScorer(self.config, joint=joint, reader=self.reader)
        return self._avsm
