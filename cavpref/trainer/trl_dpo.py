"""``method: dpo`` by TRL's own DPO loss code: the log-probs of the model I/O in the layout ``DPOTrainer`` reads.

``DPOTrainer.compute_loss`` computes every ``loss_type`` (sigmoid, hinge, ipo, robust, bco_pair, sppo_hard,
nca_pair, apo_zero / apo_down, aot, discopop, sft, ...; ``loss_weights`` combinations, ``label_smoothing``,
``f_divergence_type``) from a ``[chosen; rejected]`` batch: the model's per-token log-probs
(``model(...).log_probs``), summed per sequence, the completion mask, and — when the reference is precomputed —
``ref_chosen_logps`` / ``ref_rejected_logps`` in the batch. Our rows (media, shared prefixes) go through the model
I/O, which returns each row's summed log-prob, so ``sequence_batch`` lays those sums out for TRL's code:

* row r's sum sits on its first completion position and 0 on its other n_r - 1 (n_r: its response tokens), so
  TRL's sum over positions is the sum exactly (adding zeros) and its gradient reaches the sum unchanged;
* the completion mask has n_r positions per row: IPO and ``sigmoid_norm`` divide by them;
* the ``sft`` loss type's mean over the chosen positions is Σ_r s_r / Σ_r n_r, the token-mean NLL (RPO is
  ``loss_type: [sigmoid, sft]`` with ``loss_weights: [1.0, alpha]``; TRL 1.x has no ``rpo_alpha``).

TRL also logs statistics of the forward it would have run itself (``NOT_MEASURED``: entropy, token accuracy,
mean logits, tokens seen): that forward is the model I/O's here, so the trainer drops them from TRL's logs.
"""

from __future__ import annotations

from types import SimpleNamespace

import torch

NOT_MEASURED = ("entropy", "num_tokens", "logits/chosen", "logits/rejected", "mean_token_accuracy")


class SequenceLogps:
    """Stands in for the model in ``DPOTrainer.compute_loss``: returns known per-token log-probs (any input)."""

    def __init__(self, per_token: torch.Tensor):
        self.per_token = per_token

    def __call__(self, **kwargs) -> SimpleNamespace:
        zeros = torch.zeros_like(self.per_token.detach())
        return SimpleNamespace(
            log_probs=self.per_token, entropy=zeros, mean_logits=zeros, is_top1=zeros.bool()
        )


def sequence_batch(
    policy: dict[str, torch.Tensor], ref: dict[str, torch.Tensor], tokens: dict[str, torch.Tensor]
) -> tuple[SequenceLogps, dict[str, torch.Tensor]]:
    """(model, inputs) for ``DPOTrainer.compute_loss``: the y pair's summed log-probs (B,) of the policy (with
    grad) and the reference, and each row's response-token count (B,)."""
    sums = torch.cat([policy["y_w"], policy["y_l"]])
    n = torch.cat([tokens["y_w"], tokens["y_l"]]).to(sums.device).clamp(min=1)
    width = int(n.max())
    positions = torch.arange(width, device=sums.device)
    per_token = torch.cat([sums[:, None], sums.new_zeros(len(sums), width - 1)], dim=1)
    completion = torch.cat(
        [torch.zeros_like(n)[:, None], (positions[None, :] < n[:, None]).to(n.dtype)], dim=1
    )  # TRL shifts it by one position (position t's logits predict token t + 1)
    inputs = {
        "input_ids": torch.zeros_like(completion),
        "attention_mask": completion,
        "completion_mask": completion,
        "ref_chosen_logps": ref["y_w"].to(sums.device),
        "ref_rejected_logps": ref["y_l"].to(sums.device),
    }
    return SequenceLogps(per_token), inputs
