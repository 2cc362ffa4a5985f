"""The NLI cross-encoder of AURA's Core Inference Score (CIS): P(entailment | premise, hypothesis).

AURA (section 4) feeds the sanitised gold reasoning as the premise and the sanitised generated
reasoning as the hypothesis to ``cross-encoder/nli-deberta-v3-base`` and takes the entailment
probability. Which output column is "entailment" differs between NLI checkpoints (that one orders
contradiction / entailment / neutral; MNLI heads often put entailment first), so the column is read from
the model's own ``id2label`` — never assumed — and a model without an entailment label is refused.

The model is loaded with sentence-transformers ``CrossEncoder(path_or_id)``: a hub id in production, a
local folder in tests and offline runs. Nothing else is downloaded here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_NLI_MODEL = "cross-encoder/nli-deberta-v3-base"


@dataclass
class NLIConfig:
    model: str = DEFAULT_NLI_MODEL
    device: str | None = None  # None: sentence-transformers' choice (CUDA when available)
    batch_size: int = 16
    max_length: int | None = 512


def entailment_index(id2label: dict) -> int:
    """The output index whose label is "entailment" (case-insensitive; "entail", "ENTAILMENT" too)."""
    found = [int(i) for i, name in id2label.items() if str(name).strip().lower().startswith("entail")]
    if len(found) != 1:
        raise ValueError(
            f"NLI model labels {dict(id2label)} have {len(found)} entailment labels; need exactly one"
        )
    return found[0]


class NLIScorer:
    """Entailment probabilities from one cross-encoder, loaded once."""

    def __init__(self, config: NLIConfig | None = None):
        import torch
        from sentence_transformers import CrossEncoder

        self.config = config or NLIConfig()
        self.model = CrossEncoder(
            self.config.model, device=self.config.device, max_length=self.config.max_length
        )
        labels = self.model.model.config.id2label
        if self.model.num_labels < 2:
            raise ValueError(f"{self.config.model}: a single-logit cross-encoder is not an NLI classifier")
        self.index = entailment_index(labels)
        self.labels = {int(k): str(v) for k, v in labels.items()}
        self._identity = torch.nn.Identity()

    def describe(self) -> dict:
        return {"model": self.config.model, "entailment_index": self.index, "labels": self.labels}

    def probabilities(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        """(N, num_labels) softmax over the raw logits (no extra activation first)."""
        if len(premises) != len(hypotheses):
            raise ValueError(f"{len(premises)} premises but {len(hypotheses)} hypotheses")
        if not premises:
            return np.zeros((0, self.model.num_labels), dtype=np.float32)
        pairs = [(str(p), str(h)) for p, h in zip(premises, hypotheses)]
        out = self.model.predict(
            pairs,
            batch_size=self.config.batch_size,
            apply_softmax=True,
            activation_fn=self._identity,
            show_progress_bar=len(pairs) >= 64,
        )
        return np.asarray(out, dtype=np.float32).reshape(len(pairs), -1)

    def entailment(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        """(N,) P(entailment) in [0, 1]."""
        return self.probabilities(premises, hypotheses)[:, self.index]
