"""The similarity maths of the scorers, as pure functions over numpy arrays (tested on hand numbers).

Every score here lives in [0, 1] with 0 the lowest, so "a missing stream scores 0" means "as dissimilar
as anything can be" and a preference delta against a missing stream is simply the clean score.

Paper (AVTrustBench, appendix on AudioSet alignment): ``T_sim = S_CLIP · S_CLAPᵀ`` where ``S_CLIP[i, j]``
is the similarity of visual ``i`` to text ``j`` and ``S_CLAP[k, j]`` that of audio ``k`` to the same text
``j``: text is the bridge, and ``T_sim[i, k] = Σ_j S_CLIP[i, j] · S_CLAP[k, j]``. The paper normalises
the scores to [0, 1]; we make that precise by turning each row into a probability distribution over the
vocabulary (``softmax`` of the model's logit-scaled cosines — CLIP/CLAP zero-shot classification), so
``T_sim[i, k]`` is the probability that the video and the audio, each read as a label, agree. By
Cauchy–Schwarz it lies in [0, 1]; it is 1 only when both are certain of the same label.
"""

from __future__ import annotations

import numpy as np

NORMALISATIONS = ("softmax", "unit")


def l2_normalize(x: np.ndarray, axis: int = -1, eps: float = 1e-12) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=axis, keepdims=True), eps)


def inner_products(a: np.ndarray, b: np.ndarray, chunk: int = 1 << 22) -> np.ndarray:
    """(N, D) x (M, D) -> (N, M) inner products, each entry a function of its two rows alone.

    Why not ``a @ b.T``: BLAS blocks a product by the matrices' sizes, so an entry changed in its last bit
    with how many rows were scored together — a prep shard's scores differed from the one-process build's
    (``tests/data_prep/test_prep_distributed.py``). Here every entry is the same sum over D whatever N and M are
    (broadcast product, summed along D, in row chunks of at most ``chunk`` elements)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    out = np.empty((a.shape[0], b.shape[0]), dtype=np.float64)
    step = max(1, chunk // max(1, b.shape[0] * b.shape[-1]))
    for i in range(0, a.shape[0], step):
        out[i : i + step] = np.sum(a[i : i + step, None, :] * b[None, :, :], axis=-1)
    return out


def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(N, D) x (M, D) -> (N, M) cosine similarities."""
    return inner_products(l2_normalize(a), l2_normalize(b))


def to_unit_interval(cos: np.ndarray) -> np.ndarray:
    """Map a cosine in [-1, 1] to [0, 1] (``(c + 1) / 2``), the scale on which "missing" = 0."""
    return np.clip((np.asarray(cos, dtype=np.float64) + 1.0) / 2.0, 0.0, 1.0)


def paired_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine of two (N, D) arrays -> (N,)."""
    return np.sum(l2_normalize(a) * l2_normalize(b), axis=-1)


def softmax(logits: np.ndarray, axis: int = -1) -> np.ndarray:
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def similarity_rows(emb: np.ndarray, text_emb: np.ndarray, scale: float, norm: str = "softmax") -> np.ndarray:
    """S (N, K): similarity of each embedding to each of K vocabulary texts, normalised per row.

    ``softmax``: ``softmax(scale · cos)`` over the vocabulary (rows sum to 1).
    ``unit``: ``(cos + 1) / 2`` divided by ``sqrt(K)``, so that a product of two such rows is the mean
    over the vocabulary of the per-text [0, 1] similarities (also in [0, 1])."""
    cos = cosine_matrix(emb, text_emb)
    if norm == "softmax":
        return softmax(scale * cos, axis=-1)
    if norm == "unit":
        return to_unit_interval(cos) / np.sqrt(cos.shape[-1])
    raise ValueError(f"unknown T_sim normalisation {norm!r} (expected one of {NORMALISATIONS})")


def text_bridged_tsim(s_clip: np.ndarray, s_clap: np.ndarray) -> np.ndarray:
    """The paper's ``T_sim = S_CLIP · S_CLAPᵀ``: (N, K) x (M, K) -> (N, M).

    Entry (i, k) compares visual i with audio k through the K texts."""
    s_clip, s_clap = np.asarray(s_clip, dtype=np.float64), np.asarray(s_clap, dtype=np.float64)
    if s_clip.shape[-1] != s_clap.shape[-1]:
        raise ValueError(f"S_CLIP has {s_clip.shape[-1]} texts but S_CLAP has {s_clap.shape[-1]}")
    return inner_products(s_clip, s_clap)


def paired_tsim(s_clip: np.ndarray, s_clap: np.ndarray) -> np.ndarray:
    """Diagonal of ``text_bridged_tsim`` without forming the (N, N) matrix: visual i vs its own audio i."""
    return np.sum(np.asarray(s_clip, dtype=np.float64) * np.asarray(s_clap, dtype=np.float64), axis=-1)


def mean_embedding(frame_emb: np.ndarray) -> np.ndarray:
    """One embedding for a clip from its frames: mean of the unit frame embeddings, re-normalised."""
    return l2_normalize(l2_normalize(frame_emb).mean(axis=0))


def window_starts(n: int, window: int, max_windows: int) -> list[int]:
    """Start samples of full-length analysis windows covering ``n`` samples.

    Audio longer than a CLAP window would otherwise be randomly cropped by the feature extractor
    (``rand_trunc``), making scores non-deterministic; we cut ``ceil(n / window)`` windows (at most
    ``max_windows``), evenly spaced from 0 to ``n - window``, and average their embeddings. ``n <= window``
    gives one window at 0 (the extractor pads it)."""
    if n <= window:
        return [0]
    k = min(-(-n // window), max(1, max_windows))
    if k == 1:
        return [(n - window) // 2]
    return [round(i * (n - window) / (k - 1)) for i in range(k)]


def score_delta(winner: float | None, loser: float | None) -> float:
    """``winner − loser``, where None (a missing stream) scores 0, the bottom of the scale."""
    return float((winner or 0.0) - (loser or 0.0))


def keep_mask(scores: np.ndarray, threshold: float) -> np.ndarray:
    """The alignment filter's rule: keep when ``T_sim >= threshold`` (the paper drops ``< 0.70``)."""
    return np.asarray(scores, dtype=np.float64) >= threshold
